"""Rubric files and preference pairs for PReMISE (PReMISE, arXiv:2605.30803, §3, App. A).

A rubric set is YAML or JSON: either a list of criteria or an object with ``criteria`` (or
``rubrics``) and optional ``source`` / ``provenance``. A criterion has ``id`` and ``description``
(the paper's rubric_id / rubric_description; ``name`` is accepted for ``id``), an optional
applicability ``gate`` (when the criterion applies), and provenance: ``support`` (σ, the number
of raw candidates it consolidates) and ``sources`` (the preference pairs they came from).
Hand-written rubrics and other tools' rubrics load the same way; unknown keys are kept in
``extra``.

Preference pairs come from the HaluQuestQA preference TSV (``question_text``,
``preferred_response``, ``rejected_response``), from pairwise JSONL (``a``/``b`` with
``human.winner`` A or B; ties say nothing about a preference and are skipped, and counted), or
from JSONL with ``prompt`` / ``chosen`` / ``rejected``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from assay.core._files import YAML_MARK, atomic_write_text, write_json
from assay.core.errors import InputError


class Criterion(BaseModel):
    """One rubric criterion with its provenance."""

    id: str
    description: str
    gate: str | None = None
    """When the criterion applies (None: always)."""
    support: int = Field(default=1, ge=0)
    sources: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class RubricSet(BaseModel):
    criteria: list[Criterion]
    source: str = "hand-written"
    provenance: dict[str, Any] = Field(default_factory=dict)


class PreferencePair(BaseModel):
    id: str
    prompt: str
    chosen: str
    rejected: str


_ID = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    """A snake_case id from a name."""
    return _ID.sub("_", text.lower()).strip("_")[:60] or "criterion"


def load_rubric(path: str | Path) -> RubricSet:
    """Read a rubric set; one clear InputError naming the file, entry and field when it is wrong."""
    from assay.core._load import load_json, load_yaml

    path = Path(path)
    data = load_json(path, None) if path.suffix.lower() == ".json" else load_yaml(path)
    meta: dict[str, Any] = {}
    if isinstance(data, dict):
        entries = data.get("criteria", data.get("rubrics"))
        meta = {k: v for k, v in data.items() if k not in ("criteria", "rubrics")}
    else:
        entries = data
    if not isinstance(entries, list) or not entries:
        raise InputError("expected a non-empty list of criteria (or an object with 'criteria')", source=str(path))
    criteria: list[Criterion] = []
    seen: set[str] = set()
    for n, entry in enumerate(entries, 1):
        where = f"criterion {n}"
        if not isinstance(entry, dict):
            raise InputError(f"{where} is not an object with id and description", source=str(path))
        entry = dict(entry)
        if "id" not in entry:
            entry["id"] = entry.pop("name", entry.pop("rubric_id", None))
        if "description" not in entry:
            entry["description"] = entry.pop("rubric_description", entry.pop("definition", None))
        for field in ("id", "description"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise InputError(f"{where}: '{field}' is missing or empty", source=str(path), field=field)
        known = set(Criterion.model_fields) - {"extra"}
        extra = {k: v for k, v in entry.items() if k not in known}
        try:
            criterion = Criterion.model_validate({**{k: v for k, v in entry.items() if k in known}, "extra": extra})
        except ValidationError as exc:  # one line: the first problem, its field and what is wrong
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or None
            more = f" ({len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
            raise InputError(f"{where} ({entry.get('id')!r}): {err['msg']}, got {err.get('input')!r}{more}",
                             source=str(path), field=loc) from exc
        if criterion.id in seen:
            raise InputError(f"{where}: id {criterion.id!r} appears twice", source=str(path), field="id")
        seen.add(criterion.id)
        criteria.append(criterion)
    provenance = meta.get("provenance") or {}
    if not isinstance(provenance, dict):
        raise InputError(f"'provenance' must be a mapping (key: value lines), got {type(provenance).__name__} "
                         f"{str(provenance)[:60]!r}", source=str(path), field="provenance")
    return RubricSet(criteria=criteria, source=str(meta.get("source", "hand-written")), provenance=provenance)


def save_rubric(rubric: RubricSet, path: str | Path) -> None:
    """Write YAML (JSON for a .json path), atomically."""
    path = Path(path)
    data = rubric.model_dump(mode="json")
    for c in data["criteria"]:
        c.update(c.pop("extra"))  # unknown keys go back where they were read from
        if c["gate"] is None:
            del c["gate"]
    if path.suffix.lower() == ".json":
        write_json(path, data)
    else:
        import yaml

        atomic_write_text(path, f"{YAML_MARK}: a rubric set\n"
                          + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))


def read_preference_pairs(path: str | Path) -> tuple[list[PreferencePair], list[str]]:
    """Pairs and notes (e.g. how many ties were skipped) from a TSV or JSONL file."""
    path = Path(path)
    source = str(path)
    notes: list[str] = []
    pairs: list[PreferencePair] = []
    from assay.core._load import parse_json, read_text

    text = read_text(path)
    if path.suffix.lower() in (".tsv", ".csv"):
        reader = csv.DictReader(text.splitlines(), delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        need = ("question_text", "preferred_response", "rejected_response")
        missing = [c for c in need if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)}", source=source)
        for n, row in enumerate(reader, 2):
            for column in need:
                if not (row.get(column) or "").strip():
                    raise InputError(f"empty {column}", source=source, line=n, field=column)
            pairs.append(PreferencePair(id=f"pair{(row.get('') or '').strip() or n}", prompt=row["question_text"],
                                        chosen=row["preferred_response"], rejected=row["rejected_response"]))
    else:
        ties = 0
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            parsed = parse_json(line, source, n)
            if not isinstance(parsed, dict):
                raise InputError("not a JSON object", source=source, line=n)
            row = parsed
            pid = str(row.get("id", f"pair{n}"))
            prompt = row.get("query", row.get("prompt"))
            if not isinstance(prompt, str) or not prompt.strip():
                raise InputError("no 'query' (or 'prompt')", source=source, line=n, field="query")
            if "chosen" in row or "rejected" in row:
                chosen, rejected = row.get("chosen"), row.get("rejected")
            elif "a" in row and "b" in row:
                human = row.get("human")
                if human is not None and not isinstance(human, dict):
                    raise InputError(f"'human' must be an object like {{\"winner\": \"A\"}}, got {human!r}",
                                     source=source, line=n, field="human")
                winner = str(((human or {}).get("winner")) or "").strip()
                if winner.lower() == "tie":
                    ties += 1
                    continue
                if winner not in ("A", "B"):
                    raise InputError(f"human.winner must be A, B or tie, got {winner or 'nothing'!r}", source=source,
                                     line=n, field="human.winner")
                for side in ("a", "b"):
                    if not isinstance(row[side], dict):
                        raise InputError(f"'{side}' must be an object with a 'response', got "
                                         f"{type(row[side]).__name__}", source=source, line=n, field=side)
                a, b = row["a"].get("response"), row["b"].get("response")
                chosen, rejected = (a, b) if winner == "A" else (b, a)
            else:
                raise InputError("expected 'a'/'b' with human.winner, or 'chosen'/'rejected'", source=source, line=n)
            for name, value in (("chosen", chosen), ("rejected", rejected)):
                if not isinstance(value, str) or not value.strip():
                    raise InputError(f"empty {name} response", source=source, line=n)
            assert isinstance(chosen, str) and isinstance(rejected, str)
            pairs.append(PreferencePair(id=pid, prompt=prompt, chosen=chosen, rejected=rejected))
        if ties:
            notes.append(f"{ties} tie(s) skipped: a tie states no preference")
    if not pairs:
        raise InputError("no preference pairs", source=source)
    ids = [p.id for p in pairs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"pair id {dup!r} appears twice", source=source)
    return pairs, notes
