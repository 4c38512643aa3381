"""er_framework.engine.stages.reading with database sources (issue 33): a source read from a SQLite or DuckDB
table gives the records the same data gives as a CSV file, its fields under the job's names (``columns:``),
with reading statistics; problems of every source are reported together."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import duckdb
import pytest

from er_framework.config.resolve import parse_job
from er_framework.engine.stages.reading import read, read_database_source
from er_framework.errors import InputError

ROWS = [("1", "Ann", "Lee", "2000"), ("2", "Bob", None, "3000"), ("3", "", "Ng", "2000")]


def _data(tmp: Path) -> None:
    with open(tmp / "a.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("id", "first", "last", "zip"), *[["" if v is None else v for v in r] for r in ROWS]])
    with sqlite3.connect(tmp / "b.db") as conn:
        conn.execute("CREATE TABLE people (pid text, given text, surname text, postcode text)")
        conn.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", ROWS)
    conn.close()
    with duckdb.connect(str(tmp / "c.duckdb")) as conn:
        conn.execute("CREATE TABLE people (id VARCHAR, first VARCHAR, last VARCHAR, zip VARCHAR)")
        conn.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", ROWS)


def _job(tmp: Path, b: str = "table: people") -> Path:
    path = tmp / "job.yaml"
    path.write_text(
        "mode: link_and_dedup\nsources:\n"
        "  - {name: A, path: a.csv, fields: [first, last, zip]}\n"
        f"  - {{name: B, database: 'sqlite:///b.db', {b}, id: pid, fields: [first, last, zip], "
        "columns: {first: given, last: surname, zip: postcode}}\n"
        "  - {name: C, database: 'duckdb:///c.duckdb', query: SELECT * FROM people ORDER BY id, fields: [first, last, zip]}\n"
        "blockers: [{type: field_hash, fields: [zip]}]\n"
        "verifier: {type: field_score, threshold: 100, fields: [{field: last, scorer: exact}]}\n"
    )
    return path


def test_database_sources_read_as_the_same_csv_file(tmp_path: Path) -> None:
    _data(tmp_path)
    job = parse_job(_job(tmp_path))
    assert job.spec.sources[1].read_options()["columns"] == {"first": "given", "last": "surname", "zip": "postcode"}
    records, stats = read(job)
    assert records.source_names == ["A", "B", "C"]
    n = len(ROWS)
    assert records.ids == ["1", "2", "3"] * 3
    for f in ["first", "last", "zip"]:
        col = list(records.fields[f])
        assert col[:n] == col[n : 2 * n] == col[2 * n :]
    assert list(records.fields["first"][:n]) == ["Ann", "Bob", None]
    assert stats["B"]["database"] == "sqlite:///b.db" and stats["B"]["rows"] == n and stats["B"]["seconds"] >= 0
    assert stats["C"]["rows"] == n
    recs, st = read_database_source(job, 2)
    assert recs.source_names == ["C"] and st["database"] == "duckdb:///c.duckdb"


def test_problems_of_every_source_are_reported_together(tmp_path: Path) -> None:
    _data(tmp_path)
    path = _job(tmp_path, "query: SELECT * FROM people UNION ALL SELECT * FROM people")
    job = parse_job(path)
    (tmp_path / "a.csv").write_text("id,first,last,zip\n1,a,b,c\n1,a,b,c\n")
    with pytest.raises(InputError) as exc:
        read(job)
    text = str(exc.value)
    assert "a.csv" in text and "source 'B'" in text and text.count("duplicated id") == 2
