"""The in-process llama.cpp backend with the real embedded model (and SmolLM2 for speed)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from assay.core.types import GenerateConfig, Message
from assay.judge.backends import get_backend
from assay.judge.model import MODEL_SHA256, resolve_model
from assay.judge.runner import JudgeClient, RunnerConfig
from assay.judge.structured import generate_structured
from assay.store import Store

pytestmark = pytest.mark.integration


class Sum(BaseModel):
    reasoning: str
    total: int


SCHEMA = {"type": "object", "additionalProperties": False, "required": ["reasoning", "total"],
          "properties": {"reasoning": {"type": "string", "maxLength": 80}, "total": {"type": "integer"}}}


def test_embedded_model_resolves_verified() -> None:
    resolved = resolve_model()
    assert resolved.path.stat().st_size == 1_117_320_768
    assert resolved.source in ("cache", "packaged-parts", "env", "explicit")
    assert get_backend("llamacpp/default").identity()["model_sha256"] == MODEL_SHA256


def test_embedded_judge_structured_call_and_cache(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = get_backend("llamacpp/default", n_ctx=2048)
    client = JudgeClient(backend, Store(tmp_path / "s.db"), RunnerConfig(progress=False))
    messages = [Message(role="user", content="What is 17 + 25? Answer as JSON with reasoning and total.")]
    config = GenerateConfig(max_tokens=60, json_schema=SCHEMA, seed=0)

    async def twice() -> tuple:
        first = await generate_structured(client, messages, Sum, config)
        second = await generate_structured(client, messages, Sum, config)
        await backend.aclose()
        return first, second

    first, second = asyncio.run(twice())
    assert first.value is not None, first.unscored
    assert isinstance(first.value.total, int)
    assert first.value.total == 42  # a 1.5B coder model gets this right; constrained JSON always parses
    assert second.attempts[0].cached and client.stats.calls == 1


def test_smollm2_runs_in_process() -> None:
    # A short maxLength bounds the grammar, so 80 tokens always reach the closing brace.
    schema = {**SCHEMA, "properties": {"reasoning": {"type": "string", "maxLength": 30}, "total": {"type": "integer"}}}
    backend = get_backend("llamacpp/smollm2", n_ctx=1024)
    config = GenerateConfig(max_tokens=80, json_schema=schema, seed=0)
    completion = asyncio.run(backend.generate([Message(role="user", content="Add 1 and 2.")], config))
    asyncio.run(backend.aclose())
    assert completion.finish_reason == "stop", completion.text
    data = json.loads(completion.text)
    assert set(data) == {"reasoning", "total"} and isinstance(data["total"], int)
    assert completion.usage.completion_tokens > 0


def test_check_first_grammar_sampling_matches_the_stock_chain() -> None:
    # Greedy: the check-first sampler must give the stock chain's exact output; sampled: valid JSON.
    schema = {"type": "object", "additionalProperties": False, "required": ["facts"],
              "properties": {"facts": {"type": "array", "maxItems": 3,
                                       "items": {"type": "object", "additionalProperties": False,
                                                 "required": ["text", "ok"],
                                                 "properties": {"text": {"type": "string", "maxLength": 40},
                                                                "ok": {"type": "integer", "enum": [0, 1]}}}}}}
    prompts = ["List three facts about the Moon as JSON.", "Rate: water boils at 100 C at sea level."]
    # in this process, so that the sampler's counters can be read afterwards; without jump-forward (the
    # default), whose batched forced tokens round differently (test_forced_text_is_written_in_one_step)
    fast = get_backend("llamacpp/smollm2", n_ctx=1024, process="inline")
    stock = get_backend("llamacpp/smollm2", n_ctx=1024, grammar_sampling="stock", process="inline")
    assert stock.identity()["grammar_sampling"] == "stock" and "grammar_sampling" not in fast.identity()

    def run(backend, prompt: str, temperature: float) -> str:  # type: ignore[no-untyped-def]
        # 200: more than the longest reply the schema allows (3 texts of <= 40 characters), so a sampled
        # reply is never cut short
        config = GenerateConfig(max_tokens=200, json_schema=schema, seed=3, temperature=temperature)
        return asyncio.run(backend.generate([Message(role="user", content=prompt)], config)).text

    for prompt in prompts:
        assert run(fast, prompt, 0.0) == run(stock, prompt, 0.0)
        data = json.loads(run(fast, prompt, 0.7))
        assert set(data) == {"facts"} and all(f["ok"] in (0, 1) for f in data["facts"])
    sampler = fast.load().last_sampler
    assert sampler is not None and sampler.checked > 0
    asyncio.run(fast.aclose())
    asyncio.run(stock.aclose())


def test_forced_text_is_written_in_one_step() -> None:
    """Jump-forward: once the reply opens a property name, the rest of it is given without a choice;
    the reply is still the schema's, every name whole, and nothing is forced without it."""
    schema = {"type": "object", "additionalProperties": False,
              "required": ["statement_checked_against_reference", "verdict_of_the_reviewer"],
              "properties": {"statement_checked_against_reference": {"type": "string", "maxLength": 60},
                             "verdict_of_the_reviewer": {"type": "string", "enum": ["supported", "contradicted"]}}}
    config = GenerateConfig(max_tokens=120, json_schema=schema, temperature=0.0)
    messages = [Message(role="user", content="Is 'water boils at 100 C at sea level' supported? Reply in JSON.")]
    jumping = get_backend("llamacpp/smollm2", n_ctx=1024, process="inline", jump_forward=True)
    plain = get_backend("llamacpp/smollm2", n_ctx=1024, process="inline")  # off by default
    try:
        replies = {}
        for name, backend in (("jump", jumping), ("plain", plain)):
            completion = asyncio.run(backend.generate(messages, config))
            data = json.loads(completion.text)
            assert list(data) == list(schema["properties"]), completion.text
            assert data["verdict_of_the_reviewer"] in ("supported", "contradicted")
            replies[name] = (completion, backend.last_jumped)
        completion, jumped = replies["jump"]
        # both names are longer than a token: their tails are forced (the last token of each is the model's)
        assert jumped >= 4 and completion.usage.completion_tokens > jumped
        assert replies["plain"][1] == 0
    finally:
        asyncio.run(jumping.aclose())
        asyncio.run(plain.aclose())
    # logprobs are read from each step: a call that asks for them never jumps, and has one per token
    reading = get_backend("llamacpp/smollm2", n_ctx=1024, process="inline", logits_all=True, jump_forward=True)
    try:
        completion = asyncio.run(reading.generate(messages, GenerateConfig(
            max_tokens=120, json_schema=schema, temperature=0.0, logprobs=True)))
        assert reading.last_jumped == 0 and len(completion.logprobs or []) == completion.usage.completion_tokens
    finally:
        asyncio.run(reading.aclose())


