"""LeMAJ on the real embedded judge: planted defects of LeMAJ Table 13 in answers about a small
services agreement (tests/data/lemaj_planted.json) — a changed figure (change_value), a changed
party name (change_party), a sentence
of outside knowledge (add_extra_info), a removed clause (remove_info), an irrelevant aside —
run through the installed `assay eval lemaj`, then `assay triage` on the store.

The 1.5B judge is weak; what is asserted is what the method guarantees whatever the judge:
every sentence assessed, spans that round-trip, citations into the shown paragraphs, triage of
the store, and the three planted defects that carry a figure or a name (the changed value, the
changed party, the outside knowledge with its surcharge) tagged incorrect — through the evidence
check when the judge calls them supported. Which others it catches (irrelevant for the aside, a missing point or lower
recall for the removed clause) is printed (pytest -rA) and reported in the closing notes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
DATA = Path(__file__).parents[2] / "tests" / "data" / "lemaj_planted.json"


def test_planted_defects_through_the_executable(tmp_path: Path) -> None:
    planted = json.loads(DATA.read_text())
    rows = [{"id": name, "query": planted["query"], "response": text, "document": planted["document"]}
            for name, text in planted["answers"].items()]
    (tmp_path / "answers.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    exe = shutil.which("assay", path=str(Path(sys.executable).parent))
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.run([exe, "eval", "lemaj", "answers.jsonl", "--judge-opt", "n_ctx=4096", "--max-reason-chars",
                           "90", "--max-quote-chars", "120", "--store", "l.db", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=2400)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([exe, "export", "l.db", "-o", "l.jsonl"], cwd=tmp_path, env=env).returncode == 0
    out = {r["id"]: r for r in map(json.loads, (tmp_path / "l.jsonl").read_text().splitlines())}
    caught = {}
    for name, row in out.items():
        assert row["ldps"], (name, row.get("unscored_reason"))
        sentences = {d["sentence"] for d in row["ldps"] if d["sentence"] is not None}
        assert sentences == set(range(1, len(row["sentences"]) + 1))  # every sentence assessed
        for d in row["ldps"]:
            if d["start"] is not None:
                assert row["response"][d["start"]:d["end"]] == d["text"]
            assert set(d["citation"]) <= set(row["document_view"]["shown"])
        print(name, {k: row.get(k) for k in ("correctness", "precision", "recall")},
              [(d["tag"], d["text"][:50]) for d in row["ldps"]])
    for name, sentence in planted["planted"].items():
        row = out[name]
        if name == "remove_info":
            caught[name] = (any(d["tag"] == "missing" for d in row["ldps"])
                            or (row["recall"] or 0) < (out["original"]["recall"] or 0))
            continue
        want = "irrelevant" if name == "irrelevant_aside" else "incorrect"
        start = row["response"].index(sentence)
        caught[name] = any(d["tag"] == want and d["start"] is not None and d["start"] < start + len(sentence)
                           and d["end"] > start for d in row["ldps"])
    # Measured on 2026-11-23: the 1.5B judge alone tagged every sentence of every variant correct
    # and added no missing point (0 of 4). With the evidence check (a point called supported whose
    # figures its source passage lacks is incorrect) the changed figure and the outside-knowledge
    # sentence (its "2%" surcharge) are caught; the aside (relevance) and the omission are not —
    # printed and reported, not asserted, until a judge catches them.
    print("caught:", caught)
    assert caught["change_value"] and caught["add_extra_info"] and caught["change_party"], caught
    triage = subprocess.run([exe, "triage", "l.db", "--output", "t.json"], cwd=tmp_path, capture_output=True, text=True,
                            env=env, timeout=120)
    assert triage.returncode == 0, triage.stderr
    result = json.loads((tmp_path / "t.json").read_text())
    assert result["answers"] == 6 and len(result["cleared"]) + len(result["needs_review"]) == 6
