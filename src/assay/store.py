"""The SQLite run store: runs, items, judge calls (the content-addressed cache), results with
their evidence, and append-only human annotations (SPEC §2.4).

Every judge call and every finished item is committed as soon as it exists, in WAL mode, so a
process killed at any moment loses nothing it had written and a resumed run repeats no call.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assay._files import finite
from assay.errors import StoreError
from assay.records import PATH, Annotation, CallRecord, ResultRecord, RunRecord, StageRecord
from assay.types import CALL_FAILED, Completion, Unit

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


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(16) == b"SQLite format 3\x00"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLocked(StoreError):
    """Another live process is writing the run."""


OPENED_STORES: list[str] = []
"""Paths of the stores this process opened (an error about a damaged file can name it)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class Store:
    """One SQLite file (or ``:memory:``) holding any number of runs and the shared call cache."""

    def __init__(self, path: str | Path = ":memory:", *, create: bool = True) -> None:
        """Open (and with ``create``, make) a store. A file that is not an assay store — not
        SQLite, or an SQLite database with tables of its own — is refused with a StoreError and
        left untouched; ``create=False`` also refuses a path that does not exist."""
        self.path = str(path)
        if self.path != ":memory:":
            OPENED_STORES.append(self.path)
            file = Path(self.path)
            if file.is_dir():
                raise StoreError(f"{file}: is a directory, not a run store")
            if not file.exists():
                if not create:
                    raise StoreError(f"no run store at {file}")
            elif file.stat().st_size > 0 and not _is_sqlite(file):
                raise StoreError(f"{file}: not an assay run store (not an SQLite database)")
            file.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._shared: sqlite3.Connection | None = None
        try:
            if self.path == ":memory:":  # one connection: each new one would be another database
                self._shared = self._connect()
            db = self.db
            self._check_ours(db)
            self._use_wal(db)
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot be used as a run store ({exc})") from exc

    @staticmethod
    def _use_wal(db: sqlite3.Connection, wait_s: float = 30.0) -> None:
        """Switch to WAL. The switch needs an exclusive lock, and SQLite may answer "database is
        locked" at once instead of calling the busy handler when many processes open a new store
        together (seen on a loaded 2-core machine); so wait and try again, for up to ``wait_s``."""
        deadline = time.monotonic() + wait_s
        delay = 0.005
        while True:
            try:
                if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.row_factory = sqlite3.Row
        # busy_timeout first: a second process opening a new store waits for the first's
        # migration instead of failing on a locked database.
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection (one per thread, so readers — a web UI, an export — run
        while a run writes; SQLite's WAL gives each reader a consistent snapshot)."""
        if self._shared is not None:
            return self._shared
        connection: sqlite3.Connection | None = getattr(self._local, "db", None)
        if connection is None:
            connection = self._connect()
            self._local.db = connection
        return connection

    def _check_ours(self, db: sqlite3.Connection) -> None:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "migrations" not in tables:
            db.close()
            raise StoreError(f"{self.path}: an SQLite database, but not an assay run store (it has tables "
                             f"{', '.join(sorted(tables)[:5])}); assay leaves it alone")

    def _migrate(self) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        done = {row[0] for row in self.db.execute("SELECT name FROM migrations")}
        if all(name in done for name, _ in MIGRATIONS):
            return
        with self.transaction():
            # Read again under the write lock: two processes creating one store at once must
            # not both run a migration (the second found "table already exists").
            done = {row[0] for row in self.db.execute("SELECT name FROM migrations")}
            for name, func in MIGRATIONS:
                if name not in done:
                    func(self.db)
                    self.db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's connection (the next use opens another)."""
        if self._shared is not None:
            self._shared.close()
            return
        connection = getattr(self._local, "db", None)
        if connection is not None:
            connection.close()
            self._local.db = None

    # --- judge-call cache -------------------------------------------------------------------
    def cached_call(self, key: str) -> Completion | None:
        row = self.db.execute("SELECT completion FROM judge_calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        completion = Completion.model_validate_json(row[0])
        return completion.model_copy(update={"cached": True})

    def put_call(self, key: str, backend: str, request: str, completion: Completion) -> None:
        """Store one judge call; ``request`` is its canonical JSON (what the key hashes)."""
        with self.transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO judge_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, backend, request, completion.model_dump_json(),
                 completion.usage.prompt_tokens, completion.usage.completion_tokens,
                 completion.latency_s, time.time()))

    def call_record(self, key: str) -> CallRecord | None:
        row = self.db.execute("SELECT * FROM judge_calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return CallRecord(key=row["key"], backend=row["backend"], request=json.loads(row["request"]),
                          completion=Completion.model_validate_json(row["completion"]), created_at=row["created_at"])

    # --- runs -------------------------------------------------------------------------------
    @staticmethod
    def _run(row: sqlite3.Row) -> RunRecord:
        return RunRecord.model_construct(run_id=row["run_id"], method=row["method"], status=row["status"],
                                         manifest=json.loads(row["manifest"]), created_at=row["created_at"],
                                         finished_at=row["finished_at"])

    def get_run(self, run_id: str) -> RunRecord | None:
        row = self.db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else self._run(row)

    def run(self, run_id: str) -> RunRecord:
        """The run, or a StoreError naming the store."""
        found = self.get_run(run_id)
        if found is None:
            raise StoreError(f"no run {run_id} in {self.path}")
        return found

    def list_runs(self) -> list[RunRecord]:
        return [self._run(row) for row in self.db.execute("SELECT * FROM runs ORDER BY created_at, rowid")]

    def resolve_run(self, run_id: str | None) -> str:
        """The given run id, or the only/latest run of the store."""
        runs = self.list_runs()
        if not runs:
            raise StoreError(f"{self.path} holds no run")
        if run_id is None:
            return runs[-1].run_id
        matches = [r for r in runs if r.run_id.startswith(run_id)]
        if len(matches) != 1:
            known = ", ".join(r.run_id for r in runs)
            raise StoreError(f"no single run matches {run_id!r} in {self.path} (runs: {known})")
        return matches[0].run_id

    def create_run(self, run_id: str, method: str, manifest: dict[str, Any],
                   items: Sequence[tuple[str, dict[str, Any]] | Unit]) -> None:
        """Write the run and its first units in one transaction: all of it or nothing. ``items``
        are units, or (key, item payload) pairs."""
        rows = [(u.key, u.payload(), u.kind, u.round) if isinstance(u, Unit) else (u[0], u[1], "item", 0)
                for u in items]
        with self.transaction():
            self.db.execute("INSERT INTO runs VALUES (?, ?, ?, 'running', ?, NULL)",
                            (run_id, method, _dumps(manifest), time.time()))
            self._insert_rows(run_id, 0, rows)

    def _insert_rows(self, run_id: str, start: int, rows: Sequence[tuple[str, dict[str, Any], str, int]]) -> None:
        self.db.executemany("INSERT INTO items (run_id, idx, item_key, payload, kind, round) VALUES (?, ?, ?, ?, ?, ?)",
                            [(run_id, start + i, key, _dumps(payload), kind, round_)
                             for i, (key, payload, kind, round_) in enumerate(rows)])

    def add_units(self, run_id: str, units: list[Unit]) -> None:
        """Append units a scheduler proposed (one transaction); a key already in the run is an error."""
        with self.transaction():
            known = {r[0] for r in self.db.execute("SELECT item_key FROM items WHERE run_id = ?", (run_id,))}
            clash = [u.key for u in units if u.key in known]
            if clash or len({u.key for u in units}) != len(units):
                raise StoreError(f"run {run_id}: a scheduler proposed units already in the run: {clash[:3]}")
            start = self.db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM items WHERE run_id = ?",
                                    (run_id,)).fetchone()[0]
            self._insert_rows(run_id, int(start), [(u.key, u.payload(), u.kind, u.round) for u in units])

    def units(self, run_id: str) -> list[Unit]:
        rows = self.db.execute("SELECT item_key, kind, round, payload FROM items WHERE run_id = ? ORDER BY idx",
                               (run_id,))
        return [Unit.from_stored(r[1], r[0], r[2], json.loads(r[3])) for r in rows]

    # --- run locks: one writer per run --------------------------------------------------------
    def acquire_run(self, run_id: str, *, wait_s: float | None = None) -> None:
        """Take the run's write lock, or raise :class:`RunLocked` naming the process that holds
        it. A lock left by a dead process on this host is taken over. ``wait_s``: wait up to
        that long (polling) for the other writer to finish instead of failing at once."""
        deadline = time.monotonic() + (wait_s or 0.0)
        host, pid = socket.gethostname(), os.getpid()
        while True:
            with self.transaction():
                row = self.db.execute("SELECT pid, host, acquired_at FROM run_locks WHERE run_id = ?",
                                      (run_id,)).fetchone()
                held = row is not None and not (row["host"] == host and
                                                (row["pid"] == pid or not _pid_alive(row["pid"])))
                if not held:
                    self.db.execute("INSERT OR REPLACE INTO run_locks VALUES (?, ?, ?, ?)",
                                    (run_id, pid, host, time.time()))
                    return
            if time.monotonic() >= deadline:
                since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["acquired_at"]))
                raise RunLocked(f"run {run_id} in {self.path} is being written by process {row['pid']} on "
                                f"{row['host']} (since {since}); wait for it to finish, or pass --wait")
            time.sleep(0.5)

    def release_run(self, run_id: str) -> None:
        """Give up the run's write lock (only if this process holds it)."""
        with self.transaction():
            self.db.execute("DELETE FROM run_locks WHERE run_id = ? AND pid = ? AND host = ?",
                            (run_id, os.getpid(), socket.gethostname()))

    def drop_run(self, run_id: str) -> None:
        """Delete a run, its units and its results in one transaction (``--fresh``). The judge-call
        cache and the reviewers' annotations (append-only) are kept: a new run of the same work
        gets the same id, so the annotations stay attached to its units."""
        with self.transaction():
            self.db.execute("DELETE FROM results WHERE run_id = ?", (run_id,))
            self.db.execute("DELETE FROM items WHERE run_id = ?", (run_id,))
            self.db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

    def set_status(self, run_id: str, status: str) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                            (status, time.time() if status == "finished" else None, run_id))

    def items(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT payload FROM items WHERE run_id = ? ORDER BY idx", (run_id,))
        return [json.loads(r[0]) for r in rows]

    def done_indices(self, run_id: str, *, retry_failed_calls: bool = False) -> set[int]:
        """Indices of items with a stored result. ``retry_failed_calls`` leaves out items one of
        whose judge calls failed (judge unreachable, timeouts): a resumed run tries them again,
        where an unparseable output stays as it was (asking again would give the same)."""
        rows = self.db.execute("SELECT idx, unscored FROM results WHERE run_id = ?", (run_id,))
        if not retry_failed_calls:
            return {r[0] for r in rows}
        return {r[0] for r in rows
                if not any(CALL_FAILED in str(u.get("reason", "")) for u in json.loads(r[1]))}

    def put_result(self, run_id: str, idx: int, unit_key: str, result: Any) -> None:
        """Store one unit's result: a method's ``ItemResult`` (status, scores, unscored,
        details, call_keys), the one shape every reader gets back as a ``ResultRecord``."""
        unscored = [u if isinstance(u, dict) else u.model_dump() for u in result.unscored]
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (run_id, idx, unit_key, result.status, _dumps(result.scores), _dumps(unscored),
                             _dumps(result.details), _dumps(result.call_keys), time.time()))

    def results(self, run_id: str, *, unit_key: str | None = None) -> list[ResultRecord]:
        """Every stored result of the run with its unit, in unit order (only ``unit_key``'s, if
        given)."""
        query = ("SELECT r.*, i.payload, i.kind, i.round FROM results r "
                 "JOIN items i ON i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ?")
        args: tuple[Any, ...] = (run_id,)
        if unit_key is not None:
            query += " AND r.item_key = ?"
            args = (run_id, unit_key)
        rows = self.db.execute(query + " ORDER BY r.idx", args)
        out = []
        for r in rows:
            payload = json.loads(r["payload"])
            kind = r["kind"]
            out.append(ResultRecord.model_construct(
                run_id=run_id, idx=r["idx"], key=r["item_key"], status=r["status"], scores=json.loads(r["scores"]),
                unscored=json.loads(r["unscored"]), details=json.loads(r["details"]),
                call_keys=json.loads(r["call_keys"]), created_at=r["created_at"], kind=kind, round=r["round"],
                items=[payload] if kind == "item" else payload["items"]))
        return out

    def result(self, run_id: str, unit_key: str) -> ResultRecord:
        """One unit's result, by the unit's key; StoreError when there is none."""
        found = self.results(run_id, unit_key=unit_key)
        if found:
            return found[0]
        raise StoreError(f"run {run_id} in {self.path} has no result for unit {unit_key!r}")

    def call_stats(self, keys: list[str]) -> dict[str, float]:
        """Token and latency totals of the given judge calls."""
        if not keys:
            return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0}
        marks = ",".join("?" * len(keys))
        row = self.db.execute(
            f"SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(latency_s), "
            f"SUM(COALESCE(json_extract(completion, '$.usage.cached_prompt_tokens'), 0)) "
            f"FROM judge_calls WHERE key IN ({marks})", keys).fetchone()
        stats = {"calls": row[0], "prompt_tokens": row[1] or 0, "completion_tokens": row[2] or 0,
                 "latency_s": row[3] or 0.0}
        if row[4]:  # backends that report it (llama.cpp): the share of prompt tokens not recomputed
            stats["cached_prompt_tokens"] = row[4]
            stats["prefix_reuse"] = row[4] / stats["prompt_tokens"] if stats["prompt_tokens"] else None
        return stats

    # --- stages (corpus-level steps, see assay.stages) ------------------------------------------
    def begin_stage(self, stage_id: str, name: str, manifest: dict[str, Any]) -> None:
        with self.transaction():
            self.db.execute("INSERT OR IGNORE INTO stages VALUES (?, ?, ?, 'running', NULL, ?, NULL)",
                            (stage_id, name, _dumps(manifest), time.time()))
            self.db.execute("UPDATE stages SET status = 'running' WHERE stage_id = ?", (stage_id,))

    def put_stage_part(self, stage_id: str, key: str, value: Any) -> None:
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO stage_parts VALUES (?, ?, ?, ?)",
                            (stage_id, key, _dumps(value), time.time()))

    def stage_parts(self, stage_id: str) -> dict[str, Any]:
        rows = self.db.execute("SELECT part_key, payload FROM stage_parts WHERE stage_id = ? ORDER BY part_key",
                               (stage_id,))
        return {r[0]: json.loads(r[1]) for r in rows}

    def end_stage(self, stage_id: str, status: str, output_sha256: str | None) -> None:
        with self.transaction():
            self.db.execute("UPDATE stages SET status = ?, output_sha256 = ?, finished_at = ? WHERE stage_id = ?",
                            (status, output_sha256, time.time() if status == "finished" else None, stage_id))

    def stages(self) -> list[StageRecord]:
        rows = self.db.execute("SELECT * FROM stages ORDER BY created_at")
        return [StageRecord.model_construct(stage_id=r["stage_id"], name=r["name"], manifest=json.loads(r["manifest"]),
                                            status=r["status"], output_sha256=r["output_sha256"],
                                            created_at=r["created_at"], finished_at=r["finished_at"]) for r in rows]

    # --- annotations (append-only) ----------------------------------------------------------
    def annotate(self, run_id: str, unit_key: str, path: str, value: Any, *, author: str,
                 reason: str = "", rules: Any = None) -> Annotation:
        """Record a human's judgement of one verdict: ``path`` addresses it inside the unit's
        result (``recall``, ``elements[3].supported``) and must exist there — or, under
        ``human.`` (``human.grade_correctness``, ``human.missing``), is something the reviewer
        adds. Annotations are
        never changed or deleted (the table refuses it); a correction is a newer annotation."""
        if not author.strip():
            raise StoreError("an annotation needs an author")
        record = self.result(run_id, unit_key)
        # A ``human.`` address is what the reviewer adds (a grade, a missing point, a split or
        # merge, a comment); any other address must lead to a verdict of the result.
        # Every value is checked before it is stored (annotation_rules): the table is append-only.
        # ``rules`` is the run's method class (metric ranges, label sets), when the caller knows it.
        from assay import annotation_rules as checks

        try:
            checks.check_encoded(value)
            if len(reason) > 4000:
                raise checks.AnnotationRefused("reason longer than 4000 characters")
            if path.startswith("human.") and PATH.match(path):
                checks.check_human(path, value)
            else:
                try:
                    current = record.resolve(path)
                except (KeyError, IndexError, TypeError, ValueError):
                    raise StoreError(f"run {run_id}, unit {unit_key!r}: no verdict at {path!r}") from None
                checks.check_override(path, current, value, scores=record.scores, rules=rules)
        except checks.AnnotationRefused as exc:
            raise StoreError(f"run {run_id}, unit {unit_key!r}: {exc}") from None
        now = time.time()
        with self.transaction():
            cursor = self.db.execute(
                "INSERT INTO annotations (run_id, idx, author, field, value, reason, created_at, unit_key, path) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, record.idx, author, path, _dumps(value), reason, now, unit_key, path))
        return Annotation(id=int(cursor.lastrowid or 0), run_id=run_id, unit_key=unit_key, path=path, author=author,
                          value=value, reason=reason, created_at=now)

    def annotations(self, run_id: str, unit_key: str | None = None) -> list[Annotation]:
        """The run's annotations (of one unit, if given), oldest first."""
        query = "SELECT * FROM annotations WHERE run_id = ?" + (" AND unit_key = ?" if unit_key else "")
        rows = self.db.execute(query + " ORDER BY id", (run_id, unit_key) if unit_key else (run_id,))
        return [Annotation.model_construct(id=r["id"], run_id=r["run_id"], unit_key=r["unit_key"], path=r["path"],
                                           author=r["author"], value=finite(json.loads(r["value"])), reason=r["reason"],
                                           created_at=r["created_at"]) for r in rows]
