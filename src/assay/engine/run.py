"""The one object that owns a run, whatever its kind (:class:`assay.engine.RunSpec`).

A :class:`Run` is an async context manager. On entry it builds the judge backends it was given
by name (it closes those, and only those, on exit), applies the judge checks of the method it
runs (the method refuses the judge: ``check_judge``; a jury given to a method that cannot use
one), works out the run id (:mod:`assay.engine.spec`), takes the run's write lock in the store
(a second process resuming the same run would repeat every call the first has in flight),
opens the run's record (a workflow's run, a stage) and marks it running. Every judge call goes
through one :class:`assay.judge.runner.JudgeClient` per judge, sharing one set of counters: cache,
retries, timeout, concurrency and the token budget are the runner's (:class:`RunnerConfig`).

On exit it records how the run ended — ``finished``, ``interrupted`` (Ctrl-C, SIGTERM, a
crash), ``incomplete: budget exhausted`` or ``failed: judge unreachable`` — releases the lock,
and raises :class:`JudgeUnreachable` when not one call of this invocation reached the judge.

Its uses:

- :func:`assay.engine.evaluate.evaluate`: a method over items (the local scheduler or Ray
  workers), each unit committed as it finishes;
- :meth:`compute_parts`: a stage's parts, each committed as it finishes;
- :attr:`client` (and :attr:`others`) for a free-form workflow, whose finished steps
  (:meth:`step`) and units (:meth:`put_units`) are committed as they finish, so a workflow
  killed at any moment resumes without doing a finished step again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from assay._version import __version__
from assay.core.errors import BudgetExhausted, ConfigError, JudgeUnreachable
from assay.core.types import CALL_FAILED, Unit
from assay.engine.spec import Kind, RunSpec, digest
from assay.judge.backends import JudgeBackend, get_backend
from assay.judge.runner import JudgeClient, RunnerConfig, canonical_json, gather_in_order
from assay.store import Store

if TYPE_CHECKING:
    from assay.core.method import Method

Part = Callable[[], Awaitable[Any]]


def _flat(manifest: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """A manifest's values by their path (``("config", "verdicts")``)."""
    for key, value in manifest.items():
        if isinstance(value, dict):
            yield from _flat(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def run_status(exc: BaseException | None, stats: Any) -> str:
    """A run's status when its work ends — with ``exc`` or without, after ``stats`` (the client's
    counters; None for a run that makes no call) — the same for every kind of run."""
    if exc is None:
        gave_up = stats is not None and stats.calls == 0 and stats.failures and \
            (not stats.cache_hits or stats.unreached == stats.failures)
        return "failed: judge unreachable" if gave_up else "finished"
    if isinstance(exc, BudgetExhausted):
        return "incomplete: budget exhausted"
    if isinstance(exc, JudgeUnreachable):
        return "failed: judge unreachable"
    return "interrupted"


def unreachable(stats: Any, run_id: str) -> JudgeUnreachable:
    """The error of a run none of whose calls reached the judge, or all of whose calls failed."""
    error = JudgeUnreachable(stats.gave_up_because())
    error.run_id = run_id
    return error


def failed_call(value: Any) -> bool:
    """A stored part or step whose value reports a failed judge call: it is computed again."""
    return isinstance(value, dict) and CALL_FAILED in str((value.get("unscored") or {}).get("reason", ""))


def as_json(value: Any, what: str) -> Any:
    """``value`` as the store reads it back (tuples become lists), refusing NaN and infinities."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except ValueError as exc:
        raise ValueError(f"{what}: not stored, it holds a value that is not a number ({exc})") from None


class Run:
    """See the module docstring. ``judge``: the main judge (a name or a backend; None for a run
    that makes no call); ``others``: more judges by role (an attacker, a verifier), each a name, a
    backend or None (left out); ``method``: the method whose judge checks apply (evaluate)."""

    def __init__(self, kind: Kind, name: str, *, store: Store | str | Path, manifest: dict[str, Any] | None = None,
                 judge: str | JudgeBackend | None = None, judge_options: dict[str, Any] | None = None,
                 others: dict[str, str | JudgeBackend | None] | None = None, runner: RunnerConfig | None = None,
                 items: list[dict[str, Any]] | None = None, method: Method | None = None,
                 wait_s: float | None = None, fresh: bool = False) -> None:
        self.kind: Kind = kind
        self.name = name
        self.manifest = manifest or {}
        self.runner = runner or RunnerConfig(progress=False)
        self.method = method
        self._items = items
        self._judge = judge
        self._options = judge_options or {}
        self._others_spec = {k: v for k, v in (others or {}).items() if v}
        self._store_spec = store
        self._wait_s = wait_s
        self._fresh = fresh
        self.notes: list[str] = []
        """What the user is told about how the run was chosen (a default that changed)."""
        self._owned: list[JudgeBackend] = []
        self._locked = False
        self.spec: RunSpec
        self.store: Store
        self.backend: JudgeBackend | None = None
        self.client: JudgeClient
        self.others: dict[str, JudgeClient] = {}
        self.started = 0.0
        self.stage_digest: str | None = None
        self.resumed_steps: list[str] = []
        self._steps: RunSpec | None = None
        self._progress: Any = None
        self._ticker: asyncio.Task[None] | None = None

    @property
    def run_id(self) -> str:
        return self.spec.run_id

    # --- entry ------------------------------------------------------------------------------
    def _backend(self, spec: str | JudgeBackend) -> JudgeBackend:
        if isinstance(spec, JudgeBackend):
            return spec
        backend = get_backend(spec, **self._options)
        self._owned.append(backend)
        return backend

    def _check_judge(self, backend: JudgeBackend) -> None:
        """The method's refusal of the judge, and the jury refusal, before anything is written."""
        method = self.method
        if method is None or not method.needs_judge:
            return
        refusal = method.check_judge(backend.capabilities, backend.name)
        if refusal:
            raise ConfigError(refusal)
        if getattr(backend, "members", None) is not None and not method.supports_jury:
            raise ConfigError(f"{method.name} cannot use a jury of judges ({backend.name}); LeMAJ can")

    def _spec(self, identities: dict[str, dict[str, Any]]) -> RunSpec:
        if self.kind == "evaluate":
            assert self.method is not None
            return RunSpec("evaluate", self.method.name, self.method.manifest(), identities, self._items,
                           self.method.version)
        if self.kind == "stage":
            return RunSpec("stage", self.name, self.manifest)
        return RunSpec("workflow", self.name, self.manifest, identities)

    def _earlier_default(self, identities: dict[str, dict[str, Any]]) -> None:
        """A method run at a default that changed (:meth:`Method.earlier_defaults`): when the store
        holds the same work run at an earlier default and not at this one, that run is continued
        (old stores keep resuming their runs; ``fresh`` starts the new default's run instead);
        either way one note says what changed."""
        assert self.method is not None
        earlier = self.method.earlier_defaults()
        if not earlier:
            return
        if not self._fresh and self.store.get_run(self.run_id) is None:
            for before, what in earlier:
                spec = RunSpec("evaluate", before.name, before.manifest(), identities, self._items, before.version)
                if self.store.get_run(spec.run_id) is not None:
                    self.method, self.spec = before, spec
                    self.notes.append(f"{before.name}: continuing run {spec.run_id}, which this store holds from an "
                                      f"earlier default ({what}); --fresh scores the same items with today's "
                                      "default in a new run (the earlier run is kept)")
                    return
        # only someone who ran it at the earlier default: a run of this method whose manifest holds what that
        # default set (its verdicts, say), not any run of the method (a store of today's runs only is told nothing)
        mine = dict(_flat(self.method.manifest()))
        for before, what in earlier:
            theirs = dict(_flat(before.manifest()))
            changed = [key for key, value in theirs.items() if mine.get(key) != value]
            for r in self.store.list_runs():
                if r.method == self.method.name and changed and \
                        all(dict(_flat(r.manifest.get("method_manifest") or {})).get(key) == theirs[key]
                            for key in changed):
                    self.notes.append(f"{self.method.name}: today's default replaces {what}; set it explicitly "
                                      "to keep the earlier reading")
                    return

    async def __aenter__(self) -> Run:
        try:
            if self._judge is not None:
                self.backend = self._backend(self._judge)
                if self.kind == "evaluate" and self.method is not None and self.method.needs_judge:
                    # options whose default depends on the judge, settled before the run id
                    self.method = self.method.for_judge(self.backend.capabilities)
                self._check_judge(self.backend)
            others = {role: self._backend(spec) for role, spec in self._others_spec.items()}
            identities = {**({"judge": self.backend.identity()} if self.backend is not None else {}),
                          **{role: b.identity() for role, b in others.items()}}
            self.spec = self._spec(identities)
            self.store = self._store_spec if isinstance(self._store_spec, Store) else Store(self._store_spec)
            if self.kind == "evaluate":
                self._earlier_default(identities)
            self.store.acquire_run(self.spec.lock, wait_s=self._wait_s)
            self._locked = True
        except BaseException:
            await self._close()
            raise
        try:
            self._open(others)
        except BaseException as exc:
            await self._end(exc)
            raise
        if self.backend is not None:
            self.client = JudgeClient(self.backend, self.store, self.runner)
            self.others = {role: self.client_for(b) for role, b in others.items()}
        self.started = time.perf_counter()
        if self.kind == "workflow" and self.runner.progress:
            self._start_progress()
        return self

    def _open(self, others: dict[str, JudgeBackend]) -> None:
        """The run's record: a workflow's run (created once), a stage; an evaluate run creates its
        own (:func:`assay.engine.evaluate.open_record`), after its fresh and version rules."""
        if self.kind == "stage":
            self.store.begin_stage(self.run_id, self.name, self.manifest)
            return
        if self.kind != "workflow":
            return
        assert self.backend is not None
        if self.store.get_run(self.run_id) is None:
            self.store.create_run(self.run_id, self.name, {
                "assay_version": __version__, "method": self.name, "session": True, "metrics": [],
                "method_manifest": self.manifest, "judge": self.backend.name,
                "judge_identity": self.backend.identity(), "others": {n: b.name for n, b in others.items()},
                "runner": self.runner.model_dump(exclude={"progress"}), "created_at": time.time()}, [])
        self.store.set_status(self.run_id, "running")

    def client_for(self, backend: JudgeBackend) -> JudgeClient:
        """A client for another judge of the run (an attacker, a verifier): same store and runner
        policy, and the run's counters (one budget for the whole run)."""
        client = JudgeClient(backend, self.store, self.runner)
        client.stats = self.client.stats
        return client

    # --- progress of a workflow ----------------------------------------------------------------
    def _start_progress(self) -> None:
        """A workflow does not know how many calls its work will make, so its progress line counts
        the judge calls made and found in the cache (``--progress``, on by default)."""
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), TimeElapsedColumn(),
                                  transient=False)
        task = self._progress.add_task(self._describe())
        self._progress.start()

        async def tick() -> None:
            while True:
                self._progress.update(task, description=self._describe())
                await asyncio.sleep(0.5)

        self._ticker = asyncio.get_running_loop().create_task(tick())

    def _describe(self) -> str:
        stats = self.client.stats
        return (f"{self.name} · {self.client.backend.name} · {stats.calls} judge call(s), "
                f"{stats.cache_hits} from the cache")

    async def _stop_progress(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        if self._progress is not None:
            self._progress.update(self._progress.task_ids[0], description=self._describe())
            self._progress.stop()
            self._progress = None

    # --- uses ---------------------------------------------------------------------------------
    async def compute_parts(self, parts: dict[str, Part], *, window: int = 4) -> tuple[dict[str, Any], int, int]:
        """A stage's parts not yet stored, computed with at most ``window`` at once and each
        committed as it finishes; returns every part's value by key (in key order), the parts
        already stored and the parts computed now. A part whose value reports a failed judge
        call is computed again."""
        done = {key for key, value in self.store.stage_parts(self.run_id).items() if not failed_call(value)}
        todo = [key for key in sorted(parts) if key not in done]

        def finished(position: int, value: Any) -> None:
            self.store.put_stage_part(self.run_id, todo[position], value)

        await gather_in_order([parts[k] for k in todo], window, on_done=finished)
        values = self.store.stage_parts(self.run_id)
        ordered = {k: values[k] for k in sorted(values)}
        self.stage_digest = hashlib.sha256(canonical_json(ordered).encode()).hexdigest()
        return ordered, len(done), len(todo)

    async def step(self, key: str, compute: Part) -> Any:
        """One step of a workflow (an audit axis, ...): its JSON value, computed and committed
        now, or read back with no judge call when an earlier invocation of the same run finished
        it. The value is returned as the store holds it (tuples become lists)."""
        if self._steps is None:
            self._steps = self.spec.steps()
            self.store.begin_stage(self._steps.run_id, self._steps.name, self._steps.manifest)
        stored = self.store.stage_parts(self._steps.run_id)
        if key in stored and not failed_call(stored[key]):
            self.resumed_steps.append(key)
            return stored[key]
        value = as_json(await compute(), f"{self.name} step {key}")
        self.store.put_stage_part(self._steps.run_id, key, value)
        return value

    def put_units(self, results: list[tuple[Unit, Any]]) -> None:
        """Store what a workflow produced as units of its run with their results (a unit already
        in the run keeps its place; its result is replaced), so export, report and the review UI
        read them like any run's. Call it as units finish: what is stored survives a kill."""
        known = {u.key for u in self.store.units(self.run_id)}
        fresh = [unit for unit, _ in results if unit.key not in known]
        if fresh:
            self.store.add_units(self.run_id, fresh)
        where = {u.key: idx for idx, u in enumerate(self.store.units(self.run_id))}
        for unit, result in results:
            self.store.put_result(self.run_id, where[unit.key], unit.key, result)

    # --- exit ---------------------------------------------------------------------------------
    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        status = await self._end(exc)
        if exc is None and status == "failed: judge unreachable":
            raise unreachable(self.client.stats, self.run_id)

    async def _end(self, exc: BaseException | None) -> str:
        await self._stop_progress()
        stats = self.client.stats if hasattr(self, "client") else None
        status = run_status(exc, stats)
        try:
            if isinstance(exc, BudgetExhausted | JudgeUnreachable):
                exc.run_id = self.run_id
            if self.kind == "stage":
                self.store.end_stage(self.run_id, "finished" if status == "finished" else "interrupted",
                                     self.stage_digest if status == "finished" else None)
            else:
                self.store.set_status(self.run_id, status)
            if self._steps is not None:
                steps = self.store.stage_parts(self._steps.run_id)
                self.store.end_stage(self._steps.run_id, "finished" if status == "finished" else "interrupted",
                                     digest(steps) if status == "finished" else None)
        finally:
            if self._locked:
                self.store.release_run(self.spec.lock)
                self._locked = False
            await self._close()
        return status

    async def _close(self) -> None:
        for backend in self._owned:
            await backend.aclose()
        self._owned = []

    @property
    def wall_s(self) -> float:
        return time.perf_counter() - self.started
