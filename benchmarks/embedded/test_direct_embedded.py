"""Direct verdicts on the real embedded judge (Qwen2.5-Coder-1.5B, llama.cpp), through the
installed `assay` executable.

DeCE with ``--verdicts direct``: every criterion and every element carries the judge's probability
(``p_judge``), the sentence it rests on when positive, and who decided it (the judge or a
deterministic check). LeMAJ with ``--verdicts direct``: the changed payment term of the planted
contract answers (tests/data/lemaj_planted.json) is still tagged incorrect. What the 1.5B judge
does beyond that is printed (pytest -rA), not asserted.
"""

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
PLANTED = Path(__file__).parents[2] / "tests" / "data" / "lemaj_planted.json"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    return subprocess.run([exe, *args], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1800)


def _export(tmp_path: Path, store: str) -> list[dict]:
    proc = _run(tmp_path, "export", store, "-o", "out.jsonl")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]


def test_dece_direct_gives_every_criterion_and_element_a_probability(tmp_path: Path) -> None:
    lines = [line for line in examples_path().read_text().splitlines() if '"legal-sol-ny"' in line]
    assert len(lines) == 3
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n")
    proc = _run(tmp_path, "eval", "dece", "items.jsonl", "--verdicts", "direct", "--judge-opt", "n_ctx=4096",
                "--store", "d.db", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    rows = _export(tmp_path, "d.db")
    assert len(rows) == 3
    for row in rows:
        print(row["system"], row["precision"], row["recall"], row["f_beta"], row["unscored_reason"])
        assert row["f_beta"] is not None, row["unscored_reason"]
        assert row["criteria"] and row["elements"]
        reference = row["reference"]
        reference = Reference(**reference) if isinstance(reference, dict) else Reference(required=reference)
        sentences = {"criteria": row["response"], "elements": reference.full_text()}
        for group in ("criteria", "elements"):
            for entry in row[group]:
                p = entry["p_judge"]
                assert isinstance(p, float) and 0.0 <= p <= 1.0, entry
                assert entry["decided_by"] in ("judge", "deterministic check"), entry
                if p >= 0.5:  # a positive verdict points to the sentence it rests on, quoted from its text
                    assert len(entry["evidence"]) == 1 and entry["quote"] in sentences[group], entry
                counted = entry["satisfied" if group == "criteria" else "supported"]
                # what counts: the calibrated P where the shipped map applies (elements), else the judge's P
                calibrated = entry.get("p_calibrated")
                assert counted == (0.0 if entry["downgraded"] else p if calibrated is None else calibrated), entry
                print(" ", group, round(p, 3), entry["decided_by"], entry.get("criterion") or entry.get("element"))


def test_lemaj_direct_still_flags_a_changed_contract_term(tmp_path: Path) -> None:
    planted = json.loads(PLANTED.read_text())
    rows = [{"id": name, "query": planted["query"], "response": planted["answers"][name],
             "document": planted["document"]} for name in ("original", "change_value")]
    (tmp_path / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    proc = _run(tmp_path, "eval", "lemaj", "answers.jsonl", "--verdicts", "direct", "--judge-opt", "n_ctx=4096",
                "--max-reason-chars", "90", "--max-quote-chars", "120", "--store", "l.db", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    out = {r["id"]: r for r in _export(tmp_path, "l.db")}
    for name, row in out.items():
        print(name, row.get("correctness"), [(d["tag"], d.get("p_supported"), d.get("decided_by"), d["text"][:50])
                                             for d in row["ldps"]])
        for d in row["ldps"]:
            if d["tag"] != "missing":
                assert 0.0 <= d["p_supported"] <= 1.0 and 0.0 <= d["p_relevant"] <= 1.0, d
    sentence = planted["planted"]["change_value"]
    row = out["change_value"]
    start = row["response"].index(sentence)
    flagged = [d for d in row["ldps"] if d["tag"] == "incorrect" and d["start"] is not None
               and d["start"] < start + len(sentence) and d["end"] > start]
    assert flagged, row["ldps"]
