"""Typed records of the run store: what :class:`assay.store.Store` hands out.

Records read back from a store are built without re-validation (``model_construct``): the store
wrote them from validated models, and re-validating every row is what made re-deriving a large
cached run slow.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from assay.core.types import Completion, Unscored

PATH = re.compile(r"[A-Za-z_]\w*(\[\d+\])?(\.[A-Za-z_]\w*(\[\d+\])?)*\Z", re.ASCII)
"""An annotation's address inside one unit's result: a score (``recall``) or a field of the
evidence (``elements[3].supported``, ``criteria[0].reasoning``)."""


class RunRecord(BaseModel):
    run_id: str
    method: str
    status: str
    manifest: dict[str, Any]
    created_at: float
    finished_at: float | None = None


ENGINE_DETAILS = frozenset({"grader_directed_text"})
"""Keys of a stored result's details that the engine adds (not the method): the passages of the
answer aimed at the grader. Everything else in the details is the method's."""


def resolve(scores: dict[str, Any], details: dict[str, Any], path: str) -> Any:
    """The value at ``path`` in a result's scores and details (scores first); KeyError or
    IndexError when the path leads nowhere."""
    if not PATH.match(path):
        raise KeyError(path)
    value: Any = {**details, **scores}
    for part in path.split("."):
        name, _, index = part.partition("[")
        value = value[name]
        if index:
            value = value[int(index.rstrip("]"))]
    return value


class Edit(BaseModel):
    """A reviewer's change to one address of a unit's result, with its provenance: who, when, why,
    from what (``previous``) to what (``value``). Edits are appended, never changed (the store's
    table refuses it); the result keeps the judge's original, and its current value at an address
    is the last edit's (as Inspect AI's ``ScoreEdit`` history of a ``Score``). An address under
    ``human.`` is something the reviewer adds (a grade, a comment); ``previous`` is then the
    value the last edit there gave, else None."""

    id: int
    run_id: str
    unit_key: str
    path: str
    author: str
    value: Any
    reason: str
    created_at: float
    previous: Any = None
    """The value at ``path`` just before this edit (None for a first ``human.`` addition, and
    for an edit of a unit that had no stored result when the store was migrated)."""

    @property
    def adds(self) -> bool:
        """Whether the edit adds something of the reviewer's (``human.``) rather than changing a
        verdict of the judge."""
        return self.path.startswith("human.")



class Score(BaseModel):
    """One metric of a unit's result as a reader sees it: the current value (the last edit's, else
    the judge's), the judge's original, why it is unscored (with the raw judge output), the
    explanation (the last edit's reason, else the method's ``explanation``/``reasoning`` detail)
    and the evidence behind it (the method's verdict lists: criteria, elements, claims...)."""

    name: str
    value: float | None
    original: float | None
    explanation: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)
    unscored: Unscored | None = None
    edits: list[Edit] = Field(default_factory=list)

    @property
    def edited(self) -> bool:
        return bool(self.edits)


class UnitResult(BaseModel):
    """One unit's result: the one shape every reader gets from the store. The unit (``items``:
    one for an item unit, ``a`` and ``b`` for a pair), the judge's scores with the Unscored
    reasons, the details in two namespaces (``method``: the method's evidence; ``engine``: what
    the engine adds, e.g. ``grader_directed_text``), the judge calls behind it, and the
    ``history`` of reviewers' edits, oldest first. The store row, the export row, the report's and
    the UI's rows are views of it (:func:`assay.store._runs.store_row`,
    :func:`assay.exchange.export.export_row`)."""

    run_id: str
    idx: int
    key: str
    """The unit's key (for an item unit: ``id`` or ``id::system``)."""
    status: str
    scores: dict[str, float | None]
    """The judge's scores, as stored (an edit does not change them; see :meth:`current`)."""
    unscored: list[Unscored] = Field(default_factory=list)
    method: dict[str, Any] = Field(default_factory=dict)
    engine: dict[str, Any] = Field(default_factory=dict)
    call_keys: list[str] = Field(default_factory=list)
    created_at: float = 0.0
    kind: str = "item"
    round: int = 0
    items: list[dict[str, Any]] = Field(default_factory=list)
    history: list[Edit] = Field(default_factory=list)

    @classmethod
    def split_details(cls, details: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Stored details as (method's, engine's)."""
        method = {k: v for k, v in details.items() if k not in ENGINE_DETAILS}
        engine = {k: v for k, v in details.items() if k in ENGINE_DETAILS}
        return method, engine

    @property
    def details(self) -> dict[str, Any]:
        """The method's and the engine's details in one mapping (as stored)."""
        return {**self.method, **self.engine}

    @property
    def item(self) -> dict[str, Any]:
        """The unit's first (for an item unit: only) item."""
        return self.items[0]

    def resolve(self, path: str) -> Any:
        """The judge's value at ``path`` in this result (scores first, then the evidence);
        KeyError or IndexError when the path leads nowhere."""
        return resolve(self.scores, self.details, path)

    def edits(self, path: str | None = None) -> list[Edit]:
        """The edits (of ``path`` only, if given), oldest first."""
        return [e for e in self.history if path is None or e.path == path]

    def current(self, path: str) -> Any:
        """The value at ``path`` now: the last edit's, else the judge's (KeyError when neither)."""
        edits = self.edits(path)
        return edits[-1].value if edits else self.resolve(path)

    @property
    def current_scores(self) -> dict[str, float | None]:
        """The scores with the reviewers' last edits applied."""
        return {name: self.current(name) for name in self.scores}

    def score(self, name: str) -> Score:
        """One metric as a :class:`Score` (KeyError for a metric the result does not have)."""
        original = self.scores[name]
        edits = self.edits(name)
        why = next((u for u in self.unscored if u.metric == name), None)
        if why is None and original is None:
            why = next((u for u in self.unscored if u.metric is None), None)
        told = self.method.get("explanation", self.method.get("reasoning"))
        explanation = edits[-1].reason if edits and edits[-1].reason else told if isinstance(told, str) else None
        evidence = {k: v for k, v in self.method.items() if isinstance(v, list) and v and isinstance(v[0], dict)}
        return Score(name=name, value=edits[-1].value if edits else original, original=original,
                     explanation=explanation, evidence=evidence, unscored=why, edits=edits)

    @property
    def score_list(self) -> list[Score]:
        return [self.score(name) for name in self.scores]


_RENAMED = {"ResultRecord": "UnitResult", "Annotation": "Edit"}


def __getattr__(name: str) -> object:
    # the names of assay 0.2, for one release
    if name in _RENAMED:
        import warnings

        warnings.warn(f"assay.core.records.{name} is now {_RENAMED[name]}; the old name works until assay 0.4",
                      DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
"""The result type's former name."""


class CallRecord(BaseModel):
    key: str
    backend: str
    request: dict[str, Any]
    completion: Completion
    created_at: float


class StageRecord(BaseModel):
    stage_id: str
    name: str
    manifest: dict[str, Any]
    status: str
    output_sha256: str | None = None
    created_at: float
    finished_at: float | None = None
