"""`assay compare RUN_A RUN_B` and `assay gate RUN` (case-aware judge: §8.3–8.4, release gating)."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.table import Table

from assay.cli.kit import console, err_console
from assay.core._files import check_output, write_json
from assay.core.errors import ConfigError
from assay.methods.caseaware.compare import (
    RunScores,
    add_readings,
    compare_runs,
    gate,
    judge_robustness,
    load_run,
)


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def compare(
    run_a: Path = typer.Argument(..., help="run store of system A"),
    run_b: Path = typer.Argument(..., help="run store of system B"),
    judge_robustness_runs: tuple[Path, Path] | None = typer.Option(
        None, "--judge-robustness", help="RUN_A2 RUN_B2: the same systems scored by a second judge"),
    resamples: int = typer.Option(10000, "--resamples", min=1, help="bootstrap resamples (at most 1,000,000)"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
    out: Path | None = typer.Option(None, "--output", "-o", help="write the comparison as JSON"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file that assay did not write"),
) -> None:
    """Paired comparison of two systems at conversation level: Wilcoxon signed-rank, paired t
    and a bootstrap 95% CI of the mean difference A − B, per metric and for S_final."""
    if out is not None:
        check_output(out, inputs=[run_a, run_b, *(judge_robustness_runs or ())], force=force, option="--output")
    a, b = load_run(run_a), load_run(run_b)
    result = compare_runs(a, b, resamples=resamples, seed=seed)
    table = Table(title=f"A = {run_a.name} vs B = {run_b.name} · conversation level")
    for column in ("metric", "n", "mean A", "mean B", "A − B", "95% CI (bootstrap)", "Wilcoxon p", "paired t p"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in result["rows"]:
        ci = f"[{row['bootstrap_ci'][0]:.3f}, {row['bootstrap_ci'][1]:.3f}]" if row["bootstrap_ci"] else "—"
        table.add_row(row["metric"], str(row["n"]), _f(row["mean_a"]), _f(row["mean_b"]), _f(row["mean_diff"]), ci,
                      _f(row["wilcoxon_p"], 4), _f(row["t_p"], 4))
    console.print(table)
    unpaired = result["unpaired"]
    if unpaired["only_a"] or unpaired["only_b"]:
        console.print(f"left out (not in both runs): {len(unpaired['only_a'])} conversation(s) only in A, "
                      f"{len(unpaired['only_b'])} only in B")
    console.print(f"bootstrap: {resamples} resamples, seed {seed}")
    if judge_robustness_runs is not None:
        a2, b2 = (load_run(p) for p in judge_robustness_runs)
        robustness = {"A": judge_robustness(a, a2), "B": judge_robustness(b, b2)}
        result["judge_robustness"] = robustness
        for name, r in robustness.items():
            console.print(f"judge robustness, system {name}: Spearman ρ on S_final = {_f(r['spearman'])} "
                          f"(n = {r['n']} conversations{', ' + r['note'] if r['note'] else ''})")
    if out is not None:
        write_json(out, result)
        console.print(f"wrote {out}")


def _pairs(option: str, entries: list[str] | None, what: str) -> dict[str, float]:
    """NAME=NUMBER entries of a repeatable option; one clear error for a malformed one."""
    out: dict[str, float] = {}
    for entry in entries or []:
        key, sep, value = entry.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise typer.BadParameter(f"{option} {entry!r}: expected {what}=NUMBER") from None
        if not sep:
            raise typer.BadParameter(f"{option} {entry!r}: expected {what}=NUMBER")
    return out


def _aligned(scores: RunScores, path: Path, minimums: dict[str, float]) -> RunScores:
    """The run's scores with the alignment's values as metrics (refused in one line when the
    alignment does not fit the run or lacks a part the gate asks for)."""
    from assay.analysis.align import load_for, readings
    from assay.store import Store

    store = Store(Path(scores.path), create=False)
    fitted = load_for(path, store, scores.run_id)
    if "aligned_score" in minimums and fitted.get("aligned_score") is None:
        raise ConfigError(f"--alignment {path}: holds no aligned score (too few grades when it was fitted); "
                          "--min-aligned cannot be checked")
    kinds = list(fitted.get("calibration") or {})
    for name in minimums:
        kind = name.removeprefix("p_calibrated.")
        if name.startswith("p_calibrated.") and kind not in kinds:
            raise ConfigError(f"--min-calibrated {kind}: {path} calibrates "
                              f"{', '.join(kinds) if kinds else 'no kind of verdict'}")
    return add_readings(scores, readings(fitted, store, scores.run_id))


def gate_command(
    run: Path = typer.Argument(..., help="run store to gate"),
    min_final: float | None = typer.Option(None, "--min-final", help="minimum conversation-level mean S_final"),
    minimum: list[str] | None = typer.Option(None, "--min", help="METRIC=V minimum (repeatable), e.g. "
                                                                  "identifier_integrity_score=0.9"),
    baseline: Path | None = typer.Option(None, "--baseline", help="run store of the last released version"),
    max_drop: float | None = typer.Option(None, "--max-drop", min=0.0, help="largest allowed drop against --baseline"),
    run_id: str | None = typer.Option(None, "--run", help="which run of the store (an id or its prefix; default: "
                                                         "the latest)"),
    baseline_run: str | None = typer.Option(None, "--baseline-run", help="which run of --baseline (default: the "
                                                                        "latest)"),
    alignment: Path | None = typer.Option(None, "--alignment", metavar="FILE",
                                          help="alignment file from assay align: gate on its aligned score and "
                                               "calibrated probabilities (--min-aligned, --min-calibrated)"),
    min_aligned: float | None = typer.Option(None, "--min-aligned", help="minimum mean aligned score "
                                                                          "(needs --alignment)"),
    min_calibrated: list[str] | None = typer.Option(None, "--min-calibrated", metavar="KIND=V",
                                                    help="minimum mean calibrated P of a kind of verdict, e.g. "
                                                         "criteria=0.7 (repeatable; needs --alignment)"),
) -> None:
    """Release gate for CI pipelines: exit 0 when every check passes, 1 with the reasons when
    one fails (2 for bad input). Each metric is the mean over conversations of the
    per-conversation mean (turns of every system in the run together). Example step:
    `assay gate run.db --min-final 0.75 --baseline released.db --max-drop 0.03`. With
    `--alignment FILE` (from assay align) it gates on the aligned score (`--min-aligned 0.6`) or a
    kind's calibrated probabilities (`--min-calibrated criteria=0.7`); a baseline is read through
    the same alignment."""
    minimums = _pairs("--min", minimum, "METRIC")
    calibrated = _pairs("--min-calibrated", min_calibrated, "KIND")
    if (min_aligned is not None or calibrated) and alignment is None:
        raise ConfigError("--min-aligned and --min-calibrated need --alignment FILE (from assay align)")
    minimums.update({f"p_calibrated.{k}": v for k, v in calibrated.items()})
    if min_aligned is not None:
        minimums["aligned_score"] = min_aligned
    for name, number in [("--min-final", min_final), ("--max-drop", max_drop),
                         *((f"--min {k}", v) for k, v in minimums.items())]:
        if number is not None and not math.isfinite(number):
            raise ConfigError(f"{name}: {number} is not a finite number")
    # options that depend on each other, before any store is opened
    if baseline is not None and max_drop is None:
        raise ConfigError("--baseline needs --max-drop (the largest allowed drop against it)")
    if max_drop is not None and baseline is None:
        raise ConfigError("--max-drop needs --baseline (the run store to compare against)")
    if baseline_run is not None and baseline is None:
        raise ConfigError("--baseline-run needs --baseline")
    scores = load_run(run, run_id)
    before = load_run(baseline, baseline_run) if baseline else None
    if alignment is not None:
        scores = _aligned(scores, alignment, minimums)
        before = _aligned(before, alignment, minimums) if before is not None else None
    result = gate(scores, min_final=min_final, minimums=minimums, baseline=before, max_drop=max_drop)
    for check in result.checks:
        mark = "pass" if check["passed"] else "FAIL"
        if check["check"] == "minimum":
            console.print(f"{mark}  {check['metric']} = {_f(check['value'])} (minimum {check['threshold']:.3f})")
        else:
            console.print(f"{mark}  {check['metric']} drop vs baseline = {_f(check.get('drop'))} "
                          f"(max {_f(check.get('max_drop'))}, {check['n']} conversation(s))")
    if not result.passed:
        for reason in result.reasons:
            err_console.print(f"gate failed: {reason}")
        raise typer.Exit(1)
    console.print("gate passed")
