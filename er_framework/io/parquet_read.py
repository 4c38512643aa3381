"""Reading Parquet files and Arrow tables into raw columns: :func:`read_parquet_columns`, and
:func:`read_arrow_columns`, which also reads the tables given as objects (DataFrames, Arrow tables;
:mod:`er_framework.io.frames`) with the same rules and messages.

The input rules are those of :mod:`er_framework.io.source_files`: values are converted to text as
JSON values are (dates and timestamps as ISO 8601 text, decimals as ``str``), except that a float
field whose present values are all whole numbers is read as integers (``1999.0 -> "1999"``:
:func:`integral_floats_as_integers`); rows are numbered from 1. pyarrow is imported when a table is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from er_framework.errors import InputError, Problem
from er_framework.io.data_file import Locator, missing_columns, open_data_file, repeated_columns, too_big_problem

__all__ = ["TableWords", "arrow_columns_to_read", "integral_floats_as_integers", "read_arrow_columns", "read_parquet_columns"]


def read_parquet_columns(
    path: Path | str,
    file: str,
    wanted: list[str],
    id_column: str,
    hint: str,
    *,
    max_record_bytes: int | None = None,
    whole: bool = True,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw value columns of a Parquet file (Python objects from pyarrow); ``path``: a local path or a URL
    (:func:`~er_framework.io.data_file.open_data_file`).

    Only the ``wanted`` columns are read; the rest is :func:`read_arrow_columns`: a row whose
    text and binary values add up to more than ``max_record_bytes`` raises InputError, a file
    without rows is a problem when ``whole``, and so is a string value that is not valid UTF-8.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with open_data_file(path, file, hint) as f:
            present = list(pq.read_schema(f).names)
            f.seek(0)
            table = pq.read_table(f, columns=arrow_columns_to_read(present, wanted))
    except (pa.ArrowException, OSError) as e:
        raise InputError(
            Problem(
                where=file,
                message=f"cannot read the Parquet file: {e}{hint}",
                fix="check that the file is a complete, valid Parquet file (e.g. pyarrow.parquet.read_table or parquet-tools can open it)",
            )
        ) from None
    return read_arrow_columns(table, present, file, wanted, id_column, hint, max_record_bytes=max_record_bytes, whole=whole)


@dataclass(frozen=True)
class TableWords:
    """How the messages of :func:`read_arrow_columns` name the table read: a Parquet file (the
    default) or a table given as an object (a DataFrame)."""

    #: the table, as the subject of "… has no rows"
    table: str = "the Parquet file"
    #: where a missing column is to be added
    container: str = "the file"
    #: how to give a table that holds records
    fill: str = "point the path to the file that holds the data"


def arrow_columns_to_read(present: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The ``wanted`` columns that a table whose columns are ``present`` names exactly once
    (the others are problems of :func:`read_arrow_columns`)."""
    return [c for c in wanted if present.count(c) == 1]


