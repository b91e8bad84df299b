"""A method over items, the ``evaluate`` use of a :class:`assay.engine.Run`: the input checks,
the grader-text guard, the run's record and manifest (fresh, the version note), and the
scheduler that evaluates the method's units and commits each as it finishes — locally, or on
Ray workers (:mod:`assay.engine._ray`) as an executor choice."""

from __future__ import annotations

import math
import platform
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from assay._version import __version__
from assay.core.errors import ConfigError, InputError
from assay.core.method import CallEstimate, ItemResult, Method
from assay.core.records import UnitResult
from assay.core.registry import build_method
from assay.core.types import Completion, GenerateConfig, Item, Message, Unit, Unscored
from assay.engine.grader_text import grader_directed, redact
from assay.engine.results import EvalResult
from assay.engine.run import Run
from assay.engine.spec import RunSpec
from assay.judge.backends import JudgeBackend
from assay.judge.runner import CallStats, RunnerConfig, gather_in_order
from assay.store import Store

ITEM_WINDOW = 4
"""Units in flight per call the judge takes at once (see :func:`evaluate`)."""


class NoJudge(JudgeBackend):
    """The judge of methods that make no judge call; calling it is a bug."""

    name = "none"

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        raise ConfigError("this method makes no judge calls")


def evaluate_spec(method_name: str, manifest: dict[str, Any], judge_identity: dict[str, Any],
                  items: list[dict[str, Any]], version: str = "1") -> RunSpec:
    return RunSpec("evaluate", method_name, manifest, {"judge": judge_identity}, items, version)


def lineage_of(method_name: str, manifest: dict[str, Any], judge_identity: dict[str, Any],
               items: list[dict[str, Any]]) -> str:
    """What a run evaluates, whatever the method's version: method, options, prompts, judge and
    items. Two runs of one lineage and different versions are the same work done by different
    code; the same command continues neither with the other."""
    return evaluate_spec(method_name, manifest, judge_identity, items).lineage


def run_id_for(method: Method, judge_identity: dict[str, Any], items: list[Item]) -> str:
    """Same method version, options, prompts, judge and items give the same run id: that is
    what lets the same command find its run again (:class:`assay.engine.RunSpec`)."""
    return evaluate_spec(method.name, method.manifest(), judge_identity,
                         [item.model_dump(mode="json") for item in items], method.version).run_id


def check_version(store: Store, method: Method, judge_identity: dict[str, Any], items: list[Item]) -> str | None:
    """What to tell the user when another version of the method already did this work: a run of
    the same lineage (method, options, prompts, judge, items) but another version is in the store.
    That run is not continued (its scores were made differently); this version starts its own
    run, with another id, and the note says so. None when there is no such run."""
    mine = lineage_of(method.name, method.manifest(), judge_identity, [i.model_dump(mode="json") for i in items])
    for run in store.list_runs():
        if run.method != method.name:
            continue
        manifest = run.manifest
        version = str(manifest.get("method_version", "1"))
        if version == method.version:
            continue
        lineage = manifest.get("lineage") or lineage_of(method.name, manifest.get("method_manifest", {}),
                                                        manifest.get("judge_identity", {}),
                                                        store.items(run.run_id))
        if lineage == mine:
            return (f"{store.path}: run {run.run_id} of these items was made by {method.name} version {version}; "
                    f"this is version {method.version}, which scores differently, so a new run starts (the old one "
                    "is kept; cached judge calls are reused)")
    return None


def as_result(row: UnitResult | None) -> ItemResult | None:
    """A stored result as the :class:`ItemResult` a method's scheduling reads (``next_units``)."""
    if row is None:
        return None
    return ItemResult(scores=row.scores, unscored=[Unscored.model_validate(u) for u in row.unscored],
                      details=row.details, call_keys=row.call_keys)


def guarded(item: Item) -> Item:
    """The item with the passages of its answer that address the grader removed
    (:func:`assay.engine.grader_text.redact`); what was removed goes to ``metadata.grader_directed_removed``.
    An item without such text is returned as it is (same run identity as without the guard)."""
    text, removed = redact(item.response)
    if not removed:
        return item
    return item.model_copy(update={"response": text,
                                   "metadata": {**item.metadata, "grader_directed_removed": removed}})