def test_strict_grammar_keeps_raw_control_characters_out_of_json_strings() -> None:
    # llama-cpp-python's own schema grammar lets a raw newline into a string (invalid JSON);
    # ours must not, and must refuse a schema it cannot convert instead of falling back.
    from llama_cpp import Llama, LlamaGrammar
    from llama_cpp import _internals as internals

    from assay.core.errors import ConfigError
    from assay.judge.backends._fastgrammar import CheckFirstSampler, json_schema_grammar
    from assay.judge.model import smollm_path

    schema = {"type": "object", "required": ["elements"], "additionalProperties": False,
              "properties": {"elements": {"type": "array", "items": {"type": "string", "maxLength": 40}}}}
    vocab = Llama(model_path=str(smollm_path()), vocab_only=True, verbose=False)
    prefix = vocab.tokenize(b'{"elements": ["abc', add_bos=False)
    newline, letter = vocab.tokenize(b"\n", add_bos=False)[0], vocab.tokenize(b"d", add_bos=False)[0]

    def allows(grammar: LlamaGrammar) -> list[bool]:
        check = internals.LlamaSampler()
        check.add_grammar(vocab._model, grammar)
        sampler = CheckFirstSampler(None, None, check, greedy=True, n_vocab=vocab.n_vocab())
        for token in prefix:
            assert sampler._allowed([token]) == [True]
            check.accept(token)
        return sampler._allowed([newline, letter])

    assert allows(LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)) == [True, True]
    assert allows(json_schema_grammar(schema)) == [False, True]
    with pytest.raises(ConfigError, match="cannot turn this JSON schema into a grammar"):
        json_schema_grammar({"type": "frobnicate"})


@pytest.fixture(scope="module")
def vocab():
    from llama_cpp import Llama

    from assay.judge.model import smollm_path

    return Llama(model_path=str(smollm_path()), vocab_only=True, verbose=False)


