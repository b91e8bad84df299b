"""Defaults that changed in assay 0.2, from the measurements in the DeCE and DICE pages: DeCE's
verdicts are direct on a judge that gives label probabilities (generated on one that does not),
DICE judges both orders and reads the forced choice. A store holding the same work run at the
earlier default continues that run with one note; ``fresh`` starts the new default's run."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from assay.core.registry import build_method
from assay.judge.backends import ScriptedBackend
from assay.judge.runner import RunnerConfig
from tests.helpers import ITEM, dece_rules
from tests.unit.engine.test_direct import judge as direct_judge

QUIET = RunnerConfig(progress=False)


def generated_judge() -> ScriptedBackend:
    """A judge that answers in text only: no label probabilities."""
    return ScriptedBackend(rules=dece_rules(["three years", "notice"], ["three years"], sat=[1, 0], ver=[1]))


def test_dece_settles_its_verdicts_for_the_judge(tmp_path: Path) -> None:
    on_labels = assay.evaluate([ITEM], "dece", direct_judge(), runner=QUIET)
    assert on_labels.records()[0]["verdicts"] == "direct"
    assert on_labels.notes == []  # a new user is not told about a default they never knew
    store = tmp_path / "used.db"  # someone who ran DeCE before (another item) is told what changed
    assay.evaluate([{**ITEM, "id": "other"}], "dece", generated_judge(), runner=QUIET, store=store, verdicts="hard")
    told = assay.evaluate([ITEM], "dece", direct_judge(), runner=QUIET, store=store)
    assert any("today's default replaces generated verdicts" in n for n in told.notes)
    today = tmp_path / "today.db"  # a store of today's default only: running it again tells nothing
    assay.evaluate([{**ITEM, "id": "other"}], "dece", direct_judge(), runner=QUIET, store=today)
    assert assay.evaluate([ITEM], "dece", direct_judge(), runner=QUIET, store=today).notes == []
    assert assay.evaluate([ITEM], "dece", direct_judge(), runner=QUIET, store=today).notes == []
    on_text = assay.evaluate([ITEM], "dece", generated_judge(), runner=QUIET)
    assert on_text.records()[0]["verdicts"] == "hard" and on_text.notes == []
    explicit = assay.evaluate([ITEM], "dece", generated_judge(), runner=QUIET, verdicts="hard")
    assert explicit.run_id == on_text.run_id  # hard settled by default is the same run as hard chosen


def test_unsettled_auto_keeps_the_manifest_of_hard_so_old_run_ids_hold() -> None:
    assert build_method("dece").manifest() == build_method("dece", verdicts="hard").manifest()
    assert build_method("dece").manifest() != build_method("dece", verdicts="direct").manifest()


def test_a_store_with_the_earlier_default_continues_that_run(tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    # a store written before 0.2: the same command ran hard verdicts (here: chosen explicitly)
    earlier = assay.evaluate([ITEM], "dece", direct_judge_with_text(), runner=QUIET, store=store, verdicts="hard")
    again = assay.evaluate([ITEM], "dece", direct_judge_with_text(), runner=QUIET, store=store)
    assert again.run_id == earlier.run_id and again.was_finished
    assert any(f"continuing run {earlier.run_id}" in n for n in again.notes)
    fresh = assay.evaluate([ITEM], "dece", direct_judge_with_text(), runner=QUIET, store=store, fresh=True)
    assert fresh.run_id != earlier.run_id and fresh.records()[0]["verdicts"] == "direct"
    kept = assay.evaluate([ITEM], "dece", direct_judge_with_text(), runner=QUIET, store=store, verdicts="hard")
    assert kept.run_id == earlier.run_id and kept.was_finished  # --fresh kept the earlier run


def direct_judge_with_text() -> ScriptedBackend:
    """Answers both the generated verdicts and the label calls (a judge with label probabilities)."""
    backend = direct_judge()
    backend._rules[:0] = generated_judge()._rules[:2]  # the two verdict rules of the generated form
    return backend


def pair_items() -> list[assay.Item]:
    from tests.unit.methods.dice.test_dice import items_of, pair
    return items_of(pair("a long and complete answer", "short"))


def dice_judge() -> ScriptedBackend:
    # the first-shown answer always looks better, and Tie gets the most mass: the habit of a small judge
    return ScriptedBackend(rules=[{"match": "Which answer is better", "repeat": True,
                                   "responses": [{"label_probs": {"A": 0.35, "B": 0.2, "Tie": 0.45}}]}])


def test_dice_judges_both_orders_and_reads_the_forced_choice() -> None:
    backend = dice_judge()
    row = assay.evaluate(pair_items(), "dice", backend, runner=QUIET, verdicts="direct").records()[0]
    assert len(backend.calls) == 2  # both orders by default
    assert row["verdict_argmax"] == "Tie" and row["verdict_rule"] == "forced_choice"
    # both orders favour the first shown: P(A) = P(B) over both, an exact tie of the forced choice
    assert row["p_a"] == pytest.approx(row["p_b"]) and row["verdict"] == "Tie"
    uneven = ScriptedBackend(rules=[{"match": "<answer_a>\\na long and complete", "repeat": True,
                                     "responses": [{"label_probs": {"A": 0.35, "B": 0.2, "Tie": 0.45}}]},
                                    {"match": "Which answer is better", "repeat": True,
                                     "responses": [{"label_probs": {"A": 0.3, "B": 0.25, "Tie": 0.45}}]}])
    row = assay.evaluate(pair_items(), "dice", uneven, runner=QUIET, verdicts="direct").records()[0]
    assert row["verdict_argmax"] == "Tie" and row["verdict"] == "A"  # over both orders P(A) 0.30 > P(B) 0.25
    argmax = assay.evaluate(pair_items(), "dice", dice_judge(), runner=QUIET, verdicts="direct",
                            verdict_rule="argmax").records()[0]
    assert argmax["verdict"] == "Tie"


def test_dice_run_ids_of_the_earlier_defaults_are_unchanged() -> None:
    earlier = build_method("dice", swap=False, verdict_rule="argmax").manifest()["config"]
    assert "verdict_rule" not in earlier and earlier["swap"] is False
    assert build_method("dice").manifest()["config"]["verdict_rule"] == "forced_choice"


def test_a_store_with_a_one_order_dice_run_continues_it(tmp_path: Path) -> None:
    store = tmp_path / "p.db"
    earlier = assay.evaluate(pair_items(), "dice", dice_judge(), runner=QUIET, store=store, verdicts="direct",
                             swap=False, verdict_rule="argmax")
    backend = dice_judge()
    again = assay.evaluate(pair_items(), "dice", backend, runner=QUIET, store=store, verdicts="direct")
    assert again.run_id == earlier.run_id and again.was_finished and backend.calls == []
    assert any("one order and three-way verdicts" in n for n in again.notes)


def test_the_report_of_a_direct_pairwise_run_shows_each_order_and_the_forced_choice(tmp_path: Path) -> None:
    from assay.view.report import render_report

    result = assay.evaluate(pair_items(), "dice", dice_judge(), runner=QUIET, verdicts="direct",
                            store=tmp_path / "p.db")
    html = render_report(result)  # type: ignore[arg-type]
    assert "decided directly, no written analysis" in html and "order 2 (swapped: s2 shown as A, s1 as B)" in html
    assert "(forced choice; three-way Tie)" in html


def test_dice_asks_directly_by_default_on_a_judge_with_label_probabilities(tmp_path: Path) -> None:
    """Since 0.2.1 DICE's verdicts are "auto": direct where the judge gives label probabilities (one
    question per order, nothing generated), the written analysis where it does not; a store that
    holds the same work from the analysis default continues that run and says so."""
    backend = dice_judge()
    row = assay.evaluate(pair_items(), "dice", backend, runner=QUIET).records()[0]
    assert len(backend.calls) == 2 and row["probability_source"] == "label probabilities"
    from tests.unit.methods.dice.test_dice import LogprobJudge

    analysis = LogprobJudge()  # no label probabilities: the analysis mode, as before
    row = assay.evaluate(pair_items(), "dice", analysis, runner=QUIET).records()[0]
    assert row["probability_source"] != "label probabilities" and len(analysis.calls) == 4  # analysis + decision a side
    store = tmp_path / "p.db"
    earlier = assay.evaluate(pair_items(), "dice", LogprobJudge(), runner=QUIET, store=store, verdicts="analysis")
    from assay.judge.backends import Capabilities

    again_judge = LogprobJudge()  # the same judge, now one that gives label probabilities: auto settles direct
    again_judge.capabilities = Capabilities(json_schema=True, logprobs=True, label_probs=True)
    again = assay.evaluate(pair_items(), "dice", again_judge, runner=QUIET, store=store)
    assert again.run_id == earlier.run_id and again_judge.calls == []
    assert any("--verdicts analysis" in n for n in again.notes)


def test_dice_s_instruction_focus_runs_at_its_default_verdicts(tmp_path: Path) -> None:
    """`--focus instruction` (a direct decision only) failed in every run with a store: looking for a run at
    the earlier default built an analysis-mode DICE, which that focus refuses ("use it with --verdicts direct")."""
    judge = ScriptedBackend(rules=[{"match": ".", "repeat": True,
                                    "responses": [{"label_probs": {"A": 0.6, "B": 0.3, "Tie": 0.1}}]}])
    result = assay.evaluate(pair_items(), "dice", judge, runner=QUIET, store=tmp_path / "p.db", focus="instruction")
    assert result.records()[0]["status"] == "scored" and result.notes == []
