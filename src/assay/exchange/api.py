"""The Python API in the peers' shape: ``assay.evaluate(data, method=... or methods=[...], judge=...)``.

``data`` is any source :func:`assay.data.load_items` reads: a path (.jsonl, .json, .csv, .parquet),
a list of dicts (assay's fields, or RAGAS's and DeepEval's names), a pandas DataFrame, a trace
export (``assay.data.TraceExport("traces.otlp.json")``) or a Phoenix project
(``assay.data.PhoenixTraces(url, project)``). Bad input raises an :class:`assay.AssayError` whose
message is the same one line the command line prints, never a raw validation error::

    import assay
    result = assay.evaluate("answers.jsonl", method="rougeL", export="scores.csv")
    print(result)            # method, run, status, rows and the metric means
    frame = result.to_pandas()
    for row in result: ...   # one dict per scored answer, with its evidence

A call ends as ``assay eval`` does: the post-run steps (a results file, an alignment's readings,
OpenTelemetry events, Phoenix annotations) are options of the call, checked before the run and
run after it by :mod:`assay.exchange.finish`, the code the command line runs. That is why this
door sits in ``exchange``: it reads items (``data``), runs them (``engine``) and sends the
results out (``exchange``), and only a layer at or above ``exchange`` may import all three.

The default method: ``method`` defaults to ``"dece"`` here (:func:`evaluate`, :func:`aevaluate`,
:func:`estimate`) and in the pytest plugin's ``assay_eval`` fixture, as documented since the first
release, so that code written against them keeps working. The engine under them
(:func:`assay.engine.aevaluate`, :func:`assay.engine.estimate`) has no default: every other caller
(the command line, meta-evaluation, the injection audit, the tournament) names its method, and a
default lives only at these user-facing doors.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assay.core.errors import AssayError, ConfigError
from assay.core.method import CallEstimate, Method
from assay.core.types import Item
from assay.data import PhoenixTraces, TraceExport
from assay.data import load_items as load
from assay.engine import evaluate as scheduler
from assay.engine.results import EvalResult


def load_items(data: Any) -> tuple[list[Item], str, list[str]]:
    """Items from any source :func:`assay.data.load_items` reads (a path, a DataFrame, an
    iterable of dicts / Items, a trace export, a Phoenix project); their source's name and how
    they were read (the peers' field names, the fields kept under ``metadata``, the columns of
    an earlier result left out, the traces left out). Those notes are also given once as a
    :class:`InputNote` warning."""
    loaded = _load(data, None)
    return loaded.items, loaded.source, loaded.notes


class InputNote(UserWarning):
    """How assay read the data: the peers' field names, unused fields kept under ``metadata``."""


class NotDelivered(UserWarning):
    """A post-run delivery (OpenTelemetry, Phoenix) that failed: the scores are in the store,
    and ``assay export RUN.db --otel`` / ``--phoenix URL`` sends them again."""


def _load(data: Any, method: Method | None) -> Any:
    skipped: list[str] = []
    loaded = load(data, method=method, on_skip=skipped.append)
    said = loaded.notes + [f"skipped {line}" for line in skipped]
    if said:
        warnings.warn(f"reading {loaded.source}: " + "; ".join(said), InputNote, stacklevel=_caller_level())
    return loaded


def _caller_level() -> int:
    """The ``stacklevel`` that attributes a warning raised in our caller to the user's line: the
    first frame outside assay and the asyncio machinery an ``evaluate()`` runs its reading in (a
    fixed level named ``asyncio/events.py``)."""
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in (
            "assay", "asyncio", "concurrent", "threading"):
        frame, level = frame.f_back, level + 1
    return level


ENGINE_OPTIONS = frozenset(inspect.signature(scheduler.aevaluate).parameters) - {"items", "method", "judge",
                                                                                 "method_options"}
"""The keywords of the engine's run; the other options of a call are the method's."""


