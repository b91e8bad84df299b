"""Annotations: a reviewer's append-only judgements of one unit's verdicts, checked before stored."""

from __future__ import annotations

import time
from typing import Any

from assay.core.errors import StoreError
from assay.core.records import PATH, Edit
from assay.store._connection import _dumps
from assay.store._runs import Runs, read_edits


class Annotations(Runs):
    """The annotations room: each is checked against the unit's result it addresses."""

    def annotate(self, run_id: str, unit_key: str, path: str, value: Any, *, author: str,
                 reason: str = "", rules: Any = None) -> Edit:
        """Record a human's judgement of one verdict: ``path`` addresses it inside the unit's
        result (``recall``, ``elements[3].supported``) and must exist there — or, under
        ``human.`` (``human.grade_correctness``, ``human.missing``), is something the reviewer
        adds. Annotations are
        never changed or deleted (the table refuses it); a correction is a newer annotation. Each
        is an :class:`~assay.core.records.Edit` of the result: it records the value it replaces."""
        if not author.strip():
            raise StoreError("an annotation needs an author")
        for what, text in (("author", author), ("reason", reason)):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise StoreError(f"the {what} holds text that is not Unicode (a lone surrogate)") from None
        record = self.result(run_id, unit_key)
        # A ``human.`` address is what the reviewer adds (a grade, a missing point, a split or
        # merge, a comment); any other address must lead to a verdict of the result.
        # Every value is checked before it is stored (annotation_rules): the table is append-only.
        # ``rules`` is the run's method class (metric ranges, label sets), when the caller knows it.
        from assay.store import annotation_rules as checks

        try:
            if not PATH.match(path):
                raise checks.AnnotationRefused(f"{path!r} is not an address like 'recall' or 'elements[3].supported'")
            checks.check_encoded(value)
            if len(reason) > 4000:
                raise checks.AnnotationRefused("reason longer than 4000 characters")
            if path in record.scores and not reason.strip():  # withdrawing the judge's score (None) too
                raise checks.AnnotationRefused(f"overriding the score {path} needs a reason" if value is not None
                                               else f"withdrawing the score {path} needs a reason")
            if path.startswith("human."):
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
            # what the edit changes from: the last edit's value here (read under the write lock,
            # so two reviewers at once each see the other's), else the judge's
            record.history = read_edits(self.db, run_id, unit_key)
            previous = record.current(path) if record.edits(path) or not path.startswith("human.") else None
            cursor = self.db.execute(
                "INSERT INTO annotations (run_id, idx, author, field, value, reason, created_at, unit_key, path, "
                "previous) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, record.idx, author, path, _dumps(value), reason, now, unit_key, path,
                 None if previous is None else _dumps(previous)))
        return Edit(id=int(cursor.lastrowid or 0), run_id=run_id, unit_key=unit_key, path=path, author=author,
                    value=value, reason=reason, created_at=now, previous=previous)

    def annotations(self, run_id: str, unit_key: str | None = None) -> list[Edit]:
        """The run's annotations — the edits of its results (of one unit, if given), oldest first."""
        return read_edits(self.db, run_id, unit_key)
