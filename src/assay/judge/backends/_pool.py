"""One judge behind several endpoints: ``openai/MODEL@URL1,URL2,...``.

The pool spreads calls over its endpoints — each call goes to the endpoint with the fewest calls
in flight, each endpoint capped at its own concurrency — and routes around one that fails: a
429, 5xx, timeout or refused connection puts that endpoint aside for a back-off (its
Retry-After, else 1 s doubling per consecutive failure up to 60 s) and the call is tried on the
next endpoint at once; only when every endpoint has failed it does the error reach the runner,
whose retries and back-off apply as for one endpoint. A non-transient error (HTTP 400) is not
retried elsewhere: the request itself is wrong.

Cache identity: the same model behind every URL answers the same calls, so the pool's identity
names the model and the options, not the URLs — adding or removing an endpoint keeps every
cached call. (A judge at a single URL keeps its URL in its identity: another server may serve a
different model under the same name.)
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from assay.core.errors import ConfigError, RateLimited, TransientBackendError
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends._base import JudgeBackend


@dataclass
class EndpointState:
    backend: JudgeBackend
    limit: int
    inflight: int = 0
    calls: int = 0
    failures: int = 0
    consecutive: int = 0
    resting_until: float = 0.0


class PoolBackend(JudgeBackend):
    """Several endpoints serving one model."""

    def __init__(self, members: list[JudgeBackend], *, name: str, identity: dict[str, Any]) -> None:
        if len(members) < 2:
            raise ConfigError(f"a pool needs at least two endpoints, got {len(members)}")
        self.endpoints = [EndpointState(m, max(1, m.max_concurrency)) for m in members]
        self.name = name
        self._identity = identity
        self.capabilities = members[0].capabilities
        self.max_concurrency = sum(e.limit for e in self.endpoints)
        self._changed = asyncio.Condition()
        self.call_timeout_s: float | None = None

    def apply_call_timeout(self, seconds: float) -> float:
        """The runner's per-call timeout applies to each endpoint: one that does not answer in
        time is set aside like a refused connection and the call goes to the next. Returns the
        bound of one attempt over every endpoint."""
        self.call_timeout_s = seconds
        return seconds * len(self.endpoints) + 1.0

    def identity(self) -> dict[str, Any]:
        return self._identity

    def stats(self) -> list[dict[str, Any]]:
        """Per endpoint: calls answered, failures, whether it is resting now."""
        now = time.monotonic()
        return [{"endpoint": e.backend.name, "calls": e.calls, "failures": e.failures,
                 "resting": e.resting_until > now} for e in self.endpoints]

    def _choose(self, tried: set[int]) -> int | None:
        """The endpoint for the next attempt, or None to wait: the least loaded awake endpoint
        with room; while an awake endpoint is busy, wait for it rather than wake a resting one;
        when every untried endpoint rests, the one that rests least."""
        now = time.monotonic()
        untried = [i for i in range(len(self.endpoints)) if i not in tried]
        awake = [i for i in untried if self.endpoints[i].resting_until <= now]
        room = [i for i in (awake or untried) if self.endpoints[i].inflight < self.endpoints[i].limit]
        if not room:
            return None
        return min(room, key=lambda i: (self.endpoints[i].resting_until if not awake else 0.0,
                                        self.endpoints[i].inflight / self.endpoints[i].limit, i))

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        tried: set[int] = set()
        last: Exception | None = None
        while len(tried) < len(self.endpoints):
            async with self._changed:
                while (index := self._choose(tried)) is None:  # every untried endpoint is at its limit
                    await self._changed.wait()
                endpoint = self.endpoints[index]
                endpoint.inflight += 1
            try:
                if self.call_timeout_s is not None:
                    try:
                        completion = await asyncio.wait_for(endpoint.backend.generate(messages, config),
                                                            timeout=self.call_timeout_s)
                    except TimeoutError:
                        raise TransientBackendError(f"{endpoint.backend.name}: no answer within "
                                                    f"{self.call_timeout_s:g}s") from None
                else:
                    completion = await endpoint.backend.generate(messages, config)
            except TransientBackendError as exc:  # RateLimited included
                last = exc
                endpoint.failures += 1
                endpoint.consecutive += 1
                wait = getattr(exc, "retry_after", None) or min(60.0, 2.0 ** (endpoint.consecutive - 1))
                endpoint.resting_until = time.monotonic() + wait
                tried.add(index)
                continue
            finally:
                async with self._changed:
                    endpoint.inflight -= 1
                    self._changed.notify_all()
            endpoint.calls += 1
            endpoint.consecutive = 0
            endpoint.resting_until = 0.0
            return completion
        assert last is not None
        if isinstance(last, RateLimited):
            raise RateLimited(f"every endpoint of {self.name} failed; last: {last}", retry_after=last.retry_after)
        raise TransientBackendError(f"every endpoint of {self.name} failed; last: {last}")

    async def aclose(self) -> None:
        for e in self.endpoints:
            await e.backend.aclose()
