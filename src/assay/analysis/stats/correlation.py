"""Correlation of scores with human labels, and the difference of two such correlations, with
seeded (cluster) bootstrap CIs."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from assay.analysis.stats.resampling import cluster_bootstrap, percentile_interval
from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

Correlation = Literal["pearson", "spearman", "kendall"]


@dataclass(frozen=True)
class CorrelationResult:
    method: str
    r: float | None
    p: float | None
    ci: tuple[float, float] | None
    n: int
    resamples: int
    seed: int
    confidence: float = 0.95
    note: str | None = None
    missing: int = 0
    """Pairs left out because a value was None or NaN."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _complete(x: Sequence[float | None], y: Sequence[float | None]) -> tuple[list[float], list[float], int]:
    """Drop pairs with a missing value (None or NaN); return the rest and how many were dropped."""
    if len(x) != len(y):
        raise ValueError(f"paired series must be of equal length, got {len(x)} and {len(y)}")
    xs, ys = [], []
    for a, b in zip(x, y, strict=True):
        if a is None or b is None or math.isnan(float(a)) or math.isnan(float(b)):
            continue
        xs.append(float(a))
        ys.append(float(b))
    return xs, ys, len(x) - len(xs)


def _corr_value(method: Correlation, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            res = stats.pearsonr(a, b)
        elif method == "spearman":
            res = stats.spearmanr(a, b)
        elif method == "kendall":
            res = stats.kendalltau(a, b)
        else:
            raise ValueError(f"unknown correlation {method!r}; use pearson, spearman or kendall")
    return float(res.statistic), float(res.pvalue)


def _complete_groups(x: Sequence[float | None], y: Sequence[float | None],
                     groups: Sequence[Any] | None) -> tuple[list[float], list[float], list[Any] | None, int]:
    """:func:`_complete`, keeping each kept pair's group label."""
    if groups is None:
        xs, ys, missing = _complete(x, y)
        return xs, ys, None, missing
    if len(groups) != len(x):
        raise ValueError(f"groups must label every pair: {len(groups)} labels for {len(x)} pairs")
    keep = [i for i, (a, b) in enumerate(zip(x, y, strict=True))
            if not (a is None or b is None or math.isnan(float(a)) or math.isnan(float(b)))]
    return ([float(x[i]) for i in keep], [float(y[i]) for i in keep],  # type: ignore[arg-type]
            [groups[i] for i in keep], len(x) - len(keep))


def correlation(x: Sequence[float | None], y: Sequence[float | None], method: Correlation = "pearson", *,
                resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                groups: Sequence[Any] | None = None) -> CorrelationResult:
    """Correlation with scipy's p-value and a seeded percentile-bootstrap CI (scipy.stats.bootstrap).
    ``resamples=0`` skips the CI. Pairs with a missing value (None/NaN) are dropped and counted in
    ``missing``; fewer than 3 pairs or a constant series give ``r=None`` with a ``note`` saying the
    correlation is undefined.

    ``groups`` labels pairs that belong together (e.g. one response pair's difference repeated for
    each annotator, RAGChecker's protocol): the CI then resamples groups, not pairs. scipy's p-value
    still treats the pairs as independent; with groups it is optimistic, and the CI is the figure
    to read."""
    xs, ys, kept_groups, missing = _complete_groups(x, y, groups)
    a, b = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    n = len(a)
    if n < 3:
        return CorrelationResult(method, None, None, None, n, resamples, seed, confidence,
                                 "undefined: fewer than 3 complete pairs", missing)
    # No correlation changes with the scale of a series: divided by its largest magnitude, values near
    # 1e308 no longer overflow the sums of squares (which gave nan, or a wrong r from inf - inf)
    a, b = (v / np.max(np.abs(v)) if n and np.max(np.abs(v)) > 0 else v for v in (a, b))
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return CorrelationResult(method, None, None, None, n, resamples, seed, confidence,
                                 "undefined: a constant series has no correlation", missing)
    r, p = _corr_value(method, a, b)
    if not (math.isfinite(r) and math.isfinite(p)):
        return CorrelationResult(method, None, None, None, n, resamples, seed, confidence,
                                 "undefined: not computable in floating point", missing)
    ci = None
    if resamples > 0:
        def statistic(idx: np.ndarray) -> float:
            u, v = a[idx], b[idx]
            if np.ptp(u) == 0 or np.ptp(v) == 0:
                return float("nan")  # a resample with no spread: left out of the interval
            return _corr_value(method, u, v)[0]

        ci = percentile_interval(cluster_bootstrap(statistic, n, kept_groups, resamples, seed, confidence), confidence)
    return CorrelationResult(method, r, p, ci, n, resamples, seed, confidence, None, missing)


@dataclass(frozen=True)
class CorrelationDifference:
    """r(x1, y) − r(x2, y) over the pairs where both scores exist, with a paired bootstrap CI."""

    method: str
    r1: float | None
    r2: float | None
    delta: float | None
    ci: tuple[float, float] | None
    p_boot: float | None
    """Two-sided bootstrap p: twice the share of resamples whose difference falls on the other
    side of zero (at least 1/resamples); a rough guide, the CI is the figure to read."""
    n: int
    resamples: int
    seed: int
    confidence: float = 0.95
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def correlation_difference(x1: Sequence[float | None], x2: Sequence[float | None], y: Sequence[float | None],
                           method: Correlation = "pearson", *, resamples: int = 1000, seed: int = 0,
                           confidence: float = 0.95, groups: Sequence[Any] | None = None) -> CorrelationDifference:
    """Does score 1 agree with the human label ``y`` more than score 2 does? Both correlations are
    computed on the same resampled units in every bootstrap round (they share ``y``, so their
    errors are correlated and two separate CIs would mislead). ``groups`` as in :func:`correlation`."""
    if not len(x1) == len(x2) == len(y):
        raise ValueError(f"series must be of equal length, got {len(x1)}, {len(x2)} and {len(y)}")
    if groups is not None and len(groups) != len(y):
        raise ValueError(f"groups must label every pair: {len(groups)} labels for {len(y)} pairs")
    keep = [i for i in range(len(y)) if all(v is not None and not math.isnan(float(v)) for v in (x1[i], x2[i], y[i]))]
    a1 = np.asarray([float(x1[i]) for i in keep])  # type: ignore[arg-type]
    a2 = np.asarray([float(x2[i]) for i in keep])  # type: ignore[arg-type]
    b = np.asarray([float(y[i]) for i in keep])  # type: ignore[arg-type]
    kept_groups = [groups[i] for i in keep] if groups is not None else None
    n = len(keep)
    if n < 3 or np.ptp(a1) == 0 or np.ptp(a2) == 0 or np.ptp(b) == 0:
        why = "fewer than 3 complete pairs" if n < 3 else "a constant series has no correlation"
        return CorrelationDifference(method, None, None, None, None, None, n, resamples, seed, confidence,
                                     f"undefined: {why}")
    r1, r2 = _corr_value(method, a1, b)[0], _corr_value(method, a2, b)[0]
    ci = p_boot = None
    if resamples > 0:
        def statistic(idx: np.ndarray) -> float:
            u1, u2, v = a1[idx], a2[idx], b[idx]
            if np.ptp(u1) == 0 or np.ptp(u2) == 0 or np.ptp(v) == 0:
                return float("nan")
            return _corr_value(method, u1, v)[0] - _corr_value(method, u2, v)[0]

        dist = cluster_bootstrap(statistic, n, kept_groups, resamples, seed, confidence)
        ci = percentile_interval(dist, confidence)
        if len(dist):
            other_side = float(np.mean(dist <= 0)) if r1 - r2 > 0 else float(np.mean(dist >= 0))
            p_boot = min(1.0, max(2 * other_side, 1 / len(dist)))
    return CorrelationDifference(method, r1, r2, r1 - r2, ci, p_boot, n, resamples, seed, confidence)
