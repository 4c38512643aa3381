"""er_framework.io.database_read: sources read from real SQLite and DuckDB files and from the real PostgreSQL
server of the ``postgres_url`` fixture (no mocks), compared with the same data read from a CSV file (the naive
reference): values, batches, column mapping, and every problem named."""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from er_framework.errors import InputError
from er_framework.io.database import quote_identifier
from er_framework.io.database_read import db_text, read_database
from er_framework.io.fingerprint import RowsDigest
from er_framework.io.source_files import read_source
from tests.io.database_data import FIELDS, KINDS, ROWS, make_database, same_records, write_csv


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["table", "query"])
def test_a_table_or_query_reads_as_the_same_data_in_a_csv_file(kind: str, how: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = make_database(kind, tmp_path, request)
    reference = read_source(write_csv(tmp_path / "people.csv"), id_column="cid", fields=FIELDS, name="p")
    given = {"table": "people"} if how == "table" else {"query": "SELECT * FROM people ORDER BY cid;"}
    recs, stats = read_database(url, tmp_path, id_column="cid", fields=FIELDS, name="p", **given)  # type: ignore[arg-type]
    same_records(recs, reference)
    assert stats == {"database": url, "rows": len(ROWS), "sha256": stats["sha256"]} and len(stats["sha256"]) == 64
    # the values as a CSV gives them: NULL and '' missing, numbers and dates as their str, spaces kept
    assert recs.fields["given"][2] is None and recs.fields["given"][6] == "  Ed "
    assert recs.fields["age"][:2] == ["34", None] and recs.fields["score"][5] == "1e-07" and recs.fields["born"][0] == "1990-01-02"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch", [1, 2, 3, 7, 1000])
def test_batches_smaller_than_the_rows_give_the_same_records(kind: str, batch: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = make_database(kind, tmp_path, request)
    whole, _ = read_database(url, tmp_path, id_column="cid", fields=FIELDS, name="p", query="SELECT * FROM people ORDER BY cid")
    part, stats = read_database(
        url, tmp_path, id_column="cid", fields=FIELDS, name="p", query="SELECT * FROM people ORDER BY cid", batch_rows=batch
    )
    same_records(part, whole)
    assert stats["rows"] == len(ROWS)


@pytest.mark.parametrize("kind", KINDS)
def test_columns_map_the_jobs_field_names_onto_the_sources_columns(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = make_database(kind, tmp_path, request)
    recs, _ = read_database(
        url,
        tmp_path,
        id_column="cid",
        fields=["first_name", "last_name", "given"],
        columns={"first_name": "given", "last_name": "surname"},
        name="p",
        table="people",
    )
    assert list(recs.fields) == ["first_name", "last_name", "given"]
    assert recs.fields["first_name"] == recs.fields["given"] == [r[1] or None for r in ROWS]
    assert recs.fields["last_name"] == [r[2] for r in ROWS]


def test_a_many_batch_result_is_read_whole(tmp_path: Path, postgres_url: str, request: pytest.FixtureRequest) -> None:
    """2,500 rows in batches of 100 through PostgreSQL's server-side cursor, DuckDB's record batches and sqlite's
    fetchmany: the same records as the CSV file."""
    rows = [
        (f"r{i:05d}", f"name {i}", None if i % 7 == 0 else f"s{i % 13}", i, i / 8, dt.date(2000, 1, 1) + dt.timedelta(days=i))
        for i in range(2500)
    ]
    reference = read_source(write_csv(tmp_path / "many.csv", rows), id_column="cid", fields=FIELDS, name="m")
    for kind in KINDS:
        url = make_database(kind, tmp_path, request, rows)
        recs, _ = read_database(
            url, tmp_path, id_column="cid", fields=FIELDS, name="m", query="SELECT * FROM people ORDER BY cid", batch_rows=100
        )
        same_records(recs, reference)


def test_a_schema_qualified_table_and_odd_names_are_quoted(tmp_path: Path, pg_db: str) -> None:
    assert quote_identifier("crm.customers") == '"crm"."customers"'
    assert quote_identifier('we"ird') == '"we""ird"'
    with psycopg.connect(pg_db) as conn:
        conn.execute(
            'CREATE SCHEMA crm; CREATE TABLE crm."Customers" ("Id" text, "first name" text); '
            "INSERT INTO crm.\"Customers\" VALUES ('1', 'Ann')"
        )
    recs, _ = read_database(pg_db, tmp_path, id_column="Id", fields=["first name"], name="c", table="crm.Customers")
    assert recs.ids == ["1"] and recs.fields["first name"] == ["Ann"]
    with pytest.raises(InputError):  # an injected name is a name, not SQL
        read_database(pg_db, tmp_path, id_column="Id", fields=["x"], name="c", table='crm."Customers"; DROP TABLE crm."Customers"; --')
    with psycopg.connect(pg_db) as conn:
        assert conn.execute('SELECT count(*) FROM crm."Customers"').fetchone() == (1,)


@pytest.mark.parametrize("kind", KINDS)
def test_missing_columns_are_all_named_with_did_you_mean(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = make_database(kind, tmp_path, request)
    with pytest.raises(InputError) as exc:
        read_database(
            url,
            tmp_path,
            id_column="id",
            fields=["given", "surnme", "city"],
            columns={"city": "town"},
            name="crm",
            table="people",
            where="job.yaml: sources[0]",
        )
    problems = exc.value.problems
    assert [p.path for p in problems] == ["column 'id'", "column 'surnme'", "column 'town'"]
    assert "did you mean 'cid'?" in problems[0].fix and "did you mean 'surname'?" in problems[1].fix
    assert "(field 'city')" in problems[2].message
    assert all("source 'crm'" in p.where and "job.yaml: sources[0]" in p.where for p in problems)


@pytest.mark.parametrize("kind", KINDS)
def test_duplicate_and_null_ids_name_the_source_and_rows(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    rows = list(ROWS) + [
        ("a1", "Dup", None, None, None, None),
        (None, "NoId", None, None, None, None),
        ("", "Empty", None, None, None, None),
    ]
    url = make_database(kind, tmp_path, request, rows)
    with pytest.raises(InputError) as exc:
        read_database(url, tmp_path, id_column="cid", fields=["given"], name="crm", query="SELECT * FROM people ORDER BY given")
    text = str(exc.value)
    reference_rows = sorted(rows, key=lambda r: r[1])
    missing = [i + 1 for i, r in enumerate(reference_rows) if not r[0]]
    dup = [i + 1 for i, r in enumerate(reference_rows) if r[0] == "a1"]
    assert f"row {missing[0]}: the id is missing" in text and f"row {missing[1]}: the id is missing" in text
    assert f"id 'a1' appears on rows {dup[0]} and {dup[1]}" in text
    assert "source 'crm'" in text and "query 'SELECT * FROM people ORDER BY given'" in text


def test_integer_ids_and_other_values_become_text(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "n.db") as conn:
        conn.execute("CREATE TABLE t (id integer, v, d)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(7, 1.0, "x"), (8, True, ""), (9, 12345678901234567890.0, None)])
    conn.close()
    recs, _ = read_database("sqlite:///n.db", tmp_path, id_column="id", fields=["v", "d", "id"], name="n", table="t")
    assert recs.ids == ["7", "8", "9"] and recs.fields["id"] == ["7", "8", "9"]
    assert recs.fields["v"] == ["1.0", "1", "1.2345678901234567e+19"] and recs.fields["d"] == ["x", None, None]
    assert [db_text(v) for v in [Decimal("1.50"), float("nan"), [1, "é"], dt.datetime(2024, 1, 2, 3, 4), False]] == [
        "1.50",
        None,
        '[1, "é"]',
        "2024-01-02 03:04:00",
        "false",
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_binary_values_are_refused_naming_the_row(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = make_database(kind, tmp_path, request)
    cast = {"sqlite": "CAST(given AS BLOB)", "duckdb": "encode(given)", "postgresql": "convert_to(given, 'UTF8')"}[kind]
    with pytest.raises(InputError) as exc:
        read_database(url, tmp_path, id_column="cid", fields=["b"], name="crm", query=f"SELECT cid, {cast} AS b FROM people ORDER BY cid")
    problems = exc.value.problems
    assert problems[0].message == "row 1, column 'b': a binary value (4 bytes), expected text" and "CAST(col AS TEXT)" in problems[0].fix


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_result_and_a_failing_query_are_errors(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = make_database(kind, tmp_path, request)
    with pytest.raises(InputError) as exc:
        read_database(url, tmp_path, id_column="cid", fields=["given"], name="crm", query="SELECT * FROM people WHERE age > 1000")
    assert "the result has no rows" in str(exc.value)
    if kind != "sqlite":  # an error met while running the query (sqlite casts 'Anna' to 0)
        with pytest.raises(InputError) as exc:
            read_database(
                url, tmp_path, id_column="cid", fields=["x"], name="crm", query="SELECT cid, CAST(given AS integer) AS x FROM people"
            )
        assert "source 'crm'" in str(exc.value) and "Traceback" not in str(exc.value)


def test_a_record_larger_than_max_record_mb_is_refused(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "big.db") as conn:
        conn.execute("CREATE TABLE t (id text, a text, b text)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [("s", "x", "y"), ("big", "é" * 300_000, "z" * 300_000), ("t", "x", None)])
    conn.close()
    with pytest.raises(InputError) as exc:
        read_database("sqlite:///big.db", tmp_path, id_column="id", fields=["a", "b"], name="n", table="t", max_record_mb=0.5, batch_rows=2)
    (p,) = exc.value.problems
    assert p.path == "row 2" and "(id 'big') is 0.9 MB, larger than the limit of 0.5 MB (max_record_mb)" in p.message
    recs, _ = read_database("sqlite:///big.db", tmp_path, id_column="id", fields=["a", "b"], name="n", table="t", max_record_mb=1)
    assert len(recs) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_the_digest_of_the_rows_is_free_of_their_order_and_batches_and_sees_a_change(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = make_database(kind, tmp_path, request)
    read = {"id_column": "cid", "fields": FIELDS, "name": "p"}
    _, table = read_database(url, tmp_path, table="people", **read)  # type: ignore[arg-type]
    _, desc = read_database(url, tmp_path, query="SELECT * FROM people ORDER BY cid DESC", batch_rows=2, **read)  # type: ignore[arg-type]
    assert desc["sha256"] == table["sha256"]  # another order, other batches: the same rows read
    # the digest is of the rows as read: the ids and the fields' columns, as text (the naive reference: RowsDigest fed once)
    recs, _ = read_database(url, tmp_path, table="people", **read)  # type: ignore[arg-type]
    ref = RowsDigest(["cid", *FIELDS])
    ref.update([list(recs.ids), *[list(recs.fields[f]) for f in FIELDS]])
    assert table["sha256"] == ref.hexdigest()
    _, fewer = read_database(url, tmp_path, query="SELECT * FROM people WHERE cid <> 'a3'", **read)  # type: ignore[arg-type]
    assert fewer["rows"] == len(ROWS) - 1 and fewer["sha256"] != table["sha256"]
    conn: Any = sqlite3.connect(tmp_path / "people.db") if kind == "sqlite" else None
    if kind == "duckdb":
        conn = duckdb.connect(str(tmp_path / "people.duckdb"))
    elif kind == "postgresql":
        conn = psycopg.connect(url)
    with contextlib.closing(conn):
        conn.cursor().execute("UPDATE people SET surname = 'Miller' WHERE cid = 'a1'")
        conn.commit()
    _, updated = read_database(url, tmp_path, table="people", **read)  # type: ignore[arg-type]
    assert updated["rows"] == len(ROWS) and updated["sha256"] != table["sha256"]
