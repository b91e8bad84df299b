"""What a run is and its id: one specification for the three kinds of run and one recipe for
their ids.

- ``evaluate``: a method over items. Its id hashes the method's name, options and prompts
  (``manifest``), the judge's identity and the items, plus the method's version when it is not
  "1" (runs stored before methods had versions keep their ids).
- ``stage``: a corpus-level step whose parts feed later runs (DeCE's criteria, PReMISE's
  extraction). Its id hashes its name and manifest (the manifest names the judge when it matters).
- ``workflow``: free-form judge work (rubric discovery, audit, repair; DeCE criteria extraction).
  Its id hashes its name, its manifest and the identities of every judge it uses.

Each kind hashes exactly the payload it always hashed, so the ids of existing stores are
unchanged (byte for byte) and their runs, stages and sessions are found again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.judge.runner import canonical_json

Kind = Literal["evaluate", "stage", "workflow"]


def digest(payload: Any) -> str:
    """The 16 hex digits of a run id: sha256 of the payload's canonical JSON."""
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class RunSpec:
    """One run: its kind, its name (method, stage or workflow), what it does (``manifest``), the
    judges by role with their identities (``judge`` is the main one) and its items (evaluate only)."""

    kind: Kind
    name: str
    manifest: dict[str, Any]
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)
    items: list[dict[str, Any]] | None = None
    version: str = "1"
    """The method's version (evaluate only)."""

    def __post_init__(self) -> None:
        if self.kind not in ("evaluate", "stage", "workflow"):
            raise ValueError(f"a run's kind is evaluate, stage or workflow, not {self.kind!r}")
        if self.kind == "evaluate" and (self.items is None or "judge" not in self.judges):
            raise ValueError("an evaluate run needs its items and its judge")

    def lineage_payload(self) -> dict[str, Any]:
        """What the run evaluates whatever the method's version (evaluate runs)."""
        return {"method": self.name, "manifest": self.manifest, "judge": self.judges["judge"], "items": self.items}

    def id_payload(self) -> dict[str, Any]:
        if self.kind == "evaluate":
            payload = self.lineage_payload()
            if self.version != "1":
                payload["method_version"] = self.version
            return payload
        if self.kind == "stage":
            return {"stage": self.name, "manifest": self.manifest}
        return {"kind": self.name, "manifest": self.manifest, "judges": self.judges}

    @property
    def run_id(self) -> str:
        return digest(self.id_payload())

    @property
    def lineage(self) -> str:
        return digest(self.lineage_payload())

    @property
    def lock(self) -> str:
        """The name of the run's write lock in the store (stages have their own name space)."""
        return f"stage:{self.run_id}" if self.kind == "stage" else self.run_id

    def steps(self) -> RunSpec:
        """The stage that holds a workflow's finished steps (see :meth:`assay.engine.Run.step`)."""
        return RunSpec("stage", f"{self.name}.steps", {"run": self.run_id})


def run_id(spec: RunSpec) -> str:
    """The one recipe of a run id (see the module docstring)."""
    return spec.run_id
