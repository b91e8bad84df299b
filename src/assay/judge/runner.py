"""The async engine: every judge call goes through :class:`JudgeClient` — cache,
in-flight de-duplication, per-backend concurrency, timeout, retries with exponential backoff
and jitter that honour Retry-After, token budget — and :func:`gather_in_order` runs jobs with
a concurrency limit, returning results in input order. The run that owns a client — a method
over items committing each finished unit, a stage, a workflow — is :class:`assay.engine.Run`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from assay.core.errors import (
    AssayError,
    BackendError,
    BudgetExhausted,
    ConfigError,
    JudgeUnreachable,
    RateLimited,
    TransientBackendError,
)
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import JudgeBackend
from assay.judge.backends._answer import check_completion
from assay.store import Store

CACHE_KEY_VERSION = "c1"
UNREACHABLE_AFTER = 3
"""After this many failed calls (each after all its retries) with no successful one, the judge
is taken as unreachable and the run stops instead of marking every item Unscored."""
T = TypeVar("T")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_request(identity: dict[str, Any], messages: Sequence[Message], config: GenerateConfig) -> str:
    """Canonical JSON of everything that determines a judge call's output."""
    dumped = config.model_dump()
    if dumped.get("labels") is None:  # absent before label calls existed: every earlier key holds
        dumped.pop("labels", None)
    return canonical_json({"judge": identity, "messages": [{"role": m.role, "content": m.content}
                                                            for m in messages],
                           "config": dumped})


def cache_key(identity: dict[str, Any], messages: Sequence[Message], config: GenerateConfig,
              request: str | None = None) -> str:
    """Content address of a judge call: versioned sha256 over canonical JSON."""
    request = request if request is not None else call_request(identity, messages, config)
    return f"{CACHE_KEY_VERSION}:{hashlib.sha256(request.encode('utf-8')).hexdigest()}"


class RunnerConfig(BaseModel):
    """How judge calls are made. Every field has a CLI flag and an ``ASSAY_*`` variable. Values
    out of range are refused (a negative timeout would time out every call)."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int | None = Field(default=None, ge=1, le=4096)
    """Calls in flight at once; default: the backend's own limit (1 for llama.cpp)."""
    max_retries: int = Field(default=4, ge=0, le=100)
    """Retries of a transient failure (timeout, 429, 5xx) before the call fails."""
    timeout_s: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    """Per-call timeout in seconds."""
    backoff_initial_s: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    backoff_max_s: float = Field(default=60.0, ge=0, allow_inf_nan=False)
    budget_tokens: int | None = Field(default=None, ge=0)
    """Stop making new judge calls once this many tokens (prompt + completion) are spent."""
    progress: bool = True


