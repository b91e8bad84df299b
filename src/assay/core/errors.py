"""Exceptions raised by assay.

The tree::

    AssayError
    ├── InputError            bad user input: names the file, line and field
    ├── ConfigError           a bad option, judge name, weight profile, ...
    ├── ModelError            the embedded model cannot be found, assembled or verified
    ├── StoreError            the run store refuses an operation (e.g. run exists, no --resume)
    ├── BudgetExhausted       the token budget of a run is spent; resume with a larger one
    ├── JudgeUnreachable      no judge call of a run succeeded: every one failed after its retries
    │   └── JudgeCrashed      the embedded judge's process died (a signal from native code)
    └── BackendError          a judge call failed
        ├── TransientBackendError   worth retrying (timeouts, 5xx, connection resets)
        │   └── RateLimited         HTTP 429; carries ``retry_after`` seconds when the server sent it
        └── ScriptExhausted         the scripted test backend ran out of canned completions

A judge output that cannot be parsed is *not* an exception: it becomes
:class:`assay.core.types.Unscored` with its reason and raw text.
"""

from __future__ import annotations


class AssayError(Exception):
    """Base class of every error assay raises on purpose."""


class InputError(AssayError):
    """Bad input data. The message names where: file, line (or item id) and field."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.source = source
        self.line = line
        self.field = field


class ConfigError(AssayError):
    """A bad option or configuration value."""


class ModelError(AssayError):
    """The embedded judge model is missing, incomplete or fails verification."""


class StoreError(AssayError):
    """The run store refused an operation."""


class BudgetExhausted(AssayError):
    """The run's token budget is spent. Finished items are kept; resume with a larger budget."""

    run_id: str | None = None
    """The run that stopped (set by the engine)."""


class JudgeUnreachable(AssayError):
    """Judge calls fail and none has succeeded: the judge is down, the URL or key is wrong, or
    every call times out. The run stops (status ``failed: judge unreachable``); items whose calls
    failed are evaluated again by ``--resume``."""

    run_id: str | None = None


class JudgeCrashed(JudgeUnreachable):
    """The process running the embedded judge died (e.g. SIGILL from an instruction the CPU
    refuses). The run stops like an unreachable judge (exit 4), its store intact and resumable."""


class BackendError(AssayError):
    """A judge call failed."""


class TransientBackendError(BackendError):
    """A failure worth retrying: timeout, server error, dropped connection."""


class RateLimited(TransientBackendError):
    """HTTP 429. ``retry_after`` is the server's Retry-After in seconds, when it sent one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ScriptExhausted(BackendError):
    """The scripted backend has no canned completion left for a call."""
