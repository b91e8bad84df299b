"""Stages: corpus-level steps (see :mod:`assay.engine.stages`), each with its parts."""

from __future__ import annotations

import json
import time
from typing import Any

from assay.core.records import StageRecord
from assay.store._connection import StoreBase, _dumps


class Stages(StoreBase):
    """The stages room of the store."""

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
