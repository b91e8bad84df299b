"""Triage (LeMAJ §5, App. H): clear the answers the judge found fully correct and relevant
enough, send the rest to an expert, and estimate the review time saved.

An answer is cleared when its Correctness is at least ``min_correctness`` (default 1: no
incorrect point) and its Relevance (F1, or the run's F_beta) at least ``min_relevance`` (default
0.80, the paper's threshold on its proprietary set; it used 0.85 on LegalBench). An answer with
either score undefined or unscored needs review, with the reason. Time saved = cleared answers ×
``minutes_per_item`` (the paper measured 3–4 minutes a LegalBench question); the share saved is
cleared / all. Everything is computed from the exported rows, so an exported run reproduces it.
"""

from __future__ import annotations

from typing import Any


def triage(rows: list[dict[str, Any]], *, min_correctness: float = 1.0, min_relevance: float = 0.8,
           minutes_per_item: float = 3.5, relevance: str = "relevance") -> dict[str, Any]:
    """Split exported LeMAJ rows into cleared and needs-review (each entry: id, system, scores
    and, for review, why)."""
    cleared: list[dict[str, Any]] = []
    review: list[dict[str, Any]] = []
    for r in rows:
        correctness, relevant = r.get("correctness"), r.get(relevance)
        entry = {"id": r.get("id"), "system": r.get("system"), "correctness": correctness, relevance: relevant}
        reasons = []
        if correctness is None:
            reasons.append("correctness undefined or unscored")
        elif correctness < min_correctness:
            reasons.append(f"correctness {correctness:.2f} < {min_correctness:g}")
        if relevant is None:
            reasons.append(f"{relevance} undefined or unscored")
        elif relevant < min_relevance:
            reasons.append(f"{relevance} {relevant:.2f} < {min_relevance:g}")
        if reasons:
            review.append({**entry, "why": "; ".join(reasons)})
        else:
            cleared.append(entry)
    total = len(cleared) + len(review)
    return {"thresholds": {"min_correctness": min_correctness, f"min_{relevance}": min_relevance,
                           "minutes_per_item": minutes_per_item},
            "answers": total, "cleared": cleared, "needs_review": review,
            "minutes_without_triage": total * minutes_per_item,
            "minutes_saved": len(cleared) * minutes_per_item,
            "share_saved": len(cleared) / total if total else None}
