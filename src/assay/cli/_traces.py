"""The tracing options of ``assay eval``: items from traces (Phoenix, an OTLP/JSON file) and the
verdicts out again (OpenTelemetry events, Phoenix annotations) once the run is saved. They live
in :mod:`assay.clikit` (the command line's kit, a leaf that methods import too); re-exported here."""

from __future__ import annotations

from assay.clikit import TRACE_NAMES, TRACE_OPTIONS, after_run, load_items, send_run

__all__ = ["TRACE_NAMES", "TRACE_OPTIONS", "after_run", "load_items", "send_run"]
