"""``training: {labels: FILE}`` on Dask: the labels' records found on the workers, their codes computed where the
records are, one fit on the client: the model, the report's training sections and the answer are the local run's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.engine.model import load_model
from er_framework.errors import ErError
from er_framework.executors import run_job
from er_framework.executors.dask_scan import ExactPart, task_find_ids, task_representatives

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "configs" / "data" / "febrl"

#: report sections that describe where and how the run went, not the data (as in test_dask_sections.py), and the
#: sections a Dask run does not gather yet (docs/guide/dask.md)
HOW = {"stages", "seconds_total", "peak_rss_mb", "config", "config_resolved", "config_hash", "executor", "inputs", "outputs"}
HOW |= {"workers", "sources", "tokens", "diagnostics", "normalize", "blockers"}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _write_labels(path: Path, rows: list[tuple[str, str, str, str, str]]) -> None:
    lines = ["left_source,left_id,right_source,right_id,match"] + [",".join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _job(name: str, tmp: Path, tag: str, edit: dict, executor: dict | None = None, sources: dict[str, Path] | None = None) -> Path:
    data = yaml.safe_load((ROOT / "configs" / name).read_text(encoding="utf-8"))
    for src in data["sources"]:
        src["path"] = str((sources or {}).get(src["name"], (ROOT / "configs" / src["path"]).resolve()))
    data.get("output", {}).pop("dir", None)
    data.update(edit)
    if executor is not None:
        data["executor"] = executor
    path = tmp / f"{tag}-{name}"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _febrl4_labels(tmp: Path) -> Path:
    """40 true matches and 40 non-matches of febrl4 (a labelled pair of the same side reversed too)."""
    truth = _rows(DATA / "febrl4_truth.csv")
    rng = np.random.default_rng(3)
    pick = rng.choice(len(truth), 80, replace=False)
    rows = [("A", truth[i]["a_id"], "B", truth[i]["b_id"], "1") for i in pick[:40]]
    # a non-match: an A record with the B record of another entity; one written B first
    rows += [("A", truth[i]["a_id"], "B", truth[j]["b_id"], "0") for i, j in zip(pick[40:], pick[41:])]
    rows.append(("B", truth[pick[0]]["b_id"], "A", truth[pick[1]]["a_id"], "no"))
    rows.append(("A", truth[pick[2]]["a_id"], "B", truth[pick[2]]["b_id"], ""))  # unlabelled: skipped
    path = tmp / "labels.csv"
    _write_labels(path, rows)
    return path


def _run_both(
    name: str, tmp: Path, cluster: LocalCluster, edit: dict, mb: float, sources: dict[str, Path] | None = None
) -> tuple[dict, dict]:
    executor = {"type": "dask", "address": cluster.scheduler_address, "partition_mb": mb}
    run_job(parse_job(_job(name, tmp, "local", edit, None, sources)), tmp / "local")
    run_job(parse_job(_job(name, tmp, "dask", edit, executor, sources)), tmp / "dask")
    local = json.loads((tmp / "local" / "report.json").read_text())
    dask = json.loads((tmp / "dask" / "report.json").read_text())
    return local, dask


def _same_answer(tmp: Path, local: dict, dask: dict) -> None:
    assert dask["executor"]["partitions"] >= 2
    assert set(dask) == set(local)
    for key in sorted(set(local) - HOW):
        assert dask[key] == local[key], key
    for table in ("pairs.csv", "clusters.csv"):
        assert (tmp / "dask" / table).read_bytes() == (tmp / "local" / table).read_bytes(), table
    assert (
        json.loads((tmp / "dask" / "model.json").read_text())["verifier"]
        == json.loads((tmp / "local" / "model.json").read_text())["verifier"]
    )


@pytest.mark.parametrize("labels_fit", ["refine", "em", "labels"])
def test_a_link_job_trained_on_dask_equals_the_local_run(tmp_path: Path, dask_cluster: LocalCluster, labels_fit: str) -> None:
    labels = _febrl4_labels(tmp_path)
    data = yaml.safe_load((ROOT / "configs" / "febrl4.yaml").read_text(encoding="utf-8"))
    verifier = {**data["verifier"], "labels_fit": labels_fit}
    local, dask = _run_both("febrl4.yaml", tmp_path, dask_cluster, {"training": {"labels": str(labels)}, "verifier": verifier}, 0.3)
    assert local["training"]["matches"] == 40 and local["training"]["non_matches"] == 40
    assert local["training"]["unlabelled_rows"] == 1
    assert local["threshold_curve"]["over"].startswith("the 80 labelled pairs")
    assert local["model"]["trained_on_labels"]["sha256"] == local["training"]["sha256"]
    _same_answer(tmp_path, local, dask)


def _febrl3_with_copies(tmp: Path) -> tuple[Path, list[str]]:
    """febrl3 with exact copies of a few records under new ids (the exact stage collapses them)."""
    rows = _rows(DATA / "febrl3.csv")
    fields = list(rows[0])
    copied = rows[:12:3]  # 4 records, each copied once
    extra = [{**r, "rec_id": f"copy-{i}"} for i, r in enumerate(copied)]
    path = tmp / "febrl3.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows + extra)
    return path, [r["rec_id"] for r in copied]


def test_a_dedup_job_with_exact_copies_trains_on_their_representatives(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    """A labelled copy stands for its representative; a pair of two copies of one text is dropped, as locally."""
    data_path, copied = _febrl3_with_copies(tmp_path)
    truth = _rows(DATA / "febrl3_truth.csv")
    entity = {r["id"]: r["entity"] for r in truth}
    by_entity: dict[str, list[str]] = {}
    for r in truth:
        by_entity.setdefault(r["entity"], []).append(r["id"])
    groups = [ids for ids in by_entity.values() if len(ids) >= 2][:30]
    rows = [("febrl3", g[0], "febrl3", g[1], "1") for g in groups]
    rows += [("febrl3", a[0], "febrl3", b[0], "0") for a, b in zip(groups, groups[1:])]
    for i, c in enumerate(copied):  # a copy labelled with another record of its entity
        others = [x for x in by_entity[entity[c]] if x != c]
        rows += [("febrl3", f"copy-{i}", "febrl3", others[0], "1")] if others else []
    rows.append(("febrl3", "copy-0", "febrl3", copied[0], "1"))  # two copies of one text
    labels = tmp_path / "labels.csv"
    _write_labels(labels, rows)
    edit = {"training": {"labels": str(labels)}, "exact_duplicates": True}
    local, dask = _run_both("febrl3.yaml", tmp_path, dask_cluster, edit, 0.2, {"febrl3": data_path})
    assert local["exact_duplicates"]["records_collapsed"] >= 4
    assert local["training"]["pairs_of_exact_copies"] >= 1
    _same_answer(tmp_path, local, dask)


def test_a_saved_trained_model_applied_on_dask_draws_the_labels_curve(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    """With a saved model the labels are not learned from again; the report's curve over them is the local one."""
    labels = _febrl4_labels(tmp_path)
    edit = {"training": {"labels": str(labels)}}
    fitted = tmp_path / "fitted"
    run_job(parse_job(_job("febrl4.yaml", tmp_path, "fit", edit)), fitted)
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.3}
    model = load_model(fitted / "model.json")
    run_job(parse_job(_job("febrl4.yaml", tmp_path, "local", edit)), tmp_path / "local", model=model)
    run_job(parse_job(_job("febrl4.yaml", tmp_path, "dask", edit, executor)), tmp_path / "dask", model=model)
    local = json.loads((tmp_path / "local" / "report.json").read_text())
    dask = json.loads((tmp_path / "dask" / "report.json").read_text())
    assert "training" not in local and local["threshold_curve"]["over"].startswith("the 80 labelled pairs")
    _same_answer(tmp_path, local, dask)


