"""Reading sources (CSV, TSV, JSONL, Parquet, folders of HTML pages, DataFrames and Arrow tables) and
writing outputs atomically."""

from er_framework.io.frames import arrow_table, as_kind, frame_kind, frame_to_arrow, records_from_frame
from er_framework.io.tables import read_source, read_source_with_stats, write_outputs

__all__ = [
    "arrow_table",
    "as_kind",
    "frame_kind",
    "frame_to_arrow",
    "read_source",
    "read_source_with_stats",
    "records_from_frame",
    "write_outputs",
]
