"""Items from traces: OpenInference spans (read from Arize Phoenix's REST API, or an OTLP/JSON
export file) made into assay items.

The rules, so that a reader can check an item against its trace:

* One item per trace. The **evaluated span** is the trace's last-ending LLM span that has a
  response (its last ``llm.output_messages.N.message.content``, else ``output.value``); a trace
  without an LLM span uses its root span when that has both ``input.value`` and ``output.value``.
* **query**: the root span's ``input.value`` when the root is not the evaluated span (the user's
  question to the pipeline, before any prompt was built around it); else the last ``user``
  message of the LLM span's ``llm.input_messages``; else its ``input.value``.
* **contexts**: the documents (``retrieval.documents.N.document.content`` and ``.id``) of the
  trace's RETRIEVER spans that started before the evaluated span, in order.
* **reference**: ``reference`` in the OpenInference ``metadata`` attribute (a JSON object) of the
  evaluated span or one of its ancestors; other keys of it go to the item's ``metadata``.
* **id** is the evaluated span's id; ``metadata`` keeps ``trace_id``, ``span_id``, ``span_name``,
  ``model`` and ``session_id``: the ids let ``--otel`` parent each evaluation event to the span
  and ``--phoenix-annotate`` annotate it.
* **sessions**: traces with the same ``session.id`` are turns of one conversation, in start
  order; each turn's earlier turns become its ``history``.

A trace that yields no query or response is reported with why, never filled in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from assay.core.errors import ConfigError, InputError
from assay.core.types import Context, Item, Turn


@dataclass
class Span:
    """One span, as both Phoenix's REST API and an OTLP/JSON export give it (attributes flat)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start: float
    end: float
    attributes: dict[str, Any] = field(default_factory=dict)


def _seconds(value: Any) -> float:
    """A start or end time as seconds: nanoseconds (OTLP), or ISO 8601 text (Phoenix)."""
    if value in (None, ""):
        return 0.0
    if isinstance(value, int | float) or (isinstance(value, str) and value.isdigit()):
        return int(value) / 1e9
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def span_from_phoenix(record: dict[str, Any]) -> Span:
    """A span of Phoenix's ``GET /v1/projects/{project}/spans``."""
    context = record.get("context") or {}
    attributes = dict(record.get("attributes") or {})
    return Span(trace_id=str(context.get("trace_id", "")), span_id=str(context.get("span_id", "")),
                parent_id=record.get("parent_id") or None, name=str(record.get("name", "")),
                kind=str(record.get("span_kind") or attributes.get("openinference.span.kind") or "UNKNOWN").upper(),
                start=_seconds(record.get("start_time")), end=_seconds(record.get("end_time")),
                attributes=attributes)


def _any_value(value: dict[str, Any]) -> Any:
    """An OTLP/JSON ``AnyValue``."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"].get("values") or [])]
    if "kvlistValue" in value:
        return {kv["key"]: _any_value(kv.get("value") or {}) for kv in value["kvlistValue"].get("values") or []}
    return None


def spans_from_otlp_json(document: dict[str, Any]) -> list[Span]:
    """The spans of one OTLP/JSON ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``)."""
    spans = []
    for resource_spans in document.get("resourceSpans") or []:
        for scope_spans in resource_spans.get("scopeSpans") or []:
            for raw in scope_spans.get("spans") or []:
                attributes = {kv["key"]: _any_value(kv.get("value") or {}) for kv in raw.get("attributes") or []}
                spans.append(Span(trace_id=str(raw.get("traceId", "")).lower(),
                                  span_id=str(raw.get("spanId", "")).lower(),
                                  parent_id=str(raw["parentSpanId"]).lower() if raw.get("parentSpanId") else None,
                                  name=str(raw.get("name", "")),
                                  kind=str(attributes.get("openinference.span.kind") or "UNKNOWN").upper(),
                                  start=_seconds(raw.get("startTimeUnixNano")),
                                  end=_seconds(raw.get("endTimeUnixNano")), attributes=attributes))
    return spans


def read_trace_file(path: Path) -> list[Span]:
    """Spans of an OTLP/JSON export: one ``ExportTraceServiceRequest`` object, or one per line
    (what the OpenTelemetry Collector's file exporter writes)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read: {exc}", source=str(path)) from None
    documents = []
    try:
        documents = [json.loads(text)]
    except json.JSONDecodeError:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"not OTLP/JSON: {exc.msg}", source=str(path), line=number) from None
    if not all(isinstance(d, dict) and "resourceSpans" in d for d in documents):
        raise InputError("not an OTLP/JSON trace export (no 'resourceSpans')", source=str(path))
    for number, document in enumerate(documents, 1):  # the export's shape, checked where it enters
        try:
            _OtlpExport.model_validate(document)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]).lstrip(".")
            message = str(error["msg"]).split(" or instance of ")[0]
            raise InputError(f"not an OTLP/JSON trace export: at {where}: {message}", source=str(path),
                             line=number if len(documents) > 1 else None) from None
    return [span for document in documents for span in spans_from_otlp_json(document)]


