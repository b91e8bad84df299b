"""Running a method over items: the run's identity, its manifest, resume, and the result object."""

from __future__ import annotations

import hashlib
import math
import platform
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from assay._version import __version__
from assay.backends import JudgeBackend, get_backend
from assay.errors import BudgetExhausted, ConfigError, InputError, JudgeUnreachable
from assay.grader_text import grader_directed, redact
from assay.methods._base import CallEstimate, ItemResult, Method
from assay.records import ResultRecord
from assay.registry import build_method
from assay.results import EvalResult
from assay.runner import JudgeClient, RunnerConfig, canonical_json, gather_in_order
from assay.session import run_status, unreachable
from assay.store import Store
from assay.types import Completion, GenerateConfig, Item, Message, Unit, Unscored


class NoJudge(JudgeBackend):
    """The judge of methods that make no judge call; calling it is a bug."""

    name = "none"

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        raise ConfigError("this method makes no judge calls")


def _lineage_payload(method_name: str, manifest: dict[str, Any], judge_identity: dict[str, Any],
                     items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"method": method_name, "manifest": manifest, "judge": judge_identity, "items": items}


def lineage_of(method_name: str, manifest: dict[str, Any], judge_identity: dict[str, Any],
               items: list[dict[str, Any]]) -> str:
    """What a run evaluates, whatever the method's version: method, options, prompts, judge and
    items. Two runs of one lineage and different versions are the same work done by different
    code; the same command continues neither with the other."""
    payload = _lineage_payload(method_name, manifest, judge_identity, items)
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


def run_id_for(method: Method, judge_identity: dict[str, Any], items: list[Item]) -> str:
    """Same method version, options, prompts, judge and items give the same run id: that is
    what lets the same command find its run again. Version "1" is left out of the hash, so runs stored
    before methods had versions keep their ids."""
    payload: dict[str, Any] = _lineage_payload(method.name, method.manifest(), judge_identity,
                                               [item.model_dump(mode="json") for item in items])
    if method.version != "1":
        payload["method_version"] = method.version
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


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


def earlier_run(method: Method, run_id: str, store: Store, identity: dict[str, Any], items: list[Item],
                fresh: bool) -> tuple[Method, str, str | None]:
    """A method run at a default that changed (:meth:`Method.earlier_defaults`): when the store
    holds the same work run at an earlier default and not at this one, that run is continued
    (old stores keep resuming their runs; ``fresh`` starts the new default's run instead); either
    way one note says what changed. Otherwise the method and run id unchanged, no note."""
    earlier = method.earlier_defaults()
    if not earlier:
        return method, run_id, None
    if not fresh and store.get_run(run_id) is None:
        for before, what in earlier:
            before_id = run_id_for(before, identity, items)
            if store.get_run(before_id) is not None:
                return before, before_id, (f"{method.name}: continuing run {before_id}, which this store holds from "
                                           f"an earlier default ({what}); --fresh scores the same items with "
                                           "today's default in a new run (the earlier run is kept)")
    return method, run_id, (f"{method.name}: today's default replaces {earlier[0][1]}; set it explicitly to keep "
                            "the earlier reading")


def as_result(row: ResultRecord | None) -> ItemResult | None:
    """A stored result as the :class:`ItemResult` a method's scheduling reads (``next_units``)."""
    if row is None:
        return None
    return ItemResult(scores=row.scores, unscored=[Unscored.model_validate(u) for u in row.unscored],
                      details=row.details, call_keys=row.call_keys)


_as_result = as_result  # its old, private name


