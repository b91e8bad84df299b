"""Running a method over items: :func:`aevaluate`, the engine under :func:`assay.evaluate`, the
command line, meta-evaluation, the injection audit and the tournament; a thin use of
:class:`assay.engine.Run` (:mod:`assay.engine.evaluate` holds the scheduler)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from assay.core.errors import ConfigError
from assay.core.method import CallEstimate, ItemResult, Method
from assay.core.registry import build_method
from assay.core.types import Item, Unit
from assay.engine import Run
from assay.engine.evaluate import (
    ITEM_WINDOW,
    NoJudge,
    as_result,
    check_items,
    check_version,
    evaluate,
    finite_scores,
    guarded,
    lineage_of,
    out_of_range,
    prepare,
    run_id_for,
)
from assay.engine.results import EvalResult
from assay.judge.backends import JudgeBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store

__all__ = ["ITEM_WINDOW", "EvalResult", "NoJudge", "aevaluate", "as_result", "check_items", "check_version",
           "estimate", "finite_scores", "guarded", "lineage_of", "out_of_range", "run_id_for"]

_as_result = as_result  # its old, private name


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
    default, see :mod:`assay.engine.api`). Options: ``store`` (a path or Store; default in memory),
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
    item_list = [i if isinstance(i, Item) else Item.model_validate(i) for i in items]
    method_obj = method if isinstance(method, Method) else build_method(method, **method_options)
    item_list = prepare(item_list, method_obj, guard=guard, data_source=data_source)
    if not method_obj.needs_judge:
        judge = NoJudge()
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


def estimate(items: Iterable[Item | dict[str, Any]], method: str | Method, **method_options: Any) -> CallEstimate:
    """Dry run: estimated judge calls and tokens, without calling any judge."""
    item_list = [i if isinstance(i, Item) else Item.model_validate(i) for i in items]
    method_obj = method if isinstance(method, Method) else build_method(method, **method_options)
    check_items(method_obj, item_list)
    return method_obj.estimate(item_list)