def test_an_unknown_id_in_the_labels_is_reported_before_the_expensive_stages(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    labels = tmp_path / "labels.csv"
    truth = _rows(DATA / "febrl4_truth.csv")
    _write_labels(labels, [("A", truth[0]["a_id"], "B", "no-such-id", "1"), ("A", truth[1]["a_id"], "B", truth[1]["b_id"], "0")])
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.3}
    with pytest.raises(ErError, match="no record 'no-such-id' in source 'B'") as err:
        run_job(parse_job(_job("febrl4.yaml", tmp_path, "dask", {"training": {"labels": str(labels)}}, executor)), tmp_path / "dask")
    assert "labels.csv:2" in str(err.value)
    assert not (tmp_path / "dask" / "report.json").exists()


def test_the_find_and_representative_tasks_against_a_naive_lookup() -> None:
    rng = np.random.default_rng(0)
    ids = np.array([f"r{i}" for i in rng.permutation(500)], dtype=object)
    wanted = [f"r{i}" for i in rng.choice(700, 60, replace=False)]
    got_ids, got_idx = task_find_ids(ids, 1000, wanted)
    naive = {str(x): 1000 + k for k, x in enumerate(ids.tolist()) if x in set(wanted)}
    assert dict(zip(got_ids, got_idx.tolist())) == naive
    part = ExactPart(np.array([3, 3, 10]), np.array([7, 9, 12]), [], np.zeros(4, np.int64))
    copies, reps = task_representatives(part, np.array([9, 10, 12, 40]))
    assert dict(zip(copies.tolist(), reps.tolist())) == {9: 3, 12: 10}
