"""DeCE end to end on the real embedded judge (Qwen2.5-Coder-1.5B, llama.cpp, 2 CPU threads).

The bundled examples plant an error (a wrong number) or an omission into answers of the same
question. The clean answer must rank above the planted ones. Two questions, three answers each:
~20 judge calls, ~9 minutes on 2 cores. What this judge does on its own (it calls nearly every
element "supported", "six years" included) shows in the printed rows; the evidence checks of
quote_policy="require" (cited sentences, figures) are what turn its verdicts into the ordering.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from assay.cli.demo import examples_path
from assay.data.datasets import read_jsonl
from assay.judge.runner import RunnerConfig

pytestmark = pytest.mark.integration
QUESTIONS = ("legal-sol-ny", "med-amox-dose")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict]:
    items = [i for i in read_jsonl(examples_path()) if i.id in QUESTIONS]
    assert len(items) == 6
    store = Path(tmp_path_factory.mktemp("dece")) / "run.db"
    result = assay.evaluate(items, "dece", "llamacpp/default", store=store, verdicts="hard",  # the written verdicts
                            runner=RunnerConfig(progress=False))
    records = result.records()
    for r in records:  # printed with -s / on failure: what the judge did
        print(r["id"], r["system"], r["precision"], r["recall"], r["f_beta"], r["unscored_reason"])
    return {(r["id"], r["system"]): r for r in records}


@pytest.mark.parametrize("question", QUESTIONS)
def test_clean_answer_outscores_planted_error_and_omission(rows: dict, question: str) -> None:
    good, error, omission = (rows[(question, s)] for s in ("good", "error", "omission"))
    for row in (good, error, omission):
        assert row["f_beta"] is not None, row["unscored_reason"]
    assert good["f_beta"] > error["f_beta"]
    assert good["f_beta"] > omission["f_beta"]
    assert good["recall"] > omission["recall"]


def test_every_verdict_carries_its_evidence(rows: dict) -> None:
    for row in rows.values():
        assert row["criteria"] and row["elements"]
        for entry in row["criteria"] + row["elements"]:
            assert entry["reasoning"]
            assert isinstance(entry["quote"], str) and isinstance(entry["evidence"], list)
            assert entry["quote_found"] is bool(entry["evidence"])
            counted = entry.get("satisfied", entry.get("supported"))
            if counted:  # a counted verdict is grounded: cited sentences, no unmatched figure
                assert entry["evidence"] and not entry["figures_missing"]
