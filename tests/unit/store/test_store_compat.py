"""A store written by the previous release (tests/data/store-0.1.0) opens through the migrations,
exports unchanged, and its runs resume with no judge call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.exchange.export import export_rows
from assay.store import MIGRATIONS, Store

OLD = Path(__file__).parents[2] / "data" / "store-0.1.0"
ASSAY = shutil.which("assay", path=str(Path(sys.executable).parent))


ADDED_COLUMNS = ("judge_calls_shared",)
"""Export columns added after the fixtures' exports were written (0.2.1: the calls a row shares
with other rows); every other column of the old store's export is unchanged."""


ADDED_WITH_ANNOTATIONS = ("annotation_reasons",)
"""Added after the fixtures (0.2.1) to an export with ``--annotations``: why each reviewer changed what
they changed, from the same annotations."""


def as_then(rows: list[dict]) -> list[dict]:
    """The export's rows without the columns added since the fixture (each row has them)."""
    assert all(set(ADDED_COLUMNS) <= set(row) for row in rows)
    return [{k: v for k, v in row.items() if k not in ADDED_COLUMNS + ADDED_WITH_ANNOTATIONS} for row in rows]


def restore(fixture: Path, folder: Path) -> Path:
    """A copy of a fixture store's folder with its store restored from the SQL text. Stores are kept
    as their ``sqlite3`` iterdump, so no binary store is tracked in git; restoring one gives the same
    tables and rows."""
    import sqlite3
    shutil.copytree(fixture, folder)
    db = sqlite3.connect(folder / "store.db")
    db.executescript((folder / "store.sql").read_text(encoding="utf-8"))
    db.close()
    return folder


@pytest.fixture
def old(tmp_path: Path) -> Path:
    return restore(OLD, tmp_path / "old")


def test_an_old_store_migrates_and_exports_unchanged(old: Path) -> None:
    store = Store(old / "store.db", create=False)
    assert [r[0] for r in store.db.execute("SELECT name FROM migrations")] == [n for n, _ in MIGRATIONS]
    runs = store.list_runs()
    assert [r.method for r in runs] == ["dece", "caseaware", "rougeL"]
    for run in runs:
        expected = [json.loads(line) for line in (old / f"export-{run.run_id}.jsonl").read_text().splitlines()]
        assert as_then(export_rows(store, run.run_id)) == expected
        assert [u.kind for u in store.units(run.run_id)] == ["item", "item"]


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed")
def test_old_runs_resume_with_no_judge_call_and_the_same_scores(old: Path) -> None:
    """Case-aware's old run resumes. DeCE and rougeL are at version 2 now (an empty answer scores
    F = 0 instead of Unscored): the same command does not continue their version-1 runs but starts
    new ones, says why, and serves them from the stored judge calls with the old scores."""
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ASSAY, "eval", *args, "--store", "store.db", "--no-progress"], cwd=old,
                              capture_output=True, text=True, env=env)

    proc = run("caseaware", "turns.jsonl", "--judge", "scripted/cj.json", "--resume")
    assert proc.returncode == 0, proc.stderr
    assert "0 judge call(s) made" in proc.stdout and "was already finished" in proc.stdout, proc.stdout
    # a store is opened, read and closed between the CLI's runs: no connection stays open across them
    store = Store(old / "store.db", create=False)
    old_runs = {r.method: r.run_id for r in store.list_runs()}
    store.close()
    for args in (["dece", "items.jsonl", "--judge", "scripted/judge.json"], ["rougeL", "items.jsonl"]):
        proc = run(*args)  # the same command: the old version's run is not continued, a new one starts
        assert proc.returncode == 0, proc.stderr
        assert f"made by {args[0]} version 1; this is version 2" in proc.stderr, proc.stderr
        assert "0 judge call(s) made" in proc.stdout, proc.stdout
        store = Store(old / "store.db", create=False)
        new_id = next(r.run_id for r in store.list_runs() if r.method == args[0] and r.run_id != old_runs[args[0]])
        metrics = ("precision", "recall", "f_beta") if args[0] == "dece" else ("rougeL",)
        before = [{m: r.get(m) for m in ("id", *metrics)} for r in export_rows(store, old_runs[args[0]])]
        after = [{m: r.get(m) for m in ("id", *metrics)} for r in export_rows(store, new_id)]
        store.close()
        assert after == before
    store = Store(old / "store.db", create=False)
    assert len(store.list_runs()) == 5  # case-aware resumed; two new runs


TODAY = Path(__file__).parents[2] / "data" / "store-m005"


@pytest.fixture
def annotated(tmp_path: Path) -> Path:
    """A store written before results had an edit history (migrations m001–m005), with reviewers'
    annotations."""
    return restore(TODAY, tmp_path / "m005")


def test_annotations_of_an_older_store_become_the_results_edit_history(annotated: Path) -> None:
    store = Store(annotated / "store.db", create=False)
    assert [r[0] for r in store.db.execute("SELECT name FROM migrations")] == [n for n, _ in MIGRATIONS]
    run_id = store.resolve_run(None)
    expected = [json.loads(line) for line in (annotated / f"export-{run_id}.jsonl").read_text().splitlines()]
    assert as_then(export_rows(store, run_id, annotations=True)) == expected  # the human layer reads the same
    s1 = store.result(run_id, "q1::s1")
    # from what to what, in order: alice's correction of her own override starts from her first edit
    assert [(e.author, e.path, e.previous, e.value) for e in s1.history] == [
        ("alice", "criteria[1].satisfied", False, True), ("alice", "criteria[1].satisfied", True, False),
        ("bob", "recall", 0.5, 1.0), ("ann", "human.grade_correctness", None, 4),
        ("ann", "human.comment", None, "clear answer")]
    assert s1.resolve("criteria[1].satisfied") is False and s1.current("criteria[1].satisfied") is False
    assert s1.scores["recall"] == 0.5 and s1.current_scores["recall"] == 1.0  # the judge's kept; the edit current
    recall = s1.score("recall")
    assert (recall.value, recall.original, recall.explanation, recall.edited) == (1.0, 0.5, "criterion 2 is met", True)
    assert [e.reason for e in store.result(run_id, "q1::s2").history] == ["the figure is wrong"]
    # still append-only after the migration
    import sqlite3
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("UPDATE annotations SET previous = NULL")
    # a new edit after the migration records what it replaces
    edit = store.annotate(run_id, "q1::s2", "elements[0].supported", True, author="ann", reason="it is right")
    assert (edit.previous, edit.value) == (False, True)
    assert store.result(run_id, "q1::s2").current("elements[0].supported") is True
    store.close()


@pytest.mark.skipif(ASSAY is None, reason="the assay console script is not installed")
def test_an_annotated_run_of_an_older_store_resumes_with_no_judge_call(annotated: Path) -> None:
    assert ASSAY is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    before = Store(annotated / "store.db", create=False)
    run_id = before.resolve_run(None)
    before.close()
    command = [ASSAY, "eval", "dece", "items.jsonl", "--judge", "scripted/judge.json", "--store", "store.db",
               "--no-progress", "--resume"]
    proc = subprocess.run(command, cwd=annotated, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "0 judge call(s) made" in proc.stdout and "was already finished" in proc.stdout, proc.stdout
    assert run_id in proc.stdout
    store = Store(annotated / "store.db", create=False)
    assert [r.run_id for r in store.list_runs()] == [run_id]
