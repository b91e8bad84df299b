"""`assay injection DATA --method M`: how far injected text in the answers raises a judge's scores."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.table import Table

from assay.analysis.injection import ATTACK_SETS, ATTACKS_BY_NAME, ainjection_audit, select_attacks
from assay.analysis.meta import write_meta
from assay.cli.eval import (
    BUDGET_OPT,
    CONCURRENCY_OPT,
    DRY_RUN_OPT,
    PROGRESS_OPT,
    RETRIES_OPT,
    TIMEOUT_OPT,
    runner_config,
)
from assay.cli.kit import console, parse_options
from assay.core._files import check_output
from assay.core.registry import item_methods
from assay.data import load_items
from assay.engine import estimate


def injection(
    data: Path = typer.Argument(..., help="items (JSONL / CSV / Parquet) whose answers get the attacks"),
    method: str = typer.Option(..., "--method", "-m", help=f"one of: {', '.join(item_methods())}"),
    attack: list[str] = typer.Option([], "--attack", "-a",
                                     help=f"repeatable; default the set 'default'; sets: {', '.join(ATTACK_SETS)} "
                                          "('all' is default and held-out); "
                                          f"attacks: {', '.join(ATTACKS_BY_NAME)}"),
    guard: str = typer.Option("redact", "--guard", envvar="ASSAY_GUARD",
                              help="redact: remove passages aimed at the grader before judging (the shipped "
                                   "defence); flag: only flag them (the judge and fence alone)"),
    judge: str = typer.Option("llamacpp/default", "--judge", "-j", envvar="ASSAY_JUDGE",
                              help="the judge model, e.g. llamacpp/default or openai/gpt-4o-mini"),
    judge_opt: list[str] = typer.Option([], "--judge-opt", help="backend option key=value, repeatable"),
    limit: int | None = typer.Option(None, "--limit", min=1, help="only the first N items"),
    seed: int = typer.Option(0, "--seed", help="seed of the bootstrap"),
    resamples: int = typer.Option(2000, "--resamples", min=1,
                                   help="bootstrap resamples behind the confidence intervals (at most 1,000,000)"),
    out: Path = typer.Option(Path("injection.json"), "--output", "-o", help="where the audit JSON goes"),
    store: Path | None = typer.Option(None, "--store",
                                      help="run store (.db; default: the --output file with .db), resumable"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    progress: bool = PROGRESS_OPT,
    force: bool = typer.Option(False, "--force", help="replace an existing --output file that assay did not write"),
) -> None:
    """Score each answer clean and with each injection attack appended, and print per attack and
    metric the paired difference attacked − clean (bootstrap CI, Wilcoxon p, answers raised).
    Pairwise methods (dice): the attack goes into the first answer of each pair."""
    if method not in item_methods():
        raise typer.BadParameter(f"unknown method {method}; known: {', '.join(item_methods())}")
    check_output(out, inputs=[data, store or out.with_suffix(".db")], force=force, option="--output")
    items = load_items(data, limit=limit).items
    if dry_run:
        chosen = select_attacks(list(attack))
        est = estimate(items, method)
        console.print(f"dry run: {len(items)} answer(s) × ({len(chosen)} attack(s) + clean) → ≈"
                      f"{est.calls * (len(chosen) + 1)} judge calls, ≈{est.prompt_tokens * (len(chosen) + 1)} prompt "
                      "tokens; call no judge, write nothing")
        return
    runner = runner_config(concurrency, budget, timeout, retries, progress=progress)
    result = asyncio.run(ainjection_audit(items, method, judge, attacks=list(attack), store=store or
                                          out.with_suffix(".db"), runner=runner, seed=seed, resamples=resamples,
                                          judge_options=parse_options(judge_opt), guard=guard))
    attacked = f"{result['signature']['n']} answer(s)" + (" attacked as answer A of their pair"
                                                          if result.get("attacked_side") else "")
    table = Table(title=f"injection audit · {method} · {attacked} · guard {guard}")
    for column in ("attack", "metric", "clean", "attacked", "Δ", "95% CI", "Wilcoxon p", "raised", "lowered", "n",
                   "unscored"):
        table.add_column(column, justify="left" if column in ("attack", "metric") else "right")

    def f(value: float | None, signed: bool = False) -> str:
        return "—" if value is None else f"{value:+.3f}" if signed else f"{value:.3f}"

    for row in result["rows"]:
        ci = f"[{row['delta_ci'][0]:+.2f}, {row['delta_ci'][1]:+.2f}]" if row["delta_ci"] else "—"
        p = "—" if row["wilcoxon_p"] is None else f"{row['wilcoxon_p']:.2g}"
        table.add_row(row["attack"], row["metric"], f(row["clean_mean"]), f(row["attacked_mean"]),
                      f(row["mean_delta"], True), ci, p, str(row["raised"]), str(row["lowered"]), str(row["n"]),
                      str(row["unscored"]))
    console.print(table)
    console.print(result["signature"]["line"])
    console.print(f"wrote {write_meta(result, out)}")
