"""Soft verdicts on a real model (SmolLM2-135M on llama.cpp: the path, not the quality),
 through the installed `assay` command:
each verdict's label probabilities come from llama.cpp's logprobs at the label in the constrained
JSON, the soft metric is their mean, and the greedy metric of the same calls stays beside it."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from assay.methods.caseaware import METRICS, band_of

pytestmark = pytest.mark.integration

ITEM = {"id": "eiffel", "query": "When was the Eiffel Tower completed, and how tall is it?",
        "response": "The Eiffel Tower was completed in 1889. It is about 330 metres tall. It is in Berlin.",
        "reference": "The Eiffel Tower in Paris was completed in March 1889. It stands about 330 metres tall."}


def _run(tmp_path: Path, method: str, *options: str) -> dict:
    assay_exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert assay_exe is not None
    (tmp_path / "items.jsonl").write_text(json.dumps(ITEM) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.run([assay_exe, "eval", method, "items.jsonl", "--verdicts", "soft",
                           "--judge", "llamacpp/smollm2", "--judge-opt", "logits_all=true", "--judge-opt",
                           "n_ctx=4096", *options, "--store", f"{method}.db", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    exported = subprocess.run([assay_exe, "export", f"{method}.db", "-o", f"{method}.jsonl"], cwd=tmp_path,
                              capture_output=True, text=True, env=env)
    assert exported.returncode == 0, exported.stderr
    return json.loads((tmp_path / f"{method}.jsonl").read_text().splitlines()[0])


def test_claims_soft_verdicts_on_the_embedded_judge(tmp_path: Path) -> None:
    row = _run(tmp_path, "claims", "--max-claims", "3")
    print({k: row.get(k) for k in ("precision", "precision_hard", "recall", "recall_hard", "unscored_reason")})
    assert row["status"] == "scored", row["unscored_reason"]
    # extracted and checked both ways (from the hard run that test_baselines_embedded made before)
    assert row["answer_claims"] and row["gold_claims"] and row["judge_calls"] >= 4
    for side, metric in (("answer_claims", "precision"), ("gold_claims", "recall")):
        claims = row[side]
        for c in claims:
            assert set(c["p"]) == {"entailment", "contradiction", "neutral"}
            assert sum(c["p"].values()) == pytest.approx(1.0)
            assert c["p"][c["verdict"]] > 0  # the label the judge wrote had mass at its position
        assert row[metric] == pytest.approx(sum(c["p"]["entailment"] for c in claims) / len(claims))
        assert row[f"{metric}_hard"] == sum(c["verdict"] == "entailment" for c in claims) / len(claims)


@pytest.mark.parametrize("form", ["--reasoning", "--no-reasoning"])
def test_dece_soft_verdicts_on_the_embedded_judge(tmp_path: Path, form: str) -> None:
    """Two criteria and two elements, reasons of at most 20 characters: the soft metric is a mean
    over each side's verdicts, and two a side show it is one; a reason of 20 characters is still a
    written reason for the --reasoning form. Soft verdicts are the hard verdicts' generated calls
    with the label's logprobs read too, so the evidence checks of hard verdicts are made here
    (they had a SmolLM2 run of their own in test_methods_smoke, which took no other path)."""
    row = _run(tmp_path, "dece", "--max-criteria", "2", "--max-elements", "2", "--max-reasoning-chars", "20", form)
    print({k: row.get(k) for k in ("precision", "precision_hard", "recall", "recall_hard", "unscored_reason")})
    assert row["status"] == "scored", row["unscored_reason"]
    for side, metric in (("criteria", "recall"), ("elements", "precision")):
        entries = row[side]
        assert all(0.0 <= e["p_judge"] <= 1.0 for e in entries)
        assert all(e["soft"] in (0.0, e["p_judge"]) for e in entries)  # a blocked verdict counts 0
        assert row[metric] == pytest.approx(sum(e["soft"] for e in entries) / len(entries))
        key = "satisfied" if side == "criteria" else "supported"
        assert row[f"{metric}_hard"] == pytest.approx(sum(bool(e[key]) for e in entries) / len(entries))
    assert row["f_beta_hard"] is not None
    for entry in row["criteria"] + row["elements"]:  # every verdict carries its evidence
        assert isinstance(entry["quote"], str) and isinstance(entry["evidence"], list)
        assert entry["quote_found"] is bool(entry["evidence"])
        if entry.get("satisfied", entry.get("supported")):  # a counted verdict is grounded
            assert entry["evidence"] and not entry["figures_missing"]
    # the brief form (no written reason) still cites evidence and has no reason in the record
    assert all((e["reasoning"] is None) == (form == "--no-reasoning") for e in row["criteria"] + row["elements"])


def test_caseaware_soft_bands_on_the_embedded_judge(tmp_path: Path) -> None:
    """One short turn; justifications of at most 20 characters (the fewest the method takes: the
    reply's cap is the longest reply the grammar allows, so it is never cut off): the eight metrics
    are written in one call; what is checked is each band's probabilities and the scores they give.
    SmolLM2 since the embedded judge's grammar ties each score to the band written before it (it
    wrote scores outside their bands, so its turns were never scored; this test ran on the 1.5B
    judge then: 791 prompt and ~340 generated tokens, ~25 s of the suite's judge time)."""
    turn = {"id": "vpn-t1", "query": "My VPN fails with error 809. How do I fix it?",
            "response": "Set AssumeUDPEncapsulationContextOnSendRule to 2 in the registry and restart.",
            "contexts": [{"id": "KB-412", "text": "Error 809 behind NAT: set AssumeUDPEncapsulationContextOnSendRule "
                                                  "to 2 under PolicyAgent and restart the computer."}],
            "case": {"subject": "VPN error 809", "description": "Windows 11 laptop at home behind a NAT router"}}
    assay_exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert assay_exe is not None
    (tmp_path / "turns.jsonl").write_text(json.dumps(turn) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.run([assay_exe, "eval", "caseaware", "turns.jsonl", "--verdicts", "soft",
                           "--judge", "llamacpp/smollm2", "--judge-opt", "logits_all=true", "--judge-opt",
                           "n_ctx=4096", "--max-justification-chars", "20",
                           "--store", "ca.db", "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([assay_exe, "export", "ca.db", "-o", "ca.jsonl"], cwd=tmp_path, env=env).returncode == 0
    row = json.loads((tmp_path / "ca.jsonl").read_text().splitlines()[0])
    print({k: row.get(k) for k in ("s_final", "s_final_hard", "unscored_reason")})
    assert row["status"] == "scored", row["unscored_reason"]
    midpoints = {"severe": 0.15, "moderate": 0.455, "minor": 0.73, "none": 0.93}
    for metric in ("hallucination", "answer_helpfulness", "case_resolution_alignment"):
        p = row[f"{metric}_band_p"]
        assert sum(p.values()) == pytest.approx(1.0) and p[row[f"{metric}_band"]] > 0
        judged = row[f"{metric}_score_hard"]
        expected = sum(q * (judged if band == row[f"{metric}_band"] else midpoints[band]) for band, q in p.items())
        assert row[f"{metric}_score"] == pytest.approx(expected)
    assert 0.0 <= row["s_final"] <= 1.0 and row["s_final_hard"] is not None
    # the judge's own scores lie in the bands it chose, written so by the grammar (without it SmolLM2's
    # turn was asked again for scores outside their bands, and failed closed), and S_final_hard is their
    # weighted sum
    with sqlite3.connect(tmp_path / "ca.db") as db:
        asked = [json.loads(r)["messages"][-1]["content"] for (r,) in db.execute("SELECT request FROM judge_calls")]
    assert not [m for m in asked if "outside its band" in m], asked
    for metric in METRICS:
        assert band_of(row[f"{metric}_score_hard"]) == row[f"{metric}_band"]
    assert row["s_final_hard"] == pytest.approx(sum(row["weights"][m] * row[f"{m}_score_hard"] for m in METRICS))
