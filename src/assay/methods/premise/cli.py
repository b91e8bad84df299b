"""`assay rubric discover|audit|repair`: PReMISE policy rubrics (Algorithm 1; audit axes of App. B.1; §3.3)."""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path
from typing import Any

import typer

from assay.cli.kit import (
    BUDGET_OPT,
    CONCURRENCY_OPT,
    DRY_RUN_OPT,
    JUDGE,
    JUDGE_OPT,
    PROGRESS_OPT,
    RETRIES_OPT,
    TIMEOUT_OPT,
    console,
    parse_options,
    runner_config,
)
from assay.core._files import atomic_write_text, check_output, write_json
from assay.core._load import reject_constant
from assay.core.errors import ConfigError, InputError
from assay.core.report_models import RubricAuditReport
from assay.judge.runner import RunnerConfig
from assay.methods.premise.audit import FIT_PARTS, Audit, AuditConfig
from assay.methods.premise.discover import DiscoveryConfig
from assay.methods.premise.files import RubricSet, load_rubric, read_preference_pairs, save_rubric
from assay.methods.premise.refine import OPERATORS, RefineConfig
from assay.methods.premise.report import COLUMNS
from assay.methods.premise.workflow import (
    audit_document,
    audit_estimate,
    audit_rubric,
    check_axes,
    discover_rubric,
    refine_rubric,
    repair_by_preference,
)

app = typer.Typer(help="PReMISE policy rubrics: discover, audit (four axes), repair (pref, vfr), compare.",
                  no_args_is_help=True)


PAIRS_OPT = typer.Option(None, "--pairs", help="preference pairs for the reliability and fit axes")
OOD_OPT = typer.Option(None, "--out-of-domain", help="fit: pairs from another source, for App_out and ΔApp")
AXES_OPT = typer.Option("structure,fit", "--axes", help="comma-separated: structure, reliability, fit, adversarial")
VOTES_OPT = typer.Option(5, "--votes", help="fit: verdicts per pair, majority (1: one greedy verdict)")
RUNS_OPT = typer.Option(5, "--runs", help="reliability: re-runs at the temperature for the flip rate")
PARA_OPT = typer.Option(5, "--paraphrases", help="reliability: rewordings per criterion (0: skip)")
FIT_PARTS_OPT = typer.Option(",".join(FIT_PARTS), "--fit-parts",
                             help="fit: what to measure: accuracy (does the rubric pick the preferred answer), "
                                  "applicability (how often criteria fire), scores (effective dimension, |ρ|, "
                                  "Bradley–Terry)")
LIMIT_OPT = typer.Option(None, "--limit", help="use the first N pairs (and out-of-domain pairs)")
ATTACKS_OPT = typer.Option(6, "--attacks", help="adversarial: attempts per criterion (6 strategies rotate)")
TAU_OPT = typer.Option(7.0, "--tau", help="adversarial: a score ≥ τ (of 10) goes to the verifier")
ATTACKER_OPT = typer.Option(None, "--attacker", help="adversarial: the attacker model (default: judge)")
VERIFIER_OPT = typer.Option(None, "--verifier", help="adversarial: the verifier model (default: judge)")


def _configured(model: type[Any], **values: Any) -> Any:
    """``model(**values)`` from the command's options, or one line naming the flag
    (``--runs: Input should be greater than or equal to 2``) instead of pydantic's dump."""
    from pydantic import ValidationError

    try:
        return model(**values)
    except ValidationError as exc:
        raise ConfigError("; ".join(f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" if e["loc"] else e["msg"]
                                    for e in exc.errors())) from None


