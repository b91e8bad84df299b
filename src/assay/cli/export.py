"""`assay export RUN.db`."""

from __future__ import annotations

import io
import os
from pathlib import Path

import typer

from assay.cli.kit import check_phoenix_url, console, err_console
from assay.core._files import check_output
from assay.core.errors import ConfigError
from assay.engine.results import EvalResult
from assay.exchange.export import default_output, export_run, format_for
from assay.store import Store

EXIT_PIPE = 141
"""Exit status when the reader of ``-o -`` closed the pipe early (128 + SIGPIPE, as a shell reports it)."""


def export(
    run: Path = typer.Argument(..., help="run store (.db) written by `assay eval`"),
    fmt: str | None = typer.Option(None, "--format", "-f", help="jsonl, json, csv or parquet (default: from the "
                                                                "--output file's extension; needed for any other "
                                                                "extension; jsonl without -o)"),
    output: str | None = typer.Option(None, "--output", "-o", metavar="FILE",
                                      help="the file to write, e.g. scores.csv, or - for standard output (./- is a "
                                           "file named -; default: the store's name, the run id and the format, "
                                           "beside the store)"),
    run_id: str | None = typer.Option(None, "--run",
                                      help="which run of the store (an id or its prefix; default: the latest)"),
    compact: bool = typer.Option(False, "--compact", help="only case fields, query, response, contexts and the "
                                                          "aggregate score (dashboards); default: everything"),
    annotations: bool = typer.Option(False, "--annotations", help="add the reviewers' annotations from `assay ui` "
                                                                  "(latest value per reviewer and address)"),
    force: bool = typer.Option(False, "--force", help="replace an existing output file that assay did not write "
                                                      "(never a store or an input)"),
    otel: bool = typer.Option(False, "--otel", help="send the run's verdicts as OpenTelemetry gen_ai.evaluation.result "
                                                    "events (and assay's spans) to OTEL_EXPORTER_OTLP_ENDPOINT; "
                                                    "no file unless --output is given"),
    phoenix: str | None = typer.Option(None, "--phoenix", metavar="URL",
                                       help="write the scores and failed verdicts as span annotations to this "
                                            "Phoenix server (items read from its traces); no file unless --output"),
    alignment: Path | None = typer.Option(None, "--alignment", metavar="FILE",
                                          help="alignment file from assay align: add the "
                                               "calibrated probabilities, the decisions at its tie threshold and the "
                                               "aligned score beside the raw values"),
    gate: list[str] | None = typer.Option(None, "--gate", metavar="METRIC=MIN",
                                          help="label events and annotations pass/fail: the metric passes at or "
                                               "above MIN (repeatable)"),
) -> None:
    """Export one run's results, with the evidence behind every score."""
    to_stdout = output == "-"  # the option's own text: ./- names a file
    output_path = Path(output) if output is not None and not to_stdout else None
    if to_stdout:  # -o -: the rows on standard output (jsonl unless --format says json or csv)
        if otel or phoenix:
            raise ConfigError("-o - with --otel or --phoenix: what they sent is said on standard output too; write "
                              "the export to a file (-o scores.jsonl)")
        if fmt == "parquet":
            raise ConfigError("-o -: parquet is binary and goes to a file (-o scores.parquet); on standard output "
                              "give --format jsonl, json or csv")
    if output_path is not None:
        # a store (or a directory) is refused before its name is read
        check_output(output_path, inputs=[run], force=True)
    chosen = format_for(output_path, fmt, name=output)
    check_phoenix_url(phoenix)  # options first, then the store
    if gate:  # its syntax and finite minimum here, its metrics against the run's once the store is open
        from assay.exchange.finish import check_delivery

        check_delivery(otel=otel, phoenix=phoenix, gate=gate)
    store = Store(run, create=False)
    rid = store.resolve_run(run_id)
    fitted = None
    if alignment is not None:
        from assay.analysis.align import load_for

        fitted = load_for(alignment, store, rid)
    if otel or phoenix:
        from assay.cli.kit import send_run

        if not send_run(store, run, rid, otel=otel, phoenix=phoenix, gate=gate):
            raise typer.Exit(1)
        if output_path is None and not to_stdout:
            return
    if to_stdout:
        rows = io.BytesIO()
        count = export_run(store, rid, rows, chosen, compact=compact, annotations=annotations, alignment=fitted)
        write_stdout(rows.getvalue())
        err_console.print(f"wrote {count} row(s) of run {rid} to standard output", highlight=False, soft_wrap=True)
    else:
        out = output_path or default_output(run, rid, chosen)
        source = store.run(rid).manifest.get("data_source")
        check_output(out, inputs=[run, source, alignment], force=force)
        count = export_run(store, rid, out, chosen, compact=compact, annotations=annotations, alignment=fitted)
        console.print(f"wrote {count} row(s) of run {rid} to {out}")
    caveat = EvalResult(store, rid).caveat()
    if caveat:
        err_console.print(f"note: {caveat}", highlight=False, soft_wrap=True)


def write_stdout(data: bytes) -> None:
    """All of ``data`` on standard output, or: a reader that closed the pipe early (``| head``)
    ends the command with 141 (128 + SIGPIPE, what a shell reports for a killed writer) and no
    "wrote" line; an output that cannot be written (closed, full) is one line, exit 2."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(1, view):]
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing left for Python to flush into the closed pipe
        raise typer.Exit(EXIT_PIPE) from None
    except OSError as exc:
        raise ConfigError(f"-o -: cannot write to standard output ({exc.strerror or exc})") from None
