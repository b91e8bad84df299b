"""What judge calls cost as billed: the price table, the cost formula with cached prompt tokens,
OpenAI's caching rule, and the cached tokens read from LiteLLM's usage (OpenAI's and Anthropic's
names), a run's summary and its report."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.core.errors import ConfigError
from assay.core.method import CallEstimate, openai_cached
from assay.core.types import Completion, GenerateConfig, Message, Usage
from assay.engine.results import run_list_price
from assay.judge.backends import JudgeBackend
from assay.judge.backends._base import Capabilities
from assay.judge.prices import PRICES_PER_MILLION, Price, caches_like_openai, given_price, list_price
from assay.judge.runner import RunnerConfig
from tests.helpers import ITEM
from tests.stubs import stub_server

MSG = [Message(role="user", content="hi")]


# --- the cost formula ------------------------------------------------------------------------------
def test_cached_prompt_tokens_are_billed_at_the_cached_rate() -> None:
    price = Price(2.0, 0.5, 8.0)
    # (prompt − cached)·in + cached·cached_in + completion·out, per 1M tokens
    assert price.cost(4000, 20, 3072) == pytest.approx((928 * 2.0 + 3072 * 0.5 + 20 * 8.0) / 1e6)
    assert price.cost(4000, 20) == pytest.approx((4000 * 2.0 + 20 * 8.0) / 1e6)
    assert price.cost(4000, 20, 3072) < price.cost(4000, 20)
    assert Price(2.0, 2.0, 8.0).cost(4000, 20, 3072) == price.cost(4000, 20)  # no discount: the same
    assert price.cost(0, 0, 0) == 0.0


def test_impossible_counts_and_prices_are_refused() -> None:
    with pytest.raises(ValueError, match="more than"):
        Price(1, 1, 1).cost(10, 0, 11)
    with pytest.raises(ValueError, match=">= 0"):
        Price(1, 1, 1).cost(-1, 0)
    for bad in (math.nan, math.inf, -0.5):
        with pytest.raises(ValueError, match="finite number"):
            Price(1.0, bad, 1.0)


def test_the_list_prices() -> None:
    assert all(cached <= prompt and min(prompt, cached, out) > 0 for prompt, cached, out in PRICES_PER_MILLION.values())
    assert list_price("openai/gpt-4o-mini") == Price(0.15, 0.075, 0.60)
    assert list_price("openai/gpt-4.1") == Price(2.00, 0.50, 8.00)
    assert list_price("litellm/openai/gpt-4.1-nano") == Price(0.10, 0.025, 0.40)  # the same model through LiteLLM
    assert list_price("litellm/anthropic/claude-sonnet-4-5-20250929") == Price(3.00, 0.30, 15.00)
    for unknown in ("openai/gpt-4o-mini@http://127.0.0.1:8080/v1", "llamacpp/default", "openai/m", "jury/a+b", ""):
        assert list_price(unknown) is None
    assert caches_like_openai("openai/gpt-4o") and caches_like_openai("litellm/openai/gpt-4o")
    assert not caches_like_openai("openai/gpt-4o@http://127.0.0.1:9/v1")
    assert not caches_like_openai("litellm/anthropic/claude-sonnet-4-5-20250929")


def test_a_given_price_without_a_cached_one_has_no_discount() -> None:
    assert given_price(None, None, None) is None
    assert given_price(2.0, None, 8.0) == Price(2.0, 2.0, 8.0)
    assert given_price(2.0, 0.5, None) == Price(2.0, 0.5, 0.0)
    assert given_price(None, None, 8.0) == Price(0.0, 0.0, 8.0)
    with pytest.raises(ConfigError, match="--price-cached 3 is above --price-in 2"):
        given_price(2.0, 3.0, 8.0)
    with pytest.raises(ConfigError, match=r"--price-cached 0\.5 is above --price-in 0"):
        given_price(None, 0.5, None)


def test_a_runs_list_price_is_not_that_of_a_model_served_elsewhere() -> None:
    assert run_list_price({"judge": "openai/gpt-4o", "judge_identity": {"base_url": None}}) == Price(2.5, 1.25, 10.0)
    assert run_list_price({"judge": "litellm/openai/gpt-4o", "judge_identity": {"api_base": "http://x"}}) is None
    assert run_list_price({"judge": "openai/gpt-4o@http://x/v1"}) is None
    assert run_list_price({}) is None


# --- OpenAI's caching rule, for --dry-run ----------------------------------------------------------
@pytest.mark.parametrize("prompt, shared, cached", [
    (1023, 1023, 0),      # below 1,024 prompt tokens nothing is cached
    (1024, 1024, 1024),
    (2000, 1023, 0),      # a shared start below 1,024 tokens is no hit
    (2000, 1100, 1024),   # in 128-token steps
    (5000, 1300, 1280),
    (5000, 4999, 4992),
    (1500, 9000, 1408),   # never more than the prompt
    (1500, -5, 0),
])
def test_openais_rule(prompt: int, shared: int, cached: int) -> None:
    assert openai_cached(prompt, shared) == cached
    assert cached % 128 == 0 and cached <= prompt


def test_an_estimate_adds_its_cached_tokens() -> None:
    assert (CallEstimate(calls=1) + CallEstimate(calls=1)).cached_tokens is None  # not modelled
    both = CallEstimate(calls=1, prompt_tokens=2000, cached_tokens=1024) + CallEstimate(calls=1, prompt_tokens=10)
    assert both.cached_tokens == 1024 and both.prompt_tokens == 2010


def test_deces_estimate_counts_a_long_shared_start_as_cached() -> None:
    long = {**ITEM,
            "response": " ".join(f"The policy covers case {i} if filed within {i + 3} days." for i in range(80)),
            "reference": " ".join(f"Clause {i}: case {i} claims are filed within {i + 3} days." for i in range(80))}
    est = assay.estimate([long, {**long, "id": "q2"}], "dece", verdicts="direct")
    assert est.cached_tokens is not None and 0 < est.cached_tokens < est.prompt_tokens
    assert est.cached_tokens % 128 == 0
    short = assay.estimate([ITEM], "dece", verdicts="direct")
    assert short.cached_tokens == 0  # every prompt below 1,024 tokens


# --- the cached tokens of LiteLLM's usage, from a real LiteLLM call to a server on 127.0.0.1 --------
def litellm_usage(model: str, answer: dict[str, Any], suffix: str = "") -> Usage:
    if importlib.util.find_spec("litellm") is None:  # not imported here: assay's import keeps its cost map local
        pytest.skip("litellm is not installed")
    from assay.judge.backends._litellm import LiteLLMBackend

    with stub_server("json", lambda _: answer) as stub:
        backend = LiteLLMBackend(model, api_base=stub.url.removesuffix("/v1") + suffix, api_key="sk-test")
        completion = asyncio.run(backend.generate(MSG, GenerateConfig(max_tokens=10)))
        assert stub.requests == 1
    assert completion.text == "hello"
    return completion.usage


def test_litellm_anthropic_cache_reads_are_cached_prompt_tokens() -> None:
    answer = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-3-5-haiku-20241022",
              "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn", "stop_sequence": None,
              "usage": {"input_tokens": 100, "output_tokens": 7, "cache_read_input_tokens": 1500,
                        "cache_creation_input_tokens": 0}}
    usage = litellm_usage("anthropic/claude-3-5-haiku-20241022", answer)
    # LiteLLM counts the cache reads into the prompt tokens, as OpenAI does
    assert (usage.prompt_tokens, usage.cached_prompt_tokens, usage.completion_tokens) == (1600, 1500, 7)


@pytest.mark.parametrize("usage, cached", [
    ({"prompt_tokens": 2000, "completion_tokens": 5, "total_tokens": 2005}, 0),
    ({"prompt_tokens": 2000, "completion_tokens": 5, "total_tokens": 2005, "prompt_tokens_details": None}, 0),
    ({"prompt_tokens": 2000, "completion_tokens": 5, "total_tokens": 2005,
      "prompt_tokens_details": {"cached_tokens": 1792}}, 1792),
])
def test_litellm_openai_cached_tokens(usage: dict[str, Any], cached: int) -> None:
    answer = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
              "usage": usage}
    read = litellm_usage("openai/m", answer, "/v1")
    assert (read.prompt_tokens, read.cached_prompt_tokens, read.completion_tokens) == (2000, cached, 5)


# --- a run's summary and report: the cached tokens and the list-price cost ------------------------------
class CachingJudge(JudgeBackend):
    """A judge named like OpenAI's whose every call reads 1,536 of its 2,000 prompt tokens from the cache."""

    name = "openai/gpt-4o-mini"
    capabilities = Capabilities(json_schema=True, seed=True)
    max_concurrency = 1

    def identity(self) -> dict[str, Any]:
        return {"backend": "test-caching", "model": "gpt-4o-mini"}

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        text = json.dumps({"reasoning": "stages", "issues": [], "score": 3, "justification": "ok"})
        return Completion(text=text, usage=Usage(prompt_tokens=2000, completion_tokens=10, cached_prompt_tokens=1536))


def test_the_summary_and_report_price_the_stored_usage(tmp_path: Path) -> None:
    items = [{**ITEM, "id": f"q{i}", "query": f"Question {i}: {ITEM['query']}"} for i in range(2)]
    result = assay.evaluate(items, "pointwise", CachingJudge(), store=tmp_path / "r.db",
                            runner=RunnerConfig(progress=False))
    calls = result.summary()["judge_calls"]
    assert (calls["calls"], calls["prompt_tokens"], calls["cached_prompt_tokens"]) == (2, 4000, 3072)
    expected = (928 * 0.15 + 3072 * 0.075 + 20 * 0.60) / 1e6
    assert calls["list_price_usd"] == pytest.approx(expected)
    html = result.report(tmp_path / "r.html").read_text()
    assert "3072 (77%) of the prompt tokens read from the provider's prompt cache" in html
    assert f"${expected:.4f} at openai/gpt-4o-mini" in html
