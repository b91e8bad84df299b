"""Reading items: assay's own formats and the peers' (RAGAS, DeepEval field names; .json arrays)."""

from assay.data.datasets._io import (
    input_notes,
    read_csv,
    read_dataframe,
    read_items,
    read_json,
    read_jsonl,
    read_parquet,
)

__all__ = ["input_notes", "read_csv", "read_dataframe", "read_items", "read_json", "read_jsonl", "read_parquet"]
