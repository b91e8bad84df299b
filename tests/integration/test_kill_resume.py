"""A run killed with SIGKILL mid-way and resumed ends with the same results as an uninterrupted
run, and a finished run re-run makes no judge call. Real subprocesses, real SQLite files."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ITEM, criteria_json, elements_json, no_model, verdicts_json

pytestmark = pytest.mark.integration
N = 8


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "items.jsonl"
    rows = [{**ITEM, "id": f"q{i // 2}", "system": f"s{i % 2}", "query": f"{ITEM['query']} [Q{i // 2}]",
             "response": f"{ITEM['response']} Case {i}."} for i in range(N)]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rules = []
    for i in range(N):  # scores that differ by item, so a mix-up would show
        rules.append({"match": rf"<criteria>.*Case {i}\.", "repeat": True,
                      "responses": [verdicts_json("criterion", [i % 2, 1, (i // 2) % 2])]})
        rules.append({"match": r"<elements>", "repeat": True, "responses": [verdicts_json("element", [1, 0])]})
        rules.append({"match": rf"<query>.*\[Q{i // 2}\].*<reference>", "repeat": True,
                      "responses": [criteria_json("a", "b", "c")]})
        rules.append({"match": rf"<query>.*Case {i}\.", "repeat": True,
                      "responses": [elements_json(f"element {i}", "other")]})
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"rules": rules, "latency": 0.15}))
    return data, judge


def run_cli(*args: str | Path, **kwargs: object) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "assay", *[str(a) for a in args]]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "ASSAY_PROGRESS": "0"}, **kwargs)  # type: ignore[call-overload]


def results_of(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT idx, item_key, status, scores, details FROM results ORDER BY idx").fetchall()
    finally:
        con.close()


def count_results(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(db)
        try:
            return int(con.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


@no_model
def test_sigkill_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    data, judge = write_inputs(tmp_path)
    reference_db = tmp_path / "reference.db"
    ref = run_cli("eval", "dece", data, "--judge", f"scripted/{judge}", "--store", reference_db)
    assert ref.wait(timeout=120) == 0, ref.stderr.read() if ref.stderr else ""

    killed_db = tmp_path / "killed.db"
    proc = run_cli("eval", "dece", data, "--judge", f"scripted/{judge}", "--store", killed_db,
                   "--concurrency", "1")
    deadline = time.time() + 60
    while count_results(killed_db) < 2 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    done_before = count_results(killed_db)
    assert 2 <= done_before < N, "the kill should land mid-run"

    resumed = run_cli("eval", "dece", data, "--judge", f"scripted/{judge}", "--store", killed_db, "--resume")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert results_of(killed_db) == results_of(reference_db)

    again = run_cli("eval", "dece", data, "--judge", f"scripted/{judge}", "--store", killed_db, "--resume")
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert "0 judge call(s) made" in out


def test_sigterm_stops_an_embedded_judge_mid_generation(tmp_path: Path) -> None:
    """The embedded judge's worker thread stops at its next token when the run is told to stop:
    a DeCE run sent SIGTERM while a call generates exits 143, marked interrupted, instead of
    running until the generation ends (it was still running 40 s later before)."""
    exe = Path(sys.executable).parent / "assay"
    examples = Path(__file__).parents[2] / "examples" / "dece_examples.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    proc = subprocess.Popen([str(exe), "eval", "dece", str(examples), "--limit", "2", "--judge", "llamacpp/default",
                             "--no-progress", "--store", "r.db"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the run exists: the model is loaded and calls are under way
        try:
            if sqlite3.connect(tmp_path / "r.db").execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.5)
    time.sleep(4)  # a generation is running
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)  # a prompt being read cannot be cut; a generation can
    assert proc.returncode == 143, out + err
    db = sqlite3.connect(tmp_path / "r.db")
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
