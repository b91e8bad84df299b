"""Reading assay items from JSONL, CSV, Parquet or a DataFrame (assay's item format).

Bad input gives one :class:`~assay.core.errors.InputError` naming the file, the line (for CSV the
row's line, for Parquet the row number) and the field; nothing is written before input is read
in full.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
import numbers
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.core._load import decode, jsonl_records, load_json, read_bytes, reject_constant
from assay.core.errors import InputError
from assay.core.types import Item

_JSON_COLUMNS = ("reference", "contexts", "history", "case", "metadata", "human", "retrieved_contexts",
                 "retrieval_context", "ground_truths")


def _bad_text(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first string (key or value) that is not valid Unicode — a lone surrogate such as
    ``"\\ud800"``, which JSON allows and UTF-8 cannot hold — as (field path, why)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return path, f"not valid Unicode (lone surrogate \\u{ord(value[exc.start]):04x} at character {exc.start})"
        return None
    if isinstance(value, dict):
        for key, inner in value.items():
            found = _bad_text(key, path) or _bad_text(inner, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found = _bad_text(inner, f"{path}[{index}]")
            if found:
                return found
    return None


PAIR_SIDES = ("a", "b")


def _items_from(data: Any, source: str, line: int) -> list[Item]:
    """One item, or — for a pairwise record (assay's item format: ``a`` and ``b``, each ``{"system",
    "response", "contexts"}``, instead of ``response``) — its two answers as two items sharing the
    id, marked ``metadata.pair_position`` ``a`` / ``b`` so pairwise methods keep the order."""
    if not (isinstance(data, dict) and ("a" in data or "b" in data)):
        return [_item_from(data, source, line)]
    common = {k: v for k, v in data.items() if k not in PAIR_SIDES}
    if "response" in common:
        raise InputError("a pairwise record has 'a' and 'b' instead of 'response'", source=source, line=line,
                         field="response")
    items = []
    for side in PAIR_SIDES:
        answer = data.get(side)
        if not isinstance(answer, dict):
            raise InputError(f"expected an object {{\"system\", \"response\", \"contexts\"}}, got "
                             f"{type(answer).__name__}", source=source, line=line, field=side)
        unknown = sorted(set(answer) - {"system", "response", "contexts"})
        if unknown:
            raise InputError("unknown field (a side has system, response, contexts)", source=source, line=line,
                             field=f"{side}.{unknown[0]}")
        if "response" not in answer:
            raise InputError("required field is missing", source=source, line=line, field=f"{side}.response")
        metadata = {**(common.get("metadata") or {}), "pair_position": side}
        record = {**common, "response": answer["response"], "system": answer.get("system") or side.upper(),
                  "metadata": metadata}
        if "contexts" in answer:
            record["contexts"] = answer["contexts"]
        items.append(_item_from(record, source, line))
    if items[0].system == items[1].system:
        raise InputError(f"both answers of the pair come from system {items[0].system!r}", source=source, line=line,
                         field="b.system")
    return items


ALIASES: dict[str, str] = {
    # RAGAS (0.1 and 0.2 names)
    "question": "query", "user_input": "query", "answer": "response", "retrieved_contexts": "contexts",
    "ground_truth": "reference",
    # DeepEval test cases
    "input": "query", "actual_output": "response", "expected_output": "reference", "retrieval_context": "contexts",
}
"""Field names of the peers' formats, read as assay's own (each use is reported once per file)."""

NOTES: dict[str, set[str]] = {}
"""Per source, what was read under another name or filled in (reported in the run's manifest)."""

UNUSED: dict[str, dict[str, None]] = {}
"""Per source, the fields assay does not use, in the order met: kept under ``metadata``."""

IGNORED: dict[str, dict[str, None]] = {}
"""Per source, the columns of assay's own output (an export, ``to_pandas()``: a row with
``run_id``, ``status``, ``dece.recall``, ...) left out when it is read back as input: the scores
and evidence describe an earlier run, not the answer."""

ITEM_FIELDS = frozenset(Item.model_fields)
FIELD_NAMES = sorted(ITEM_FIELDS | set(ALIASES))
"""The names a field of the input may have: assay's and the peers' (a misspelt one is named)."""

PEER_FIELDS = frozenset({"reference_contexts", "multi_responses", "rubrics", "reference_tool_calls", "context",
                         "additional_metadata", "name", "comments", "tools_called", "expected_tools", "tags",
                         "reasoning"})
"""Fields RAGAS and DeepEval write that assay does not use: kept, never taken for a misspelling."""

RESULT_COLUMNS = frozenset({"run_id", "status", "unscored", "unscored_reason", "judge_calls", "judge_calls_shared",
                            "annotations", "unit",
                            "round"})
"""Columns assay's export adds to an item's fields (never an input field of the peers' formats)."""


def _is_result_column(name: str) -> bool:
    """A column of assay's own output: an engine column, or one of a method's columns in the wide
    frame of several methods (``dece.recall``, ``bleu``'s ``bleu.status``)."""
    if name in RESULT_COLUMNS:
        return True
    prefix, dot, _ = name.partition(".")
    if dot:
        from assay.core.registry import methods, workflows

        return prefix in methods() or prefix in workflows()  # a workflow's runs (the rubric audit's) too
    return False


def reset_notes(source: str) -> None:
    """Forget what an earlier read of ``source`` noted (a DataFrame read twice in one session)."""
    for table in (NOTES, UNUSED, IGNORED):
        table.pop(source, None)


SPELT_NAMES = frozenset({"id", "query", "response", "reference", "contexts", "reference_required",
                         "reference_helpful", "ground_truths"} | set(ALIASES))
"""The names a spreadsheet's header may give in other capitals or with spaces (``Query``, ``Ground
Truth``, ``Reference Required``). Not ``system``, ``case``, ``human``, ``history``, ``document`` or
``metadata``: a column so named in a spreadsheet is often something else (a ticket's case number),
and stays under ``metadata`` as before."""


def _respelt(data: dict[str, Any], source: str) -> dict[str, Any]:
    """``data`` with each key that spells one of :data:`SPELT_NAMES` in other capitals, or with
    spaces for underscores, under that name (said once per source), unless the file also has the
    name itself: then the other spelling stays as it was (under ``metadata``)."""
    out = dict(data)
    for key in [k for k in out if isinstance(k, str) and k not in SPELT_NAMES and k not in ITEM_FIELDS]:
        spelt = key.strip().lower().replace(" ", "_")
        if spelt in SPELT_NAMES and spelt not in out and ALIASES.get(spelt, spelt) not in out:
            out[spelt] = out.pop(key)
            NOTES.setdefault(source, set()).add(f"read '{key}' as {spelt}")
    return out


def _normalise(data: dict[str, Any], source: str, line: int) -> dict[str, Any]:
    """The peers' conventions in assay's shape: aliased field names, contexts as plain strings,
    a list of ground truths, no id (the row's position)."""
    out = _respelt(data, source)
    notes = NOTES.setdefault(source, set())
    for alias, name in ALIASES.items():
        if alias in out:
            if name in out:
                raise InputError(f"both '{alias}' and '{name}' given: '{alias}' is read as '{name}'; keep one",
                                 source=source, line=line, field=alias)
            out[name] = out.pop(alias)
            notes.add(f"read '{alias}' as {name}")
    if "ground_truths" in out and "reference" not in out and isinstance(out["ground_truths"], list):
        out["reference"] = "\n".join(str(t) for t in out.pop("ground_truths"))
        notes.add("read 'ground_truths' (joined) as reference")
    unknown = [k for k in out if k not in ITEM_FIELDS]
    if unknown:
        metadata = out.get("metadata")
        if metadata is None or metadata == {}:
            metadata = {}
        if not isinstance(metadata, dict):
            raise InputError(f"expected an object, got {type(metadata).__name__}", source=source, line=line,
                             field="metadata")
        metadata = dict(metadata)
        # a row of assay's own output (an export, to_pandas()): its scores and evidence describe an
        # earlier run, not the answer, and are left out; anything else is the user's, kept
        earlier_result = any(_is_result_column(str(k)) for k in unknown)
        for key in unknown:
            value = out.pop(key)
            if earlier_result:
                IGNORED.setdefault(source, {})[str(key)] = None
            else:
                metadata.setdefault(str(key), value)
                UNUSED.setdefault(source, {})[str(key)] = None
        if metadata:
            out["metadata"] = metadata
    contexts = out.get("contexts")
    if isinstance(contexts, str):
        contexts = [contexts]
    if isinstance(contexts, list) and any(isinstance(c, str) for c in contexts):
        out["contexts"] = [{"id": str(n), "text": c} if isinstance(c, str) else c for n, c in enumerate(contexts, 1)]
        notes.add("read plain-string contexts as passages 1, 2, ...")
    if "id" not in out:
        out["id"] = f"row{line}"
        notes.add("gave rows without an id the id rowN (N: their line or position)")
    elif "id" in out and isinstance(out["id"], numbers.Real) and not isinstance(out["id"], bool):
        if isinstance(out["id"], numbers.Integral):  # numpy's integers too (3, not "np.int64(3)")
            out["id"] = str(int(out["id"]))
        elif not math.isfinite(out["id"]):  # str() would make it the id "nan" or "inf"
            raise InputError(f"{out['id']} is not an id (give a string or a whole number)", source=source, line=line,
                             field="id")
        else:
            out["id"] = str(out["id"])
    return out


REQUIRED_FIELDS = tuple(n for n, f in Item.model_fields.items() if f.is_required() and n != "id")
"""The fields every record must give (a record without ``id`` is given its position)."""


def _canonical(name: str) -> str:
    """The item field a name of the input is read as: aliases and other capitals resolved."""
    spelt = name.strip().lower().replace(" ", "_")
    if name not in SPELT_NAMES and name not in ITEM_FIELDS and spelt in SPELT_NAMES:
        name = spelt
    return ALIASES.get(name, name)


def near_miss(field: str, names: Any) -> str:
    """``found 'respones': did you mean response?`` when one of ``names`` (a record's keys, a
    header's columns) that assay does not read looks like a misspelling of ``field`` or of one of
    its aliases; empty otherwise."""
    given = {str(n).lower(): str(n) for n in names if isinstance(n, str)
             and _canonical(n) not in ITEM_FIELDS and n not in PEER_FIELDS and not _is_result_column(n)}
    for known in (field, *(alias for alias, name in ALIASES.items() if name == field)):
        close = difflib.get_close_matches(known, list(given), 1, 0.8)
        if close:
            return f"found '{given[close[0]]}': did you mean {known}?"
    return ""


def check_header(header: list[str], source: str) -> None:
    """A header without a column for a required field (under its name, an alias or in other
    capitals) is one error on line 1 naming every such field: each row would fail alike."""
    have = {_canonical(name) for name in header if isinstance(name, str)}
    missing = [field for field in REQUIRED_FIELDS if field not in have]
    if not missing:
        return
    columns = ", ".join(name for name in header if isinstance(name, str))
    hints = "; ".join(hint for hint in (near_miss(field, header) for field in missing) if hint)
    hints = f" ({hints})" if hints else ""
    if len(missing) == 1:
        raise InputError(f"the header has no column for this required field{hints}; its columns: {columns}",
                         source=source, line=1, field=missing[0])
    raise InputError(f"the header has no column for the required fields {' and '.join(missing)}{hints}; "
                     f"its columns: {columns}", source=source, line=1)


def input_notes(source: str) -> list[str]:
    """What reading ``source`` took from the peers' conventions, for the manifest and the user:
    the peers' names, the fields kept under ``metadata``, the columns of an earlier result."""
    notes = sorted(NOTES.get(source, ()))
    unused = list(UNUSED.get(source, {}))
    if unused:
        noun = "field" if len(unused) == 1 else "fields"
        named = [f"{u} (did you mean {close[0]}?)" if u not in PEER_FIELDS and
                 (close := difflib.get_close_matches(u, FIELD_NAMES, 1, 0.8)) else u for u in unused]
        notes.append(f"kept {len(unused)} unused {noun} under metadata: {', '.join(named)}")
    ignored = list(IGNORED.get(source, {}))
    if ignored:
        shown = ", ".join(ignored[:8]) + (f" and {len(ignored) - 8} more" if len(ignored) > 8 else "")
        notes.append(f"left out {len(ignored)} column(s) of an earlier assay result: {shown}")
    return notes


def _item_from(data: Any, source: str, line: int) -> Item:
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}", source=source, line=line)
    given = list(data)
    data = _normalise(data, source, line)
    try:
        bad = _bad_text(data)
    except RecursionError:
        raise InputError("nested too deeply", source=source, line=line) from None
    if bad is not None:
        raise InputError(bad[1], source=source, line=line, field=bad[0] or None)
    try:
        item = Item.model_validate(data)
        item._line = line
        return item
    except RecursionError:
        raise InputError("nested too deeply", source=source, line=line) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        message = err["msg"]
        if err["type"] == "missing":
            hint = near_miss(loc, given)
            message = "required field is missing" + (f" ({hint})" if hint else "")
        elif err["type"] == "extra_forbidden":
            message = "unknown field (the item fields are listed on the formats page of the documentation)"
        more = f" ({len(exc.errors()) - 1} more problem(s) on this line)" if len(exc.errors()) > 1 else ""
        raise InputError(message + more, source=source, line=line, field=loc) from exc


