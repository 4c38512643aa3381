"""Golden records end to end: configs/customers.yaml with an ``output.golden`` section, run as ``python -m
er_framework run``: golden.csv has one row per cluster, every value traces to a record holding it, report.json
says the rules, and ``Result.golden`` (the Python API) equals golden.csv."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

import er_framework as er

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = {
    "rule": "most_frequent",
    "fields": {
        "email": {"rule": "most_recent", "by": "dob"},
        "address": "longest",
        "phone": {"rule": "source_priority", "order": ["B", "A"]},
    },
    "singletons": True,
}


def _job(tmp: Path, **golden: object) -> Path:
    data = yaml.safe_load((ROOT / "configs" / "customers.yaml").read_text())
    for src in data["sources"]:
        src["path"] = str(ROOT / "configs" / src["path"])
    data["output"] = {"format": "csv", "golden": {**GOLDEN, **golden}}
    path = tmp / "customers_golden.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_golden_csv_has_a_traced_row_per_cluster(tmp_path: Path) -> None:
    job = _job(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [sys.executable, "-m", "er_framework", "run", str(job), "--out", str(out), "-q"], env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    golden = _rows(out / "golden.csv")
    clusters = _rows(out / "clusters.csv")
    by_cluster: dict[str, list[dict[str, str]]] = {}
    for row in clusters:
        by_cluster.setdefault(row["cluster_id"], []).append(row)
    assert len(golden) == len(by_cluster)
    assert sorted(r["cluster_id"] for r in golden) == sorted(by_cluster)
    # the records as read, by (source, id)
    records = {}
    for name, file in (("A", "a.csv"), ("B", "b.csv")):
        for row in _rows(ROOT / "configs" / "data" / "customers" / file):
            records[(name, row["id"])] = row
    fields = ["first_name", "last_name", "address", "city", "zip", "phone", "email", "dob"]
    for g in golden:
        members = {(m["source"], m["id"]) for m in by_cluster[g["cluster_id"]]}
        assert int(g["size"]) == len(members)
        for f in fields:
            if g[f] == "":
                assert g[f"{f}_source"] == "" and all(records[m][f].strip() == "" for m in members)
                continue
            src = (g[f"{f}_source"], g[f"{f}_id"])
            assert src in members, f"cluster {g['cluster_id']}: {f} comes from {src}, not one of its records"
            assert records[src][f] == g[f], f"cluster {g['cluster_id']}: {f} {g[f]!r} is not the value of {src}"
        # source_priority [B, A]: the phone comes from B whenever a B record of the cluster has one
        if any(s == "B" and records[(s, i)]["phone"].strip() for s, i in members):
            assert g["phone_source"] == "B"
    report = json.loads((out / "report.json").read_text())
    assert report["golden"]["rows"] == len(golden)
    assert report["golden"]["fields"]["email"] == {"rule": "most_recent", "by": "dob", "filled": sum(1 for g in golden if g["email"])}
    assert report["golden"]["fields"]["phone"]["order"] == ["B", "A"]
    assert "golden.csv" in report["outputs"]
    # the pairs and clusters are those of the job without golden records
    plain = tmp_path / "plain"
    data = yaml.safe_load(job.read_text())
    del data["output"]["golden"]
    (tmp_path / "plain.yaml").write_text(yaml.safe_dump(data))
    res = subprocess.run(
        [sys.executable, "-m", "er_framework", "run", str(tmp_path / "plain.yaml"), "--out", str(plain), "-q"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert (plain / "pairs.csv").read_text() == (out / "pairs.csv").read_text()
    assert (plain / "clusters.csv").read_text() == (out / "clusters.csv").read_text()
    assert not (plain / "golden.csv").exists()


def test_result_golden_equals_golden_csv_and_singletons_false(tmp_path: Path) -> None:
    result = er.run(_job(tmp_path, singletons=False))
    result.write(tmp_path / "out")
    frame = result.golden
    assert isinstance(frame, pd.DataFrame) or hasattr(frame, "to_pandas")
    got = frame if isinstance(frame, pd.DataFrame) else frame.to_pandas()
    written = pd.read_csv(tmp_path / "out" / "golden.csv", dtype=str, keep_default_na=False)
    assert len(got) == len(written) and (got["size"] >= 2).all()
    assert list(got.columns) == list(written.columns)
    for col in written.columns:
        assert got[col].fillna("").astype(str).tolist() == written[col].tolist(), col
    assert result.table("golden").shape == got.shape
