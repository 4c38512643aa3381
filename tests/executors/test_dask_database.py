"""Database sources on Dask: each read once on a worker into pieces (io/database_parts.py), the partitions made
of consecutive pieces: the records, their order, the reading statistics and the answer are the local run's."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.errors import ErError
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "configs" / "data" / "febrl"


def _table(db: Path, name: str, csv_path: Path, renamed: dict[str, str] | None = None) -> list[str]:
    with csv_path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        head = next(reader)
        rows = list(reader)
    cols = [(renamed or {}).get(h, h) for h in head]
    with sqlite3.connect(db) as con:
        con.execute(f"CREATE TABLE {name} ({', '.join(f'{c} TEXT' for c in cols)})")
        con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in cols)})", [[v or None for v in r] for r in rows])
    return cols


def _job(tmp: Path, tag: str, executor: dict | None, output_db: Path | None = None) -> Path:
    """configs/febrl4.yaml with A a SQLite table under other column names and B a SQL query; A's CSV too."""
    data = yaml.safe_load((ROOT / "configs" / "febrl4.yaml").read_text(encoding="utf-8"))
    a, b = data["sources"]
    db = tmp / "crm.db"
    if not db.exists():
        _table(db, "a", DATA / "febrl4_a.csv", {"given_name": "first", "surname": "last"})
        _table(db, "b", DATA / "febrl4_b.csv")
    del a["path"], b["path"]
    a.update(database=f"sqlite:///{db}", table="a", columns={"given_name": "first", "surname": "last"}, batch_rows=700)
    b.update(database=f"sqlite:///{db}", query="SELECT * FROM b WHERE rec_id NOT LIKE 'rec-1%'")
    data.get("output", {}).pop("dir", None)
    if output_db is not None:
        data.setdefault("output", {}).update(database=f"sqlite:///{output_db}", prefix="er_")
    if executor is not None:
        data["executor"] = executor
    path = tmp / f"{tag}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_database_sources_on_dask_give_the_local_answer(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.1}
    run_job(parse_job(_job(tmp_path, "local", None)), tmp_path / "local")
    run_job(parse_job(_job(tmp_path, "dask", executor)), tmp_path / "dask")
    local = json.loads((tmp_path / "local" / "report.json").read_text())
    dask = json.loads((tmp_path / "dask" / "report.json").read_text())
    assert dask["executor"]["partitions"] >= 4  # both sources in several partitions
    for table in ("pairs.csv", "clusters.csv"):
        assert (tmp_path / "dask" / table).read_bytes() == (tmp_path / "local" / table).read_bytes(), table
    for name in ("A", "B"):
        mine, theirs = dask["sources"][name], local["sources"][name]
        assert {k: v for k, v in mine.items() if k != "seconds"} == {k: v for k, v in theirs.items() if k != "seconds"}
    assert local["sources"]["B"]["rows"] < 5000 and local["records"] == dask["records"]
    assert not [p for p in (tmp_path / "dask").iterdir() if p.name.startswith(".er-tmp")]  # the pieces are gone


def _tables(db: Path) -> dict[str, tuple[list[tuple[str, str]], list[tuple]]]:
    """Each table's columns with their declared types, and its rows with SQLite's type of every value."""
    out = {}
    with sqlite3.connect(db) as con:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            cols = [(r[1], r[2]) for r in con.execute(f"PRAGMA table_info({name})")]
            typed = ", ".join(f"{c}, typeof({c})" for c, _ in cols)
            out[name] = (cols, sorted(con.execute(f"SELECT {typed} FROM {name}").fetchall(), key=repr))
    return out


def test_output_database_on_dask_holds_the_local_tables(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    """The tables' parts streamed into the database in one transaction: the same tables, types and rows as a
    local run writes; report.json's outputs_database alike."""
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.1}
    run_job(parse_job(_job(tmp_path, "local", None, tmp_path / "local.db")), tmp_path / "local")
    run_job(parse_job(_job(tmp_path, "dask", executor, tmp_path / "dask.db")), tmp_path / "dask")
    local, dask = _tables(tmp_path / "local.db"), _tables(tmp_path / "dask.db")
    assert {"er_pairs", "er_clusters"} <= set(local) and len(local["er_pairs"][1]) > 1000
    assert dask == local
    rep = {t: json.loads((tmp_path / t / "report.json").read_text())["outputs_database"] for t in ("local", "dask")}
    assert rep["dask"]["tables"] == rep["local"]["tables"] and rep["dask"]["url"].endswith("dask.db")


def test_a_bad_row_read_on_a_worker_is_the_local_error(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    """A problem found only while reading (a binary value) names its row as locally; nothing is written."""
    path = _job(tmp_path, "dask", {"type": "dask", "address": dask_cluster.scheduler_address})
    with sqlite3.connect(tmp_path / "crm.db") as con:
        con.execute("UPDATE b SET surname = ? WHERE rec_id = (SELECT rec_id FROM b WHERE rec_id NOT LIKE 'rec-1%' LIMIT 1)", (b"\x00\x01",))
    local = tmp_path / "local.yaml"
    local.write_text(path.read_text().replace("executor:", "old_executor:").split("old_executor:")[0])
    with pytest.raises(ErError) as expected:
        run_job(parse_job(local), tmp_path / "local")
    with pytest.raises(ErError) as err:
        run_job(parse_job(path), tmp_path / "dask")
    assert "binary value" in str(err.value) and "row 1, column 'surname'" in str(err.value)
    assert str(err.value) == str(expected.value).replace("local.yaml", "dask.yaml")
    assert not (tmp_path / "dask" / "report.json").exists()
    assert not [p for p in (tmp_path / "dask").iterdir() if p.name.startswith(".er-tmp")]
