"""The fitting behind `assay align`: cross-validation folds over items, bootstrap intervals, the
probability and correlation reports, the verdict calibrators, the tie threshold and the aligned score's
combiners. What it fits on (labels, a run) and what it writes (the alignment file) stay in
:mod:`assay.analysis.align`, which re-exports every name here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from assay.core.errors import ConfigError

RIDGE_ALPHA = 1.0
MIN_CLASS = 4
"""Of each outcome, at least this many labels to calibrate verdicts or fit a tie threshold."""


# --- metrics ----------------------------------------------------------------------------------------
def _finite(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _folds(groups: Sequence[str], folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """GroupKFold splits: every group (an item id) lies wholly in one test fold."""
    from sklearn.model_selection import GroupKFold

    distinct = len(set(groups))
    k = max(2, min(folds, distinct))
    index = np.arange(len(groups))
    return [(train, test) for train, test in GroupKFold(n_splits=k).split(index, groups=list(groups))]


def _boot(statistic: Any, groups: Sequence[str], resamples: int, seed: int) -> list[float] | None:
    """A 95% percentile CI of ``statistic(indices)`` over resampled groups (items); None when undefined."""
    by_group: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    names = list(by_group)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        picked = rng.integers(0, len(names), len(names))
        idx = np.array([i for k in picked for i in by_group[names[k]]])
        value = statistic(idx)
        if value is not None and math.isfinite(value):
            values.append(value)
    if len(values) < max(10, resamples // 2):
        return None
    return [float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))]


def _auroc(p: np.ndarray, y: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(y, p)) if 0 < y.sum() < len(y) else None


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))


def _ece(p: np.ndarray, y: np.ndarray) -> float:
    from assay.analysis.stats import ece
    return ece(list(p), [int(v) for v in y])


def _brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def probability_report(p: np.ndarray, y: np.ndarray, groups: Sequence[str], resamples: int,
                       seed: int) -> dict[str, Any]:
    """ECE, Brier, AUROC and log loss of probabilities against 0/1 labels, each with a CI over items,
    and the reliability bins (10 equal-width)."""
    out: dict[str, Any] = {"n": len(y), "base_rate": float(y.mean()), "mean_p": float(p.mean())}
    for name, fn in (("ece", _ece), ("brier", _brier), ("auroc", _auroc), ("log_loss", _log_loss)):
        out[name] = fn(p, y)
        out[f"{name}_ci"] = _boot(lambda idx, fn=fn: fn(p[idx], y[idx]), groups, resamples, seed) \
            if out[name] is not None and resamples else None
    bins = []
    for k in range(10):
        inside = (p >= k / 10) & ((p < (k + 1) / 10) | (k == 9))
        if inside.any():
            bins.append({"bin": [k / 10, (k + 1) / 10], "n": int(inside.sum()), "mean_p": float(p[inside].mean()),
                         "agree_share": float(y[inside].mean())})
    out["reliability"] = bins
    return out


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def correlation_report(x: np.ndarray, y: np.ndarray, groups: Sequence[str], resamples: int,
                       seed: int) -> dict[str, Any]:
    r = _pearson(x, y)
    return {"pearson": r, "pearson_ci": _boot(lambda idx: _pearson(x[idx], y[idx]), groups, resamples, seed)
            if r is not None and resamples else None, "n": len(x)}


# --- calibration ------------------------------------------------------------------------------------
def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def fit_calibrator(kind: str, p: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """A calibration map as plain numbers: isotonic (its breakpoints) or Platt (slope and
    intercept on logit p)."""
    if kind == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip", increasing=True).fit(p, y)
        return {"kind": "isotonic", "x": [float(v) for v in iso.X_thresholds_],
                "y": [float(v) for v in iso.y_thresholds_]}
    from sklearn.linear_model import LogisticRegression

    if len(set(y.tolist())) < 2:
        rate = float(y.mean())
        return {"kind": "platt", "slope": 0.0, "intercept": float(_logit(np.array([rate]))[0])}
    model = LogisticRegression(C=1e4).fit(_logit(p).reshape(-1, 1), y)
    slope = float(model.coef_[0][0])
    if slope < 0:  # a map that reverses the judge's ranking is not a calibration: the base rate instead
        return {"kind": "platt", "slope": 0.0, "intercept": float(_logit(np.array([float(y.mean())]))[0])}
    return {"kind": "platt", "slope": slope, "intercept": float(model.intercept_[0])}


def calibrate(calibrator: dict[str, Any], p: np.ndarray) -> np.ndarray:
    if calibrator["kind"] == "isotonic":
        return np.clip(np.interp(p, calibrator["x"], calibrator["y"]), 0.0, 1.0)
    z = calibrator["slope"] * _logit(p) + calibrator["intercept"]
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


def fit_calibration(p: Sequence[float], y: Sequence[int], groups: Sequence[str], *, folds: int = 5,
                    resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Isotonic and Platt compared by out-of-fold log loss (GroupKFold on ``groups``); the better
    one refitted on everything. Reports the raw probabilities and the out-of-fold calibrated ones."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    splits = _folds(groups, folds)
    out_of_fold: dict[str, np.ndarray] = {}
    for kind in ("isotonic", "platt"):
        pred = np.empty_like(pa)
        for train, test in splits:
            pred[test] = calibrate(fit_calibrator(kind, pa[train], ya[train]), pa[test])
        out_of_fold[kind] = pred
    losses = {kind: _log_loss(pred, ya) for kind, pred in out_of_fold.items()}
    chosen = min(losses, key=lambda k: (losses[k], k != "platt"))
    return {"n": len(ya), "items": len(set(groups)), "folds": len(splits), "cv_log_loss": losses, "chosen": chosen,
            "map": fit_calibrator(chosen, pa, ya),
            "before": probability_report(pa, ya, groups, resamples, seed),
            "after_cv": probability_report(out_of_fold[chosen], ya, groups, resamples, seed)}


# --- tie threshold ----------------------------------------------------------------------------------
def decide(forced_choice_a: float, threshold: float) -> str:
    """A, B or tie: a tie when P(A) / (P(A) + P(B)) lies within ``threshold`` of 0.5."""
    distance = forced_choice_a - 0.5
    return "tie" if abs(distance) < threshold else ("A" if distance > 0 else "B")


def _best_threshold(fc: np.ndarray, labels: list[str]) -> float:
    candidates = sorted({0.0, *(float(abs(v - 0.5)) + 1e-9 for v in fc)})
    def accuracy(t: float) -> float:
        return float(np.mean([decide(v, t) == lab for v, lab in zip(fc, labels, strict=True)]))
    scores = [accuracy(t) for t in candidates]
    return candidates[int(np.argmax(scores))]  # the smallest threshold of the best agreement


def fit_tie_threshold(forced_choice_a: Sequence[float], labels: Sequence[str], raw: Sequence[str | None],
                      groups: Sequence[str], *, folds: int = 5, resamples: int = 1000,
                      seed: int = 0) -> dict[str, Any]:
    """The threshold agreeing most with the reviewers' A / B / tie labels; out-of-fold agreement
    beside the judge's own verdicts and the forced choice without ties."""
    fc = np.asarray(forced_choice_a, dtype=float)
    lab = list(labels)
    pred = [""] * len(lab)
    for train, test in _folds(groups, folds):
        t = _best_threshold(fc[train], [lab[i] for i in train])
        for i in test:
            pred[i] = decide(float(fc[i]), t)
    forced = [decide(float(v), 0.0) for v in fc]

    def agreement(decisions: Sequence[str | None]) -> dict[str, Any]:
        hits = np.array([float(d == y) for d, y in zip(decisions, lab, strict=True)])
        return {"accuracy": float(hits.mean()),
                "accuracy_ci": _boot(lambda idx: float(hits[idx].mean()), groups, resamples, seed) if resamples
                else None}

    return {"n": len(lab), "items": len(set(groups)), "threshold": _best_threshold(fc, lab),
            "labels": {k: lab.count(k) for k in ("A", "B", "tie")},
            "judge_verdict": agreement([{"Tie": "tie"}.get(str(v), v) for v in raw]),
            "forced_choice": agreement(forced), "after_cv": agreement(pred)}


