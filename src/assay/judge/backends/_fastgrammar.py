"""JSON-schema grammars for llama.cpp, and sampling that checks the chosen token first.

**Strict strings.** llama-cpp-python 0.3.36 turns a JSON schema into a grammar whose string
character rule is ``[^"\\]``: raw control characters (a newline, a tab) are allowed inside
JSON strings, so the small judge sometimes writes output that no JSON parser accepts (seen in
9 of 124 stored calls of the RAGChecker benchmark, all "Invalid control character"), and when
the schema cannot be converted it silently falls back to any-JSON. :func:`json_schema_grammar`
builds the grammar with the same converter, excludes U+0000–U+001F and U+007F from string
characters as JSON requires, and raises instead of falling back.

**Bounded numbers.** The converter also ignores ``minimum`` and ``maximum``: a small judge wrote
11 on PReMISE's 1-10 scale (two of 24 calls of a SmolLM2 discovery), the reply failed validation
and the call was asked again. Integer ranges and whole-number-ended number ranges (a score in
[0, 1]) are written into the grammar (:func:`bounded_rule`); other ranges are left to validation.

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

**Jump-forward over forced text.** Much of a structured reply is text the grammar leaves no choice
about: once a reply has opened a property name, the rest of the name and its closing quote are
fixed, and so is the rest of an enum value once only one fits (3,609 of the 10,668 tokens the
embedded judge generated in the docs' recorded replies spelled property names:
``benchmarks/forced_tokens.py``). After each chosen token, :meth:`CheckFirstSampler.plan` asks the
grammar which characters may come next, one at a time on a copy of it, for as long as exactly one
printable ASCII character may and the reply may not end there (where llama.cpp's JSON grammar allows
a space or a newline, that is a second choice, and the look stops); that text is tokenized, its last
token dropped (the model may join it with what follows, as in ``":``), and the rest is handed to
llama-cpp-python's generation loop as a draft (``Llama.draft_model``). The loop evaluates the chosen
token and the forced ones in one batch — on a 2-core Xeon, four tokens of the 1.5B judge in about
the time of one and a half — and :meth:`CheckFirstSampler.sample` gives the forced tokens back in
order without reading their logits, so the reply's text is what the grammar would have let the model
write, tokenized as its tokenizer writes that text (a model that spells a name in other pieces
continues from the tokenizer's); with temperature > 0 the forced tokens take no draw, so a seeded
reply differs from one without jumps. Only where every probed character is one token of its own
(:meth:`Probe.of`) and the schema names no non-ASCII character and no ``pattern``
(:func:`jump_safe`): an alternative that is not probed would make a text look forced.

Off by default (the backend's ``jump_forward=true`` turns it on, and is then part of the judge's
identity in the store), and never where logprobs are read (a forced token has none; so DICE's
analyses and soft verdicts never jump): a batch of several tokens rounds differently from steps of
one, and the 1.5B judge's greedy replies follow near-ties. On the demo's three answers, 3 of the 13
DeCE calls that both settings asked with the same prompt got different replies, and its changed
extractions made 36 calls against 32; ``benchmarks/jump_forward.py`` measures what it saves and
changes per method (the case-aware judge 0.79× the time, LeMAJ no measurable change, DeCE nothing).
"""

from __future__ import annotations

import ctypes
import json
import math
import re
from collections import deque
from functools import lru_cache
from typing import Any

from assay.core.errors import ConfigError
from assay.judge.backends._base import COUPLED

_LOOSE_CHAR = 'char ::= [^"\\\\] |'
_STRICT_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


MAX_ENUMERATED = 200
"""An integer range of at most this many values is written out in the grammar, value by value."""

DECIMALS = 15
"""Digits a bounded number may have after its point (llama.cpp's own number rule allows 16)."""


