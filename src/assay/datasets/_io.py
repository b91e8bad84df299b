"""Reading assay items from JSONL, CSV, Parquet or a DataFrame (SPEC §2.6).

Bad input gives one :class:`~assay.errors.InputError` naming the file, the line (for CSV the
row's line, for Parquet the row number) and the field; nothing is written before input is read
in full.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.errors import InputError
from assay.types import Item

_JSON_COLUMNS = ("reference", "contexts", "history", "case", "metadata", "human")


def _item_from(data: Any, source: str, line: int) -> Item:
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}", source=source, line=line)
    try:
        return Item.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        message = err["msg"]
        if err["type"] == "missing":
            message = "required field is missing"
        elif err["type"] == "extra_forbidden":
            message = "unknown field (see SPEC §2.6 for the item format)"
        more = f" ({len(exc.errors()) - 1} more problem(s) on this line)" if len(exc.errors()) > 1 else ""
        raise InputError(message + more, source=source, line=line, field=loc) from exc


def _decode(raw: bytes, source: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", source=source, line=line) from exc


def read_jsonl(path: str | Path) -> list[Item]:
    path = Path(path)
    source = str(path)
    text = _decode(path.read_bytes(), source)
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", source=source,
                             line=number) from exc
        items.append(_item_from(data, source, number))
    return items


def _row_to_dict(row: dict[str, Any], source: str, line: int) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in row.items():
        if key is None:
            raise InputError("more values than header columns", source=source, line=line)
        if value is None or (isinstance(value, float) and value != value) or value == "":
            continue  # empty cell: field absent
        if key in _JSON_COLUMNS and isinstance(value, str) and value.strip()[:1] in ("{", "["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise InputError(f"cell is not valid JSON: {exc.msg}", source=source, line=line,
                                 field=key) from exc
        if key.startswith("reference_") and key in ("reference_required", "reference_helpful"):
            data.setdefault("reference", {})[key.removeprefix("reference_")] = value
            continue
        data[key] = value
    return data


def read_csv(path: str | Path) -> list[Item]:
    path = Path(path)
    source = str(path)
    text = _decode(path.read_bytes(), source)
    reader = csv.DictReader(io.StringIO(text))
    items = []
    for row in reader:
        line = reader.line_num
        items.append(_item_from(_row_to_dict(row, source, line), source, line))
    return items


def read_parquet(path: str | Path) -> list[Item]:
    path = Path(path)
    import pandas as pd
    return read_dataframe(pd.read_parquet(path), source=str(path))


def read_dataframe(frame: Any, source: str = "DataFrame") -> list[Item]:
    """Items from a pandas DataFrame; 'line' in errors is the 1-based row number."""
    items = []
    for number, row in enumerate(frame.to_dict(orient="records"), 1):
        clean = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in row.items()}
        items.append(_item_from(_row_to_dict(clean, source, number), source, number))
    if not items:
        raise InputError("no items", source=source)
    return items


def read_items(path: str | Path) -> list[Item]:
    """Read items from a .jsonl/.json-lines, .csv or .parquet file."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise InputError("no such file", source=source)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        items = read_jsonl(path)
    elif suffix == ".csv":
        items = read_csv(path)
    elif suffix in (".parquet", ".pq"):
        items = read_parquet(path)
    else:
        raise InputError(f"unknown input format {suffix!r}; use .jsonl, .csv or .parquet", source=source)
    if not items:
        raise InputError("the file holds no items", source=source)
    return items
