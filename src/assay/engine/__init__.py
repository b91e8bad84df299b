"""The run lifecycle: one run specification and run id recipe (:class:`RunSpec`), and one
object that owns a run (:class:`Run`) — its backends, lock, record and status, progress, budget
and timeout, the grader-text guard and the judge checks — used to evaluate a method over items
(:func:`assay.aevaluate`), to compute a stage (:func:`assay.engine.stages.run_stage`) and to give a
free-form workflow its judge clients (:class:`assay.engine.session.JudgeSession`: rubric discovery,
audit and repair, DeCE criteria extraction). :func:`aevaluate` runs a method over items (the
engine under :func:`assay.evaluate`, the command line, meta-evaluation, the injection audit and
the tournament) and returns the one result type, :class:`EvalResult`."""

from assay.engine.evaluate import (
    ITEM_WINDOW,
    NoJudge,
    aevaluate,
    as_result,
    check_items,
    estimate,
    guarded,
    run_id_for,
)
from assay.engine.results import EvalResult
from assay.engine.run import Run, run_status, unreachable
from assay.engine.spec import RunSpec, run_id

__all__ = ["ITEM_WINDOW", "EvalResult", "NoJudge", "Run", "RunSpec", "aevaluate", "as_result", "check_items",
           "estimate", "guarded", "run_id", "run_id_for", "run_status", "unreachable"]
