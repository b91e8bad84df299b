"""The one way items come in. :func:`load_items` reads any source of answers into typed items, the
source's name and the notes of how it was read:

* a file path: .jsonl, .json (an array), .csv or .parquet, in assay's fields or the peers'
  (RAGAS, DeepEval; :mod:`assay.data.datasets`);
* a pandas DataFrame, or an iterable of dicts (the same fields) or of :class:`~assay.core.types.Item`;
* :class:`TraceExport`: an OTLP/JSON trace export of OpenInference spans, one item per trace
  (:mod:`assay.data.traces`);
* :class:`PhoenixTraces`: the traces of an Arize Phoenix project, through its REST API.

``assay.evaluate``, every ``assay eval`` command and the other commands that read answers call
it. Bad input is one :class:`~assay.core.errors.InputError` naming the file, the line and the
field; NaN and Infinity are refused by the one reading layer under every reader
(:func:`assay.core._load.reject_constant`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.core.errors import InputError
from assay.core.types import Item
from assay.data.datasets._io import _items_from, input_notes, read_dataframe, read_items, reset_notes

if TYPE_CHECKING:
    from assay.core.method import Method


@dataclass(frozen=True)
class TraceExport:
    """An OTLP/JSON trace export (one ``ExportTraceServiceRequest``, or one per line as the
    OpenTelemetry Collector's file exporter writes): ``assay eval METHOD --from-traces FILE``."""

    path: str | Path


@dataclass(frozen=True)
class PhoenixTraces:
    """The traces of a project of the Arize Phoenix at ``url`` (http://127.0.0.1:6006), started
    ``since`` (an ISO time, or a duration back from now: 30m, 6h, 2d):
    ``assay eval METHOD --from-phoenix URL --project NAME --since WHEN``."""

    url: str
    project: str
    since: str | None = None


@dataclass
class LoadedItems:
    """What :func:`load_items` read: the items, the source's name (a path, ``DataFrame``,
    ``data``, a trace file or a Phoenix project's address), the notes of how it was read (the
    peers' field names, fields kept under ``metadata``, columns of an earlier result, traces
    made into items) and, for traces, one line per trace left out, with why."""

    items: list[Item]
    source: str
    notes: list[str]
    skipped: list[str] = field(default_factory=list)


def load_items(data: Any, *, limit: int | None = None, method: Method | None = None,
               on_skip: Callable[[str], None] | None = None) -> LoadedItems:
    """The items of ``data`` (any source of the module's list), the first ``limit`` of them.

    For traces: a trace that gives no item, and an item ``method`` cannot evaluate (its
    ``check_item``), is left out and reported (``skipped``, and ``on_skip`` as soon as all are
    known); no item left is an InputError. Items of a file or of records are not filtered: the
    run refuses one the method cannot evaluate, naming its line."""
    if isinstance(data, TraceExport | PhoenixTraces):
        return _from_traces(data, limit=limit, method=method, on_skip=on_skip)
    items, source = _records(data)
    if limit is not None:
        items = items[:limit]
    return LoadedItems(items, source, input_notes(source))


def _records(data: Any) -> tuple[list[Item], str]:
    if isinstance(data, str | Path):
        return read_items(data), str(data)
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        reset_notes("DataFrame")
        return read_dataframe(data, source="DataFrame"), "DataFrame"
    if isinstance(data, dict):
        raise InputError("data is one record; give a list of records, a DataFrame or a file path")
    if not isinstance(data, Iterable):
        raise InputError(f"data must be a file path, a list of records or a DataFrame, not {type(data).__name__}")
    reset_notes("data")
    items: list[Item] = []
    for number, record in enumerate(data, 1):
        if isinstance(record, Item):
            items.append(record)
        else:
            items.extend(_items_from(record, "data", number))
    if not items:
        raise InputError("no items", source="data")
    return items, "data"


def _from_traces(data: TraceExport | PhoenixTraces, *, limit: int | None, method: Method | None,
                 on_skip: Callable[[str], None] | None) -> LoadedItems:
    from assay.data.traces import items_from_spans, parse_since, read_phoenix_spans, read_trace_file

    if isinstance(data, PhoenixTraces):
        url = data.url.rstrip("/")
        spans = read_phoenix_spans(url, data.project, since=parse_since(data.since), limit=limit)
        source = f"{url}/projects/{data.project}"
    else:
        spans = read_trace_file(Path(data.path))
        source = str(data.path)
    items, problems = items_from_spans(spans, source=source)
    if limit is not None:
        items = items[:limit]
    kept = []
    for item in items:
        reason = method.check_item(item) if method is not None else None
        if reason:
            problems.append(f"trace {item.metadata.get('trace_id')} (span {item.id}): {reason}")
        else:
            kept.append(item)
    if on_skip is not None:
        for line in problems:
            on_skip(line)
    if not kept:
        what = f"an item {method.name} can evaluate" if method is not None else "an item"
        raise InputError(f"no trace gives {what} ({len(problems)} skipped)", source=source)
    notes = [f"{len(kept)} item(s) from {len(kept) + len(problems)} trace(s)"]
    if problems:
        notes.append(f"{len(problems)} trace(s) skipped")
    return LoadedItems(kept, source, notes, problems)
