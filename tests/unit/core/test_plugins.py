"""A method defined outside the package, registered only through an ``assay.methods`` entry point,
is a first-class method of the installed `assay` command: help, run, export, report."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))
FIXTURE = Path(__file__).parents[2] / "plugin_fixture"
pytestmark = pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed (make setup)")


def run(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PYTHONPATH"] = os.pathsep.join([str(FIXTURE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["COLUMNS"] = "200"
    return subprocess.run([ASSAY, *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def test_an_entry_point_method_gets_a_command_runs_exports_and_reports(tmp_path: Path) -> None:
    listed = run("eval", "--help", cwd=tmp_path)
    assert listed.returncode == 0 and "yesno" in listed.stdout and "Plug-in: does the answer" in listed.stdout
    helped = run("eval", "yesno", "--help", cwd=tmp_path)
    assert "--strictness" in helped.stdout and "How strictly to read" in helped.stdout
    assert "ASSAY_STRICTNESS" in run("eval", "yesno", "--help-all", cwd=tmp_path).stdout

    items = [{"id": "a", "query": "Capital of France?", "response": "Paris."},
             {"id": "b", "query": "Capital of Peru?", "response": "I like turtles."}]
    (tmp_path / "items.jsonl").write_text("\n".join(json.dumps(i) for i in items) + "\n")
    judge = {"rules": [{"match": "Paris", "responses": ['{"answer": "yes"}'], "repeat": True},
                       {"match": "turtles", "responses": ['{"answer": "no"}'], "repeat": True}]}
    (tmp_path / "judge.json").write_text(json.dumps(judge))
    made = run("eval", "yesno", "items.jsonl", "--strictness", "2", "--judge", "scripted/judge.json", "--store",
               "run.db", "--no-progress", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    manifest = json.loads(sqlite3.connect(tmp_path / "run.db").execute("SELECT manifest FROM runs").fetchone()[0])
    assert manifest["method"] == "yesno" and manifest["method_version"] == "3"
    assert manifest["method_manifest"]["config"] == {"strictness": 2}
    shipped = (FIXTURE / "assay_yesno" / "prompts" / "ask.md").read_bytes()
    assert manifest["method_manifest"]["prompt_sha256"] == hashlib.sha256(shipped).hexdigest()

    bad = run("eval", "yesno", "items.jsonl", "--strictness", "9", "--judge", "scripted/judge.json", "--store",
              "bad.db", cwd=tmp_path)
    assert bad.returncode == 2 and "strictness" in bad.stderr and not (tmp_path / "bad.db").exists()

    assert run("export", "run.db", "-o", "rows.jsonl", cwd=tmp_path).returncode == 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [r["addresses"] for r in rows] == [1.0, 0.0] and rows[0]["verdict"] == "yes"
    assert run("export", "run.db", "-o", "compact.jsonl", "--compact", cwd=tmp_path).returncode == 0
    compact = json.loads((tmp_path / "compact.jsonl").read_text().splitlines()[0])
    assert "addresses" in compact and "verdict" not in compact

    other = run("eval", "yesno", "items.jsonl", "--judge", "alwaysyes/v1", "--store", "yes.db", "--no-progress",
                cwd=tmp_path)  # a judge provider from the same plug-in's assay.judge.backends entry point
    assert other.returncode == 0, other.stderr
    assert run("export", "yes.db", "-o", "yes.jsonl", cwd=tmp_path).returncode == 0
    assert [json.loads(x)["addresses"] for x in (tmp_path / "yes.jsonl").read_text().splitlines()] == [1.0, 1.0]

    assert run("report", "run.db", "-o", "report.html", cwd=tmp_path).returncode == 0
    html = (tmp_path / "report.html").read_text()
    assert '<p class="yesno-summary">1 of 2 answers address their question.</p>' in html


def test_a_plugin_adds_its_own_commands_with_the_kit(tmp_path: Path) -> None:
    """``register_commands(app, kit)``: the plug-in's command takes kit.JUDGE (with its
    ASSAY_JUDGE variable) and prints with kit.console; a hook written when the second argument
    was the panels dict still works."""
    listed = run("--help", cwd=tmp_path)
    assert listed.returncode == 0 and "yesno-judge" in listed.stdout and "duel-rounds" in listed.stdout
    asked = run("yesno-judge", "--judge", "alwaysyes/x", cwd=tmp_path)
    assert asked.returncode == 0 and "yesno would ask alwaysyes/x" in asked.stdout, asked.stderr
    assert run("duel-rounds", cwd=tmp_path).stdout.strip() == "3"


def test_a_broken_plugin_is_named_and_does_not_break_other_commands(tmp_path: Path) -> None:
    broken = tmp_path / "plugins"
    shutil.copytree(FIXTURE, broken)
    (broken / "assay_yesno-0.1.dist-info" / "entry_points.txt").write_text(
        "[assay.methods]\nyesno = assay_yesno:DoesNotExist\n")  # (and no backends group)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PYTHONPATH"] = os.pathsep.join([str(broken), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    assert ASSAY is not None
    proc = subprocess.run([ASSAY, "eval", "--help"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "dece" in proc.stdout and "yesno" not in proc.stdout
    assert "plug-in method 'yesno' (assay_yesno:DoesNotExist) failed to load" in proc.stderr


def _duel_data(folder: Path) -> None:
    rows = []
    for q in range(3):
        for s, length in (("alpha", 10), ("beta", 30), ("gamma", 20), ("delta", 40)):
            rows.append({"id": f"q{q}", "query": f"question {q}?", "response": "x" * (length + q), "system": s})
    (folder / "duels.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def _results(db: Path) -> int:
    try:
        connection = sqlite3.connect(db, timeout=5)
        try:
            return int(connection.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            connection.close()
    except sqlite3.Error:
        return 0


def test_a_pairwise_run_killed_mid_round_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    import time
    _duel_data(tmp_path)
    base = ["eval", "duel", "duels.jsonl", "--rounds", "3", "--no-progress", "--concurrency", "1"]
    straight = run(*base, "--judge", "longer/v1", "--store", "straight.db", cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr

    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PYTHONPATH"] = os.pathsep.join([str(FIXTURE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    log = tmp_path / "calls.log"
    slow = ["--judge", "longer/v1", "--judge-opt", "latency=0.15", "--judge-opt", f"log={log}"]
    proc = subprocess.Popen([ASSAY, *base, *slow, "--out", "killed.db"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while _results(tmp_path / "killed.db") < 8 and time.monotonic() < deadline:  # round 0 has 6 units
        time.sleep(0.05)
    proc.kill()  # SIGKILL: no handler runs, the lock stays behind
    proc.wait()
    killed_at = _results(tmp_path / "killed.db")
    assert 6 < killed_at < 18, killed_at
    resumed = run(*base, *slow, "--out", "killed.db", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{killed_at} item(s) were already done" in resumed.stdout

    for name in ("straight", "killed"):
        assert run("export", f"{name}.db", "-o", f"{name}.jsonl", cwd=tmp_path).returncode == 0
    straight_rows = (tmp_path / "straight.jsonl").read_text().splitlines()
    killed_rows = (tmp_path / "killed.jsonl").read_text().splitlines()
    assert len(straight_rows) == 18 and killed_rows == straight_rows  # same units, rounds, verdicts, run id
    rounds = [json.loads(r)["round"] for r in straight_rows]
    assert rounds == sorted(rounds) and set(rounds) == {0, 1, 2}
    calls = log.read_text().splitlines()
    assert len(calls) - len(set(calls)) <= 1  # at most the call in flight at the kill was made twice
    assert len(set(calls)) == 18


def test_an_edited_plugin_prompt_file_makes_a_new_run(tmp_path: Path) -> None:
    """A plug-in's prompt files are hashed into its run ids like the built-ins': the same data
    after an edit of the prompt is a new run, not the old one continued or shown again."""
    copy = tmp_path / "plugin"
    shutil.copytree(FIXTURE, copy)
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "query": "Capital of France?", "response": "Paris."}) + "\n")
    (tmp_path / "judge.json").write_text(json.dumps({"rules": [{"match": ".", "responses": ['{"answer": "yes"}'],
                                                                "repeat": True}]}))

    def evaluate() -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
        env["PYTHONPATH"] = os.pathsep.join([str(copy), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        assert ASSAY is not None
        return subprocess.run([ASSAY, "eval", "yesno", "items.jsonl", "--judge", "scripted/judge.json", "--store",
                               "run.db", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=120)

    def runs() -> list[str]:
        return [r[0] for r in sqlite3.connect(tmp_path / "run.db").execute("SELECT run_id FROM runs")]

    assert evaluate().returncode == 0
    (first,) = runs()
    again = evaluate()  # unchanged prompt: the same run, which the store already holds, shown again
    assert again.returncode == 0 and f"run {first} in run.db was already finished" in again.stdout, again.stderr
    assert runs() == [first]
    prompt = copy / "assay_yesno" / "prompts" / "ask.md"
    prompt.write_text(prompt.read_text().replace("You decide", "You carefully decide"))
    edited = evaluate()
    assert edited.returncode == 0, edited.stderr
    assert len(runs()) == 2 and first in runs()


def test_a_plugin_dataset_adapter_feeds_meta(tmp_path: Path) -> None:
    """A dataset kind from a plug-in's ``assay.data.datasets`` entry point reads its own format for
    ``assay meta``, listed in the help beside the built-in kinds."""
    rows = [("What is 2+2?", "It is 4.", "2+2 is 4.", "1.0"), ("Capital of France?", "Paris.", "Paris is.", "0.9"),
            ("Capital of Peru?", "I like turtles.", "Lima is.", "0.0"), ("Largest ocean?", "The Pacific.",
                                                                         "The Pacific Ocean.", "0.8")]
    (tmp_path / "toy.tsv").write_text("".join("\t".join(r) + "\n" for r in rows))
    assert "toyqa" in run("meta", "--help", cwd=tmp_path).stdout
    made = run("meta", "toyqa", "toy.tsv", "-m", "rougeL", "-o", "meta.json", "--store", "m.db", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    result = json.loads((tmp_path / "meta.json").read_text())
    (row,) = [r for r in result["rows"] if r["method"] == "rougeL"]
    assert row["human_label"] == "score" and row["n"] == 4
    unknown = run("meta", "toyq", "toy.tsv", "-m", "rougeL", cwd=tmp_path)
    assert unknown.returncode == 2 and "toyqa" in unknown.stderr  # the known kinds include the plug-in's
