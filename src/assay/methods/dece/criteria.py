"""Frozen criteria (the expert review workflow): a question's criteria as written to and read
from a criteria file, and what an expert edited."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from assay.core.errors import InputError


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[\"'“”‘’`]", "", text)
    return re.sub(r"\s+", " ", text).strip(" .…")


class CriteriaSet(BaseModel):
    """Criteria of one question, as written to and read from a criteria file."""

    id: str
    query: str = ""
    criteria: list[str]
    source: str = "extracted"
    original: list[str] | None = None
    """The criteria as extracted, kept so the store can mark what an expert edited."""
    judge: str | None = None
    prompt_sha256: str | None = None

    def edited_flags(self) -> list[bool]:
        if self.original is None:
            return [False] * len(self.criteria)
        original = {_normalise(c) for c in self.original}
        return [_normalise(c) not in original for c in self.criteria]

    def summary(self) -> dict[str, int]:
        flags = self.edited_flags()
        removed = 0
        if self.original is not None:
            current = {_normalise(c) for c in self.criteria}
            removed = sum(1 for c in self.original if _normalise(c) not in current)
        return {"criteria": len(self.criteria), "edited_or_added": sum(flags), "removed": removed}


def load_criteria_file(path: str | Path) -> dict[str, CriteriaSet]:
    """Read a criteria JSONL file (from ``assay dece criteria extract``, maybe edited)."""
    from assay.core._load import jsonl_records, validate

    path = Path(path)
    sets: dict[str, CriteriaSet] = {}
    for number, data in jsonl_records(path, kind="a criteria record"):
        criteria_set = validate(CriteriaSet, data, str(path), number)
        cleaned = [c.strip() for c in criteria_set.criteria if c.strip()]
        if not cleaned:
            raise InputError("no criteria", source=str(path), line=number, field="criteria")
        if criteria_set.id in sets:
            raise InputError(f"id {criteria_set.id!r} appears twice", source=str(path), line=number,
                             field="id")
        sets[criteria_set.id] = criteria_set.model_copy(update={"criteria": cleaned})
    if not sets:
        raise InputError("the criteria file is empty", source=str(path))
    return sets


def is_criteria_record(record: dict[str, Any]) -> bool:
    """Whether ``record`` (a JSON Lines file's first) is a criteria file's (``assay dece criteria
    extract``): the command replaces such a file without ``--force``."""
    return {"criteria", "original"} <= set(record)
