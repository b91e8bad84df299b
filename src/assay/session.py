"""A judge session: the one way in for judge calls that are not a method run over items (rubric
discovery, the audit axes, repair, DeCE criteria extraction).

It owns the backend(s), the store and a run record, and applies the same runner policy as
``assay eval``: every call goes through :class:`assay.runner.JudgeClient` (cache, retries,
timeout, budget, concurrency), the run is locked against a second writer, and its status tells
what happened — ``finished``, ``interrupted`` (Ctrl-C, SIGTERM, a crash), ``incomplete: budget
exhausted`` or ``failed: judge unreachable``. Running the same work again re-uses every cached
call, so a session killed with ``kill -9`` and started again makes no call twice::

    async with JudgeSession("rubric-audit", "llamacpp/default", store="a.db", manifest={...}) as session:
        result = await auditor.structure(rubric, session.client)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from assay._version import __version__
from assay.backends import JudgeBackend, get_backend
from assay.errors import BudgetExhausted, JudgeUnreachable
from assay.runner import JudgeClient, RunnerConfig, canonical_json
from assay.store import Store
from assay.types import Unit


def run_status(exc: BaseException | None, stats: Any) -> str:
    """A run's status when its judge work ends — with ``exc`` or without, after ``stats`` (the
    client's counters) — the same for a method's run and a judge session."""
    if exc is None:
        return "failed: judge unreachable" if stats.calls == 0 and stats.failures else "finished"
    if isinstance(exc, BudgetExhausted):
        return "incomplete: budget exhausted"
    if isinstance(exc, JudgeUnreachable):
        return "failed: judge unreachable"
    return "interrupted"


def unreachable(stats: Any, run_id: str) -> JudgeUnreachable:
    """The error of a run none of whose calls reached the judge."""
    error = JudgeUnreachable(f"all {stats.failures} judge call(s) failed; last error: {stats.last_error}")
    error.run_id = run_id
    return error


class JudgeSession:
    """See the module docstring. ``manifest`` says what the session does (its inputs and
    options); with the judges' identities it makes the run id, so the same work finds its run."""

    def __init__(self, kind: str, judge: str | JudgeBackend, *, store: Store | str | Path,
                 runner: RunnerConfig | None = None, judge_options: dict[str, Any] | None = None,
                 manifest: dict[str, Any] | None = None, others: dict[str, str | None] | None = None,
                 wait_s: float | None = None) -> None:
        self.kind = kind
        self.runner = runner or RunnerConfig(progress=False)
        self.manifest = manifest or {}
        self._judge = judge
        self._options = judge_options or {}
        self._others_spec = {k: v for k, v in (others or {}).items() if v}
        self._store_spec = store
        self._wait_s = wait_s
        self._owned: list[JudgeBackend] = []
        self.store: Store
        self.client: JudgeClient
        self.others: dict[str, JudgeClient] = {}
        self.run_id = ""
        self.started = 0.0
        self._progress: Any = None
        self._ticker: asyncio.Task[None] | None = None

    def _backend(self, spec: str | JudgeBackend) -> JudgeBackend:
        if isinstance(spec, JudgeBackend):
            return spec
        backend = get_backend(spec, **self._options)
        self._owned.append(backend)
        return backend

    async def __aenter__(self) -> JudgeSession:
        try:
            backend = self._backend(self._judge)
            others = {name: self._backend(spec) for name, spec in self._others_spec.items()}
            identities = {"judge": backend.identity(), **{n: b.identity() for n, b in others.items()}}
            payload = {"kind": self.kind, "manifest": self.manifest, "judges": identities}
            self.run_id = hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]
            self.store = self._store_spec if isinstance(self._store_spec, Store) else Store(self._store_spec)
            self.store.acquire_run(self.run_id, wait_s=self._wait_s)
        except BaseException:
            await self._close()
            raise
        if self.store.get_run(self.run_id) is None:
            self.store.create_run(self.run_id, self.kind, {
                "assay_version": __version__, "method": self.kind, "session": True, "metrics": [],
                "method_manifest": self.manifest, "judge": backend.name, "judge_identity": identities["judge"],
                "others": {n: b.name for n, b in others.items()},
                "runner": self.runner.model_dump(exclude={"progress"}), "created_at": time.time()}, [])
        self.store.set_status(self.run_id, "running")
        self.client = JudgeClient(backend, self.store, self.runner)
        self.others = {name: self.client_for(b) for name, b in others.items()}
        self.started = time.perf_counter()
        if self.runner.progress:
            self._start_progress(backend.name)
        return self

    def _start_progress(self, judge: str) -> None:
        """A session does not know how many calls its work will make, so its progress line counts
        the judge calls made and found in the cache (``--progress``, on by default)."""
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), TimeElapsedColumn(),
                                  transient=False)
        task = self._progress.add_task(self._describe(judge))
        self._progress.start()

        async def tick() -> None:
            while True:
                self._progress.update(task, description=self._describe(judge))
                await asyncio.sleep(0.5)

        self._ticker = asyncio.get_running_loop().create_task(tick())

    def _describe(self, judge: str) -> str:
        stats = self.client.stats
        return f"{self.kind} · {judge} · {stats.calls} judge call(s), {stats.cache_hits} from the cache"

    async def _stop_progress(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        if self._progress is not None:
            self._progress.update(self._progress.task_ids[0], description=self._describe(self.client.backend.name))
            self._progress.stop()
            self._progress = None

    def client_for(self, backend: JudgeBackend) -> JudgeClient:
        """A client for another judge of the session (an attacker, a verifier): same store and
        runner policy, and the session's counters (one budget for the whole session)."""
        client = JudgeClient(backend, self.store, self.runner)
        client.stats = self.client.stats
        return client

    def put_units(self, results: list[tuple[Unit, Any]]) -> None:
        """Store what the session produced as units of its run with their results (a unit
        already in the run keeps its place; its result is replaced), so export, report and the
        review UI read them like any run's."""
        known = {u.key for u in self.store.units(self.run_id)}
        fresh = [unit for unit, _ in results if unit.key not in known]
        if fresh:
            self.store.add_units(self.run_id, fresh)
        where = {u.key: idx for idx, u in enumerate(self.store.units(self.run_id))}
        for unit, result in results:
            self.store.put_result(self.run_id, where[unit.key], unit.key, result)

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._stop_progress()
        try:
            status = run_status(exc, self.client.stats)
            if isinstance(exc, BudgetExhausted | JudgeUnreachable):
                exc.run_id = self.run_id
            self.store.set_status(self.run_id, status)
            self.store.release_run(self.run_id)
        finally:
            await self._close()
        if exc is None and status == "failed: judge unreachable":
            raise unreachable(self.client.stats, self.run_id)

    async def _close(self) -> None:
        for backend in self._owned:
            await backend.aclose()
        self._owned = []

    @property
    def wall_s(self) -> float:
        return time.perf_counter() - self.started
