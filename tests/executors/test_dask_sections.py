"""The Dask executor's report sections, merged from the workers' summaries, are the local run's on the shipped
configs (the client holds no record); the Python API on Dask gives DataFrames read from the workers' tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.executors import run_job
from tests.shipped_jobs import shipped_job

ROOT = Path(__file__).resolve().parents[2]

#: sections a Dask run reports differently, on purpose: where and how it ran, its token counts' two keys of its
#: own (tokens_report: chunks are partitions), and the timings
DIFFERENT = {
    "stages",
    "seconds_total",
    "peak_rss_mb",
    "config",
    "config_resolved",
    "config_hash",
    "executor",
    "inputs",
    "outputs",
    "workers",
    "tokens",
}


def _job(name: str, tmp: Path, executor: dict | None, tag: str, in_memory: bool = False) -> Path:
    return shipped_job(name, tmp, tag, executor=executor, in_memory=in_memory)


@pytest.mark.parametrize("name, mb", [("documents.yaml", 0.02), ("febrl4.yaml", 0.3), ("customers3.yaml", 0.05), ("news.yaml", 0.5)])
def test_every_report_section_equals_the_local_run(tmp_path: Path, dask_cluster: LocalCluster, name: str, mb: float) -> None:
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": mb}
    run_job(parse_job(_job(name, tmp_path, None, "local")), tmp_path / "local")
    run_job(parse_job(_job(name, tmp_path, executor, "dask")), tmp_path / "dask")
    local = json.loads((tmp_path / "local" / "report.json").read_text())
    dask = json.loads((tmp_path / "dask" / "report.json").read_text())
    assert dask["executor"]["partitions"] >= (1 if name == "news.yaml" else 2)  # news: one page folder
    assert set(dask) == set(local)
    for key in sorted(set(local) - DIFFERENT):
        assert dask[key] == local[key], key
    for table in ("pairs.csv", "clusters.csv"):
        assert (tmp_path / "dask" / table).read_bytes() == (tmp_path / "local" / table).read_bytes(), table
    page = (tmp_path / "dask" / "report.html").read_text()
    assert "Largest clusters" in page and "could not be drawn" not in page


def test_a_split_html_source_of_several_files_reports_its_reading_as_locally(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    """HTML extracted per partition of two JSON Lines files (a glob): the counts summed, the empty pages'
    positions those within the source (more than are shown), ``files``: every section equals the local run's."""
    import yaml

    rows = [json.loads(line) for line in (ROOT / "configs" / "data" / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, row in enumerate(rows):
        row["text"] = "<div><script>x()</script></div>" if i % 7 == 3 else f"<p>{row['text']}</p>" if i % 2 else row["text"]
    half = len(rows) // 2
    for name, chunk in (("a.jsonl", rows[:half]), ("b.jsonl", rows[half:])):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in chunk), encoding="utf-8")
    reports = {}
    for tag, executor in (("local", None), ("dask", {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.01})):
        data = yaml.safe_load(_job("documents.yaml", tmp_path, executor, tag).read_text(encoding="utf-8"))
        data["sources"][0].update({"path": str(tmp_path / "*.jsonl"), "html": {"fields": ["text"]}})
        job = tmp_path / f"{tag}-html.yaml"
        job.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        run_job(parse_job(job), tmp_path / tag)
        reports[tag] = json.loads((tmp_path / tag / "report.json").read_text())
    local, dask = reports["local"], reports["dask"]
    assert dask["executor"]["partitions"] >= 4
    html = local["sources"]["docs"]["html:text"]
    assert local["sources"]["docs"]["files"] == 2 and html["empty_after_extraction"] > len(html["empty_positions"]) == 10
    for key in sorted(set(local) - DIFFERENT):
        assert dask[key] == local[key], key


def test_beyond_the_pool_the_s_curve_is_measured_on_a_random_pool(
    tmp_path: Path, dask_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More active records than the diagnostics' pool: the probe runs on a uniform draw of the pool's size (the
    same draw again with the same seed), with the local run's bins and banding."""
    from er_framework.executors import dask_stats

    monkeypatch.setattr(dask_stats, "DIAGNOSTIC_RECORDS", 120)
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.02}
    run_job(parse_job(_job("documents.yaml", tmp_path, None, "local")), tmp_path / "local")
    curves = []
    for tag in ("dask", "again"):
        run_job(parse_job(_job("documents.yaml", tmp_path, executor, tag)), tmp_path / tag)
        curves.append(json.loads((tmp_path / tag / "report.json").read_text())["diagnostics"]["s_curve"])
    local = json.loads((tmp_path / "local" / "report.json").read_text())
    mine, theirs = curves[0], local["diagnostics"]["s_curve"]
    assert local["records"]["total"] > 120 and mine == curves[1]
    assert 0 < mine["records_probed"] <= 120 < theirs["records_probed"]
    assert {k: mine[k] for k in ("bands", "rows", "threshold", "probe", "bins")} == {
        k: theirs[k] for k in ("bands", "rows", "threshold", "probe", "bins")
    }
    assert sum(mine["pairs"]) == mine["pairs_sampled"] > 0


def test_the_api_on_dask_gives_the_tables_the_workers_wrote(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    """pandas in, pandas out: the tables equal the local run's; no folder is a clear error; write() refuses."""
    import pandas as pd

    import er_framework as er
    from er_framework.errors import ErError

    frame = pd.read_json(ROOT / "configs" / "data" / "docs.jsonl", lines=True)
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.01}
    job = _job("documents.yaml", tmp_path, executor, "dask", in_memory=True)
    local_job = _job("documents.yaml", tmp_path, None, "local", in_memory=True)
    got = er.run(job, sources={"docs": frame}, out=tmp_path / "out")
    want = er.run(local_job, sources={"docs": frame})
    for name in ("pairs", "clusters"):
        a, b = got.table(name), want.table(name)
        assert isinstance(a, pd.DataFrame) and a.equals(b), name
    with pytest.raises(ErError, match="no output folder given"):
        er.run(job, sources={"docs": frame})
    with pytest.raises(ErError, match="written by its workers"):
        got.write(tmp_path / "again")


def test_sources_with_different_fields_give_the_local_answer(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    """A field some sources lack is missing in their records, in the local run's field order (Records.concat):
    B reads no email, C no phone and its fields in another order."""
    import yaml

    def edit(path: Path) -> None:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["sources"][1]["fields"] = [f for f in data["sources"][1]["fields"] if f != "email"]
        data["sources"][2]["fields"] = ["dob", *[f for f in data["sources"][2]["fields"] if f not in ("phone", "dob")]]
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.05}
    jobs = {tag: _job("customers3.yaml", tmp_path, ex, tag) for tag, ex in (("local", None), ("dask", executor))}
    for tag, path in jobs.items():
        edit(path)
        run_job(parse_job(path), tmp_path / tag)
    local = json.loads((tmp_path / "local" / "report.json").read_text())
    dask = json.loads((tmp_path / "dask" / "report.json").read_text())
    assert dask["executor"]["partitions"] >= 3
    for key in sorted(set(local) - DIFFERENT):
        assert dask[key] == local[key], key
    for table in ("pairs.csv", "clusters.csv"):
        assert (tmp_path / "dask" / table).read_bytes() == (tmp_path / "local" / table).read_bytes(), table
