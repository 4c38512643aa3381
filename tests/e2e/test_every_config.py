"""Every shipped config: the same answer on every executor and through the index.

A job moved from the laptop to Dask, or from ``er run`` to ``er index build``,
must give the same product: pairs.csv and clusters.csv byte-identical, a
report.json with the same sections and a report.html.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.engine import Engine
from er_framework.errors import ErError
from er_framework.executors import run_job
from er_framework.index.build import build_index
from tests.shipped_jobs import shipped_job

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p.name for p in (ROOT / "configs").glob("*.yaml"))


def _copy(name: str, tmp: Path, executor: dict[str, Any] | None, tag: str) -> Path:
    """The shipped config with absolute source paths (and an executor), written to ``tmp``."""
    return shipped_job(name, tmp, tag, executor=executor, output=False)


def _lookup_ok(name: str) -> bool:
    return not Engine(parse_job(ROOT / "configs" / name)).lookup_refusals()


@pytest.fixture
def scheduler(dask_cluster: LocalCluster) -> str:
    """The address of the session's shared 2-worker cluster (tests/conftest.py)."""
    return str(dask_cluster.scheduler_address)


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name in CONFIGS:
        tmp = tmp_path_factory.mktemp("local")
        run_job(parse_job(_copy(name, tmp, None, "local")), tmp / "out")
        out[name] = tmp / "out"
    return out


def test_every_config_is_tested() -> None:
    assert {"documents.yaml", "customers.yaml", "customers3.yaml", "customers_index.yaml", "news.yaml", "fingerprints.yaml"} <= set(CONFIGS)


@pytest.mark.parametrize("name", CONFIGS)
def test_dask_gives_the_local_outputs(name: str, tmp_path: Path, scheduler: str, local_runs: dict[str, Path]) -> None:
    cfg = _copy(name, tmp_path, {"type": "dask", "address": scheduler, "partition_mb": 0.05}, "dask")
    job = parse_job(cfg)
    assert Engine(job).lookup_refusals("partition") == []  # every built-in component runs on Dask
    run_job(job, tmp_path / "out")
    local = local_runs[name]
    for table in ("pairs.csv", "clusters.csv"):
        assert (tmp_path / "out" / table).read_bytes() == (local / table).read_bytes(), table
    rep_local = json.loads((local / "report.json").read_text())
    rep_dask = json.loads((tmp_path / "out" / "report.json").read_text())
    assert set(rep_dask) == set(rep_local)
    for key in (
        "records",
        "exact_duplicates",
        "candidate_pairs",
        "verified_pairs",
        "pairs_written",
        "clusters",
        "clusterer",
        "link",
        "versions",
    ):
        assert rep_dask[key] == rep_local[key], key
    for key in ("type", "threshold"):
        assert rep_dask["verifier"][key] == rep_local["verifier"][key]
    for mine, theirs in zip(rep_dask["blockers"], rep_local["blockers"], strict=True):
        # what the job determines is the same; bucket statistics are counted per partition locally only
        assert {k: v for k, v in mine.items() if k in theirs} == {k: theirs[k] for k in mine if k in theirs}
        assert mine["candidate_pairs"] == theirs["candidate_pairs"]
        if theirs["type"] in ("lsh_bands", "grid_bits", "field_hash"):  # merged from the partitions and every bucket
            assert mine == theirs  # every key (a blocker's entry holds no timing)
        else:  # stays different: sorted_neighbourhood's statistics (records, mode, per_key, raw_pairs,
            # candidates) come from its windows, which the Dask run does not gather: only what the job
            # determines and candidate_pairs are compared (above)
            assert theirs["type"] == "sorted_neighbourhood", theirs["type"]
    tokens_local, tokens_dask = rep_local["tokens"], rep_dask["tokens"]
    # the same keys; two differ by what is true on each executor: chunks (local: chunks of chunk_records,
    # Dask: the partitions shingled) and token_sets_kept (a Dask task drops its token sets once signed)
    assert set(tokens_dask) == set(tokens_local)
    differ = {"chunks", "token_sets_kept"}
    assert {k: v for k, v in tokens_dask.items() if k not in differ} == {k: v for k, v in tokens_local.items() if k not in differ}
    if tokens_dask:
        assert tokens_dask["token_sets_kept"] is False and tokens_dask["chunks"] == rep_dask["executor"]["partitions"]
    assert rep_dask["executor"]["type"] == "dask" and rep_dask["executor"]["partitions"] >= 1
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Largest clusters" in html and rep_local["job"] in html


@pytest.mark.parametrize("name", CONFIGS)
def test_index_build_gives_the_run_clusters(name: str, tmp_path: Path, local_runs: dict[str, Path]) -> None:
    job = parse_job(_copy(name, tmp_path, None, "index"))
    if not _lookup_ok(name):  # refused before any work, naming each component
        with pytest.raises(ErError, match="an index"):
            build_index(job, tmp_path / "x.erx")
        assert not (tmp_path / "x.erx").exists()
        return
    index, _ = build_index(job, tmp_path / "x.erx")
    with index:
        clusters = index.clusters()
    lines = (local_runs[name] / "clusters.csv").read_text(encoding="utf-8").splitlines()[1:]
    import csv

    expected = {(s, i): int(c) for s, i, c in csv.reader(lines)}
    assert clusters == expected
