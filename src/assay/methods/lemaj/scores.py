"""LeMAJ's scores from tagged Legal Data Points (§3.2) and its agreement measures (§4.2.2,
Table 4): pure functions, shared by the method and its review panel."""

from __future__ import annotations

import math
from collections.abc import Mapping

from assay.core.types import Unscored

TAGS = ("correct", "incorrect", "irrelevant", "missing")


def ldp_scores(counts: Mapping[str, float], beta: float = 1.0) -> tuple[dict[str, float | None], list[Unscored]]:
    """§3.2's metrics from tag counts (or expected counts); a zero denominator gives null with its reason."""
    c, i, irr, m = (counts.get(t, 0) for t in TAGS)
    scores: dict[str, float | None] = {}
    unscored: list[Unscored] = []

    def ratio(metric: str, den: float, why: str) -> None:
        scores[metric] = c / den if den else None
        if not den:
            unscored.append(Unscored(reason=f"undefined: {why}", metric=metric))

    ratio("correctness", c + i, "no correct or incorrect point")
    ratio("precision", c + irr, "no correct or irrelevant point")
    ratio("recall", c + m, "no correct or missing point")
    p, r = scores["precision"], scores["recall"]
    for metric, b in (("f1", 1.0), ("relevance", beta)):
        if p is None or r is None:
            scores[metric] = None
            unscored.append(Unscored(reason="undefined: needs precision and recall", metric=metric))
        else:
            scores[metric] = 0.0 if p + r == 0 else (1 + b * b) * p * r / (b * b * p + r)
    return scores, unscored


def bucket(score: float) -> float:
    """Floor to the quarter (§4.2.2's bucketed accuracy: 0, 0.25, 0.5, 0.75, 1)."""
    return math.floor(score * 4 + 1e-9) / 4


def bucketed_accuracy(scores: list[float], human: list[float]) -> float | None:
    """§4.2.2: the share of answers whose score, floored to the quarter, equals the expert's
    quarter-scale score."""
    pairs = [(bucket(s), h) for s, h in zip(scores, human, strict=True)]
    return sum(abs(s - h) < 1e-9 for s, h in pairs) / len(pairs) if pairs else None


def percent_agreement(first: list[float], second: list[float]) -> float | None:
    """Table 4's inter-annotator agreement: the share of answers two reviewers scored the same
    (their 5-point grades, or their LeMAJ-derived scores floored to the quarter)."""
    pairs = list(zip(first, second, strict=True))
    return sum(abs(bucket(a) - bucket(b)) < 1e-9 for a, b in pairs) / len(pairs) if pairs else None
