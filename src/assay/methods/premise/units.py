"""An audit's criteria as units of its run (see the package docstring)."""

from __future__ import annotations

import math
from typing import Any

from assay.core.method import ItemResult
from assay.core.types import Item, Unit, Unscored

AUDIT_SCORES = ("structure", "alpha", "flip_rate", "rho", "applicability", "applicability_out", "vfr",
                "attack_mean_score", "reference_mean_score")
"""Per-criterion numbers of an audit, as the unit's scores (absent axes are left out)."""


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        else None


def audit_units(rubric: Any, rows: dict[str, dict[str, Any]], result: dict[str, Any]) -> list[tuple[Unit, ItemResult]]:
    """One unit per criterion of an audit: its numbers (``rows``: by criterion id, as the audit's
    JSON has them) as scores, its design-property flags and votes as details; a criterion whose
    structure votes were all unreadable is Unscored for ``structure`` with the reason."""
    structure = {e["id"]: e for e in result.get("structure", {}).get("criteria", [])}
    out = []
    for criterion in rubric.criteria:
        row = rows.get(criterion.id, {})
        applies = f"applies when: {criterion.gate}" if criterion.gate else "applies to every request"
        item = Item(id=criterion.id, query=criterion.description, response=applies,
                    system="rubric", metadata={"gate": criterion.gate, "support": criterion.support,
                                               "sources": criterion.sources[:20]})
        scores = {k: _finite(row.get(k)) for k in AUDIT_SCORES if k in row}
        unscored = []
        entry = structure.get(criterion.id, {})
        if "structure" in row and scores.get("structure") is None:
            reason = (entry.get("unscored") or {}).get("reason") or "no structure verdict"
            unscored.append(Unscored(reason=reason, metric="structure"))
        details = {"criterion": criterion.description, "gate": criterion.gate,
                   "flags": entry.get("flags") or {}, "votes": entry.get("votes") or {}}
        out.append((Unit.of(item), ItemResult(scores=scores, unscored=unscored, details=details)))
    return out
