"""DICE scoring rules against hand-computed cases, and the method on scripted judges."""

from __future__ import annotations

import json
import math
import types
from typing import Any

import pytest

import assay
from assay.core.types import Completion, GenerateConfig, Item, Message, TokenLogprob
from assay.judge.backends import Capabilities, JudgeBackend
from assay.judge.runner import RunnerConfig
from assay.methods.dice import (
    CLASSES,
    combine,
    hierarchy_winner,
    label_distribution,
    margin,
    scores,
    swapped,
    verdict_of,
)

QUIET = RunnerConfig(progress=False)


def lp(p: float) -> float:
    return math.log(p)


def test_hard_above_the_margin_and_soft_below() -> None:
    # ΔP = 0.83 − 0.16 = 0.67 ≥ 0.1: hard (the paper's App. A example)
    assert scores({"A": 0.83, "B": 0.01, "Tie": 0.16}, 0.1) == (1.0, 0.0, "hard")
    assert scores({"A": 0.2, "B": 0.7, "Tie": 0.1}, 0.1) == (0.0, 1.0, "hard")
    assert scores({"A": 0.1, "B": 0.2, "Tie": 0.7}, 0.1) == (0.5, 0.5, "hard")
    # ΔP = 0.45 − 0.40 = 0.05 < 0.1: soft, eq. 4 by hand: 0.45 + 0.15·0.45/0.85, 0.40 + 0.15·0.40/0.85
    a, b, kind = scores({"A": 0.45, "B": 0.40, "Tie": 0.15}, 0.1)
    assert kind == "soft" and a == pytest.approx(0.529412, abs=1e-6) and b == pytest.approx(0.470588, abs=1e-6)
    assert a + b == pytest.approx(1.0)
    # exactly at the boundary ΔP = τ is hard (eq. 3 uses ≥)
    assert scores({"A": 0.5, "B": 0.25, "Tie": 0.25}, 0.25)[2] == "hard"
    assert scores({"A": 0.5, "B": 0.25, "Tie": 0.25}, 0.2500001)[2] == "soft"
    # soft with P(A) = P(B) = 0 splits evenly
    assert scores({"A": 0.0, "B": 0.0, "Tie": 1.0}, 1.1) == (0.5, 0.5, "soft")
    assert margin({"A": 0.5, "B": 0.3, "Tie": 0.2}) == pytest.approx(0.2)


def decision(tokens: list[tuple[str, float, dict[str, float]]]) -> Completion:
    text = "".join(t for t, _, _ in tokens)
    return Completion(text=text, logprobs=[TokenLogprob(token=t, logprob=p, top=top) for t, p, top in tokens])


PREFIX = [('{"', lp(0.99), {}), ("verdict", lp(0.99), {}), ('":', lp(0.99), {}), (' "', lp(0.99), {})]


def test_label_probabilities_from_top_logprobs_with_multi_token_labels() -> None:
    # "Tie" is split into "T" + "ie"; " B" is a leading-space variant; "x" is not a label
    top = {"A": lp(0.5), "T": lp(0.2), " B": lp(0.1), "B": lp(0.1), "x": lp(0.05)}
    found = label_distribution(decision([*PREFIX, ("A", lp(0.5), top), ('"}', lp(0.99), {})]))
    assert found is not None
    p, bounds = found
    assert p["A"] == pytest.approx(0.5 / 0.9) and p["B"] == pytest.approx(0.2 / 0.9)
    assert p["Tie"] == pytest.approx(0.2 / 0.9) and bounds == {}
    # greedy took "T": the label is read at that position, its forced "ie" is not needed
    found = label_distribution(decision([*PREFIX, ("T", lp(0.6), {"T": lp(0.6), "A": lp(0.3)}), ("ie", 0.0, {}),
                                         ('"}', 0.0, {})]))
    assert found is not None and verdict_of(found[0]) == "Tie"


def test_a_label_missing_from_the_top_logprobs_is_zero_with_a_bound() -> None:
    top = {"A": lp(0.6), "T": lp(0.3), "x": lp(0.05)}
    found = label_distribution(decision([*PREFIX, ("A", lp(0.6), top)]))
    assert found is not None
    p, bounds = found
    assert p["B"] == 0.0 and p["A"] == pytest.approx(0.6 / 0.9)
    assert bounds == {"B": pytest.approx(0.05 / 0.95)}  # at most the smallest probability shown
    assert label_distribution(Completion(text='{"verdict": "A"}')) is None  # no logprobs: None


