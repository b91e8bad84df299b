"""One judge behind several endpoints: spreading, per-endpoint limits, routing around failures,
one cache identity."""

from __future__ import annotations

import asyncio

import pytest

import assay
from assay.core.errors import BackendError, RateLimited, TransientBackendError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import get_backend
from assay.judge.backends._base import Capabilities, JudgeBackend
from assay.judge.backends._pool import PoolBackend
from assay.judge.runner import RunnerConfig


class Endpoint(JudgeBackend):
    capabilities = Capabilities(json_schema=True)

    def __init__(self, name: str, *, limit: int = 2, fail: Exception | None = None, delay: float = 0.01) -> None:
        self.name, self.max_concurrency, self.fail, self.delay = name, limit, fail, delay
        self.inflight = self.peak = self.calls = 0

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        self.inflight += 1
        self.peak = max(self.peak, self.inflight)
        await asyncio.sleep(self.delay)
        self.inflight -= 1
        return Completion(text=f"{self.name}:{messages[-1].content}")


def pool(*members: Endpoint) -> PoolBackend:
    return PoolBackend(list(members), name="openai/m@a,b", identity={"backend": "openai", "model": "m"})


async def _many(backend: PoolBackend, n: int) -> list[Completion]:
    return await asyncio.gather(*(backend.generate([Message(role="user", content=str(i))], GenerateConfig())
                                  for i in range(n)))


def test_calls_spread_over_endpoints_within_each_limit() -> None:
    a, b = Endpoint("a", limit=2), Endpoint("b", limit=3)
    backend = pool(a, b)
    assert backend.max_concurrency == 5
    done = asyncio.run(_many(backend, 40))
    assert len(done) == 40 and a.calls + b.calls == 40 and a.calls > 5 and b.calls > 5
    assert a.peak <= 2 and b.peak <= 3
    assert [s["calls"] for s in backend.stats()] == [a.calls, b.calls]


def test_a_failing_endpoint_is_routed_around_and_rests() -> None:
    dead, live = Endpoint("dead", fail=TransientBackendError("connection refused")), Endpoint("live")
    backend = pool(dead, live)
    done = asyncio.run(_many(backend, 10))
    assert all(c.text.startswith("live:") for c in done)
    assert dead.calls == 1  # after its first failure it rests: the others go straight to the live one
    assert backend.stats()[0]["resting"] and backend.stats()[0]["failures"] == 1


def test_when_every_endpoint_fails_the_runner_sees_one_transient_error() -> None:
    backend = pool(Endpoint("a", fail=RateLimited("429", retry_after=3.0)),
                   Endpoint("b", fail=TransientBackendError("500")))
    with pytest.raises(TransientBackendError, match="every endpoint"):
        asyncio.run(_many(backend, 1))
    bad = pool(Endpoint("a", fail=BackendError("HTTP 400")), Endpoint("b"))
    with pytest.raises(BackendError, match="HTTP 400"):  # the request is wrong: not retried elsewhere
        asyncio.run(_many(bad, 1))


def test_the_pool_keeps_one_cache_identity_whatever_its_urls() -> None:
    one = get_backend("openai/m@http://127.0.0.1:1/v1,http://127.0.0.1:2/v1")
    two = get_backend("openai/m@http://127.0.0.1:3/v1,http://127.0.0.1:1/v1,http://127.0.0.1:4/v1")
    assert isinstance(one, PoolBackend) and one.identity() == two.identity()
    assert "base_url" not in one.identity()
    single = get_backend("openai/m@http://127.0.0.1:1/v1")
    assert single.identity()["base_url"] == "http://127.0.0.1:1/v1"
    with pytest.raises(Exception, match="repeated endpoint"):
        get_backend("openai/m@http://127.0.0.1:1/v1,http://127.0.0.1:1/v1")


def test_a_run_over_a_pool_with_one_dead_endpoint_scores_everything() -> None:
    from assay.judge.backends import ScriptedBackend

    dead = Endpoint("dead", fail=TransientBackendError("refused"))
    live = ScriptedBackend(['{"reasoning": "r", "issues": [], "score": 3, "justification": "j"}'] * 4)
    backend = PoolBackend([dead, live], name="openai/m@x,y", identity={"backend": "openai", "model": "m"})
    items = [assay.Item(id=f"q{i}", query="Q?", response=f"A{i}.", reference="A.") for i in range(4)]
    result = assay.evaluate(items, "pointwise", backend, runner=RunnerConfig(progress=False))
    assert [r.status for r in result.rows] == ["scored"] * 4 and live.calls and len(live.calls) == 4
