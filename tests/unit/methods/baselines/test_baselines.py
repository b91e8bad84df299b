"""The baseline judges: pointwise (0–4), G-Eval (1–5, logprob-weighted), RAGChecker-style claims."""

from __future__ import annotations

import json
import math

import pytest

import assay
from assay.core.types import Completion, GenerateConfig, Message, TokenLogprob, Usage
from assay.judge.backends import Capabilities, JudgeBackend, ScriptedBackend
from assay.judge.runner import RunnerConfig
from assay.methods.baselines import weighted_digit
from tests.helpers import ITEM

QUIET = RunnerConfig(progress=False)


def pointwise_json(score: int, issues: list[str] | None = None) -> str:
    return json.dumps({"reasoning": "stages 1-6", "issues": issues or [], "score": score, "justification": "ok"})


def test_pointwise_grade_and_issue_labels() -> None:
    backend = ScriptedBackend([pointwise_json(3, ["Missing information", "Missing information"])])
    row = assay.evaluate([ITEM], "pointwise", backend, runner=QUIET).records()[0]
    assert row["pointwise"] == 3.0 and row["issues"] == ["Missing information"]
    prompt = backend.calls[0][0].content
    assert "0 Irrelevant" in prompt and "Wrong jurisdiction" in prompt


def test_pointwise_rejects_an_out_of_scale_grade_then_fails_closed() -> None:
    backend = ScriptedBackend([pointwise_json(7), pointwise_json(9), '{"score": "great"}'])
    row = assay.evaluate([ITEM], "pointwise", backend, runner=QUIET).records()[0]
    assert row["pointwise"] is None and row["status"] == "unscored"
    assert "unparseable judge output after 3 attempt(s)" in row["unscored_reason"]


def test_geval_maps_1_to_5_onto_0_to_1_without_logprobs() -> None:
    backend = ScriptedBackend(['{"precision": 5, "recall": 3, "reason": "r"}'])
    row = assay.evaluate([ITEM], "geval", backend, runner=QUIET).records()[0]
    assert (row["precision"], row["recall"]) == (1.0, 0.5)
    assert row["f_beta"] == pytest.approx(5 * 1.0 * 0.5 / (4 * 1.0 + 0.5))
    assert row["weighting"] == "generated digit"


def _tokens(text_pieces: list[tuple[str, dict[str, float]]]) -> list[TokenLogprob]:
    return [TokenLogprob(token=t, logprob=max(top.values()) if top else 0.0, top=top) for t, top in text_pieces]


LOGPROB_TOKENS = _tokens([('{"', {}), ("precision", {}), ('":', {}),
                          (" 4", {" 4": math.log(0.6), " 5": math.log(0.3), " 3": math.log(0.1)}),
                          (', "', {}), ("recall", {}), ('":', {}),
                          (" 2", {" 2": math.log(0.5), " 1": math.log(0.25), "x": math.log(0.25)}),
                          (', "reason": "r"}', {})])


def test_weighted_digit_is_the_expected_score() -> None:
    completion = Completion(text='{"precision": 4, "recall": 2, "reason": "r"}', logprobs=LOGPROB_TOKENS)
    value, dist = weighted_digit(completion, "precision")  # type: ignore[misc]
    assert value == pytest.approx(4 * 0.6 + 5 * 0.3 + 3 * 0.1) and dist == pytest.approx({"3": .1, "4": .6, "5": .3})
    recall, _ = weighted_digit(completion, "recall")  # type: ignore[misc]
    assert recall == pytest.approx((2 * 0.5 + 1 * 0.25) / 0.75)  # the non-digit alternative is renormalised away
    assert weighted_digit(Completion(text="{}"), "precision") is None


class LogprobJudge(JudgeBackend):
    name = "fake/logprobs"
    capabilities = Capabilities(logprobs=True)

    def __init__(self, tokens: list[TokenLogprob] | None) -> None:
        self.tokens = tokens
        self.configs: list[GenerateConfig] = []

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        self.configs.append(config)
        return Completion(text='{"precision": 4, "recall": 2, "reason": "r"}', logprobs=self.tokens,
                          usage=Usage(prompt_tokens=10, completion_tokens=10), finish_reason="stop")


def test_geval_weights_by_logprobs_when_the_backend_has_them() -> None:
    judge = LogprobJudge(LOGPROB_TOKENS)
    row = assay.evaluate([ITEM], "geval", judge, runner=QUIET).records()[0]
    assert judge.configs[0].logprobs and judge.configs[0].top_logprobs == 5
    assert row["weighting"] == "logprobs"
    assert row["precision"] == pytest.approx((4.2 - 1) / 4)
    assert row["precision_1to5"] == pytest.approx(4.2)


def test_geval_without_the_logprobs_it_asked_for_fails_closed() -> None:
    row = assay.evaluate([ITEM], "geval", LogprobJudge(None), runner=QUIET).records()[0]
    assert row["status"] == "unscored" and "no logprobs at the precision score" in row["unscored_reason"]