def test_swap_combination_maps_the_second_order_back() -> None:
    first = {"A": 0.7, "B": 0.2, "Tie": 0.1}
    second = {"A": 0.6, "B": 0.3, "Tie": 0.1}  # second order: its A is the original B
    assert swapped(second) == {"A": 0.3, "B": 0.6, "Tie": 0.1}
    combined = combine(first, second)
    assert combined == pytest.approx({"A": 0.5, "B": 0.4, "Tie": 0.1})
    assert verdict_of(first) == "A" and verdict_of(swapped(second)) == "B"  # not position-consistent


class LogprobJudge(JudgeBackend):
    """Analysis as JSON; the decision with logprobs favouring the longer answer (first order:
    0.7 for it) — deterministic, reads the prompt."""

    name = "fake/logprob"
    max_concurrency = 1

    def __init__(self, *, logprobs: bool = True, bias_first: float = 0.0, classes: str = "same") -> None:
        self.capabilities = Capabilities(json_schema=True, logprobs=logprobs)
        self.bias_first = bias_first
        # stage I: "same" puts both answers in one class (stage II decides); "longer": the longer
        # answer is fully correct, the other incorrect; "first": the first-shown one is
        self.classes = classes
        self.calls: list[list[Message]] = []

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        self.calls.append(messages)
        user = messages[0 if messages[0].role == "user" else 1].content
        a = user.split("<answer_a>")[1].split("</answer_a>")[0]
        b = user.split("<answer_b>")[1].split("</answer_b>")[0]
        if messages[-1].role == "user" and "DICE stage 2" in messages[-1].content:
            better = "A" if len(a) > len(b) else "B"
            pa = min(0.85, (0.7 if better == "A" else 0.2) + self.bias_first)
            pb = 0.9 - pa
            top = {"A": lp(pa), "B": lp(pb), "T": lp(0.1)}
            label = max(top, key=lambda k: top[k])
            text = json.dumps({"verdict": "Tie" if label == "T" else label})
            tokens = [TokenLogprob(token='{"verdict": "', logprob=0.0),
                      TokenLogprob(token=label, logprob=top[label], top=top),
                      TokenLogprob(token='"}', logprob=0.0)] if config.logprobs else None
            return Completion(text=text, logprobs=tokens)
        a_better = {"same": None, "longer": len(a) > len(b), "first": True}[self.classes]
        analysis = {"analysis_a": "a", "analysis_b": "b", "comparison": "c",
                    "class_a": "partially correct" if a_better is None else CLASSES[0 if a_better else 3],
                    "class_b": "partially correct" if a_better is None else CLASSES[3 if a_better else 0]}
        return Completion(text=json.dumps(analysis))


def pair(a: str, b: str) -> dict[str, Any]:
    return {"id": "q1", "query": "Q?", "a": {"system": "s1", "response": a}, "b": {"system": "s2", "response": b}}


def items_of(*records: dict[str, Any]) -> list[assay.Item]:
    from assay.data.datasets._io import _items_from
    return [item for n, r in enumerate(records, 1) for item in _items_from(r, "test", n)]


def test_a_pair_gets_probabilities_scores_and_the_row_fields() -> None:
    judge = LogprobJudge()
    result = assay.evaluate(items_of(pair("a long and complete answer", "short")), "dice", judge, runner=QUIET,
                            swap=False)  # one order: both orders are the default
    row = result.records()[0]
    assert row["system_a"] == "s1" and row["system_b"] == "s2" and row["probability_source"] == "logprobs"
    assert row["p_a"] == pytest.approx(0.7) and row["p_b"] == pytest.approx(0.2) and row["p_tie"] == pytest.approx(0.1)
    assert row["margin"] == pytest.approx(0.5) and row["decision"] == "hard" and row["verdict"] == "A"
    assert (row["score_a"], row["score_b"]) == (1.0, 0.0)
    assert row["orders"][0]["analysis"]["class_a"] == "partially correct" and row["decided_by"] == "judge"
    assert len(judge.calls) == 2  # stage I, then stage II as a follow-up of the same conversation
    assert judge.calls[1][: len(judge.calls[0])] == judge.calls[0]


