"""The run lifecycle: one run specification and run id recipe (:class:`RunSpec`), and one
object that owns a run (:class:`Run`) — its backends, lock, record and status, progress, budget
and timeout, the grader-text guard and the judge checks — used to evaluate a method over items
(:func:`assay.aevaluate`), to compute a stage (:func:`assay.engine.stages.run_stage`) and to give a
free-form workflow its judge clients (:class:`assay.engine.session.JudgeSession`: rubric discovery,
audit and repair, DeCE criteria extraction)."""

from assay.engine.evaluate import ITEM_WINDOW
from assay.engine.run import Run, run_status, unreachable
from assay.engine.spec import RunSpec, run_id

__all__ = ["ITEM_WINDOW", "Run", "RunSpec", "run_id", "run_status", "unreachable"]
