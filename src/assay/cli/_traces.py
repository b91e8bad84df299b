"""The tracing options of ``assay eval``: items from traces (Phoenix, an OTLP/JSON file) and the
verdicts out again (OpenTelemetry events, Phoenix annotations) once the run is saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from assay.cli._common import console, err_console
from assay.errors import ConfigError, InputError
from assay.types import Item

TRACE_OPTIONS: list[tuple[str, Any, Any]] = [
    ("from_phoenix", str | None, typer.Option(
        None, "--from-phoenix", rich_help_panel="Traces", envvar="ASSAY_FROM_PHOENIX", metavar="URL",
        help="read the answers from the traces of this Arize Phoenix server instead of a file (with --project)")),
    ("project", str | None, typer.Option(None, "--project", rich_help_panel="Traces", envvar="ASSAY_PROJECT",
                                         help="the Phoenix project to read (--from-phoenix)")),
    ("since", str | None, typer.Option(None, "--since", rich_help_panel="Traces",
                                       help="only traces started since: an ISO time or a "
                                                             "duration back from now (30m, 6h, 2d)")),
    ("from_traces", Path | None, typer.Option(None, "--from-traces", rich_help_panel="Traces", metavar="FILE",
                                              help="read the answers from an OTLP/JSON trace export (OpenInference "
                                                   "spans) instead of a data file")),
    ("phoenix_annotate", bool, typer.Option(False, "--phoenix-annotate", rich_help_panel="Traces",
                                            envvar="ASSAY_PHOENIX_ANNOTATE",
                                            help="write each score and failed verdict back to the Phoenix of "
                                                 "--from-phoenix as span annotations")),
    ("otel", bool, typer.Option(False, "--otel", rich_help_panel="Traces", envvar="ASSAY_OTEL",
                                help="send every verdict as an OpenTelemetry event to OTEL_EXPORTER_OTLP_ENDPOINT")),
    ("gate", list[str] | None, typer.Option(None, "--gate", rich_help_panel="Traces", metavar="METRIC=MIN",
                                            help="label events and annotations pass/fail: the metric passes at or "
                                                 "above MIN (repeatable)")),
]
TRACE_NAMES = {name for name, _, _ in TRACE_OPTIONS}


def load_items(data: Path | None, options: dict[str, Any], method: str, method_options: dict[str, Any],
               limit: int | None) -> tuple[list[Item], list[str], str]:
    """The items of DATA, of ``--from-phoenix`` or of ``--from-traces``: (items, notes, source).
    Traces that give no item, and items the method cannot evaluate, are reported and left out."""
    from assay.datasets import input_notes, read_items
    from assay.otel import check_protocol, parse_gates

    parse_gates(options["gate"])  # a bad --gate stops here, before the run
    if options["otel"]:
        check_protocol()
    sources = [s for s in (data, options["from_phoenix"], options["from_traces"]) if s is not None]
    if not sources:
        raise ConfigError("Missing argument 'data': the answers to score (a file), or --from-phoenix URL, or "
                          "--from-traces FILE")
    if len(sources) > 1:
        raise ConfigError("give one source of answers: a DATA file, --from-phoenix URL or --from-traces FILE")
    if options["phoenix_annotate"] and not options["from_phoenix"]:
        raise ConfigError("--phoenix-annotate writes back to the Phoenix of --from-phoenix; for a saved run use "
                          "assay export RUN.db --phoenix URL")
    if data is not None:
        if options["project"] or options["since"]:
            raise ConfigError("--project and --since go with --from-phoenix")
        items = read_items(data)
        return items[:limit] if limit is not None else items, input_notes(str(data)), str(data)
    from assay.traces import items_from_spans, read_trace_file

    if options["from_phoenix"]:
        from assay.phoenix import parse_since, read_phoenix_spans

        if not options["project"]:
            raise ConfigError("--from-phoenix needs --project NAME (the Phoenix project to read)")
        url, project = options["from_phoenix"].rstrip("/"), options["project"]
        spans = read_phoenix_spans(url, project, since=parse_since(options["since"]), limit=limit)
        source = f"{url}/projects/{project}"
    else:
        spans = read_trace_file(options["from_traces"])
        source = str(options["from_traces"])
    items, problems = items_from_spans(spans, source=source)
    if limit is not None:
        items = items[:limit]
    from assay.registry import build_method

    checker = build_method(method, **method_options)
    kept = []
    for item in items:
        reason = checker.check_item(item)
        if reason:
            problems.append(f"trace {item.metadata.get('trace_id')} (span {item.id}): {reason}")
        else:
            kept.append(item)
    for line in problems:
        err_console.print(f"skipped {line}", highlight=False, soft_wrap=True)
    if not kept:
        raise InputError(f"no trace gives an item {method} can evaluate ({len(problems)} skipped)", source=source)
    notes = [f"{len(kept)} item(s) from {len(kept) + len(problems)} trace(s)"]
    if problems:
        notes.append(f"{len(problems)} trace(s) skipped")
    return kept, notes, source


def after_run(store_path: Path, run_id: str, options: dict[str, Any]) -> None:
    """The verdicts out, once the run is saved: failures are reported, never fatal (the scores
    are in the store and ``assay export`` sends them again)."""
    if not (options["otel"] or options["phoenix_annotate"]):
        return
    from assay.store import Store

    url = options["from_phoenix"].rstrip("/") if options["phoenix_annotate"] else None
    send_run(Store(store_path, create=False), store_path, run_id, otel=options["otel"], phoenix=url,
             gate=options["gate"])


def send_run(store: Any, store_path: Path, run_id: str, *, otel: bool, phoenix: str | None,
             gate: list[str] | None) -> bool:
    """Send a saved run's verdicts as OpenTelemetry events and/or Phoenix annotations, one line
    each; False when something was not delivered (it can be sent again from the store)."""
    from assay.otel import check_protocol, parse_gates

    gates = parse_gates(gate)
    if phoenix is not None and not phoenix.startswith(("http://", "https://")):
        raise ConfigError(f"--phoenix {phoenix!r}: a URL such as http://127.0.0.1:6006")
    ok = True
    if otel:
        from assay.otel import export_otel

        check_protocol()
        report = export_otel(store, run_id, gates)
        ok = not report.failures
        (console if ok else err_console).print(
            report.line() + ("" if ok else f"; send again with: assay export {store_path} --otel"),
            highlight=False, soft_wrap=True)
    if phoenix:
        from assay.phoenix import annotate_phoenix

        url = phoenix.rstrip("/")
        try:
            count, spans = annotate_phoenix(store, run_id, url, gates)
        except ConfigError as exc:
            err_console.print(f"phoenix: {exc}; write them again with: assay export {store_path} --phoenix {url}",
                              highlight=False, soft_wrap=True)
            return False
        if count == 0:
            err_console.print(f"phoenix: no item of run {run_id} carries a span id (items read with --from-phoenix "
                              "or --from-traces do); nothing written", highlight=False, soft_wrap=True)
            return False
        console.print(f"phoenix: {count} annotation(s) on {spans} span(s) at {url} (run {run_id})",
                      highlight=False, soft_wrap=True)
    return ok
