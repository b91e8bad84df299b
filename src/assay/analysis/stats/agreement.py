"""Agreement between raters: Cohen's kappa and Krippendorff's alpha."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


def cohen_kappa(a: Sequence[Any], b: Sequence[Any],
                weights: Literal["linear", "quadratic"] | None = None) -> float:
    """Cohen's kappa of two raters (scikit-learn), plain or linearly/quadratically weighted."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b) or not len(a):
        raise ValueError(f"two raters need equally many labels (>0), got {len(a)} and {len(b)}")
    return float(cohen_kappa_score(list(a), list(b), weights=weights))


def krippendorff_alpha(ratings: Sequence[Sequence[float | None]],
                       level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal") -> float:
    """Krippendorff's alpha; ``ratings`` is raters × units, ``None`` where a rater gave none."""
    import krippendorff

    data = np.array([[np.nan if v is None else v for v in row] for row in ratings], dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
