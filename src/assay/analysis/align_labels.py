"""The labels `assay align` fits on: a team's grades, verdict labels and pair preferences, read from a
label file (one loader: file, line and field in every error) or from the review UI's annotations."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core._load import reject_constant
from assay.core.errors import InputError
from assay.core.records import UnitResult
from assay.data.datasets._io import csv_header, csv_rows
from assay.store import Store

GRADE_PATHS = ("human.grade_correctness",)
"""The review UI's grade read as an item grade (1–5, mapped to 0–1)."""
VERDICT = re.compile(r"^(?P<kind>[A-Za-z_]\w*)\[(?P<index>\d+)\]$")
_TRUE: dict[Any, int] = {True: 1, False: 0, "1": 1, "0": 0, "true": 1, "false": 0, "yes": 1, "no": 0}


# --- labels -----------------------------------------------------------------------------------------
@dataclass
class Labels:
    """Reviewers' labels keyed by what they label. ``grades``: (id, system) → grades in [0, 1];
    ``verdicts``: (id, system, "criteria[0]") → 0/1 labels; ``pairs``: (id, a, b) → winners
    ("A", "B", "tie") and ``preferences``: (id, a, b) → numbers (positive: b is better)."""

    grades: dict[tuple[str, str | None], list[float]] = field(default_factory=dict)
    verdicts: dict[tuple[str, str | None, str], list[int]] = field(default_factory=dict)
    pairs: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    preferences: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"grades": sum(map(len, self.grades.values())), "verdicts": sum(map(len, self.verdicts.values())),
                "pairs": sum(map(len, self.pairs.values())), "preferences": sum(map(len, self.preferences.values()))}


def _grade(value: Any, source: str, line: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise InputError(f"grade {value!r} is not a finite number", source=source, line=line, field="grade")
    value = float(value)
    if 0.0 <= value <= 1.0:
        return value
    if 1.0 <= value <= 5.0:
        from assay.store.human import grade_score
        return grade_score(value)
    raise InputError(f"grade {value:g} is neither a 0–1 score nor a 1–5 grade", source=source, line=line,
                     field="grade")


def _text(record: dict[str, Any], name: str, source: str, line: int, required: bool = True) -> str | None:
    value = record.get(name)
    if value is None or value == "":
        if required:
            raise InputError(f"'{name}' is missing", source=source, line=line, field=name)
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"'{name}' must be text, got {type(value).__name__}", source=source, line=line, field=name)
    return str(value)


def _records(path: Path) -> Iterable[tuple[int, Any]]:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", source=source) from None
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text), strict=True)
        csv_header(reader, source)  # a column named twice: which one holds the label?
        for n, row in csv_rows(reader, source):
            clean: dict[str, Any] = {}
            for key, value in row.items():
                if key is None:
                    raise InputError("more values than columns", source=source, line=n)
                if value is None or value.strip() == "":
                    continue
                value = value.strip()
                if key in ("grade", "preference"):
                    try:
                        clean[key] = float(value)
                    except ValueError:
                        raise InputError(f"{value!r} is not a number", source=source, line=n, field=key) from None
                else:
                    clean[key] = value
            yield n, clean
        return
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line, parse_constant=reject_constant)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=source, line=n) from None
        except ValueError as exc:  # NaN or Infinity
            raise InputError(str(exc), source=source, line=n) from None