def check_items(method: Method, items: list[Item], source: str | None = None, *, together: bool = True) -> None:
    """Reject the input before anything is written when an item cannot be evaluated. Items read
    from a file are named by file and line, others by position. ``together``: also the checks of
    the items as a whole (:meth:`Method.check_all`); off for one file of several."""
    if not items:
        raise InputError("no items to evaluate", source=source)
    seen: dict[str, int] = {}
    problems = []
    for position, item in enumerate(items, 1):
        if item.key in seen:
            problems.append(f"item {position} (id {item.id!r}, system {item.system!r}): same id and "
                            f"system as item {seen[item.key]}")
        seen.setdefault(item.key, position)
        reason = method.check_item(item)
        if reason:
            if source is not None and item._line is not None:
                field = re.search(r"\(field '([^']+)'\)", reason)
                text = reason.replace(field.group(0), "").strip() if field else reason
                problems.append(str(InputError(f"item {item.id!r}: {text}", source=source, line=item._line,
                                               field=field.group(1) if field else None)))
            else:
                problems.append(f"item {position} (id {item.id!r}): {reason}")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(problems[0] + more)
    problem = method.check_all(items) if together else None
    if problem:
        raise InputError(problem, source=source)


def prepare(items: list[Item], method: Method, *, guard: str, data_source: str | None) -> list[Item]:
    """The items the judge will see: under the ``redact`` guard, without the passages that address
    the grader (:func:`guarded`); checked (:func:`check_items`) before anything is written."""
    if guard not in ("redact", "flag"):
        raise ConfigError(f"guard must be redact or flag, not {guard!r}")
    if guard == "redact":
        items = [guarded(i) for i in items]
    check_items(method, items, data_source)
    return items


def out_of_range(metrics: Sequence[str], exc: BaseException) -> ItemResult:
    """Every metric of a unit Unscored: a number derived from the judge's answer was out of range."""
    reason = " ".join(f"a number derived from the judge's answer is out of range ({exc})".split())[:300]
    return ItemResult(scores={m: None for m in metrics}, unscored=[Unscored(reason=reason, metric=m) for m in metrics])


def finite_scores(result: ItemResult) -> ItemResult:
    """A result whose NaN or infinite scores are made Unscored with the reason (never stored)."""
    bad = [m for m, v in result.scores.items() if v is not None and not math.isfinite(v)]
    if not bad:
        return result
    return result.model_copy(update={
        "scores": {m: (None if m in bad else v) for m, v in result.scores.items()},
        "unscored": [*result.unscored, *(Unscored(reason=f"the score derived from the judge's answer is "
                                                  f"{result.scores[m]!r}, not a number", metric=m) for m in bad)]})


def grader_flags(unit: Unit) -> list[dict[str, Any]]:
    """Text of the unit's answers aimed at the grader (flagged for review; under the guard, also
    not shown to the judge), each with its answer's label when the unit has several."""
    return [{**flag, **({"answer": label} if len(unit.items) > 1 else {})}
            for label, member in zip("abcdefghijklmnopqrstuvwxyz", unit.items, strict=False)
            for flag in [*grader_directed(member.response),
                         *({"pattern": ", ".join(r["patterns"]), "text": r["text"][:160], "removed": True}
                           for r in member.metadata.get("grader_directed_removed", []))]]