# --- aligned score ----------------------------------------------------------------------------------
def _informative(x: np.ndarray) -> np.ndarray:
    """Which columns vary in the data (an exact test: a constant column's std can be 1e-17, not 0)."""
    return np.ptp(x, axis=0) > 0 if len(x) else np.zeros(x.shape[1], dtype=bool)


def _fit_ridge(x: np.ndarray, y: np.ndarray, *, intercept: bool) -> tuple[np.ndarray, float]:
    """Non-negative ridge on standardised columns; weights and intercept on the raw columns. A
    column that does not vary in the data gets weight 0."""
    from sklearn.linear_model import Ridge

    use = _informative(x)
    weights = np.zeros(x.shape[1])
    if not use.any() or np.ptp(y) == 0:
        return weights, float(y.mean()) if intercept else 0.0
    scale = x[:, use].std(axis=0)
    model = Ridge(alpha=RIDGE_ALPHA, positive=True, fit_intercept=intercept).fit(x[:, use] / scale, y)
    weights[use] = np.asarray(model.coef_, dtype=float) / scale
    return weights, float(model.intercept_) if intercept else 0.0


def _fit_equal(x: np.ndarray, y: np.ndarray, *, intercept: bool) -> tuple[np.ndarray, float]:
    """Equal weights on the standardised inputs whose Pearson r with ``y`` is positive (0 for the
    others and for an input that does not vary); on grades (``intercept``) scaled by the
    least-squares line of ``y`` on their sum (slope ≥ 0). Weights and intercept on the raw columns."""
    weights = np.zeros(x.shape[1])
    if np.ptp(y) > 0:
        for j in np.flatnonzero(_informative(x)):
            if float(np.corrcoef(x[:, j], y)[0, 1]) > 0:
                weights[j] = 1.0 / float(x[:, j].std())
    if not intercept:
        return weights, 0.0
    total = x @ weights
    if np.ptp(total) == 0:
        return weights * 0.0, float(y.mean())
    slope = max(0.0, float(np.cov(total, y, bias=True)[0, 1] / total.var()))
    return weights * slope, float(y.mean() - slope * total.mean())


