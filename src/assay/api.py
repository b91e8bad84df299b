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
(:func:`assay._eval.aevaluate`, :func:`assay._eval.estimate`) has no default: every other caller
(the command line, meta-evaluation, the injection audit, the tournament) names its method, and a
default lives only at these user-facing doors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assay import _eval
from assay.datasets._io import _items_from, input_notes, read_dataframe, read_items
from assay.errors import AssayError, ConfigError, InputError
from assay.methods._base import CallEstimate
from assay.results import EvalResult
from assay.types import Item


def load_items(data: Any) -> tuple[list[Item], str, list[str]]:
    """Items from a path, a DataFrame or an iterable of dicts / Items; their source's name and
    how they were read (the peers' field names)."""
    if isinstance(data, str | Path):
        return read_items(data), str(data), input_notes(str(data))
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        return read_dataframe(data, source="DataFrame"), "DataFrame", input_notes("DataFrame")
    if isinstance(data, dict):
        raise InputError("data is one record; give a list of records, a DataFrame or a file path")
    if not isinstance(data, Iterable):
        raise InputError(f"data must be a file path, a list of records or a DataFrame, not {type(data).__name__}")
    items: list[Item] = []
    for number, record in enumerate(data, 1):
        if isinstance(record, Item):
            items.append(record)
        else:
            items.extend(_items_from(record, "data", number))
    if not items:
        raise InputError("no items", source="data")
    return items, "data", input_notes("data")


class EvalResults:
    """The results of several methods on the same data: ``results["dece"]`` is one method's
    :class:`EvalResult`; ``to_pandas()`` stacks them with a ``method`` column."""

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
        import pandas as pd

        return pd.DataFrame(list(self))


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
        return EvalResults({m: await _eval.aevaluate(items, m, judge, **options) for m in methods})
    return await _eval.aevaluate(items, method, judge, **options)


def estimate(items: Iterable[Item | dict[str, Any]], method: str | Any = "dece",
             **method_options: Any) -> CallEstimate:
    """Dry run: estimated judge calls and tokens, without calling any judge."""
    return _eval.estimate(items, method, **method_options)


def evaluate(data: Any, method: str | Any = "dece", judge: Any = "llamacpp/default", *,
             methods: list[str] | None = None, **options: Any) -> EvalResult | EvalResults:
    """Score ``data`` with ``method`` (or each of ``methods``) and ``judge``; see the module
    docstring. Options: ``store`` (a path: cached, resumable), ``runner``
    (:class:`assay.RunnerConfig`: budget, timeout, retries, concurrency), ``resume``, ``guard``
    and the method's own options (DeCE's ``domain``, ``beta``, ...)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aevaluate(data, method, judge, methods=methods, **options))
    raise AssayError("an event loop is already running (a notebook?): use `await assay.aevaluate(...)`")
