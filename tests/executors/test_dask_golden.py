"""Golden records on Dask (executors/dask_golden.py): the local run's golden table, built on the workers.

End to end on customers3 (three sources, link mode: every cluster of two or more records spans files, so
partitions) with every built-in rule, in several partitions: golden.csv byte for byte, golden.parquet as a
table and report.json's ``golden`` section equal to the local run's. Without a cluster: the split and the
parts, run as tasks in this process, against ``golden_table`` on all the records at once (the naive
reference), with a field only one source reads and a ``by:`` field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.engine import stages
from er_framework.engine.stages.golden import golden_plan, golden_section, golden_table
from er_framework.executors import run_job
from er_framework.executors.dask import plan_parts
from er_framework.executors.dask_golden import (
    GoldenPiece,
    golden_columns,
    golden_fields,
    merge_golden_sections,
    task_golden_part,
    task_golden_section,
    task_golden_split,
)
from er_framework.executors.dask_tasks import JobRef, read_part

ROOT = Path(__file__).resolve().parents[2]

#: every built-in rule: the default, longest, source_priority with an order, most_recent by a date field
GOLDEN = {
    "rule": "most_frequent",
    "fields": {
        "address": "longest",
        "phone": {"rule": "source_priority", "order": ["C", "B"]},
        "email": {"rule": "most_recent", "by": "dob"},
        "city": "source_priority",
    },
}


def _job(tmp: Path, tag: str, executor: dict[str, Any] | None, singletons: bool, fmt: str = "csv") -> Path:
    data = yaml.safe_load((ROOT / "configs" / "customers3.yaml").read_text(encoding="utf-8"))
    for src in data["sources"]:
        src["path"] = str((ROOT / "configs" / src["path"]).resolve())
    data["output"] = {"format": fmt, "golden": {**GOLDEN, "singletons": singletons}}
    if executor is not None:
        data["executor"] = executor
    path = tmp / f"{tag}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _spanning(out: Path) -> int:
    """How many clusters of the run have records of two or more sources (each source is its own files)."""
    import csv

    with (out / "clusters.csv").open(encoding="utf-8", newline="") as f:
        seen: dict[str, set[str]] = {}
        for row in csv.DictReader(f):
            seen.setdefault(row["cluster_id"], set()).add(row["source"])
    return sum(len(s) > 1 for s in seen.values())


@pytest.mark.parametrize("singletons", [True, False])
def test_golden_csv_and_report_equal_the_local_run(tmp_path: Path, dask_cluster: LocalCluster, singletons: bool) -> None:
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.05}
    run_job(parse_job(_job(tmp_path, "local", None, singletons)), tmp_path / "local")
    run_job(parse_job(_job(tmp_path, "dask", executor, singletons)), tmp_path / "dask")
    local = json.loads((tmp_path / "local" / "report.json").read_text(encoding="utf-8"))
    dask = json.loads((tmp_path / "dask" / "report.json").read_text(encoding="utf-8"))
    assert dask["executor"]["partitions"] >= 3
    assert _spanning(tmp_path / "dask") > 100  # clusters whose members lie in several partitions
    assert dask["golden"] == local["golden"]
    assert dask["golden"]["singletons"] is singletons
    assert "golden.csv" in dask["outputs"]
    golden = (tmp_path / "dask" / "golden.csv").read_bytes()
    assert golden == (tmp_path / "local" / "golden.csv").read_bytes()
    rows = golden.decode().splitlines()
    assert len(rows) == 1 + dask["golden"]["rows"]
    clusters = dask["clusters"]
    assert len(rows) - 1 == (clusters["count"] if singletons else clusters["count"] - clusters["singletons"])
    for table in ("pairs.csv", "clusters.csv"):
        assert (tmp_path / "dask" / table).read_bytes() == (tmp_path / "local" / table).read_bytes(), table


def test_golden_parquet_equals_the_local_table(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    import pyarrow.parquet as pq

    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.05}
    run_job(parse_job(_job(tmp_path, "local", None, True, "parquet")), tmp_path / "local")
    run_job(parse_job(_job(tmp_path, "dask", executor, True, "parquet")), tmp_path / "dask")
    local = pq.read_table(tmp_path / "local" / "golden.parquet")
    folder = tmp_path / "dask" / "golden"
    assert (folder / "_manifest.json").is_file()
    dask = pq.read_table(folder)
    assert dask.column_names == local.column_names
    assert dask.num_rows == local.num_rows > 0
    assert dask.to_pylist() == local.to_pylist()
    report = json.loads((tmp_path / "dask" / "report.json").read_text(encoding="utf-8"))
    assert report["golden"] == json.loads((tmp_path / "local" / "report.json").read_text(encoding="utf-8"))["golden"]


# ---------------------------------------------------------------- the tasks, in this process


def _two_sources(tmp: Path) -> Path:
    """A link job whose source B lacks the field ``note`` and whose records carry an ``updated`` date."""
    a = ["id,name,note,updated"] + [f"a{i},name {i % 7},note {i % 3},2024-01-{1 + i % 28:02d}" for i in range(60)]
    b = ["id,name,updated"] + [f"b{i},name {5 + i % 5},2023-12-{1 + i % 28:02d}" for i in range(50)]
    (tmp / "a.csv").write_text("\n".join(a) + "\n", encoding="utf-8")
    (tmp / "b.csv").write_text("\n".join(b) + "\n", encoding="utf-8")
    job = {
        "name": "two",
        "mode": "link",
        "sources": [
            {"name": "A", "path": "a.csv", "id": "id", "fields": ["name", "note", "updated"]},
            {"name": "B", "path": "b.csv", "id": "id", "fields": ["name", "updated"]},
        ],
        "blockers": [{"type": "field_hash", "fields": ["name"]}],
        "verifier": {"type": "field_score", "threshold": 50, "fields": [{"field": "name", "scorer": "ratio"}]},
        "output": {"golden": {"rule": "longest", "fields": {"name": {"rule": "most_recent", "by": "updated"}}, "singletons": False}},
    }
    path = tmp / "two.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return path


def _ref(path: Path, job: Any) -> JobRef:
    text = path.read_text(encoding="utf-8")
    return JobRef(text, str(path.resolve()), str(job.base_dir), hashlib.sha256((text + str(job.base_dir)).encode()).hexdigest())


def _canonical(raw: np.ndarray) -> np.ndarray:
    """Cluster ids 0 .. count-1 in order of each cluster's first record (as the Dask run numbers them)."""
    _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse]


