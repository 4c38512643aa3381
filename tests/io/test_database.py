"""er_framework.io.database: sources read from real SQLite and DuckDB files and from the real PostgreSQL server of
the ``postgres_url`` fixture (no mocks), compared with the same data read from a CSV file (the naive reference),
and the sink's one transaction."""

from __future__ import annotations

import csv
import datetime as dt
import socket
import sqlite3
import urllib.parse
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import psycopg
import pytest

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.database import (
    connect,
    db_text,
    mask_url,
    parse_url,
    query_columns,
    quote_identifier,
    read_database,
    table_names,
    write_tables,
)
from er_framework.io.source_files import read_source
from tests.conftest import POSTGRES_TEST_PASSWORD

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


def _csv(path: Path, rows: list[tuple[Any, ...]] = ROWS) -> Path:
    """The rows as a CSV file writes them (NULL: an empty cell)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for row in rows:
            w.writerow(["" if v is None else str(v) for v in row])
    return path


def _fill(conn: Any, kind: str, rows: list[tuple[Any, ...]] = ROWS, table: str = "people") -> None:
    cols = ", ".join(f"{c} {SQL_TYPES[c] if kind != 'sqlite' or c != 'born' else 'text'}" for c in COLUMNS)
    marks = ", ".join(["%s" if kind == "postgresql" else "?"] * len(COLUMNS))
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} ({cols})")
    values = rows if kind != "sqlite" else [tuple(str(v) if isinstance(v, dt.date) else v for v in r) for r in rows]
    cur.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    conn.commit()


@pytest.fixture
def pg_db(postgres_url: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database on the test server, for one test: its URL."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_url.replace("/er_test?", f"/{name}?")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _database(kind: str, tmp_path: Path, request: pytest.FixtureRequest, rows: list[tuple[Any, ...]] = ROWS) -> str:
    """A database of ``kind`` holding ``rows`` in table ``people``: its URL (relative to tmp_path)."""
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "people.db") as conn:
            _fill(conn, kind, rows)
        conn.close()
        return "sqlite:///people.db"
    if kind == "duckdb":
        with duckdb.connect(str(tmp_path / "people.duckdb")) as conn:
            _fill(conn, kind, rows)
        return "duckdb:///people.duckdb"
    url = str(request.getfixturevalue("pg_db"))
    with psycopg.connect(url) as conn:
        _fill(conn, kind, rows)
    return url


def _same(a: Records, b: Records) -> None:
    assert a.ids == b.ids
    assert a.source_names == b.source_names
    assert list(a.source) == list(b.source)
    assert {k: list(v) for k, v in a.fields.items()} == {k: list(v) for k, v in b.fields.items()}


KINDS = ["sqlite", "duckdb", "postgresql"]
FIELDS = ["given", "surname", "age", "score", "born"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["table", "query"])
def test_a_table_or_query_reads_as_the_same_data_in_a_csv_file(kind: str, how: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _database(kind, tmp_path, request)
    reference = read_source(_csv(tmp_path / "people.csv"), id_column="cid", fields=FIELDS, name="p")
    given = {"table": "people"} if how == "table" else {"query": "SELECT * FROM people ORDER BY cid;"}
    recs, stats = read_database(url, tmp_path, id_column="cid", fields=FIELDS, name="p", **given)  # type: ignore[arg-type]
    _same(recs, reference)
    assert stats == {"database": url, "rows": len(ROWS)}
    # the values as a CSV gives them: NULL and '' missing, numbers and dates as their str, spaces kept
    assert recs.fields["given"][2] is None and recs.fields["given"][6] == "  Ed "
    assert recs.fields["age"][:2] == ["34", None] and recs.fields["score"][5] == "1e-07" and recs.fields["born"][0] == "1990-01-02"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch", [1, 2, 3, 7, 1000])
def test_batches_smaller_than_the_rows_give_the_same_records(kind: str, batch: int, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _database(kind, tmp_path, request)
    whole, _ = read_database(url, tmp_path, id_column="cid", fields=FIELDS, name="p", query="SELECT * FROM people ORDER BY cid")
    part, stats = read_database(
        url, tmp_path, id_column="cid", fields=FIELDS, name="p", query="SELECT * FROM people ORDER BY cid", batch_rows=batch
    )
    _same(part, whole)
    assert stats["rows"] == len(ROWS)


@pytest.mark.parametrize("kind", KINDS)
def test_columns_map_the_jobs_field_names_onto_the_sources_columns(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _database(kind, tmp_path, request)
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
    reference = read_source(_csv(tmp_path / "many.csv", rows), id_column="cid", fields=FIELDS, name="m")
    for kind in KINDS:
        url = _database(kind, tmp_path, request, rows)
        recs, _ = read_database(
            url, tmp_path, id_column="cid", fields=FIELDS, name="m", query="SELECT * FROM people ORDER BY cid", batch_rows=100
        )
        _same(recs, reference)


# ------------------------------------------------------------------ URLs and connections


def test_urls_are_understood_and_their_passwords_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_url("sqlite:///data/x.db", tmp_path).file == (tmp_path / "data/x.db").resolve()
    assert parse_url("sqlite:////abs/x.db", tmp_path).file == Path("/abs/x.db")
    assert parse_url("duckdb:///x.duckdb", tmp_path).kind == "duckdb"
    assert parse_url("postgres://u@h/db", tmp_path).conninfo == "postgresql://u@h/db"
    assert mask_url("postgresql://bob:s3cret@db.example:5432/crm") == "postgresql://bob:***@db.example:5432/crm"
    assert (
        mask_url("postgresql:///crm?host=/run&password=s3cret&sslmode=require")
        == "postgresql:///crm?host=/run&password=***&sslmode=require"
    )
    assert mask_url("sqlite:///x.db") == "sqlite:///x.db"
    monkeypatch.setenv("ER_TEST_PW", "p@ss:word")
    url = parse_url("postgresql://bob:${ER_TEST_PW}@h/db", tmp_path)
    assert url.conninfo == "postgresql://bob:p@ss:word@h/db" and url.shown == "postgresql://bob:***@h/db"
    assert url.scrub("failed for p@ss:word") == "failed for ***"
    monkeypatch.delenv("ER_TEST_PW")
    with pytest.raises(InputError) as exc:
        parse_url("postgresql://bob:${ER_TEST_PW}@h/db", tmp_path, where="job.yaml:3", path="sources[0].database")
    (p,) = exc.value.problems
    assert "ER_TEST_PW, which is not set" in p.message and p.where == "job.yaml:3" and p.path == "sources[0].database"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqllite:///x.db", "did you mean 'sqlite'?"),
        ("mysql://u@h/db", "write sqlite:///"),
        ("customers.db", "has no scheme"),
        ("sqlite://", "names no database file"),
    ],
)
def test_a_bad_url_is_a_clear_error(url: str, said: str, tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        connect(url, tmp_path, where="job.yaml", path="sources[0].database")
    text = str(exc.value)
    assert said in text and "Traceback" not in text


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_a_missing_database_file_is_an_error_and_is_not_created(kind: str, tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_database(
            f"{kind}:///nope.db", tmp_path, id_column="cid", fields=["given"], name="crm", table="people", where="job.yaml: sources[0]"
        )
    (p,) = exc.value.problems
    assert "does not exist" in p.message and "source 'crm'" in p.where and "nope.db" in p.message
    assert not (tmp_path / "nope.db").exists()


def test_a_file_that_is_not_a_database_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.db").write_text("id,name\n1,a\n")
    for kind in ["sqlite", "duckdb"]:
        with pytest.raises(InputError) as exc:
            read_database(f"{kind}:///x.db", tmp_path, id_column="id", fields=["name"], name="s", table="t")
        assert "source 's'" in str(exc.value) and "Traceback" not in str(exc.value)
    assert (tmp_path / "x.db").read_text() == "id,name\n1,a\n"


def test_connection_refused_and_no_server_on_the_socket_are_clear_errors(tmp_path: Path) -> None:
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for url in [f"postgresql://er@127.0.0.1:{port}/x", f"postgresql://er@/x?host={tmp_path}"]:
        with pytest.raises(InputError) as exc:
            connect(url, tmp_path, where="job.yaml:4", path="sources[1].database")
        (p,) = exc.value.problems
        assert p.message.startswith(f"cannot connect to {url!r}") and "start the server" in p.fix


def test_authentication_failed_is_a_clear_error_without_the_password(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = urllib.parse.parse_qs(urllib.parse.urlparse(postgres_url).query)["host"][0]
    url = f"postgresql://er_pw:wrong-pw-123@/er_test?host={host}"
    with pytest.raises(InputError) as exc:
        connect(url, tmp_path)
    text = str(exc.value)
    assert "password authentication failed" in text and "wrong-pw-123" not in text and "er_pw:***@" in text and "PGPASSWORD" in text
    monkeypatch.setenv("PGPASSWORD", POSTGRES_TEST_PASSWORD)  # libpq's environment applies
    conn = connect(f"postgresql://er_pw@/er_test?host={host}", tmp_path)
    assert conn.execute("SELECT current_user").fetchone() == ("er_pw",)
    conn.close()
    monkeypatch.delenv("PGPASSWORD")
    monkeypatch.setenv("ER_TEST_PW", POSTGRES_TEST_PASSWORD)  # or ${VAR} in the URL
    conn = connect(f"postgresql://er_pw:${{ER_TEST_PW}}@/er_test?host={host}", tmp_path)
    conn.close()
    with pytest.raises(InputError) as exc:
        connect(f"postgresql://er@/no_such_db?host={host}", tmp_path)
    assert "no_such_db" in str(exc.value) and "database name" in str(exc.value)


@pytest.mark.parametrize("kind", KINDS)
def test_reading_is_read_only(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _database(kind, tmp_path, request)
    conn = connect(url, tmp_path)
    with pytest.raises(Exception, match="(?i)read.?only|readonly|cannot execute"):
        conn.cursor().execute("DELETE FROM people")
    conn.close()


# ------------------------------------------------------------------ columns and problems


@pytest.mark.parametrize("kind", KINDS)
def test_query_columns_reads_the_header_only(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _database(kind, tmp_path, request)
    conn = connect(url, tmp_path)
    assert query_columns(conn, table="people") == COLUMNS
    assert query_columns(conn, query="SELECT cid, given AS first FROM people WHERE age > 1000") == ["cid", "first"]
    assert "people" in table_names(conn)
    with pytest.raises(InputError) as exc:
        query_columns(conn, table="peple", where="job.yaml:5", path="sources[0].table")
    (p,) = exc.value.problems
    assert "table 'peple' cannot be read" in p.message and "did you mean 'people'?" in p.fix and p.path == "sources[0].table"
    with pytest.raises(InputError) as exc:
        query_columns(conn, query="SELEC * FROM people")
    assert "query 'SELEC * FROM people' cannot be read" in str(exc.value) and "correct the SQL" in str(exc.value)
    assert query_columns(conn, table="people") == COLUMNS  # the connection still works (PostgreSQL: rolled back)
    conn.close()


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
    url = _database(kind, tmp_path, request)
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
    url = _database(kind, tmp_path, request, rows)
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
    url = _database(kind, tmp_path, request)
    cast = {"sqlite": "CAST(given AS BLOB)", "duckdb": "encode(given)", "postgresql": "convert_to(given, 'UTF8')"}[kind]
    with pytest.raises(InputError) as exc:
        read_database(url, tmp_path, id_column="cid", fields=["b"], name="crm", query=f"SELECT cid, {cast} AS b FROM people ORDER BY cid")
    problems = exc.value.problems
    assert problems[0].message == "row 1, column 'b': a binary value (4 bytes), expected text" and "CAST(col AS TEXT)" in problems[0].fix


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_result_and_a_failing_query_are_errors(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _database(kind, tmp_path, request)
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


# ------------------------------------------------------------------ the sink


def _tables(n: int, tag: str) -> dict[str, dict[str, Any]]:
    return {
        "pairs": {
            "left_id": np.asarray([f"{tag}{i}" for i in range(n)], dtype=object),
            "right_id": np.asarray([None if i == 1 else f"r{i}" for i in range(n)], dtype=object),
            "score": np.linspace(0, 1, n),
        },
        "clusters": {"id": np.asarray([f"{tag}{i}" for i in range(n)], dtype=object), "cluster_id": np.arange(n, dtype=np.int64)},
    }


def _read_table(url: str, base: Path, table: str) -> list[tuple[Any, ...]]:
    conn = connect(url, base)
    cur = conn.cursor()
    cur.execute(f'SELECT * FROM "{table}" ORDER BY 1')
    rows = [tuple(r) for r in cur.fetchall()]
    conn.close()
    return rows


def _sink_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return {"sqlite": "sqlite:///out/er.db", "duckdb": "duckdb:///out/er.duckdb"}.get(kind) or str(request.getfixturevalue("pg_db"))


@pytest.mark.parametrize("kind", KINDS)
def test_the_sink_writes_every_table_and_a_rerun_replaces_them(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _sink_url(kind, tmp_path, request)
    (tmp_path / "out").mkdir()
    written = write_tables(url, tmp_path, "er_", _tables(4, "a"))
    assert written == [{"name": "er_pairs", "rows": 4}, {"name": "er_clusters", "rows": 4}]
    assert _read_table(url, tmp_path, "er_pairs") == [("a0", "r0", 0.0), ("a1", None, 1 / 3), ("a2", "r2", 2 / 3), ("a3", "r3", 1.0)]
    assert _read_table(url, tmp_path, "er_clusters") == [(f"a{i}", i) for i in range(4)]
    conn = connect(url, tmp_path)
    types = {
        "sqlite": "SELECT type FROM pragma_table_info('er_pairs')",
        "duckdb": "SELECT data_type FROM information_schema.columns WHERE table_name = 'er_pairs' ORDER BY ordinal_position",
        "postgresql": "SELECT data_type FROM information_schema.columns WHERE table_name = 'er_pairs' ORDER BY ordinal_position",
    }[kind]
    cur = conn.cursor()
    cur.execute(types)
    text, double = ("varchar", "double") if kind == "duckdb" else ("text", "double precision")
    assert [str(r[0]).lower() for r in cur.fetchall()] == [text, text, double]
    conn.close()
    write_tables(url, tmp_path, "er_", _tables(2, "b"))  # a rerun: the tables replaced
    assert _read_table(url, tmp_path, "er_clusters") == [("b0", 0), ("b1", 1)]
    write_tables(url, tmp_path, "run2_", {"pairs": _tables(3, "c")["pairs"]})  # another prefix: other tables
    assert [r[0] for r in _read_table(url, tmp_path, "run2_pairs")] == ["c0", "c1", "c2"]
    assert [r[0] for r in _read_table(url, tmp_path, "er_pairs")] == ["b0", "b1"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_midway_leaves_the_earlier_runs_tables_intact(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _sink_url(kind, tmp_path, request)
    (tmp_path / "out").mkdir()
    write_tables(url, tmp_path, "er_", _tables(3, "old"))
    bad = _tables(5, "new")
    bad["zzz"] = {"v": np.asarray(["fine", object()], dtype=object)}  # the last table cannot be written
    with pytest.raises(InputError) as exc:
        write_tables(url, tmp_path, "er_", bad, where="job.yaml")
    assert "er_zzz" in str(exc.value)
    assert [r[0] for r in _read_table(url, tmp_path, "er_pairs")] == ["old0", "old1", "old2"]
    assert [r[0] for r in _read_table(url, tmp_path, "er_clusters")] == ["old0", "old1", "old2"]
    # a failure inside the database (a view of a table's name cannot be dropped as a table): rolled back too
    conn = connect(url, tmp_path, write=True)
    cur = conn.cursor()
    cur.execute('CREATE VIEW "er_view" AS SELECT 1 AS x')
    if kind != "sqlite":
        conn.commit()
    conn.close()
    with pytest.raises(InputError) as exc:
        write_tables(url, tmp_path, "er_", {**_tables(5, "new"), "view": {"x": np.arange(3)}})
    assert "writing table 'er_view'" in str(exc.value) and "rolled back" in str(exc.value)
    assert [r[0] for r in _read_table(url, tmp_path, "er_pairs")] == ["old0", "old1", "old2"]


def test_a_sink_in_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    for kind in ["sqlite", "duckdb"]:
        with pytest.raises(InputError) as exc:
            write_tables(f"{kind}:///nope/er.db", tmp_path, "er_", _tables(2, "a"), where="job.yaml:9", path="output.database")
        (p,) = exc.value.problems
        assert "does not exist" in p.message and p.path == "output.database"
    assert not (tmp_path / "nope").exists()


def test_a_million_rows_are_written_in_seconds_not_minutes(tmp_path: Path, pg_db: str) -> None:
    """The bulk paths (sqlite executemany, DuckDB's Arrow insert, PostgreSQL COPY) write every row; no
    clock is read: a row-by-row INSERT path would make this test crawl rather than fail."""
    n = 1_000_000
    tables = {"pairs": {"left_id": np.asarray([f"l{i}" for i in range(n)], dtype=object), "score": np.arange(n) / n}}
    for url in ["sqlite:///m.db", "duckdb:///m.duckdb", pg_db]:
        assert write_tables(url, tmp_path, "er_", tables) == [{"name": "er_pairs", "rows": n}]
        conn = connect(url, tmp_path)
        cur = conn.cursor()
        cur.execute('SELECT count(*), max(left_id), sum(score) FROM "er_pairs"')
        count, top, total = cur.fetchone()
        conn.close()
        assert (count, top) == (n, "l999999") and total == pytest.approx((n - 1) / 2)
