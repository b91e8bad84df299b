"""JSON-schema grammars for llama.cpp, and sampling that checks the chosen token first.

**Strict strings.** llama-cpp-python 0.3.36 turns a JSON schema into a grammar whose string
character rule is ``[^"\\]``: raw control characters (a newline, a tab) are allowed inside
JSON strings, so the small judge sometimes writes output that no JSON parser accepts (seen in
9 of 124 stored calls of the RAGChecker benchmark, all "Invalid control character"), and when
the schema cannot be converted it silently falls back to any-JSON. :func:`json_schema_grammar`
builds the grammar with the same converter, excludes U+0000–U+001F and U+007F from string
characters as JSON requires, and raises instead of falling back.

**Check-first sampling.**

llama-cpp-python 0.3.x puts the grammar sampler in the chain before the token choice, so every
generated token runs the grammar over the whole vocabulary (151,936 tokens for Qwen2.5): with a
JSON schema, generation is several times slower than free text. llama.cpp's common sampler does
it the other way round, and so do we: choose a token with the chain *without* the grammar, ask
the grammar whether that one token is allowed, and only when it is not, run the full
grammar-constrained chain. With greedy decoding (temperature 0) we check the ``TOP_K`` most
likely tokens in one grammar pass and take the best allowed one; the token is the same as the
stock chain's (the best allowed token among the top K is the best allowed token overall), and
only when none of them is allowed does the grammar run over the whole vocabulary. With
temperature > 0 the draw comes from the unconstrained chain when the grammar allows it, as in
llama.cpp's server, else from the constrained chain.

Used only when the repetition penalties are neutral (the chain's penalty state would otherwise
see a rejected token) and no Python logits processor is set; else the stock chain is built.
"""

from __future__ import annotations

import ctypes
import json
import math
from functools import lru_cache
from typing import Any

from assay.core.errors import ConfigError

_LOOSE_CHAR = 'char ::= [^"\\\\] |'
_STRICT_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


@lru_cache(maxsize=64)
def _grammar_text(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        text = json_schema_to_gbnf(schema_json)
    except Exception as exc:  # the converter raises bare AssertionError/KeyError on what it lacks
        raise ConfigError(f"llama.cpp cannot turn this JSON schema into a grammar: {exc!r}") from exc
    lines = [_STRICT_CHAR + line[len(_LOOSE_CHAR):] if line.startswith(_LOOSE_CHAR) else line
             for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def json_schema_grammar(schema: dict[str, Any]) -> Any:
    """A ``LlamaGrammar`` for ``schema`` whose strings cannot hold raw control characters."""
    from llama_cpp import LlamaGrammar

    # key order matters: the grammar writes properties in the schema's order
    return LlamaGrammar.from_string(_grammar_text(json.dumps(schema)), verbose=False)


def _neutral(kwargs: dict[str, Any]) -> bool:
    return (kwargs.get("repeat_penalty", 1.0) == 1.0 and not kwargs.get("frequency_penalty")
            and not kwargs.get("presence_penalty") and kwargs.get("logits_processor") is None
            and not kwargs.get("mirostat_mode"))


TOP_K = 64


class CheckFirstSampler:
    """Duck-types ``llama_cpp._internals.LlamaSampler.sample`` for ``Llama.sample``."""

    def __init__(self, free: Any, full: Any, check: Any, *, greedy: bool, n_vocab: int) -> None:
        self.free, self.full, self.check = free, full, check  # keep the owners alive
        self.greedy = greedy
        self.n_vocab = n_vocab
        self.checked = 0
        self.fallbacks = 0

    def _allowed(self, tokens: list[int]) -> list[bool]:
        import llama_cpp

        cells = (llama_cpp.llama_token_data * len(tokens))(
            *(llama_cpp.llama_token_data(id=t, logit=1.0, p=0.0) for t in tokens))
        array = llama_cpp.llama_token_data_array(data=ctypes.cast(cells, llama_cpp.llama_token_data_p),
                                                 size=len(tokens), selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(self.check.sampler, ctypes.byref(array))
        return [math.isfinite(c.logit) for c in cells]

    def _choose(self, ctx: Any, idx: int) -> int | None:
        """The first choice, before the full-vocabulary fallback; accepted by nothing yet."""
        import llama_cpp
        import numpy as np

        if self.greedy:
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, idx), shape=(self.n_vocab,))
            top = np.argpartition(logits, -TOP_K)[-TOP_K:]
            ranked = [int(t) for t in top[np.lexsort((top, -logits[top]))]]  # ties: lowest id, as greedy
            for token, ok in zip(ranked, self._allowed(ranked), strict=True):
                if ok:
                    return token
            return None
        token = int(llama_cpp.llama_sampler_sample(self.free.sampler, ctx.ctx, idx))  # accepted by `free`
        return token if self._allowed([token])[0] else None

    def sample(self, ctx: Any, idx: int = -1) -> int:
        import llama_cpp

        self.checked += 1
        token = self._choose(ctx, idx)
        if token is not None:
            llama_cpp.llama_sampler_accept(self.full.sampler, token)
        else:
            self.fallbacks += 1
            token = int(llama_cpp.llama_sampler_sample(self.full.sampler, ctx.ctx, idx))  # accepted by `full`
        llama_cpp.llama_sampler_accept(self.check.sampler, token)
        return token


def check_first_llama_class() -> type:
    """A ``llama_cpp.Llama`` subclass whose grammar sampling checks the chosen token first."""
    from llama_cpp import Llama
    from llama_cpp import _internals as internals

    class CheckFirstLlama(Llama):
        last_sampler: CheckFirstSampler | None = None

        def _init_sampler(self, **kwargs: Any) -> Any:  # type: ignore[override]  # called with keywords only
            grammar = kwargs.get("grammar")
            if grammar is None or not _neutral(kwargs):
                return super()._init_sampler(**kwargs)
            free = super()._init_sampler(**{**kwargs, "grammar": None})
            full = super()._init_sampler(**kwargs)
            check = internals.LlamaSampler()
            check.add_grammar(self._model, grammar)
            self.last_sampler = CheckFirstSampler(free, full, check, greedy=kwargs.get("temp", 0.8) == 0.0,
                                                  n_vocab=self._n_vocab)
            return self.last_sampler

    return CheckFirstLlama
