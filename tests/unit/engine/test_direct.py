"""Direct verdicts: one label call per criterion and element, the probability kept as p_judge,
evidence from a follow-up over the lettered sentences, figures checked as before; a judge that
gives no label probabilities is refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.core.errors import ConfigError
from assay.core.registry import method_class
from assay.core.types import Completion, GenerateConfig, Message
from assay.judge.backends import JudgeBackend, ScriptedBackend
from assay.judge.runner import RunnerConfig, call_request
from tests.helpers import ITEM, criteria_json, elements_json

QUIET = RunnerConfig(progress=False)


def judge(p_criterion: float = 0.9, p_element: float = 0.8) -> ScriptedBackend:
    return ScriptedBackend(rules=[
        {"match": "Which lettered sentence", "responses": [{"label_probs": {"A": 0.7, "B": 0.3}}], "repeat": True},
        {"match": "Criterion: .*Municipal", "responses": [{"label_probs": {"yes": 0.2, "no": 0.8}}], "repeat": True},
        {"match": "Criterion:", "responses": [{"label_probs": {"yes": p_criterion, "no": 1 - p_criterion}}],
         "repeat": True},
        {"match": "Statement:", "responses": [{"label_probs": {"yes": p_element, "no": 1 - p_element}}],
         "repeat": True},
        {"match": r"<query>.*<reference>", "responses": [criteria_json("Three years under CPLR 214(5)",
                                                                       "Municipal notice within 90 days")],
         "repeat": True},
        {"match": r"<query>.*<answer>", "responses": [elements_json("It is three years", "Notice within 90 days")],
         "repeat": True},
    ])


def test_every_criterion_and_element_gets_a_probability_and_evidence() -> None:
    backend = judge()
    row = assay.evaluate([ITEM], "dece", backend, runner=QUIET, verdicts="direct").records()[0]
    assert [c["p_judge"] for c in row["criteria"]] == [0.9, 0.2]
    assert all(e["p_judge"] == 0.8 for e in row["elements"])
    assert row["recall"] == pytest.approx((0.9 + 0.2) / 2)
    assert row["precision"] == pytest.approx(0.8)
    first = row["criteria"][0]
    assert first["evidence"] == [1] and first["evidence_p"] == 0.7 and first["decided_by"] == "judge"
    assert row["criteria"][1]["evidence"] == []  # a negative verdict is not asked for evidence
    label_calls = [m for m in backend.calls if "Reply yes or no" in m[-1].content]
    assert len(label_calls) == 4  # one isolated question per criterion and per element
    # both halves are judged by one code path: an element's record has a criterion's fields
    assert set(row["elements"][0]) == set(first) - {"criterion", "edited", "satisfied"} | {"element", "supported"}


def test_the_report_shows_direct_verdicts_as_probabilities_and_who_decided(tmp_path: Path) -> None:
    from assay.view.report import render_report

    result = assay.evaluate([ITEM], "dece", judge(), runner=QUIET, verdicts="direct", store=tmp_path / "d.db")
    html = render_report(result)  # type: ignore[arg-type]
    assert "Direct verdicts:" in html and "P(yes) 0.900" in html and "<th>decided by</th>" in html
    assert '<td class="bad">not met, P(yes) 0.200</td>' in html  # below 0.5 is marked, though the number is truthy
    assert "(P 0.700)" in html  # the evidence pointer's probability
    # a reference given as a plain string is shown as given (it was "Required: " and nothing)
    plain = {**ITEM, "id": "q2", "reference": "Three years under CPLR 214(5)."}
    html = render_report(assay.evaluate([plain], "dece", judge(), runner=QUIET, verdicts="direct",  # type: ignore[arg-type]
                                        store=tmp_path / "p.db"))
    assert "<pre>Three years under CPLR 214(5).</pre>" in html


def test_a_positive_verdict_on_a_figure_the_text_lacks_counts_zero_and_says_why() -> None:
    item = {**ITEM, "response": "It is six years under CPLR 214(5)."}
    backend = judge()
    backend._rules[4].responses = [criteria_json("Three years under CPLR 214(5) applies", "Notice")]
    row = assay.evaluate([item], "dece", backend, runner=QUIET, verdicts="direct").records()[0]
    entry = row["criteria"][0]
    assert entry["p_judge"] == 0.9 and entry["satisfied"] == 0.0
    assert entry["decided_by"] == "deterministic check" and "does not contain" in entry["downgraded"]

    # the explanation (demo, the pytest helper) gives a direct verdict's probability and the
    # check that overruled it, where a generated verdict would give its written reason
    lines = method_class("dece").explain({}, {"criteria": [entry], "elements": []})
    assert lines[0].startswith("✗ criterion:") and "P(yes) 0.90" in lines[0] and "not counted:" in lines[0]


class NoLabels(JudgeBackend):
    name = "plain/judge"

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        return Completion(text="{}")


def test_a_judge_without_label_probabilities_is_refused_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="label probabilities"):
        assay.evaluate([ITEM], "dece", NoLabels(), runner=QUIET, verdicts="direct", store=tmp_path / "s.db")
    assert not (tmp_path / "s.db").exists()


def test_calls_without_labels_keep_their_cache_keys() -> None:
    request = json.loads(call_request({"backend": "x"}, [Message(role="user", content="hi")], GenerateConfig()))
    assert "labels" not in request["config"]
    labelled = json.loads(call_request({"backend": "x"}, [Message(role="user", content="hi")],
                                       GenerateConfig(labels=["yes", "no"])))
    assert labelled["config"]["labels"] == ["yes", "no"]


def test_lemaj_direct_checks_each_point_and_the_figure_check_still_decides() -> None:
    document = "1. Payment. Each invoice is payable within 30 days of receipt.\n\n2. Law. English law governs."
    answer = "Each invoice is payable within 90 days of receipt. English law governs."
    tagging = json.dumps({"sentences": [
        {"sentence": 1, "points": [{"quote": "Each invoice is payable within 90 days of receipt", "reason": "r",
                                    "paragraphs": [1], "supported": "yes", "relevant": "yes"}]},
        {"sentence": 2, "points": [{"quote": "English law governs", "reason": "r", "paragraphs": [2],
                                    "supported": "yes", "relevant": "yes"}]}], "missing": []})
    backend = ScriptedBackend(rules=[
        {"match": "Data point from the answer: English law.*relevant",
         "responses": [{"label_probs": {"yes": 0.3, "no": 0.7}}], "repeat": True},
        {"match": "Data point from the answer", "responses": [{"label_probs": {"yes": 0.9, "no": 0.1}}],
         "repeat": True},
        {"match": ".", "responses": [tagging], "repeat": True}])
    result = assay.evaluate([{"id": "c", "query": "What are the payment terms?", "response": answer,
                              "document": document}], "lemaj", backend, runner=QUIET, verdicts="direct")
    row = result.records()[0]  # type: ignore[union-attr]
    from assay.view.report import render_report

    assert "P(supported) 0.900 · P(relevant) 0.900" in render_report(result)  # type: ignore[arg-type]
    planted, law = row["ldps"][0], row["ldps"][1]
    assert planted["p_supported"] == 0.9 and planted["tag"] == "incorrect"  # 90 days: the figure check decided
    assert planted["decided_by"] == "deterministic check"
    assert law["p_relevant"] == 0.3 and law["tag"] == "irrelevant" and law["decided_by"] == "judge (direct)"
    asked = [m for m in backend.calls if "Reply yes or no" in m[-1].content]
    assert len(asked) == 4  # two checks per point, each on its own


def test_pointwise_direct_scores_the_expected_grade_of_one_forward_pass() -> None:
    backend = ScriptedBackend(rules=[{"match": "Which grade from 0 to 4", "repeat": True,
                                      "responses": [{"label_probs": {"0": 0.0, "1": 0.1, "2": 0.2, "3": 0.6,
                                                                     "4": 0.1}}]}])
    row = assay.evaluate([ITEM], "pointwise", backend, runner=QUIET, verdicts="direct").records()[0]
    assert row["pointwise"] == pytest.approx(0.1 + 0.4 + 1.8 + 0.4)
    assert row["pointwise_hard"] == 3.0 and row["verdicts"] == "direct"
    assert len(backend.calls) == 1 and "reasoning" not in backend.calls[0][0].content


def test_claims_direct_counts_p_entailment_and_points_entailed_claims_to_a_sentence() -> None:
    backend = ScriptedBackend(rules=[
        {"match": "Which lettered sentence", "responses": [{"label_probs": {"A": 0.8, "B": 0.2}}], "repeat": True},
        {"match": "Claim: .*90 days", "repeat": True,
         "responses": [{"label_probs": {"entailment": 0.1, "contradiction": 0.7, "neutral": 0.2}}]},
        {"match": "Claim:", "repeat": True,
         "responses": [{"label_probs": {"entailment": 0.9, "contradiction": 0.05, "neutral": 0.05}}]},
        {"match": "<answer>", "responses": [json.dumps({"claims": ["The period is three years",
                                                                  "Notice is due within 90 days"]})], "repeat": True},
        {"match": "<reference>", "responses": [json.dumps({"claims": ["The period is three years"]})],
         "repeat": True},
    ])
    row = assay.evaluate([ITEM], "claims", backend, runner=QUIET, verdicts="direct").records()[0]
    assert row["precision"] == pytest.approx((0.9 + 0.1) / 2) and row["precision_hard"] == 0.5
    assert row["recall"] == pytest.approx(0.9)
    first, second = row["answer_claims"]
    assert first["verdict"] == "entailment" and first["evidence"][0]["sentence"] == 1
    assert second["verdict"] == "contradiction" and second["evidence"] == []  # only an entailed claim is pointed


def test_a_probability_just_under_one_half_is_not_printed_as_0_50() -> None:
    # P(yes) 0.49939 is "not met"; two decimals printed it as 0.50 beside the cross
    lines = method_class("dece").explain({}, {"criteria": [{"criterion": "c", "satisfied": 0.0, "p_judge": 0.49939}],
                                              "elements": []})
    assert lines == ["✗ criterion: c — P(yes) 0.499"]
    lines = method_class("dece").explain({}, {"criteria": [{"criterion": "c", "satisfied": 0.0, "p_judge": 0.15}],
                                              "elements": []})
    assert lines == ["✗ criterion: c — P(yes) 0.15"]


def test_the_report_says_its_numbers_are_the_judges_and_lists_reviewer_edits(tmp_path: Path) -> None:
    # an override in the review UI changed nothing the report showed, and the report did not mention it
    from assay.store import Store
    from assay.view.report import render_report

    result = assay.evaluate([ITEM], "dece", judge(), runner=QUIET, verdicts="direct", store=tmp_path / "d.db")
    assert "Reviewer edits" not in render_report(result)  # type: ignore[arg-type]
    store = Store(tmp_path / "d.db", create=False)
    key = store.results(result.run_id)[0].key  # type: ignore[union-attr]
    store.annotate(result.run_id, key, "recall", 0.9, author="ann", reason="the answer covers both")  # type: ignore[union-attr]
    store.annotate(result.run_id, key, "human.comment", "fine", author="ann")  # type: ignore[union-attr]
    store.annotate(result.run_id, key, "recall", 0.2, author="bo", reason="misses the tolling rule")  # type: ignore[union-attr]
    html = render_report(result)  # type: ignore[arg-type]
    assert "1 of 1 answer(s) carry reviewers'\nchanges" in html and "(3 edit(s))" in html
    assert "The scores, verdicts and means in this report are\nthe judge's" in html
    assert "recall: 0.550 → <b>0.900</b> by ann — the answer covers both" in html
    # a second reviewer's edit of the same place is shown beside the first's (the report kept only the latest),
    # and what a reviewer added (a comment, a grade) is in the report too (it was in no table)
    assert "recall: 0.900 → <b>0.200</b> by bo — misses the tolling rule" in html
    assert "human.comment: — → <b>fine</b> by ann" in html
    from assay.exchange.export import export_rows

    row = export_rows(store, result.run_id, annotations=True)[0]  # type: ignore[union-attr]
    assert row["annotations"] == {"ann": {"recall": 0.9, "human.comment": "fine"}, "bo": {"recall": 0.2}}
    assert row["annotation_reasons"] == {"ann": {"recall": "the answer covers both"},
                                         "bo": {"recall": "misses the tolling rule"}}