def test_swap_reports_position_consistency() -> None:
    biased = LogprobJudge(bias_first=0.3)  # the first-shown answer gets +0.3
    row = assay.evaluate(items_of(pair("a long and complete answer", "short")), "dice", biased, runner=QUIET,
                         swap=True).records()[0]
    # order 1, long answer first: P(A) = min(0.85, 0.7 + 0.3) = 0.85; order 2, short answer first:
    # P(A') = 0.2 + 0.3 = 0.5 for the short one, P(B') = 0.4 for the long one → mapped back 0.4
    assert row["first_position_won"] == [True, True] and row["position_consistent"] is False
    assert row["p_a"] == pytest.approx((0.85 + 0.4) / 2) and row["p_b"] == pytest.approx((0.05 + 0.5) / 2)


def test_without_logprobs_the_shares_of_sampled_decisions_are_used() -> None:
    judge = LogprobJudge(logprobs=False)
    row = assay.evaluate(items_of(pair("short", "a long and complete answer")), "dice", judge, runner=QUIET,
                         samples=4, swap=False).records()[0]
    assert row["probability_source"] == "samples" and row["orders"][0]["votes"] == {"A": 0, "B": 4, "Tie": 0}
    assert row["p_b"] == 1.0 and row["verdict"] == "B" and len(judge.calls) == 5


def test_dice_meta_on_pandalm_gives_verdict_agreement_and_the_difference_correlation() -> None:
    from pathlib import Path

    from assay.analysis.meta import _majority, meta
    from assay.data.datasets.adapters import read_labelled

    metaset = read_labelled("pandalm", Path(__file__).parents[3] / "data" / "pandalm_slice.json")
    result = meta(metaset, ["dice"], LogprobJudge(), resamples=50)
    agreement = result["verdict_agreement"]["dice"]
    # by hand: the fake judge prefers the longer response; map to −1 first / +1 second
    expected_hits = 0
    for unit in metaset.units:
        first, second = (next(i for i in metaset.items if i.key == k) for k in unit.keys)
        judge = -1.0 if len(first.response) > len(second.response) else 1.0
        expected_hits += judge == _majority(unit.human["preference"])
    assert agreement["n"] == len(metaset.units)
    assert agreement["accuracy"] == pytest.approx(expected_hits / len(metaset.units))
    assert sum(sum(row.values()) for row in agreement["confusion"].values()) == len(metaset.units)
    assert agreement["by_decision"]["hard"]["n"] == len(metaset.units)  # the fake judge is always confident
    assert [r["method"] for r in result["rows"]] == ["dice.score"]
    assert _majority([1.0, 1.0, -1.0]) == 1.0 and _majority([1.0, 0.0, -1.0]) == 0.0 and _majority([]) is None


def test_the_report_shows_the_pairs_with_a_confusion_matrix_against_human_winners(tmp_path) -> None:
    records = [pair("a long and complete answer", "short") | {"human": {"winner": "A"}},
               {**pair("tiny", "a much longer answer here"), "id": "q2", "human": {"winner": "tie"}}]
    result = assay.evaluate(items_of(*records), "dice", LogprobJudge(), runner=QUIET, swap=True,
                            store=tmp_path / "d.db")
    html = result.report(tmp_path / "r.html").read_text()
    assert "Pairwise verdicts (DICE)" in html and "Against the human winner (2 pairs)" in html
    assert "accuracy 0.500" in html and "verdict survived the swap in 2 of 2" in html
    assert "order 2 (swapped: s2 shown as A, s1 as B)" in html and "a long and complete answer" in html
    assert "By system" not in html  # pair units are not grouped under their first system
    assert "Agreement with the human labels" not in html  # "winner" is categorical: the confusion matrix shows it


