"""Calibration of probabilities against binary outcomes: Brier score and expected calibration error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from assay.analysis.stats.paired import paired_series
from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


def brier(probabilities: Sequence[float], outcomes: Sequence[int]) -> float:
    """Brier score of probabilities for binary outcomes (scikit-learn)."""
    from sklearn.metrics import brier_score_loss

    return float(brier_score_loss(list(outcomes), list(probabilities)))


def ece(probabilities: Sequence[float], outcomes: Sequence[int], bins: int = 10) -> float:
    """Expected calibration error: equal-width confidence bins, |accuracy − mean confidence|
    weighted by the share of predictions in the bin. ``probabilities`` are the probability of
    outcome 1."""
    p, o = paired_series(probabilities, [float(v) for v in outcomes])
    if not len(p):
        raise ValueError("no predictions")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("probabilities must lie in [0, 1]")
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(p, edges[1:-1], right=True), 0, bins - 1)
    total = 0.0
    for k in range(bins):
        mask = index == k
        if mask.any():
            total += mask.mean() * abs(o[mask].mean() - p[mask].mean())
    return float(total)