def _accepts(vocab, grammar, text: str) -> bool:
    """Whether the grammar lets ``text`` be written, token by token as SmolLM2 tokenizes it."""
    from llama_cpp import _internals as internals

    from assay.judge.backends._fastgrammar import CheckFirstSampler

    check = internals.LlamaSampler()
    check.add_grammar(vocab._model, grammar)
    sampler = CheckFirstSampler(None, None, check, greedy=True, n_vocab=vocab.n_vocab())
    for token in vocab.tokenize(text.encode(), add_bos=False):
        if sampler._allowed([token]) != [True]:
            return False
        check.accept(token)
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(low=st.integers(-5, 12), span=st.integers(0, 12), value=st.integers(-20, 40))
def test_an_integer_range_is_kept_by_the_grammar(vocab, low: int, span: int, value: int) -> None:
    """llama.cpp's converter ignores minimum/maximum: a judge wrote 11 on a 1-10 scale and the
    call was asked again. Ours writes the range out: every value in it, and nothing else."""
    from assay.judge.backends._fastgrammar import json_schema_grammar

    schema = {"type": "object", "required": ["s"], "additionalProperties": False,
              "properties": {"s": {"type": "integer", "minimum": low, "maximum": low + span}}}
    assert _accepts(vocab, json_schema_grammar(schema), f'{{"s": {value}}}') == (low <= value <= low + span)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(high=st.sampled_from([1, 5, 10]), value=st.one_of(
    st.decimals(min_value=-2, max_value=12, places=2, allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(["1.0", "1.00", "1.01", "0.999", "10.0", "10.5", "0", "00.5", "-0", "1e0", ".5"])))
def test_a_bounded_number_is_kept_by_the_grammar(vocab, high: int, value: str) -> None:
    from decimal import Decimal

    from assay.judge.backends._fastgrammar import json_schema_grammar

    schema = {"type": "object", "required": ["s"], "additionalProperties": False,
              "properties": {"s": {"type": "number", "minimum": 0, "maximum": high}}}
    plain = re.fullmatch(r"(0|[1-9][0-9]*)(\.[0-9]+)?", value) is not None  # no sign, exponent or lead zero
    assert _accepts(vocab, json_schema_grammar(schema), f'{{"s": {value}}}') == (
        plain and 0 <= Decimal(value) <= high)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(band=st.sampled_from(["severe", "moderate", "minor", "none"]),
       score=st.sampled_from(["0", "0.0", "0.3", "0.30", "0.305", "0.31", "0.6", "0.61", "0.85", "0.86", "0.99",
                              "1", "1.0", "1.00", "1.01"]))
def test_a_coupled_score_lies_in_the_band_written_before_it(vocab, band: str, score: str) -> None:
    """The case-aware judge's band and score, as the embedded judge's grammar writes them: SmolLM2
    wrote scores outside the band it had just chosen, and the turn was asked again."""
    from assay.judge.backends._fastgrammar import json_schema_grammar
    from assay.methods.caseaware import BANDS, CaseAware, band_of

    schema = CaseAware().schema(coupled=True)
    (first, *_) = schema["properties"]
    grammar = json_schema_grammar(schema)
    metric = first.removesuffix("_justification")
    text = f'{{"{first}": "ok", "{metric}_band": "{band}", "{metric}_score": {score},'
    lo, hi = BANDS[band]
    in_band = len(score.split(".")[-1]) <= 2 if "." in score else True
    assert _accepts(vocab, grammar, text) == (in_band and lo <= float(score) <= hi and band_of(float(score)) == band)


def test_a_coupling_the_grammar_cannot_keep_is_refused() -> None:
    from assay.core.errors import ConfigError
    from assay.judge.backends import COUPLED
    from assay.judge.backends._fastgrammar import _grammar_text, bounded_rule, json_schema_grammar, range_literals

    assert range_literals(0.3, 0.31, 2) == ["0.3", "0.30", "0.31"] and range_literals(1, 1, 1) == ["1", "1.0"]
    props = {"b": {"type": "string", "enum": ["x"]}, "gap": {"type": "string"}, "s": {"type": "number"}}
    schema = {"type": "object", "required": ["b", "gap", "s"], "properties": props,
              COUPLED: [{"key": "b", "value": "s", "ranges": {"x": [0, 1]}}]}
    with pytest.raises(ConfigError, match="right after 'b'"):
        json_schema_grammar(schema)
    schema[COUPLED] = [{"key": "b", "value": "gap", "ranges": {"x": [0, 0.125]}}]
    with pytest.raises(ConfigError, match="not one of non-negative decimals"):
        json_schema_grammar(schema)
    schema[COUPLED] = [{"key": "b", "value": "gap", "ranges": {"x": [0, 1], "y": [0, 1]}}]
    with pytest.raises(ConfigError, match="name each value of 'b'"):
        json_schema_grammar(schema)
    # a rule name inside another ("b-kv" in "a-b-kv"): only whole names are coupled
    chained = {"type": "object", "required": ["a", "a_b", "b", "s"], "properties": {
        "a": {"type": "string", "enum": ["p"]}, "a_b": {"type": "number"},
        "b": {"type": "string", "enum": ["q"]}, "s": {"type": "number"}},
        COUPLED: [{"key": "b", "value": "s", "ranges": {"q": [0, 1]}}]}
    assert " a-b-kv " in _grammar_text(json.dumps(chained)).split("root ::= ")[1]
    # an enum or a multipleOf narrows a range further: the converter's own rule stays
    assert bounded_rule({"type": "integer", "minimum": 1, "maximum": 5, "enum": [1, 3, 5]}) is None
    assert bounded_rule({"type": "number", "minimum": 0, "maximum": float("inf")}) is None


def test_the_reused_prompt_prefix_is_counted_per_call_and_per_run(tmp_path) -> None:
    """Two calls that share a long system prompt: llama.cpp keeps the shared prefix in its KV
    cache, and the second call says how many prompt tokens it did not recompute; a run's call
    statistics give the share (prefix_reuse)."""
    import assay
    from assay.judge.backends import JudgeBackend
    from assay.judge.runner import RunnerConfig
    from assay.store import Store

    # the disk store off: the first call reads everything whether or not an earlier run kept the instructions
    backend = get_backend("llamacpp/smollm2", n_ctx=1024, prefix_cache=False)
    assert isinstance(backend, JudgeBackend)
    system = Message(role="system", content="You grade answers. " + "Be brief and exact. " * 40)
    config = GenerateConfig(max_tokens=4, seed=0)
    first = asyncio.run(backend.generate([system, Message(role="user", content="Is 2+2=4?")], config))
    second = asyncio.run(backend.generate([system, Message(role="user", content="Is 3+3=7?")], config))
    assert second.usage.prompt_tokens > 150
    assert 150 < second.usage.cached_prompt_tokens < second.usage.prompt_tokens
    assert first.usage.cached_prompt_tokens == 0
    items = [assay.Item(id=f"q{i}", query="Q?", response=f"A{i}.", reference="A.") for i in range(2)]
    result = assay.evaluate(items, "pointwise", backend, runner=RunnerConfig(progress=False), store=tmp_path / "p.db",
                            max_reasks=0, max_reasoning_chars=40)
    asyncio.run(backend.aclose())
    stats = result.summary()["judge_calls"]
    print(stats)
    assert 0.3 < stats["prefix_reuse"] <= 1.0 and stats["cached_prompt_tokens"] > 0
    assert Store(tmp_path / "p.db", create=False).call_stats(result.rows[0].call_keys)["calls"] >= 1


def test_a_prompt_family_comes_back_from_its_kv_snapshot() -> None:
    """Two families of prompts (each its own long instructions) alternate, as a method's four
    kinds of question do answer after answer: the third call finds its family's instructions in
    a snapshot instead of reading them again, for label calls and generation alike, and gives
    the same label probabilities (within float noise) as a backend that keeps no snapshot."""
    family_a = Message(role="system", content="You grade answers. " + "Be brief and exact. " * 40)
    family_b = Message(role="system", content="You list facts. " + "Write one fact per line. " * 40)

    def ask(text: str, system: Message) -> list[Message]:
        return [system, Message(role="user", content=text)]

    labels = GenerateConfig(max_tokens=1, labels=["yes", "no"])
    short = GenerateConfig(max_tokens=3, seed=0)
    results = {}
    for slots in (6, 0):
        backend = get_backend("llamacpp/smollm2", n_ctx=1024, state_slots=slots, prefix_cache=False)
        run = [asyncio.run(backend.generate(ask("Is 2+2=4?", family_a), labels)),
               asyncio.run(backend.generate(ask("Paris is in France.", family_b), short)),
               asyncio.run(backend.generate(ask("Is 3+3=7?", family_a), labels)),
               asyncio.run(backend.generate(ask("Rome is in Italy.", family_b), short))]
        asyncio.run(backend.aclose())
        results[slots] = run
    kept, plain = results[6], results[0]
    assert kept[2].usage.cached_prompt_tokens > 150 > plain[2].usage.cached_prompt_tokens
    assert kept[3].usage.cached_prompt_tokens > 150 > plain[3].usage.cached_prompt_tokens
    for label in ("yes", "no"):
        assert kept[2].label_probs is not None and plain[2].label_probs is not None
        assert abs(kept[2].label_probs[label] - plain[2].label_probs[label]) < 0.02


def test_a_system_message_is_read_once_per_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs, each its own model process: the first reads the instructions (the system
    message) and keeps their KV state on disk, the second loads it and reads only the rest — with
    exactly the same label probabilities and text. Off, nothing is kept."""
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    system = Message(role="system", content="You grade answers. " + "Be brief and exact. " * 40)
    label_call = [system, Message(role="user", content="Is 2+2=4?")]
    text_call = [system, Message(role="user", content="Name a colour.")]
    runs = []
    for _ in range(2):
        backend = get_backend("llamacpp/smollm2", n_ctx=1024)
        runs.append([asyncio.run(backend.generate(label_call, GenerateConfig(max_tokens=1, labels=["yes", "no"]))),
                     asyncio.run(backend.generate(text_call, GenerateConfig(max_tokens=4, seed=0)))])
        asyncio.run(backend.aclose())
    assert len(list((tmp_path / "kv").glob("*.kv"))) == 1
    (cold_label, cold_text), (warm_label, warm_text) = runs
    assert cold_label.usage.cached_prompt_tokens == 0 < 150 < warm_label.usage.cached_prompt_tokens
    assert cold_text.usage.cached_prompt_tokens > 150  # the first run's first call left the instructions in place
    assert warm_label.label_probs == cold_label.label_probs and warm_text.text == cold_text.text
    # a stored state llama.cpp refuses (its header right, its body not): read again, stored again, same numbers
    (kept,) = (tmp_path / "kv").glob("*.kv")
    data = kept.read_bytes()
    kept.write_bytes(data[: len(data) // 2])
    backend = get_backend("llamacpp/smollm2", n_ctx=1024)
    again = asyncio.run(backend.generate(label_call, GenerateConfig(max_tokens=1, labels=["yes", "no"])))
    asyncio.run(backend.aclose())
    assert again.usage.cached_prompt_tokens == 0 and again.label_probs == cold_label.label_probs
    assert kept.read_bytes() == data
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "off"))
    backend = get_backend("llamacpp/smollm2", n_ctx=1024, prefix_cache=False)
    off = asyncio.run(backend.generate(label_call, GenerateConfig(max_tokens=1, labels=["yes", "no"])))
    asyncio.run(backend.aclose())
    assert not (tmp_path / "off" / "kv").exists()
    assert off.label_probs is not None and cold_label.label_probs is not None
    assert abs(off.label_probs["yes"] - cold_label.label_probs["yes"]) < 0.02  # one step or two: float noise


def test_digit_labels_are_told_apart_by_their_first_token() -> None:
    """Grades 0–4 as labels (pointwise direct): a tokenizer that writes " 0" as a space and a
    digit must not make every digit share the space as its first token."""
    backend = get_backend("llamacpp/default", n_ctx=1024)
    config = GenerateConfig(max_tokens=1, labels=["0", "1", "2", "3", "4"])
    messages = [Message(role="user", content="How many legs does a cat have, from 0 to 4? Reply with the digit.")]
    done = asyncio.run(backend.generate(messages, config))
    asyncio.run(backend.aclose())
    assert done.label_probs is not None and set(done.label_probs) == {"0", "1", "2", "3", "4"}
    assert max(done.label_probs, key=lambda k: done.label_probs[k]) == "4"  # type: ignore[index]


def test_a_prompt_longer_than_the_context_window_fails_with_what_to_do() -> None:
    """llama.cpp itself fails deep in its decoder (or prints and returns nothing) when a prompt
    does not fit: the backend refuses the call first, naming the sizes and the option."""
    from assay.core.errors import BackendError
    from assay.judge.model import smollm_path

    backend = get_backend("llamacpp/smollm", model_path=str(smollm_path()), n_ctx=256)
    messages = [Message(role="user", content="word " * 600 + "Is this long? Reply yes or no.")]
    try:
        for config in (GenerateConfig(max_tokens=1, labels=["yes", "no"]), GenerateConfig(max_tokens=8)):
            with pytest.raises(BackendError, match=r"context window holds 256: raise it with --judge-opt n_ctx=N"):
                asyncio.run(backend.generate(messages, config))
        short = [Message(role="user", content="Is the sky blue? Reply yes or no.")]
        done = asyncio.run(backend.generate(short, GenerateConfig(max_tokens=1, labels=["yes", "no"])))
        assert done.label_probs is not None  # the backend still answers calls that fit
        # a prompt that fits with less room than max_tokens: llama.cpp shortens the generation
        roomy = asyncio.run(backend.generate(short, GenerateConfig(max_tokens=400, temperature=0.0)))
        assert roomy.usage.prompt_tokens + roomy.usage.completion_tokens <= 256
    finally:
        asyncio.run(backend.aclose())
