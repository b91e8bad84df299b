"""Grammar-constrained sampling that checks the chosen token first (llama.cpp's own trick).

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
import math
from typing import Any


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
            ranked = [int(t) for t in top[np.argsort(-logits[top], kind="stable")]]
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
