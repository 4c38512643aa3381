"""er_framework.engine.stages.writing's database sink (issue 33): with ``output.database`` the tables of the
output folder are written to the database too (``prefix``), report.json names them, a rerun replaces them,
and a job may read its source from the database it writes to."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from er_framework.config.resolve import parse_job
from er_framework.engine.stages.writing import database_outputs, job_inputs
from er_framework.executors import run_job


def _job(tmp: Path, prefix: str = "er_") -> Path:
    with sqlite3.connect(tmp / "crm.db") as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS c (id text, name text, zip text)")
        conn.execute("DELETE FROM c")
        conn.executemany(
            "INSERT INTO c VALUES (?, ?, ?)", [("1", "ann lee", "1"), ("2", "ann lee", "1"), ("3", "bob", "2"), ("4", "bob", "2")]
        )
    conn.close()
    path = tmp / "job.yaml"
    path.write_text(
        "mode: dedup\nsources: [{name: c, database: 'sqlite:///crm.db', table: c, fields: [name, zip]}]\n"
        "exact_duplicates: false\n"
        "blockers: [{type: field_hash, fields: [zip]}]\n"
        "verifier: {type: field_score, threshold: 100, fields: [{field: name, scorer: exact}]}\n"
        f"output: {{database: 'sqlite:///crm.db', prefix: {prefix}}}\n"
    )
    return path


def _table(db: Path, name: str) -> list[tuple[str, ...]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
    conn.close()
    return sorted(tuple(str(v) for v in r) for r in rows)


def _file(path: Path) -> list[tuple[str, ...]]:
    with open(path, newline="", encoding="utf-8") as f:
        return sorted(tuple(r) for r in list(csv.reader(f))[1:])


def test_the_tables_of_the_folder_are_written_to_the_database(tmp_path: Path) -> None:
    job = parse_job(_job(tmp_path))
    assert [what for what, _ in job_inputs(job)] == ["the job file"]  # a database is no input file
    run_job(job, tmp_path / "out")
    db = tmp_path / "crm.db"
    clusters = _file(tmp_path / "out" / "clusters.csv")
    assert _table(db, "er_clusters") == clusters and len(clusters) == 4
    pairs = _table(db, "er_pairs")
    assert [p[:4] for p in pairs] == [p[:4] for p in _file(tmp_path / "out" / "pairs.csv")] and len(pairs) == 2
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["outputs_database"] == {
        "url": "sqlite:///crm.db",
        "tables": [{"name": "er_pairs", "rows": 2}, {"name": "er_clusters", "rows": 4}],
    }
    assert report["outputs_database"] == database_outputs(job, {"pairs": 2, "clusters": 4})
    # a rerun with another prefix adds tables; one with the same prefix replaces them
    run_job(parse_job(_job(tmp_path, "run2_")), tmp_path / "out2")
    assert _table(db, "run2_clusters") == clusters and _table(db, "er_clusters") == clusters
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM c WHERE id = '4'")
    conn.close()
    path = tmp_path / "job.yaml"
    path.write_text(path.read_text().replace("prefix: run2_", "prefix: er_"))
    run_job(parse_job(path), tmp_path / "out")
    assert len(_table(db, "er_clusters")) == 3 == len(_file(tmp_path / "out" / "clusters.csv"))


def test_a_password_is_masked_in_the_report(tmp_path: Path) -> None:
    job = parse_job(_job(tmp_path), check_files=True)
    job.spec.output.database = "postgresql://bob:s3cret@db.example/crm"
    assert database_outputs(job, {"pairs": 0})["url"] == "postgresql://bob:***@db.example/crm"


def test_er_report_reads_a_database_source_again(tmp_path: Path) -> None:
    run_job(parse_job(_job(tmp_path)), tmp_path / "out")
    (tmp_path / "out" / "report.html").unlink()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    ran = subprocess.run([sys.executable, "-m", "er_framework", "report", str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert "ann lee" in (tmp_path / "out" / "report.html").read_text()
