"""Typed records of the run store (SPEC §2.0): what :class:`assay.store.Store` hands out.

Records read back from a store are built without re-validation (``model_construct``): the store
wrote them from validated models, and re-validating every row is what made re-deriving a large
cached run slow.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from assay.types import Completion

PATH = re.compile(r"^[A-Za-z_]\w*(\[\d+\])?(\.[A-Za-z_]\w*(\[\d+\])?)*$")
"""An annotation's address inside one unit's result: a score (``recall``) or a field of the
evidence (``elements[3].supported``, ``criteria[0].reasoning``)."""


class RunRecord(BaseModel):
    run_id: str
    method: str
    status: str
    manifest: dict[str, Any]
    created_at: float
    finished_at: float | None = None


class ResultRecord(BaseModel):
    """One unit's result with the unit it scores. ``items`` are the unit's items as stored
    (one for an item unit, ``a`` and ``b`` for a pair)."""

    run_id: str
    idx: int
    key: str
    """The unit's key (for an item unit: ``id`` or ``id::system``)."""
    status: str
    scores: dict[str, float | None]
    unscored: list[dict[str, Any]] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    call_keys: list[str] = Field(default_factory=list)
    created_at: float = 0.0
    kind: str = "item"
    round: int = 0
    items: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def item(self) -> dict[str, Any]:
        """The unit's first (for an item unit: only) item."""
        return self.items[0]

    def resolve(self, path: str) -> Any:
        """The value at ``path`` in this result (scores first, then the evidence); KeyError or
        IndexError when the path leads nowhere."""
        if not PATH.match(path):
            raise KeyError(path)
        value: Any = {**self.details, **self.scores}
        for part in path.split("."):
            name, _, index = part.partition("[")
            value = value[name]
            if index:
                value = value[int(index.rstrip("]"))]
        return value


class CallRecord(BaseModel):
    key: str
    backend: str
    request: dict[str, Any]
    completion: Completion
    created_at: float


class Annotation(BaseModel):
    """A human's judgement of one verdict: append-only, with author, reason and time."""

    id: int
    run_id: str
    unit_key: str
    path: str
    author: str
    value: Any
    reason: str
    created_at: float


class StageRecord(BaseModel):
    stage_id: str
    name: str
    manifest: dict[str, Any]
    status: str
    output_sha256: str | None = None
    created_at: float
    finished_at: float | None = None
