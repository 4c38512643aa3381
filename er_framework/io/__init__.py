"""Reading sources (CSV, TSV, JSONL, Parquet, folders of HTML pages) and writing outputs atomically."""

from er_framework.io.tables import read_source, read_source_with_stats, write_outputs

__all__ = ["read_source", "read_source_with_stats", "write_outputs"]