class _OtlpKeyValue(BaseModel):
    key: str
    value: dict[str, Any] = {}


class _OtlpSpan(BaseModel):
    traceId: str = ""
    spanId: str = ""
    parentSpanId: str | None = None
    name: str = ""
    startTimeUnixNano: str | int | None = None
    endTimeUnixNano: str | int | None = None
    attributes: list[_OtlpKeyValue] = []


class _OtlpScopeSpans(BaseModel):
    spans: list[_OtlpSpan] | None = None


class _OtlpResourceSpans(BaseModel):
    scopeSpans: list[_OtlpScopeSpans] | None = None


class _OtlpExport(BaseModel):
    """The parts of an ``ExportTraceServiceRequest`` assay reads (anything else is ignored)."""

    resourceSpans: list[_OtlpResourceSpans] | None = None


def _indexed(attributes: dict[str, Any], prefix: str, suffix: str) -> list[tuple[int, Any]]:
    """``prefix.N.suffix`` values by N (flat OpenInference lists), in index order."""
    found = []
    for key, value in attributes.items():
        if key.startswith(prefix + ".") and key.endswith("." + suffix):
            middle = key[len(prefix) + 1: -len(suffix) - 1]
            if middle.isdigit():
                found.append((int(middle), value))
    return sorted(found, key=lambda pair: pair[0])


def _messages(span: Span, which: str) -> list[tuple[str, str]]:
    roles = dict(_indexed(span.attributes, f"llm.{which}_messages", "message.role"))
    contents = _indexed(span.attributes, f"llm.{which}_messages", "message.content")
    return [(str(roles.get(n, "")), str(text)) for n, text in contents if isinstance(text, str)]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def response_of(span: Span) -> str:
    out = [text for role, text in _messages(span, "output") if role in ("assistant", "")]
    return _text(out[-1]) if out else _text(span.attributes.get("output.value"))


def _metadata(span: Span) -> dict[str, Any]:
    """The OpenInference ``metadata`` attribute: a JSON object, or flattened (``metadata.KEY``,
    as Phoenix's API gives it back)."""
    flat = {key.removeprefix("metadata."): value for key, value in span.attributes.items()
            if key.startswith("metadata.")}
    if flat:
        return flat
    raw = span.attributes.get("metadata")
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip().startswith("{"):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _documents(span: Span) -> list[Context]:
    ids = dict(_indexed(span.attributes, "retrieval.documents", "document.id"))
    return [Context(id=str(ids.get(n, "")), text=text)
            for n, text in _indexed(span.attributes, "retrieval.documents", "document.content")
            if isinstance(text, str) and text.strip()]


