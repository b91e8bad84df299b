"""The baseline judges on a real model (SmolLM2-135M on llama.cpp: the path, not the quality): they
run, parse, and G-Eval gets real logprobs. The claims baseline runs on the model in
test_soft_verdicts_embedded: its soft verdicts are its generated calls with the labels' logprobs
read too, so a hard run here took no other path (its checks moved there)."""

from __future__ import annotations

import pytest

import assay
from assay.cli.demo import examples_path
from assay.data.datasets import read_jsonl
from assay.judge.backends._llamacpp import LlamaCppBackend
from assay.judge.runner import RunnerConfig

pytestmark = pytest.mark.integration
QUIET = RunnerConfig(progress=False)


@pytest.fixture(scope="module")
def answers() -> list[assay.Item]:
    items = [i for i in read_jsonl(examples_path()) if i.id == "med-amox-dose"]
    return [i for i in items if i.system in ("good", "omission")]


def test_pointwise_grades_on_the_0_to_4_scale(answers: list[assay.Item]) -> None:
    rows = {r["system"]: r for r in assay.evaluate(answers[:1], "pointwise", "llamacpp/smollm2", runner=QUIET,
                                                    domain="medical").records()}
    for row in rows.values():
        print(row["system"], row["pointwise"], row.get("issues"), row.get("justification"))
        assert row["pointwise"] in (0.0, 1.0, 2.0, 3.0, 4.0), row["unscored_reason"]
        assert row["reasoning"]


def test_geval_weights_real_logprobs(answers: list[assay.Item]) -> None:
    judge = LlamaCppBackend("smollm2", n_ctx=2048, logits_all=True)
    rows = assay.evaluate(answers, "geval", judge, runner=QUIET, domain="medical").records()
    for row in rows:
        print(row["system"], row["precision_1to5"], row["recall_1to5"], row.get("precision_distribution"))
        assert row["status"] == "scored", row["unscored_reason"]
        assert row["weighting"] == "logprobs"
        assert sum(row["precision_distribution"].values()) == pytest.approx(1.0)
        assert 1.0 <= row["precision_1to5"] <= 5.0 and 0.0 <= row["f_beta"] <= 1.0
