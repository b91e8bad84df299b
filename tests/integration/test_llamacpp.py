"""The in-process llama.cpp backend with the real embedded model (and SmolLM2 for speed)."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from assay.backends import get_backend
from assay.model import MODEL_SHA256, resolve_model
from assay.runner import JudgeClient, RunnerConfig
from assay.store import Store
from assay.structured import generate_structured
from assay.types import GenerateConfig, Message

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
    fast = get_backend("llamacpp/smollm2", n_ctx=1024)
    stock = get_backend("llamacpp/smollm2", n_ctx=1024, grammar_sampling="stock")
    assert stock.identity()["grammar_sampling"] == "stock" and "grammar_sampling" not in fast.identity()

    def run(backend, prompt: str, temperature: float) -> str:  # type: ignore[no-untyped-def]
        config = GenerateConfig(max_tokens=120, json_schema=schema, seed=3, temperature=temperature)
        return asyncio.run(backend.generate([Message(role="user", content=prompt)], config)).text

    for prompt in prompts:
        assert run(fast, prompt, 0.0) == run(stock, prompt, 0.0)
        data = json.loads(run(fast, prompt, 0.7))
        assert set(data) == {"facts"} and all(f["ok"] in (0, 1) for f in data["facts"])
    sampler = fast.load().last_sampler
    assert sampler is not None and sampler.checked > 0
    asyncio.run(fast.aclose())
    asyncio.run(stock.aclose())


def test_strict_grammar_keeps_raw_control_characters_out_of_json_strings() -> None:
    # llama-cpp-python's own schema grammar lets a raw newline into a string (invalid JSON);
    # ours must not, and must refuse a schema it cannot convert instead of falling back.
    from llama_cpp import Llama, LlamaGrammar
    from llama_cpp import _internals as internals

    from assay.backends._fastgrammar import CheckFirstSampler, json_schema_grammar
    from assay.errors import ConfigError
    from assay.model import smollm_path

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