def open_record(run: Run, items: list[Item], *, fresh: bool, data_source: str | None, version_check: bool,
                input_notes: list[str] | None) -> tuple[list[str], bool, int | None]:
    """The evaluate run's record: dropped first under ``fresh``; created with its manifest when
    new (with the note about another version's run of the same work). Returns the notes, whether
    the run was already finished, and the units done before (None for a new run)."""
    method, store, run_id = run.method, run.store, run.run_id
    assert method is not None and run.backend is not None
    identity = run.backend.identity()
    existing = store.get_run(run_id)
    notes: list[str] = list(run.notes)  # how the run was chosen (a default that changed)
    if existing is not None and fresh:
        store.drop_run(run_id)
        notes.append(f"dropped the earlier results of run {run_id} (fresh); scoring it again")
        existing = None
    if existing is None and version_check:
        note = check_version(store, method, identity, items)
        if note:
            notes.append(note)
    was_finished = existing is not None and existing.status == "finished" and \
        not (set(range(len(store.units(run_id)))) - store.done_indices(run_id, retry_failed_calls=True))
    if existing is None:
        manifest = {
            "assay_version": __version__, "method": method.name, "method_version": method.version,
            "lineage": run.spec.lineage, "metrics": list(method.metrics),
            "method_manifest": method.manifest(), "judge": run.backend.name, "judge_identity": identity,
            "runner": run.runner.model_dump(exclude={"progress"}), "items": len(items),
            "data_source": data_source, "python": platform.python_version(), "created_at": time.time(),
        }
        if input_notes:  # how the file was read: the peers' field names, ids filled in
            manifest["input_notes"] = list(input_notes)
        store.create_run(run_id, method.name, manifest, [])
    done = len(store.done_indices(run_id, retry_failed_calls=True)) if existing is not None else None
    return notes, was_finished, done


async def evaluate(run: Run, items: list[Item], *, fresh: bool = False, data_source: str | None = None,
                   ray: dict[str, Any] | None = None, version_check: bool = True,
                   on_result: Callable[[Unit, ItemResult], None] | None = None,
                   input_notes: list[str] | None = None, units_in_flight: int | None = None) -> Outcome:
    """Evaluate the run's method over ``items`` (already :func:`prepare`d), committing each unit's
    result as it finishes. ``ray``: evaluate the units on Ray workers (``workers``, ``address``,
    ``judge``, ``judge_options``); ``units_in_flight``: units evaluated at once (local executor)."""
    method, store, run_id, backend = run.method, run.store, run.run_id, run.backend
    assert method is not None and backend is not None
    notes, was_finished, resumed_with = open_record(run, items, fresh=fresh, data_source=data_source,
                                                    version_check=version_check, input_notes=input_notes)
    client = run.client
    started = time.perf_counter()
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), disable=not run.runner.progress, transient=False)
    known = len(store.units(run_id))  # a re-run or a resumed run knows its units: never "2/?"
    task = progress.add_task(f"{method.name} · {backend.name}", total=known or None,
                             completed=len(store.done_indices(run_id, retry_failed_calls=True)))
    pool = None
    if ray is not None:
        from assay.engine import _ray

        pool = _ray.RayPool(workers=ray["workers"], address=ray["address"], judge=ray["judge"],
                            judge_options=ray["judge_options"], method=method, runner=run.runner,
                            identity=backend.identity())
        _ray.LIVE.append(pool)

    async def rounds() -> None:
        """Evaluate the pending units; when none is left, ask the method's scheduler for the next
        batch; stop when it proposes none. A resumed run re-derives each proposal from the stored
        results, so it continues exactly where it stopped. A unit is evaluated at most once per
        invocation: one whose judge call failed (after its retries) keeps its typed failure and is
        tried again only by the next invocation, never in a loop here."""
        attempted: set[int] = set()
        while True:
            units = store.units(run_id)
            done = store.done_indices(run_id, retry_failed_calls=True) | attempted
            pending = sorted((i for i in range(len(units)) if i not in done),
                             key=lambda i: (method.order_key(units[i].item), i))
            if not pending:
                stored = {r.idx: r for r in store.results(run_id)}
                history = [(unit, as_result(stored.get(i))) for i, unit in enumerate(units)]
                batch = method.next_units(items, history)
                if not batch:
                    return
                store.add_units(run_id, batch)
                continue
            progress.update(task, total=len(units))

            def job(index: int, units: list[Unit] = units) -> Any:
                async def one() -> ItemResult:
                    try:
                        if pool is not None:
                            from assay.engine._ray import evaluate_on_ray
                            result = await evaluate_on_ray(pool, method, units[index], store, backend,
                                                           run.runner, backend.identity(), client.stats)
                        else:
                            result = await method.evaluate_unit(units[index], client)
                    except (ValueError, ArithmeticError) as exc:
                        # a number derived from the judge's answer left its range (a probability
                        # outside [0, 1], ...): this unit is Unscored with the reason, the run goes on
                        return out_of_range(method.metrics, exc)
                    return finite_scores(result)
                return one

            def finished(position: int, result: ItemResult, pending: list[int] = pending,
                         units: list[Unit] = units) -> None:
                index = pending[position]
                flags = grader_flags(units[index])
                if flags:  # text aimed at the grader: flagged for review (and, under the guard, not shown to the judge)
                    result.details["grader_directed_text"] = flags
                store.put_result(run_id, index, units[index].key, result)
                progress.advance(task)
                if on_result is not None:
                    on_result(units[index], result)
                if pool is not None:
                    progress.update(task, description=f"{method.name} · {backend.name} · {pool.describe()}")

            # More units in flight than calls: the client's semaphore queues their calls in FIFO
            # order, so a method's calls run breadth-first (every unit's first step, then every
            # unit's second step, ...). Consecutive calls then share their prompt's instructions
            # (and, for items of one question, the reference), which llama.cpp reuses as a cached
            # prefix. At most ITEM_WINDOW x concurrency units are in flight.
            window = 2 * len(pool.actors) if pool is not None else units_in_flight or \
                (method.units_in_flight(client.concurrency) or ITEM_WINDOW * client.concurrency)
            attempted.update(pending)
            await gather_in_order([job(i) for i in pending], window, on_done=finished)

    try:
        with progress:
            await rounds()
    finally:
        if pool is not None:
            from assay.engine import _ray

            _ray.LIVE.remove(pool)
            pool.close()
    return Outcome(store, run_id, client.stats, resumed_with, was_finished, notes, time.perf_counter() - started)