_decode = decode
_read_bytes = read_bytes


def read_jsonl(path: str | Path) -> list[Item]:
    path = Path(path)
    source = str(path)
    items = []
    for number, data in jsonl_records(path, None):
        items.extend(_items_from(data, source, number))
    return items


def _row_to_dict(row: dict[str, Any], source: str, line: int) -> dict[str, Any]:
    data: dict[str, Any] = {}
    row = _respelt(row, source)  # a header in other capitals, read as the name it spells before its cells are decoded
    for key, value in row.items():
        if key is None:
            raise InputError("more values than header columns", source=source, line=line)
        if value is None or (isinstance(value, float) and value != value) or value == "":
            continue  # empty cell: field absent
        if key in _JSON_COLUMNS and isinstance(value, str) and value.strip()[:1] in ("{", "["):
            try:
                value = json.loads(value, parse_constant=reject_constant)
            except json.JSONDecodeError as exc:
                raise InputError(f"cell is not valid JSON: {exc.msg}", source=source, line=line,
                                 field=key) from exc
            except (ValueError, RecursionError) as exc:
                raise InputError(f"cell is not valid JSON: {str(exc)[:120]}", source=source, line=line,
                                 field=key) from None
        if key.startswith("reference_") and key in ("reference_required", "reference_helpful"):
            data.setdefault("reference", {})[key.removeprefix("reference_")] = value
            continue
        data[key] = value
    return data


