"""`assay meta KIND PATH --method M ...`: agreement of automatic scores with human labels."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from assay.analysis.meta import ameta, write_meta
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
from assay.core._files import check_output, same_file
from assay.core.errors import ConfigError
from assay.core.registry import build_method, item_methods
from assay.data.datasets.adapters import adapters, read_labelled
from assay.engine import estimate


def meta(
    kind: str = typer.Argument(..., help=f"dataset adapter: {', '.join(sorted(adapters()))}"),
    path: Path = typer.Argument(..., help="the labelled file, in its source's own format"),
    method: list[str] = typer.Option(..., "--method", "-m", help=f"repeatable: {', '.join(item_methods())}"),
    judge: str = typer.Option("llamacpp/default", "--judge", "-j", envvar="ASSAY_JUDGE",
                              help="the judge model, e.g. llamacpp/default or openai/gpt-4o-mini"),
    judge_opt: list[str] | None = typer.Option(None, "--judge-opt", help="backend option key=value (repeatable)"),
    method_opt: list[str] | None = typer.Option(None, "--method-opt", help="METHOD.key=value (repeatable), e.g. "
                                                "dece.domain=legal, dece.beta=1, geval.weighting=none"),
    detail: list[str] | None = typer.Option(None, "--detail", help="METHOD.FIELD (repeatable): also correlate a "
                                            "number the method keeps in its results' details, e.g. "
                                            "dece.f_beta_hard (the greedy verdicts of a soft run's calls)"),
    limit: int | None = typer.Option(None, "--limit", min=1, help="a reproducible random subset of N labelled units"),
    seed: int = typer.Option(0, "--seed", help="seed of the subset and of the bootstrap"),
    resamples: int = typer.Option(1000, "--resamples", min=1,
                                  help="bootstrap resamples for the Pearson CI (at most 1,000,000)"),
    out: Path = typer.Option(Path("meta.json"), "--output", "-o", help="where meta.json goes"),
    store: Path | None = typer.Option(None, "--store",
                                      help="run store (.db; default: the --output file with .db), resumable"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    progress: bool = PROGRESS_OPT,
    versus: str | None = typer.Option(None, "--versus", help="metric the others are compared with, e.g. "
                                      "dece.f_beta or rougeL (default: the primary metric of the reference "
                                      "method, DeCE, when it runs; else of the first method)"),
    verdict_delta: float = typer.Option(0.15, "--verdict-delta", min=0.0, max=1.0,
                                        help="on a pairwise set, a pointwise metric also gives verdicts: Tie when "
                                             "the two answers' scores differ by less than this share of the "
                                             "metric's range"),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file that assay did not write"),
) -> None:
    """Run methods on a human-labelled set and print how well each agrees with people: correlation of
    each automatic score with each human label, with CIs, p-values, n and unscored counts."""
    unknown = [m for m in method if m not in item_methods()]
    if unknown:
        raise typer.BadParameter(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(item_methods())}")
    method_options: dict[str, dict[str, Any]] = {}
    for key, value in parse_options(method_opt, "--method-opt").items():
        name, dot, option = key.partition(".")
        if not dot or not option or name not in method:
            raise typer.BadParameter(f"--method-opt {key}={value}: expected METHOD.key=value with METHOD one of "
                                     f"the --method values ({', '.join(method)})")
        method_options.setdefault(name, {})[option] = value
    detail_metrics: dict[str, tuple[str, ...]] = {}
    for entry in detail or []:
        name, dot, field = entry.partition(".")
        if not dot or not field or name not in method:
            raise typer.BadParameter(f"--detail {entry}: expected METHOD.FIELD with METHOD one of the --method "
                                     f"values ({', '.join(method)})")
        detail_metrics[name] = (*detail_metrics.get(name, ()), field)
    check_output(out, inputs=[path, store or out.with_suffix(".db")], force=force, option="--output")
    if same_file(store or out.with_suffix(".db"), path):
        raise ConfigError(f"--store {store or out.with_suffix('.db')}: that is the labelled input ({path}); the "
                          "meta-evaluation's runs go to a store of their own — choose another --store")
    for name in method:  # a bad option stops here, before the data is read or any judge is called
        build_method(name, **method_options.get(name, {}))
    metaset = read_labelled(kind, path).subset(limit, seed)
    console.print(f"{kind}: {len(metaset.units)} labelled unit(s), {len(metaset.items)} answer(s) to score"
                  f"{' (pairwise)' if metaset.pairwise else ''}")
    if dry_run:
        for name in method:
            est = estimate(metaset.items, name, **method_options.get(name, {}))
            console.print(f"dry run: {name} → ≈{est.calls} judge calls, ≈{est.prompt_tokens} prompt + "
                          f"≈{est.completion_tokens} completion tokens")
        console.print("call no judge, write nothing")
        return
    runner = runner_config(concurrency, budget, timeout, retries, progress=progress)
    result = asyncio.run(ameta(metaset, list(method), judge, store=store or out.with_suffix(".db"), seed=seed,
                               resamples=resamples, runner=runner, versus=versus, verdict_delta=verdict_delta,
                               method_options=method_options, judge_options=parse_options(judge_opt),
                               detail_metrics=detail_metrics or None))
    table = Table(title=f"agreement with human labels · {kind}")
    for column in ("method", "human label", "Pearson r", "95% CI", "p", "Spearman", "Kendall", "agreement", "n",
                   "unscored"):
        table.add_column(column, justify="left" if column in ("method", "human label") else "right")

    def f(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    for row in result["rows"]:
        ci = f"[{row['pearson_ci'][0]:.2f}, {row['pearson_ci'][1]:.2f}]" if row["pearson_ci"] else "—"
        p = "—" if row["pearson_p"] is None else f"{row['pearson_p']:.2g}"
        table.add_row(row["method"], row["human_label"], f(row["pearson"]), ci, p, f(row["spearman"]),
                      f(row["kendall"]), f(row.get("agreement")), str(row["n"]), str(row["unscored"]))
    console.print(table)
    for name, agreement in (result.get("verdict_agreement") or {}).items():
        if agreement:
            hard, soft = agreement["by_decision"]["hard"], agreement["by_decision"]["soft"]
            decisions = ""
            if hard["n"] + soft["n"]:
                decisions = (f", hard decisions {hard['n']} (accuracy {f(hard['accuracy'])}), soft {soft['n']} "
                             f"(accuracy {f(soft['accuracy'])}), ECE {f(agreement['ece'])}")
            console.print(f"{name} verdicts vs the humans' majority ({agreement['n']} pairs): accuracy "
                          f"{agreement['accuracy']:.3f}, Cohen's κ {f(agreement['cohen_kappa'])}{decisions}; "
                          f"confusion (human → judge) {agreement['confusion']}", soft_wrap=True)
    for row in result["human_agreement"]:
        if row["alpha_interval"] is not None:
            console.print(f"annotators among themselves · {row['human_label']}: Krippendorff α (interval) "
                          f"{row['alpha_interval']:.3f}, Pearson r 1st vs 2nd {f(row['pearson_1v2'])} "
                          f"over {row['units']} unit(s)")
    for row in (result.get("system_ranking") or {}).get("rows", []):
        if row["kendall_tau"] is not None:
            console.print(f"system level · {row['method']} vs humans on {row['human_label']}: Kendall τ "
                          f"{row['kendall_tau']:.2f} (p {row['p']:.2g}) over {row['systems']} systems")
    if result["comparisons"]:
        versus_table = Table(title=f"Δ Pearson r: {result['comparisons'][0]['versus']} minus each metric "
                                   "(paired bootstrap over units)")
        for column in ("metric", "human label", "r ref", "r metric", "Δr", "95% CI", "boot p", "n"):
            versus_table.add_column(column, justify="left" if column in ("metric", "human label") else "right")
        for row in result["comparisons"]:
            ci = f"[{row['delta_ci'][0]:+.2f}, {row['delta_ci'][1]:+.2f}]" if row["delta_ci"] else "—"
            delta = "—" if row["delta"] is None else f"{row['delta']:+.3f}"
            p_boot = "—" if row["p_boot"] is None else f"{row['p_boot']:.2g}"
            versus_table.add_row(row["method"], row["human_label"], f(row["r_versus"]), f(row["r_method"]), delta,
                                 ci, p_boot, str(row["n"]))
        console.print(versus_table)
    console.print(result["signature"]["line"])
    console.print(f"wrote {write_meta(result, out)}")
