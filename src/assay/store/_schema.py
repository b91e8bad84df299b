"""The store's schema: a named list of migrations, each run once, in definition order."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(func: Migration) -> Migration:
    """Register a schema migration; they run once each, in definition order."""
    MIGRATIONS.append((func.__name__, func))
    return func


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    _run_script(db, """
        CREATE TABLE judge_calls (
            key TEXT PRIMARY KEY,
            backend TEXT NOT NULL,
            request TEXT NOT NULL,
            completion TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            latency_s REAL NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            method TEXT NOT NULL,
            manifest TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE TABLE items (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            idx INTEGER NOT NULL,
            item_key TEXT NOT NULL,
            payload TEXT NOT NULL,
            PRIMARY KEY (run_id, idx)
        );
        CREATE TABLE results (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            idx INTEGER NOT NULL,
            item_key TEXT NOT NULL,
            status TEXT NOT NULL,
            scores TEXT NOT NULL,
            unscored TEXT NOT NULL,
            details TEXT NOT NULL,
            call_keys TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, idx)
        );
        CREATE TABLE annotations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            author TEXT NOT NULL,
            field TEXT NOT NULL,
            value TEXT NOT NULL,
            reason TEXT NOT NULL,
            created_at REAL NOT NULL
        );
    """)


def _run_script(db: sqlite3.Connection, script: str) -> None:
    # Not executescript(): it commits first, which would break the migration's transaction.
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


@migration
def m002_run_locks(db: sqlite3.Connection) -> None:
    _run_script(db, """
        CREATE TABLE run_locks (
            run_id TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            acquired_at REAL NOT NULL
        );
    """)


@migration
def m003_units(db: sqlite3.Connection) -> None:
    # A run's "items" rows are its units: an item (payload: the item, as before), a pair or a
    # group (payload: {"items": [...]}); round: the scheduling round that proposed the unit.
    db.execute("ALTER TABLE items ADD COLUMN kind TEXT NOT NULL DEFAULT 'item'")
    db.execute("ALTER TABLE items ADD COLUMN round INTEGER NOT NULL DEFAULT 0")


@migration
def m004_stages(db: sqlite3.Connection) -> None:
    _run_script(db, """
        CREATE TABLE stages (
            stage_id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            manifest TEXT NOT NULL,
            status TEXT NOT NULL,
            output_sha256 TEXT,
            created_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE TABLE stage_parts (
            stage_id TEXT NOT NULL REFERENCES stages(stage_id),
            part_key TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (stage_id, part_key)
        );
    """)


@migration
def m005_addressed_annotations(db: sqlite3.Connection) -> None:
    # An annotation addresses one verdict: (run, unit key, path inside the unit's result).
    # Rows written before keep their index and free-text field as unit and path.
    db.execute("ALTER TABLE annotations ADD COLUMN unit_key TEXT")
    db.execute("ALTER TABLE annotations ADD COLUMN path TEXT")
    db.execute("UPDATE annotations SET path = field, unit_key = (SELECT item_key FROM items i "
               "WHERE i.run_id = annotations.run_id AND i.idx = annotations.idx)")
    db.execute("CREATE INDEX annotations_unit ON annotations (run_id, unit_key)")
    for action in ("UPDATE", "DELETE"):
        db.execute(f"CREATE TRIGGER annotations_append_only_{action.lower()} BEFORE {action} ON annotations "
                   "BEGIN SELECT RAISE(ABORT, 'annotations are append-only'); END")


@migration
def m006_edit_history(db: sqlite3.Connection) -> None:
    # Annotations become the edit history of their results: each records the value it replaced
    # (``previous``). Rows written before get it from the history: the last earlier edit of the
    # same address, else the judge's value in the stored result (None for a first ``human.``
    # addition, or when the unit has no stored result, e.g. after ``--fresh``).
    from assay.core.records import resolve

    db.execute("ALTER TABLE annotations ADD COLUMN previous TEXT")
    db.execute("DROP TRIGGER IF EXISTS annotations_append_only_update")
    results = {(r[0], r[1]): (json.loads(r[2]), json.loads(r[3]))
               for r in db.execute("SELECT run_id, item_key, scores, details FROM results")}
    last: dict[tuple[str, str, str], str] = {}
    for row_id, run_id, unit_key, path, value in db.execute(
            "SELECT id, run_id, unit_key, path, value FROM annotations ORDER BY id").fetchall():
        address = (run_id, unit_key, path)
        previous = last.get(address)
        if previous is None and not str(path).startswith("human.") and (run_id, unit_key) in results:
            try:
                previous = json.dumps(resolve(*results[(run_id, unit_key)], path), ensure_ascii=False, sort_keys=True)
            except (KeyError, IndexError, TypeError, ValueError):
                previous = None
        db.execute("UPDATE annotations SET previous = ? WHERE id = ?", (previous, row_id))
        last[address] = value
    db.execute("CREATE TRIGGER annotations_append_only_update BEFORE UPDATE ON annotations "
               "BEGIN SELECT RAISE(ABORT, 'annotations are append-only'); END")