def csv_header(reader: csv.DictReader, source: str) -> list[str]:
    """The header of a CSV file; malformed, or naming a column twice, is an error on line 1."""
    try:
        header = list(reader.fieldnames or [])
    except csv.Error as exc:
        raise InputError(f"malformed CSV header: {exc}", source=source, line=1) from exc
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:  # csv.DictReader would keep the last silently: which one was meant?
        raise InputError(f"column {', '.join(repr(n) for n in twice)} appears more than once in the header; "
                         "keep one", source=source, line=1)
    return header


def csv_rows(reader: csv.DictReader, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each row of a CSV file (after :func:`csv_header`) with the line it starts on (a quoted cell
    may span lines); a malformed row is an error naming the line the parser stopped on."""
    previous_end = reader.line_num
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "end of data" in str(exc):  # a quote opened and never closed: it ate the rest of the file
                raise InputError("unterminated quoted cell in the row starting on this line",
                                 source=source, line=previous_end + 1) from exc
            # the parser's own count: DictReader's line_num is updated only after a row is read
            raise InputError(f"malformed CSV: {exc}", source=source, line=reader.reader.line_num) from exc
        end = reader.line_num
        yield end - sum(str(v).count("\n") for v in row.values() if isinstance(v, str)), row
        previous_end = end


def read_csv(path: str | Path) -> list[Item]:
    """Items from CSV; a row is named by the line it starts on (a quoted cell may span lines)."""
    path = Path(path)
    source = str(path)
    text = _decode(_read_bytes(path), source)
    reader = csv.DictReader(io.StringIO(text), strict=True)
    header = csv_header(reader, source)
    if len(header) == 1 and any(sep in header[0] for sep in ";\t|"):
        sep = next(s for s in ";\t|" if s in header[0])
        raise InputError(f"the header is one column holding {'tabs' if sep == chr(9) else repr(sep)}: assay reads "
                         "comma-separated CSV; save the file with commas as the delimiter", source=source, line=1)
    if header:
        check_header(header, source)
    return [_item_from(_row_to_dict(row, source, start), source, start) for start, row in csv_rows(reader, source)]


def read_parquet(path: str | Path) -> list[Item]:
    path = Path(path)
    import pandas as pd
    _read_bytes(path)[:0]  # an unreadable file is an InputError before pyarrow sees it
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for a file that is not Parquet
        raise InputError(f"not a readable Parquet file ({type(exc).__name__}: {str(exc)[:200]})",
                         source=str(path)) from exc
    return read_dataframe(frame, source=str(path))


def read_dataframe(frame: Any, source: str = "DataFrame") -> list[Item]:
    """Items from a pandas DataFrame; 'line' in errors is the 1-based row number."""
    items = []
    for number, row in enumerate(frame.to_dict(orient="records"), 1):
        clean = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in row.items()}
        items.append(_item_from(_row_to_dict(clean, source, number), source, number))
    if not items:
        raise InputError("no items", source=source)
    return items


def read_json(path: str | Path) -> list[Item]:
    """Items from a .json file holding an array of records (RAGAS's and DeepEval's exports), or an
    object whose one list-valued field holds them; errors name the record's position as its line."""
    path = Path(path)
    source = str(path)
    data = load_json(path, None)
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) != 1:
            raise InputError("expected an array of records (or an object with one array of them)", source=source)
        data = lists[0]
    if not isinstance(data, list):
        raise InputError(f"expected an array of records, got {type(data).__name__}", source=source)
    items: list[Item] = []
    for number, record in enumerate(data, 1):
        items.extend(_items_from(record, source, number))
    return items


def read_items(path: str | Path) -> list[Item]:
    """Read items from a .jsonl, .json (an array), .csv or .parquet file."""
    path = Path(path)
    source = str(path)
    reset_notes(source)
    if not path.exists():
        raise InputError("no such file", source=source)
    if not path.is_file():
        raise InputError("not a file", source=source)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        items = read_jsonl(path)
    elif suffix == ".json":
        items = read_json(path)
    elif suffix == ".csv":
        items = read_csv(path)
    elif suffix in (".parquet", ".pq"):
        items = read_parquet(path)
    else:
        raise InputError(f"unknown input format {suffix!r}; use .jsonl, .json, .csv or .parquet", source=source)
    if not items:
        raise InputError("the file holds no items", source=source)
    check_unique(items, source)
    return items


def check_unique(items: list[Item], source: str) -> None:
    """Two items with the same id and system cannot both be evaluated in one run: one error
    naming both lines (rows, for Parquet)."""
    seen: dict[str, Item] = {}
    for item in items:
        first = seen.setdefault(item.key, item)
        if first is not item:
            system = f" and system {item.system!r}" if item.system else ""
            raise InputError(f"duplicate item: id {item.id!r}{system} already on line {first._line}",
                             source=source, line=item._line, field="id")
