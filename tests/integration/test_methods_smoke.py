"""Every method's path on a real model, through the installed `assay`, on the smallest input that
proves it: SmolLM2-135M on llama.cpp (the model's quality is not what is tested here; what the 1.5B
embedded judge does with planted errors is measured by ``make bench-embedded``, in
``benchmarks/embedded/``). What is asserted is what each method guarantees whatever the judge says:
every verdict carries its evidence, probabilities lie in [0, 1] and are counted as written, bands
hold their scores, spans round-trip, and an answer that cannot be scored says why. Each run is cut
to the least that still takes every path (two criteria and two elements, two sentences, the
shortest reasons the options allow): on a slow CI machine every generated token counts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli.demo import examples_path
from assay.core.types import Reference
from assay.methods.caseaware import METRICS, band_of

pytestmark = pytest.mark.integration
JUDGE = ("--judge", "llamacpp/smollm2", "--judge-opt", "n_ctx=4096")
PLANTED = Path(__file__).parents[1] / "data" / "lemaj_planted.json"
CASEAWARE = examples_path().parent / "caseaware_examples.jsonl"


def _run(tmp_path: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    return subprocess.run([exe, *args], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=timeout)


def _export(tmp_path: Path, store: str) -> list[dict]:
    proc = _run(tmp_path, "export", store, "-o", "out.jsonl")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]


def _one_answer(tmp_path: Path) -> None:
    line = next(x for x in examples_path().read_text().splitlines() if '"legal-sol-ny"' in x and '"good"' in x)
    (tmp_path / "items.jsonl").write_text(line + "\n")


def _scored_or_says_why(row: dict) -> bool:
    if row["status"] != "scored":
        assert row["unscored_reason"], row  # never a silent default
        return False
    return True


def test_dece_hard_verdicts_carry_their_evidence(tmp_path: Path) -> None:
    """(moved from the 1.5B test_dece_embedded, whose ranking of planted answers is now a benchmark)
    Two criteria and two elements, reasons of at most 12 characters: a verdict list of two shows
    the per-verdict checks, and short reasons fit the verdict call's token budget (with 60, SmolLM2
    filled its reasons with "1.1.1..." until the call was cut off, so the row was never scored)."""
    _one_answer(tmp_path)
    proc = _run(tmp_path, "eval", "dece", "items.jsonl", "--verdicts", "hard", "--max-criteria", "2",
                "--max-elements", "2", "--max-reasoning-chars", "12", *JUDGE, "--store", "d.db", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    (row,) = _export(tmp_path, "d.db")
    if _scored_or_says_why(row):
        assert row["criteria"] and row["elements"]
        for entry in row["criteria"] + row["elements"]:
            assert isinstance(entry["quote"], str) and isinstance(entry["evidence"], list)
            assert entry["quote_found"] is bool(entry["evidence"])
            counted = entry.get("satisfied", entry.get("supported"))
            if counted:  # a counted verdict is grounded: cited sentences, no unmatched figure
                assert entry["evidence"] and not entry["figures_missing"]


def test_dece_direct_gives_every_criterion_and_element_a_probability(tmp_path: Path) -> None:
    """Two criteria and two elements: each verdict is its own call, so two of each show that every
    one gets its probability."""
    _one_answer(tmp_path)
    proc = _run(tmp_path, "eval", "dece", "items.jsonl", "--verdicts", "direct", "--max-criteria", "2",
                "--max-elements", "2", *JUDGE, "--store", "d.db", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    (row,) = _export(tmp_path, "d.db")
    assert _scored_or_says_why(row)
    reference = row["reference"]
    reference = Reference(**reference) if isinstance(reference, dict) else Reference(required=reference)
    sentences = {"criteria": row["response"], "elements": reference.full_text()}
    for group in ("criteria", "elements"):
        assert row[group]
        for entry in row[group]:
            p = entry["p_judge"]
            assert isinstance(p, float) and 0.0 <= p <= 1.0, entry
            assert entry["decided_by"] in ("judge", "deterministic check"), entry
            if p >= 0.5:  # a positive verdict points to the sentence it rests on, quoted from its text
                assert len(entry["evidence"]) == 1 and entry["quote"] in sentences[group], entry
            counted = entry["satisfied" if group == "criteria" else "supported"]
            # what counts: the calibrated P where the shipped map applies (the 1.5B judge's elements), else P
            calibrated = entry.get("p_calibrated")
            assert counted == (0.0 if entry["downgraded"] else p if calibrated is None else calibrated), entry


def test_caseaware_scores_lie_in_their_bands(tmp_path: Path) -> None:
    """(moved from the 1.5B test_caseaware_embedded, whose planted failures are now a benchmark)
    Justifications of at most 20 characters (the least allowed): eight metrics are written in one
    call, and their bands and scores are what is checked, not their reasons. No re-ask: SmolLM2
    writes scores outside their bands, so the turn is Unscored and the reason is what is checked
    (asking twice more made the same mistake at ~300 tokens a time); a scored turn's bands and
    scores are checked on the 1.5B judge in test_soft_verdicts_embedded."""
    first = CASEAWARE.read_text().splitlines()[0]
    (tmp_path / "turns.jsonl").write_text(first + "\n")
    proc = _run(tmp_path, "eval", "caseaware", "turns.jsonl", "--max-justification-chars", "20", "--max-reasks", "0",
                *JUDGE, "--store", "c.db", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    (row,) = _export(tmp_path, "c.db")
    if _scored_or_says_why(row):
        for metric in METRICS:
            assert band_of(row[f"{metric}_score"]) == row[f"{metric}_band"]
        expected = sum(row["weights"][m] * row[f"{m}_score"] for m in METRICS)
        assert row["s_final"] == pytest.approx(expected)


@pytest.mark.parametrize("verdicts", ["hard", "direct"])
def test_lemaj_assesses_every_sentence_and_triage_reads_the_store(tmp_path: Path, verdicts: str) -> None:
    """(moved from the 1.5B test_lemaj_embedded and test_direct_embedded, whose planted-defect
    catches are now a benchmark) The planted answer's first two sentences (the second carries the
    changed value), reasons and quotes of at most 20 and 40 characters, and at most one missing
    point: two sentences show that every sentence is assessed, and each is tagged in one call."""
    planted = json.loads(PLANTED.read_text())
    two = ". ".join(planted["answers"]["change_value"].split(". ")[:2]) + "."
    row = {"id": "change_value", "query": planted["query"], "response": two, "document": planted["document"]}
    (tmp_path / "answers.jsonl").write_text(json.dumps(row) + "\n")
    # no re-ask: SmolLM2 fills every quote and reason to its limit and adds points until its 320-token cap,
    # so the answer is Unscored with its reason (checked); asking twice more repeated it (3 x 320 tokens)
    proc = _run(tmp_path, "eval", "lemaj", "answers.jsonl", "--verdicts", verdicts, "--max-reason-chars", "20",
                "--max-quote-chars", "40", "--max-missing", "1", "--max-reasks", "0", *JUDGE, "--store", "l.db",
                "--no-progress")
    assert proc.returncode == 0, proc.stderr
    (out,) = _export(tmp_path, "l.db")
    if _scored_or_says_why(out):
        sentences = {d["sentence"] for d in out["ldps"] if d["sentence"] is not None}
        assert sentences == set(range(1, len(out["sentences"]) + 1))  # every sentence assessed
        for d in out["ldps"]:
            if d["start"] is not None:
                assert out["response"][d["start"]:d["end"]] == d["text"]
            assert set(d["citation"]) <= set(out["document_view"]["shown"])
            if verdicts == "direct" and d["tag"] != "missing":
                assert 0.0 <= d["p_supported"] <= 1.0 and 0.0 <= d["p_relevant"] <= 1.0, d
    triage = _run(tmp_path, "triage", "l.db", "--output", "t.json")
    assert triage.returncode == 0, triage.stderr
    result = json.loads((tmp_path / "t.json").read_text())
    assert result["answers"] == 1 and len(result["cleared"]) + len(result["needs_review"]) == 1
