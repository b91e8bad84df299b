"""Stages: corpus-level steps whose stored, hashed output feeds later runs — the ``stage`` use of
:class:`assay.engine.Run`.

A stage is identified by its name and manifest (what it reads and how: the method's prompts and
options, the judge, the inputs), like a run (:class:`assay.engine.RunSpec`). Its output is a set
of *parts* (e.g. DeCE's criteria of one question), each committed to the store as soon as it
exists, so a stage killed at any moment resumes where it stopped: finished parts are not
computed again, and their judge calls are in the cache anyway. When every part is there the
stage is ``finished`` and its output gets a content hash (sha256 of the canonical JSON of the
parts in key order), which a run that uses the output puts in its own manifest (DeCE:
``criteria_file_sha256``).

A part whose value reports a failed judge call (``{"unscored": {"reason": "... judge call
failed ..."}}``) is computed again on resume, as a run's items are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.engine import Run, RunSpec
from assay.engine.run import Part
from assay.store import Store

__all__ = ["Part", "StageResult", "run_stage", "stage_id_for"]


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
    return RunSpec("stage", name, manifest).run_id


async def run_stage(store: Store, name: str, manifest: dict[str, Any], parts: dict[str, Part], *,
                    window: int = 4, wait_s: float | None = None) -> StageResult:
    """Compute the parts not yet stored for this stage, committing each as it finishes, and
    return all of them. Holds the stage's write lock (as a run does) while it works."""
    async with Run("stage", name, store=store, manifest=manifest, wait_s=wait_s) as run:
        values, resumed, computed = await run.compute_parts(parts, window=window)
    assert run.stage_digest is not None
    return StageResult(stage_id=run.run_id, name=name, parts=values, output_sha256=run.stage_digest,
                       resumed_with=resumed, computed=computed)
