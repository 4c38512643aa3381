"""A link job read from databases end to end (issue 33): source A a SQLite table, source B a PostgreSQL query with
its own column names (``columns:``), the tables written to PostgreSQL; a whole ``python -m er_framework run``
whose pairs equal the same job run on CSV files."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]
FEBRL = ROOT / "configs" / "data" / "febrl"
COLUMNS = [
    "rec_id",
    "given_name",
    "surname",
    "street_number",
    "address_1",
    "address_2",
    "suburb",
    "postcode",
    "state",
    "date_of_birth",
    "soc_sec_id",
]
#: source B's own names for some of the job's fields
B_COLUMNS = {"given_name": "first", "surname": "last", "postcode": "zip"}
N = 800

JOB = """\
name: febrl4-db
mode: link
seed: 7
sources:
{sources}
normalize:
  given_name: [name, nickname]
  surname: name
  street_number: digits
  address_1: address
  suburb: text
  postcode: digits
  date_of_birth: date
  soc_sec_id: digits
exact_duplicates: false
blockers:
  - type: field_hash
    fields: [[given_name, surname], date_of_birth, soc_sec_id, [postcode, surname]]
    max_block_size: 200
verifier:
  type: fellegi_sunter
  threshold: 0.5
  fields:
    - {{field: given_name, comparison: jaro_winkler, levels: [100, 92, 80]}}
    - {{field: surname, comparison: jaro_winkler, levels: [100, 92, 80]}}
    - {{field: date_of_birth, comparison: levenshtein, levels: [100, 80]}}
    - {{field: soc_sec_id, comparison: levenshtein, levels: [100, 85, 70]}}
    - {{field: street_number, comparison: exact}}
    - {{field: address_1, comparison: ratio, levels: [100, 85, 70]}}
    - {{field: suburb, comparison: jaro_winkler, levels: [100, 90]}}
    - {{field: postcode, comparison: levenshtein, levels: [100, 75]}}
cluster:
  type: one_to_one
output:
  format: csv
{output}
"""
FIELDS = "[given_name, surname, street_number, address_1, suburb, postcode, date_of_birth, soc_sec_id]"


def _rows(name: str) -> list[list[str | None]]:
    with open(FEBRL / name, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == COLUMNS
    return [[v or None for v in r] for r in rows[1:]]


def _data() -> tuple[list[list[str | None]], list[list[str | None]]]:
    """N records of Febrl4's A and their corrupted copies in B (rec-X-org and rec-X-dup-0)."""
    a = _rows("febrl4_a.csv")[:N]
    kept = {str(r[0]).replace("-org", "") for r in a}
    b = [r for r in _rows("febrl4_b.csv") if str(r[0]).replace("-dup-0", "") in kept]
    return a, b