def claims_rules(answer_claims: list[str], gold_claims: list[str], answer_verdicts: list[str],
                 gold_verdicts: list[str]) -> list[dict]:
    def verdicts(values: list[str]) -> str:
        return json.dumps({"verdicts": [{"claim": i, "verdict": v} for i, v in enumerate(values, 1)]})
    return [
        {"match": r"<reference>.*<claims>", "responses": [verdicts(answer_verdicts)], "repeat": True},
        {"match": r"<answer>.*<claims>", "responses": [verdicts(gold_verdicts)], "repeat": True},
        {"match": r"<query>.*<answer>", "responses": [json.dumps({"claims": answer_claims})], "repeat": True},
        {"match": r"<query>.*<reference>", "responses": [json.dumps({"claims": gold_claims})], "repeat": True},
    ]


def test_claims_precision_and_recall_by_bidirectional_entailment() -> None:
    rules = claims_rules(["It is three years.", "It is under CPLR 214(5).", "Sue in Paris."],
                         ["Three years.", "CPLR 214(5).", "Notice within 90 days.", "Malpractice 2.5 years."],
                         ["entailment", "entailment", "neutral"],
                         ["entailment", "entailment", "entailment", "contradiction"])
    row = assay.evaluate([ITEM], "claims", ScriptedBackend(rules=rules), runner=QUIET).records()[0]
    assert row["precision"] == pytest.approx(2 / 3) and row["recall"] == pytest.approx(3 / 4)
    assert row["f1"] == pytest.approx(2 * (2 / 3) * 0.75 / (2 / 3 + 0.75))
    assert row["answer_claims"][2] == {"claim": "Sue in Paris.", "verdict": "neutral"}
    assert row["judge_calls"] == 4


def test_claims_verdicts_out_of_order_are_re_asked_then_unscored() -> None:
    rules = claims_rules(["It is three years."], ["Three years."], ["entailment"], ["entailment"])
    rules[0]["responses"] = [json.dumps({"verdicts": [{"claim": 2, "verdict": "entailment"}]})]
    row = assay.evaluate([ITEM], "claims", ScriptedBackend(rules=rules), runner=QUIET).records()[0]
    assert row["precision"] is None and row["recall"] == 1.0
    assert "expected verdicts for claims 1..1 in order" in row["unscored_reason"]


def test_claims_with_evidence_cite_the_sentences_they_rest_on() -> None:
    rules = claims_rules(["It is three years."], ["Three years.", "Notice within 90 days."], [], [])
    rules[0]["responses"] = [json.dumps({"verdicts": [
        {"claim": 1, "evidence": [1], "reason": "same period", "verdict": "entailment"}]})]
    rules[1]["responses"] = [json.dumps({"verdicts": [
        {"claim": 1, "evidence": [1], "reason": "same period", "verdict": "entailment"},
        {"claim": 2, "evidence": [], "reason": "not said", "verdict": "neutral"}]})]
    judge = ScriptedBackend(rules=rules)
    row = assay.evaluate([ITEM], "claims", judge, runner=QUIET, evidence=True).records()[0]
    assert row["precision"] == 1.0 and row["recall"] == 0.5
    assert row["gold_claims"][0] == {"claim": "Three years.", "verdict": "entailment", "reason": "same period",
                                     "evidence": [{"sentence": 1, "text": "It is three years under CPLR 214(5)."}]}
    checking = [m[1].content for m in judge.calls if "<claims>" in m[1].content]
    assert any("[2] Municipal claims need notice within 90 days." in text for text in checking)
    assert '"evidence"' in judge.calls[-1][0].content  # the evidence prompt, not the plain one


def test_claims_citing_a_sentence_that_does_not_exist_is_re_asked_then_unscored() -> None:
    rules = claims_rules(["It is three years."], ["Three years."], ["entailment"], [])
    rules[1]["responses"] = [json.dumps({"verdicts": [
        {"claim": 1, "evidence": [7], "reason": "?", "verdict": "entailment"}]})]
    rules[0]["responses"] = [json.dumps({"verdicts": [
        {"claim": 1, "evidence": [1], "reason": "same", "verdict": "entailment"}]})]
    row = assay.evaluate([ITEM], "claims", ScriptedBackend(rules=rules), runner=QUIET, evidence=True).records()[0]
    assert row["precision"] == 1.0 and row["recall"] is None
    assert "claim 1 cites sentence(s) [7]; the passage has 1..2" in row["unscored_reason"]


