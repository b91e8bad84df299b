"""`assay demo`: DeCE on a few bundled answers with the embedded judge — each answer's scores and
the verdicts behind them printed as it finishes, then the HTML report."""

from __future__ import annotations

import asyncio
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from assay.cli.eval import BUDGET_OPT, CONCURRENCY_OPT, RETRIES_OPT, TIMEOUT_OPT, _dry_run, runner_config
from assay.cli.kit import console, print_summary
from assay.core._files import check_output
from assay.core.protocols import presentation
from assay.core.registry import method_class
from assay.data import load_items
from assay.engine import aevaluate

DEFAULT_ANSWERS = 3
"""Three answers to one question (right, a wrong figure, incomplete): their criteria are extracted
once, so the first scores come within about two minutes on 2 CPU cores."""


def examples_path() -> Path:
    """The bundled example set (package data)."""
    return Path(str(resources.files("assay").joinpath("examples/dece_examples.jsonl")))


def demo(
    judge: str = typer.Option("llamacpp/default", "--judge", "-j", envvar="ASSAY_JUDGE",
                              help="the judge (default: the embedded model, installed by `assay model install`)"),
    store: Path = typer.Option(Path("demo-run.db"), "--store", help="the run store of the demo (a re-run is instant)"),
    report_path: Path = typer.Option(Path("demo-report.html"), "--output", "-o", "--report",
                                           help="the HTML report to write"),
    all_: bool = typer.Option(False, "--all", help="all 14 bundled answers (2.5-15 minutes on 2 CPU cores, by CPU; "
                                                   "with --dry-run, the estimate for this machine)"),
    limit: int | None = typer.Option(None, "--limit", help="the first N bundled answers"),
    concurrency: int | None = CONCURRENCY_OPT,
    budget: int | None = BUDGET_OPT,
    timeout: float = TIMEOUT_OPT,
    retries: int = RETRIES_OPT,
    dry_run: bool = typer.Option(False, "--dry-run", help="estimate the judge calls and time; call no judge"),
    force: bool = typer.Option(False, "--force", help="replace an existing report file that assay did not write "
                                                      "(never a store or an input)"),
) -> None:
    """Score three bundled answers with DeCE and show the verdicts behind each score."""
    if not dry_run:  # before anything is read or run: the report never replaces a store, a script or a file of yours
        script = judge.split("/", 1)[1] if judge.startswith("scripted/") else None
        check_output(report_path, inputs=[store, script], force=force)
    items = load_items(examples_path()).items
    if not all_:
        items = items[: limit or DEFAULT_ANSWERS]
    if dry_run:
        _dry_run(items, "dece", {}, None, None, judge)
        return
    explain = presentation(method_class("dece")).explain
    console.print(f"DeCE on {len(items)} bundled answer(s) with {judge}: the judge lists what a right answer "
                  "must cover (criteria) and what this answer claims (elements), then checks each.", soft_wrap=True)

    def show(unit: Any, result: Any) -> None:
        item = unit.items[0]
        scores = ", ".join(f"{m} {'—' if v is None else f'{v:.2f}'}" for m, v in result.scores.items())
        head = f"{item.id} · {item.system}" if item.system else item.id
        preview = textwrap.shorten(item.response, 160, placeholder=" …")  # whole words, never "a mun"
        console.print(f"\n[bold]{escape(head)}[/bold]: {escape(preview)}")
        console.print(f"  {scores}")
        for line in explain(result.scores, result.details)[:8]:
            console.print(f"  {escape(line)}", soft_wrap=True)
        for u in result.unscored:
            console.print(f"  [yellow]unscored {escape(str(u.metric))}: {escape(u.reason)}[/yellow]", soft_wrap=True)

    result = asyncio.run(aevaluate(items, "dece", judge, store=store, resume=True, on_result=show,
                                   runner=runner_config(concurrency, budget, timeout, retries, progress=False),
                                   data_source="bundled examples (dece_examples.jsonl)"))
    console.print()
    print_summary(result.summary(), result.metrics)
    path = result.report(report_path)
    console.print(f"report: {path}  ·  run store: {store}  ·  next: assay ui {store}", soft_wrap=True)