@dataclass
class Outcome:
    """What one invocation of an evaluate run did; :meth:`result` reads the run back once the
    :class:`Run` has recorded how it ended."""

    store: Store
    run_id: str
    stats: CallStats
    resumed_with: int | None
    was_finished: bool
    notes: list[str]
    wall_s: float

    def result(self) -> EvalResult:
        result = EvalResult(self.store, self.run_id)
        result.client_stats = self.stats
        result.resumed_with = self.resumed_with
        result.was_finished = self.was_finished
        result.notes = self.notes
        result.wall_s = self.wall_s
        return result


def checked_call_arguments(judge: Any, runner: Any, store: Any) -> RunnerConfig | None:
    """The judge (None: only for a method that asks none), runner and store of a call from code,
    checked before anything runs: one
    :class:`ConfigError` naming the argument (a number as the judge failed deep in the judge
    registry, a dict as the runner in the call runner, and an int as the store made a file named
    after it). A runner given as a dict of its fields is read as a :class:`RunnerConfig`."""
    from pydantic import ValidationError

    if judge is not None and not isinstance(judge, str | JudgeBackend):
        raise ConfigError(f"judge must be a judge's name such as 'llamacpp/default' or 'openai/gpt-4o-mini', or a "
                          f"JudgeBackend object, not {type(judge).__name__}")
    if store is not None and not isinstance(store, str | Path | Store):
        raise ConfigError(f"store must be a path (str or pathlib.Path) or an assay Store, not {type(store).__name__}")
    if runner is None or isinstance(runner, RunnerConfig):
        return runner
    if not isinstance(runner, dict):
        raise ConfigError("runner must be an assay.RunnerConfig (or a dict of its fields), not "
                          f"{type(runner).__name__}")
    try:
        return RunnerConfig.model_validate(runner)
    except ValidationError as exc:
        fields = ", ".join(RunnerConfig.model_fields)
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'runner'}: "
                             + (f"no such field (its fields: {fields})" if e["type"] == "extra_forbidden" else e["msg"])
                             for e in exc.errors())
        raise ConfigError(f"runner: {problems}") from None


