from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from assay.errors import StoreError
from assay.store import MIGRATIONS, Store
from assay.types import Completion, Usage


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


def test_annotations_are_append_only_with_provenance(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.create_run("r1", "dece", {}, [("a", {"id": "a"})])
    store.annotate("r1", 0, "alice", "recall", 0.5, "criterion 2 is met")
    store.annotate("r1", 0, "bob", "recall", 1.0, "disagree")
    notes = store.annotations("r1")
    assert [(n["author"], n["value"]) for n in notes] == [("alice", 0.5), ("bob", 1.0)]
    with pytest.raises(StoreError):
        store.annotate("r1", 0, " ", "recall", 1, "no author")


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
