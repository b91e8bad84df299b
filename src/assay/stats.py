"""Statistics used across assay. (Correlations, agreement and tests arrive with the
meta-evaluation work; they will wrap scipy / scikit-learn / krippendorff.)"""

from __future__ import annotations

import math


def f_beta(precision: float, recall: float, beta: float = 2.0) -> float:
    """F-beta of a precision and a recall (beta > 1 weighs recall more; DeCE reports F2).

    Both zero gives 0.0: an answer with no supported element and no satisfied criterion.
    """
    if beta <= 0 or math.isnan(beta):
        raise ValueError(f"beta must be positive, got {beta}")
    for name, value in (("precision", precision), ("recall", recall)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    b2 = beta * beta
    denominator = b2 * precision + recall
    if denominator == 0:
        return 0.0
    return (1 + b2) * precision * recall / denominator