async def aevaluate(items: Iterable[Item | dict[str, Any]], method: str | Method,
                    judge: str | JudgeBackend = "llamacpp/default", *, store: Store | str | Path | None = None,
                    runner: RunnerConfig | None = None, resume: bool = True, fresh: bool = False,
                    judge_options: dict[str, Any] | None = None, data_source: str | None = None,
                    wait_s: float | None = None, executor: str = "local", workers: int = 2,
                    ray_address: str | None = None, guard: str = "redact", version_check: bool = True,
                    on_result: Callable[[Unit, ItemResult], None] | None = None,
                    input_notes: list[str] | None = None, units_in_flight: int | None = None,
                    **method_options: Any) -> EvalResult:
    """Evaluate items with a method and a judge: the engine under :func:`assay.evaluate`, the
    command line, meta-evaluation, the injection audit and the tournament. The method is always
    named by the caller: the engine has no default method (the public API keeps a documented
    default, see :mod:`assay.exchange.api`). Options: ``store`` (a path or Store; default in memory),
    ``runner`` (:class:`RunnerConfig`), ``fresh``, ``judge_options``, ``guard`` ("redact", the
    default: passages of an answer that address the grader are removed before the judge sees
    them, :func:`guarded`; "flag": only flagged), and the method's own options (e.g. DeCE's
    ``domain``, ``beta``, ``seed``, ``criteria``). The same work (method, options, prompts,
    judge, items) is the same run: if the store holds it, it is continued (a finished run is
    read back with no judge call); ``fresh=True`` drops its results first and scores it again.
    ``resume`` is accepted for old callers and changes nothing. ``version_check=False``
    (meta-evaluations, audits) leaves out the note about another version's run of the same
    work; the two runs have different ids and never mix. ``units_in_flight``: how many units are
    evaluated at once (default: the method's own, else ``ITEM_WINDOW`` x the judge's concurrency)."""
    del resume  # the same work always continues its run; kept so old callers' resume=True still works
    if executor not in ("local", "ray"):
        raise ConfigError(f"executor must be local or ray, not {executor!r}")
    if guard not in ("redact", "flag"):
        raise ConfigError(f"guard must be redact or flag, not {guard!r}")
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    if units_in_flight is not None and units_in_flight < 1:
        raise ConfigError(f"units_in_flight must be at least 1, got {units_in_flight}")
    runner = checked_call_arguments(judge, runner, store)
    item_list = [i if isinstance(i, Item) else Item.model_validate(i) for i in items]
    method_obj = method if isinstance(method, Method) else build_method(method, **method_options)
    item_list = prepare(item_list, method_obj, guard=guard, data_source=data_source)
    if not method_obj.needs_judge:
        judge = NoJudge()
    elif judge is None:
        raise ConfigError(f"{method_obj.name} asks a judge: give one, such as 'llamacpp/default' or "
                          "'openai/gpt-4o-mini'")
    ray = {"workers": workers, "address": ray_address, "judge": judge, "judge_options": judge_options or {}} \
        if executor == "ray" else None
    run = Run("evaluate", method_obj.name, store=store if store is not None else ":memory:", judge=judge,
              judge_options=judge_options, runner=runner or RunnerConfig(), method=method_obj,
              items=[item.model_dump(mode="json") for item in item_list], wait_s=wait_s, fresh=fresh)
    async with run:
        outcome = await evaluate(run, item_list, fresh=fresh, data_source=data_source, ray=ray,
                                 version_check=version_check, on_result=on_result, input_notes=input_notes,
                                 units_in_flight=units_in_flight)
    return outcome.result()


def estimate(items: Iterable[Item | dict[str, Any]], method: str | Method, *, data_source: str | None = None,
             **method_options: Any) -> CallEstimate:
    """Dry run: estimated judge calls and tokens, without calling any judge. ``data_source``: the
    file the items were read from, so that an item that cannot be evaluated is named by file and
    line, as the run names it."""
    item_list = [i if isinstance(i, Item) else Item.model_validate(i) for i in items]
    method_obj = method if isinstance(method, Method) else build_method(method, **method_options)
    check_items(method_obj, item_list, data_source)
    return method_obj.estimate(item_list)