def bounded_rule(schema: dict[str, Any]) -> str | None:
    """The grammar of an ``integer`` or ``number`` whose ``minimum`` and ``maximum`` are both given
    (llama.cpp's converter ignores both, so a judge could write 11 on a 0-10 scale and the call was
    re-asked after validation): an integer range of at most :data:`MAX_ENUMERATED` values, value by
    value; a number range with whole-number ends, 0 <= minimum < maximum <= 1000 (a score in [0, 1],
    a grade in [1, 5]), as its whole part and any decimals, the top end with zeros only. Any other
    range (exclusive ends, fractional ends, wider ones) is None: left to the converter's rule and to
    validation, as before. The rule ends with llama.cpp's ``space``, as its own number rules do."""
    kind, low, high = schema.get("type"), schema.get("minimum"), schema.get("maximum")
    if kind not in ("integer", "number") or {"exclusiveMinimum", "exclusiveMaximum", "enum", "const", "$ref",
                                             "anyOf", "oneOf", "allOf", "multipleOf"} & set(schema):
        return None  # the converter's own rule for what narrows the range further
    if isinstance(low, bool) or isinstance(high, bool) or not isinstance(low, int | float) \
            or not isinstance(high, int | float) or not math.isfinite(low) or not math.isfinite(high) \
            or low != int(low) or high != int(high) or low > high:
        return None
    low, high = int(low), int(high)
    if kind == "integer":
        if high - low + 1 > MAX_ENUMERATED:
            return None
        return "(" + " | ".join(f'"{v}"' for v in range(low, high + 1)) + ") space"
    if low < 0 or high > 1000 or low == high:
        return None
    from llama_cpp.llama_grammar import _build_repetition

    whole = " | ".join(f'"{v}"' for v in range(low, high))
    digits, zeros = _build_repetition("[0-9]", 1, DECIMALS), _build_repetition('"0"', 1, DECIMALS)
    return f'(({whole}) ("." {digits})? | "{high}" ("." {zeros})?) space'


def _converter(schema: dict[str, Any]) -> Any:
    from llama_cpp.llama_grammar import RESERVED_NAMES, SchemaConverter

    class BoundedConverter(SchemaConverter):
        def visit(self, schema: Any, name: str) -> Any:
            rule = bounded_rule(schema) if isinstance(schema, dict) else None
            if rule is None:
                return super().visit(schema, name)
            return self._add_rule(name + "-" if name in RESERVED_NAMES else name or "root", rule)

    converter = BoundedConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    converter.visit(converter.resolve_refs(schema, "stdin"), "")
    for coupling in schema.get(COUPLED, []):
        _couple(converter, schema, coupling)
    return converter


def range_literals(low: float, high: float, decimals: int) -> list[str]:
    """Every plain decimal in [low, high] with at most ``decimals`` digits after its point, in each
    way of writing it (0.5, 0.50; 1, 1.0, 1.00); low and high must be such decimals, >= 0."""
    scale = 10 ** decimals
    lo, hi = round(low * scale), round(high * scale)
    if lo < 0 or lo > hi or abs(lo - low * scale) > 1e-6 or abs(hi - high * scale) > 1e-6 or hi - lo > 2000:
        raise ConfigError(f"{COUPLED}: the range [{low}, {high}] is not one of non-negative decimals with "
                          f"{decimals} digits after the point (at most 2001 values)")
    out: list[str] = []
    for v in range(lo, hi + 1):
        whole, frac = divmod(v, scale)
        digits = f"{frac:0{decimals}d}" if decimals else ""
        forms = [f"{whole}.{digits[:n]}" for n in range(1, decimals + 1) if not digits[n:].strip("0")]
        out += ([str(whole)] if not digits.strip("0") else []) + forms
    return out


