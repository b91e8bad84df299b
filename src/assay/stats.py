"""Statistics used across assay (SPEC §2.5), as thin, checked wrappers over scipy, scikit-learn
and krippendorff: what they compute we do not re-write, we only make the inputs explicit, drop
nothing silently, and record the seed and number of resamples of every resampling.

Degenerate inputs (fewer than 3 pairs, a constant series) give ``None`` with a ``note`` rather
than NaN or a crash, so a meta-evaluation table can say why a cell is empty.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

Correlation = Literal["pearson", "spearman", "kendall"]


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


def _paired(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired series must be 1-D and of equal length, got {a.shape} and {b.shape}")
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("paired series contain NaN: drop unscored items first and count them")
    return a, b


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


def _cluster_bootstrap(statistic: Any, n_points: int, groups: list[Any] | None, resamples: int, seed: int,
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


def _interval(dist: np.ndarray, confidence: float) -> tuple[float, float] | None:
    if not len(dist):
        return None
    tail = (1 - confidence) / 2
    return float(np.quantile(dist, tail)), float(np.quantile(dist, 1 - tail))


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
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return CorrelationResult(method, None, None, None, n, resamples, seed, confidence,
                                 "undefined: a constant series has no correlation", missing)
    r, p = _corr_value(method, a, b)
    ci = None
    if resamples > 0:
        def statistic(idx: np.ndarray) -> float:
            u, v = a[idx], b[idx]
            if np.ptp(u) == 0 or np.ptp(v) == 0:
                return float("nan")  # a resample with no spread: left out of the interval
            return _corr_value(method, u, v)[0]

        ci = _interval(_cluster_bootstrap(statistic, n, kept_groups, resamples, seed, confidence), confidence)
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

        dist = _cluster_bootstrap(statistic, n, kept_groups, resamples, seed, confidence)
        ci = _interval(dist, confidence)
        if len(dist):
            other_side = float(np.mean(dist <= 0)) if r1 - r2 > 0 else float(np.mean(dist >= 0))
            p_boot = min(1.0, max(2 * other_side, 1 / len(dist)))
    return CorrelationDifference(method, r1, r2, r1 - r2, ci, p_boot, n, resamples, seed, confidence)


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

    a, b = _paired(x, y)
    diff = a - b
    if not np.any(diff):
        return PairedTest("wilcoxon", None, None, len(a), 0.0, note="all differences are zero")
    res = stats.wilcoxon(a, b)
    return PairedTest("wilcoxon", float(res.statistic), float(res.pvalue), len(a), float(diff.mean()))


def paired_t(x: Sequence[float], y: Sequence[float]) -> PairedTest:
    """Paired t-test of x − y (scipy.stats.ttest_rel, two-sided)."""
    from scipy import stats

    a, b = _paired(x, y)
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
    a, b = _paired(x, y)
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


def brier(probabilities: Sequence[float], outcomes: Sequence[int]) -> float:
    """Brier score of probabilities for binary outcomes (scikit-learn)."""
    from sklearn.metrics import brier_score_loss

    return float(brier_score_loss(list(outcomes), list(probabilities)))


def ece(probabilities: Sequence[float], outcomes: Sequence[int], bins: int = 10) -> float:
    """Expected calibration error: equal-width confidence bins, |accuracy − mean confidence|
    weighted by the share of predictions in the bin. ``probabilities`` are the probability of
    outcome 1."""
    p, o = _paired(probabilities, [float(v) for v in outcomes])
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


Match = tuple[str, str, float]
"""One comparison: (system a, system b, a's score in [0, 1]: 1 a won, 0 b won, 0.5 a tie, or a
soft score such as DICE's probability-weighted one)."""


def _check_matches(matches: Sequence[Match]) -> None:
    for i, (a, b, score) in enumerate(matches):
        if a == b:
            raise ValueError(f"match {i}: a system cannot play itself ({a!r})")
        if not 0.0 <= float(score) <= 1.0 or math.isnan(float(score)):
            raise ValueError(f"match {i}: score must lie in [0, 1], got {score}")


def elo_expected(rating_a: float, rating_b: float) -> float:
    """Expected score of a against b, the standard logistic Elo curve (DICE eq. 6)."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float = 32.0,
               upset_weight: float = 0.0) -> tuple[float, float]:
    """Both ratings after one match in which a scored ``score_a`` (the mean over the match's
    questions, DICE eq. 5: S_total / N_questions). Zero-sum: b moves by the opposite amount.
    ``upset_weight`` > 0 raises K when the lower-rated system wins, by up to that fraction at a
    gap of 400 points or more (the tournament's optional upset bonus)."""
    if not 0.0 <= score_a <= 1.0:
        raise ValueError(f"score_a must lie in [0, 1], got {score_a}")
    factor = k
    upset = (score_a > 0.5 and rating_a < rating_b) or (score_a < 0.5 and rating_a > rating_b)
    if upset and upset_weight > 0:
        factor = k * (1.0 + upset_weight * min(1.0, abs(rating_a - rating_b) / 400.0))
    delta = factor * (score_a - elo_expected(rating_a, rating_b))
    return rating_a + delta, rating_b - delta


def elo_ratings(matches: Sequence[Match], *, k: float = 32.0, initial: float = 1500.0, upset_weight: float = 0.0,
                systems: Sequence[str] = ()) -> dict[str, float]:
    """Sequential Elo over ``matches`` in the given order (Elo depends on it; for an
    order-free estimate with CIs use :func:`bradley_terry`). Every system starts at ``initial``;
    ``systems`` are rated even if they played no match. The one Elo of assay: the DICE
    tournament's ratings are this (:func:`assay.methods.tournament.elo_after`)."""
    _check_matches(matches)
    ratings: dict[str, float] = dict.fromkeys(systems, initial)
    for a, b, score in matches:
        ra, rb = ratings.setdefault(a, initial), ratings.setdefault(b, initial)
        ratings[a], ratings[b] = elo_update(ra, rb, float(score), k, upset_weight)
    return ratings


@dataclass(frozen=True)
class BradleyTerryResult:
    """Bradley–Terry strengths on the Elo scale (400 / ln 10 per logit, mean ``anchor``) with
    seeded percentile-bootstrap CIs over matches."""

    ratings: dict[str, float]
    ci: dict[str, tuple[float, float]] | None
    n_matches: int
    resamples: int
    seed: int
    confidence: float = 0.95
    note: str | None = None

    def ranking(self) -> list[str]:
        return sorted(self.ratings, key=lambda s: -self.ratings[s])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _bt_fit(systems: list[str], matches: Sequence[Match], anchor: float) -> np.ndarray:
    """Maximum-likelihood BT strengths by scikit-learn's logistic regression: one row per match
    side, +1 for a and −1 for b, weighted by the score (a tie or a soft score is a fractional win
    for each side), and each row mirrored (−x with the other outcome: the same likelihood, and both
    classes always present). The last system is the reference (its column is left out) and the
    result is re-centred on ``anchor``. A very weak L2 term keeps a system that won every match
    finite."""
    from sklearn.linear_model import LogisticRegression

    index = {s: i for i, s in enumerate(systems)}
    rows, targets, weights = [], [], []
    for a, b, score in matches:
        x = np.zeros(len(systems))
        x[index[a]], x[index[b]] = 1.0, -1.0
        for target, weight in ((1, float(score)), (0, 1.0 - float(score))):
            if weight > 0:
                rows += [x[:-1], -x[:-1]]
                targets += [target, 1 - target]
                weights += [weight, weight]
    strengths = np.zeros(len(systems))
    if len(systems) > 1:
        model = LogisticRegression(fit_intercept=False, C=1e6, max_iter=10000)
        model.fit(np.array(rows), np.array(targets), sample_weight=np.array(weights))
        strengths[:-1] = model.coef_[0]
    elo = strengths * 400.0 / math.log(10.0)
    return elo - elo.mean() + anchor


def bradley_terry(matches: Sequence[Match], *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                  anchor: float = 1500.0) -> BradleyTerryResult:
    """Bradley–Terry ratings of the systems in ``matches``, order-free, with CIs from resampling
    the matches. The ``note`` says when the data cannot pin a rating down: a system that won (or
    lost) every match it played has an infinite MLE, kept finite here by a vanishing ridge, so
    its rating and CI show only a direction; systems in disconnected groups are not comparable."""
    _check_matches(matches)
    if not matches:
        raise ValueError("no matches")
    systems = sorted({s for a, b, _ in matches for s in (a, b)})
    notes = []
    for s in systems:
        scores = [float(sc) if a == s else 1.0 - float(sc) for a, b, sc in matches if s in (a, b)]
        if all(v == 1.0 for v in scores) or all(v == 0.0 for v in scores):
            notes.append(s)
    note = (f"unbounded: {', '.join(notes)} won or lost every match it played; its rating shows only a "
            "direction") if notes else None
    graph: dict[str, set[str]] = {s: set() for s in systems}
    for a, b, _ in matches:
        graph[a].add(b)
        graph[b].add(a)
    seen, stack = {systems[0]}, [systems[0]]
    while stack:
        for nxt in graph[stack.pop()] - seen:
            seen.add(nxt)
            stack.append(nxt)
    if len(seen) < len(systems):
        note = "; ".join(filter(None, [note, "disconnected: some systems never meet, even indirectly; ratings "
                                             "across the groups are not comparable"]))
    point = _bt_fit(systems, matches, anchor)
    ratings = {s: float(v) for s, v in zip(systems, point, strict=True)}
    ci = None
    if resamples > 0:
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(resamples):
            sample = [matches[int(i)] for i in rng.integers(0, len(matches), len(matches))]
            present = {s for a, b, _ in sample for s in (a, b)}
            fitted = dict(zip(sorted(present), _bt_fit(sorted(present), sample, anchor), strict=True))
            draws.append([fitted.get(s, np.nan) for s in systems])
        table = np.array(draws, dtype=float)
        tail = (1 - confidence) / 2
        ci = {}
        for j, s in enumerate(systems):
            column = table[:, j][~np.isnan(table[:, j])]
            if len(column):
                ci[s] = (float(np.quantile(column, tail)), float(np.quantile(column, 1 - tail)))
    return BradleyTerryResult(ratings, ci, len(matches), resamples, seed, confidence, note)


@dataclass(frozen=True)
class Signature:
    """What a statistical report rests on, printed as one line under every table."""

    method: str
    judge: str
    n: int
    resamples: int
    seed: int
    prompt_sha256: str | None = None
    version: str = field(default="")

    def line(self) -> str:
        from assay._version import __version__

        prompt = (self.prompt_sha256 or "-")[:12]
        return (f"method={self.method}|prompt={prompt}|judge={self.judge}|n={self.n}|"
                f"resamples={self.resamples}|seed={self.seed}|assay={self.version or __version__}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["line"] = self.line()
        return data
