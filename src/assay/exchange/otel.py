"""A run's verdicts as OpenTelemetry: ``gen_ai.evaluation.result`` events and assay's spans, over
OTLP/HTTP (``assay eval ... --otel``, ``assay export RUN.db --otel``).

Conventions followed: the OpenTelemetry semantic conventions :data:`SEMCONV_VERSION` (GenAI
events, status *development*), the schema URL of every event and span. For every scored answer,
one event per metric, emitted through the OpenTelemetry Logs API as an event (a log record with
``event_name``), as pydantic_evals does:

* ``gen_ai.evaluation.name`` — the metric; ``gen_ai.evaluation.score.value`` — its score;
  ``gen_ai.evaluation.score.label`` — ``pass`` / ``fail`` when a gate (``--gate METRIC=MIN``)
  applies to the metric; ``gen_ai.evaluation.explanation`` — the failed verdicts with their
  reasons and quoted evidence (or, for an Unscored metric, why); ``error.type`` — for an Unscored
  metric: ``judge_call_failed`` or ``unscored``; ``gen_ai.response.id`` — the item's
  ``metadata.response_id`` or, when the evaluated span is not known, the item id.
* Parent: the evaluated span when the item carries its ids (``metadata.trace_id`` and
  ``metadata.span_id``, as items read from traces do); else assay's span of that item.
* assay's own spans: one per run (``assay eval METHOD``), one per evaluated item, one per judge
  call (``chat MODEL``, with ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
  ``output_tokens`` and ``assay.cache_hit``: the call was answered from the store's cache, made
  before this run started). The item span links to the evaluated span.

Everything is read from the store after the run: an endpoint that is down or answers errors
costs at most the export timeout per signal and never changes a score; the export can be
repeated with ``assay export RUN.db --otel``.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from assay.core.errors import ConfigError
from assay.core.types import CALL_FAILED
from assay.store import Store

SEMCONV_VERSION = "1.44.0"
"""The OpenTelemetry semantic conventions version the events and spans follow (its GenAI
``gen_ai.evaluation.result`` event is in development status)."""
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

EVENT_NAME = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"

EXPLANATION_LIMIT = 4000
"""Characters of an explanation (backends cap attribute sizes; the store keeps everything)."""
DEFAULT_TIMEOUT_S = 5.0
"""Seconds per signal when ``OTEL_EXPORTER_OTLP_TIMEOUT`` is not set."""
_HEX = re.compile(r"^[0-9a-f]+$")


@dataclass(frozen=True)
class Verdict:
    """One failed (or undecided) verdict of a result, with its address in the result."""

    path: str | None
    """Address inside the unit's result (``criteria[2]``), as ``assay ui`` annotations use."""
    label: str
    text: str


@dataclass
class EvaluationEvent:
    """One ``gen_ai.evaluation.result`` event, before it is emitted."""

    attributes: dict[str, Any]
    body: str
    timestamp: float
    trace_id: str | None = None
    span_id: str | None = None
    unit_key: str = ""
    warn: bool = False


@dataclass
class ExportReport:
    endpoint: str = ""
    events: int = 0
    spans: int = 0
    failures: list[str] = field(default_factory=list)
    skipped: int = 0
    off: list[str] = field(default_factory=list)
    """Signals switched off by the standard ``OTEL_TRACES_EXPORTER`` / ``OTEL_LOGS_EXPORTER=none``."""

    def line(self) -> str:
        sent = f"{self.events} evaluation event(s) and {self.spans} span(s)"
        skipped = f"; {self.skipped} unit(s) that are not single answers skipped" if self.skipped else ""
        skipped += f"; not sent: {', '.join(self.off)}" if self.off else ""
        if not self.failures:
            return f"otel: sent {sent} to {self.endpoint}{skipped}"
        return f"otel: not all sent to {self.endpoint} ({'; '.join(self.failures)}); sent {sent}{skipped}"


