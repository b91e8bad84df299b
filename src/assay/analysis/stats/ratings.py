"""Ratings of systems from pairwise matches: sequential Elo (the one Elo of assay; the DICE
tournament uses it) and Bradley–Terry with bootstrap CIs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


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
    """Expected score of a against b, the standard logistic Elo curve (DICE eq. 6). Overflow-safe:
    a gap of any size gives a number in [0, 1] (10 ** gap is only taken for a gap ≤ 0)."""
    gap = (rating_b - rating_a) / 400.0
    if gap > 0:
        odds = 10.0 ** -gap
        return odds / (1.0 + odds)
    return 1.0 / (1.0 + 10.0 ** gap)


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
    # Each fit is a tiny problem (one column per system): a multi-threaded BLAS only hands its
    # threads the work and waits for them, and on a busy machine (two cores, other processes) the
    # thousand fits of the resampling took 100 s instead of 5. One thread, for these fits only
    # (threadpoolctl limits the libraries loaded when it is entered: scikit-learn's and SciPy's first).
    import sklearn.linear_model  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        point = _bt_fit(systems, matches, anchor)
        ratings = {s: float(v) for s, v in zip(systems, point, strict=True)}
        ci = None
        draws = []
        if resamples > 0:
            rng = np.random.default_rng(seed)
            for _ in range(resamples):
                sample = [matches[int(i)] for i in rng.integers(0, len(matches), len(matches))]
                present = {s for a, b, _ in sample for s in (a, b)}
                fitted = dict(zip(sorted(present), _bt_fit(sorted(present), sample, anchor), strict=True))
                draws.append([fitted.get(s, np.nan) for s in systems])
    if resamples > 0:
        table = np.array(draws, dtype=float)
        tail = (1 - confidence) / 2
        ci = {}
        for j, s in enumerate(systems):
            column = table[:, j][~np.isnan(table[:, j])]
            if len(column):
                ci[s] = (float(np.quantile(column, tail)), float(np.quantile(column, 1 - tail)))
    return BradleyTerryResult(ratings, ci, len(matches), resamples, seed, confidence, note)
