"""Every method's path on a real model, through the installed `assay`, on the smallest input that
proves it: SmolLM2-135M on llama.cpp (the model's quality is not what is tested here; what the 1.5B
embedded judge does with planted errors is measured by ``make bench-embedded``, in
``benchmarks/embedded/``). What is asserted is what each method guarantees whatever the judge says:
every verdict carries its evidence, probabilities lie in [0, 1] and are counted as written, spans
round-trip, and an answer that cannot be scored says why. Each run is cut to the least that still
takes every path (two criteria and two elements, two sentences, the shortest reasons the options
allow): on a slow CI machine every generated token counts. A path another real-model test already
takes has no run here: DeCE's hard verdicts are the generated calls of its soft verdicts, and the
case-aware judge's one call is made by the 1.5B judge in test_soft_verdicts_embedded (SmolLM2 writes
its scores outside their bands, so its turn was never scored), which checks the bands there."""

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

pytestmark = pytest.mark.integration
JUDGE = ("--judge", "llamacpp/smollm2", "--judge-opt", "n_ctx=4096")
PLANTED = Path(__file__).parents[1] / "data" / "lemaj_planted.json"


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


def test_dece_direct_gives_every_criterion_and_element_a_probability(tmp_path: Path) -> None:
    """Two criteria and two elements: each verdict is its own call, so two of each show that every
    one gets its probability. The criteria come from a criteria file (as an expert's edited ones do):
    SmolLM2's own criteria for this answer are a loop of digits to its token limit on the portable
    build, unparseable three times, so the item would be partial and no verdict asked; extraction by
    a real model is the soft-verdict tests' (test_soft_verdicts_embedded.py) and the server's."""
    _one_answer(tmp_path)
    (tmp_path / "criteria.jsonl").write_text(json.dumps({
        "id": "legal-sol-ny", "criteria": ["A negligence claim must be filed within three years of the injury.",
                                           "A claim against a municipality needs a notice of claim within 90 days."],
        "original": None}) + "\n")
    proc = _run(tmp_path, "eval", "dece", "items.jsonl", "--verdicts", "direct", "--criteria", "criteria.jsonl",
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


def test_lemaj_assesses_every_sentence_and_triage_reads_the_store(tmp_path: Path) -> None:
    """(moved from the 1.5B test_lemaj_embedded and test_direct_embedded, whose planted-defect
    catches are now a benchmark) The planted answer's first two sentences (the second carries the
    changed value), reasons and quotes of at most 20 and 40 characters, and at most one missing
    point: two sentences show that every sentence is assessed, and each is tagged in one call.
    Direct verdicts only: they take LeMAJ's generated call (the segmentation and tags that hard
    verdicts are) and then ask the label questions of each point, so a separate hard-verdict run
    (SmolLM2 cut its one call at the token cap; the answer was "partial") took no path this one
    does not; what the hard form does with a cut-off call is in tests/unit/methods/lemaj.)"""
    planted = json.loads(PLANTED.read_text())
    two = ". ".join(planted["answers"]["change_value"].split(". ")[:2]) + "."
    row = {"id": "change_value", "query": planted["query"], "response": two, "document": planted["document"]}
    (tmp_path / "answers.jsonl").write_text(json.dumps(row) + "\n")
    # no re-ask: SmolLM2 fills every quote and reason to its limit and adds points until its 320-token cap,
    # so the answer is Unscored with its reason (checked); asking twice more repeated it (3 x 320 tokens)
    proc = _run(tmp_path, "eval", "lemaj", "answers.jsonl", "--verdicts", "direct", "--max-reason-chars", "20",
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
            if d["tag"] != "missing":
                assert 0.0 <= d["p_supported"] <= 1.0 and 0.0 <= d["p_relevant"] <= 1.0, d
    triage = _run(tmp_path, "triage", "l.db", "--output", "t.json")
    assert triage.returncode == 0, triage.stderr
    result = json.loads((tmp_path / "t.json").read_text())
    assert result["answers"] == 1 and len(result["cleared"]) + len(result["needs_review"]) == 1