def _method(method: str | Method, options: dict[str, Any]) -> Method:
    """The method a call runs, built with its own options (to check trace items and an alignment
    before the run; the run builds it again and refuses an unknown option)."""
    if isinstance(method, Method):
        return method
    from assay.core.registry import build_method

    return build_method(method, **{k: v for k, v in options.items() if k not in ENGINE_OPTIONS})


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
                    methods: list[str] | None = None, export: str | Path | None = None, force: bool = False,
                    alignment: str | Path | None = None, otel: bool = False, phoenix: str | None = None,
                    gate: list[str] | str | None = None, **options: Any) -> EvalResult | EvalResults:
    """The async twin of :func:`evaluate`, for code (a notebook) that already runs an event loop."""
    steps = {"export": export, "alignment": alignment, "otel": otel, "phoenix": phoenix, "gate": gate}
    if methods is not None:
        if isinstance(methods, str):
            raise ConfigError(f"methods must be a list of method names, not the string {methods!r} (one method: "
                              f"method={methods!r})")
        if not methods or not all(isinstance(m, str) for m in methods):
            raise ConfigError("methods must be a non-empty list of method names")
        if len(set(methods)) != len(methods):
            raise ConfigError(f"methods names one twice: {methods}")
        given = [name for name, value in steps.items() if value]
        if given:
            raise ConfigError(f"{', '.join(given)}: the post-run steps end one method's run; call "
                              "assay.evaluate once per method")
        items, source, notes = load_items(data)
        options.setdefault("data_source", source)
        options.setdefault("input_notes", notes)
        return EvalResults({m: await scheduler.aevaluate(items, m, judge, **options) for m in methods})
    from assay.exchange.finish import plan

    traces = isinstance(data, TraceExport | PhoenixTraces)
    built = _method(method, options) if traces or alignment is not None else None
    store = options.get("store")
    store_path = getattr(store, "path", store)
    finish = plan(output=export, force=force, alignment=alignment, method=built, otel=otel, phoenix=phoenix,
                  gate=gate, inputs=[data if isinstance(data, str | Path) else None, store_path])
    loaded = _load(data, built if traces else None)
    options.setdefault("data_source", loaded.source)
    options.setdefault("input_notes", loaded.notes)
    result = await scheduler.aevaluate(loaded.items, method, judge, **options)

    def say(line: str, ok: bool) -> None:
        if not ok:
            warnings.warn(line, NotDelivered, stacklevel=_caller_level())

    finish.run(result.store, result.run_id, say)
    return result


def estimate(items: Iterable[Item | dict[str, Any]], method: str | Any = "dece",
             **method_options: Any) -> CallEstimate:
    """Dry run: estimated judge calls and tokens, without calling any judge."""
    return scheduler.estimate(items, method, **method_options)


def evaluate(data: Any, method: str | Any = "dece", judge: Any = "llamacpp/default", *,
             methods: list[str] | None = None, export: str | Path | None = None, force: bool = False,
             alignment: str | Path | None = None, otel: bool = False, phoenix: str | None = None,
             gate: list[str] | str | None = None, **options: Any) -> EvalResult | EvalResults:
    """Score ``data`` with ``method`` (or each of ``methods``) and ``judge``; see the module
    docstring. Options: ``store`` (a path: cached, resumable), ``runner``
    (:class:`assay.RunnerConfig`: budget, timeout, retries, concurrency), ``fresh`` (score again a
    run the store already holds; by default the same call continues it, or reads it back), ``guard``
    and the method's own options (DeCE's ``domain``, ``beta``, ...).

    The post-run steps, as ``assay eval``'s options (:mod:`assay.exchange.finish`): ``export``
    (the results file, .csv, .jsonl, .json or .parquet, as ``-o``; ``force`` replaces a file
    assay did not write), ``alignment`` (an ``assay align`` file: its calibrated readings beside
    the raw ones in that file), ``otel`` (OpenTelemetry events to
    ``OTEL_EXPORTER_OTLP_ENDPOINT``), ``phoenix`` (a Phoenix URL: span annotations on the traces
    the items came from) and ``gate`` (``"metric=min"``: pass/fail labels). A delivery that fails
    is a :class:`NotDelivered` warning, never an error: the scores are in the store."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aevaluate(data, method, judge, methods=methods, export=export, force=force,
                                     alignment=alignment, otel=otel, phoenix=phoenix, gate=gate, **options))
    raise AssayError("an event loop is already running (a notebook?): use `await assay.aevaluate(...)`")
