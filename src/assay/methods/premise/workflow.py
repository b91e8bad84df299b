"""The PReMISE rubric workflow as a library: discover a rubric from preference pairs, audit it
on its four axes, repair it (preference-rank selection, or VFR refinement). Each is a judge
workflow (:class:`assay.engine.session.JudgeSession`, the ``workflow`` use of :class:`assay.engine.Run`):
one run in the store, locked, budgeted, with its status; its finished steps are committed as
they finish — an audit's axes (and its criteria as units of the run after each axis), a VFR
repair's criteria — so a killed workflow resumes without doing a finished step again, and the
judge calls of an unfinished step come from the cache. ``assay rubric …`` (:mod:`.cli`) is a
thin layer over these functions::

    result = await audit_rubric(rubric, "r.yaml", pairs, [], ["structure", "fit"], Audit(AuditConfig()),
                                judge="llamacpp/default", store="a.db")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.core.errors import ConfigError
from assay.core.report_models import RubricAuditReport, RubricAuditSummary
from assay.engine.session import JudgeSession
from assay.judge.backends import JudgeBackend
from assay.judge.runner import RunnerConfig
from assay.methods.premise.audit import AXES, FIT_PARTS, NOT_BUILT, Audit, AuditConfig
from assay.methods.premise.discover import Discovery, DiscoveryConfig
from assay.methods.premise.files import PreferencePair, RubricSet
from assay.methods.premise.refine import RefineConfig, Refiner
from assay.methods.premise.repair import PrefRepairConfig, preference_rank_selection
from assay.methods.premise.units import audit_units
from assay.store import Store

Judge = str | JudgeBackend


def _pairs(pairs: list[PreferencePair]) -> list[dict[str, Any]]:
    return [p.model_dump() for p in pairs]


async def discover_rubric(pairs: list[PreferencePair], config: DiscoveryConfig, *, judge: Judge,
                          store: Store | str | Path, runner: RunnerConfig | None = None,
                          judge_options: dict[str, Any] | None = None) -> tuple[RubricSet, dict[str, Any]]:
    """Algorithm 1: a rubric from preference pairs, and its trace (pool per level, ...). Its
    extraction and consolidation are stages (:mod:`assay.engine.stages`): each part is committed as it
    finishes. The trace's ``judge_calls_made`` counts the calls this invocation made."""
    async with JudgeSession("rubric-discover", judge, store=store, runner=runner, judge_options=judge_options,
                            manifest={"pairs": _pairs(pairs), "config": config.model_dump()}) as session:
        try:
            rubric, steps = await Discovery(config).run(pairs, session.client, session.store)
        finally:
            made = session.client.stats.calls
    steps["judge_calls_made"] = made
    return rubric, steps


def check_axes(axes: str, fit_parts: str, pairs: Any) -> tuple[list[str], tuple[str, ...]]:
    """The audit's axes and fit parts from their comma-separated option values; ``pairs`` (None
    when not given) is needed by the fit, reliability and adversarial axes."""
    chosen = [a.strip() for a in axes.split(",") if a.strip()]
    parts = tuple(p.strip() for p in fit_parts.split(",") if p.strip())
    if not chosen:
        raise ConfigError(f"--axes names no axis; choose from {', '.join(AXES)}")
    if "fit" in chosen and not parts:
        raise ConfigError(f"--fit-parts names no part; choose from {', '.join(FIT_PARTS)}")
    for part in parts:
        if part not in FIT_PARTS:
            raise ConfigError(f"--fit-parts {part!r} is not one of {', '.join(FIT_PARTS)}")
    for axis in chosen:
        if axis in NOT_BUILT:
            raise ConfigError(f"--axes {axis}: this axis is not built yet (built: {', '.join(AXES)})")
        if axis not in AXES:
            raise ConfigError(f"--axes {axis!r} is not an axis: {', '.join(AXES + NOT_BUILT)}")
    for axis in ("fit", "reliability", "adversarial"):
        if axis in chosen and pairs is None:
            raise ConfigError(f"--axes {axis} needs --pairs")
    return chosen, parts


