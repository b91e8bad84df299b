"""`assay report RUN.db -o report.html`."""

from __future__ import annotations

from pathlib import Path

import typer

from assay.cli.kit import console, err_console
from assay.core._files import check_output
from assay.engine.results import EvalResult
from assay.store import Store
from assay.view.report import write_report


def report(
    run: Path = typer.Argument(..., help="run store (.db)"),
    output: Path = typer.Option(Path("report.html"), "--output", "-o", help="the HTML page to write"),
    run_id: str | None = typer.Option(None, "--run", help="which run of the store (an id or its prefix; "
                                                                     "default: the latest; the report lists them all)"),
    meta: Path | None = typer.Option(None, "--meta", help="meta.json from assay meta: add its agreement tables"),
    alignment: Path | None = typer.Option(None, "--alignment", metavar="FILE",
                                          help="alignment file from assay align: add the calibrated probabilities, "
                                               "aligned score and tie-threshold decisions beside the raw values, "
                                               "and its reliability, grade and weight plots"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write "
                                                      "(never a store or an input)"),
) -> None:
    """Write a self-contained HTML report of a run."""
    store = Store(run, create=False)
    rid = store.resolve_run(run_id)
    source = store.run(rid).manifest.get("data_source")
    fitted = None
    if alignment is not None:  # refused (one line) for a run of another method, prompt or judge
        from assay.analysis.align import load_for

        fitted = load_for(alignment, store, rid)
    check_output(output, inputs=[run, meta, source, alignment], force=force)
    result = EvalResult(store, rid)
    path = write_report(result, output, meta, fitted)
    console.print(f"report written to {path}")
    caveat = result.caveat()
    if caveat:
        err_console.print(f"note: {caveat}", highlight=False, soft_wrap=True)
    runs = store.list_runs()
    if len(runs) > 1 and run_id is None:
        console.print(f"the store holds {len(runs)} runs; this report is of the latest ({rid}, {runs[-1].method}) and "
                      "lists them all; report another with --run ID", soft_wrap=True)
