"""The judge-call cache: content-addressed completions, shared by every run of the store."""

from __future__ import annotations

import json
import time

from assay.core.records import CallRecord
from assay.core.types import Completion
from assay.store._connection import StoreBase


class CallCache(StoreBase):
    """The judge-call cache room of the store."""

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

    def call_stats(self, keys: list[str]) -> dict[str, float]:
        """Token and latency totals of the given judge calls; ``cached_prompt_tokens`` are the prompt
        tokens the backend read from a cache (a provider bills them less), part of ``prompt_tokens``."""
        if not keys:
            return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_prompt_tokens": 0, "latency_s": 0.0}
        marks = ",".join("?" * len(keys))
        row = self.db.execute(
            f"SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(latency_s), "
            f"SUM(COALESCE(json_extract(completion, '$.usage.cached_prompt_tokens'), 0)) "
            f"FROM judge_calls WHERE key IN ({marks})", keys).fetchone()
        stats = {"calls": row[0], "prompt_tokens": row[1] or 0, "completion_tokens": row[2] or 0,
                 "cached_prompt_tokens": row[4] or 0, "latency_s": row[3] or 0.0}
        if row[4]:  # backends that report it (llama.cpp, a hosted provider's prompt cache): the share of
            # prompt tokens not recomputed
            stats["prefix_reuse"] = row[4] / stats["prompt_tokens"] if stats["prompt_tokens"] else None
        return stats
