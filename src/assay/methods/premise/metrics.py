"""PReMISE's audit computations (PReMISE, arXiv:2605.30803 §3, App. A, B.1, B.3, C.1), as
pure functions over judge outputs — the judge calls that produce their inputs live with the
audit commands.

- :func:`effective_dimensionality` (App. B.3.1): exp of the Shannon entropy (nats) of the
  normalised eigenvalues of cov(S), S the answers × criteria score matrix.
- :func:`mean_abs_correlation` (App. B.3.1): mean |Pearson ρ| over criterion pairs.
- :func:`applicability` (§4.3, App. B.3.1): the mean share of criteria whose gate fires per
  prompt; ``delta_applicability`` = in-domain − out-of-domain.
- :func:`flip_rate` (App. B.1.1): the share of pairs whose R re-run verdicts are not unanimous
  (a flip: the majority differs from at least one run's verdict).
- :func:`verified_fool_rate` (eq. 2): the share of attack attempts the judge scored ≥ τ *and*
  the blind verifier confirmed as exploits.
- :func:`bt_weight_entropy` (App. B.1.3): H(|β|/Σ|β|)/log K of a logistic regression's weights.
- :func:`bt_preference_fit` (App. B.1.3): L2 logistic regression of the human preference on
  the per-criterion score differences, C chosen by an inner CV inside each of the (up to) 5
  stratified outer folds; mean held-out accuracy, and the weight entropy of a fit on all pairs.
- :func:`mmr_select` (Algorithm 1, stage 3): maximal marginal relevance over the min-support
  pool. The paper names but does not define its "genericity filter" and relevance scale; our
  reading: a criterion is generic when its support comes from at least ``min_sources`` distinct
  preference pairs (instance-specific ones come from one), relevance is log(1 + σ) scaled to
  [0, 1] by the pool's largest, and the penalty is the largest cosine similarity to a criterion
  already chosen: score = (1 − λ)·relevance − λ·max-cosine.
- :func:`structural_budget` (App. C.1, SB-PLR): the checks a repaired rubric must pass, each
  named, so a rejected edit says why.
- :func:`pareto_front` (Algorithm 2, step 6): the (α ↑, VFR ↓) non-dominated candidates.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


def effective_dimensionality(scores: Sequence[Sequence[float]]) -> float:
    """exp(H(λ/Σλ)) for the eigenvalues λ of the criteria covariance of ``scores`` (rows:
    answers, columns: criteria). 1 when the scores vary along one direction, K when along K
    equally; 0 when they do not vary at all (no direction is used)."""
    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] < 2:
        raise ValueError("need a matrix of at least two answers × criteria")
    eigen = np.clip(np.linalg.eigvalsh(np.cov(matrix, rowvar=False).reshape(matrix.shape[1], matrix.shape[1])),
                    0.0, None)
    total = eigen.sum()
    if total <= 0:
        return 0.0
    share = eigen[eigen > 0] / total
    return float(math.exp(-(share * np.log(share)).sum()))


def mean_abs_correlation(scores: Sequence[Sequence[float]]) -> float | None:
    """Mean |ρ| over pairs of criteria (columns); criteria that do not vary are left out; None
    with fewer than two varying criteria."""
    matrix = np.asarray(scores, dtype=float)
    varying = [j for j in range(matrix.shape[1]) if np.std(matrix[:, j]) > 0]
    if len(varying) < 2:
        return None
    rho = np.corrcoef(matrix[:, varying], rowvar=False)
    upper = rho[np.triu_indices(len(varying), k=1)]
    return float(np.mean(np.abs(upper)))


def applicability(fires: Sequence[Sequence[bool]]) -> float:
    """The mean, over prompts (rows), of the share of criteria (columns) whose gate fires."""
    matrix = np.asarray(fires, dtype=float)
    if matrix.size == 0:
        raise ValueError("no prompts")
    return float(matrix.mean(axis=1).mean())


def delta_applicability(in_domain: Sequence[Sequence[bool]], out_of_domain: Sequence[Sequence[bool]]) -> float:
    """ΔApp = App_in − App_out: positive when the rubric is specific to its source."""
    return applicability(in_domain) - applicability(out_of_domain)


def flip_rate(runs: Sequence[Sequence[Any]]) -> float:
    """``runs[i]`` = the R verdicts of pair i (e.g. "A", "B", "tie"). A pair flips when the
    majority verdict differs from at least one run's, i.e. the runs are not unanimous."""
    if not runs:
        raise ValueError("no pairs")
    flips = 0
    for verdicts in runs:
        if not verdicts:
            raise ValueError("a pair without verdicts")
        majority = Counter(verdicts).most_common(1)[0][0]
        flips += any(v != majority for v in verdicts)
    return flips / len(runs)


