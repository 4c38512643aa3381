"""Test data for the database tests of tests/io: the same rows in a CSV file, a SQLite file, a DuckDB file and
a PostgreSQL database of the test server."""

from __future__ import annotations

import csv
import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from er_framework.data import Records

COLUMNS = ["cid", "given", "surname", "age", "score", "born"]
#: rows of Python values as a database holds them; None is NULL, "" an empty text
ROWS: list[tuple[Any, ...]] = [
    ("a1", "Anna", "Müller", 34, 0.8, dt.date(1990, 1, 2)),
    ("a2", "Ben", None, None, 1.5, dt.date(1985, 12, 31)),
    ("a3", "", "O'Brien", 7, None, None),
    ("a4", 'Zoë, "Zo"', "line\nbreak", 120, 2.0, dt.date(2001, 7, 4)),
    ("a5", "Carl", "Smith", 0, -3.25, dt.date(1970, 1, 1)),
    ("a6", "Dora", "Dörte", 41, 1e-07, dt.date(1999, 9, 9)),
    ("a7", "  Ed ", "Lee", 18, 100.0, dt.date(2000, 2, 29)),
]
SQL_TYPES = {"cid": "text", "given": "text", "surname": "text", "age": "bigint", "score": "double precision", "born": "date"}


def write_csv(path: Path, rows: list[tuple[Any, ...]] = ROWS) -> Path:
    """The rows as a CSV file writes them (NULL: an empty cell)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for row in rows:
            w.writerow(["" if v is None else str(v) for v in row])
    return path


def fill(conn: Any, kind: str, rows: list[tuple[Any, ...]] = ROWS, table: str = "people") -> None:
    cols = ", ".join(f"{c} {SQL_TYPES[c] if kind != 'sqlite' or c != 'born' else 'text'}" for c in COLUMNS)
    marks = ", ".join(["%s" if kind == "postgresql" else "?"] * len(COLUMNS))
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} ({cols})")
    values = rows if kind != "sqlite" else [tuple(str(v) if isinstance(v, dt.date) else v for v in r) for r in rows]
    cur.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    conn.commit()


def make_database(kind: str, tmp_path: Path, request: pytest.FixtureRequest, rows: list[tuple[Any, ...]] = ROWS) -> str:
    """A database of ``kind`` holding ``rows`` in table ``people``: its URL (relative to tmp_path)."""
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "people.db") as conn:
            fill(conn, kind, rows)
        conn.close()
        return "sqlite:///people.db"
    if kind == "duckdb":
        with duckdb.connect(str(tmp_path / "people.duckdb")) as conn:
            fill(conn, kind, rows)
        return "duckdb:///people.duckdb"
    url = str(request.getfixturevalue("pg_db"))
    with psycopg.connect(url) as conn:
        fill(conn, kind, rows)
    return url


def same_records(a: Records, b: Records) -> None:
    assert a.ids == b.ids
    assert a.source_names == b.source_names
    assert list(a.source) == list(b.source)
    assert {k: list(v) for k, v in a.fields.items()} == {k: list(v) for k, v in b.fields.items()}


KINDS = ["sqlite", "duckdb", "postgresql"]
FIELDS = ["given", "surname", "age", "score", "born"]
