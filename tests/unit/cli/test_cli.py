from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from assay.cli import app
from tests.helpers import ITEM, dece_rules

runner = CliRunner()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    rows = [ITEM, {**ITEM, "system": "s2", "response": "Three years. <script>alert(1)</script>"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def judge(tmp_path: Path) -> str:
    script = tmp_path / "judge.json"
    script.write_text(json.dumps({"rules": dece_rules(["three years", "notice"], ["three <b>years</b>"],
                                                      sat=[1, 0], ver=[1])}))
    return f"scripted/{script}"


def invoke(*args: str) -> object:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_eval_export_report_round_trip(tmp_path: Path, data: Path, judge: str) -> None:
    out = tmp_path / "run.db"
    result = invoke("eval", "dece", data, "--judge", judge, "--store", out, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "0.500" in result.output  # recall of both answers

    for fmt in ("jsonl", "csv", "parquet"):
        target = tmp_path / f"run.{fmt}"
        assert invoke("export", out, "--format", fmt, "-o", target).exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert {"precision", "recall", "f_beta", "criteria", "elements", "unscored_reason"} <= set(rows[0])
    assert rows[0]["criteria"][0]["reasoning"] == "because 1"
    frame = pd.read_parquet(tmp_path / "run.parquet")
    assert list(frame["recall"]) == [0.5, 0.5]
    assert json.loads(frame["criteria"][0])[1]["satisfied"] is False
    assert len(pd.read_csv(tmp_path / "run.csv")) == 2

    html_path = tmp_path / "report.html"
    assert invoke("report", out, "-o", html_path).exit_code == 0
    html = html_path.read_text()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "three &lt;b&gt;years&lt;/b&gt;" in html  # model-written text is escaped too
    assert "Run manifest" in html and "criteria_satisfaction" in html


def test_the_same_command_twice_shows_the_finished_run_with_no_judge_call(tmp_path: Path, data: Path,
                                                                           judge: str) -> None:
    out = tmp_path / "run.db"
    first = invoke("eval", "dece", data, "--judge", judge, "--store", out, "--no-progress")
    assert first.exit_code == 0, first.output
    again = invoke("eval", "dece", data, "--judge", judge, "--store", out, "--no-progress")
    assert again.exit_code == 0, again.output
    assert "already finished" in again.output and "0 judge call(s) made" in again.output
    assert "0.500" in again.output  # its results are printed
    assert "resume=True" not in again.output and "--resume" not in again.output
    # the old flag is still accepted and changes nothing
    old = invoke("eval", "dece", data, "--judge", judge, "--store", out, "--resume", "--no-progress")
    assert old.exit_code == 0 and "already finished" in old.output
    runs = [r[0] for r in __import__("sqlite3").connect(out).execute("SELECT run_id FROM runs")]
    assert len(runs) == 1


def test_fresh_drops_the_run_and_scores_it_again(tmp_path: Path, data: Path, judge: str) -> None:
    import sqlite3

    out = tmp_path / "run.db"
    assert invoke("eval", "dece", data, "--judge", judge, "--store", out, "--no-progress").exit_code == 0
    (run_id,) = [r[0] for r in sqlite3.connect(out).execute("SELECT run_id FROM runs")]
    created = sqlite3.connect(out).execute("SELECT created_at FROM runs").fetchone()[0]
    fresh = invoke("eval", "dece", data, "--judge", judge, "--store", out, "--fresh", "--no-progress")
    assert fresh.exit_code == 0, fresh.output
    assert "already finished" not in fresh.output and "this invocation:" in fresh.output
    rows = sqlite3.connect(out).execute("SELECT run_id, created_at FROM runs").fetchall()
    assert [r[0] for r in rows] == [run_id] and rows[0][1] > created  # the same run id, made anew
    assert len(sqlite3.connect(out).execute("SELECT * FROM results").fetchall()) == 2


def test_an_unfinished_run_is_continued_by_the_same_command(tmp_path: Path, data: Path, judge: str) -> None:
    import sqlite3

    out = tmp_path / "run.db"
    assert invoke("eval", "dece", data, "--judge", judge, "--store", out, "--no-progress").exit_code == 0
    db = sqlite3.connect(out)
    db.execute("DELETE FROM results WHERE idx = 1")
    db.execute("UPDATE runs SET status = 'interrupted'")
    db.commit()
    again = invoke("eval", "dece", data, "--judge", judge, "--store", out, "--no-progress")
    assert again.exit_code == 0, again.output
    assert "resumed run" in again.output and "1 item(s) were already done" in again.output
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    assert len(db.execute("SELECT * FROM results").fetchall()) == 2


def test_dry_run_calls_nothing(tmp_path: Path, data: Path) -> None:
    result = invoke("eval", "dece", data, "--judge", "scripted/none.json", "--dry-run",
                    "--store", tmp_path / "x.db")
    assert result.exit_code == 0 and "≈7 judge calls" in result.output
    assert not (tmp_path / "x.db").exists()


def test_criteria_review_workflow(tmp_path: Path, data: Path, judge: str) -> None:
    criteria = tmp_path / "criteria.jsonl"
    result = invoke("dece", "criteria", "extract", data, "-o", criteria, "--judge", judge,
                    "--store", tmp_path / "c.db")
    assert result.exit_code == 0, result.output
    # a judge session shows its progress as the calls it made and found in the cache (--progress)
    assert "dece-criteria" in result.output and "1 judge call(s), 0 from the cache" in result.output
    quiet = invoke("dece", "criteria", "extract", data, "-o", criteria, "--judge", judge,
                   "--store", tmp_path / "c.db", "--no-progress")
    assert quiet.exit_code == 0 and "judge call(s)" not in quiet.output
    records = [json.loads(line) for line in criteria.read_text().splitlines()]
    assert len(records) == 1 and records[0]["criteria"] == ["three years", "notice"]
    records[0]["criteria"][1] = "a notice of claim within 90 days for municipal defendants"
    criteria.write_text(json.dumps(records[0]) + "\n")
    out = tmp_path / "run.db"
    assert invoke("eval", "dece", data, "--judge", judge, "--store", out, "--criteria", criteria,
                  "--no-progress").exit_code == 0
    invoke("export", out, "-o", tmp_path / "r.jsonl")
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert row["criteria_source"] == "file"
    assert [c["edited"] for c in row["criteria"]] == [False, True]


def test_bad_input_is_one_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    import subprocess
    import sys
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ITEM) + "\n{not json\n")
    out = tmp_path / "run.db"
    proc = subprocess.run([sys.executable, "-m", "assay", "eval", "dece", str(bad), "--judge",
                           "scripted/x.json", "--store", str(out)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{bad}, line 2: malformed JSON" in " ".join(proc.stderr.split())
    assert not out.exists()


def test_toml_config_sets_defaults_and_flags_win(tmp_path: Path, data: Path, judge: str) -> None:
    from assay.cli import load_config
    from assay.store import Store
    config = tmp_path / "assay.toml"
    config.write_text('[eval.dece]\ndomain = "legal"\nbeta = 1.0\n')
    defaults = load_config(config)
    out = tmp_path / "run.db"
    result = runner.invoke(app, ["eval", "dece", str(data), "--judge", judge, "--store", str(out), "--beta", "3",
                                 "--no-progress"], default_map=defaults, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    manifest = Store(out).list_runs()[0].manifest["method_manifest"]["config"]
    assert manifest["domain"] == "legal" and manifest["beta"] == 3.0