def parse_gates(values: list[str] | None, metrics: Iterable[str] | None = None) -> dict[str, float]:
    """``METRIC=MIN`` (repeatable, or comma-separated): a score at or above MIN passes. MIN is a
    finite number; with ``metrics`` (the run's), METRIC must be one of them."""
    gates: dict[str, float] = {}
    known = list(metrics) if metrics is not None else None
    for value in values or []:
        for part in value.split(","):
            if not part.strip():
                continue
            metric, sep, threshold = part.partition("=")
            try:
                if not sep or not metric.strip():
                    raise ValueError
                minimum = float(threshold)
            except ValueError:
                raise ConfigError(f"--gate {part.strip()!r}: write METRIC=MIN, e.g. f_beta=0.7") from None
            if not math.isfinite(minimum):
                raise ConfigError(f"--gate {part.strip()!r}: MIN must be a finite number, e.g. f_beta=0.7")
            if known is not None and metric.strip() not in known:
                raise ConfigError(f"--gate {part.strip()!r}: this run has no metric {metric.strip()!r}; its "
                                  f"metrics: {', '.join(known)}")
            gates[metric.strip()] = minimum
    return gates


def _ids(metadata: dict[str, Any]) -> tuple[str | None, str | None]:
    trace_id = str(metadata.get("trace_id") or "").lower().removeprefix("0x")
    span_id = str(metadata.get("span_id") or "").lower().removeprefix("0x")
    if len(trace_id) == 32 and len(span_id) == 16 and _HEX.match(trace_id) and _HEX.match(span_id) \
            and int(trace_id, 16) and int(span_id, 16):
        return trace_id, span_id
    return None, None


def _short(text: Any, limit: int = 300) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


VERDICT_FIELDS = {"satisfied": "not met", "supported": "not supported"}
"""Verdict fields of evidence entries (DeCE's criteria and elements), and the label of a failed one."""
TEXT_FIELDS = ("criterion", "element", "statement", "claim", "text")


def failed_verdicts(method: str, scores: dict[str, Any], details: dict[str, Any]) -> list[Verdict]:
    """The verdicts that failed or were not decided, each with its reason and quoted evidence.
    Evidence entries of the details (lists of verdicts such as DeCE's ``criteria`` and
    ``elements``) are read directly; for other methods, the failed lines of the method's own
    explanation (:meth:`assay.core.protocols.Presents.explain`)."""
    out = []
    for key, entries in details.items():
        if not isinstance(entries, list):
            continue
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            flag_name = next((name for name in VERDICT_FIELDS if name in entry), None)
            if flag_name is None:
                continue
            flag = entry[flag_name]
            try:
                if flag is not None and float(flag) >= 0.5:
                    continue
            except (TypeError, ValueError):
                continue
            label = "no verdict" if flag is None else VERDICT_FIELDS[flag_name]
            subject = next((entry[name] for name in TEXT_FIELDS if entry.get(name)), f"{key}[{index}]")
            parts = [f"{label}: {_short(subject)}"]
            if entry.get("reasoning"):
                parts.append(f"why: {_short(entry['reasoning'])}")
            if entry.get("quote"):
                parts.append(f"quote: \"{_short(entry['quote'], 200)}\"")
            if entry.get("downgraded"):
                parts.append(f"not counted: {_short(entry['downgraded'], 120)}")
            out.append(Verdict(path=f"{key}[{index}]", label=label, text=" — ".join(parts)))
    if out:
        return out
    from assay.core.protocols import run_presentation

    shown = run_presentation(method)
    lines = shown.explain(scores, details) if shown is not None else []
    return [Verdict(path=None, label="failed", text=line.lstrip("✗? ").strip()) for line in lines
            if not line.startswith("✓")]


def _error_type(reason: str) -> str:
    return "judge_call_failed" if CALL_FAILED in reason else "unscored"