def guarded(item: Item) -> Item:
    """The item with the passages of its answer that address the grader removed
    (:func:`assay.grader_text.redact`); what was removed goes to ``metadata.grader_directed_removed``.
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


ITEM_WINDOW = 4


async def aevaluate(items: Iterable[Item | dict[str, Any]], method: str | Method,
                    judge: str | JudgeBackend = "llamacpp/default", *, store: Store | str | Path | None = None,
                    runner: RunnerConfig | None = None, resume: bool = True, fresh: bool = False,
                    judge_options: dict[str, Any] | None = None, data_source: str | None = None,
                    wait_s: float | None = None, executor: str = "local", workers: int = 2,
                    ray_address: str | None = None, guard: str = "redact", version_check: bool = True,
                    on_result: Callable[[Unit, ItemResult], None] | None = None,
                    input_notes: list[str] | None = None, **method_options: Any) -> EvalResult:
    """Evaluate items with a method and a judge: the engine under :func:`assay.evaluate`, the
    command line, meta-evaluation, the injection audit and the tournament. The method is always
    named by the caller: the engine has no default method (the public API keeps a documented
    default, see :mod:`assay.api`). Options: ``store`` (a path or Store; default in memory),
    ``runner`` (:class:`RunnerConfig`), ``fresh``, ``judge_options``, ``guard`` ("redact", the
    default: passages of an answer that address the grader are removed before the judge sees
    them, :func:`guarded`; "flag": only flagged), and the method's own options (e.g. DeCE's
    ``domain``, ``beta``, ``seed``, ``criteria``). The same work (method, options, prompts,
    judge, items) is the same run: if the store holds it, it is continued (a finished run is
    read back with no judge call); ``fresh=True`` drops its results first and scores it again.
    ``resume`` is accepted for old callers and changes nothing. ``version_check=False``
    (meta-evaluations, audits) leaves out the note about another version's run of the same
    work; the two runs have different ids and never mix."""
    del resume  # the same work always continues its run; kept so old callers' resume=True still works
    if executor not in ("local", "ray"):
        raise ConfigError(f"executor must be local or ray, not {executor!r}")
    if guard not in ("redact", "flag"):
        raise ConfigError(f"guard must be redact or flag, not {guard!r}")
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    item_list = [i if isinstance(i, Item) else Item.model_validate(i) for i in items]
    if guard == "redact":
        item_list = [guarded(i) for i in item_list]
    method_obj = method if isinstance(method, Method) else build_method(method, **method_options)
    check_items(method_obj, item_list, data_source)
    if not method_obj.needs_judge:
        judge = NoJudge()
    backend = judge if isinstance(judge, JudgeBackend) else get_backend(judge, **(judge_options or {}))
    if method_obj.needs_judge:  # options whose default depends on the judge, settled before the run id
        method_obj = method_obj.for_judge(backend.capabilities)
    refusal = method_obj.check_judge(backend.capabilities, backend.name) if method_obj.needs_judge else None
    if refusal:
        if not isinstance(judge, JudgeBackend):
            await backend.aclose()
        raise ConfigError(refusal)
    if getattr(backend, "members", None) is not None and not method_obj.supports_jury:
        if not isinstance(judge, JudgeBackend):
            await backend.aclose()
        raise ConfigError(f"{method_obj.name} cannot use a jury of judges ({backend.name}); LeMAJ can")
    try:
        store_obj = store if isinstance(store, Store) else Store(store or ":memory:")
        runner_cfg = runner or RunnerConfig()
        identity = backend.identity()
        run_id = run_id_for(method_obj, identity, item_list)
        method_obj, run_id, default_note = earlier_run(method_obj, run_id, store_obj, identity, item_list, fresh)
        # One writer per run: a second process resuming the same run would repeat every call
        # the first has in flight. The lock is taken before the run is looked up, so two
        # processes starting the same new run at once cannot both create it.
        store_obj.acquire_run(run_id, wait_s=wait_s)
    except BaseException:
        if not isinstance(judge, JudgeBackend):
            await backend.aclose()
        raise
    try:
        ray = {"workers": workers, "address": ray_address, "judge_options": judge_options or {}} \
            if executor == "ray" else None
        result = await _run_locked(item_list, method_obj, backend, judge, store_obj, runner_cfg, run_id, identity,
                                   fresh=fresh, data_source=data_source, ray=ray, version_check=version_check,
                                   on_result=on_result, input_notes=input_notes)
        if default_note:
            result.notes.append(default_note)
        return result
    finally:
        store_obj.release_run(run_id)


async def _run_locked(item_list: list[Item], method_obj: Method, backend: JudgeBackend, judge: str | JudgeBackend,
                      store_obj: Store, runner_cfg: RunnerConfig, run_id: str, identity: dict[str, Any], *,
                      fresh: bool, data_source: str | None, ray: dict[str, Any] | None = None,
                      version_check: bool = True, on_result: Callable[[Unit, ItemResult], None] | None = None,
                      input_notes: list[str] | None = None) -> EvalResult:
    existing = store_obj.get_run(run_id)
    notes: list[str] = []
    if existing is not None and fresh:
        store_obj.drop_run(run_id)
        notes.append(f"dropped the earlier results of run {run_id} (fresh); scoring it again")
        existing = None
    if existing is None and version_check:
        note = check_version(store_obj, method_obj, identity, item_list)
        if note:
            notes.append(note)
    was_finished = existing is not None and existing.status == "finished" and \
        not (set(range(len(store_obj.units(run_id)))) - store_obj.done_indices(run_id, retry_failed_calls=True))
    if existing is None:
        manifest = {
            "assay_version": __version__, "method": method_obj.name, "method_version": method_obj.version,
            "lineage": lineage_of(method_obj.name, method_obj.manifest(), identity,
                                  [item.model_dump(mode="json") for item in item_list]),
            "metrics": list(method_obj.metrics),
            "method_manifest": method_obj.manifest(), "judge": backend.name, "judge_identity": identity,
            "runner": runner_cfg.model_dump(exclude={"progress"}), "items": len(item_list),
            "data_source": data_source, "python": platform.python_version(), "created_at": time.time(),
        }
        if input_notes:  # how the file was read: the peers' field names, ids filled in
            manifest["input_notes"] = list(input_notes)
        store_obj.create_run(run_id, method_obj.name, manifest, [])
    client = JudgeClient(backend, store_obj, runner_cfg)
    done_before = store_obj.done_indices(run_id, retry_failed_calls=True)
    resumed_with = len(done_before) if existing is not None else None
    started = time.perf_counter()
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), disable=not runner_cfg.progress, transient=False)
    task = progress.add_task(f"{method_obj.name} · {backend.name}", total=None, completed=len(done_before))
    pool = None
    if ray is not None:
        from assay import _ray

        pool = _ray.RayPool(workers=ray["workers"], address=ray["address"], judge=judge,
                            judge_options=ray["judge_options"], method=method_obj, runner=runner_cfg,
                            identity=identity)
        _ray.LIVE.append(pool)

    async def evaluate_rounds() -> None:
        """Evaluate the pending units; when none is left, ask the method's scheduler for the next
        batch; stop when it proposes none. A resumed run re-derives each proposal from the stored
        results, so it continues exactly where it stopped. A unit is evaluated at most once per
        invocation: one whose judge call failed (after its retries) keeps its typed failure and is
        tried again only by the next invocation, never in a loop here."""
        attempted: set[int] = set()
        while True:
            units = store_obj.units(run_id)
            done = store_obj.done_indices(run_id, retry_failed_calls=True) | attempted
            pending = sorted((i for i in range(len(units)) if i not in done),
                             key=lambda i: (method_obj.order_key(units[i].item), i))
            if not pending:
                stored = {r.idx: r for r in store_obj.results(run_id)}
                history = [(unit, as_result(stored.get(i))) for i, unit in enumerate(units)]
                batch = method_obj.next_units(item_list, history)
                if not batch:
                    return
                store_obj.add_units(run_id, batch)
                continue
            progress.update(task, total=len(units))

            def job(index: int, units: list[Unit] = units) -> Any:
                async def run() -> ItemResult:
                    try:
                        if pool is not None:
                            from assay._ray import evaluate_on_ray
                            result = await evaluate_on_ray(pool, method_obj, units[index], store_obj, backend,
                                                           runner_cfg, identity, client.stats)
                        else:
                            result = await method_obj.evaluate_unit(units[index], client)
                    except (ValueError, ArithmeticError) as exc:
                        # a number derived from the judge's answer left its range (a probability
                        # outside [0, 1], ...): this unit is Unscored with the reason, the run goes on
                        return out_of_range(method_obj.metrics, exc)
                    return finite_scores(result)
                return run

            def finished(position: int, result: ItemResult, pending: list[int] = pending,
                         units: list[Unit] = units) -> None:
                index = pending[position]
                flags = [{**flag, **({"answer": label} if len(units[index].items) > 1 else {})}
                         for label, member in zip("abcdefghijklmnopqrstuvwxyz", units[index].items, strict=False)
                         for flag in [*grader_directed(member.response),
                                      *({"pattern": ", ".join(r["patterns"]), "text": r["text"][:160],
                                         "removed": True} for r in member.metadata.get("grader_directed_removed", []))]]
                if flags:  # text aimed at the grader: flagged for review (and, under the guard, not shown to the judge)
                    result.details["grader_directed_text"] = flags
                store_obj.put_result(run_id, index, units[index].key, result)
                progress.advance(task)
                if on_result is not None:
                    on_result(units[index], result)
                if pool is not None:
                    progress.update(task, description=f"{method_obj.name} · {backend.name} · {pool.describe()}")

            # More units in flight than calls: the client's semaphore queues their calls in FIFO
            # order, so a method's calls run breadth-first (every unit's first step, then every
            # unit's second step, ...). Consecutive calls then share their prompt's instructions
            # (and, for items of one question, the reference), which llama.cpp reuses as a cached
            # prefix (SPEC §2.2). At most ITEM_WINDOW x concurrency units are in flight.
            window = 2 * len(pool.actors) if pool is not None else \
                (method_obj.units_in_flight(client.concurrency) or ITEM_WINDOW * client.concurrency)
            attempted.update(pending)
            await gather_in_order([job(i) for i in pending], window, on_done=finished)

    store_obj.set_status(run_id, "running")
    try:
        with progress:
            await evaluate_rounds()
    except BaseException as exc:
        store_obj.set_status(run_id, run_status(exc, client.stats))
        if isinstance(exc, BudgetExhausted | JudgeUnreachable):
            exc.run_id = run_id
        raise
    finally:
        if pool is not None:
            from assay import _ray

            _ray.LIVE.remove(pool)
            pool.close()
        if not isinstance(judge, JudgeBackend):
            await backend.aclose()
    status = run_status(None, client.stats)
    store_obj.set_status(run_id, status)
    if status != "finished":
        # Not one call of this invocation reached the judge: report it as such instead of a
        # finished run of Unscored items. Running it again evaluates the failed items again.
        raise unreachable(client.stats, run_id)
    result = EvalResult(store_obj, run_id)
    result.client_stats = client.stats
    result.resumed_with = resumed_with
    result.was_finished = was_finished
    result.notes = notes
    result.wall_s = time.perf_counter() - started
    return result


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


def estimate(items: Iterable[Item | dict[str, Any]], method: str | Method, **method_options: Any) -> CallEstimate:
    """Dry run: estimated judge calls and tokens, without calling any judge."""
    item_list = [i if isinstance(i, Item) else Item.model_validate(i) for i in items]
    method_obj = method if isinstance(method, Method) else build_method(method, **method_options)
    check_items(method_obj, item_list)
    return method_obj.estimate(item_list)
