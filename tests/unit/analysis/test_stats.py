"""assay.analysis.stats: the wrappers agree with the libraries they wrap and handle degenerate input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from assay.analysis import stats

X = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
Y = [2.0, 1.0, 4.0, 3.0, 7.0, 5.0, 8.0, 6.0]


@pytest.mark.parametrize("method, reference", [("pearson", sps.pearsonr), ("spearman", sps.spearmanr),
                                               ("kendall", sps.kendalltau)])
def test_correlation_matches_scipy_with_a_seeded_ci(method: stats.Correlation, reference) -> None:  # type: ignore[no-untyped-def]
    result = stats.correlation(X, Y, method, resamples=500, seed=3)
    expected = reference(X, Y)
    assert result.r == pytest.approx(expected.statistic) and result.p == pytest.approx(expected.pvalue)
    assert result.ci is not None and result.ci[0] <= result.r <= result.ci[1]
    assert stats.correlation(X, Y, method, resamples=500, seed=3).ci == result.ci
    assert stats.correlation(X, Y, method, resamples=500, seed=4).ci != result.ci
    assert (result.n, result.resamples, result.seed) == (8, 500, 3)


def test_degenerate_correlations_say_why() -> None:
    assert stats.correlation([1, 2], [2, 1]).note == "undefined: fewer than 3 complete pairs"
    constant = stats.correlation([1, 1, 1, 1], [1, 2, 3, 4])
    assert constant.r is None and constant.note == "undefined: a constant series has no correlation"
    with pytest.raises(ValueError, match="equal length"):
        stats.correlation([1, 2, 3], [1, 2])


def test_missing_values_are_dropped_and_counted() -> None:
    x = [1.0, 2.0, None, 4.0, 5.0, float("nan"), 7.0]
    y = [2.0, 1.0, 3.0, 3.5, None, 6.0, 8.0]
    result = stats.correlation(x, y, "spearman", resamples=0)
    assert result.missing == 3 and result.n == 4
    assert result.r == pytest.approx(sps.spearmanr([1, 2, 4, 7], [2, 1, 3.5, 8]).statistic)


@pytest.mark.parametrize("method, reference", [("spearman", sps.spearmanr), ("kendall", sps.kendalltau)])
def test_rank_correlations_with_ties_match_scipy(method: stats.Correlation, reference) -> None:  # type: ignore[no-untyped-def]
    x = [1, 2, 2, 3, 3, 3, 4, 5]
    y = [0, 1, 1, 1, 2, 2, 2, 2]
    result = stats.correlation(x, y, method, resamples=0)
    expected = reference(x, y)
    assert result.r == pytest.approx(expected.statistic) and result.p == pytest.approx(expected.pvalue)


def test_weighted_kappa_matches_sklearn_on_ordinal_labels() -> None:
    from sklearn.metrics import cohen_kappa_score

    a, b = [1, 2, 3, 4, 4, 2, 1, 3, 3], [1, 3, 3, 4, 3, 2, 2, 3, 4]
    for weights in (None, "linear", "quadratic"):
        assert stats.cohen_kappa(a, b, weights) == pytest.approx(cohen_kappa_score(a, b, weights=weights))


def test_kappa_weighted_and_plain() -> None:
    a, b = [0, 1, 2, 2, 1, 0], [0, 1, 2, 1, 1, 2]
    assert stats.cohen_kappa(a, a) == 1.0
    plain, quad = stats.cohen_kappa(a, b), stats.cohen_kappa(a, b, "quadratic")
    assert plain == pytest.approx(0.5)
    assert quad != plain


def test_krippendorff_alpha_levels() -> None:
    ratings = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5], [None, 3, 3, 3, 2, 3, 4, 2, 2, 5]]
    nominal = stats.krippendorff_alpha(ratings, "nominal")
    interval = stats.krippendorff_alpha(ratings, "interval")
    assert -1 <= nominal < interval <= 1
    assert stats.krippendorff_alpha([[1, 2, 3], [1, 2, 3]], "ordinal") == 1.0


def test_paired_tests_match_scipy() -> None:
    a = [0.9, 0.8, 0.75, 0.6, 0.95, 0.7, 0.85, 0.65]
    b = [0.7, 0.82, 0.6, 0.5, 0.9, 0.55, 0.8, 0.6]
    w = stats.wilcoxon(a, b)
    assert w.p == pytest.approx(sps.wilcoxon(a, b).pvalue)
    t = stats.paired_t(a, b)
    assert t.p == pytest.approx(sps.ttest_rel(a, b).pvalue) and t.mean_diff == pytest.approx(np.mean(a) - np.mean(b))
    boot = stats.paired_bootstrap(a, b, resamples=2000, seed=1)
    assert boot.ci is not None and 0 < boot.ci[0] < boot.mean_diff < boot.ci[1]
    assert boot.p is not None and boot.p < 0.05
    assert stats.paired_bootstrap(a, b, resamples=2000, seed=1) == boot
    assert stats.wilcoxon(a, a).note == "all differences are zero"


def test_calibration() -> None:
    assert stats.brier([1.0, 0.0], [1, 0]) == 0.0
    assert stats.brier([0.5, 0.5], [1, 0]) == 0.25
    assert stats.ece([0.9, 0.9, 0.9, 0.9], [1, 1, 1, 0]) == pytest.approx(0.15)
    assert stats.ece([0.2, 0.8], [0, 1]) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="probabilities"):
        stats.ece([1.5], [1])


def test_signature_line_names_everything() -> None:
    line = stats.Signature("dece", "llamacpp/default", 40, 1000, 0, "abcdef0123456789").line()
    assert line.startswith("method=dece|prompt=abcdef012345|judge=llamacpp/default|n=40|resamples=1000|seed=0|assay=")


def test_grouped_bootstrap_resamples_groups_not_points() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    y = x + rng.normal(size=30)
    # each pair's score repeated for two annotators (RAGChecker's protocol)
    xx, yy = np.repeat(x, 2), np.repeat(y, 2) + rng.normal(scale=0.2, size=60)
    groups = np.repeat(np.arange(30), 2).tolist()
    points = stats.correlation(xx, yy, resamples=400, seed=1)
    grouped = stats.correlation(xx, yy, resamples=400, seed=1, groups=groups)
    assert grouped.r == points.r and grouped.p == points.p  # the point estimate does not change
    assert grouped.ci is not None and points.ci is not None
    assert grouped.ci[1] - grouped.ci[0] > points.ci[1] - points.ci[0]  # dependent points: a wider interval
    # one point per group is the plain paired bootstrap
    singletons = stats.correlation(x, y, resamples=400, seed=1, groups=list(range(30)))
    assert singletons.ci == stats.correlation(x, y, resamples=400, seed=1).ci
    with pytest.raises(ValueError, match="groups must label every pair"):
        stats.correlation(x, y, groups=[0, 1])
    # a missing value drops its point and its group label together
    with_missing = stats.correlation([*x, None], [*y, 1.0], resamples=400, seed=1, groups=[*range(30), 99])
    assert with_missing.missing == 1 and with_missing.ci == singletons.ci


def test_correlation_difference_is_paired_over_the_same_units() -> None:
    rng = np.random.default_rng(2)
    human = rng.normal(size=50)
    good = human + rng.normal(scale=0.5, size=50)
    weak = human + rng.normal(scale=3.0, size=50)
    diff = stats.correlation_difference(good, weak, human, resamples=500, seed=0)
    assert diff.r1 == pytest.approx(sps.pearsonr(good, human).statistic)
    assert diff.r2 == pytest.approx(sps.pearsonr(weak, human).statistic)
    assert diff.delta == pytest.approx(diff.r1 - diff.r2)
    assert diff.ci is not None and diff.ci[0] > 0 and diff.p_boot is not None and diff.p_boot < 0.05
    same = stats.correlation_difference(good, good, human, resamples=200, seed=0)
    assert same.delta == 0 and same.ci == (0.0, 0.0)
    # a unit missing in either score is left out of both
    partial = stats.correlation_difference([None, *good[1:]], weak, human, resamples=0)
    assert partial.n == 49 and partial.r2 == pytest.approx(sps.pearsonr(weak[1:], human[1:]).statistic)
    assert stats.correlation_difference([1, 1, 1, 1], weak[:4], human[:4]).note == \
        "undefined: a constant series has no correlation"


def test_elo_follows_the_standard_update() -> None:
    assert stats.elo_expected(1500, 1500) == 0.5
    assert stats.elo_expected(1900, 1500) == pytest.approx(1 / (1 + 10 ** (-1)))
    # DICE eq. 5: the match score is the mean over its questions; zero-sum
    a, b = stats.elo_update(1500, 1500, 0.75, k=32)
    assert a == pytest.approx(1508.0) and b == pytest.approx(1492.0)
    ratings = stats.elo_ratings([("x", "y", 1.0), ("y", "z", 0.5), ("x", "z", 0.0)], k=16)
    x1, y1 = 1508.0, 1492.0
    y2, z1 = stats.elo_update(y1, 1500, 0.5, k=16)
    x2, z2 = stats.elo_update(x1, z1, 0.0, k=16)
    assert ratings == pytest.approx({"x": x2, "y": y2, "z": z2})
    assert sum(ratings.values()) == pytest.approx(4500)
    with pytest.raises(ValueError, match="match 0: score must lie in"):
        stats.elo_ratings([("x", "y", 1.5)])
    with pytest.raises(ValueError, match="cannot play itself"):
        stats.elo_ratings([("x", "x", 1.0)])


def test_bradley_terry_is_the_maximum_likelihood_fit() -> None:
    from scipy.optimize import minimize

    matches = [("a", "b", 1.0), ("a", "b", 1.0), ("a", "b", 0.0), ("b", "c", 1.0), ("b", "c", 0.5),
               ("a", "c", 1.0), ("c", "a", 0.3), ("c", "b", 0.0), ("a", "c", 0.0)]
    systems = ["a", "b", "c"]

    def nll(theta: np.ndarray) -> float:
        s = dict(zip(systems, [*theta, 0.0], strict=True))
        total = 0.0
        for x, y, score in matches:
            p = 1 / (1 + np.exp(-(s[x] - s[y])))
            total -= score * np.log(p) + (1 - score) * np.log(1 - p)
        return total

    theta = minimize(nll, np.zeros(2), method="BFGS").x
    expected = np.array([*theta, 0.0]) * 400 / np.log(10)
    expected = expected - expected.mean() + 1500
    result = stats.bradley_terry(matches, resamples=300, seed=5)
    assert [result.ratings[s] for s in systems] == pytest.approx(list(expected), abs=0.5)
    assert result.ranking() == ["a", "b", "c"] and result.note is None
    assert result.ci is not None and all(lo <= result.ratings[s] <= hi for s, (lo, hi) in result.ci.items())
    assert stats.bradley_terry(matches, resamples=300, seed=5).ci == result.ci  # seeded
    # the order of the matches does not matter to BT (it does to Elo)
    assert stats.bradley_terry(matches[::-1], resamples=0).ratings == pytest.approx(result.ratings)
    assert stats.elo_ratings(matches) != pytest.approx(stats.elo_ratings(matches[::-1]))


def test_bradley_terry_says_when_ratings_are_not_pinned_down() -> None:
    unbeaten = stats.bradley_terry([("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 1.0)], resamples=0)
    assert unbeaten.note is not None and unbeaten.note.startswith("unbounded: a, c won or lost every match")
    assert unbeaten.ranking() == ["a", "b", "c"]
    split = stats.bradley_terry([("a", "b", 0.5), ("c", "d", 0.5)], resamples=0)
    assert split.note is not None and "disconnected" in split.note
    with pytest.raises(ValueError, match="no matches"):
        stats.bradley_terry([])


def test_a_correlation_of_labels_near_the_float_limit_is_the_same_as_at_any_scale() -> None:
    """Human labels of 1e308 overflowed the sums of squares: `assay meta` printed nan, and labels of
    ±1e308 gave a wrong r. Every correlation is scale-free, so they are the r of the same labels / 1e308."""
    import warnings

    from assay.analysis.stats.correlation import correlation

    scores = [0.1, 0.5, 0.9, 0.3, 0.7]
    for labels in ([1.0, 1.0, 1.0, 0.5, 0.8], [1.0, -1.0, 1.0, -0.5, 0.25]):
        for method in ("pearson", "spearman", "kendall"):
            small = correlation(scores, labels, method, resamples=0)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no overflow warning reaches the user either
                huge = correlation(scores, [v * 1e308 for v in labels], method, resamples=0)
            assert huge.r is not None and small.r is not None and abs(huge.r - small.r) < 1e-9, (method, labels)