def evaluation_events(store: Store, run_id: str, gates: dict[str, float] | None = None) -> list[EvaluationEvent]:
    """The run's ``gen_ai.evaluation.result`` events: for every scored answer (an item unit),
    one per metric of the method (see the module)."""
    from assay.core.protocols import run_kind

    gates = gates or {}
    run = store.run(run_id)
    cls = run_kind(run.method)
    events = []
    for result in store.results(run_id):
        if result.kind != "item":
            continue
        item = result.item
        meta = item.get("metadata") or {}
        trace_id, span_id = _ids(meta)
        response_id = meta.get("response_id") or (None if span_id else item["id"])
        names = list(dict.fromkeys([*(cls.metrics if cls is not None else ()), *result.scores]))
        unscored = {u.metric: u.model_dump() for u in result.unscored}
        verdicts = failed_verdicts(run.method, result.scores, result.details)
        explanation = "\n".join(v.text for v in verdicts)[:EXPLANATION_LIMIT]
        # which calibration map the verdicts' probabilities went through (DeCE's direct verdicts)
        maps = sorted({str(e["calibration"]) for key in ("elements", "criteria")
                       for e in (result.details.get(key) or []) if isinstance(e, dict) and e.get("calibration")})
        for metric in names:
            score = result.scores.get(metric)
            attributes: dict[str, Any] = {EVALUATION_NAME: metric}
            if score is None:
                why = unscored.get(metric) or unscored.get(None) or {"reason": "not scored"}
                reason = str(why.get("reason") or "not scored")
                attributes[ERROR_TYPE] = _error_type(reason)
                attributes[EXPLANATION] = reason[:EXPLANATION_LIMIT]
                body = f"evaluation: {metric} not scored: {_short(reason, 200)}"
            else:
                attributes[SCORE_VALUE] = float(score)
                if metric in gates:
                    attributes[SCORE_LABEL] = "pass" if float(score) >= gates[metric] else "fail"
                if explanation:
                    attributes[EXPLANATION] = explanation
                body = f"evaluation: {metric}={float(score):.4g}"
            if response_id:
                attributes[RESPONSE_ID] = str(response_id)
            attributes.update({"assay.run_id": run_id, "assay.method": run.method, "assay.item.id": str(item["id"])})
            if maps:
                attributes["assay.judge.calibration"] = ", ".join(maps)
            events.append(EvaluationEvent(attributes=attributes, body=body, timestamp=result.created_at,
                                          trace_id=trace_id, span_id=span_id, unit_key=result.key,
                                          warn=score is None))
    return events


@contextmanager
def _quiet_exporters() -> Iterator[None]:
    """The OTLP exporters log a multi-line error for each failed batch; assay says it in one line."""
    loggers = [logging.getLogger(name) for name in ("opentelemetry.exporter.otlp.proto.http",
                                                    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
                                                    "opentelemetry.exporter.otlp.proto.http._log_exporter",
                                                    "opentelemetry.sdk")]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels, strict=True):
            log.setLevel(level)


def _timeout() -> float:
    raw = os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        return float(raw) / 1000 if float(raw) > 100 else float(raw)  # the spec says milliseconds
    except ValueError:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_TIMEOUT={raw!r}: a number of milliseconds") from None


