"""Typed reports of the corpus-level commands: meta-evaluation (:func:`assay.analysis.meta.ameta`), the
injection audit (:func:`assay.analysis.injection.ainjection_audit`) and PReMISE's rubric audit
(``assay rubric audit``).

Each is a pydantic model whose JSON (``to_dict``, what ``meta.json``/``injection.json`` hold) has
exactly the keys the untyped dicts had, in the same order; a key a dict left out (e.g. a
correlation row's ``agreement`` on a pointwise set) stays out, because only the fields given are
written. Readers written for the dicts keep working: a report reads like a mapping
(``report["rows"]``, ``report.get("system_ranking")``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.core.types import ReadsLikeADict

__all__ = ["InjectionReport", "InjectionRow", "MetaDataset", "MetaReport", "MetaRun", "RubricAuditReport",
           "RubricAuditSummary", "TypedReport"]


class TypedReport(ReadsLikeADict, BaseModel):
    """A report (or a part of one) that reads like the dict it replaces."""

    model_config = ConfigDict(extra="forbid")

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self.model_fields_set

    def keys(self) -> Iterator[str]:
        return iter(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The report as the JSON object it is written as (only the fields given)."""
        return self.model_dump(mode="json", exclude_unset=True)


class MetaDataset(TypedReport):
    """The meta-evaluation set the methods were scored on."""

    kind: str
    source: str
    pairwise: bool
    units: int
    items: int
    notes: list[str] = Field(default_factory=list)


class MetaRun(TypedReport):
    """One method's run of a meta-evaluation."""

    run_id: str
    judge: str
    """The judge's name, or ``none`` for a method that calls no judge."""
    unscored_items: int
    judge_calls: int | None
    """Calls this invocation made (None when read back)."""
    wall_s: float | None


class MetaReport(TypedReport):
    """What :func:`assay.analysis.meta.ameta` returns and ``assay meta`` writes: per method and human label,
    the correlations (``rows``), the comparisons with the reference metric, the annotators'
    agreement among themselves, the system-level ranking (pairwise sets), the verdicts'
    agreement, and each unit's values (``items``)."""

    signature: dict[str, Any]
    dataset: MetaDataset
    runs: dict[str, MetaRun]
    methods: dict[str, Any]
    """Each method's manifest (prompts, options)."""
    rows: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    human_agreement: list[dict[str, Any]]
    system_ranking: dict[str, Any] | None
    verdict_agreement: dict[str, Any]
    items: list[dict[str, Any]]


class InjectionRow(TypedReport):
    """One attack and metric of the injection audit: the paired difference attacked − clean."""

    attack: str
    metric: str
    n: int
    unscored: int
    clean_mean: float | None
    attacked_mean: float | None
    mean_delta: float | None
    delta_ci: list[float] | None
    bootstrap_p: float | None
    wilcoxon_p: float | None
    raised: int
    lowered: int
    note: str | None


class InjectionReport(TypedReport):
    """What :func:`assay.analysis.injection.ainjection_audit` returns and ``assay injection`` writes."""

    signature: dict[str, Any]
    method: str
    run_id: str
    guard: str
    attacked_side: str | None
    removed_by_guard: dict[str, int]
    """Per attack: the attacked answers whose attack the guard removed before judging."""
    attacks: list[dict[str, Any]]
    rows: list[InjectionRow]
    items: list[dict[str, Any]]
    judge_calls: int | None
    wall_s: float | None


class RubricAuditSummary(TypedReport):
    """The rubric's numbers on each axis the audit ran (None: axis not run, or undefined)."""

    structure_mean: float | None = None
    alpha: float | None = None
    flip_rate: float | None = None
    rho: float | None = None
    accuracy_rubric: float | None = None
    accuracy_no_rubric: float | None = None
    delta: float | None = None
    delta_ci: list[float] | None = None
    app_in: float | None = None
    app_out: float | None = None
    delta_app: float | None = None
    t_per_prompt: float | None = None
    eff_dim: float | None = None
    eff_dim_per_k: float | None = None
    mean_abs_rho: float | None = None
    bt_cv_accuracy: float | None = None
    bt_entropy: float | None = None
    vfr: float | None = None


class RubricAuditReport(TypedReport):
    """What ``assay rubric audit --output`` writes: each criterion's numbers (``rubrics``), the
    rubric's (``summary``) and every axis's full result (``detail``)."""

    rubrics: list[dict[str, Any]]
    summary: RubricAuditSummary
    detail: dict[str, Any]
