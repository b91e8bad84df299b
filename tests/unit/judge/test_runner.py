from __future__ import annotations

import asyncio

import pytest
from tenacity import RetryCallState

from assay.core.errors import BudgetExhausted, RateLimited, ScriptExhausted, TransientBackendError
from assay.core.types import GenerateConfig, Message
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import JudgeClient, RunnerConfig, cache_key, gather_in_order
from assay.store import Store

MSG = [Message(role="user", content="hello")]
FAST = RunnerConfig(progress=False, backoff_initial_s=0.0, backoff_max_s=0.05)


def test_cache_key_is_versioned_and_sensitive_to_what_changes_output() -> None:
    base = cache_key({"backend": "x"}, MSG, GenerateConfig())
    assert base.startswith("c1:")
    assert base == cache_key({"backend": "x"}, list(MSG), GenerateConfig())
    assert base != cache_key({"backend": "y"}, MSG, GenerateConfig())
    assert base != cache_key({"backend": "x"}, MSG, GenerateConfig(temperature=0.3))
    assert base != cache_key({"backend": "x"}, MSG, GenerateConfig(seed=1))
    assert base != cache_key({"backend": "x"}, [Message(role="user", content="hello!")], GenerateConfig())


def test_second_identical_call_comes_from_the_cache() -> None:
    backend = ScriptedBackend(["one"])
    client = JudgeClient(backend, Store(), FAST)
    k1, c1 = asyncio.run(client.complete(MSG, GenerateConfig()))
    k2, c2 = asyncio.run(client.complete(MSG, GenerateConfig()))
    assert (k1, c1.text, c1.cached) == (k2, "one", False)
    assert c2.text == "one" and c2.cached
    assert len(backend.calls) == 1 and client.stats.cache_hits == 1


def test_concurrent_identical_calls_are_made_once() -> None:
    backend = ScriptedBackend(["shared"], latency=0.05)
    client = JudgeClient(backend, Store(), FAST)

    async def both() -> list:
        return await asyncio.gather(client.complete(MSG, GenerateConfig()),
                                    client.complete(MSG, GenerateConfig()))

    results = asyncio.run(both())
    assert [c.text for _, c in results] == ["shared", "shared"]
    assert len(backend.calls) == 1


def test_retries_transient_failures_then_succeeds() -> None:
    backend = ScriptedBackend([{"fault": "server_error"}, {"fault": "rate_limit", "retry_after": 0.01}, "ok"])
    client = JudgeClient(backend, Store(), FAST)
    _, completion = asyncio.run(client.complete(MSG, GenerateConfig()))
    assert completion.text == "ok"
    assert client.stats.retries == 2
    assert client.stats.calls == 1 and client.stats.failures == 0
    assert "RateLimited" in client.stats.retry_reasons[1]


def test_gives_up_after_max_retries() -> None:
    backend = ScriptedBackend([{"fault": "server_error"}] * 3)
    client = JudgeClient(backend, Store(), FAST.model_copy(update={"max_retries": 2}))
    with pytest.raises(TransientBackendError):
        asyncio.run(client.complete(MSG, GenerateConfig()))
    assert len(backend.calls) == 3 and client.stats.failures == 1


def test_wait_honours_retry_after_and_caps_it() -> None:
    client = JudgeClient(ScriptedBackend([]), Store(), RunnerConfig(backoff_max_s=10))

    def state_with(exc: BaseException, attempt: int) -> RetryCallState:
        state = RetryCallState(None, None, (), {})
        state.attempt_number = attempt
        state.set_exception((type(exc), exc, None))
        return state

    assert client._wait(state_with(RateLimited("429", retry_after=3.0), 1)) == 3.0
    assert client._wait(state_with(RateLimited("429", retry_after=99.0), 1)) == 10.0
    # tenacity's attempt 2 is the third failure overall: full jitter up to 1 * 2**2
    jitter = [client._wait(state_with(TransientBackendError("500"), 2)) for _ in range(50)]
    assert all(0 <= w <= 4.0 for w in jitter) and len(set(jitter)) > 1 and max(jitter) > 2.0


def test_timeout_is_retried_then_reported() -> None:
    backend = ScriptedBackend([{"fault": "hang", "seconds": 5}, {"fault": "hang", "seconds": 5}])
    client = JudgeClient(backend, Store(), FAST.model_copy(update={"timeout_s": 0.05, "max_retries": 1}))
    with pytest.raises(TransientBackendError, match="timed out"):
        asyncio.run(client.complete(MSG, GenerateConfig()))
    assert len(backend.calls) == 2


def test_budget_stops_new_calls_but_serves_the_cache() -> None:
    backend = ScriptedBackend(["x" * 400, "y"])
    client = JudgeClient(backend, Store(), FAST.model_copy(update={"budget_tokens": 10}))
    asyncio.run(client.complete(MSG, GenerateConfig()))
    with pytest.raises(BudgetExhausted):
        asyncio.run(client.complete([Message(role="user", content="other")], GenerateConfig()))
    asyncio.run(client.complete(MSG, GenerateConfig()))  # cached: free


def test_scripted_backend_fails_loudly_when_it_runs_out() -> None:
    client = JudgeClient(ScriptedBackend([]), Store(), FAST)
    with pytest.raises(ScriptExhausted):
        asyncio.run(client.complete(MSG, GenerateConfig()))


def test_concurrency_limit_is_respected() -> None:
    backend = ScriptedBackend(rules=[{"match": ".", "responses": ["r"], "repeat": True}], latency=0.02)
    client = JudgeClient(backend, Store(), FAST.model_copy(update={"concurrency": 2}))
    active = 0
    peak = 0
    original = backend.generate

    async def counting(messages, config):  # type: ignore[no-untyped-def]
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            return await original(messages, config)
        finally:
            active -= 1

    backend.generate = counting  # type: ignore[method-assign]

    async def many() -> None:
        await asyncio.gather(*[client.complete([Message(role="user", content=str(i))], GenerateConfig())
                               for i in range(8)])

    asyncio.run(many())
    assert peak == 2


def test_gather_in_order_returns_input_order() -> None:
    async def job(i: int) -> int:
        await asyncio.sleep(0.01 * (5 - i))
        return i

    results = asyncio.run(gather_in_order([lambda i=i: job(i) for i in range(5)], limit=5))
    assert results == [0, 1, 2, 3, 4]


def test_a_budget_holds_when_calls_run_at_once() -> None:
    """Calls in flight all passed the budget check before any counted its tokens: at concurrency 8, a budget
    of 2,000 let 9,262 through (a case-aware run). Now a call waits while those in flight would spend the rest."""
    backend = ScriptedBackend(rules=[{"match": ".", "responses": ["w " * 40], "repeat": True}], latency=0.02)
    client = JudgeClient(backend, Store(), FAST.model_copy(update={"budget_tokens": 300, "concurrency": 8}))
    prompts = [[Message(role="user", content=f"question {i}: " + "x" * 200)] for i in range(20)]

    async def main() -> list[object]:
        jobs = [client.complete(p, GenerateConfig()) for p in prompts]
        return await asyncio.gather(*jobs, return_exceptions=True)

    outcomes = asyncio.run(main())
    made = [o for o in outcomes if not isinstance(o, BaseException)]
    assert made and any(isinstance(o, BudgetExhausted) for o in outcomes)
    one_call = client.stats.tokens / client.stats.calls
    assert client.stats.tokens <= 300 + one_call, (client.stats.tokens, client.stats.calls)
