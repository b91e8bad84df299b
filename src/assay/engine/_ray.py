"""The Ray executor: units evaluated by Ray actors, each with its own judge backend.

The driver (the process running ``assay eval``) stays the store's only writer:

1. For each pending unit it first replays the method against the cache alone (a client that
   answers from the store and raises :class:`CacheMiss` otherwise): a unit whose calls are all
   cached is finished on the driver without touching the cluster.
2. Otherwise the unit goes to a worker — an actor that built its own backend from the judge's
   name (the embedded judge per node, an endpoint per node) and the method from the run's
   options — together with the cached calls the replay met, so the worker repeats none of them.
   The worker returns the result and every judge call it made; the driver writes the calls into
   the cache and the result into the store as each unit comes back.
3. A worker that dies (its process killed, its node lost) fails the units it held; the driver
   starts a replacement actor and sends those units again, to another worker when there is one —
   nothing is lost and, the driver being the only writer, nothing is written twice. A driver
   killed mid-run leaves a store that ``--resume`` continues as with the local executor.

The token budget is the run's: the driver checks it before each dispatch against the tokens of
every call returned so far, and sends the worker what is left of it, which the worker's client
applies to its own calls (:class:`assay.judge.runner.JudgeClient`, the same cache, retry, timeout and
budget rules as the driver's). A worker that runs out of budget mid-unit returns the calls it made
(they go to the cache) and the driver stops the run as ``incomplete: budget exhausted``.
Progress names each worker with the units it finished. Workers evaluate one
unit at a time each (``max_concurrency`` calls within it); ``workers`` actors in all.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

from assay.core.errors import BudgetExhausted, ConfigError
from assay.core.method import ItemResult, Method
from assay.core.types import Completion, GenerateConfig, Message, Unit
from assay.judge.backends import JudgeBackend, get_backend
from assay.judge.runner import CallStats, JudgeClient, RunnerConfig, cache_key, call_request
from assay.store import Store

MAX_ATTEMPTS = 3
"""Times a unit is sent to a worker before its failure is the run's."""


class CallLog(Store):
    """A worker's in-memory store: the judge-call cache, and the calls put in it since
    :meth:`mark` (the ones the worker made), in order."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.made: list[tuple[str, str, str, str]] = []

    def put_call(self, key: str, backend: str, request: str, completion: Completion) -> None:
        super().put_call(key, backend, request, completion)
        self.made.append((key, backend, request, completion.model_dump_json()))

    def mark(self) -> None:
        self.made = []


class CacheMiss(Exception):  # deliberately not a BackendError: nothing may turn it into Unscored
    """A call the cache does not hold (the replay needs a worker)."""


class CacheOnlyClient(JudgeClient):
    """Answers from the store's cache; records the calls it served; raises CacheMiss otherwise."""

    def __init__(self, backend: JudgeBackend, store: Store, config: RunnerConfig, identity: dict[str, Any]) -> None:
        super().__init__(backend, store, config)
        self._identity = identity
        self.served: list[tuple[str, str, str]] = []

    async def complete(self, messages: Sequence[Message], config: GenerateConfig) -> tuple[str, Completion]:
        request = call_request(self._identity, messages, config)
        key = cache_key(self._identity, messages, config, request)
        cached = self.store.cached_call(key)
        if cached is None:
            raise CacheMiss(key)
        self.served.append((key, request, cached.model_dump_json()))
        return key, cached


def _worker_class() -> Any:
    import ray

    @ray.remote(max_restarts=0)
    class UnitWorker:
        """Evaluates units with its own backend; returns results and the calls it made."""

        def __init__(self, judge: Any, judge_options: dict[str, Any], method: Method, runner: dict[str, Any],
                     identity: dict[str, Any]) -> None:
            self.backend = judge if isinstance(judge, JudgeBackend) else get_backend(judge, **judge_options)
            if self.backend.identity() != identity:
                raise ConfigError(f"worker judge {self.backend.name} is not the driver's: "
                                  f"{self.backend.identity()} vs {identity}")
            self.method = method
            self.store = CallLog()
            self.runner = {**runner, "progress": False}

        def pid(self) -> int:
            return os.getpid()

        async def evaluate(self, unit: dict[str, Any], cached: list[tuple[str, str, str]],
                           budget_left: int | None = None) -> dict[str, Any]:
            for key, request, completion in cached:
                self.store.put_call(key, self.backend.name, request, Completion.model_validate_json(completion))
            self.store.mark()
            runner = RunnerConfig(**{**self.runner, "budget_tokens": budget_left})
            client = JudgeClient(self.backend, self.store, runner)
            started = time.perf_counter()
            result: dict[str, Any] | None = None
            exhausted = None
            try:
                result = (await self.method.evaluate_unit(Unit.model_validate(unit), client)).model_dump()
            except BudgetExhausted as exc:  # the calls made so far still go to the driver's cache
                exhausted = str(exc)
            return {"result": result, "budget_exhausted": exhausted, "calls": list(self.store.made),
                    "pid": os.getpid(),
                    "seconds": time.perf_counter() - started, "stats": {
                        "calls": client.stats.calls, "retries": client.stats.retries,
                        "failures": client.stats.failures, "unreached": client.stats.unreached,
                        "prompt_tokens": client.stats.prompt_tokens,
                        "completion_tokens": client.stats.completion_tokens}}

    return UnitWorker


