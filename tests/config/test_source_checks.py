"""er_framework.config.resolve's database checks (issue 33, :func:`database_problems`): a database source needs
no path, ``er validate`` reads the header of its query or table and names every missing column at its YAML
path, the output database is checked, and the Dask executor refuses databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from er_framework.config.resolve import parse_job
from er_framework.errors import ConfigError

TAIL = (
    "blockers: [{type: field_hash, fields: [surname]}]\n"
    "verifier: {type: field_score, threshold: 100, fields: [{field: surname, scorer: exact}]}\n"
)


def _db(tmp: Path) -> None:
    with sqlite3.connect(tmp / "crm.db") as conn:
        conn.execute("CREATE TABLE customers (cid text, given text, surname text)")
        conn.execute("INSERT INTO customers VALUES ('1', 'ann', 'lee')")
    conn.close()


def _job(tmp: Path, source: str, extra: str = "") -> Path:
    path = tmp / "job.yaml"
    path.write_text("mode: dedup\nsources:\n  - name: crm\n" + source + TAIL + extra)
    return path


def _problems(path: Path, **kw: bool) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as exc:
        parse_job(path, **kw)
    return [(p.where.rsplit(":", 1)[-1], p.path, p.message + " | " + p.fix) for p in exc.value.problems]


def test_a_database_source_needs_no_path_and_valid_columns_pass(tmp_path: Path) -> None:
    _db(tmp_path)
    job = parse_job(
        _job(
            tmp_path,
            "    database: sqlite:///crm.db\n    table: customers\n    id: cid\n"
            "    fields: [first, surname]\n    columns: {first: given}\n",
        )
    )
    assert job.spec.sources[0].path is None and job.source_paths(0) == []


def test_every_missing_column_is_named_at_its_yaml_path_with_did_you_mean(tmp_path: Path) -> None:
    _db(tmp_path)
    path = _job(
        tmp_path,
        "    database: sqlite:///crm.db\n    table: customers\n    id: id\n"
        "    fields: [first, surname, surnam, city]\n    columns: {first: givn}\n",
    )
    got = _problems(path)
    assert [(line, yaml_path) for line, yaml_path, _ in got] == [
        ("6", "sources[0].id"),
        ("8", "sources[0].columns.first"),
        ("7", "sources[0].fields[2]"),
        ("7", "sources[0].fields[3]"),
    ]
    assert "no id column 'id'" in got[0][2] and "did you mean 'cid'?" in got[0][2]
    assert "no column 'givn' (read for field 'first')" in got[1][2] and "did you mean 'given'?" in got[1][2]
    assert "did you mean 'surname'?" in got[2][2] and "no column 'city'" in got[3][2]


def test_a_missing_table_a_bad_query_and_a_missing_file_are_reported_at_their_key(tmp_path: Path) -> None:
    _db(tmp_path)
    got = _problems(_job(tmp_path, "    database: sqlite:///crm.db\n    table: customer\n    id: cid\n    fields: [surname]\n"))
    assert got[0][:2] == ("5", "sources[0].table") and "did you mean 'customers'?" in got[0][2]
    got = _problems(
        _job(tmp_path, "    database: sqlite:///crm.db\n    query: SELECT nope FROM customers\n    id: cid\n    fields: [surname]\n")
    )
    assert got[0][:2] == ("5", "sources[0].query") and "no such column: nope" in got[0][2]
    got = _problems(_job(tmp_path, "    database: sqlite:///other.db\n    table: customers\n    id: cid\n    fields: [surname]\n"))
    assert got[0][:2] == ("4", "sources[0].database") and "does not exist" in got[0][2]
    assert not (tmp_path / "other.db").exists()
    got = _problems(_job(tmp_path, "    database: mysql://u@h/db\n    table: customers\n    fields: [surname]\n"))
    assert got[0][1] == "sources[0].database" and "unknown database scheme 'mysql'" in got[0][2]


def test_without_check_files_nothing_is_connected_to(tmp_path: Path) -> None:
    job = parse_job(_job(tmp_path, "    database: sqlite:///absent.db\n    table: t\n    fields: [surname]\n"), check_files=False)
    assert job.spec.sources[0].database == "sqlite:///absent.db"


def test_the_output_database_is_checked(tmp_path: Path) -> None:
    _db(tmp_path)
    source = "    database: sqlite:///crm.db\n    table: customers\n    id: cid\n    fields: [surname]\n"
    got = _problems(_job(tmp_path, source, "output: {database: 'sqlite:///nope/er.db'}\n"))
    assert got[0][1] == "output.database" and "does not exist" in got[0][2]
    got = _problems(_job(tmp_path, source, "output: {database: 'postgresql://bob:pw-77@127.0.0.1:1/x'}\n"))
    assert got[0][1] == "output.database" and "Connection refused" in got[0][2] and "pw-77" not in got[0][2]
    assert parse_job(_job(tmp_path, source, "output: {database: 'sqlite:///crm.db', prefix: run_}\n")).spec.output.prefix == "run_"


def test_a_postgres_query_is_checked_against_the_server(tmp_path: Path, postgres_url: str) -> None:
    source = f"    database: '{postgres_url}'\n    query: SELECT 1 AS cid, 'x' AS surname\n    id: cid\n    fields: [surname, given]\n"
    got = _problems(_job(tmp_path, source))
    assert got == [("7", "sources[0].fields[1]", got[0][2])] and "no column 'given'" in got[0][2]


def test_the_dask_executor_takes_database_sources_and_output(tmp_path: Path) -> None:
    _db(tmp_path)
    source = "    database: sqlite:///crm.db\n    table: customers\n    id: cid\n    fields: [surname]\n"
    extra = "executor: {type: dask, local_cluster: {n_workers: 1}}\noutput: {database: 'sqlite:///out.db'}\n"
    job = parse_job(_job(tmp_path, source, extra))
    assert job.spec.sources[0].table == "customers" and job.spec.output.database == "sqlite:///out.db"
