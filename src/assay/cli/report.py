"""`assay report RUN.db -o report.html`."""

from __future__ import annotations

from pathlib import Path

import typer

from assay.cli._common import console
from assay.report import write_report
from assay.store import Store


def report(
    run: Path = typer.Argument(..., help="run store (.db)"),
    output: Path = typer.Option(Path("report.html"), "--output", "-o"),
    run_id: str | None = typer.Option(None, "--run-id", help="which run (default: the latest)"),
    meta: Path | None = typer.Option(None, "--meta", help="meta.json from assay meta: add its agreement tables"),
) -> None:
    """Write a self-contained HTML report of a run."""
    if not run.is_file():
        raise typer.BadParameter(f"no run store at {run}")
    store = Store(run)
    path = write_report(store, store.resolve_run(run_id), output, meta)
    console.print(f"report written to {path}")
