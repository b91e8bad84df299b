"""The Python API in the peers' shape: ``assay.evaluate(data, method=... or methods=[...], judge=...)``.

``data`` is a path (.jsonl, .json, .csv, .parquet), a list of dicts (assay's fields, or RAGAS's and
DeepEval's names) or a pandas DataFrame. Bad input raises an :class:`assay.AssayError` whose
message is the same one line the command line prints, never a raw validation error::

    import assay
    result = assay.evaluate("answers.jsonl", method="rougeL")
    print(result)            # method, run, status, rows and the metric means
    frame = result.to_pandas()
    for row in result: ...   # one dict per scored answer, with its evidence

The default method: ``method`` defaults to ``"dece"`` here (:func:`evaluate`, :func:`aevaluate`,
:func:`estimate`) and in the pytest plugin's ``assay_eval`` fixture, as documented since the first
release, so that code written against them keeps working. The engine under them
(:func:`assay.engine.aevaluate`, :func:`assay.engine.estimate`) has no default: every other caller
(the command line, meta-evaluation, the injection audit, the tournament) names its method, and a
default lives only at these user-facing doors.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assay.core.errors import AssayError, ConfigError, InputError
from assay.core.method import CallEstimate
from assay.core.types import Item
from assay.data.datasets._io import _items_from, input_notes, read_dataframe, read_items, reset_notes
from assay.engine import evaluate as scheduler
from assay.engine.results import EvalResult


def load_items(data: Any) -> tuple[list[Item], str, list[str]]:
    """Items from a path, a DataFrame or an iterable of dicts / Items; their source's name and
    how they were read (the peers' field names, the fields kept under ``metadata``, the columns
    of an earlier result left out). Those notes are also given once as a :class:`InputNote`
    warning."""
    items, source = _load(data)
    notes = input_notes(source)
    if notes:
        warnings.warn(f"reading {source}: " + "; ".join(notes), InputNote, stacklevel=2)
    return items, source, notes


class InputNote(UserWarning):
    """How assay read the data: the peers' field names, unused fields kept under ``metadata``."""


def _load(data: Any) -> tuple[list[Item], str]:
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


ITEM_COLUMNS = ("id", "system", "query", "response", "reference", "contexts", "history", "case", "document",
                "metadata", "human")
"""The columns of an answer itself, shown once in the wide frame of several methods."""


class EvalResults:
    """The results of several methods on the same data: ``results["dece"]`` is one method's
    :class:`EvalResult`; ``to_pandas()`` is one wide row per answer (RAGAS's shape); iterating
    gives one dict per method and answer, with a ``method`` key."""

    def __init__(self, results: dict[str, EvalResult]) -> None:
        self.results = results

    def __getitem__(self, method: str) -> EvalResult:
        return self.results[method]

    def __len__(self) -> int:
        return sum(len(r) for r in self.results.values())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for method, result in self.results.items():
            for row in result:
                yield {"method": method, **row}

    def __repr__(self) -> str:
        return "\n".join(repr(r) for r in self.results.values())

    def summary(self) -> dict[str, Any]:
        return {method: result.summary() for method, result in self.results.items()}

    def to_pandas(self) -> Any:
        """One row per answer: its fields once, then each method's columns prefixed with the
        method's name (``dece.recall``, ``dece.criteria``, ``bleu.status``); a metric named as
        its method keeps that name (``rougeL``, ``bleu``). ``assay.evaluate`` reads the frame back
        (the method columns are left out)."""
        import pandas as pd

        rows: dict[tuple[Any, Any], dict[str, Any]] = {}
        for method, result in self.results.items():
            for record in result.records():
                row = rows.setdefault((record["id"], record.get("system")),
                                      {k: record[k] for k in ITEM_COLUMNS if k in record})
                for column, value in record.items():
                    if column not in ITEM_COLUMNS:
                        row[method if column == method else f"{method}.{column}"] = value
        return pd.DataFrame(list(rows.values()))


async def aevaluate(data: Any, method: str | Any = "dece", judge: Any = "llamacpp/default", *,
                    methods: list[str] | None = None, **options: Any) -> EvalResult | EvalResults:
    """The async twin of :func:`evaluate`, for code (a notebook) that already runs an event loop."""
    items, source, notes = load_items(data)
    options.setdefault("data_source", source)
    options.setdefault("input_notes", notes)
    if methods is not None:
        if not methods or not all(isinstance(m, str) for m in methods):
            raise ConfigError("methods must be a non-empty list of method names")
        if len(set(methods)) != len(methods):
            raise ConfigError(f"methods names one twice: {methods}")
        return EvalResults({m: await scheduler.aevaluate(items, m, judge, **options) for m in methods})
    return await scheduler.aevaluate(items, method, judge, **options)


def estimate(items: Iterable[Item | dict[str, Any]], method: str | Any = "dece",
             **method_options: Any) -> CallEstimate:
    """Dry run: estimated judge calls and tokens, without calling any judge."""
    return scheduler.estimate(items, method, **method_options)


def evaluate(data: Any, method: str | Any = "dece", judge: Any = "llamacpp/default", *,
             methods: list[str] | None = None, **options: Any) -> EvalResult | EvalResults:
    """Score ``data`` with ``method`` (or each of ``methods``) and ``judge``; see the module
    docstring. Options: ``store`` (a path: cached, resumable), ``runner``
    (:class:`assay.RunnerConfig`: budget, timeout, retries, concurrency), ``fresh`` (score again a
    run the store already holds; by default the same call continues it, or reads it back), ``guard``
    and the method's own options (DeCE's ``domain``, ``beta``, ...)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aevaluate(data, method, judge, methods=methods, **options))
    raise AssayError("an event loop is already running (a notebook?): use `await assay.aevaluate(...)`")