@app.command("discover")
def discover(
    pairs: Path = typer.Argument(..., help="preference pairs: HaluQuestQA TSV, pairwise JSONL "
                                           "(a/b with human.winner) or JSONL with prompt/chosen/rejected"),
    output: Path = typer.Option(..., "--output", "-o", help="rubric to write (.yaml, or .json)"),
    k: int = typer.Option(20, "--size", help="criteria in the rubric written (the old --k still works)"),
    cluster_size: int = typer.Option(8, "--cluster-size", help="target cluster size T"),
    min_support: int = typer.Option(2, "--min-support", help="n_min: raw candidates a criterion must consolidate"),
    min_sources: int = typer.Option(2, "--min-sources", help="genericity: distinct pairs a criterion must come from"),
    diversity: float = typer.Option(0.5, "--diversity", help="MMR diversity weight λ"),
    max_levels: int = typer.Option(10, "--max-levels", help="most rounds of merging clusters of criteria"),
    limit: int | None = typer.Option(None, "--limit", help="use the first N pairs"),
    matcher: str = typer.Option("embeddings", "--matcher", help="embeddings (sentence-transformers) or lexical"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED", help="sampling seed of the judge calls"),
    store_path: Path = typer.Option(Path("assay-run.db"), "--store", envvar=["ASSAY_STORE", "ASSAY_OUT"],
                                    help="store: the judge-call cache and the stages (a killed discovery resumes)"),
    trace: Path | None = typer.Option(None, "--trace", help="write the discovery trace (pool per level) as JSON"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    progress: bool = PROGRESS_OPT,
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Discover a policy rubric (--size criteria) from preference pairs (PReMISE)."""
    check_output(output, inputs=[pairs, store_path], force=force)
    if trace is not None:
        check_output(trace, inputs=[pairs, store_path, output], force=force)
    if matcher not in ("embeddings", "lexical"):
        raise ConfigError(f"--matcher must be embeddings or lexical, got {matcher!r}")
    config = DiscoveryConfig(k=k, cluster_size=cluster_size, min_support=min_support, min_sources=min_sources,
                             diversity=diversity, max_levels=max_levels, matcher=matcher,  # type: ignore[arg-type]
                             seed=seed)
    found, notes = read_preference_pairs(pairs)
    if limit is not None:
        found = found[:limit]
    if dry_run:
        levels = max(1, round(math.log(max(2, len(found) * 4), max(2, cluster_size))))
        console.print(f"dry run: {len(found)} pair(s) → ≈{len(found)} extraction call(s), then ≈"
                      f"{max(1, len(found) * 4 // cluster_size)} consolidation call(s) a level for about {levels} "
                      "level(s) (each level merges clusters of --cluster-size); call no judge, write nothing")
        return
    start = time.perf_counter()
    rubric, steps = asyncio.run(discover_rubric(found, config, judge=judge, store=store_path,
                                                runner=runner_config(concurrency, budget, timeout, retries,
                                                                     progress=progress),
                                                judge_options=parse_options(judge_opt)))
    steps["wall_s"] = time.perf_counter() - start
    for note in notes:
        console.print(note)
    sizes = " → ".join(str(level["pool"]) for level in steps["levels"])
    console.print(f"{len(found)} pair(s); pool per level {sizes}; stopped: {steps.get('stopped')}; "
                  f"{steps['eligible']} with support ≥ {min_support}; selected {len(rubric.criteria)}; "
                  f"{steps['judge_calls_made']} judge call(s) made")
    if steps["pairs_failed"]:
        console.print(f"[red]{len(steps['pairs_failed'])} pair(s) gave no criteria[/red]: "
                      + "; ".join(f"{p['pair']}: {p['reason']}" for p in steps["pairs_failed"][:3]))
    if not rubric.criteria:
        console.print("[red]no criterion passed the support and genericity filters: nothing written[/red]")
        raise typer.Exit(1)
    save_rubric(rubric, output)
    if trace is not None:
        write_json(trace, steps)
    console.print(f"wrote {len(rubric.criteria)} criteria to {output}")


@app.command("audit")
def audit(
    rubric_path: Path = typer.Argument(..., help="rubric set (.yaml or .json), from any source"),
    pairs: Path | None = PAIRS_OPT,
    out_of_domain: Path | None = OOD_OPT,
    axes: str = AXES_OPT,
    votes: int = VOTES_OPT,
    runs: int = RUNS_OPT,
    paraphrases: int = PARA_OPT,
    fit_parts: str = FIT_PARTS_OPT,
    limit: int | None = LIMIT_OPT,
    attacks: int = ATTACKS_OPT,
    tau: float = TAU_OPT,
    attacker: str | None = ATTACKER_OPT,
    verifier: str | None = VERIFIER_OPT,
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED", help="sampling seed of the judge calls"),
    store_path: Path = typer.Option(Path("assay-run.db"), "--store", envvar=["ASSAY_STORE", "ASSAY_OUT"],
                                    help="store: the judge-call cache (a re-run makes no call) and the audit's run "
                                         "(one unit per criterion, for export, report and ui)"),
    out: Path | None = typer.Option(None, "--output", "-o", help="write the audit as JSON"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    progress: bool = PROGRESS_OPT,
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Audit a rubric set: structure of each criterion, reliability (flip rate over re-runs and
    rewordings), fit to human preferences, and robustness to answers written to fool it."""
    chosen, parts = check_axes(axes, fit_parts, pairs)
    if out is not None:
        check_output(out, inputs=[rubric_path, store_path, *([pairs] if pairs else []),
                                  *([out_of_domain] if out_of_domain else [])], force=force)
    rubric = load_rubric(rubric_path)
    found, foreign = _audit_pairs(chosen, pairs, out_of_domain, limit)
    auditor = Audit(_configured(AuditConfig, votes=votes, seed=seed, runs=runs, paraphrases=paraphrases,
                                fit_parts=parts, attacks=attacks, tau=tau))
    if dry_run:
        _audit_estimate(rubric, chosen, parts, found, foreign, auditor.config)
        return
    result = _run_audit(rubric, str(rubric_path), found, foreign, chosen, auditor, judge=judge, judge_opt=judge_opt,
                        attacker=attacker, verifier=verifier, store_path=store_path,
                        runner=runner_config(concurrency, budget, timeout, retries, progress=progress))
    doc = _audit_doc(rubric, result, votes=votes, tau=tau)
    if out is not None:
        write_json(out, doc)
        console.print(f"wrote {out}")


@app.command("compare")
def compare(
    sources: list[Path] = typer.Argument(..., help="rubric sets (.yaml/.json) to audit, or audit JSON files "
                                                   "written by `assay rubric audit --output` (used as they are)"),
    pairs: Path | None = PAIRS_OPT,
    out_of_domain: Path | None = OOD_OPT,
    axes: str = AXES_OPT,
    votes: int = VOTES_OPT,
    runs: int = RUNS_OPT,
    paraphrases: int = PARA_OPT,
    fit_parts: str = FIT_PARTS_OPT,
    limit: int | None = LIMIT_OPT,
    attacks: int = ATTACKS_OPT,
    tau: float = TAU_OPT,
    attacker: str | None = ATTACKER_OPT,
    verifier: str | None = VERIFIER_OPT,
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED", help="sampling seed of the judge calls"),
    store_path: Path = typer.Option(Path("assay-run.db"), "--store", envvar=["ASSAY_STORE", "ASSAY_OUT"],
                                    help="store: the judge-call cache shared by every source"),
    out: Path | None = typer.Option(None, "--output", "-o", help="write the side-by-side table as JSON"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    progress: bool = PROGRESS_OPT,
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Lay several rubric sources side by side (one row each): every rubric is audited on the same
    pairs, judge and axes; an audit JSON is read as it is."""
    if len(sources) < 2:
        raise ConfigError(f"compare needs at least two sources, got {len(sources)}")
    loaded: list[tuple[Path, RubricSet | None, dict[str, Any] | None]] = []
    for path in sources:
        doc = _audit_json(path)
        loaded.append((path, None if doc is not None else load_rubric(path), doc))
    to_audit = [r for _, r, _ in loaded if r is not None]
    chosen, parts = check_axes(axes, fit_parts, pairs) if to_audit else ([], ())
    if out is not None:
        check_output(out, inputs=[*sources, store_path, *([pairs] if pairs else []),
                                  *([out_of_domain] if out_of_domain else [])], force=force)
    found, foreign = _audit_pairs(chosen, pairs, out_of_domain, limit)
    auditor = Audit(_configured(AuditConfig, votes=votes, seed=seed, runs=runs, paraphrases=paraphrases,
                                fit_parts=parts, attacks=attacks, tau=tau))
    if dry_run:
        for path, rubric, _doc in loaded:
            if rubric is not None:
                console.print(f"[bold]{path}[/bold]")
                _audit_estimate(rubric, chosen, parts, found, foreign, auditor.config)
        return
    rows: list[dict[str, Any]] = []
    for path, rubric, doc in loaded:
        if rubric is not None:
            console.print(f"[bold]{path}[/bold]")
            result = _run_audit(rubric, str(path), found, foreign, chosen, auditor, judge=judge,
                                judge_opt=judge_opt, attacker=attacker, verifier=verifier, store_path=store_path,
                                runner=runner_config(concurrency, budget, timeout, retries, progress=progress))
            doc = _audit_doc(rubric, result, votes=votes, tau=tau).to_dict()
        assert doc is not None
        detail = doc.get("detail", {})
        rows.append({"source": str(path), "k": detail.get("criteria", len(doc.get("rubrics", []))),
                     "judge": detail.get("judge"), "audited": rubric is not None, "summary": doc["summary"]})
    from rich.table import Table

    shown = [c for c in COLUMNS if any(r["summary"].get(c[0]) is not None for r in rows)]
    table = Table(title="rubric sources side by side (n/a: axis not run or undefined)")
    for header in ("source", "K", *(h for _, h, _ in shown)):
        table.add_column(header, justify="left" if header == "source" else "right")
    for r in rows:
        table.add_row(r["source"], str(r["k"]), *(_num(r["summary"].get(k), f) for k, _, f in shown))
    console.print(table)
    judges = {r["judge"] for r in rows if r["judge"]}
    if len(judges) > 1:
        console.print(f"[yellow]the sources were audited by different judges ({', '.join(sorted(judges))}): "
                      "their numbers are not comparable[/yellow]")
    if out is not None:
        write_json(out, {"columns": [k for k, _, _ in shown], "sources": rows})
        console.print(f"wrote {out}")


def _audit_json(path: Path) -> dict[str, Any] | None:
    """An audit document written by `rubric audit --output`, or None for anything else (a rubric)."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
    except (OSError, ValueError):
        return None
    if not (isinstance(doc, dict) and isinstance(doc.get("summary"), dict) and "rubrics" in doc):
        return None
    try:  # an audit is read as it is: a NaN or Infinity in it is no number assay accepts
        json.loads(text, parse_constant=reject_constant)
    except ValueError as exc:
        raise InputError(f"{exc}; an audit JSON holds finite numbers or null", source=str(path)) from None
    return doc


def _audit_pairs(chosen: list[str], pairs: Path | None, out_of_domain: Path | None,
                 limit: int | None) -> tuple[list[Any], list[Any]]:
    needs_pairs = bool({"fit", "reliability", "adversarial"} & set(chosen))
    found = read_preference_pairs(pairs)[0] if pairs is not None and needs_pairs else []
    foreign = read_preference_pairs(out_of_domain)[0] if out_of_domain is not None and "fit" in chosen else []
    if limit is not None:
        found, foreign = found[:limit], foreign[:limit]
    return found, foreign


def _run_audit(rubric: RubricSet, label: str, found: list[Any], foreign: list[Any], chosen: list[str],
               auditor: Audit, *, judge: str, judge_opt: list[str] | None, attacker: str | None,
               verifier: str | None, store_path: Path, runner: RunnerConfig) -> dict[str, Any]:
    return asyncio.run(audit_rubric(rubric, label, found, foreign, chosen, auditor, judge=judge, store=store_path,
                                    runner=runner, judge_options=parse_options(judge_opt), attacker=attacker,
                                    verifier=verifier))


def _audit_estimate(rubric: RubricSet, chosen: list[str], parts: tuple[str, ...], found: list[Any],
                    foreign: list[Any], cfg: AuditConfig) -> None:
    """Print the dry run of an audit: upper bounds of each axis's judge calls."""
    calls = audit_estimate(rubric, chosen, parts, found, foreign, cfg)
    shown = ", ".join(f"{axis} ≤{c}" for axis, c in calls.items())
    console.print(f"dry run: {len(rubric.criteria)} criteria, {len(found)} pair(s) → ≤{sum(calls.values())} judge "
                  f"calls ({shown}); call no judge, write nothing")


def _audit_doc(rubric: RubricSet, result: dict[str, Any], *, votes: int, tau: float) -> RubricAuditReport:
    """Print the audit's lines and return the JSON document (`rubrics` per criterion, `summary`)."""
    if "structure" in result:
        st = result["structure"]
        scored = len(rubric.criteria) - st["unscored_criteria"]
        console.print(f"structure: mean {_num(st['mean'], '.2f')} of 5 over {scored} criteria ({st['judges']} judge(s))"
                      + (f"; {st['unscored_criteria']} criteria unscored (every vote on a property unparseable)"
                         if st["unscored_criteria"] else ""))
    if "reliability" in result:
        rel = result["reliability"]
        console.print(f"reliability on {rel['pairs']} pair(s), {rel['judges']} judge(s): alpha {_num(rel['alpha'])}, "
                      f"flip rate {_num(rel['flip_rate'])} ({rel['runs']} runs), paraphrase ρ {_num(rel['rho'])} "
                      f"({rel['paraphrases']} paraphrases)")
    fit = result.get("fit", {})
    if "accuracy_rubric" in fit:
        ci = fit["delta_ci"]
        unread = fit["unscored_rubric"] + fit["unscored_no_rubric"]
        console.print(f"fit on {fit['pairs']} pair(s), {votes} vote(s): accuracy with the rubric "
                      f"{_num(fit['accuracy_rubric'])}, without {_num(fit['accuracy_no_rubric'])}, "
                      f"Δ {_num(fit['delta'], '+.3f')}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
                      + (f"; {unread} verdict(s) unscored (no vote could be read)" if unread else ""))
    app_ = fit.get("applicability", {})
    if app_:
        console.print(f"applicability: App_in {_num(app_.get('app_in'))} over {app_['prompts']} prompt(s), "
                      f"T/p {_num(app_.get('t_per_prompt'), '.2f')}"
                      + (f", App_out {_num(app_.get('app_out'))}, ΔApp {_num(app_.get('delta_app'), '+.3f')}"
                         if "prompts_out" in app_ else ""))
    sc = fit.get("scores", {})
    if sc:
        bt = sc.get("bt", {})
        console.print(f"scores on {sc['pairs']} pair(s): EffDim {_num(sc.get('eff_dim'), '.2f')} of K={sc['k']}, "
                      f"mean |ρ| {_num(sc.get('mean_abs_rho'))}, BT CV accuracy {_num(bt.get('cv_accuracy'))}, "
                      f"weight entropy {_num(bt.get('entropy'))}" + (f" ({bt['reason']})" if bt.get("reason") else ""))
    adv = result.get("adversarial", {})
    if adv:
        incomplete = sum(e["attempts"] - e["complete"] for e in adv["criteria"])
        console.print(f"adversarial: VFR {_num(adv['vfr'])} ({adv['attacks']} attack(s) per criterion, τ {tau:g}; "
                      f"attacker {adv['attacker']}, verifier {adv['verifier']}"
                      + (f"; {incomplete} attempt(s) left out, unparseable" if incomplete else "") + ")")
    return audit_document(rubric, result)


def _num(value: float | None, fmt: str = ".3f") -> str:
    return "n/a" if value is None else format(value, fmt)


@app.command("repair")
def repair(
    rubric_path: Path = typer.Argument(..., help="rubric set (.yaml or .json)"),
    pairs: Path = typer.Option(..., "--pairs", help="preference pairs (those the rubric was discovered from)"),
    output: Path = typer.Option(..., "--output", "-o", help="repaired rubric to write (.yaml, or .json)"),
    mode: str = typer.Option("pref", "--mode", help="pref: keep the criteria the human preferences agree with; vfr: "
                                                    "rewrite criteria until fewer adversarial answers fool them"),
    eta: float = typer.Option(0.6, "--eta", help="pref: keep a criterion when the preferred answer wins on ≥ η "
                                                 "of the pairs it applies to"),
    delta: str = typer.Option("0", "--delta", help="vfr: reliability slack; 0 constrained, inf unconstrained"),
    epsilon: float = typer.Option(0.05, "--epsilon", help="vfr: preference fit may drop by at most this"),
    depth: int = typer.Option(2, "--depth", help="vfr: operator subsets up to this size"),
    beam: int = typer.Option(3, "--beam", help="vfr: candidates measured on the held-out pairs"),
    operators: str = typer.Option(",".join(OPERATORS), "--operators",
                                  help="vfr: the edits it may make, a subset of: " + ", ".join(OPERATORS)),
    holdout: float = typer.Option(0.5, "--holdout", help="vfr: share of the pairs held out for measuring"),
    attacks: int = typer.Option(6, "--attacks", help="vfr: attacks per measurement (6 strategies rotate)"),
    runs: int = typer.Option(5, "--runs", help="vfr: re-runs for the flip rate"),
    paraphrases: int = typer.Option(0, "--paraphrases", help="vfr: rewordings for ρ (0: Rel without ρ)"),
    tau: float = typer.Option(7.0, "--tau", help="vfr: a score ≥ τ (of 10) goes to the verifier"),
    predictor: str | None = typer.Option(None, "--predictor", help="vfr: repair assistant and predictor "
                                                                   "(default: judge)"),
    attacker: str | None = typer.Option(None, "--attacker", help="vfr: the attacker model (default: judge)"),
    verifier: str | None = typer.Option(None, "--verifier", help="vfr: the verifier model (default: judge)"),
    limit: int | None = typer.Option(None, "--limit", help="use the first N pairs"),
    judge: str = JUDGE,
    judge_opt: list[str] | None = JUDGE_OPT,
    seed: int = typer.Option(0, "--seed", envvar="ASSAY_SEED", help="sampling seed of the judge calls"),
    store_path: Path = typer.Option(Path("assay-run.db"), "--store", envvar=["ASSAY_STORE", "ASSAY_OUT"],
                                    help="store: the judge-call cache (an audited rubric's scores are re-used)"),
    report: Path | None = typer.Option(None, "--report", help="write each criterion's decision as JSON"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    progress: bool = PROGRESS_OPT,
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """Repair a rubric set: preference-rank selection keeps the criteria the human preference agrees with;
    vfr refinement edits criteria (gate, do-not-reward, ...) to lower the verified fool rate."""
    if mode not in ("pref", "vfr"):
        raise ConfigError(f"--mode must be pref or vfr, got {mode!r}")
    if mode == "vfr":
        _refine(rubric_path, pairs, output, report=report, force=force, limit=limit, judge=judge,
                judge_opt=judge_opt, seed=seed, store_path=store_path, delta=delta, epsilon=epsilon, depth=depth,
                beam=beam, operators=operators, holdout=holdout, attacks=attacks, runs=runs,
                paraphrases=paraphrases, tau=tau, predictor=predictor, attacker=attacker, verifier=verifier,
                runner=runner_config(concurrency, budget, timeout, retries, progress=progress), dry_run=dry_run)
        return
    if not 0.0 <= eta <= 1.0:
        raise ConfigError(f"--eta must be within [0, 1], got {eta}")
    check_output(output, inputs=[rubric_path, pairs, store_path], force=force)
    if report is not None:
        check_output(report, inputs=[rubric_path, pairs, store_path, output], force=force)
    rubric = load_rubric(rubric_path)
    found = read_preference_pairs(pairs)[0]
    if limit is not None:
        found = found[:limit]
    if dry_run:
        console.print(f"dry run: {len(rubric.criteria)} criteria, {len(found)} pair(s) → ≤"
                      f"{2 * len(rubric.criteria) * len(found)} judge calls (applicability and a score per criterion "
                      "and pair); call no judge, write nothing")
        return
    repaired, decisions, made = asyncio.run(repair_by_preference(
        rubric, found, eta=eta, seed=seed, judge=judge, store=store_path,
        runner=runner_config(concurrency, budget, timeout, retries, progress=progress),
        judge_options=parse_options(judge_opt)))
    for d in decisions:
        mark = "kept   " if d["kept"] else "dropped"
        console.print(f"{mark} {d['id']}: {d['reason']}")
    console.print(f"kept {len(repaired.criteria)} of {len(rubric.criteria)} on {len(found)} pair(s); "
                  f"{made} judge call(s) made")
    if not repaired.criteria:
        console.print("[red]no criterion passed: nothing written[/red]")
        raise typer.Exit(1)
    save_rubric(repaired, output)
    if report is not None:
        write_json(report, {"eta": eta, "pairs": len(found), "decisions": decisions})
    console.print(f"wrote {output}")


def _refine(rubric_path: Path, pairs: Path, output: Path, *, report: Path | None, force: bool, limit: int | None,
            judge: str, judge_opt: list[str] | None, seed: int, store_path: Path, delta: str, epsilon: float,
            depth: int, beam: int, operators: str, holdout: float, attacks: int, runs: int, paraphrases: int,
            tau: float, predictor: str | None, attacker: str | None, verifier: str | None,
            runner: RunnerConfig, dry_run: bool) -> None:
    """`--mode vfr`: Algorithm 2 per criterion (assay.methods.premise.refine)."""
    try:
        slack = float(delta)
    except ValueError:
        raise ConfigError(f"--delta must be a number ≥ 0 or inf, got {delta!r}") from None
    if not slack >= 0:
        raise ConfigError(f"--delta must be a number ≥ 0 or inf, got {delta!r}")
    ops = tuple(o.strip() for o in operators.split(",") if o.strip())
    unknown = [o for o in ops if o not in OPERATORS]
    if unknown or not ops:
        raise ConfigError(f"--operators {', '.join(unknown) or '(none)'}: not in the Table 8 library "
                          f"({', '.join(OPERATORS)}); the refinement may not invent operators")
    if not 0.0 < holdout < 1.0:
        raise ConfigError(f"--holdout must be within (0, 1), got {holdout}")
    if not 1 <= depth <= 3:
        raise ConfigError(f"--depth must be 1, 2 or 3, got {depth}")
    config = _configured(RefineConfig, operators=ops, depth=depth, beam=beam, epsilon=epsilon, delta=slack,
                         holdout=holdout, seed=seed)
    audit_config = _configured(AuditConfig, seed=seed, attacks=attacks, runs=runs, paraphrases=paraphrases, tau=tau)
    check_output(output, inputs=[rubric_path, pairs, store_path], force=force)
    if report is not None:
        check_output(report, inputs=[rubric_path, pairs, store_path, output], force=force)
    rubric = load_rubric(rubric_path)
    found = read_preference_pairs(pairs)[0]
    if limit is not None:
        found = found[:limit]
    if len(found) < 2:
        raise ConfigError(f"{pairs}: --mode vfr needs at least 2 pairs (calibration and held-out), got {len(found)}")
    if dry_run:
        console.print(f"dry run: {len(rubric.criteria)} criteria, {len(found)} pair(s): the search measures up to "
                      f"{beam} candidate(s) per criterion on the held-out pairs, each an audit of ≈"
                      f"{3 * attacks + attacks + len(found) * (1 + runs + paraphrases)} calls; call no judge, "
                      "write nothing")
        return
    start = time.perf_counter()
    repaired, results, made = asyncio.run(refine_rubric(
        rubric, found, config, audit_config, judge=judge, store=store_path, runner=runner,
        judge_options=parse_options(judge_opt), predictor=predictor, attacker=attacker, verifier=verifier))
    wall = time.perf_counter() - start
    for r in results:
        b = r["before"]
        line = f"{r['id']}: VFR {_num(b.get('vfr'))}, fit {_num(b.get('pref_fit'))}, flip {_num(b.get('flip_rate'))}"
        if r["chosen"] is not None:
            a = r["chosen"]["metrics"]
            line += (f" → {'+'.join(r['chosen']['operators'])}: VFR {_num(a.get('vfr'))}, fit "
                     f"{_num(a.get('pref_fit'))}, flip {_num(a.get('flip_rate'))}")
        console.print(f"{line} ({r['reason']})")
    revised = sum(r["chosen"] is not None for r in results)
    console.print(f"revised {revised} of {len(rubric.criteria)} criteria on {len(found)} pair(s) "
                  f"(δ {delta}, ε {epsilon:g}); {made} judge call(s) made in {wall:.0f} s")
    save_rubric(repaired, output)
    if report is not None:
        dumped = {**config.model_dump(mode="json"), "delta": delta if slack == float("inf") else slack}
        write_json(report, {"mode": "vfr", "config": dumped, "criteria": results, "wall_s": wall})
    console.print(f"wrote {output}")


@app.command("report")
def report_(
    audits: list[Path] = typer.Option([], "--audit",
                                         help="an audit JSON (`rubric audit --output`); repeat for several"),
    refines: list[Path] = typer.Option([], "--refine", help="a refinement report (`rubric repair --mode vfr "
                                                           "--report`); repeat"),
    rubrics: list[Path] = typer.Option([], "--rubric", help="a rubric file, e.g. a discovered one; repeat"),
    output: Path = typer.Option(..., "--output", "-o", help="the HTML page to write"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write"),
) -> None:
    """The PReMISE report: audit table, applicability map, refinement cost/benefit, rubrics with
    their support — one self-contained HTML page."""
    from assay.core.views import report_view

    check_output(output, inputs=[*audits, *refines, *rubrics], force=force)
    html = report_view("rubric").render(audits, refines, rubrics)
    atomic_write_text(output, html)
    console.print(f"wrote {output}")
