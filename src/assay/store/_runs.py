"""Runs, their units and their results."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from assay.core._files import finite
from assay.core.errors import StoreError
from assay.core.records import Edit, RunRecord, UnitResult
from assay.core.types import CALL_FAILED, Unit, Unscored
from assay.store._connection import StoreBase, _dumps


def store_row(result: UnitResult) -> tuple[Any, ...]:
    """The ``results`` row of a unit's result (the view the store keeps): the method's and the
    engine's details in one column, as stores always held them; the edit history is in the
    ``annotations`` table."""
    unscored = [u.model_dump(exclude_unset=True) for u in result.unscored]
    return (result.run_id, result.idx, result.key, result.status, _dumps(result.scores), _dumps(unscored),
            _dumps(result.details), _dumps(result.call_keys), result.created_at)


def read_edits(db: sqlite3.Connection, run_id: str, unit_key: str | None = None) -> list[Edit]:
    """The run's edits (of one unit, if given), oldest first."""
    query = "SELECT * FROM annotations WHERE run_id = ?" + (" AND unit_key = ?" if unit_key else "")
    rows = db.execute(query + " ORDER BY id", (run_id, unit_key) if unit_key else (run_id,))
    return [Edit.model_construct(id=r["id"], run_id=r["run_id"], unit_key=r["unit_key"], path=r["path"],
                                 author=r["author"], value=finite(json.loads(r["value"])), reason=r["reason"],
                                 created_at=r["created_at"],
                                 previous=None if r["previous"] is None else finite(json.loads(r["previous"])))
            for r in rows]


