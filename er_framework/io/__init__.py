"""Reading sources (CSV, TSV, JSONL, Parquet, folders of HTML pages, DataFrames and Arrow tables) and
writing outputs atomically."""

from typing import TYPE_CHECKING

from er_framework.kernels.lazy import lazy_names

if TYPE_CHECKING:
    from er_framework.io.frames import arrow_table, as_kind, frame_kind, frame_to_arrow, records_from_frame
    from er_framework.io.output_write import write_outputs
    from er_framework.io.source_files import read_source, read_source_with_stats

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

#: the submodule of each name above, imported on first use: a module of the package (``er_framework.io.html``
#: for ``er validate``) is imported without the readers and writers
_WHERE: dict[str, str] = {
    **dict.fromkeys(("arrow_table", "as_kind", "frame_kind", "frame_to_arrow", "records_from_frame"), "frames"),
    **dict.fromkeys(("read_source", "read_source_with_stats"), "source_files"),
    "write_outputs": "output_write",
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
