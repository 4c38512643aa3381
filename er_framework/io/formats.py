"""File formats the readers understand, and limits shared by the readers of :mod:`er_framework.io`."""

from __future__ import annotations

__all__ = ["FORMATS", "MAX_ROW_PROBLEMS", "SUPPORTED_EXTENSIONS"]

#: How many problems of one kind (e.g. "empty id") are listed one by one
#: before the rest are summarized as a count.
MAX_ROW_PROBLEMS = 10

#: Extension -> (format, gzip-compressed). Longest extensions first.
FORMATS: dict[str, tuple[str, bool]] = {
    ".csv.gz": ("csv", True),
    ".tsv.gz": ("tsv", True),
    ".jsonl.gz": ("jsonl", True),
    ".ndjson.gz": ("jsonl", True),
    ".csv": ("csv", False),
    ".tsv": ("tsv", False),
    ".jsonl": ("jsonl", False),
    ".ndjson": ("jsonl", False),
    ".parquet": ("parquet", False),
}

#: The extensions :func:`read_source` understands.
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(FORMATS)
