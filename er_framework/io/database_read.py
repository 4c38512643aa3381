"""Reading a database source (issue 33): the rows of a SQL query or table as the
:class:`~er_framework.data.Records` of one source (the URLs and connections are :mod:`er_framework.io.database`'s).

The rows are fetched ``batch_rows`` at a time (a psycopg server-side cursor for PostgreSQL, Arrow record
batches for DuckDB, ``fetchmany`` for SQLite) into the column lists the file readers produce, then made
records by :func:`~er_framework.io.source_files.records_from_columns` (the ids checked as for files). Values
become text as a CSV file gives them: NULL and ``''`` are missing (``None``), numbers, dates and decimals their
``str`` (``7``, ``0.8``, ``2024-01-31``), booleans ``true``/``false``; binary values are refused, naming the row.
While the batches are read, a digest of the rows as read is computed (:class:`~er_framework.io.fingerprint.RowsDigest`,
order-free): report.json records it, and ``er explain`` compares it with the digest of what it reads again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.data import Records
from er_framework.errors import InputError, Problem, closest_column
from er_framework.io.column_map import ColumnMap
from er_framework.io.data_file import Capped, Locator, snippet
from er_framework.io.database import (
    connect,
    driver_errors,
    driver_message,
    from_clause,
    kind_of,
    parse_url,
    query_columns,
    quote_identifier_part,
    reset_after_error,
    source_text,
)
from er_framework.io.fingerprint import RowsDigest
from er_framework.io.formats import DEFAULT_MAX_RECORD_MB, RECORD_FIX, mb_text, record_limit
from er_framework.io.source_files import records_from_columns

__all__ = ["DEFAULT_BATCH_ROWS", "DatabaseRows", "db_text", "read_database", "read_database_rows", "records_of_rows"]

#: rows fetched per batch when none is given (a source's ``batch_rows``)
DEFAULT_BATCH_ROWS = 50000


def db_text(value: Any) -> str | None:
    """A database value as the text a CSV file gives (see the module's doc); bytes raise TypeError."""
    if value is None:
        return None
    cls = value.__class__
    if cls is str:
        return value or None
    if cls is bool:
        return "true" if value else "false"
    if cls is int:
        return str(value)
    if cls is float:
        return None if value != value else ("Infinity" if value == math.inf else "-Infinity" if value == -math.inf else repr(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError("binary")
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, str):
        return str(value) or None
    return str(value)


def _texts(col: Sequence[Any], column: str, first_row: int, binary: Capped, loc: str) -> list[str | None]:
    kinds = set(map(type, col))
    if kinds <= {str, type(None)}:
        return [v or None for v in col] if "" in col else list(col)
    out: list[str | None] = []
    for i, v in enumerate(col):
        try:
            out.append(db_text(v))
        except TypeError:
            row = first_row + i
            binary.add(loc, f"row {row}, column {column!r}: a binary value ({len(bytes(v))} bytes), expected text", f"row {row}")
            out.append(None)
    return out


def _batches(conn: Any, sql: str, batch_rows: int) -> Iterator[list[list[Any]]]:
    """The result of ``sql`` in batches of at most ``batch_rows`` rows, each as its columns' value lists."""
    kind = kind_of(conn)
    if kind == "duckdb":
        rel = conn.sql(sql)  # DuckDB 2 calls it to_arrow_reader, DuckDB 1 fetch_arrow_reader
        reader = rel.to_arrow_reader(batch_rows) if hasattr(rel, "to_arrow_reader") else rel.fetch_arrow_reader(batch_rows)
        for batch in reader:
            yield [c.to_pylist() for c in batch.columns]
        return
    if kind == "postgresql":
        cur = conn.cursor(name="er_read")  # a server-side cursor: the server keeps the rows not fetched yet
        cur.itersize = batch_rows
    else:
        cur = conn.cursor()
    try:
        cur.execute(sql)
        while True:
            rows = cur.fetchmany(batch_rows)
            if not rows:
                return
            yield [list(c) for c in zip(*rows)]
    finally:
        cur.close()


def _check_sizes(columns: list[list[str | None]], ids: list[str | None], first_row: int, limit: int, origin: str) -> None:
    """:class:`InputError` for the first row whose text is more than ``limit`` bytes (``max_record_mb``);
    a batch whose text all together is within the limit costs one pass of ``len`` per value."""
    total = sum(sum(map(len, filter(None, col))) for col in columns)
    if total <= limit // 4:
        return
    n = len(columns[0]) if columns else 0
    chars = np.zeros(n, dtype=np.int64)
    for col in columns:
        chars += np.fromiter((len(v) if v else 0 for v in col), dtype=np.int64, count=n)
    for i in np.flatnonzero(chars * 4 > limit).tolist():  # a character is at most 4 bytes of UTF-8
        size = sum(len(v.encode("utf-8")) for col in columns if (v := col[i]))
        if size > limit:
            row = first_row + i
            shown = f" (id {snippet(str(ids[i]), 40)})" if ids[i] is not None else ""
            raise InputError(
                Problem(
                    origin,
                    f"the record on row {row}{shown} is {mb_text(size)}, larger than the limit of {mb_text(limit)} (max_record_mb)",
                    f"row {row}",
                    RECORD_FIX,
                )
            )


@dataclass(frozen=True)
class DatabaseRows:
    """A database source's result as read (:func:`read_database_rows`): where it is (messages name it), the
    columns fetched (the id column first), how the job's fields map onto them, and the reading statistics."""

    origin: str
    wanted: list[str]
    mapping: ColumnMap
    stats: dict[str, Any]


def read_database(
    url: str,
    base_dir: str | Path = ".",
    *,
    id_column: str,
    fields: Sequence[str],
    name: str,
    query: str | None = None,
    table: str | None = None,
    columns: Mapping[str, str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    layout: str = "wide",
    max_record_mb: float | None = DEFAULT_MAX_RECORD_MB,
    where: str | None = None,
) -> tuple[Records, dict[str, Any]]:
    """The rows of ``query`` or ``table`` on the database of ``url`` as the :class:`Records` of source ``name``
    and the reading statistics (``database``: the URL masked, ``rows``, ``sha256``: the digest of the rows as read,
    the id and the fields' columns, :class:`~er_framework.io.fingerprint.RowsDigest`: independent of the rows' order).

    ``fields`` are the job's field names; ``columns`` maps a field to the result's column holding it (a field
    not in it is read from the column of its own name). Only the id column and those columns are fetched,
    ``batch_rows`` rows at a time. Raises :class:`InputError` with every problem: the connection's, missing
    columns (each with did-you-mean), binary values, missing/duplicate ids, a result without rows, a record
    larger than ``max_record_mb``."""
    raw: dict[str, list[str | None]] = {}

    def keep(first_row: int, wanted: list[str], texts: list[list[str | None]]) -> None:
        for c, values in zip(wanted, texts):
            raw.setdefault(c, []).extend(values)

    read = read_database_rows(
        url,
        base_dir,
        id_column=id_column,
        fields=fields,
        name=name,
        query=query,
        table=table,
        columns=columns,
        batch_rows=batch_rows,
        max_record_mb=max_record_mb,
        where=where,
        on_batch=keep,
    )
    return records_of_rows(read, raw, id_column=id_column, name=name, layout=layout), read.stats


def read_database_rows(
    url: str,
    base_dir: str | Path,
    *,
    id_column: str,
    fields: Sequence[str],
    name: str,
    on_batch: Callable[[int, list[str], list[list[str | None]]], None],
    query: str | None = None,
    table: str | None = None,
    columns: Mapping[str, str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    max_record_mb: float | None = DEFAULT_MAX_RECORD_MB,
    where: str | None = None,
) -> DatabaseRows:
    """The rows of ``query`` or ``table`` as text, ``batch_rows`` at a time: ``on_batch(first_row, wanted columns,
    their texts)`` takes each batch (rows numbered from 1 in the result's order), so that a reader holds what it
    keeps only (:func:`read_database` keeps every row; an executor may write them out in parts). The checks and
    errors are :func:`read_database`'s, but for the ids' (:func:`records_of_rows`)."""
    db = parse_url(url, base_dir, where=where or "", path="database")
    origin = f"{where}: " if where else ""
    origin += f"source {name!r} ({db.shown}, {source_text(query, table)})"
    conn = connect(db, base_dir, where=origin, path="database")
    kind = kind_of(conn)
    try:
        present = query_columns(conn, query=query, table=table, where=origin, path=_part(table))
        mapping = ColumnMap(fields, columns)
        source_of = mapping.of
        if source_of.get(id_column, id_column) != id_column:
            raise InputError(
                Problem(
                    origin,
                    f"the field {id_column!r} is the id column, but columns: reads it from {source_of[id_column]!r}",
                    "columns",
                    "read the id's field from the id column, or name another id column (id:)",
                )
            )
        wanted = list(dict.fromkeys([id_column, *mapping.read]))
        problems = _missing_columns(wanted, present, source_of, id_column, origin)
        if problems:
            raise InputError(problems)
        sql = f"SELECT {', '.join(quote_identifier_part(c) for c in wanted)} FROM {from_clause(query, table)}"
        binary = Capped(
            origin, "binary values", "cast the column to text in the query (CAST(col AS TEXT), encode(col, 'hex')), or leave it out"
        )
        limit = record_limit(max_record_mb)
        rows = 0
        digest = RowsDigest(wanted)
        try:
            for batch in _batches(conn, sql, batch_rows):
                texts = [_texts(col, c, rows + 1, binary, origin) for c, col in zip(wanted, batch)]
                if limit is not None:
                    _check_sizes(texts, texts[0], rows + 1, limit, origin)
                digest.update(texts)
                on_batch(rows + 1, wanted, texts)
                rows += len(texts[0])
        except driver_errors(kind) as exc:
            reset_after_error(conn, kind)
            raise InputError(
                Problem(origin, f"reading the rows failed: {driver_message(exc, db)}", _part(table), "check the query and the database")
            ) from None
    finally:
        conn.close()
    bad = binary.problems()
    if bad:
        raise InputError(bad)
    if rows == 0:
        raise InputError(
            Problem(
                origin,
                "the result has no rows: a source needs at least one record",
                _part(table),
                "check the query's WHERE clause, or the table's contents",
            )
        )
    return DatabaseRows(origin, wanted, mapping, {"database": db.shown, "rows": rows, "sha256": digest.hexdigest()})


def records_of_rows(
    read: DatabaseRows, raw: dict[str, list[str | None]], *, id_column: str, name: str, layout: str = "wide", rows: str = ""
) -> Records:
    """The :class:`Records` of rows of a database source (``raw``: the texts of ``read.wanted``, every row or a
    part; ``rows``: which rows they are, for messages, e.g. ``"rows 1-50000"``), the ids checked and the job's
    field names given to the columns (``columns:``)."""
    origin = f"{read.origin} {rows}" if rows else read.origin
    loc = Locator(origin, None, "row")
    recs = records_from_columns(
        {c: raw.get(c, []) for c in read.wanted},
        loc,
        [],
        file=origin,
        id_column=id_column,
        fields=read.mapping.read,
        name=name,
        fmt="csv",
        layout=layout,
    )
    return read.mapping.records(recs)


def _missing_columns(wanted: list[str], present: list[str], source_of: dict[str, str], id_column: str, origin: str) -> list[Problem]:
    """A problem for each column of ``wanted`` the result does not have (naming the field read from it)."""
    problems = []
    for col in wanted:
        if col in present:
            continue
        named = [f for f, c in source_of.items() if c == col and f != c]
        as_field = f" (field {named[0]!r})" if named else (" (the id column)" if col == id_column else "")
        problems.append(
            Problem(
                origin,
                f"the result has no column {col!r}{as_field}; its columns are {present}",
                f"column {col!r}",
                f"{closest_column(col, present)}name a column of the result (columns: maps a field to its column), "
                "or select it in the query",
            )
        )
    return problems


def _part(table: str | None) -> str:
    return "table" if table is not None else "query"
