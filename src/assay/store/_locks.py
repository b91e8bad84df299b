"""Run locks: one writer per run; a lock left by a dead process on this host is taken over."""

from __future__ import annotations

import os
import socket
import time

from assay.core.errors import StoreError
from assay.store._connection import StoreBase


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


class RunLocks(StoreBase):
    """The run locks room of the store."""

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
