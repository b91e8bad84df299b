"""`assay export RUN.db`."""

from __future__ import annotations

from pathlib import Path

import typer

from assay._files import check_output
from assay.cli._common import console
from assay.export import default_output, export_run, format_for
from assay.store import Store


def export(
    run: Path = typer.Argument(..., help="run store (.db) written by `assay eval`"),
    fmt: str | None = typer.Option(None, "--format", "-f", help="jsonl, json, csv or parquet (default: from the "
                                                                "--output file's extension; jsonl without -o)"),
    output: Path | None = typer.Option(None, "--output", "-o", help="the file to write, e.g. scores.csv (default: "
                                                                    "the store's name, the run id and the format, "
                                                                    "beside the store)"),
    run_id: str | None = typer.Option(None, "--run",
                                      help="which run of the store (an id or its prefix; default: the latest)"),
    compact: bool = typer.Option(False, "--compact", help="only case fields, query, response, contexts and the "
                                                          "aggregate score (dashboards); default: everything"),
    annotations: bool = typer.Option(False, "--annotations", help="add the reviewers' annotations from `assay ui` "
                                                                  "(latest value per reviewer and address)"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write "
                                                      "(never a store or an input)"),
) -> None:
    """Export one run's results, with the evidence behind every score."""
    if output is not None:
        check_output(output, inputs=[run], force=True)  # a store (or a directory) is refused before its name is read
    chosen = format_for(output, fmt)
    store = Store(run, create=False)
    rid = store.resolve_run(run_id)
    out = output or default_output(run, rid, chosen)
    source = store.run(rid).manifest.get("data_source")
    check_output(out, inputs=[run, source], force=force)
    count = export_run(store, rid, out, chosen, compact=compact, annotations=annotations)
    console.print(f"wrote {count} row(s) of run {rid} to {out}")
