"""PReMISE ("Policy Rubrics for Multi-dimensional Scoring Evaluation"): rubrics discovered from
preference pairs (:mod:`.discover`, Algorithm 1), audited on four axes (:mod:`.audit`: structure,
reliability, fit, adversarial; the computations in :mod:`.metrics`) and repaired
(:mod:`.repair`, :mod:`.refine`). The workflow itself is a library (:mod:`.workflow`); its
commands, ``assay rubric …`` (:mod:`.cli`), are a thin layer over it.

The audit is a judge session (:class:`assay.engine.session.JudgeSession`); as each axis finishes, it is
committed, and each audited criterion becomes (or is updated as) a unit of that run with its
numbers as scores and its votes as details (:func:`.units.audit_units`), so ``assay export``,
``assay report`` and ``assay ui`` show an audit like any run, and a reviewer can override the
judge's verdict on each design property of a criterion. The rubric work is a workflow
(:class:`RubricAudit`, registered with :func:`assay.core.registry.register_workflow`), not a
method: nothing runs it over items, so ``assay eval``, ``meta`` and ``injection`` do not offer it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from assay.core.method import ReportSection, method_template
from assay.core.protocols import HasCommands, Presents
from assay.core.registry import add, register_workflow
from assay.core.views import ReportView
from assay.methods.premise.units import AUDIT_SCORES


@register_workflow
class RubricAudit(Presents, HasCommands):
    """The rubric workflow, ``assay rubric …`` (discover, audit, refine, repair), and how the runs
    of ``assay rubric audit`` are shown: one unit per criterion of the audited rubric.

    A workflow, not a method: nothing runs it over items. The audit command makes the run (a judge
    session stored under ``rubric-audit``); this class gives the commands and tells the store's
    readers (export, report, UI) how to show the run and what a reviewer may change."""

    name: ClassVar[str] = "rubric-audit"
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {"rubric": {"--out": "--output"}}
    # the rubric's size (the tournament's --k, the Elo factor, is --elo-k)
    flag_aliases: ClassVar[dict[str, dict[str, str]]] = {"rubric": {"--k": "--size"}}
    metrics: ClassVar[tuple[str, ...]] = AUDIT_SCORES
    primary_metric: ClassVar[str | None] = "structure"
    metric_ranges: ClassVar[dict[str, tuple[float, float]]] = {
        "structure": (0.0, 5.0), "alpha": (-1.0, 1.0), "rho": (-1.0, 1.0), "attack_mean_score": (0.0, 10.0),
        "reference_mean_score": (0.0, 10.0)}
    compact_columns: ClassVar[tuple[str, ...]] = ("structure", "alpha", "flip_rate", "rho", "applicability", "vfr")

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        from assay.methods.premise import cli

        app.add_typer(cli.app, name="rubric", rich_help_panel=kit.panels["rubrics"])

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        return ReportSection(item=method_template("item.html.j2", __name__))

    @classmethod
    def review_panel(cls) -> str | None:
        return method_template("review.html.j2", __name__)

    @classmethod
    def explain(cls, scores: dict[str, Any], details: dict[str, Any]) -> list[str]:
        failed = [name for name, flag in (details.get("flags") or {}).items() if flag is False]
        return [f"fails the design property {name}" for name in failed]


def render_report(audits: list[Any], refines: list[Any], rubrics: list[Any]) -> str:
    """The PReMISE report of audit, refinement and rubric files (its template ships here)."""
    from assay.methods.premise.report import render_rubric_report  # charts and Jinja load only now

    return render_rubric_report(audits, refines, rubrics)


add("view", "report:rubric", ReportView(render=render_report, title="PReMISE rubric report"))
