"""The SQLite run store: runs, items, judge calls (the content-addressed cache), results with
their evidence, and append-only human annotations.

Every judge call and every finished item is committed as soon as it exists, in WAL mode, so a
process killed at any moment loses nothing it had written and a resumed run repeats no call.

One module per room: ``_schema`` (migrations), ``_connection`` (opening, WAL, transactions),
``_calls`` (the judge-call cache), ``_runs`` (runs, units, results), ``_locks`` (one writer per
run), ``_stages`` (corpus-level steps), ``_annotations`` (reviewers' judgements, checked).
"""

from __future__ import annotations

from assay.core.errors import StoreError
from assay.store._annotations import Annotations
from assay.store._calls import CallCache
from assay.store._connection import OPENED_STORES, StoreBase
from assay.store._locks import RunLocked, RunLocks
from assay.store._runs import Runs
from assay.store._schema import MIGRATIONS, Migration, migration
from assay.store._stages import Stages

__all__ = ["MIGRATIONS", "OPENED_STORES", "Migration", "RunLocked", "Store", "StoreBase", "StoreError", "migration"]


class Store(Annotations, Runs, CallCache, RunLocks, Stages):
    """One SQLite file (or ``:memory:``) holding any number of runs and the shared call cache."""