def test_eval_cli_runs_baselines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from assay.cli import app

    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps(ITEM) + "\n")
    script = tmp_path / "judge.json"
    script.write_text(json.dumps({"responses": [pointwise_json(2)]}))
    result = CliRunner().invoke(app, ["eval", "pointwise", str(data), "--judge", f"scripted/{script}",
                                      "--store", str(tmp_path / "p.db"), "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0 and "2.000" in result.output
    lexical = CliRunner().invoke(app, ["eval", "rougeL", str(data), "--store", str(tmp_path / "r.db"), "--no-progress"],
                                 catch_exceptions=False)
    assert lexical.exit_code == 0 and "rougeL" in lexical.output


class SplitLabelJudge(JudgeBackend):
    """Gives a scripted judge's claim verdicts logprobs: each label is generated as two tokens
    (the candidate of ``tops`` it starts with, then the rest), the first carrying the next ``tops``
    entry as its top candidates (probabilities, logged)."""

    def __init__(self, inner: JudgeBackend, tops: list[dict[str, float]]):
        self.inner, self.tops = inner, list(tops)
        self.name = inner.name
        self.max_concurrency = 1
        self.capabilities = Capabilities(logprobs=True)

    def identity(self) -> dict:
        return self.inner.identity()

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        import re

        completion = await self.inner.generate(messages, config)
        if not config.logprobs:
            return completion
        tokens, cursor, text = [], 0, completion.text
        for m in re.finditer(r'"verdict":\s*"(\w+)', text):
            top = self.tops.pop(0)
            head = next(t for t in top if m.group(1).startswith(t))
            tokens.append(TokenLogprob(token=text[cursor:m.start(1)], logprob=0.0))
            tokens.append(TokenLogprob(token=head, logprob=math.log(top[head]),
                                       top={t: math.log(p) for t, p in top.items()}))
            tokens.append(TokenLogprob(token=m.group(1)[len(head):], logprob=0.0))
            cursor = m.end(1)
        tokens.append(TokenLogprob(token=text[cursor:], logprob=0.0))
        return completion.model_copy(update={"logprobs": tokens})


def test_claims_soft_verdicts_count_the_probability_of_entailment() -> None:
    rules = claims_rules(["It is three years.", "Sue in Paris."], ["Three years."],
                         ["entailment", "neutral"], ["contradiction"])
    tops = [{"ent": 0.6, "contr": 0.2, "Ent": 0.1},   # "neutral" absent: 0; "Ent" starts no label: dropped
            {"neut": 0.5, "ent": 0.3, "contr": 0.2},
            {"contr": 0.7, "ent": 0.1, "neut": 0.1}]
    judge = SplitLabelJudge(ScriptedBackend(rules=rules), tops)
    row = assay.evaluate([ITEM], "claims", judge, runner=QUIET, verdicts="soft").records()[0]
    # precision: (0.6 / 0.8 + 0.3) / 2 by hand; recall: 0.1 / 0.9
    assert row["precision"] == pytest.approx((0.75 + 0.3) / 2) and row["precision_hard"] == 0.5
    assert row["recall"] == pytest.approx(0.1 / 0.9) and row["recall_hard"] == 0.0
    assert row["f1_hard"] == 0.0 and row["f1"] == pytest.approx(2 * 0.525 * (1 / 9) / (0.525 + 1 / 9))
    assert row["answer_claims"][0]["p"] == pytest.approx({"entailment": 0.75, "contradiction": 0.25, "neutral": 0.0})
    assert row["answer_claims"][0]["verdict"] == "entailment" and row["verdicts"] == "soft"
    # a judge without logprobs: the soft metrics are Unscored with the reason, never the hard share
    plain = assay.evaluate([ITEM], "claims", ScriptedBackend(rules=rules), runner=QUIET, verdicts="soft").records()[0]
    assert plain["precision"] is None and plain["f1"] is None
    assert "soft verdicts need the judge's logprobs at every verdict (got 0 of 2)" in plain["unscored_reason"]


def test_pointwise_soft_verdicts_give_the_expected_grade() -> None:
    from tests.helpers import WithLogprobs

    judge = WithLogprobs(ScriptedBackend([pointwise_json(3)]), {"score": ("3", "2")}, {"score": [0.7]})
    row = assay.evaluate([ITEM], "pointwise", judge, runner=QUIET, verdicts="soft").records()[0]
    assert row["pointwise"] == pytest.approx(0.7 * 3 + 0.3 * 2) and row["pointwise_hard"] == 3.0
    assert row["score_distribution"] == pytest.approx({"0": 0, "1": 0, "2": 0.3, "3": 0.7, "4": 0})
    plain = assay.evaluate([ITEM], "pointwise", ScriptedBackend([pointwise_json(3)]), runner=QUIET,
                           verdicts="soft").records()[0]
    assert plain["pointwise"] is None and "soft verdicts need the judge's logprobs" in plain["unscored_reason"]
    # a hard run's manifest (so its run id) is what it was before the option existed
    from assay.methods.baselines import Pointwise, PointwiseConfig
    assert "verdicts" not in Pointwise().manifest()["config"]
    assert Pointwise(PointwiseConfig(verdicts="soft")).manifest()["config"]["verdicts"] == "soft"
