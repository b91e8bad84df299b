"""Reading items: assay's own formats (and, later, adapters for public human-labelled sets)."""

from assay.datasets._io import read_csv, read_dataframe, read_items, read_jsonl, read_parquet

__all__ = ["read_csv", "read_dataframe", "read_items", "read_jsonl", "read_parquet"]