def items_from_spans(spans: Iterable[Span], source: str = "traces") -> tuple[list[Item], list[str]]:
    """Items from spans (see the module's rules), and one line for each trace that gave none."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    items: list[tuple[float, Item]] = []
    problems = []
    for trace_id, group in sorted(traces.items(), key=lambda t: min(s.start for s in t[1])):
        by_id = {s.span_id: s for s in group}
        roots = [s for s in group if not s.parent_id or s.parent_id not in by_id]
        root = min(roots, key=lambda s: s.start) if roots else None
        llms = [s for s in group if s.kind == "LLM" and response_of(s)]
        if llms:
            evaluated = max(llms, key=lambda s: (s.end, s.start))
        elif root is not None and _text(root.attributes.get("input.value")) and response_of(root):
            evaluated = root
        else:
            problems.append(f"trace {trace_id}: no LLM span with a response (spans: "
                            f"{', '.join(f'{s.name} [{s.kind}]' for s in group[:6])})")
            continue
        users = [text for role, text in _messages(evaluated, "input") if role == "user"]
        query = ""
        if root is not None and root is not evaluated:
            query = _text(root.attributes.get("input.value"))
        query = query or (_text(users[-1]) if users else "") or _text(evaluated.attributes.get("input.value"))
        if not query:
            problems.append(f"trace {trace_id}: span {evaluated.span_id} ({evaluated.name}) has no query "
                            "(no input.value on the root span, no user message on the LLM span)")
            continue
        retrievers = sorted((s for s in group if s.kind == "RETRIEVER"), key=lambda s: s.start)
        contexts = [doc for s in retrievers if s.start <= evaluated.start for doc in _documents(s)]
        lineage: list[Span] = []
        cursor: Span | None = evaluated
        while cursor is not None and len(lineage) < 64:
            lineage.append(cursor)
            cursor = by_id.get(cursor.parent_id or "")
        meta: dict[str, Any] = {}
        for span in reversed(lineage):  # the evaluated span's own metadata wins over its ancestors'
            meta.update(_metadata(span))
        reference = meta.pop("reference", None)
        session = next((s.attributes.get("session.id") for s in lineage if s.attributes.get("session.id")), None)
        meta.update({"trace_id": trace_id, "span_id": evaluated.span_id, "span_name": evaluated.name,
                     "source": source})
        model = evaluated.attributes.get("llm.model_name")
        if model:
            meta["model"] = model
        if session:
            meta["session_id"] = str(session)
        item = Item.model_validate({"id": evaluated.span_id, "query": query, "response": response_of(evaluated),
                                    "contexts": contexts, "metadata": meta,
                                    "reference": reference if isinstance(reference, str | dict) else None})
        items.append((evaluated.start, item))
    items.sort(key=lambda pair: pair[0])
    ordered = [item for _, item in items]
    _add_history(ordered)
    return ordered, problems


def _add_history(items: list[Item]) -> None:
    """Turns of one session (same ``session_id``), in start order: each gets the earlier turns."""
    earlier: dict[str, list[Turn]] = {}
    for item in items:
        session = item.metadata.get("session_id")
        if not session:
            continue
        turns = earlier.setdefault(session, [])
        item.metadata.setdefault("conversation_id", session)
        if not item.history:
            item.history = list(turns)
        turns += [Turn(role="user", content=item.query), Turn(role="assistant", content=item.response)]


# Phoenix's REST API (``GET /v1/projects/{project}/spans``, what its client ``arize-phoenix-client``
# calls), read with httpx: ``import phoenix.client`` beside the server loads the whole server first.


def phoenix_client(url: str) -> Any:
    """An httpx client of the Phoenix at ``url`` (``PHOENIX_API_KEY`` as its bearer token)."""
    import httpx

    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--from-phoenix / --phoenix {url!r}: a URL such as http://127.0.0.1:6006")
    headers = {"accept": "application/json"}
    key = os.environ.get("PHOENIX_API_KEY")
    if key:
        headers["authorization"] = f"Bearer {key}"
    return httpx.Client(base_url=url.rstrip("/") + "/", headers=headers, timeout=30.0)


def _get_spans(client: Any, project: str, params: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """Every page of ``GET /v1/projects/{project}/spans`` up to ``limit`` spans."""
    spans: list[dict[str, Any]] = []
    cursor = None
    while len(spans) < limit:
        page = {**params, "limit": min(1000, limit - len(spans)), **({"cursor": cursor} if cursor else {})}
        response = client.get(f"v1/projects/{quote(project, safe='')}/spans", params=page)
        response.raise_for_status()
        body = response.json()
        spans += body.get("data") or []
        cursor = body.get("next_cursor")
        if not cursor or not body.get("data"):
            break
    return spans[:limit]


def phoenix_problem(exc: Exception, url: str, project: str | None = None) -> ConfigError:
    """What went wrong talking to Phoenix, as one ConfigError line."""
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        if status == 404 and project is not None:
            return ConfigError(f"Phoenix at {url} has no project {project!r}")
        return ConfigError(f"Phoenix at {url} answered HTTP {status}: {exc.response.text[:160]}")
    return ConfigError(f"cannot reach Phoenix at {url}: {type(exc).__name__}: {str(exc)[:160]}")


def parse_since(value: str | None) -> datetime | None:
    """``--since``: an ISO 8601 time, or a duration back from now (``30m``, ``6h``, ``2d``)."""
    if not value:
        return None
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
    text = value.strip()
    if text[:-1].replace(".", "", 1).isdigit() and text[-1:] in units:
        try:
            return datetime.now(UTC) - timedelta(**{units[text[-1]]: float(text[:-1])})
        except OverflowError:  # further back than datetime reaches (the year 1)
            raise ConfigError(f"--since {value!r}: a duration back to before the year 1; give a shorter one "
                              "(e.g. 365d)") from None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--since {value!r}: an ISO time (2025-06-01T12:00) or a duration (30m, 6h, 2d)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_phoenix_spans(url: str, project: str, *, since: datetime | None = None,
                       limit: int | None = None) -> list[Span]:
    """The spans of the project's latest ``limit`` traces (all traces when None) started at or
    after ``since``: their root spans first, then every span of those traces."""
    import httpx

    with phoenix_client(url) as client:
        try:
            params: dict[str, Any] = {"parent_id": "null"}
            if since is not None:
                params["start_time"] = since.isoformat()
            roots = _get_spans(client, project, params, limit or 1_000_000)
            trace_ids = list(dict.fromkeys(r["context"]["trace_id"] for r in roots))
            spans = []
            for start in range(0, len(trace_ids), 50):
                spans += _get_spans(client, project, {"trace_id": trace_ids[start: start + 50]}, 1_000_000)
        except (httpx.HTTPError, OSError, ValueError) as exc:
            raise phoenix_problem(exc, url, project) from None
    return [span_from_phoenix(s) for s in spans]
