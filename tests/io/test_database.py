"""er_framework.io.database: URLs, connections and headers of real SQLite and DuckDB files and of the real
PostgreSQL server of the ``postgres_url`` fixture (no mocks), and the sink's one transaction."""

from __future__ import annotations

import socket
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from er_framework.errors import InputError
from er_framework.io.database import connect, mask_url, parse_url, query_columns, table_names, write_tables
from er_framework.io.database_read import read_database
from tests.io.database_data import COLUMNS, KINDS, make_database
from tests.postgres_server import POSTGRES_TEST_PASSWORD

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
    url = make_database(kind, tmp_path, request)
    conn = connect(url, tmp_path)
    with pytest.raises(Exception, match="(?i)read.?only|readonly|cannot execute"):
        conn.cursor().execute("DELETE FROM people")
    conn.close()


# ------------------------------------------------------------------ columns and problems


@pytest.mark.parametrize("kind", KINDS)
def test_query_columns_reads_the_header_only(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = make_database(kind, tmp_path, request)
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