def test_the_parts_in_order_are_golden_table_on_all_records(tmp_path: Path) -> None:
    path = _two_sources(tmp_path)
    job = parse_job(path)
    ref = _ref(path, job)
    parts = plan_parts(job, 0.0005)  # byte ranges of ~500 bytes: several partitions per file
    assert len(parts) >= 4
    records = stages.read(job)[0]  # the local run's records as read, all sources
    n = len(records)
    # clusters across sources and partitions: a record's cluster by its name (link pairs A-B of one name)
    names = np.asarray(records.fields["name"], dtype=object)
    labels = _canonical(np.unique(names, return_inverse=True)[1])
    sizes = [len(read_part(p, job.spec.sources[p.source])) for p in parts]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    assert offsets[-1] == n
    owner = np.searchsorted(offsets, np.arange(n), side="right") - 1
    first_of = np.full(int(labels.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first_of, labels, np.arange(n))
    assert len(np.unique(owner[labels == labels[0]])) > 1  # a cluster spanning partitions
    base = np.searchsorted(owner[first_of], np.arange(len(parts) + 1), side="left").astype(np.int64)
    split = [task_golden_split(ref, p, labels[offsets[i] : offsets[i + 1]], base) for i, p in enumerate(parts)]
    assert all(len(s) == len(parts) for s in split)
    tables = [task_golden_part(ref, *[s[k] for s in split]) for k in range(len(parts))]
    whole = golden_table(records, labels, golden_plan(job), singletons=False)
    assert list(whole) == golden_columns(job)
    for column in whole:
        joined = np.concatenate([np.asarray(t[column], dtype=object) for t in tables])
        assert joined.tolist() == np.asarray(whole[column], dtype=object).tolist(), column
    assert any(v is None for v in whole["note"]) and any(v is not None for v in whole["note"])  # B has no note
    sections = [task_golden_section(ref, t) for t in tables]
    assert merge_golden_sections(sections) == golden_section(job, whole)
    assert golden_fields(job) == ["name", "note", "updated"]


def test_a_piece_without_a_field_gives_missing_values(tmp_path: Path) -> None:
    path = _two_sources(tmp_path)
    job = parse_job(path)
    ref = _ref(path, job)
    a = GoldenPiece(0, np.array([0, 1], dtype=np.int64), ["a1", "a2"], {"name": ["x", "y"], "note": ["n1", None], "updated": ["1", "2"]})
    b = GoldenPiece(1, np.array([0, 1], dtype=np.int64), ["b1", "b2"], {"name": ["xx", "y"], "updated": ["3", None]})
    table = task_golden_part(ref, a, b)
    assert table["cluster_id"].tolist() == [0, 1] and table["size"].tolist() == [2, 2]
    assert table["name"].tolist() == ["xx", "y"]  # most_recent by updated: b1 (3) in cluster 0, a2 (2) in cluster 1
    assert table["name_source"].tolist() == ["B", "A"]
    assert table["note"].tolist() == ["n1", None] and table["note_source"].tolist() == ["A", ""]
    empty = task_golden_part(ref)
    assert list(empty) == golden_columns(job) and len(empty["cluster_id"]) == 0


def test_merging_sections_sums_rows_and_filled_values() -> None:
    one = {"rows": 2, "singletons": True, "table": "golden", "fields": {"x": {"rule": "longest", "filled": 1}}}
    two = {"rows": 3, "singletons": True, "table": "golden", "fields": {"x": {"rule": "longest", "filled": 3}}}
    assert merge_golden_sections([one, two]) == {**one, "rows": 5, "fields": {"x": {"rule": "longest", "filled": 4}}}
    assert one["rows"] == 2 and one["fields"]["x"]["filled"] == 1  # the inputs are not changed
    with pytest.raises(ValueError, match="no golden sections"):
        merge_golden_sections([])
