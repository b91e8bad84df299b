"""Stages: corpus-level steps whose stored, hashed output feeds later runs (SPEC §2.0).

A stage is identified by its name and manifest (what it reads and how: the method's prompts and
options, the judge, the inputs), like a run. Its output is a set of *parts* (e.g. DeCE's criteria
of one question), each committed to the store as soon as it exists, so a stage killed at any
moment resumes where it stopped: finished parts are not computed again, and their judge calls
are in the cache anyway. When every part is there the stage is ``finished`` and its output gets a
content hash (sha256 of the canonical JSON of the parts in key order), which a run that uses the
output puts in its own manifest (DeCE: ``criteria_file_sha256``).

A part whose value reports a failed judge call (``{"unscored": {"reason": "... judge call
failed ..."}}``) is computed again on resume, as a run's items are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from assay.runner import canonical_json, gather_in_order
from assay.store import Store
from assay.types import CALL_FAILED

Part = Callable[[], Awaitable[Any]]


@dataclass
class StageResult:
    stage_id: str
    name: str
    parts: dict[str, Any]
    """Every part's JSON value, by key, in key order."""
    output_sha256: str
    resumed_with: int
    """Parts that were already stored when this invocation started."""
    computed: int


def stage_id_for(name: str, manifest: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json({"stage": name, "manifest": manifest}).encode()).hexdigest()[:16]


def _failed_call(value: Any) -> bool:
    return isinstance(value, dict) and CALL_FAILED in str((value.get("unscored") or {}).get("reason", ""))


async def run_stage(store: Store, name: str, manifest: dict[str, Any], parts: dict[str, Part], *,
                    window: int = 4, wait_s: float | None = None) -> StageResult:
    """Compute the parts not yet stored for this stage, committing each as it finishes, and
    return all of them. Holds the stage's write lock (as a run does) while it works."""
    stage_id = stage_id_for(name, manifest)
    lock = f"stage:{stage_id}"
    store.acquire_run(lock, wait_s=wait_s)
    try:
        store.begin_stage(stage_id, name, manifest)
        stored = store.stage_parts(stage_id)
        done = {key for key, value in stored.items() if not _failed_call(value)}
        todo = [key for key in sorted(parts) if key not in done]

        def job(key: str) -> Part:
            return parts[key]

        def finished(position: int, value: Any) -> None:
            store.put_stage_part(stage_id, todo[position], value)

        status = "interrupted"
        try:
            await gather_in_order([job(k) for k in todo], window, on_done=finished)
            status = "finished"
        finally:
            values = store.stage_parts(stage_id)
            digest = hashlib.sha256(canonical_json({k: values[k] for k in sorted(values)}).encode()).hexdigest()
            store.end_stage(stage_id, status, digest if status == "finished" else None)
        return StageResult(stage_id=stage_id, name=name, parts={k: values[k] for k in sorted(values)},
                           output_sha256=digest, resumed_with=len(done), computed=len(todo))
    finally:
        store.release_run(lock)