def _er(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "er_framework", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _pairs(path: Path) -> list[tuple[str, ...]]:
    with open(path, newline="", encoding="utf-8") as f:
        return sorted(tuple(r) for r in list(csv.reader(f))[1:])


def test_a_sqlite_table_and_a_postgres_query_link_as_the_same_csv_files_and_write_postgres_tables(
    tmp_path: Path, postgres_url: str
) -> None:
    a, b = _data()
    assert len(b) == N
    # the CSV job: the reference
    (tmp_path / "csv").mkdir()
    for name, rows in [("a.csv", a), ("b.csv", b)]:
        with open(tmp_path / "csv" / name, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([COLUMNS, *[["" if v is None else v for v in r] for r in rows]])
    (tmp_path / "csv" / "job.yaml").write_text(
        JOB.format(
            sources=f"  - {{name: A, path: a.csv, id: rec_id, fields: {FIELDS}}}\n"
            f"  - {{name: B, path: b.csv, id: rec_id, fields: {FIELDS}}}",
            output="",
        )
    )
    ran = _er(["run", "job.yaml", "--out", "out", "-q"], tmp_path / "csv")
    assert ran.returncode == 0, ran.stderr
    # the database job: A in SQLite, B in PostgreSQL under its own column names, the output to PostgreSQL
    (tmp_path / "db").mkdir()
    with sqlite3.connect(tmp_path / "db" / "crm.db") as conn:
        conn.execute(f"CREATE TABLE customers ({', '.join(c + ' text' for c in COLUMNS)})")
        conn.executemany(f"INSERT INTO customers VALUES ({', '.join('?' * len(COLUMNS))})", a)
    conn.close()
    b_names = [B_COLUMNS.get(c, c) for c in COLUMNS]
    with psycopg.connect(postgres_url) as pg:
        pg.execute("DROP TABLE IF EXISTS feed_b")
        pg.execute(f"CREATE TABLE feed_b ({', '.join(c + ' text' for c in b_names)}, loaded integer)")
        with pg.cursor().copy(f"COPY feed_b ({', '.join(b_names)}) FROM STDIN") as copy:
            for r in b:
                copy.write_row(r)
        pg.execute("INSERT INTO feed_b (rec_id, first, loaded) VALUES ('not-loaded', 'x', 0)")
    columns = "{" + ", ".join(f"{k}: {v}" for k, v in B_COLUMNS.items()) + "}"
    sources = (
        f"  - {{name: A, database: 'sqlite:///crm.db', table: customers, id: rec_id, fields: {FIELDS}}}\n"
        f"  - name: B\n    database: '{postgres_url}'\n    query: SELECT * FROM feed_b WHERE loaded IS NULL\n"
        f"    batch_rows: 97\n    id: rec_id\n    fields: {FIELDS}\n    columns: {columns}"
    )
    (tmp_path / "db" / "job.yaml").write_text(JOB.format(sources=sources, output=f"  database: '{postgres_url}'\n  prefix: run1_"))
    checked = _er(["validate", "job.yaml"], tmp_path / "db")
    assert checked.returncode == 0, checked.stderr
    ran = _er(["run", "job.yaml", "--out", "out"], tmp_path / "db")
    assert ran.returncode == 0, ran.stderr
    expected = _pairs(tmp_path / "csv" / "out" / "pairs.csv")
    assert len(expected) > N * 0.8
    assert _pairs(tmp_path / "db" / "out" / "pairs.csv") == expected
    assert (tmp_path / "db" / "out" / "clusters.csv").read_text() == (tmp_path / "csv" / "out" / "clusters.csv").read_text()
    # the tables in PostgreSQL: the rows of the files
    with psycopg.connect(postgres_url) as pg:
        rows: list[Any] = pg.execute("SELECT left_source, left_id, right_source, right_id, score FROM run1_pairs").fetchall()
        clusters = pg.execute("SELECT count(*), count(DISTINCT cluster_id) FROM run1_clusters").fetchone()
    rows.sort()
    assert [r[:4] for r in rows] == [p[:4] for p in expected]
    assert all(abs(r[4] - float(p[4])) < 1e-6 for r, p in zip(rows, expected))
    assert clusters is not None and clusters[0] == 2 * N
    report = json.loads((tmp_path / "db" / "out" / "report.json").read_text())
    assert report["outputs_database"]["url"] == postgres_url
    verified = len(_pairs(tmp_path / "db" / "out" / "verified_pairs.csv"))
    assert report["outputs_database"]["tables"] == [
        {"name": "run1_pairs", "rows": len(expected)},
        {"name": "run1_clusters", "rows": 2 * N},
        {"name": "run1_verified_pairs", "rows": verified},
    ]
    assert f"wrote table run1_pairs ({len(expected):,} rows)" in ran.stdout
    assert report["records"]["per_source"] == {"A": N, "B": N}


def test_a_database_failure_commits_no_file(tmp_path: Path, postgres_url: str) -> None:
    """The sink fails (a view holds a table's name): the error is a message, and the output folder is not written."""
    with sqlite3.connect(tmp_path / "crm.db") as conn:
        conn.execute("CREATE TABLE c (id text, name text)")
        conn.executemany("INSERT INTO c VALUES (?, ?)", [("1", "ann lee"), ("2", "ann lee"), ("3", "bob")])
        conn.execute("CREATE VIEW er_pairs AS SELECT 1 AS x")
    conn.close()
    (tmp_path / "job.yaml").write_text(
        "mode: dedup\nsources: [{name: c, database: 'sqlite:///crm.db', table: c, fields: [name]}]\n"
        "blockers: [{type: field_hash, fields: [name]}]\n"
        "verifier: {type: field_score, threshold: 100, fields: [{field: name, scorer: exact}]}\n"
        "output: {database: 'sqlite:///crm.db'}\n"
    )
    ran = _er(["run", "job.yaml", "--out", "out"], tmp_path)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert "writing table 'er_pairs'" in ran.stderr and "rolled back" in ran.stderr
    assert not (tmp_path / "out" / "pairs.csv").exists()
    with sqlite3.connect(tmp_path / "crm.db") as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'er_%'").fetchall() == [("er_pairs",)]
    conn.close()
