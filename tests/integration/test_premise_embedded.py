"""PReMISE on a real model (SmolLM2-135M on llama.cpp: plumbing, not quality) through the installed
`assay`: discovery from one
HaluQuestQA-style preference pair writes a rubric, a second discovery over the same store makes
no judge call (every stage part is stored), the discovered rubric is audited for reliability and
preference fit (accuracy, applicability, score anatomy), and the preference-rank repair re-uses the
audit's calls. The adversarial axis on a real model (attacks, their scores, the verifier) is the
second test's: VFR refinement measures it with the audit's own code; its line in `assay rubric
audit`'s output is checked with a scripted judge (tests/unit/methods/premise/test_rubric_audit.py).
It ran here too and took half this test's time: SmolLM2's attacks are its longest replies. What the judge's
rubric says is not asserted; that it runs, parses and resumes is. The rubric is cut to two
criteria (the audit's calls grow with each criterion; two still give a score anatomy and a
preference fit over several criteria) after one round of consolidation (one round already
clusters, subgroups and describes; more rounds repeat the same calls)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PAIRS = [
    {"id": "p1", "query": "Why does ice float on water?",
     "chosen": "Ice is less dense than liquid water: when water freezes its molecules lock into a hexagonal "
               "lattice held by hydrogen bonds, which leaves more space between them, so ice floats.",
     "rejected": "Ice floats because it is cold and cold things rise."},
    {"id": "p2", "query": "Why is the sky blue?",
     "chosen": "Sunlight is scattered by air molecules, and shorter blue wavelengths scatter much more than red "
               "ones (Rayleigh scattering), so blue light reaches our eyes from every direction of the sky.",
     "rejected": "The sky reflects the colour of the oceans."},
]


def test_discover_resume_and_audit_on_the_embedded_judge(tmp_path: Path) -> None:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    (tmp_path / "pairs.jsonl").write_text(json.dumps(PAIRS[0]) + "\n")  # one pair: the audit's calls grow with each
    discover = [exe, "rubric", "discover", "pairs.jsonl", "-o", "rubric.yaml", "--size", "2", "--max-levels", "1",
                "--min-support", "1", "--min-sources", "1", "--matcher", "lexical", "--store", "p.db",
                "--trace", "trace.json",
                "--judge", "llamacpp/smollm2", "--judge-opt", "n_ctx=4096"]
    first = subprocess.run(discover, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1800)
    assert first.returncode == 0, first.stderr + first.stdout
    print(first.stdout)
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert trace["levels"][0]["pool"] >= 3 and not trace["pairs_failed"]  # 3–5 criteria a pair
    assert "rubric.yaml" in first.stdout and (tmp_path / "rubric.yaml").exists()
    again = subprocess.run([*discover, "--force"], cwd=tmp_path, capture_output=True, text=True, env=env,
                           timeout=600)
    assert again.returncode == 0 and "0 judge call(s) made" in again.stdout, again.stdout + again.stderr
    audit = subprocess.run([exe, "rubric", "audit", "rubric.yaml", "--pairs", "pairs.jsonl", "--axes",
                            "reliability,fit", "--runs", "2", "--paraphrases", "1", "--votes", "1", "--store", "p.db",
                            "--output", "audit.json", "--judge", "llamacpp/smollm2", "--judge-opt", "n_ctx=4096"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1800)
    assert audit.returncode == 0, audit.stderr
    print(audit.stdout)
    summary = json.loads((tmp_path / "audit.json").read_text())["summary"]
    assert summary["accuracy_rubric"] in (0.0, 0.5, 1.0) and summary["accuracy_no_rubric"] in (0.0, 0.5, 1.0)
    assert summary["flip_rate"] is None or 0.0 <= summary["flip_rate"] <= 1.0
    assert summary["alpha"] is None  # one judge: no agreement, said so
    assert 0.0 <= summary["app_in"] <= 1.0 and "EffDim" in audit.stdout
    assert "adversarial: VFR" not in audit.stdout  # not asked for (the VFR test below runs that axis)
    repair = subprocess.run([exe, "rubric", "repair", "rubric.yaml", "--pairs", "pairs.jsonl", "--eta", "0.5",
                             "-o", "fixed.yaml", "--store", "p.db", "--judge", "llamacpp/smollm2", "--judge-opt",
                             "n_ctx=4096"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    print(repair.stdout)
    assert repair.returncode in (0, 1), repair.stderr  # 1: no criterion kept, nothing written
    assert "0 judge call(s) made" in repair.stdout  # every F.4 / F.11 call came from the audit's store
    assert (tmp_path / "fixed.yaml").exists() == (repair.returncode == 0)


def test_vfr_refinement_on_the_embedded_judge(tmp_path: Path) -> None:
    """Algorithm 2 on a hand-written one-criterion rubric: two pairs (one calibration, one held
    out), two attacks per measurement, the do-not-reward operator only. Whether the judge is
    fooled, and whether its edit helps, is not asserted; that the search runs, writes a rubric
    whose every revision is within the budget, reports every candidate, and resumes is."""
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    (tmp_path / "pairs.jsonl").write_text("\n".join(map(json.dumps, PAIRS)) + "\n")
    (tmp_path / "hand.yaml").write_text(
        "criteria:\n  - id: explains_mechanism\n"
        "    description: The answer explains the physical mechanism behind what the question asks about.\n")
    cmd = [exe, "rubric", "repair", "hand.yaml", "--pairs", "pairs.jsonl", "--mode", "vfr", "--operators",
           "do_not_reward", "--depth", "1", "--attacks", "2", "--runs", "2", "--store", "v.db", "-o", "fixed.yaml",
           "--report", "refine.json", "--judge", "llamacpp/smollm2", "--judge-opt", "n_ctx=4096"]
    first = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1800)
    print(first.stdout)
    assert first.returncode == 0, first.stderr + first.stdout
    result = json.loads((tmp_path / "refine.json").read_text())["criteria"][0]
    assert len(result["held_out_pairs"]) == 1 and len(result["calibration_pairs"]) == 1
    before = result["before"]
    assert before["attacks"] == 2 and (before["vfr"] is None or 0.0 <= before["vfr"] <= 1.0)
    if before["vfr"]:  # something to lower: L ran and its candidate was checked and (if in budget) measured
        (candidate,) = result["candidates"]
        assert candidate["operators"] == ["do_not_reward"]
        assert candidate["status"] in ("accepted", "rejected", "no gain", "VFR not measurable", "over budget",
                                       "unparsed")
        if candidate["status"] in ("accepted", "rejected", "no gain", "VFR not measurable"):
            assert candidate["violations"] == [] and candidate["metrics"]["attacks"] == 2
    else:
        assert result["candidates"] == [] and result["reason"]
    from assay.methods.premise.files import load_rubric
    from assay.methods.premise.refine import Draft, sb_plr

    fixed = load_rubric(tmp_path / "fixed.yaml").criteria[0]
    assert (fixed.extra.get("refine") is not None) == (result["chosen"] is not None)
    if result["chosen"] is not None:
        assert sb_plr(Draft.of(fixed)) == []
    again = subprocess.run([*cmd, "--force"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and "0 judge call(s) made" in again.stdout, again.stdout + again.stderr