def _couple(converter: Any, schema: dict[str, Any], coupling: dict[str, Any]) -> None:
    from llama_cpp.llama_grammar import INVALID_RULE_CHARS_RE

    key, value = str(coupling.get("key")), str(coupling.get("value"))
    order = list(schema.get("properties", {}))
    if key not in order or value not in order or order.index(value) != order.index(key) + 1 \
            or not {key, value} <= set(schema.get("required", [])):
        raise ConfigError(f"{COUPLED}: {value!r} must be the required property right after {key!r}")

    def rule(prop: str) -> str:
        return INVALID_RULE_CHARS_RE.sub("-", prop)

    # whole rule names only: "b-kv" must not match inside "a-b-kv" (an earlier coupling) or "x-b-kv"
    pair = re.compile(rf'(?<![\w-]){re.escape(rule(key))}-kv "," space {re.escape(rule(value))}-kv(?![\w-])')
    root = converter._rules.get("root", "")
    if len(pair.findall(root)) != 1:
        raise ConfigError(f"{COUPLED}: cannot find {key!r} then {value!r} in the grammar")
    labels = schema["properties"][key].get("enum")
    if labels is None or sorted(map(str, labels)) != sorted(map(str, coupling.get("ranges", {}))):
        raise ConfigError(f"{COUPLED}: the ranges of {value!r} must name each value of {key!r}'s enum once")
    cases = []
    for label, (low, high) in coupling.get("ranges", {}).items():
        literals = " | ".join(json.dumps(x) for x in range_literals(low, high, int(coupling.get("decimals", 2))))
        number = converter._add_rule(f"{rule(value)}-{rule(str(label))}", f"({literals}) space")
        cases.append(f'{json.dumps(json.dumps(label))} "," space {json.dumps(json.dumps(value))} space ":" space '
                     f"{number}")
    if not cases:
        raise ConfigError(f"{COUPLED}: no ranges for {key!r}")
    both = converter._add_rule(f"{rule(key)}-{rule(value)}-kv",
                               f'{json.dumps(json.dumps(key))} space ":" space ({" | ".join(cases)})')
    converter._rules["root"] = pair.sub(lambda _: both, root)


@lru_cache(maxsize=64)
def _grammar_text(schema_json: str) -> str:
    try:
        text = _converter(json.loads(schema_json)).format_grammar()
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

MAX_JUMP = 64
"""Forced characters looked ahead at most, after one chosen token."""


class Probe:
    """What :meth:`CheckFirstSampler.plan` needs of the model: a token for each printable ASCII
    character, tab and newline, each written by the tokenizer as exactly that character, an
    end-of-generation token, and the tokenizer. :meth:`of` gives None for a tokenizer that lacks one
    of them (a SentencePiece vocabulary writes "a" as "▁a"): a character that cannot be probed could
    be the second choice that makes a text not forced, so such a model never jumps."""

    def __init__(self, llama: Any, ids: list[int], chars: list[str]) -> None:
        self.tokenize = lambda text: llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        self.ids, self.chars = ids, chars

    @classmethod
    def of(cls, llama: Any) -> Probe | None:
        ids, chars = [], []
        for code in (9, 10, *range(32, 127)):
            char = chr(code)
            tokens = llama.tokenize(char.encode("utf-8"), add_bos=False, special=False)
            if len(tokens) != 1 or llama.detokenize(tokens).decode("utf-8", "replace") != char:
                return None
            ids.append(tokens[0])
            chars.append(char)
        eos = int(llama.token_eos())
        if eos < 0:
            return None
        return cls(llama, [*ids, eos], chars)  # the end last: allowed only where the reply may end


def jump_safe(schema: dict[str, Any]) -> bool:
    """Whether a schema's forced text can be found by probing ASCII characters: not where it names a
    non-ASCII character (an enum value, a property name or a constant that differs from another only
    there would look forced) or a ``pattern`` (its classes are not probed)."""
    text = json.dumps(schema, ensure_ascii=False)
    return text.isascii() and '"pattern"' not in text


def _allowed_by(grammar: Any, tokens: list[int]) -> list[bool]:
    """Which of ``tokens`` the grammar sampler ``grammar`` (a ``llama_sampler_p``) allows next."""
    import llama_cpp

    cells = (llama_cpp.llama_token_data * len(tokens))(
        *(llama_cpp.llama_token_data(id=t, logit=1.0, p=0.0) for t in tokens))
    array = llama_cpp.llama_token_data_array(data=ctypes.cast(cells, llama_cpp.llama_token_data_p),
                                             size=len(tokens), selected=-1, sorted=False)
    llama_cpp.llama_sampler_apply(grammar, ctypes.byref(array))
    return [math.isfinite(c.logit) for c in cells]


