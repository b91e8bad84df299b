from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from assay.core.errors import StoreError
from assay.core.types import Completion, Unscored, Usage
from assay.methods import ItemResult
from assay.store import MIGRATIONS, Store


def test_migrations_run_once_and_reopen_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    store = Store(path)
    names = [r[0] for r in store.db.execute("SELECT name FROM migrations")]
    assert names == [name for name, _ in MIGRATIONS]
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cache_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    completion = Completion(text="hi", usage=Usage(prompt_tokens=3, completion_tokens=1), latency_s=0.5)
    store.put_call("c1:abc", "scripted/x", '{"messages":[]}', completion)
    again = Store(tmp_path / "s.db").cached_call("c1:abc")
    assert again is not None and again.text == "hi" and again.cached and again.usage.prompt_tokens == 3
    assert store.call_stats(["c1:abc"])["prompt_tokens"] == 3


def test_create_run_writes_all_items_or_none(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.create_run("r1", "dece", {"m": 1}, [("a", {"id": "a"})])
    with pytest.raises(sqlite3.IntegrityError):
        store.create_run("r1", "dece", {"m": 1}, [("b", {"id": "b"})])  # duplicate run id
    assert store.items("r1") == [{"id": "a"}]
    assert store.resolve_run(None) == "r1" and store.resolve_run("r") == "r1"
    with pytest.raises(StoreError):
        store.resolve_run("zzz")


def test_annotations_address_one_verdict_and_are_append_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.create_run("r1", "dece", {}, [("q1::s1", {"id": "q1", "system": "s1", "query": "q", "response": "r"})])
    details = {"elements": [{"n": 1, "element": "three years", "supported": True},
                            {"n": 2, "element": "six years", "supported": True}]}
    store.put_result("r1", 0, "q1::s1", ItemResult(scores={"precision": 1.0, "recall": 0.5}, details=details))
    first = store.annotate("r1", "q1::s1", "elements[1].supported", False, author="alice",
                           reason="the statute says three years")
    store.annotate("r1", "q1::s1", "recall", 1.0, author="bob", reason="criterion 2 is met")
    notes = store.annotations("r1")
    assert [(n.author, n.path, n.value) for n in notes] == [("alice", "elements[1].supported", False),
                                                            ("bob", "recall", 1.0)]
    assert notes[0].id == first.id and notes[0].unit_key == "q1::s1" and notes[0].created_at > 0
    assert store.result("r1", "q1::s1").resolve(notes[0].path) is True  # the judge's verdict, kept as it was
    for bad_path in ("elements[5].supported", "elements[0].colour", "nonsense"):
        with pytest.raises(StoreError, match="no verdict at"):
            store.annotate("r1", "q1::s1", bad_path, 1, author="alice")
    for bad_path in ("elements[0]..x", "recall\n", " recall", "human.comment\n", ""):
        with pytest.raises(StoreError, match="is not an address like"):
            store.annotate("r1", "q1::s1", bad_path, 1, author="alice", reason="r")
    # a score override says why; a blank reason is refused, nothing stored
    with pytest.raises(StoreError, match="overriding the score recall needs a reason"):
        store.annotate("r1", "q1::s1", "recall", 0.5, author="bob", reason="  ")
    assert len(store.annotations("r1")) == 2
    with pytest.raises(StoreError, match="no result for unit"):
        store.annotate("r1", "q9", "recall", 1, author="alice")
    with pytest.raises(StoreError, match="needs an author"):
        store.annotate("r1", "q1::s1", "recall", 1, author=" ")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("UPDATE annotations SET value = '0'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("DELETE FROM annotations")


def test_a_result_keeps_the_judges_verdicts_and_a_history_of_edits() -> None:
    """Every reader gets one shape: the judge's scores and Unscored reasons, the method's details
    apart from the engine's, and the reviewers' edits (who, when, why, from what to what)."""
    store = Store()
    store.create_run("r1", "dece", {}, [("q1", {"id": "q1", "query": "q", "response": "r"})])
    details = {"criteria": [{"n": 1, "satisfied": False, "reasoning": "no"}], "grader_directed_text": [{"text": "x"}]}
    store.put_result("r1", 0, "q1", ItemResult(scores={"recall": 0.0, "precision": None}, details=details,
                                               unscored=[Unscored(reason="no JSON", raw_output="oops",
                                                                  metric="precision")]))
    result = store.result("r1", "q1")
    assert set(result.method) == {"criteria"} and set(result.engine) == {"grader_directed_text"}
    assert result.details == details and result.history == []
    precision = result.score("precision")
    assert precision.value is None and precision.unscored is not None
    assert (precision.unscored.reason, precision.unscored.raw_output) == ("no JSON", "oops")
    assert precision.evidence == {"criteria": details["criteria"]}
    store.annotate("r1", "q1", "criteria[0].satisfied", True, author="ann", reason="it is met")
    store.annotate("r1", "q1", "recall", 1.0, author="ann", reason="criterion met")
    store.annotate("r1", "q1", "recall", 0.5, author="bob", reason="half of it")
    store.annotate("r1", "q1", "human.comment", "first", author="ann")
    store.annotate("r1", "q1", "human.comment", "second", author="bob")
    result = store.result("r1", "q1")
    assert [(e.author, e.path, e.previous, e.value) for e in result.history] == [
        ("ann", "criteria[0].satisfied", False, True), ("ann", "recall", 0.0, 1.0), ("bob", "recall", 1.0, 0.5),
        ("ann", "human.comment", None, "first"), ("bob", "human.comment", "first", "second")]
    assert result.scores == {"recall": 0.0, "precision": None}  # the original is kept
    assert result.current_scores == {"recall": 0.5, "precision": None}  # the current value is the last edit
    recall = result.score("recall")
    assert (recall.value, recall.original, recall.explanation, len(recall.edits)) == (0.5, 0.0, "half of it", 2)
    assert result.current("human.comment") == "second"
    assert [e.id for e in result.history] == [a.id for a in store.annotations("r1")]


def test_readers_in_other_threads_while_a_run_writes(tmp_path: Path) -> None:
    import threading
    store = Store(tmp_path / "s.db")
    store.create_run("r1", "dece", {}, [(f"q{i}", {"id": f"q{i}", "query": "q", "response": "r"}) for i in range(300)])
    errors: list[BaseException] = []
    seen: list[list[int]] = [[], [], []]

    def read(counts: list[int]) -> None:
        try:  # each reader has its own connection; each sees a growing, consistent snapshot
            while not counts or counts[-1] < 300:
                counts.append(len(store.results("r1")))
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    readers = [threading.Thread(target=read, args=(counts,)) for counts in seen]
    for thread in readers:
        thread.start()
    for i in range(300):
        store.put_result("r1", i, f"q{i}", ItemResult(scores={"recall": 1.0}))
    for thread in readers:
        thread.join(timeout=30)
    assert not errors
    for counts in seen:
        assert counts == sorted(counts) and counts[-1] == 300


def _open(path: str) -> str:
    Store(path).close()
    return "ok"


def test_many_processes_creating_one_store_at_once(tmp_path: Path) -> None:
    import multiprocessing
    path = str(tmp_path / "new.db")
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        assert pool.map(_open, [path] * 12) == ["ok"] * 12
    names = [r[0] for r in Store(path).db.execute("SELECT name FROM migrations")]
    assert names == [name for name, _ in MIGRATIONS]


def test_a_file_that_is_not_a_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    text = tmp_path / "data.jsonl"
    text.write_text('{"id": 1}\n')
    with pytest.raises(StoreError, match="not an SQLite database"):
        Store(text)
    assert text.read_text() == '{"id": 1}\n'
    foreign = tmp_path / "app.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE users (name TEXT)")
    db.commit()
    db.close()
    before = foreign.read_bytes()
    with pytest.raises(StoreError, match="not an assay run store"):
        Store(foreign)
    assert foreign.read_bytes() == before
    with pytest.raises(StoreError, match="no run store at"):
        Store(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_run_lock_names_the_holder_and_a_dead_holder_is_taken_over(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess

    from assay.store import RunLocked
    store = Store(tmp_path / "s.db")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        store.db.execute("INSERT INTO run_locks VALUES ('r1', ?, ?, 0)", (sleeper.pid, socket.gethostname()))
        with pytest.raises(RunLocked, match=f"being written by process {sleeper.pid}"):
            store.acquire_run("r1")
    finally:
        sleeper.kill()
        sleeper.wait()
    store.acquire_run("r1")  # the holder is dead: taken over
    assert store.db.execute("SELECT pid FROM run_locks").fetchone()[0] == os.getpid()
    store.release_run("r1")
    assert store.db.execute("SELECT COUNT(*) FROM run_locks").fetchone()[0] == 0


def test_an_override_of_an_unscored_metric_is_still_a_score(tmp_path: Path) -> None:
    """A metric the judge left Unscored (None) took any value as a reviewer's override: a blank, text, a
    boolean, an object, 99. It takes a finite number within the metric's range, with a reason."""
    from assay.core.protocols import run_presentation

    store = Store(tmp_path / "s.db")
    store.create_run("r1", "dece", {}, [("q1", {"id": "q1", "query": "q", "response": "r"})])
    store.put_result("r1", 0, "q1", ItemResult(scores={"precision": None, "recall": 0.5},
                                               unscored=[Unscored(metric="precision", reason="no elements")]))
    rules = run_presentation("dece")
    for bad in ("", "abc", True, {"a": 1}, [0.5], 99, -5):
        with pytest.raises(StoreError, match="precision"):
            store.annotate("r1", "q1", "precision", bad, author="alice", reason="checked", rules=rules)
    assert store.annotations("r1") == []
    store.annotate("r1", "q1", "precision", 0.75, author="alice", reason="three of four hold", rules=rules)
    store.annotate("r1", "q1", "precision", None, author="alice", reason="withdrawn", rules=rules)
    assert [n.value for n in store.annotations("r1")] == [0.75, None]


def test_annotations_that_crashed_the_review_ui_are_refused_in_one_line(tmp_path: Path) -> None:
    """An integer of 400 digits (OverflowError) and a lone surrogate (UnicodeEncodeError) were 500s in the UI;
    withdrawing a score (None) took no reason, where overriding it needs one."""
    store = Store(tmp_path / "s.db")
    store.create_run("r1", "dece", {}, [("q1", {"id": "q1", "query": "q", "response": "r"})])
    store.put_result("r1", 0, "q1", ItemResult(scores={"precision": 0.5, "recall": None},
                                               unscored=[Unscored(metric="recall", reason="no criteria")]))
    for path in ("precision", "recall"):
        with pytest.raises(StoreError, match=r"is a (number|score)"):
            store.annotate("r1", "q1", path, 10**400, author="alice", reason="checked")
    with pytest.raises(StoreError, match="not Unicode"):
        store.annotate("r1", "q1", "human.comment", "bad \ud800 text", author="alice")
    for field in ("author", "reason"):
        with pytest.raises(StoreError, match=f"the {field} holds text that is not Unicode"):
            store.annotate("r1", "q1", "precision", 0.4, **{"author": "alice", "reason": "ok", field: "x\ud800"})
    with pytest.raises(StoreError, match="withdrawing the score precision needs a reason"):
        store.annotate("r1", "q1", "precision", None, author="alice", reason=" ")
    assert store.annotations("r1") == []


def test_a_case_aware_band_override_is_one_of_the_four_bands(tmp_path: Path) -> None:
    """A reviewer's band "weird" was stored, and the report showed 'hallucination_band: none → weird'."""
    from assay.core.protocols import run_presentation

    store = Store(tmp_path / "s.db")
    store.create_run("r1", "caseaware", {}, [("t1", {"id": "t1", "query": "q", "response": "r"})])
    store.put_result("r1", 0, "t1", ItemResult(scores={"hallucination_score": 0.9, "s_final": 0.8},
                                               details={"hallucination_band": "none"}))
    rules = run_presentation("caseaware")
    with pytest.raises(StoreError, match="takes one of severe, moderate, minor, none, got 'weird'"):
        store.annotate("r1", "t1", "hallucination_band", "weird", author="ann", reason="x", rules=rules)
    store.annotate("r1", "t1", "hallucination_band", "minor", author="ann", reason="a wrong figure", rules=rules)
    assert [a.value for a in store.annotations("r1")] == ["minor"]
