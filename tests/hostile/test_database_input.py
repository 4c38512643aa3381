"""Hostile database sources and sinks (issue 33): every case is a whole ``er`` process that must end with a clear
message (exit 2, no traceback), never create a database file it reads, never show a password, and never change
a database it reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from tests.hostile.conftest import run_er

TAIL = (
    "blockers: [{type: field_hash, fields: [name]}]\n"
    "verifier: {type: field_score, threshold: 100, fields: [{field: name, scorer: exact}]}\n"
)


def _db(tmp: Path, rows: list[tuple[object, ...]] | None = None) -> None:
    with sqlite3.connect(tmp / "crm.db") as conn:
        conn.execute("CREATE TABLE c (id, name)")
        conn.executemany("INSERT INTO c VALUES (?, ?)", rows or [("1", "ann"), ("2", "bob")])
    conn.close()


def _job(tmp: Path, source: str, extra: str = "") -> Path:
    path = tmp / "job.yaml"
    path.write_text(f"mode: dedup\nsources: [{{name: crm, {source}, fields: [name]}}]\n" + TAIL + extra)
    return path


@pytest.mark.parametrize(
    ("source", "needles"),
    [
        ("database: 'sqlit:///crm.db', table: c", ["sources[0].database", "unknown database scheme", "did you mean 'sqlite'?"]),
        ("database: 'crm.db', table: c", ["has no scheme"]),
        ("database: 'sqlite:///missing.db', table: c", ["missing.db", "does not exist"]),
        ("database: 'sqlite:///crm.db', table: cc", ["sources[0].table", "did you mean 'c'?"]),
        ("database: 'sqlite:///crm.db', table: 'c\"; DROP TABLE c; --'", ["sources[0].table", "cannot be read"]),
        ("database: 'sqlite:///crm.db', query: 'SELECT id FROM c'", ["sources[0].fields[0]", "no column 'name'"]),
        ("database: 'sqlite:///crm.db', query: 'DROP TABLE c'", ["sources[0].query", "cannot be read"]),
        ("database: 'postgresql://u@127.0.0.1:1/x?password=hunter2secret', table: c", ["connection refused", "password=***"]),
        ("database: 'postgresql://u:${ER_UNSET_VAR_X}@h/x', table: c", ["ER_UNSET_VAR_X", "not set"]),
        ("database: 'sqlite:///job.yaml', table: c", ["sources[0]"]),
        ("database: 'sqlite:///.', table: c", ["is a folder"]),
    ],
)
def test_a_bad_database_source_is_a_clear_error(source: str, needles: list[str], tmp_path: Path) -> None:
    _db(tmp_path)
    for command in ["validate", "run"]:
        ran = run_er([command, _job(tmp_path, source), "--out", tmp_path / "out"][: 2 if command == "validate" else 4], cwd=tmp_path)
        ran.assert_clean_error(2, *needles)
        assert "hunter2secret" not in ran.err + ran.out
    assert not (tmp_path / "missing.db").exists() and not (tmp_path / "out" / "pairs.csv").exists()
    with sqlite3.connect(tmp_path / "crm.db") as conn:
        assert conn.execute("SELECT count(*) FROM c").fetchone() == (2,)
    conn.close()


@pytest.mark.parametrize(
    ("rows", "needles"),
    [
        ([("1", "ann"), (None, "bob"), ("1", "cy")], ["row 2: the id is missing", "id '1' appears on rows 1 and 3"]),
        ([("1", "ann"), ("2", b"\x00\xff")], ["row 2, column 'name': a binary value (2 bytes)", "cast"]),
        ([("1", "x" * 2_000_000)], ["max_record_mb"]),
    ],
)
def test_bad_rows_are_clear_errors_naming_the_source(rows: list[tuple[object, ...]], needles: list[str], tmp_path: Path) -> None:
    _db(tmp_path, rows)
    path = _job(tmp_path, "database: 'sqlite:///crm.db', table: c, max_record_mb: 1")
    run_er(["run", path, "--out", tmp_path / "out"], cwd=tmp_path).assert_clean_error(2, "source 'crm'", *needles)


def test_an_empty_result_is_an_error(tmp_path: Path) -> None:
    _db(tmp_path)
    path = _job(tmp_path, "database: 'sqlite:///crm.db', query: 'SELECT * FROM c WHERE 0'")
    run_er(["run", path, "--out", tmp_path / "out"], cwd=tmp_path).assert_clean_error(2, "the result has no rows")


def test_a_bad_output_database_commits_nothing(tmp_path: Path) -> None:
    _db(tmp_path)
    (tmp_path / "folder.db").mkdir()
    for url, needle in [
        ("sqlite:///nope/er.db", "does not exist"),
        ("sqlite:///folder.db", "is a folder"),
        ("sqlit:///x.db", "did you mean"),
    ]:
        path = _job(tmp_path, "database: 'sqlite:///crm.db', table: c", f"output: {{database: '{url}'}}\n")
        run_er(["run", path, "--out", tmp_path / "out"], cwd=tmp_path).assert_clean_error(2, "output.database", needle)
        assert not (tmp_path / "out" / "pairs.csv").exists()


def test_a_query_cannot_change_a_postgres_database(tmp_path: Path, postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as pg:
        pg.execute("DROP TABLE IF EXISTS hostile_c")
        pg.execute("CREATE TABLE hostile_c (id text, name text)")
        pg.execute("INSERT INTO hostile_c VALUES ('1', 'ann'), ('2', 'bob')")
    for query in [
        "WITH d AS (DELETE FROM hostile_c RETURNING *) SELECT * FROM d",
        "SELECT * FROM hostile_c; DELETE FROM hostile_c",
        "SELECT id, name FROM hostile_c WHERE pg_catalog.set_config('default_transaction_read_only', 'off', false) IS NULL",
    ]:
        path = _job(tmp_path, f"database: '{postgres_url}', query: \"{query}\"")
        ran = run_er(["run", path, "--out", tmp_path / "out"], cwd=tmp_path)
        assert "Traceback" not in ran.err and ran.code in (0, 2), ran.err
    with psycopg.connect(postgres_url) as pg:
        assert pg.execute("SELECT count(*) FROM hostile_c").fetchone() == (2,)


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_a_file_that_is_not_a_database_is_neither_read_nor_written(kind: str, tmp_path: Path) -> None:
    """DuckDB 2 opens any file without an error (a CSV, an input of the job), and the tables 'written' there
    were lost while the run said it wrote them: a file of another kind is refused, as a source and as the
    output database, and left as it was."""
    _db(tmp_path)
    csv_file = tmp_path / "people.csv"
    csv_file.write_bytes(b"id,name\n1,ann\n2,bob\n")
    before = csv_file.read_bytes()
    path = _job(tmp_path, "database: 'sqlite:///crm.db', table: c", f"output: {{database: '{kind}:///people.csv'}}\n")
    run_er(["run", path, "--out", tmp_path / "out"], cwd=tmp_path).assert_clean_error(2, "output.database", f"is not a {kind} database")
    assert not (tmp_path / "out" / "pairs.csv").exists()
    path = _job(tmp_path, f"database: '{kind}:///people.csv', table: c")
    run_er(["run", path, "--out", tmp_path / "out"], cwd=tmp_path).assert_clean_error(2, "sources[0].database", f"is not a {kind} database")
    assert csv_file.read_bytes() == before
