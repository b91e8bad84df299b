"""Seeded bootstrap distributions and their percentile intervals."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


def cluster_bootstrap(statistic: Any, n_points: int, groups: list[Any] | None, resamples: int, seed: int,
                       confidence: float) -> np.ndarray:
    """The bootstrap distribution of ``statistic(index array)`` (NaNs dropped). Without groups the
    points are resampled (scipy.stats.bootstrap, paired); with groups the groups are resampled and
    each drawn group brings all its points (a cluster bootstrap: points of one group — e.g. two
    annotators' labels of one pair — are not independent, and resampling them one by one makes
    the interval too narrow)."""
    from scipy import stats

    if groups is None:
        units = [np.array([i]) for i in range(n_points)]
    else:
        members: dict[Any, list[int]] = {}
        for i, g in enumerate(groups):
            members.setdefault(g, []).append(i)
        units = [np.array(v) for v in members.values()]

    def over_units(chosen: np.ndarray) -> float:
        return float(statistic(np.concatenate([units[int(u)] for u in chosen])))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = stats.bootstrap((np.arange(len(units)),), over_units, vectorized=False, n_resamples=resamples,
                               confidence_level=confidence, method="percentile",
                               random_state=np.random.default_rng(seed))
    dist = np.asarray(boot.bootstrap_distribution, dtype=float)
    return dist[~np.isnan(dist)]


def percentile_interval(dist: np.ndarray, confidence: float) -> tuple[float, float] | None:
    if not len(dist):
        return None
    tail = (1 - confidence) / 2
    return float(np.quantile(dist, tail)), float(np.quantile(dist, 1 - tail))