def audit_estimate(rubric: RubricSet, chosen: list[str], parts: tuple[str, ...], found: list[PreferencePair],
                   foreign: list[PreferencePair], cfg: AuditConfig) -> dict[str, int]:
    """Upper bounds of the judge calls of each axis, one judge (a jury multiplies the structure and
    agreement calls by its size); re-asks and cached calls not counted."""
    k, n = len(rubric.criteria), len(found)
    calls: dict[str, int] = {}
    if "structure" in chosen:
        calls["structure"] = k * 5
    if "reliability" in chosen:
        calls["reliability"] = k * n * (1 + cfg.runs + cfg.paraphrases) + k * cfg.paraphrases
    if "fit" in chosen:
        calls["fit"] = ((2 * n * cfg.votes if "accuracy" in parts else 0)
                        + (k * (len({p.prompt for p in found}) + len({p.prompt for p in foreign}))
                           if "applicability" in parts else 0)
                        + (k * n if "scores" in parts else 0))
    if "adversarial" in chosen:
        calls["adversarial"] = k * (3 * cfg.attacks + min(cfg.attacks, n))
    return calls


def criterion_rows(rubric: RubricSet, result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each criterion's numbers from every axis the audit ran, by criterion id."""
    by_id: dict[str, dict[str, Any]] = {c.id: {"id": c.id} for c in rubric.criteria}
    for entry in result.get("structure", {}).get("criteria", []):
        by_id[entry["id"]].update(structure=entry["structure"], flags=entry["flags"])
    for entry in result.get("reliability", {}).get("criteria", []):
        by_id[entry["id"]].update({k: entry.get(k) for k in ("alpha", "flip_rate", "rho")})
    app_ = result.get("fit", {}).get("applicability", {})
    for cid, share in app_.get("per_criterion", {}).items():
        by_id[cid]["applicability"] = share
    for cid, share in app_.get("per_criterion_out", {}).items():
        by_id[cid]["applicability_out"] = share
    for entry in result.get("adversarial", {}).get("criteria", []):
        by_id[entry["id"]].update(vfr=entry["vfr"], attack_mean_score=entry["attack_mean_score"],
                                  reference_mean_score=entry["reference_mean_score"])
    return by_id


def audit_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The audit's headline numbers (the ``summary`` of its JSON document)."""
    fit, adv, rel = result.get("fit", {}), result.get("adversarial", {}), result.get("reliability", {})
    app_, sc = fit.get("applicability", {}), fit.get("scores", {})
    return {"structure_mean": result.get("structure", {}).get("mean"),
            **{k: rel.get(k) for k in ("alpha", "flip_rate", "rho")},
            **{k: fit.get(k) for k in ("accuracy_rubric", "accuracy_no_rubric", "delta", "delta_ci")},
            **{k: app_.get(k) for k in ("app_in", "app_out", "delta_app", "t_per_prompt")},
            **{k: sc.get(k) for k in ("eff_dim", "eff_dim_per_k", "mean_abs_rho")},
            "bt_cv_accuracy": sc.get("bt", {}).get("cv_accuracy"), "bt_entropy": sc.get("bt", {}).get("entropy"),
            "vfr": adv.get("vfr")}


def audit_document(rubric: RubricSet, result: dict[str, Any]) -> RubricAuditReport:
    """The audit's JSON document: ``rubrics`` (per criterion), ``summary`` and ``detail``."""
    return RubricAuditReport(rubrics=list(criterion_rows(rubric, result).values()),
                             summary=RubricAuditSummary(**audit_summary(result)), detail=result)


async def audit_rubric(rubric: RubricSet, label: str, pairs: list[PreferencePair], foreign: list[PreferencePair],
                       axes: list[str], auditor: Audit, *, judge: Judge, store: Store | str | Path,
                       runner: RunnerConfig | None = None, judge_options: dict[str, Any] | None = None,
                       attacker: Judge | None = None, verifier: Judge | None = None) -> dict[str, Any]:
    """Audit ``rubric`` on ``axes`` (structure, reliability, fit, adversarial). Each axis is a step
    of the audit's run, committed when it finishes, and every criterion becomes a unit of the run
    with the numbers of the axes finished so far (for export, report and the review UI): an audit
    killed during an axis resumes at that axis, the finished ones read back with no judge call."""
    result: dict[str, Any] = {"rubric": label, "criteria": len(rubric.criteria)}
    manifest = {"rubric": rubric.model_dump(mode="json"), "axes": axes, "config": auditor.config.model_dump(),
                "pairs": _pairs(pairs), "out_of_domain": _pairs(foreign)}
    async with JudgeSession("rubric-audit", judge, store=store, runner=runner, judge_options=judge_options,
                            manifest=manifest, others={"attacker": attacker, "verifier": verifier}) as session:
        client = session.client
        result["judge"] = client.backend.name
        result["run_id"] = session.run_id
        work = {"structure": lambda: auditor.structure(rubric, client),
                "reliability": lambda: auditor.reliability(rubric, pairs, client),
                "fit": lambda: auditor.fit(rubric, pairs, client, out_of_domain=foreign or None),
                "adversarial": lambda: auditor.adversarial(rubric, pairs, client, **session.others)}
        for axis in AXES:
            if axis in axes:
                result[axis] = await session.step(axis, work[axis])
                session.put_units(audit_units(rubric, criterion_rows(rubric, result), result))
        result["judge_calls"] = client.stats.calls
        result["resumed_axes"] = list(session.resumed_steps)
    result["wall_s"] = session.wall_s
    return result


async def repair_by_preference(rubric: RubricSet, pairs: list[PreferencePair], *, eta: float, seed: int,
                               judge: Judge, store: Store | str | Path, runner: RunnerConfig | None = None,
                               judge_options: dict[str, Any] | None = None
                               ) -> tuple[RubricSet, list[dict[str, Any]], int]:
    """Preference-rank selection: the criteria the human preferences agree with (share ≥ ``eta``);
    returns the repaired rubric, each criterion's decision and the judge calls made."""
    manifest = {"mode": "pref", "eta": eta, "rubric": rubric.model_dump(mode="json"), "pairs": _pairs(pairs),
                "seed": seed}
    async with JudgeSession("rubric-repair", judge, store=store, runner=runner, judge_options=judge_options,
                            manifest=manifest) as session:
        repaired, decisions = await preference_rank_selection(rubric, pairs, session.client,
                                                              Audit(AuditConfig(seed=seed)), PrefRepairConfig(eta=eta))
        made = session.client.stats.calls
    return repaired, decisions, made


async def refine_rubric(rubric: RubricSet, pairs: list[PreferencePair], config: RefineConfig,
                        audit_config: AuditConfig, *, judge: Judge, store: Store | str | Path,
                        runner: RunnerConfig | None = None, judge_options: dict[str, Any] | None = None,
                        predictor: Judge | None = None, attacker: Judge | None = None,
                        verifier: Judge | None = None) -> tuple[RubricSet, list[dict[str, Any]], int]:
    """VFR refinement (Algorithm 2) of each criterion, each committed as a step of the run when it
    finishes; returns the repaired rubric, each criterion's search and the judge calls made."""
    manifest = {"mode": "vfr", "rubric": rubric.model_dump(mode="json"), "pairs": _pairs(pairs),
                "config": config.model_dump(), "audit": audit_config.model_dump()}
    async with JudgeSession("rubric-repair", judge, store=store, runner=runner, judge_options=judge_options,
                            manifest=manifest,
                            others={"predictor": predictor, "attacker": attacker, "verifier": verifier}) as session:
        try:
            repaired, results = await Refiner(Audit(audit_config), config).refine(
                rubric, pairs, session.client, step=session.step, **session.others)
        finally:
            made = session.client.stats.calls
    return repaired, results, made