class CheckFirstSampler:
    """Duck-types ``llama_cpp._internals.LlamaSampler.sample`` for ``Llama.sample``."""

    def __init__(self, free: Any, full: Any, check: Any, *, greedy: bool, n_vocab: int,
                 probe: Probe | None = None) -> None:
        self.free, self.full, self.check = free, full, check  # keep the owners alive
        self.greedy = greedy
        self.n_vocab = n_vocab
        self.checked = 0
        self.fallbacks = 0
        self.probe = probe  # None: no jump-forward
        self.forced: deque[int] = deque()  # planned tokens, given back by the next samples
        self.jumped = 0  # tokens given without a choice

    def _allowed(self, tokens: list[int]) -> list[bool]:
        return _allowed_by(self.check.sampler, tokens)

    def plan(self) -> list[int]:
        """The tokens the grammar forces after everything accepted so far (see the module's
        docstring); they are given back, in order, by the next calls of :meth:`sample`."""
        import llama_cpp

        if self.probe is None or self.forced:
            return []
        probe, end = self.probe, len(self.probe.ids) - 1
        # applying a grammar to candidates changes nothing in it, accepting does: the grammar is copied
        # only once a character is forced (after most tokens, inside free text, several are allowed)
        grammar, copy, text = self.check.sampler, None, list[str]()
        try:
            while len(text) < MAX_JUMP:
                hits = [i for i, ok in enumerate(_allowed_by(grammar, probe.ids)) if ok]
                if len(hits) != 1 or hits[0] == end:
                    break
                if copy is None:
                    copy = grammar = llama_cpp.llama_sampler_clone(self.check.sampler)
                    if not copy:
                        return []
                llama_cpp.llama_sampler_accept(grammar, probe.ids[hits[0]])
                text.append(probe.chars[hits[0]])
        finally:
            if copy:
                llama_cpp.llama_sampler_free(copy)
        # the grammar took these characters one after another, so it takes the tokens that spell them
        tokens = probe.tokenize("".join(text))[:-1] if text else []
        self.forced.extend(tokens)
        return tokens

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

        if self.forced:  # planned by plan(): its logits were not computed, and are not needed
            forced = self.forced.popleft()
            self.jumped += 1
            llama_cpp.llama_sampler_accept(self.full.sampler, forced)
            llama_cpp.llama_sampler_accept(self.check.sampler, forced)
            return forced
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
        jump_forward = False  # set per call by the backend (never while logprobs are read)
        _probe: Probe | None = None  # found once; None again for a tokenizer that cannot be probed

        def _init_sampler(self, **kwargs: Any) -> Any:  # type: ignore[override]  # called with keywords only
            grammar = kwargs.get("grammar")
            if grammar is None or not _neutral(kwargs):
                return super()._init_sampler(**kwargs)
            free = super()._init_sampler(**{**kwargs, "grammar": None})
            full = super()._init_sampler(**kwargs)
            check = internals.LlamaSampler()
            check.add_grammar(self._model, grammar)
            if self.jump_forward and self._probe is None:
                self._probe = Probe.of(self)
            self.last_sampler = CheckFirstSampler(free, full, check, greedy=kwargs.get("temp", 0.8) == 0.0,
                                                  n_vocab=self._n_vocab,
                                                  probe=self._probe if self.jump_forward else None)
            return self.last_sampler

    return CheckFirstLlama


class ForcedDraft:
    """llama-cpp-python's ``draft_model`` hook: after each step, the tokens the grammar forces (planned
    by the sampler of the generation under way, if it is a :class:`CheckFirstSampler`)."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama

    def __call__(self, input_ids: Any, /, **_: Any) -> Any:
        import numpy as np

        sampler = getattr(self.llama, "last_sampler", None)
        tokens = sampler.plan() if isinstance(sampler, CheckFirstSampler) else []
        return np.asarray(tokens, dtype=np.intc)