@dataclass
class CallStats:
    """Counters of one client's life."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    backend_latency_s: float = 0.0
    retry_reasons: list[str] = field(default_factory=list)
    last_error: str | None = None
    """Why the last failed call failed (after its retries)."""
    unreached: int = 0
    """Of ``failures``, the calls that did not reach the judge: timed out, or failed with a transient
    error (connection, overload) after their retries. The others reached it and failed there (an
    answer out of range, a prompt longer than its context window, a model it does not have)."""

    def gave_up(self) -> bool:
        """No call of this invocation succeeded and enough failed to stop: the judge is unreachable,
        or, before any answer came from it or from the store, every call failed. Calls answered from
        the store count as answered where the failures reached the judge, so that the same command
        run again ends as the first run did (unscored answers, not a stop)."""
        if self.calls or self.failures < UNREACHABLE_AFTER:
            return False
        return not self.cache_hits or self.unreached == self.failures

    def gave_up_because(self) -> str:
        """The stop's line: unreachable where no failed call reached the judge, else every call failed."""
        what = "the judge is unreachable" if self.unreached == self.failures else "every judge call failed"
        return f"{what}: {self.failures} judge call(s) failed and none succeeded; last error: {self.last_error}"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class JudgeClient:
    """Makes judge calls through the cache and the retry/concurrency/budget machinery."""

    def __init__(self, backend: JudgeBackend, store: Store, config: RunnerConfig | None = None,
                 *, rng: random.Random | None = None) -> None:
        self.backend = backend
        self.store = store
        self.config = config or RunnerConfig()
        limit = self.config.concurrency or backend.max_concurrency
        self.concurrency = max(1, limit)
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._inflight: dict[str, asyncio.Future[Completion]] = {}
        self._reserved = 0
        """Tokens the calls in flight are expected to use, held against ``--budget``."""
        self._budget_turn: asyncio.Condition | None = None
        self._budget_loop: asyncio.AbstractEventLoop | None = None
        self._identity = backend.identity()
        self._rng = rng or random.Random(0)
        self.stats = CallStats()

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    def member(self, index: int) -> JudgeClient:
        """A client for member ``index`` of a jury backend: the same store (cache), runner
        settings and counters, the member's own identity and concurrency."""
        members = getattr(self.backend, "members", None)
        if members is None:
            raise ConfigError(f"{self.backend.name} is not a jury")
        client = JudgeClient(members[index], self.store, self.config, rng=self._rng)
        client.stats = self.stats
        return client

    def key_for(self, messages: Sequence[Message], config: GenerateConfig) -> str:
        return cache_key(self._identity, messages, config)

    async def complete(self, messages: Sequence[Message], config: GenerateConfig) -> tuple[str, Completion]:
        """One judge call; returns its cache key and completion. Raises BackendError when all
        retries fail, BudgetExhausted when the budget is spent."""
        request = call_request(self._identity, messages, config)
        key = cache_key(self._identity, messages, config, request)
        cached = self.store.cached_call(key)
        if cached is not None:
            self.stats.cache_hits += 1
            return key, cached
        if self.stats.gave_up():
            raise JudgeUnreachable(self.stats.gave_up_because())
        pending = self._inflight.get(key)
        if pending is not None:  # the same call is already on its way: share it
            return key, await asyncio.shield(pending)
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            completion = await self._call_with_retries(list(messages), config)
            self.store.put_call(key, self.backend.name, request, completion)
            future.set_result(completion)
            return key, completion
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: sharers re-raise it themselves
            raise
        finally:
            del self._inflight[key]

    def _backoff(self, exc: BaseException | None, failed_attempts: int) -> float:
        """Seconds to wait after ``failed_attempts`` failures: the server's Retry-After when it
        sent one (capped), else exponential backoff with full jitter."""
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            return min(max(0.0, exc.retry_after), self.config.backoff_max_s)
        ceiling = min(self.config.backoff_max_s, self.config.backoff_initial_s * 2 ** (failed_attempts - 1))
        return self._rng.uniform(0, ceiling)

    def _wait(self, state: RetryCallState) -> float:
        # tenacity counts attempts of the retry loop, which starts after the fast-path failure
        exc = state.outcome.exception() if state.outcome else None
        return self._backoff(exc, state.attempt_number + 1)

    def _record_retry(self, exc: BaseException | None) -> None:
        self.stats.retries += 1
        self.stats.retry_reasons.append(f"{type(exc).__name__}: {exc}")

    def _before_sleep(self, state: RetryCallState) -> None:
        self._record_retry(state.outcome.exception() if state.outcome else None)

    async def _attempt(self, messages: list[Message], config: GenerateConfig) -> Completion:
        async with self._semaphore:
            # A backend that spreads a call over endpoints applies the timeout to each endpoint
            # itself (a hanging endpoint is set aside like a refused one); the runner's own
            # timeout then bounds the whole attempt over every endpoint.
            per_endpoint = getattr(self.backend, "apply_call_timeout", None)
            timeout = self.config.timeout_s
            if per_endpoint is not None:
                timeout = per_endpoint(self.config.timeout_s)
            try:
                completion = await asyncio.wait_for(self.backend.generate(messages, config), timeout=timeout)
                return check_completion(completion, self.backend.name, config.labels)
            except (AssayError, TimeoutError, asyncio.CancelledError):
                raise
            except Exception as exc:  # a backend's bug or a body it cannot read: this call failed, typed
                raise BackendError(f"{self.backend.name}: {type(exc).__name__}: {exc}") from exc

    async def _reserve(self, messages: list[Message]) -> int:
        """Hold a call's expected tokens against the budget before it starts. Calls in flight all passed
        the budget check before any of them counted its tokens (at concurrency 8, a budget of 2,000 let
        9,262 through): a call whose expected tokens, with those of the calls in flight, would pass the
        budget waits for them, then starts only if the budget is not spent. One call may still end a
        little past it (its size is known only once it is made)."""
        budget = self.config.budget_tokens
        if budget is None:
            return 0
        # prompt: ~4 characters a token; written: what calls wrote so far on average (64 before any)
        written = self.stats.completion_tokens // self.stats.calls if self.stats.calls else 64
        expected = sum(len(m.content) for m in messages) // 4 + written
        loop = asyncio.get_running_loop()
        if self._budget_turn is None or self._budget_loop is not loop:  # a client may serve several asyncio.run
            self._budget_turn, self._budget_loop, self._reserved = asyncio.Condition(), loop, 0
        async with self._budget_turn:
            while True:
                if self.stats.tokens >= budget:
                    raise BudgetExhausted(f"token budget of {budget} spent ({self.stats.tokens} used)")
                if not self._reserved or self.stats.tokens + self._reserved + expected <= budget:
                    self._reserved += expected
                    return expected
                await self._budget_turn.wait()

    async def _release(self, expected: int) -> None:
        if self._budget_turn is None or not expected:
            return
        async with self._budget_turn:
            self._reserved -= expected
            self._budget_turn.notify_all()

    async def _call_with_retries(self, messages: list[Message], config: GenerateConfig) -> Completion:
        expected = await self._reserve(messages)
        try:
            return await self._call_within_budget(messages, config)
        finally:
            await self._release(expected)

    async def _call_within_budget(self, messages: list[Message], config: GenerateConfig) -> Completion:
        attempts = self.config.max_retries + 1
        try:
            try:  # fast path: most calls succeed first time; tenacity only once something failed
                completion = await self._attempt(messages, config)
            except (TimeoutError, TransientBackendError) as first:
                if attempts == 1:
                    raise
                self._record_retry(first)
                await asyncio.sleep(self._backoff(first, 1))
                retrying = AsyncRetrying(
                    retry=retry_if_exception_type((TransientBackendError, asyncio.TimeoutError)),
                    stop=stop_after_attempt(attempts - 1), wait=self._wait,
                    before_sleep=self._before_sleep, reraise=True)
                async for attempt in retrying:
                    with attempt:
                        completion = await self._attempt(messages, config)
        except TimeoutError as exc:
            self.stats.failures += 1
            self.stats.unreached += 1
            self.stats.last_error = f"timed out after {self.config.timeout_s}s, {attempts} attempt(s)"
            raise TransientBackendError(f"timed out after {self.config.timeout_s}s, {attempts} attempt(s)") from exc
        except Exception as exc:
            self.stats.failures += 1
            self.stats.unreached += isinstance(exc, TransientBackendError)
            self.stats.last_error = str(exc)
            raise
        self.stats.calls += 1
        self.stats.prompt_tokens += completion.usage.prompt_tokens
        self.stats.completion_tokens += completion.usage.completion_tokens
        self.stats.backend_latency_s += completion.latency_s
        return completion


async def gather_in_order(jobs: Sequence[Callable[[], Awaitable[T]]], limit: int,
                          on_done: Callable[[int, T], None] | None = None) -> list[T]:
    """Run ``jobs`` with at most ``limit`` at once; results in input order.

    The first exception cancels the jobs still running and is re-raised.
    """
    semaphore = asyncio.Semaphore(max(1, limit))
    results: list[Any] = [None] * len(jobs)

    async def run(index: int) -> None:
        async with semaphore:
            value = await jobs[index]()
        results[index] = value
        if on_done is not None:
            on_done(index, value)

    tasks = [asyncio.ensure_future(run(i)) for i in range(len(jobs))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return results

