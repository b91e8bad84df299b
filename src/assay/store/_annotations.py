"""Annotations: a reviewer's append-only judgements of one unit's verdicts, checked before stored."""

from __future__ import annotations

import json
import time
from typing import Any

from assay._files import finite
from assay.errors import StoreError
from assay.records import PATH, Annotation
from assay.store._connection import _dumps
from assay.store._runs import Runs


class Annotations(Runs):
    """The annotations room: each is checked against the unit's result it addresses."""

    def annotate(self, run_id: str, unit_key: str, path: str, value: Any, *, author: str,
                 reason: str = "", rules: Any = None) -> Annotation:
        """Record a human's judgement of one verdict: ``path`` addresses it inside the unit's
        result (``recall``, ``elements[3].supported``) and must exist there — or, under
        ``human.`` (``human.grade_correctness``, ``human.missing``), is something the reviewer
        adds. Annotations are
        never changed or deleted (the table refuses it); a correction is a newer annotation."""
        if not author.strip():
            raise StoreError("an annotation needs an author")
        record = self.result(run_id, unit_key)
        # A ``human.`` address is what the reviewer adds (a grade, a missing point, a split or
        # merge, a comment); any other address must lead to a verdict of the result.
        # Every value is checked before it is stored (annotation_rules): the table is append-only.
        # ``rules`` is the run's method class (metric ranges, label sets), when the caller knows it.
        from assay import annotation_rules as checks

        try:
            checks.check_encoded(value)
            if len(reason) > 4000:
                raise checks.AnnotationRefused("reason longer than 4000 characters")
            if path.startswith("human.") and PATH.match(path):
                checks.check_human(path, value)
            else:
                try:
                    current = record.resolve(path)
                except (KeyError, IndexError, TypeError, ValueError):
                    raise StoreError(f"run {run_id}, unit {unit_key!r}: no verdict at {path!r}") from None
                checks.check_override(path, current, value, scores=record.scores, rules=rules)
        except checks.AnnotationRefused as exc:
            raise StoreError(f"run {run_id}, unit {unit_key!r}: {exc}") from None
        now = time.time()
        with self.transaction():
            cursor = self.db.execute(
                "INSERT INTO annotations (run_id, idx, author, field, value, reason, created_at, unit_key, path) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, record.idx, author, path, _dumps(value), reason, now, unit_key, path))
        return Annotation(id=int(cursor.lastrowid or 0), run_id=run_id, unit_key=unit_key, path=path, author=author,
                          value=value, reason=reason, created_at=now)

    def annotations(self, run_id: str, unit_key: str | None = None) -> list[Annotation]:
        """The run's annotations (of one unit, if given), oldest first."""
        query = "SELECT * FROM annotations WHERE run_id = ?" + (" AND unit_key = ?" if unit_key else "")
        rows = self.db.execute(query + " ORDER BY id", (run_id, unit_key) if unit_key else (run_id,))
        return [Annotation.model_construct(id=r["id"], run_id=r["run_id"], unit_key=r["unit_key"], path=r["path"],
                                           author=r["author"], value=finite(json.loads(r["value"])), reason=r["reason"],
                                           created_at=r["created_at"]) for r in rows]