class Runs(StoreBase):
    """The runs room: runs, their units and their results."""

    @staticmethod
    def _run(row: sqlite3.Row) -> RunRecord:
        return RunRecord.model_construct(run_id=row["run_id"], method=row["method"], status=row["status"],
                                         manifest=json.loads(row["manifest"]), created_at=row["created_at"],
                                         finished_at=row["finished_at"])

    def get_run(self, run_id: str) -> RunRecord | None:
        row = self.db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else self._run(row)

    def run(self, run_id: str) -> RunRecord:
        """The run, or a StoreError naming the store."""
        found = self.get_run(run_id)
        if found is None:
            raise StoreError(f"no run {run_id} in {self.path}")
        return found

    def list_runs(self) -> list[RunRecord]:
        return [self._run(row) for row in self.db.execute("SELECT * FROM runs ORDER BY created_at, rowid")]

    def resolve_run(self, run_id: str | None) -> str:
        """The given run id, or the only/latest run of the store."""
        runs = self.list_runs()
        if not runs:
            raise StoreError(f"{self.path} holds no run")
        if run_id is None:
            return runs[-1].run_id
        matches = [r for r in runs if r.run_id.startswith(run_id)]
        if len(matches) != 1:
            known = ", ".join(r.run_id for r in runs)
            raise StoreError(f"no single run matches {run_id!r} in {self.path} (runs: {known})")
        return matches[0].run_id

    def create_run(self, run_id: str, method: str, manifest: dict[str, Any],
                   items: Sequence[tuple[str, dict[str, Any]] | Unit]) -> None:
        """Write the run and its first units in one transaction: all of it or nothing. ``items``
        are units, or (key, item payload) pairs."""
        rows = [(u.key, u.payload(), u.kind, u.round) if isinstance(u, Unit) else (u[0], u[1], "item", 0)
                for u in items]
        with self.transaction():
            self.db.execute("INSERT INTO runs VALUES (?, ?, ?, 'running', ?, NULL)",
                            (run_id, method, _dumps(manifest), time.time()))
            self._insert_rows(run_id, 0, rows)

    def _insert_rows(self, run_id: str, start: int, rows: Sequence[tuple[str, dict[str, Any], str, int]]) -> None:
        self.db.executemany("INSERT INTO items (run_id, idx, item_key, payload, kind, round) VALUES (?, ?, ?, ?, ?, ?)",
                            [(run_id, start + i, key, _dumps(payload), kind, round_)
                             for i, (key, payload, kind, round_) in enumerate(rows)])

    def add_units(self, run_id: str, units: list[Unit]) -> None:
        """Append units a scheduler proposed (one transaction); a key already in the run is an error."""
        with self.transaction():
            known = {r[0] for r in self.db.execute("SELECT item_key FROM items WHERE run_id = ?", (run_id,))}
            clash = [u.key for u in units if u.key in known]
            if clash or len({u.key for u in units}) != len(units):
                raise StoreError(f"run {run_id}: a scheduler proposed units already in the run: {clash[:3]}")
            start = self.db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM items WHERE run_id = ?",
                                    (run_id,)).fetchone()[0]
            self._insert_rows(run_id, int(start), [(u.key, u.payload(), u.kind, u.round) for u in units])

    def units(self, run_id: str) -> list[Unit]:
        rows = self.db.execute("SELECT item_key, kind, round, payload FROM items WHERE run_id = ? ORDER BY idx",
                               (run_id,))
        return [Unit.from_stored(r[1], r[0], r[2], json.loads(r[3])) for r in rows]

    def drop_run(self, run_id: str) -> None:
        """Delete a run, its units and its results in one transaction (``--fresh``). The judge-call
        cache and the reviewers' annotations (append-only) are kept: a new run of the same work
        gets the same id, so the annotations stay attached to its units."""
        with self.transaction():
            self.db.execute("DELETE FROM results WHERE run_id = ?", (run_id,))
            self.db.execute("DELETE FROM items WHERE run_id = ?", (run_id,))
            self.db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

    def set_status(self, run_id: str, status: str) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                            (status, time.time() if status == "finished" else None, run_id))

    def items(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT payload FROM items WHERE run_id = ? ORDER BY idx", (run_id,))
        return [json.loads(r[0]) for r in rows]

    def done_indices(self, run_id: str, *, retry_failed_calls: bool = False) -> set[int]:
        """Indices of items with a stored result. ``retry_failed_calls`` leaves out items one of
        whose judge calls failed (judge unreachable, timeouts): a resumed run tries them again,
        where an unparseable output stays as it was (asking again would give the same)."""
        rows = self.db.execute("SELECT idx, unscored FROM results WHERE run_id = ?", (run_id,))
        if not retry_failed_calls:
            return {r[0] for r in rows}
        return {r[0] for r in rows
                if not any(CALL_FAILED in str(u.get("reason", "")) for u in json.loads(r[1]))}

    def shared_call_keys(self, run_id: str) -> set[str]:
        """The judge calls more than one stored result of the run rests on (one reference's
        extraction behind several answers, a question two answers asked alike): read from the
        results' call keys alone, without building the results."""
        uses: dict[str, int] = {}
        for (keys,) in self.db.execute("SELECT call_keys FROM results WHERE run_id = ?", (run_id,)):
            for key in set(json.loads(keys)):
                uses[key] = uses.get(key, 0) + 1
        return {key for key, n in uses.items() if n > 1}

    def put_result(self, run_id: str, idx: int, unit_key: str, result: Any) -> None:
        """Store one unit's result: a method's ``ItemResult`` (status, scores, unscored,
        details, call_keys), the one shape every reader gets back as a :class:`UnitResult`."""
        method, engine = UnitResult.split_details(result.details)
        # every field set, as stores always held them (the row view writes the fields set)
        unscored = [Unscored.model_construct(**(u if isinstance(u, dict) else u.model_dump())) for u in result.unscored]
        unit = UnitResult.model_construct(run_id=run_id, idx=idx, key=unit_key, status=result.status,
                                          scores=result.scores, unscored=unscored, method=method, engine=engine,
                                          call_keys=result.call_keys, created_at=time.time())
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", store_row(unit))

    def results(self, run_id: str, *, unit_key: str | None = None) -> list[UnitResult]:
        """Every stored result of the run with its unit, in unit order (only ``unit_key``'s, if
        given)."""
        query = ("SELECT r.*, i.payload, i.kind, i.round FROM results r "
                 "JOIN items i ON i.run_id = r.run_id AND i.idx = r.idx WHERE r.run_id = ?")
        args: tuple[Any, ...] = (run_id,)
        if unit_key is not None:
            query += " AND r.item_key = ?"
            args = (run_id, unit_key)
        rows = self.db.execute(query + " ORDER BY r.idx", args).fetchall()
        history: dict[str, list[Edit]] = {}
        for edit in read_edits(self.db, run_id, unit_key):
            history.setdefault(edit.unit_key, []).append(edit)
        out = []
        for r in rows:
            payload = json.loads(r["payload"])
            kind = r["kind"]
            method, engine = UnitResult.split_details(json.loads(r["details"]))
            out.append(UnitResult.model_construct(
                run_id=run_id, idx=r["idx"], key=r["item_key"], status=r["status"], scores=json.loads(r["scores"]),
                # as stored: an old row's Unscored keeps exactly the fields it was written with
                unscored=[Unscored.model_construct(**u) for u in json.loads(r["unscored"])],
                method=method, engine=engine, call_keys=json.loads(r["call_keys"]), created_at=r["created_at"],
                kind=kind, round=r["round"], items=[payload] if kind == "item" else payload["items"],
                history=history.get(r["item_key"], [])))
        return out

    def result(self, run_id: str, unit_key: str) -> UnitResult:
        """One unit's result, by the unit's key; StoreError when there is none."""
        found = self.results(run_id, unit_key=unit_key)
        if found:
            return found[0]
        raise StoreError(f"run {run_id} in {self.path} has no result for unit {unit_key!r}")