def verified_fool_rate(scores: Sequence[float], verified: Sequence[bool], tau: float = 7.0) -> float:
    """Eq. 2: (1/N) Σ 1[score ≥ τ] · V — a fooling example needs a high score and a verified
    exploit. The verifier's label of a low-scoring attempt does not count."""
    if len(scores) != len(verified):
        raise ValueError("one verifier label per attempt")
    if not scores:
        raise ValueError("no attempts")
    return sum(1 for s, v in zip(scores, verified, strict=True) if s >= tau and v) / len(scores)


def bt_weight_entropy(weights: Sequence[float]) -> float:
    """H(|β| / Σ|β|) / log K: 1 when every criterion carries the same weight, 0 when one does."""
    magnitudes = np.abs(np.asarray(weights, dtype=float))
    k = magnitudes.size
    if k < 2:
        raise ValueError("need at least two weights")
    total = magnitudes.sum()
    if total == 0:
        raise ValueError("all weights are zero")
    share = magnitudes[magnitudes > 0] / total
    return float(-(share * np.log(share)).sum() / math.log(k))


def bt_preference_fit(features: Sequence[Sequence[float]], labels: Sequence[int], *, folds: int = 5,
                      seed: int = 0) -> dict[str, Any]:
    """App. B.1.3 with scikit-learn. ``features[i]`` = the criteria's score differences for pair
    i, ``labels[i]`` = 1 when the first answer is the preferred one. The folds shrink to the
    smaller class's size (at least 2); with fewer than 2 pairs in a class the fit is undefined
    and the result says so."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

    x = np.asarray(features, dtype=float)
    y = np.asarray(labels, dtype=int)
    smaller = int(min(np.sum(y == 1), np.sum(y == 0))) if y.size else 0
    if x.ndim != 2 or x.shape[0] != y.size:
        raise ValueError("one row of score differences per label")
    if smaller < 2:
        return {"cv_accuracy": None, "entropy": None, "reason": f"needs ≥ 2 pairs of each label, has {smaller}"}
    outer = min(folds, smaller)
    # the smaller class in an outer training split; the inner CV needs 2 of it per fold
    inner = min(folds, smaller - math.ceil(smaller / outer))
    note = None
    model: Any
    if inner >= 2:
        model = GridSearchCV(LogisticRegression(max_iter=1000), {"C": [0.01, 0.1, 1.0, 10.0, 100.0]},
                             cv=StratifiedKFold(inner, shuffle=True, random_state=seed))
    else:
        model = LogisticRegression(C=1.0, max_iter=1000)
        note = f"C fixed at 1.0: {smaller} pairs in the smaller class are too few for the nested CV"
    scores = cross_val_score(model, x, y, cv=StratifiedKFold(outer, shuffle=True, random_state=seed))
    model.fit(x, y)
    final = model.best_estimator_ if inner >= 2 else model
    weights = final.coef_[0]
    entropy = bt_weight_entropy(weights) if weights.size >= 2 and np.abs(weights).sum() > 0 else None
    return {"cv_accuracy": float(scores.mean()), "folds": outer, "C": float(final.C), "note": note,
            "weights": [float(w) for w in weights], "entropy": entropy}


def mmr_select(support: Sequence[int], sources: Sequence[set[Any]], similarity: Sequence[Sequence[float]],
               k: int, *, diversity: float = 0.5, min_support: int = 1, min_sources: int = 2) -> list[int]:
    """Indices of up to ``k`` criteria, in selection order (see the module docstring): the pool is
    the criteria with support σ ≥ ``min_support`` from ≥ ``min_sources`` distinct pairs; the first
    pick is the best supported; each next maximises (1 − λ)·relevance − λ·max-cosine to those
    chosen. Ties go to the lower index."""
    sims = np.asarray(similarity, dtype=float)
    pool = [i for i in range(len(support)) if support[i] >= min_support and len(sources[i]) >= min_sources]
    if not pool:
        return []
    top = max(math.log1p(support[i]) for i in pool)
    relevance = {i: math.log1p(support[i]) / top if top > 0 else 0.0 for i in pool}
    chosen: list[int] = []
    while pool and len(chosen) < k:
        def value(i: int) -> float:
            penalty = max((sims[i, j] for j in chosen), default=0.0)
            return (1 - diversity) * relevance[i] - diversity * penalty
        best = max(pool, key=lambda i: (value(i), -i))
        chosen.append(best)
        pool.remove(best)
    return chosen


_GATE = re.compile(r"\b(?:score 0 if|only (?:applies|if)|applies only|not applicable|n/a if|if the prompt does not)\b",
                   re.I)
_ANTI = re.compile(r"\b(?:do not reward|don't reward|does not count|does not constitute|not rewarded)\b", re.I)
_NESTED = re.compile(r"\bif\b[^.]*\bif\b", re.I)
_NUMBERED = re.compile(r"(?m)^\s*(\d+)[.)]\s+")
_NESTED_ITEM = re.compile(r"(?m)^\s{2,}(?:\d+[.)]|[a-z][.)]|[-*•])\s+")


def structural_budget(text: str, *, topic_words: Sequence[str] = ()) -> dict[str, Any]:
    """SB-PLR (App. C.1): (i) ≤ 150 words; (ii) first paragraph ≤ 60 words without a nested
    conditional ("if … if" in one sentence); (iii) ≤ 2 anti-gaming clauses of ≤ 40 words each;
    (iv) ≤ 1 applicability gate; (v) ≤ 3 numbered items, none nested; (vi) prompt-agnostic — none
    of ``topic_words`` (the source prompts' distinctive words, given by the caller) appears.
    Returns ``ok`` and each check with what it counted."""
    words = text.split()
    first = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]
    sentences = re.split(r"(?<=[.!?])\s+", text)
    anti = [s for s in sentences if _ANTI.search(s)]
    numbered = _NUMBERED.findall(text)
    lowered = text.lower()
    topical = [w for w in topic_words if re.search(rf"\b{re.escape(w.lower())}\b", lowered)]
    checks: dict[str, dict[str, Any]] = {
        "total_words": {"value": len(words), "ok": len(words) <= 150},
        "definition": {"value": len(first.split()), "nested_conditional": bool(_NESTED.search(first)),
                       "ok": len(first.split()) <= 60 and not _NESTED.search(first)},
        "anti_gaming": {"value": len(anti), "longest": max((len(s.split()) for s in anti), default=0),
                        "ok": len(anti) <= 2 and all(len(s.split()) <= 40 for s in anti)},
        "gates": {"value": len(_GATE.findall(text)), "ok": len(_GATE.findall(text)) <= 1},
        "numbered": {"value": len(numbered), "nested": bool(_NESTED_ITEM.search(text)),
                     "ok": len(numbered) <= 3 and not _NESTED_ITEM.search(text)},
        "prompt_agnostic": {"value": topical, "ok": not topical},
    }
    return {"ok": all(c["ok"] for c in checks.values()), "checks": checks}


def pareto_front(candidates: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the (α, VFR) pairs no other candidate dominates (α at least as high and VFR at
    least as low, one strictly), in input order."""
    front = []
    for i, (alpha, vfr) in enumerate(candidates):
        dominated = any((a >= alpha and v <= vfr) and (a > alpha or v < vfr)
                        for j, (a, v) in enumerate(candidates) if j != i)
        if not dominated:
            front.append(i)
    return front