class RayPool:
    """Worker actors on a Ray cluster, replaced when they die."""

    def __init__(self, *, workers: int, address: str | None, judge: Any, judge_options: dict[str, Any],
                 method: Method, runner: RunnerConfig, identity: dict[str, Any]) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ConfigError("--executor ray needs Ray: pip install 'assay[ray]'") from exc
        self.ray = ray
        self.started_ray = False
        if not ray.is_initialized():
            if address in (None, "local"):
                ray.init(num_cpus=max(2, workers), include_dashboard=False, _node_ip_address="127.0.0.1",
                         log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            self.started_ray = True
        self.args = (judge, judge_options, method, runner.model_dump(), identity)
        self.cls = _worker_class()
        self.actors = [self._start() for _ in range(workers)]
        self.idle: asyncio.Queue[int] = asyncio.Queue()
        for i in range(workers):
            self.idle.put_nowait(i)
        self.done: dict[int, int] = {}
        self.restarts = 0

    def _start(self) -> Any:
        return self.cls.options(num_cpus=0.5).remote(*self.args)

    def pids(self) -> list[int]:
        return [self.ray.get(a.pid.remote()) for a in self.actors]

    async def evaluate(self, unit: Unit, cached: list[tuple[str, str, str]],
                       budget_left: int | None = None) -> dict[str, Any]:
        """Run ``unit`` on an idle worker; a dead worker is replaced and the unit sent again
        (to whichever worker is idle next), at most :data:`MAX_ATTEMPTS` times."""
        from ray import exceptions

        dead = tuple(getattr(exceptions, n) for n in ("RayActorError", "ActorDiedError", "ActorUnavailableError")
                     if hasattr(exceptions, n))

        payload = unit.model_dump(mode="json")
        last: Exception | None = None
        for _ in range(MAX_ATTEMPTS):
            index = await self.idle.get()
            try:
                reply: dict[str, Any] = await self.actors[index].evaluate.remote(payload, cached, budget_left)
            except dead as exc:
                last = exc
                self.restarts += 1
                self.actors[index] = self._start()
                self.idle.put_nowait(index)
                continue
            self.done[index] = self.done.get(index, 0) + 1
            self.idle.put_nowait(index)
            return reply
        raise RuntimeError(f"unit {unit.key} failed on {MAX_ATTEMPTS} workers: {last}")

    def describe(self) -> str:
        return "workers " + " ".join(f"w{i + 1}:{self.done.get(i, 0)}" for i in range(len(self.actors)))

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started_ray:
            self.ray.shutdown()


LIVE: list[RayPool] = []
"""Pools of runs in progress in this process (tests reach the worker processes through it)."""


async def evaluate_on_ray(pool: RayPool, method: Method, unit: Unit, store: Store, backend: JudgeBackend,
                          runner: RunnerConfig, identity: dict[str, Any], stats: CallStats) -> ItemResult:
    """One unit: from the cache on the driver if it can be, else on a worker; the calls a worker
    made are written to the store's cache and counted in ``stats``."""
    probe = CacheOnlyClient(backend, store, runner, identity)
    try:
        result = await method.evaluate_unit(unit, probe)
        stats.cache_hits += len(probe.served)
        return result
    except CacheMiss:
        pass
    if runner.budget_tokens is not None and stats.tokens >= runner.budget_tokens:
        raise BudgetExhausted(f"token budget of {runner.budget_tokens} reached ({stats.tokens} used)")
    left = None if runner.budget_tokens is None else runner.budget_tokens - stats.tokens
    reply = await pool.evaluate(unit, probe.served, left)
    for key, name, request, completion in reply["calls"]:
        store.put_call(key, name, request, Completion.model_validate_json(completion))
    worker = reply["stats"]
    stats.calls += worker["calls"]
    stats.retries += worker["retries"]
    stats.failures += worker["failures"]
    stats.unreached += worker.get("unreached", 0)
    stats.prompt_tokens += worker["prompt_tokens"]
    stats.completion_tokens += worker["completion_tokens"]
    if reply.get("budget_exhausted"):
        raise BudgetExhausted(reply["budget_exhausted"])
    return ItemResult.model_validate(reply["result"])
