"""Exporting a run's results: JSON Lines, JSON, CSV, Parquet. The format follows the output
file's extension; ``--format`` is needed only for a name without one it knows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from assay.core._files import atomic_write, finite
from assay.core.errors import ConfigError
from assay.core.records import UnitResult
from assay.store import Store

FORMATS = ("jsonl", "json", "csv", "parquet")
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet",
              ".pq": "parquet"}
"""Output extensions and the format each means."""


def format_for(path: Path | None, fmt: str | None, *, format_option: bool = True, name: str | None = None) -> str:
    """The export format of ``path`` given ``--format`` (None: not given). A known extension
    (.csv, .jsonl, .json, .parquet) decides, and ``--format`` contradicting it is one ConfigError
    line; another extension (.txt, .xlsx, none) needs ``--format``: without it the file is refused,
    never written as JSON Lines under a name that promises something else (a ``.xlsx`` that Excel
    calls corrupt). ``format_option``: the command has ``--format`` (``assay export``; ``assay
    eval -o`` has not); ``name``: the file as the user wrote it (``./-``, which a Path shows as
    ``-``). A new file named like a store (.db) is refused. No path: ``--format`` or jsonl."""
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    if path is None:
        return fmt or "jsonl"
    implied = EXTENSIONS.get(path.suffix.lower())
    if implied is None:
        if path.suffix.lower() in (".db", ".sqlite", ".sqlite3") and not path.exists():
            raise ConfigError(f"-o {path}: that is a run store's name; name the export .csv, .jsonl, .json or "
                              ".parquet")
        if fmt is None:
            what = f"a {path.suffix} file" if path.suffix else "a name without an extension"
            alternative = " (or give --format jsonl, json, csv or parquet)" if format_option else ""
            raise ConfigError(f"-o {name or path}: {what} does not say which format to write; name it .csv, .jsonl, "
                              f".json or .parquet{alternative}")
        return fmt
    if fmt is not None and fmt != implied:
        raise ConfigError(f"--format {fmt} contradicts -o {path} (a .{path.suffix.lower().lstrip('.')} file is "
                          f"{implied}); drop --format or rename the file")
    return implied


def export_rows(store: Store, run_id: str, *, annotations: bool = False,
                results: list[UnitResult] | None = None) -> list[dict[str, Any]]:
    """One flat record per evaluated unit (:func:`export_row`), in unit order. ``results``
    limits the rows to those results (e.g. one item's, for a page about it); which calls are
    shared is counted over the whole run all the same."""
    shared = store.shared_call_keys(run_id)
    return [export_row(result, annotations=annotations, shared_calls=shared)
            for result in (store.results(run_id) if results is None else results)]


def reference_as_given(reference: Any) -> Any:
    """A reference as the input gave it: a plain string stays a string (it was read as all
    required information), one with helpful information stays {required, helpful}."""
    if isinstance(reference, dict) and set(reference) <= {"required", "helpful"} \
            and not str(reference.get("helpful") or "").strip() and isinstance(reference.get("required"), str):
        return reference["required"]
    return reference


def export_row(result: UnitResult, *, annotations: bool = False,
               shared_calls: set[str] | None = None) -> dict[str, Any]:
    """A unit's result as one flat record (the view the exports, the report and the UI read): id,
    system, status, the scores, the evidence lists (for DeCE ``criteria`` and ``elements``, each
    with verdict, quote and reasoning), and each unscored metric with its reason. ``annotations``
    adds the human layer (``assay ui``): ``annotations`` = {reviewer: {address: latest value}},
    from the result's edit history. ``judge_calls`` counts the calls the unit's scores rest on;
    ``judge_calls_shared`` how many of them other units of the run rest on too (``shared_calls``:
    the run's calls used by more than one unit; e.g. one reference's extraction behind several
    answers, or a cached reply), so the column's sum over the run is not the run's calls."""
    from assay.store.human import latest

    item = result.item
    record: dict[str, Any] = {"run_id": result.run_id, "id": item["id"], "system": item.get("system"),
                              "status": result.status, "query": item["query"]}
    if result.kind == "item":
        record["response"] = item["response"]
        record["reference"] = reference_as_given(item.get("reference"))
    else:  # a pair (a, b) or a group: each answer under its position's suffix
        record["system"] = " vs ".join(str(i.get("system")) for i in result.items)
        record["unit"] = result.kind
        record["round"] = result.round
        for label, member in zip("abcdefghijklmnopqrstuvwxyz", result.items, strict=False):
            record[f"system_{label}"] = member.get("system")
            record[f"response_{label}"] = member["response"]
        record["reference"] = reference_as_given(item.get("reference"))
    record.update(result.scores)
    fixed = set(record) | RESERVED
    for key, value in result.details.items():
        # a method's details never overwrite a fixed column or a score (kept under detail_KEY)
        record[f"detail_{key}" if key in fixed and record.get(key) != value else key] = value
    record["unscored"] = [u.model_dump(exclude_unset=True) for u in result.unscored]
    record["unscored_reason"] = "; ".join(f"{u.metric or 'item'}: {u.reason}" for u in result.unscored) or None
    for key in ("case", "history", "contexts", "document"):
        if item.get(key):
            record[key] = item[key]
    if item.get("metadata"):
        record["metadata"] = item["metadata"]
    if item.get("human"):
        record["human"] = item["human"]
    own = set(result.call_keys)
    record["judge_calls"] = len(own)
    if shared_calls is not None:
        record["judge_calls_shared"] = len(own & shared_calls)
    if annotations:
        mine = result.history
        record["annotations"] = {who: {path: a.value for path, a in latest(mine, who).items()}
                                 for who in dict.fromkeys(a.author for a in mine)}
        # why each reviewer changed what they changed (an override needs a reason): the audit trail beside it
        reasons = {who: {path: a.reason for path, a in latest(mine, who).items() if a.reason}
                   for who in dict.fromkeys(a.author for a in mine)}
        record["annotation_reasons"] = {who: given for who, given in reasons.items() if given}
    return record


RESERVED = frozenset({"unscored", "unscored_reason", "case", "history", "contexts", "document", "metadata", "human",
                      "judge_calls", "judge_calls_shared",
                      "annotations", "annotation_reasons", "run_id", "id", "system", "status", "query", "response",
                      "reference"})
"""Columns of the export that a method's details cannot take."""

COMPACT = ("run_id", "id", "system", "status", "query", "response")
"""Columns every compact output keeps; the method adds its own (``Presents.compact_columns``,
default its metrics: case-aware App. A.2 adds the case fields, retrieved contexts and S_final,
for monitoring dashboards), then ``unscored_reason``. The granular output is everything."""


def compact_columns(method: str) -> tuple[str, ...]:
    """The compact export's columns for a run of ``method`` (a method no longer registered, e
    .g. a removed plug-in, keeps the common columns and its scores)."""
    from assay.core.protocols import run_presentation

    shown = run_presentation(method)
    extra = shown.compact() if shown is not None else ()
    return (*COMPACT, *extra, "unscored_reason")


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""A CSV cell that starts with one of these is read as a formula by spreadsheet programs."""


def neutralise_formula(value: Any) -> Any:
    """CSV injection defence (OWASP): a text cell that a spreadsheet would run as a formula gets
    a leading apostrophe, which spreadsheets show as text. Numbers stay numbers (``-0.5`` is not
    touched); only strings are changed, and only in CSV exports (JSONL and Parquet are exact)."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def default_output(run: Path, run_id: str, fmt: str) -> Path:
    """Default export path: ``RUN-<run id>.<format>`` beside the store. It carries the run id, so
    it cannot be the data file the run was made from (``data.jsonl`` → ``data.db`` →
    ``data-<id>.jsonl``), and two runs of one store do not overwrite each other's export."""
    return run.with_name(f"{run.stem}-{run_id[:8]}.{fmt}")


def export_run(store: Store, run_id: str, out: Path | IO[bytes], fmt: str, compact: bool = False,
               annotations: bool = False, alignment: dict[str, Any] | None = None) -> int:
    """Write the run to ``out``, a file or a binary stream; returns the number of rows. A file is
    written atomically (:func:`assay.core._files.atomic_write`): a failed export leaves nothing
    half-written. CSV cells
    that would run as spreadsheet formulas are neutralised (:func:`neutralise_formula`).
    ``compact`` keeps only :data:`COMPACT`; ``annotations`` adds the reviewers' layer;
    ``alignment`` (from ``assay align``) adds ``aligned_score``, ``aligned_verdict`` and each
    verdict's ``p_calibrated`` beside the raw values."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    results = store.results(run_id)
    rows = export_rows(store, run_id, annotations=annotations, results=results)
    if alignment is not None:
        from assay.analysis.align import aligned_fields, decorate

        extra = aligned_fields(alignment, store, run_id, results)
        rows = [decorate(row, extra.get(result.key, {})) for row, result in zip(rows, results, strict=True)]
    rows = [finite(row) for row in rows]  # no NaN in any output
    if compact:
        run = store.get_run(run_id)
        keep = compact_columns(run.method) if run is not None else (*COMPACT, "unscored_reason")
        keep = (*keep, "aligned_score", "aligned_verdict")
        rows = [{k: row[k] for k in (*keep, *(("annotations",) if annotations else ())) if k in row} for row in rows]

    def write(handle: IO[bytes]) -> None:
        if fmt == "jsonl":
            for row in rows:
                handle.write((json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))
            return
        if fmt == "json":  # an array of the rows (what RAGAS and DeepEval write; assay reads it back)
            handle.write((json.dumps(rows, ensure_ascii=False, allow_nan=False, indent=1) + "\n").encode("utf-8"))
            return
        import pandas as pd
        flat = [{k: (json.dumps(v, ensure_ascii=False, allow_nan=False) if isinstance(v, list | dict) else v)
                 for k, v in row.items()} for row in rows]
        frame = pd.DataFrame(flat)
        if not rows:  # a run with no result yet: the header still says what its rows will hold
            run = store.get_run(run_id)
            frame = pd.DataFrame(columns=list(compact_columns(run.method) if run is not None else COMPACT))
        if fmt == "csv":
            frame = frame.map(neutralise_formula)
            handle.write(frame.to_csv(index=False).encode("utf-8"))
        else:
            frame.to_parquet(handle, index=False)

    if isinstance(out, Path):
        atomic_write(out, write)
    else:  # a stream (standard output for `-o -`)
        write(out)
        out.flush()
    return len(rows)
