"""Paired comparisons of two score series: Wilcoxon, paired t and a seeded paired bootstrap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


def paired_series(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired series must be 1-D and of equal length, got {a.shape} and {b.shape}")
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("paired series contain NaN: drop unscored items first and count them")
    return a, b


@dataclass(frozen=True)
class PairedTest:
    test: str
    statistic: float | None
    p: float | None
    n: int
    mean_diff: float
    ci: tuple[float, float] | None = None
    resamples: int = 0
    seed: int | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wilcoxon(x: Sequence[float], y: Sequence[float]) -> PairedTest:
    """Wilcoxon signed-rank test of x − y (scipy defaults: two-sided, zero differences dropped)."""
    from scipy import stats

    a, b = paired_series(x, y)
    diff = a - b
    if not np.any(diff):
        return PairedTest("wilcoxon", None, None, len(a), 0.0, note="all differences are zero")
    res = stats.wilcoxon(a, b)
    return PairedTest("wilcoxon", float(res.statistic), float(res.pvalue), len(a), float(diff.mean()))


def paired_t(x: Sequence[float], y: Sequence[float]) -> PairedTest:
    """Paired t-test of x − y (scipy.stats.ttest_rel, two-sided)."""
    from scipy import stats

    a, b = paired_series(x, y)
    diff = a - b
    if len(a) < 2 or np.ptp(diff) == 0:
        return PairedTest("paired_t", None, None, len(a), float(diff.mean()) if len(a) else 0.0,
                          note="needs at least 2 pairs with varying differences")
    res = stats.ttest_rel(a, b)
    return PairedTest("paired_t", float(res.statistic), float(res.pvalue), len(a), float(diff.mean()))


def paired_bootstrap(x: Sequence[float], y: Sequence[float], *, resamples: int = 10000, seed: int = 0,
                     confidence: float = 0.95) -> PairedTest:
    """Seeded bootstrap of the mean difference x − y over pairs: percentile CI, and a two-sided
    p-value as twice the share of resampled means on the far side of zero (capped at 1)."""
    a, b = paired_series(x, y)
    diff = a - b
    n = len(diff)
    if n < 2:
        return PairedTest("paired_bootstrap", None, None, n, float(diff.mean()) if n else 0.0,
                          resamples=resamples, seed=seed, note="needs at least 2 pairs")
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    tail = (1 - confidence) / 2
    ci = (float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)))
    share = min(np.mean(means <= 0), np.mean(means >= 0))
    return PairedTest("paired_bootstrap", float(diff.mean()), float(min(1.0, 2 * share)), n, float(diff.mean()),
                      ci=ci, resamples=resamples, seed=seed)
