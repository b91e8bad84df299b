"""`assay export RUN.db`."""

from __future__ import annotations

from pathlib import Path

import typer

from assay.cli._common import console
from assay.export import export_run
from assay.store import Store


def export(
    run: Path = typer.Argument(..., help="run store (.db) written by `assay eval`"),
    fmt: str = typer.Option("jsonl", "--format", "-f", help="jsonl, csv or parquet"),
    output: Path | None = typer.Option(None, "--output", "-o", help="default: RUN.<format>"),
    run_id: str | None = typer.Option(None, "--run-id", help="which run (default: the latest)"),
    compact: bool = typer.Option(False, "--compact", help="only case fields, query, response, contexts and the "
                                                          "aggregate score (dashboards); default: everything"),
) -> None:
    """Export one run's results, with the evidence behind every score."""
    if not run.is_file():
        raise typer.BadParameter(f"no run store at {run}")
    store = Store(run)
    rid = store.resolve_run(run_id)
    out = output or run.with_suffix(f".{fmt}")
    count = export_run(store, rid, out, fmt, compact=compact)
    console.print(f"wrote {count} row(s) of run {rid} to {out}")
