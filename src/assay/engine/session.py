"""A judge session: the one way in for judge calls that are not a method run over items (rubric
discovery, the audit axes, repair, DeCE criteria extraction) — the ``workflow`` use of
:class:`assay.engine.Run`.

It owns the backend(s), the store and a run record, and applies the same runner policy as
``assay eval``: every call goes through :class:`assay.judge.runner.JudgeClient` (cache, retries,
timeout, budget, concurrency), the run is locked against a second writer, and its status tells
what happened — ``finished``, ``interrupted`` (Ctrl-C, SIGTERM, a crash), ``incomplete: budget
exhausted`` or ``failed: judge unreachable``. Running the same work again re-uses every cached
call, so a session killed with ``kill -9`` and started again makes no call twice; its finished
steps (:meth:`Run.step`) and units (:meth:`Run.put_units`) are committed as they finish, so they
are not done again at all::

    async with JudgeSession("rubric-audit", "llamacpp/default", store="a.db", manifest={...}) as session:
        structure = await session.step("structure", lambda: auditor.structure(rubric, session.client))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.engine.run import Run, run_status, unreachable
from assay.judge.backends import JudgeBackend
from assay.judge.runner import RunnerConfig
from assay.store import Store

__all__ = ["JudgeSession", "run_status", "unreachable"]


class JudgeSession(Run):
    """See the module docstring. ``kind`` names the work (``rubric-audit``, ...); ``manifest`` says
    what the session does (its inputs and options); with the judges' identities it makes the run
    id, so the same work finds its run."""

    def __init__(self, kind: str, judge: str | JudgeBackend, *, store: Store | str | Path,
                 runner: RunnerConfig | None = None, judge_options: dict[str, Any] | None = None,
                 manifest: dict[str, Any] | None = None, others: dict[str, str | JudgeBackend | None] | None = None,
                 wait_s: float | None = None) -> None:
        super().__init__("workflow", kind, store=store, manifest=manifest, judge=judge, judge_options=judge_options,
                         others=dict(others or {}), runner=runner, wait_s=wait_s)

    async def __aenter__(self) -> JudgeSession:
        await super().__aenter__()
        return self
