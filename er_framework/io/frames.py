"""Tables given as Python objects: DataFrames in as sources, result tables out in the kind of the input.

A source may be given as an object instead of a file (``er_framework.run(job,
sources={"a": df})``): a pandas DataFrame, a polars DataFrame, a pyarrow
``Table``, ``RecordBatch`` or ``RecordBatchReader``, or any object with
``__arrow_c_stream__`` (the Arrow PyCapsule interface: DuckDB relations,
…). :func:`records_from_frame` reads it into the same
:class:`~er_framework.data.Records`, with the same problems and messages, as
writing it to a Parquet file and reading that file with
:func:`~er_framework.io.source_files.read_source` (the two share
:func:`~er_framework.io.parquet_read.read_arrow_columns` and
:func:`~er_framework.io.source_files.records_from_columns`); messages name the
object by the ``where`` given (e.g. ``sources['a']``) and its rows from 1.

Conversion to Arrow (:func:`frame_to_arrow`):

* pandas: a named index (e.g. Febrl's ``rec_id``; every named level of a
  MultiIndex) becomes a column, an unnamed one (the default ``RangeIndex``,
  or the positions a filter left) is dropped. Column labels become text
  (``str(label)``). Object columns of strings are converted once;
  pyarrow-backed columns (``string[pyarrow]``, ``ArrowDtype``) and numbers are
  not copied. ``NaN``, ``None``, ``pd.NA`` and ``NaT`` are missing values. An
  object column mixing value types (``["a", 7]``, which Arrow and Parquet
  cannot store as one column) is read value by value with the JSON Lines rules
  (``7 -> "7"``, ``True -> "true"``, see :mod:`er_framework.io.source_files`).
  A float column of whole numbers (``1999.0``, NaN: pandas' integers with a
  missing value, a ``YYYYMMDD`` date column read by ``read_csv``) is read as
  integers (``"1999"``, ``"19151111"``; for every kind of table, as for a
  Parquet file: :func:`~er_framework.io.parquet_read.integral_floats_as_integers`).
* polars: ``DataFrame.to_arrow()`` (numbers are not copied). A ``LazyFrame``
  is refused: it is a query, ``.collect()`` it first.
* Arrow: a ``Table`` as it is, a ``RecordBatch`` as a table of one batch, a
  ``RecordBatchReader`` or an ``__arrow_c_stream__`` object read to its end
  (a reader can be read only once).

pandas and polars are never imported here unless an object of theirs is given
(they are optional); pyarrow (a core dependency) is imported when a table is
converted.

Output helpers: :func:`arrow_table` builds a pyarrow Table from the engine's
columns (numpy arrays, lists of ``str``), :func:`as_kind` turns it into the
kind :func:`frame_kind` told of an input.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from er_framework.data import Records
from er_framework.errors import InputError, Problem
from er_framework.io.column_map import ColumnMap
from er_framework.io.data_file import as_texts
from er_framework.io.formats import DEFAULT_MAX_RECORD_MB, record_limit
from er_framework.io.parquet_read import TableWords, arrow_columns_to_read, read_arrow_columns
from er_framework.io.source_files import records_from_columns
from er_framework.kernels.arrow import numeric_array, string_array

__all__ = [
    "ACCEPTED",
    "KINDS",
    "arrow_table",
    "as_kind",
    "frame_kind",
    "frame_to_arrow",
    "records_from_frame",
]

#: The kinds of table objects, as :func:`frame_kind` names them and :func:`as_kind` makes them.
KINDS = ("arrow", "pandas", "polars")

#: What a table given as an object may be (for messages).
ACCEPTED = (
    "a pandas DataFrame, a polars DataFrame, a pyarrow Table, RecordBatch or RecordBatchReader, "
    "or an object with __arrow_c_stream__ (the Arrow PyCapsule interface)"
)

_WORDS = {
    "pandas": TableWords(table="the pandas DataFrame", container="the DataFrame", fill="pass a DataFrame that holds the source's records"),
    "polars": TableWords(table="the polars DataFrame", container="the DataFrame", fill="pass a DataFrame that holds the source's records"),
    "arrow": TableWords(table="the Arrow table", container="the table", fill="pass a table that holds the source's records"),
    "stream": TableWords(
        table="the Arrow stream",
        container="the table",
        fill="pass a table that holds the source's records (a RecordBatchReader or a stream is read once: pass a new one to read it again)",
    ),
}


def _instance(obj: object, module: str, *names: str) -> bool:
    """Whether ``obj`` is an instance of one of the classes ``names`` of ``module``, without
    importing the module (an object of a module that was never imported cannot exist)."""
    mod = sys.modules.get(module)
    if mod is None:
        return False
    classes = tuple(c for c in (getattr(mod, n, None) for n in names) if isinstance(c, type))
    return bool(classes) and isinstance(obj, classes)


def frame_kind(obj: object) -> str:
    """The kind of a table object: ``"pandas"`` (a pandas DataFrame), ``"polars"`` (a polars
    DataFrame) or ``"arrow"`` (anything else: an Arrow table, batch, reader or stream; whether
    it is accepted at all is for :func:`frame_to_arrow` to say). One of :data:`KINDS`."""
    if _instance(obj, "pandas", "DataFrame"):
        return "pandas"
    if _instance(obj, "polars", "DataFrame"):
        return "polars"
    return "arrow"


@dataclass
class _Converted:
    """A table object as Arrow: ``table`` holds the columns asked for (all when none were),
    ``present`` names every column of the object (a name may repeat: pandas allows it)."""

    table: Any
    present: list[str]
    words: TableWords


def frame_to_arrow(obj: object, where: str) -> Any:
    """``obj`` as a ``pyarrow.Table`` (see the module's notes for each kind of object).

    Parameters
    ----------
    obj:
        A pandas or polars DataFrame, a pyarrow Table, RecordBatch or RecordBatchReader, or an
        object with ``__arrow_c_stream__``.
    where:
        What the object is to the user (e.g. ``"sources['a']"``), named in the messages.

    Returns
    -------
    pyarrow.Table
        Every column (a pandas DataFrame's named index levels first); numbers and Arrow-backed
        columns are not copied.

    Raises
    ------
    InputError
        For any other kind of object (naming ``where``, its type and the kinds accepted, with
        the fix for a polars LazyFrame or a Series), or when the object cannot be converted
        (e.g. an Arrow stream that fails while it is read).
    """
    return _to_arrow(obj, where, None).table


def _to_arrow(obj: object, where: str, wanted: Sequence[str] | None) -> _Converted:
    """``obj`` as Arrow; only the columns of ``wanted`` that it names once when given."""
    import pyarrow as pa

    refused = _refused(obj, where)  # before the Arrow interfaces: a polars Series has __arrow_c_stream__
    if refused is not None:
        raise InputError(refused)
    if _instance(obj, "pandas", "DataFrame"):
        table, present = _pandas_table(obj, where, wanted)
        return _Converted(table, present, _WORDS["pandas"])
    if _instance(obj, "polars", "DataFrame"):
        table, present = _polars_table(obj, where, wanted)
        return _Converted(table, present, _WORDS["polars"])
    words = _WORDS["arrow"]
    if isinstance(obj, pa.Table):
        table = obj
    elif isinstance(obj, pa.RecordBatch):
        table = pa.Table.from_batches([obj])
    elif isinstance(obj, pa.RecordBatchReader) or hasattr(type(obj), "__arrow_c_stream__"):
        words = _WORDS["stream"]
        try:
            table = obj.read_all() if isinstance(obj, pa.RecordBatchReader) else pa.table(obj)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise InputError(
                Problem(
                    where=where,
                    message=f"cannot read the Arrow stream of the {_type_name(obj)}: {e}",
                    fix="check the object's data (a RecordBatchReader can be read only once: pass a new one)",
                )
            ) from None
    else:
        raise InputError(
            Problem(
                where=where,
                message=f"a {_type_name(obj)} is not a table; expected {ACCEPTED}",
                fix="convert it to one of these, or give the source as a data file (its path)",
            )
        )
    present = list(table.column_names)
    if wanted is not None:
        table = table.select(arrow_columns_to_read(present, wanted))
    return _Converted(table, present, words)


def _type_name(obj: object) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _refused(obj: object, where: str) -> Problem | None:
    """The problem for a pandas or polars object that is not a table (with its fix)."""
    if _instance(obj, "polars", "LazyFrame"):
        return Problem(
            where=where, message="a polars LazyFrame is a query, not a table", fix="call .collect() on it and pass the DataFrame it returns"
        )
    if _instance(obj, "pandas", "Series") or _instance(obj, "polars", "Series"):
        return Problem(
            where=where,
            message="a Series is one column, not a table",
            fix="pass a DataFrame: series.to_frame() makes one (it needs the id column too)",
        )
    return None


def _pandas_table(df: Any, where: str, wanted: Sequence[str] | None) -> tuple[Any, list[str]]:
    """A pandas DataFrame as Arrow (its named index levels first, then its columns) and the names
    of all those columns; only the ``wanted`` ones named once when given."""
    import pyarrow as pa

    index = [(str(n), level) for level, n in enumerate(df.index.names) if n is not None]
    labels = [(str(c), j) for j, c in enumerate(df.columns)]
    present = [n for n, _ in index] + [n for n, _ in labels]
    read = set(arrow_columns_to_read(present, wanted)) if wanted is not None else None
    names: list[str] = []
    arrays: list[Any] = []
    for n, level in index:
        if read is None or n in read:
            names.append(n)
            arrays.append(_pandas_array(df.index.get_level_values(level), n, where))
    for n, j in labels:
        if read is None or n in read:
            names.append(n)
            arrays.append(_pandas_array(df.iloc[:, j], n, where))
    if not arrays:
        return pa.table({}), present
    return pa.Table.from_arrays(arrays, names=names), present


def _pandas_array(values: Any, name: str, where: str) -> Any:
    """One pandas column (a Series or an index level) as an Arrow array."""
    import pyarrow as pa

    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowException, UnicodeEncodeError) as e:
        if values.dtype != object:
            raise InputError(
                Problem(
                    where=where,
                    path=f"column {name!r}",
                    message=f"column {name!r} (dtype {values.dtype}) cannot be converted to an Arrow column: {e}",
                    fix=f"convert the column to text or numbers first, e.g. df[{name!r}].astype('string')",
                )
            ) from None
    # mixed value types, or a str Arrow cannot encode: value by value, as text; a lone surrogate
    # is kept as the bytes it stands for, which the reader reports as invalid UTF-8 (with its row)
    missing = values.isna().tolist()
    texts = as_texts([None if m else v for v, m in zip(values.tolist(), missing)])
    raw = [None if t is None else t.encode("utf-8", "surrogatepass") for t in texts]
    return pa.array(raw, pa.large_binary()).view(pa.large_string())


def _polars_table(df: Any, where: str, wanted: Sequence[str] | None) -> tuple[Any, list[str]]:
    """A polars DataFrame as Arrow (only the ``wanted`` columns it has, when given) and the names
    of all its columns."""
    import pyarrow as pa

    present = list(df.columns)
    if wanted is not None:
        df = df.select([c for c in wanted if c in present])
    try:
        return df.to_arrow(), present
    except (pa.ArrowException, TypeError, ValueError, sys.modules["polars"].exceptions.PolarsError) as e:
        raise InputError(
            Problem(
                where=where,
                message=f"the polars DataFrame cannot be converted to Arrow: {e}",
                fix="cast columns of the Object dtype to strings or numbers first",
            )
        ) from None


def records_from_frame(
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
    """Read a source given as a table object into :class:`Records` of a single source.

    The same records, and the same problems, as writing ``frame_to_arrow(obj, where)`` to a
    Parquet file and reading it with :func:`~er_framework.io.source_files.read_source` (same
    parameters), with ``where`` in place of the file name: every value becomes text or ``None``
    (numbers ``7 -> "7"``, ``0.5 -> "0.5"``, a float field whose present values are all whole numbers as
    integers: ``1999.0 -> "1999"``, NaN/None/NA missing, booleans ``"true"``, dates ISO
    8601, lists and structs JSON), ids strings or integers, non-empty and unique (``layout=
    "wide"``), a table without rows is an error, a row larger than ``max_record_mb`` (MB of its
    text and binary values; ``None``: no limit) is refused. Only the id column and ``fields``
    are converted to Arrow. ``columns``: the table's own column for a field (``columns:`` of the
    source, :class:`~er_framework.io.column_map.ColumnMap`), as for a file.

    Raises
    ------
    InputError
        With every problem found at once: an object that is not a table, missing columns (with
        a suggestion), columns named twice, empty, missing, non-integer or duplicated ids,
        strings that are not valid UTF-8, no rows.
    """
    mapping = ColumnMap(fields, columns)
    wanted = list(dict.fromkeys([id_column, *mapping.read]))
    hint = f" (source {name!r})"
    with mapping.named():
        converted = _to_arrow(obj, where, wanted)
        raw, loc, problems = read_arrow_columns(
            converted.table,
            converted.present,
            where,
            wanted,
            id_column,
            hint,
            max_record_bytes=record_limit(max_record_mb),
            words=converted.words,
        )
        recs = records_from_columns(
            raw, loc, problems, file=where, id_column=id_column, fields=mapping.read, name=name, fmt="arrow", layout=layout
        )
    return mapping.records(recs)


# --------------------------------------------------------------------------
# result tables
# --------------------------------------------------------------------------


def arrow_table(columns: Mapping[str, Sequence[Any] | np.ndarray]) -> Any:
    """A ``pyarrow.Table`` of the columns ``name -> values``, in that order.

    Numeric and boolean numpy arrays keep their dtype (not copied); object arrays and lists of
    ``str`` (``None`` for missing) become string columns, and so does an empty or all-``None``
    one; other values get the type Arrow infers. Raises ``ValueError`` for columns of different
    lengths or not one-dimensional.
    """
    import pyarrow as pa

    arrays = [_output_array(name, values) for name, values in columns.items()]
    lengths = {name: len(a) for name, a in zip(columns, arrays)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns have different lengths: {lengths}")
    return pa.Table.from_arrays(arrays, names=list(columns))


def _output_array(name: str, values: Sequence[Any] | np.ndarray) -> Any:
    import pyarrow as pa

    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"column {name!r} must be 1-D, got shape {values.shape}")
        if values.dtype.kind in "biuf":
            return numeric_array(values)
    try:  # strings built from their buffers: pa.array's conversion would import pandas
        return string_array(values.tolist() if isinstance(values, np.ndarray) else list(values), large=None)
    except (TypeError, UnicodeEncodeError):
        pass
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array(values)


def as_kind(table: Any, kind: str) -> Any:
    """``table`` (a ``pyarrow.Table``) as the kind ``kind`` of :data:`KINDS`: the table itself
    (``"arrow"``), a pandas DataFrame (``table.to_pandas()``: strings as ``object`` columns)
    or a polars DataFrame (``polars.from_arrow``). Raises ``ValueError`` for another kind."""
    if kind == "arrow":
        return table
    if kind == "pandas":
        return table.to_pandas()
    if kind == "polars":
        import polars

        return polars.from_arrow(table)
    raise ValueError(f"unknown table kind {kind!r}: expected one of {', '.join(KINDS)}")
