"""Opening a store: refusing files that are not ours, WAL, one connection per thread, migrations,
transactions."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assay.core.errors import StoreError
from assay.store._schema import MIGRATIONS


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(16) == b"SQLite format 3\x00"


OPENED_STORES: list[str] = []
"""Paths of the stores this process opened (an error about a damaged file can name it)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)



class StoreBase:
    """One SQLite file (or ``:memory:``): its connections, migrations and transactions. The rooms
    of the store (:class:`assay.store.Store`) build on it."""


    def __init__(self, path: str | Path = ":memory:", *, create: bool = True) -> None:
        """Open (and with ``create``, make) a store. A file that is not an assay store — not
        SQLite, or an SQLite database with tables of its own — is refused with a StoreError and
        left untouched; ``create=False`` also refuses a path that does not exist, or an empty file
        (opening it would have made it a store)."""
        self.path = str(path)
        if self.path != ":memory:":
            OPENED_STORES.append(self.path)
            file = Path(self.path)
            if file.is_dir():
                raise StoreError(f"{file}: is a directory, not a run store")
            if not file.exists():
                if not create:
                    raise StoreError(f"no run store at {file}")
            elif file.stat().st_size == 0 and not create:  # reading it would make it a store, and it holds none
                raise StoreError(f"{file}: an empty file, not a run store")
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
