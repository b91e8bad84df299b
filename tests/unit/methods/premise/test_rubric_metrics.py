"""PReMISE audit computations against hand-computed and library values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.methods.premise.metrics import (
    applicability,
    bt_weight_entropy,
    delta_applicability,
    effective_dimensionality,
    flip_rate,
    mean_abs_correlation,
    mmr_select,
    pareto_front,
    structural_budget,
    verified_fool_rate,
)


def test_effective_dimensionality_by_hand() -> None:
    one_direction = [[1, 2], [2, 4], [3, 6], [4, 8]]  # the second criterion is twice the first
    assert effective_dimensionality(one_direction) == pytest.approx(1.0)
    # two uncorrelated criteria of equal variance: eigenvalues equal → exp(log 2) = 2
    two = [[1, 1], [1, -1], [-1, 1], [-1, -1]]
    assert effective_dimensionality(two) == pytest.approx(2.0)
    # eigenvalues 4 and 1 (independent columns, variances 4 and 1): p = (.8, .2)
    unequal = [[2, 1], [2, -1], [-2, 1], [-2, -1]]
    expected = math.exp(-(0.8 * math.log(0.8) + 0.2 * math.log(0.2)))
    assert effective_dimensionality(unequal) == pytest.approx(expected)
    assert effective_dimensionality([[3, 3], [3, 3]]) == 0.0


def test_mean_abs_correlation_against_numpy() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(50, 4))
    scores[:, 1] = -scores[:, 0] + 0.1 * rng.normal(size=50)
    rho = np.corrcoef(scores, rowvar=False)
    expected = np.mean([abs(rho[i, j]) for i in range(4) for j in range(i + 1, 4)])
    assert mean_abs_correlation(scores) == pytest.approx(expected)
    assert mean_abs_correlation([[1, 5], [2, 5], [3, 5]]) is None  # one criterion does not vary


def test_applicability_flip_rate_vfr_and_entropy_by_hand() -> None:
    in_domain = [[True, True, False, False], [True, True, True, True]]    # .5 and 1 → .75
    out_domain = [[True, False, False, False], [False, False, False, False]]  # .25 and 0 → .125
    assert applicability(in_domain) == 0.75 and delta_applicability(in_domain, out_domain) == 0.625
    runs = [["A"] * 5, ["A", "A", "B", "A", "A"], ["tie", "B", "B", "B", "B"], ["B"] * 5]
    assert flip_rate(runs) == 0.5
    # 5 attempts: scores ≥ 7 and verified → 2 (9 and 7); 8 not verified; 3 verified but low
    assert verified_fool_rate([9, 7, 8, 3, 6.9], [True, True, False, True, True], tau=7) == pytest.approx(2 / 5)
    assert bt_weight_entropy([1, -1, 1, -1]) == pytest.approx(1.0)
    assert bt_weight_entropy([5, 0, 0]) == pytest.approx(0.0)
    p = np.array([2, 1, 1]) / 4
    assert bt_weight_entropy([2, -1, 1]) == pytest.approx(-(p * np.log(p)).sum() / math.log(3))


def test_mmr_orders_by_support_then_diversity() -> None:
    support = [10, 9, 3, 1, 8]
    sources = [{1, 2, 3}, {4, 5}, {6, 7}, {8, 9}, {9}]          # criterion 4 comes from one pair only
    sims = np.array([[1.0, 0.95, 0.1, 0.1, 0.2],
                     [0.95, 1.0, 0.1, 0.1, 0.2],
                     [0.1, 0.1, 1.0, 0.1, 0.1],
                     [0.1, 0.1, 0.1, 1.0, 0.1],
                     [0.2, 0.2, 0.1, 0.1, 1.0]])
    # first the best supported (0); then 1 is nearly a duplicate of 0: 2 (log 4 / log 11 = .578,
    # penalty .1) beats 1 (log 10 / log 11 = .960, penalty .95) with λ = .5
    assert mmr_select(support, sources, sims, 3, diversity=0.5, min_support=2) == [0, 2, 1]
    assert mmr_select(support, sources, sims, 5, diversity=0.0, min_support=1) == [0, 1, 2, 3]  # no 4: one pair
    assert mmr_select(support, sources, sims, 2, diversity=0.5, min_support=20) == []


def test_structural_budget_names_what_fails() -> None:
    good = ("The response states only facts that can be checked, and says so when it is unsure.\n\n"
            "Score 0 if the prompt does not ask for facts. Do not reward: hedging on every sentence.")
    result = structural_budget(good)
    assert result["ok"], result
    assert result["checks"]["gates"]["value"] == 1 and result["checks"]["anti_gaming"]["value"] == 1
    long = " ".join(["word"] * 151)
    assert structural_budget(long)["checks"]["total_words"]["ok"] is False
    nested = "If the answer cites a source, and if the source is primary, reward it."
    assert structural_budget(nested)["checks"]["definition"]["nested_conditional"] is True
    many = "Base text.\n\nDo not reward a. Do not reward b. Do not reward c."
    assert structural_budget(many)["checks"]["anti_gaming"] == {"value": 3, "longest": 4, "ok": False}
    gates = "Score 0 if the prompt does not ask for code. Only applies if the user wants SQL."
    assert structural_budget(gates)["checks"]["gates"]["ok"] is False
    items = "Criteria:\n1. one\n2. two\n  a) nested\n3. three\n4. four"
    checks = structural_budget(items)["checks"]["numbered"]
    assert checks["value"] == 4 and checks["nested"] and not checks["ok"]
    assert structural_budget("Rewards correct SQL joins.", topic_words=["SQL"])["checks"]["prompt_agnostic"] == {
        "value": ["SQL"], "ok": False}


def test_pareto_front_on_alpha_and_vfr() -> None:
    points = [(0.50, 0.40), (0.55, 0.45), (0.48, 0.30), (0.50, 0.50), (0.45, 0.35)]
    # (0.50, 0.50) is dominated by (0.50, 0.40); (0.45, 0.35) by (0.48, 0.30)
    assert pareto_front(points) == [0, 1, 2]
    assert pareto_front([(0.5, 0.4), (0.5, 0.4)]) == [0, 1]  # equal points do not dominate each other