def read_labels(path: str | Path) -> Labels:
    """A label file: JSON Lines (or CSV with the same columns), one label a line.

    Every line has ``id`` (and ``system`` when the run's items have one) and one of:

    * ``grade``: the answer's grade, a 0–1 score or a 1–5 grade (mapped to 0–1);
    * ``verdict`` (a verdict's address in the result, e.g. ``criteria[0]`` or ``elements[2]``) and
      ``label`` (1 / 0, true / false, yes / no): whether the verdict holds;
    * ``a``, ``b`` (the two systems) and ``winner`` (``A``, ``B`` or ``tie``) or ``preference``
      (a number, positive when ``b`` is better).

    Anything else is one InputError line naming the file, line and field."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise InputError("label file not found", source=source)
    labels = Labels(sources=[source])
    for n, record in _records(path):
        if not isinstance(record, dict):
            raise InputError("expected an object with 'id' and a label", source=source, line=n)
        item = _text(record, "id", source, n)
        assert item is not None
        system = _text(record, "system", source, n, required=False)
        kinds = [k for k in ("grade", "verdict", "winner", "preference") if record.get(k) is not None]
        if len(kinds) != 1:
            raise InputError("expected exactly one of 'grade', 'verdict' (with 'label'), 'winner' or 'preference'"
                             + (f"; got {', '.join(kinds)}" if kinds else ""), source=source, line=n,
                             field=kinds[1] if len(kinds) > 1 else "grade")
        kind = kinds[0]
        if kind == "grade":
            labels.grades.setdefault((item, system), []).append(_grade(record["grade"], source, n))
        elif kind == "verdict":
            address = _text(record, "verdict", source, n)
            assert address is not None
            if not VERDICT.match(address):
                raise InputError(f"{address!r} is not a verdict's address such as criteria[0]", source=source,
                                 line=n, field="verdict")
            raw = record.get("label")
            key = raw.strip().lower() if isinstance(raw, str) else raw
            if isinstance(key, float) and key in (0.0, 1.0):
                key = int(key)
            if key is None or isinstance(key, list | dict) or key not in _TRUE:
                raise InputError(f"label {raw!r}: use 1 or 0 (true/false, yes/no)", source=source, line=n,
                                 field="label")
            labels.verdicts.setdefault((item, system, address), []).append(_TRUE[key])
        else:
            a, b = _text(record, "a", source, n), _text(record, "b", source, n)
            assert a is not None and b is not None
            if a == b:
                raise InputError(f"'a' and 'b' name the same system {a!r}", source=source, line=n, field="b")
            if kind == "winner":
                winner = str(record["winner"]).strip()
                winner = {"a": "A", "b": "B", "tie": "tie"}.get(winner.lower(), "")
                if not winner:
                    raise InputError(f"winner {record['winner']!r}: use A, B or tie", source=source, line=n,
                                     field="winner")
                labels.pairs.setdefault((item, a, b), []).append(winner)
            else:
                value = record["preference"]
                if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                    raise InputError(f"preference {value!r} is not a finite number", source=source, line=n,
                                     field="preference")
                labels.preferences.setdefault((item, a, b), []).append(float(value))
    return labels


def store_labels(store: Store, run_id: str, rows: list[UnitResult]) -> Labels:
    """The review UI's labels of a run: each reviewer's latest 1–5 correctness grade, and each
    verdict a reviewer set (``criteria[0].satisfied`` = 1 or 0) on a verdict with a probability
    (annotations are append-only and read in order, so a later value of an author replaces theirs)."""
    from assay.store.human import grade_score

    by_key = {r.key: r for r in rows}
    labels = Labels(sources=[f"{store.path}: annotations of run {run_id}"])
    authors = {a.author for a in store.annotations(run_id)}
    for author in sorted(authors):
        mine: dict[str, dict[str, Any]] = {}
        for a in store.annotations(run_id):
            if a.author == author:
                mine.setdefault(a.unit_key, {})[a.path] = a.value
        for unit_key, values in mine.items():
            row = by_key.get(unit_key)
            if row is None or row.kind != "item":
                continue
            item, system = str(row.item["id"]), row.item.get("system")
            for path, value in values.items():
                if path in GRADE_PATHS and isinstance(value, int | float) and not isinstance(value, bool) \
                        and 1 <= value <= 5:
                    labels.grades.setdefault((item, system), []).append(grade_score(value))
                    continue
                address = path.rpartition(".")[0]
                key = value.strip().lower() if isinstance(value, str) else value
                if VERDICT.match(address) and not isinstance(key, list | dict) and key in _TRUE:
                    try:
                        entry = row.resolve(address)
                    except (KeyError, IndexError, TypeError):
                        continue
                    if isinstance(entry, dict) and entry.get("p_judge") is not None:
                        labels.verdicts.setdefault((item, system, address), []).append(_TRUE[key])
    return labels


def merge(*parts: Labels) -> Labels:
    out = Labels()
    for part in parts:
        for name in ("grades", "verdicts", "pairs", "preferences"):
            target = getattr(out, name)
            for key, values in getattr(part, name).items():
                target.setdefault(key, []).extend(values)
        out.sources.extend(part.sources)
    return out