def read_arrow_columns(
    table: Any,
    present: Sequence[str],
    file: str,
    wanted: list[str],
    id_column: str,
    hint: str,
    *,
    max_record_bytes: int | None = None,
    whole: bool = True,
    words: TableWords = TableWords(),
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw value columns (Python objects) of an Arrow table: the reader of Parquet files and of
    tables given as objects.

    ``present``: the names of every column of the source (a name may repeat); ``table`` holds
    at least the columns :func:`arrow_columns_to_read` names. Problems: ``wanted`` columns
    missing (with a suggestion) or present more than once, a table without rows when
    ``whole``, binary values that are not UTF-8 text, string values that are not valid UTF-8
    (naming the row). Dictionary columns are read as their values, string and binary views as
    plain strings and binaries. A row whose text and binary values add up to more than
    ``max_record_bytes`` raises InputError. Rows are numbered from 1.
    """
    import pyarrow as pa

    missing = [c for c in wanted if c not in present]
    problems = missing_columns(missing, present, file, id_column, hint, container=words.container)
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(present):
        positions.setdefault(name, []).append(i)
    problems += repeated_columns(positions, wanted, file, hint)
    read = arrow_columns_to_read(present, wanted)
    if whole and table.num_rows == 0 and not problems:
        problems.append(Problem(where=file, message=f"{words.table} has no rows{hint}: a source without any record", fix=words.fill))
    table = integral_floats_as_integers(table, [c for c in read if c != id_column])
    arrow: dict[str, Any] = {}
    for c in read:
        col = _plain_column(table.column(c))
        t = col.type
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            try:
                col = col.cast(pa.large_string())
            except pa.ArrowInvalid:
                problems.append(
                    Problem(
                        where=file,
                        path=f"column {c!r}",
                        message=f"column {c!r} holds binary values that are not valid UTF-8 text",
                        fix="store text columns as UTF-8 strings",
                    )
                )
                continue
        arrow[c] = col
    if max_record_bytes is not None:
        _arrow_row_sizes(arrow, file, hint, max_record_bytes)
    columns: dict[str, list[Any]] = {}
    for c, col in arrow.items():
        try:
            columns[c] = col.to_pylist()
        except UnicodeDecodeError:  # a string column written without UTF-8 validation
            row = _first_bad_utf8(col)
            problems.append(
                Problem(
                    where=file,
                    path=f"row {row}, column {c!r}",
                    message=f"column {c!r} holds a string that is not valid UTF-8 (row {row}){hint}",
                    fix="store text columns as valid UTF-8 strings",
                )
            )
    return columns, Locator(file, None, "row"), problems


def integral_floats_as_integers(table: Any, columns: Sequence[str]) -> Any:
    """``table`` with each of ``columns`` that is a float column whose present values are all whole numbers
    (NaN and nulls are missing) cast to 64-bit integers, so that its values read as ``"1999"``, not
    ``"1999.0"``: a pandas column of integers with a missing value is a float column (``1999.0``, NaN), and so
    is a ``YYYYMMDD`` date read by ``read_csv`` (``19151111.0``). A column holding a fraction (``12.5``), an
    infinity or a number beyond 64 bits is kept as it is (its values read as floats: ``"12.5"``). Columns
    that are not in the table or not floats are untouched."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in columns:
        if name not in table.column_names or table.column_names.count(name) != 1:
            continue
        col = table.column(name)
        if not pa.types.is_floating(col.type):
            continue
        nan = pc.is_nan(col)
        if pc.any(nan).as_py():
            col = pc.if_else(nan, pa.scalar(None, col.type), col)
        try:
            ints = pc.cast(col, pa.int64(), safe=True)  # ArrowInvalid for a fraction, an infinity, out of range
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        table = table.set_column(table.column_names.index(name), name, ints)
    return table


def _plain_column(col: Any) -> Any:
    """An Arrow column with dictionaries decoded and string/binary views made plain (large)
    strings/binaries: the types the size check and the UTF-8 check know."""
    import pyarrow as pa

    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    view = str(t)  # pa.types.is_string_view needs pyarrow >= 16
    if view == "string_view":
        col = col.cast(pa.large_string())
    elif view == "binary_view":
        col = col.cast(pa.large_binary())
    return col


def _arrow_row_sizes(arrow: dict[str, Any], file: str, hint: str, limit: int) -> None:
    """InputError if a row's text/binary values add up to more than ``limit`` bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total: Any = None
    for col in arrow.values():
        t = col.type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            continue
        sizes = pc.fill_null(pc.cast(pc.binary_length(col), pa.int64()), 0)
        total = sizes if total is None else pc.add(total, sizes)
    if total is None or len(total) == 0:
        return
    biggest = pc.max(total).as_py()
    if biggest is not None and biggest > limit:
        row = int(pc.index(total, biggest).as_py())
        raise InputError(too_big_problem(file, row + 1, int(biggest), limit, hint, "row", None))


def _first_bad_utf8(col: Any) -> int:
    """The 1-based row of the first value of a string column that is not valid UTF-8."""
    import pyarrow as pa

    for i, value in enumerate(col.cast(pa.large_binary()).to_pylist()):
        if value is not None:
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                return i + 1
    return 0