def test_thresholded_scalar_verdicts_tie_below_delta_of_the_range() -> None:
    from assay.analysis.meta import markdown_table, threshold_agreement
    from assay.data.datasets.adapters import MetaSet, MetaUnit

    units = [MetaUnit(f"u{n}", (f"u{n}::x", f"u{n}::y"), {"preference": human})
             for n, human in enumerate([[-1.0, -1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [1.0, -1.0, 0.0]])]
    metaset = MetaSet("pandalm", "hand", True, ["preference"], [], units)
    # pointwise 0–4: Δ = 0.15 of the range is 0.6 points
    scores = {"u0::x": {"p": 3.0}, "u0::y": {"p": 2.0},    # −1.0 → first (human first) ✓
              "u1::x": {"p": 2.0}, "u1::y": {"p": 2.5},    # +0.5 < 0.6 → tie (human tie) ✓
              "u2::x": {"p": 1.0}, "u2::y": {"p": 1.5},    # +0.5 → tie (human second) ✗
              "u3::x": {"p": 0.0}, "u3::y": {"p": 4.0}}    # +4 → second (human majority: tie) ✗
    result = threshold_agreement(metaset, scores, "p", 4.0, 0.15)
    assert result is not None and result["n"] == 4 and result["accuracy"] == 0.5
    assert result["judge_counts"] == {"first": 1, "tie": 2, "second": 1}
    assert result["confusion"]["second"]["tie"] == 1 and result["confusion"]["tie"]["second"] == 1
    assert result["by_decision"]["hard"]["n"] == 0 and result["ece"] is None
    assert result["threshold"] == {"delta": 0.15, "range": 4.0}
    # on a 0–1 scale the same differences are all above Δ
    assert threshold_agreement(metaset, scores, "p", 1.0, 0.15)["judge_counts"] == {"first": 1, "tie": 0, "second": 3}
    table = markdown_table({"rows": [], "signature": {"line": "sig"}, "verdict_agreement": {"p (thresholded)": result}})
    assert "| p (thresholded) | 4 | 0.50 |" in table and "1/2/1" in table


def test_reference_free_pointwise_grades_without_a_gold_answer_and_keeps_old_run_ids() -> None:
    from assay.methods.baselines import Pointwise, PointwiseConfig

    plain, free = Pointwise(), Pointwise(PointwiseConfig(reference_free=True))
    item = Item(id="q", query="Say hi.", response="hi")
    assert plain.check_item(item) is not None and free.check_item(item) is None
    assert "reference_free" not in plain.manifest()["config"] and free.manifest()["config"]["reference_free"]
    text = "\n".join(m.content for m in free.render(item))
    assert "<query>" in text and "gold" in text and "reference>" not in text
    from assay.judge.backends import ScriptedBackend

    canned = json.dumps({"reasoning": "greets", "issues": [], "score": 3, "justification": "fine"})
    row = assay.evaluate([item], "pointwise", ScriptedBackend([canned]), runner=QUIET,
                         reference_free=True).records()[0]
    assert row["pointwise"] == 3.0 and row["status"] == "scored"


def test_the_hierarchy_decides_an_order_whose_classes_differ() -> None:
    assert hierarchy_winner("fully correct", "incorrect") == "A"
    assert hierarchy_winner("insufficient information", "partially correct") == "B"
    assert hierarchy_winner("incorrect", "incorrect") is None
    # the judge's stage II favours the longer answer (0.7), the analysis ranks the first-shown one higher
    data = items_of(pair("short", "a long and complete answer"))
    row = assay.evaluate(data, "dice", LogprobJudge(classes="first"), runner=QUIET, swap=False).records()[0]
    assert row["decided_by"] == "hierarchy" and row["verdict"] == "A" and (row["p_a"], row["p_b"]) == (1.0, 0.0)
    assert row["orders"][0]["p_judge"]["B"] == pytest.approx(0.7) and row["orders"][0]["hierarchy_winner"] == "A"
    # advise: the stage-II label decides, the classes are only recorded
    row = assay.evaluate(data, "dice", LogprobJudge(classes="first"), runner=QUIET, hierarchy="advise",
                         swap=False).records()[0]
    assert row["decided_by"] == "judge" and row["verdict"] == "B" and row["p_b"] == pytest.approx(0.7)
    assert row["orders"][0]["hierarchy_winner"] == "A" and "p_judge" not in row["orders"][0]
    # swap: the hierarchy favours whichever answer is shown first, so the two orders cancel: a soft tie
    row = assay.evaluate(data, "dice", LogprobJudge(classes="first"), runner=QUIET, swap=True).records()[0]
    assert (row["p_a"], row["p_b"], row["p_tie"]) == (0.5, 0.5, 0.0) and row["decision"] == "soft"
    assert (row["score_a"], row["score_b"]) == (0.5, 0.5) and row["position_consistent"] is False
    # classes that agree with the length preference across both orders: consistent, hard
    row = assay.evaluate(data, "dice", LogprobJudge(classes="longer"), runner=QUIET, swap=True).records()[0]
    assert row["verdict"] == "B" and row["decision"] == "hard" and row["position_consistent"] is True


def test_direct_verdicts_read_the_decision_from_one_forward_pass_per_order() -> None:
    from assay.judge.backends import ScriptedBackend

    judge = ScriptedBackend(rules=[{"match": "Which answer is better", "repeat": True,
                                    "responses": [{"label_probs": {"A": 0.5, "B": 0.2, "Tie": 0.3}}]}])
    row = assay.evaluate(items_of(pair("a long and complete answer", "short")), "dice", judge, runner=QUIET,
                         verdicts="direct", swap=True).records()[0]
    assert len(judge.calls) == 2 and all(len(c) == 2 for c in judge.calls)  # one question per order, no analysis
    assert row["probability_source"] == "label probabilities" and row["decided_by"] == "judge"
    # both orders say "the first shown is better": swapped back, A and B share the first-position mass
    assert row["p_a"] == pytest.approx((0.5 + 0.2) / 2) and row["p_b"] == pytest.approx((0.2 + 0.5) / 2)
    assert row["position_consistent"] is False and row["forced_choice_a"] == pytest.approx(0.5)


def test_the_default_dice_run_id_is_unchanged_by_the_direct_option() -> None:
    from assay.core.registry import build_method

    assert "verdicts" not in build_method("dice").manifest()["config"]
    assert build_method("dice", verdicts="direct").manifest()["config"]["verdicts"] == "direct"


def test_instruction_focus_asks_whether_each_answer_follows_the_instruction_first() -> None:
    from assay.core.errors import ConfigError
    from assay.core.registry import build_method
    from assay.judge.backends import ScriptedBackend

    judge = ScriptedBackend(rules=[{"match": "follows the instruction better", "repeat": True,
                                    "responses": [{"label_probs": {"A": 0.6, "B": 0.3, "Tie": 0.1}}]}])
    row = assay.evaluate(items_of(pair("a long and complete answer", "short")), "dice", judge, runner=QUIET,
                         verdicts="direct", focus="instruction").records()[0]
    assert len(judge.calls) == 2 and all("<instruction>" in c[-1].content for c in judge.calls)
    assert all("<context_a>" not in c[-1].content for c in judge.calls)  # no retrieved passages in this form
    # both orders favour the first-shown answer equally: over the swap, a coin flip, said as a tie
    assert row["verdict"] == "Tie" and row["forced_choice_margin"] == pytest.approx(0.0)
    assert build_method("dice", verdicts="direct", focus="instruction").manifest()["config"]["focus"] == "instruction"
    assert "focus" not in build_method("dice", verdicts="direct").manifest()["config"]  # earlier run ids kept
    with pytest.raises(ConfigError, match="--verdicts direct"):
        build_method("dice", verdicts="analysis", focus="instruction")
    # by default (auto) the focus is accepted, and refused only where the judge cannot settle it direct
    auto = build_method("dice", focus="instruction")
    assert auto.for_judge(types.SimpleNamespace(label_probs=True)).config.verdicts == "direct"
    with pytest.raises(ConfigError, match="no label probabilities"):
        auto.for_judge(types.SimpleNamespace(label_probs=False))


def test_a_judge_written_reference_is_asked_once_per_pair_and_shown_to_both_orders() -> None:
    from assay.judge.backends import ScriptedBackend

    judge = ScriptedBackend(rules=[
        {"match": "Your answer:", "repeat": True, "responses": ["Ice floats: it is less dense."]},
        {"match": "Which answer is better", "repeat": True,
         "responses": [{"label_probs": {"A": 0.5, "B": 0.2, "Tie": 0.3}}]}])
    row = assay.evaluate(items_of(pair("a long and complete answer", "short")), "dice", judge, runner=QUIET,
                         verdicts="direct", judge_reference=True).records()[0]
    assert len(judge.calls) == 3  # the judge's own answer once, then one decision per order
    assert all("written by the judge itself" in c[-1].content and "less dense" in c[-1].content
               for c in judge.calls[1:])
    assert row["judge_reference"] == "Ice floats: it is less dense."
    with_reference = {**pair("x", "y"), "reference": "Given."}
    judge.calls.clear()
    assay.evaluate(items_of(with_reference), "dice", judge, runner=QUIET, verdicts="direct", judge_reference=True)
    assert len(judge.calls) == 2 and all("Given." in c[-1].content for c in judge.calls)  # a given reference wins