def check_protocol() -> None:
    for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                 "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"):
        value = os.environ.get(name)
        if value and value != "http/protobuf":
            raise ConfigError(f"{name}={value!r}: assay sends OTLP over HTTP (http/protobuf); point "
                              "OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318)")


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def export_otel(store: Store, run_id: str, gates: dict[str, float] | None = None) -> ExportReport:
    """Send the run's evaluation events and spans over OTLP/HTTP to the endpoint of the standard
    ``OTEL_EXPORTER_OTLP_*`` variables (default ``http://localhost:4318``). Failures are
    reported, never raised (but a bad configuration is a ConfigError)."""
    check_protocol()
    try:
        from opentelemetry import trace
        from opentelemetry._logs import SeverityNumber
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        raise ConfigError("--otel needs the OpenTelemetry SDK: pip install 'assay[otel]'") from None
    from assay._version import __version__

    events = evaluation_events(store, run_id, gates)
    run = store.run(run_id)
    results = store.results(run_id)
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "assay",
                                "service.version": __version__})
    spans_memory, logs_memory = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans_memory))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs_memory))
    tracer = tracer_provider.get_tracer("assay", __version__, schema_url=SCHEMA_URL)
    logger = logger_provider.get_logger("assay", __version__, schema_url=SCHEMA_URL)

    end = run.finished_at or max((r.created_at for r in results), default=run.created_at)
    judge = run.manifest.get("judge")
    run_span = tracer.start_span(f"assay eval {run.method}", start_time=_ns(run.created_at), attributes={
        "assay.run_id": run_id, "assay.method": run.method, "assay.run.status": run.status,
        "assay.items": len(results), "assay.store": str(store.path),
        **({"assay.judge": str(judge)} if judge else {})})
    run_context = trace.set_span_in_context(run_span)
    item_contexts: dict[str, Any] = {}
    seen_calls: set[str] = set()
    for result in results:
        meta = (result.item.get("metadata") or {}) if result.kind == "item" else {}
        trace_id, span_id = _ids(meta)
        links = []
        if trace_id and span_id:
            links.append(trace.Link(trace.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True,
                                                      trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))))
        calls = [c for c in (store.call_record(key) for key in result.call_keys) if c is not None]
        starts = [c.created_at - c.completion.latency_s for c in calls if c.created_at >= run.created_at]
        item_span = tracer.start_span(f"assay evaluate {result.key}", context=run_context, links=links,
                                      start_time=_ns(min([*starts, result.created_at])), attributes={
                                          "assay.item.id": str(result.item.get("id")), "assay.unit": result.key,
                                          "assay.status": result.status, "assay.judge_calls": len(calls)})
        item_context = trace.set_span_in_context(item_span)
        item_contexts[result.key] = item_context
        for call in calls:
            if call.key in seen_calls:
                continue
            seen_calls.add(call.key)
            completion = call.completion
            hit = call.created_at < run.created_at
            model = completion.model or str(call.request.get("model") or "") or call.backend
            start = result.created_at if hit else call.created_at - completion.latency_s
            span = tracer.start_span(f"chat {model}", context=item_context, start_time=_ns(start), attributes={
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": completion.backend or call.backend,
                "gen_ai.request.model": model, "gen_ai.response.model": completion.model or model,
                "gen_ai.usage.input_tokens": completion.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": completion.usage.completion_tokens,
                "assay.cache_hit": hit, "assay.call.key": call.key,
                "assay.cached_prompt_tokens": completion.usage.cached_prompt_tokens,
                **({"gen_ai.response.finish_reasons": [completion.finish_reason]} if completion.finish_reason else {})})
            span.end(end_time=_ns(start if hit else call.created_at))
        item_span.end(end_time=_ns(result.created_at))
    for event in events:
        if event.trace_id and event.span_id:
            parent = trace.NonRecordingSpan(trace.SpanContext(
                int(event.trace_id, 16), int(event.span_id, 16), is_remote=True,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
            context = trace.set_span_in_context(parent)
        else:
            context = item_contexts.get(event.unit_key, run_context)
        logger.emit(timestamp=_ns(event.timestamp), context=context, body=event.body, attributes=event.attributes,
                    event_name=EVENT_NAME,
                    severity_number=SeverityNumber.WARN if event.warn else SeverityNumber.INFO)
    run_span.end(end_time=_ns(max(end, run.created_at)))

    report = ExportReport(skipped=sum(1 for r in results if r.kind != "item"))
    timeout = _timeout()
    span_exporter = OTLPSpanExporter(timeout=timeout)
    log_exporter = OTLPLogExporter(timeout=timeout)
    report.endpoint = str(getattr(span_exporter, "_endpoint", "")).removesuffix("/v1/traces") or "the OTLP endpoint"
    finished_spans = list(spans_memory.get_finished_spans())
    finished_logs = list(logs_memory.get_finished_logs())
    with _quiet_exporters():
        if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() != "none":
            report.spans = _send(span_exporter, finished_spans, "spans", report)
        else:
            report.off.append("spans (OTEL_TRACES_EXPORTER=none)")
        if os.environ.get("OTEL_LOGS_EXPORTER", "").strip().lower() != "none":
            report.events = _send(log_exporter, finished_logs, "events", report)
        else:
            report.off.append("events (OTEL_LOGS_EXPORTER=none)")
    span_exporter.shutdown()
    log_exporter.shutdown()
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return report


BATCH = 512


def _send(exporter: Any, records: list[Any], what: str, report: ExportReport) -> int:
    """Export in batches; stop at the first failed batch (the endpoint is down or refuses)."""
    sent = 0
    for start in range(0, len(records), BATCH):
        batch = records[start: start + BATCH]
        try:
            outcome = exporter.export(batch)
        except Exception as exc:  # an exporter that raises (a bad URL) is a failure like any other
            report.failures.append(f"{what}: {type(exc).__name__}: {_short(exc, 160)}")
            return sent
        if getattr(outcome, "name", "") != "SUCCESS":
            hint = (" — a traces-only backend such as Phoenix takes no OTLP logs: set OTEL_LOGS_EXPORTER=none and "
                    "annotate with --phoenix" if what == "events" and report.spans else "")
            report.failures.append(f"{what} refused or unreachable ({len(records) - sent} not sent){hint}")
            return sent
        sent += len(batch)
    return sent
