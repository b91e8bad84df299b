"""The embedded judge in a child process: a crash in native code is a typed failure, not a dead CLI.

llama.cpp is native code: an instruction the CPU (or its hypervisor) refuses kills the process
that runs it with a signal, with no Python exception and no message. So the embedded judge runs
in a child process (``multiprocessing``, spawn) that owns the model; the parent sends each call
over a pipe and waits for the answer while watching the child. If the child dies, the call fails
with :class:`~assay.core.errors.JudgeCrashed` naming the signal; the engine stops the run (exit 4) with
the store intact, and ``--resume`` (or the same command again) continues it.

The child also gives a hard cancel: a cancelled call (the run's timeout, Ctrl-C, SIGTERM) first
asks the child to stop at its next token; if it has not answered within :data:`HARD_CANCEL_S`
(llama.cpp cannot interrupt the reading of a prompt), the child is killed and the next call starts
a new one.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

from assay.core.errors import AssayError, BackendError, JudgeCrashed

HARD_CANCEL_S = 1.0
"""How long a cancelled call may take to stop before its child process is killed."""

POLL_S = 0.05


def signal_text(exitcode: int | None) -> str:
    """``signal 4, illegal instruction`` for a child killed by SIGILL; ``exit status 1`` else."""
    if exitcode is None:
        return "no exit status"
    if exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            return f"signal {number}"
        described = signal.strsignal(number) or name
        return f"signal {number}, {described.lower()}"
    return f"exit status {exitcode}"


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start a spawned child without the parent's main module. Spawn runs the parent's main script
    again in the child (as ``__mp_main__``) unless its ``__main__`` names neither a file nor a module:
    a user's script that calls ``assay.evaluate`` without an ``if __name__ == "__main__":`` guard
    would start its evaluation again there, and the child died (exit status 1) before it loaded the
    model; a script read from stdin could not be found at all. The child needs nothing from it: its
    target is assay's own function and its options are plain values. ``start()`` writes what the
    child needs before it returns, so the stand-in is seen only by that."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is None:
            del sys.modules["__main__"]
        else:
            sys.modules["__main__"] = main


class CallCancelled(Exception):
    """Raised inside the worker thread to stop a generation whose call was cancelled."""


class ChildProcess:
    """One child process holding the model; started on the first call, restarted after a kill."""

    def __init__(self, name: str, target: Any, options: dict[str, Any]) -> None:
        """``target(conn, cancel, options)`` is the child's loop (a module-level function, so
        that the spawned interpreter can import it)."""
        self.name = name
        self.target = target
        self.options = options
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Any = None
        self._cancel: Any = None
        self._lock = threading.Lock()
        self.calls = 0

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        self._cancel = self._context.Event()
        process = self._context.Process(target=self.target, args=(child, self._cancel, self.options),
                                        name=f"assay-{self.name}", daemon=True)
        with _main_hidden():
            process.start()
        child.close()
        self._process, self._conn = process, parent

    def _crashed(self) -> JudgeCrashed:
        process = self._process
        process.join(timeout=1.0)
        when = "on its first call" if self.calls == 0 else f"after {self.calls} call(s)"
        self._process = self._conn = None
        return JudgeCrashed(f"the embedded judge crashed ({signal_text(process.exitcode)}) {when}; run `assay doctor`")

    def _kill(self) -> None:
        process, self._process, self._conn = self._process, None, None
        if process is not None and process.is_alive():
            process.kill()
            process.join(timeout=2.0)

    def call(self, request: tuple[Any, ...], cancel: threading.Event | None = None) -> Any:
        """Send one request and wait for its answer (blocking: run it in a worker thread)."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._start()
            self._cancel.clear()
            try:
                self._conn.send(request)
            except (BrokenPipeError, OSError):
                raise self._crashed() from None
            cancelled_at: float | None = None
            while True:
                if cancel is not None and cancel.is_set():
                    if cancelled_at is None:
                        cancelled_at = time.monotonic()
                        self._cancel.set()  # stop at the next token
                    elif time.monotonic() - cancelled_at > HARD_CANCEL_S:
                        self._kill()  # still reading its prompt: the next call starts a new child
                        raise CallCancelled("the call was cancelled")
                try:
                    ready = self._conn.poll(POLL_S)
                except (EOFError, OSError):
                    raise self._crashed() from None
                if ready:
                    try:
                        answer = self._conn.recv()
                    except (EOFError, OSError):
                        raise self._crashed() from None
                    break
                if not self._process.is_alive():
                    raise self._crashed()
            status = answer[0]
            if status == "ok":
                self.calls += request[0] != "load"
                return answer[1]
            if status == "cancelled":
                raise CallCancelled("the call was cancelled")
            raise _rebuild_error(answer[1], answer[2])

    def close(self) -> None:
        with self._lock:
            if self._process is None:
                return
            try:
                self._conn.send(("close",))
                self._process.join(timeout=2.0)
            except (BrokenPipeError, OSError):
                pass
            self._kill()


def _rebuild_error(kind: str, message: str) -> AssayError:
    """The child's exception, as the same assay error type in the parent."""
    from assay.core import errors

    cls = getattr(errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, AssayError) and cls is not errors.InputError:
        try:
            return cls(message)
        except TypeError:
            pass
    return BackendError(message)
