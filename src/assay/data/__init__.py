"""Every way items come in, through one door: :func:`load_items` reads assay's files (JSONL, CSV,
JSON, Parquet), the peers' formats (:mod:`~assay.data.datasets`), a DataFrame, a list of records,
a trace export or a Phoenix project (:mod:`~assay.data.traces`) into typed items with their notes.
Stands on :mod:`assay.core` and :mod:`assay.store`.
"""

from assay.data.items import LoadedItems, PhoenixTraces, TraceExport, load_items

__all__ = ["LoadedItems", "PhoenixTraces", "TraceExport", "load_items"]
