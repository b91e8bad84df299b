"""`assay demo`: DeCE on the bundled examples with the embedded judge."""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path

import typer

from assay._eval import aevaluate
from assay.cli._common import console, print_summary
from assay.datasets import read_jsonl
from assay.runner import RunnerConfig
from assay.store import Store


def examples_path() -> Path:
    """The bundled example set (package data)."""
    return Path(str(resources.files("assay").joinpath("examples/dece_examples.jsonl")))


def demo(
    judge: str = typer.Option("llamacpp/default", "--judge", "-j", envvar="ASSAY_JUDGE"),
    out: Path = typer.Option(Path("demo-run.db"), "--store", help="the run store of the demo"),
    report_path: Path = typer.Option(Path("demo-report.html"), "--report"),
    limit: int | None = typer.Option(None, "--limit", help="only the first N items"),
) -> None:
    """Run DeCE on the bundled examples, print the summary and write an HTML report.

    Re-running reuses the cached judge calls, so a second demo is instant.
    """
    items = read_jsonl(examples_path())
    if limit:
        items = items[:limit]
    console.print(f"DeCE on {len(items)} bundled answers with {judge} "
                  "(the embedded 1.5B judge takes ~1 min per answer on 2 cores)")
    store = Store(out)
    result = asyncio.run(aevaluate(items, "dece", judge, store=store, runner=RunnerConfig(), resume=True,
                                   data_source="assay/examples/dece_examples.jsonl"))
    print_summary(result.summary(), result.metrics)
    path = result.report(report_path)
    console.print(f"report: {path}  ·  run store: {out}")