COMBINERS = {"equal": _fit_equal, "ridge": _fit_ridge}
"""How the aligned score weighs its inputs (see the module docstring for why ``equal`` is the default)."""


def fit_aligned_score(names: list[str], x: np.ndarray, y: np.ndarray, groups: Sequence[str], *, pairwise: bool,
                      folds: int = 5, resamples: int = 1000, seed: int = 0, combine: str = "equal"
                      ) -> dict[str, Any]:
    """Monotone combination of the inputs ``names`` (columns of ``x``) fitted to the grades ``y``
    (or, ``pairwise``, to preferences with ``x`` the second answer's inputs minus the first's),
    weighed as ``combine`` says (:data:`COMBINERS`). Out-of-fold Pearson r of the aligned score
    beside each input's own, and the other combiner's, for comparison."""
    if combine not in COMBINERS:
        raise ConfigError(f"combine {combine!r}: not one of {', '.join(COMBINERS)}")

    def out_of_fold(how: str) -> np.ndarray:
        """Each held-out row as :func:`aligned_value` reads it with the fold's fit: on pairs, the
        difference of two weighted means (the weights normalised to sum 1)."""
        pred = np.empty_like(y)
        for train, test in _folds(groups, folds):
            w, b = COMBINERS[how](x[train], y[train], intercept=not pairwise)
            if pairwise:
                w = w / w.sum() if w.sum() > 0 else w * 0.0
            pred[test] = x[test] @ w + b
        return pred

    pred = out_of_fold(combine)
    weights, intercept = COMBINERS[combine](x, y, intercept=not pairwise)
    total = float(weights.sum())
    inputs = {name: correlation_report(x[:, j], y, groups, resamples, seed) for j, name in enumerate(names)}
    others = {how: correlation_report(out_of_fold(how), y, groups, 0, seed)["pearson"]
              for how in COMBINERS if how != combine}
    standardised = weights * np.where(_informative(x), x.std(axis=0), 0.0)
    standardised_total = float(standardised.sum())
    return {"n": len(y), "items": len(set(groups)), "fitted_to": "preferences" if pairwise else "grades",
            "combine": combine, "inputs": names, "weights": dict(zip(names, map(float, weights), strict=True)),
            # shares of the raw weights: what a pair's aligned score is a weighted mean with
            "shares": {n: (float(w) / total if total > 0 else 0.0) for n, w in zip(names, weights, strict=True)},
            # shares of the weights on standardised inputs: what the score rests on (shown to users)
            "standardised_shares": {n: (float(w) / standardised_total if standardised_total > 0 else 0.0)
                                    for n, w in zip(names, standardised, strict=True)},
            "intercept": intercept, "alpha": RIDGE_ALPHA if combine == "ridge" else None,
            "other_combiners_after_cv": others,
            "before": inputs, "after_cv": correlation_report(pred, y, groups, resamples, seed),
            "out_of_fold": {"predicted": [float(v) for v in pred], "target": [float(v) for v in y],
                            "items": [str(g) for g in groups]}}


def aligned_value(score: dict[str, Any], values: dict[str, float | None]) -> float | None:
    """The aligned score of one answer from its inputs (None when one is missing). Fitted to
    grades: intercept + weights · inputs, clipped to [0, 1]. Fitted to preferences: the weights
    normalised to sum 1, so the score is a weighted mean of the inputs."""
    xs = [values.get(name) for name in score["inputs"]]
    if any(v is None for v in xs):
        return None
    if score["fitted_to"] == "grades":
        value = score["intercept"] + sum(score["weights"][n] * float(v) for n, v in  # type: ignore[arg-type]
                                         zip(score["inputs"], xs, strict=True))
        return float(min(1.0, max(0.0, value)))
    total = sum(score["shares"].values())
    if total <= 0:
        return None
    return float(sum(score["shares"][n] * float(v) for n, v in zip(score["inputs"], xs, strict=True)))  # type: ignore[arg-type]
