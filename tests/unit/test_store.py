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
