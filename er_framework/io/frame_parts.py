"""Tables given in memory, read in partitions (issue 30): Dask DataFrames, and the chunks of any other table.

``er_framework.run(job, sources={"a": table})`` takes a Dask DataFrame as well as the tables of
:mod:`er_framework.io.frames`. The same records come out as from the whole table, with the same rules and messages
(:func:`~er_framework.io.parquet_read.read_arrow_columns`, :func:`~er_framework.io.source_files.records_from_columns`):

* :func:`frame_chunks` splits a source into input partitions. A **Dask DataFrame**: one partition per Dask
  partition, each its ``Delayed`` (``to_delayed()``): the partition's graph, computed where the chunk is read
  (:func:`records_from_chunk`: on a Dask worker, never on the client). **Any other table** (pandas, polars, Arrow):
  row slices of its Arrow form of about ``partition_bytes`` each (the client holds the table already; a slice
  travels with the tasks that read it, so a task stays a pure function of its arguments and Dask may run it again
  on another worker).
* :func:`read_frame_source` reads a whole source in this process: a Dask DataFrame partition by partition (each
  computed, read and let go; the records kept), any other table as :func:`~er_framework.io.frames.records_from_frame`
  reads it. Ids are unique across the partitions.

Dask is imported only when one of its objects is given.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from er_framework.data import Records
from er_framework.errors import InputError, Problem
from er_framework.io.column_map import ColumnMap
from er_framework.io.formats import DEFAULT_MAX_RECORD_MB, record_limit
from er_framework.io.frames import frame_to_arrow, records_from_frame
from er_framework.io.parquet_read import TableWords, read_arrow_columns
from er_framework.io.source_files import merge_files, records_from_columns

__all__ = ["frame_chunks", "is_dask_frame", "read_frame_source", "records_from_chunk"]

_WORDS = TableWords(table="the partition", container="the DataFrame", fill="pass a DataFrame that holds the source's records")


def is_dask_frame(obj: object) -> bool:
    """Whether ``obj`` is a Dask DataFrame (without importing Dask: an object of a module never imported cannot exist)."""
    mod = sys.modules.get("dask.dataframe")
    cls = getattr(mod, "DataFrame", None) if mod is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


def frame_chunks(obj: object, where: str, partition_bytes: int) -> list[tuple[str, Any]]:
    """The input partitions of a source given in memory: ``(where, chunk)`` with ``chunk`` a Dask partition's
    ``Delayed`` (a Dask DataFrame) or a row slice of the table as a ``pyarrow.Table`` of about ``partition_bytes``
    (at least one row; one empty chunk for a table without rows, so that its reader reports it)."""
    if is_dask_frame(obj):
        delayed = obj.to_delayed()  # type: ignore[attr-defined]
        return [(f"{where}, partition {k + 1} of {len(delayed)}", d) for k, d in enumerate(delayed)]
    table = frame_to_arrow(obj, where)
    rows = int(table.num_rows)
    if rows == 0:
        return [(where, table)]
    per_row = max(1, int(table.nbytes) // rows)
    step = max(1, int(partition_bytes) // per_row)
    starts = range(0, rows, step)
    return [(f"{where}, rows {a + 1}-{min(a + step, rows)}" if len(starts) > 1 else where, table.slice(a, step)) for a in starts]


def records_from_chunk(
    chunk: Any,
    *,
    id_column: str,
    fields: Sequence[str],
    name: str,
    where: str,
    layout: str = "wide",
    max_record_mb: float | None = DEFAULT_MAX_RECORD_MB,
    columns: Mapping[str, str] | None = None,
) -> Records:
    """The records of one chunk of :func:`frame_chunks` (a ``Delayed`` is computed here, with Dask's synchronous
    scheduler: on a worker, the partition's graph runs in the task). A chunk without rows gives no records and no
    error (another partition holds the source's records)."""
    if hasattr(chunk, "dask") and hasattr(chunk, "compute"):
        chunk = chunk.compute(scheduler="sync")
    mapping = ColumnMap(fields, columns)
    wanted = list(dict.fromkeys([id_column, *mapping.read]))
    hint = f" (source {name!r})"
    with mapping.named():
        table = frame_to_arrow(chunk, where)
        present = list(table.column_names)
        raw, loc, problems = read_arrow_columns(
            table, present, where, wanted, id_column, hint, max_record_bytes=record_limit(max_record_mb), whole=False, words=_WORDS
        )
        recs = records_from_columns(
            raw, loc, problems, file=where, id_column=id_column, fields=mapping.read, name=name, fmt="arrow", layout=layout
        )
    return mapping.records(recs)


def read_frame_source(
    obj: object,
    *,
    id_column: str,
    fields: Sequence[str],
    name: str,
    where: str,
    layout: str = "wide",
    max_record_mb: float | None = DEFAULT_MAX_RECORD_MB,
    columns: Mapping[str, str] | None = None,
) -> Records:
    """A source given in memory read in this process: a Dask DataFrame partition by partition (ids unique across
    them; no rows at all is an error), any other table by :func:`~er_framework.io.frames.records_from_frame`."""
    options: dict[str, Any] = {"id_column": id_column, "fields": fields, "name": name, "layout": layout, "max_record_mb": max_record_mb}
    if not is_dask_frame(obj):
        return records_from_frame(obj, where=where, columns=columns, **options)
    parts = [records_from_chunk(chunk, where=w, columns=columns, **options) for w, chunk in frame_chunks(obj, where, 0)]
    if not any(len(p) for p in parts):
        raise InputError(
            Problem(where=where, message=f"the Dask DataFrame has no rows (source {name!r}): a source without any record", fix=_WORDS.fill)
        )
    return parts[0] if len(parts) == 1 else merge_files(parts, where)
