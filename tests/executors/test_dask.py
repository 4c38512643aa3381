"""The Dask executor: partitioned reading, the same outputs as the local executor, a killed worker."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from er_framework.config.job import parse_job
from er_framework.executors.dask import SLOW_ENV
from er_framework.errors import ErError
from er_framework.io.tables import partition_ranges, read_source
from er_framework.executors import run_job
from er_framework.synth.documents import planted_documents

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = planted_documents(200, copies_per_family=(1, 3), words=(30, 80), edit_rates=(0.0, 0.15), n_singletons=500, seed=3)
    path = tmp_path_factory.mktemp("dask") / "docs.jsonl"
    rows = [(f"d{i}", t) for i, t in enumerate(d.texts)] + [(f"copy{i}", d.texts[i * 3]) for i in range(20)]
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), encoding="utf-8")
    return path


def _docs_job(tmp: Path, data: Path, executor: str, cluster: str = "connected_components") -> Path:
    cfg = tmp / f"job_{abs(hash((executor, cluster)))}.yaml"
    cfg.write_text(textwrap.dedent(f"""
        seed: 7
        threshold: 0.6
        sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 4}}
        signature: {{type: fss, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        cluster: {{type: {cluster}}}
    """) + (f"executor: {executor}\n" if executor else ""))
    return cfg


def _outputs(cfg: Path, out: Path) -> tuple[bytes, bytes]:
    run_job(parse_job(cfg), out)
    return (out / "pairs.csv").read_bytes(), (out / "clusters.csv").read_bytes()


@pytest.mark.parametrize("step", [1, 37, 1000, 10**9])
def test_partitions_hold_every_line_once(tmp_path: Path, step: int) -> None:
    j = tmp_path / "t.jsonl"
    j.write_text("".join(json.dumps({"id": f"r{i}", "text": "x" * (i % 23)}) + "\n" for i in range(300)))
    c = tmp_path / "t.csv"
    c.write_text("id,text\r\n" + "".join(f"r{i},{'y' * (i % 17)}\r\n" for i in range(300)))
    for path in (j, c):
        whole = read_source(path, id_column="id", fields=["text"], name="s")
        ids, texts = [], []
        ranges = partition_ranges(path, step)
        assert ranges is not None and len(ranges) >= min(300, path.stat().st_size // step)
        for r in ranges:
            part = read_source(path, id_column="id", fields=["text"], name="s", byte_range=r)
            ids += part.ids
            texts += part.fields["text"]
        assert ids == whole.ids and texts == whole.fields["text"]
    assert partition_ranges(tmp_path / "t.jsonl.gz", 10) is None


@pytest.fixture(scope="module")
def cluster() -> LocalCluster:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        yield lc


@pytest.mark.parametrize("cluster_type", ["connected_components", "louvain"])
def test_dask_outputs_equal_the_local_executor_byte_for_byte(tmp_path: Path, docs: Path, cluster: LocalCluster,
                                                             cluster_type: str) -> None:
    local = _outputs(_docs_job(tmp_path, docs, "", cluster_type), tmp_path / "local")
    for mb in (0.02, 1.0):  # ~25 partitions and one
        executor = f"{{type: dask, address: '{cluster.scheduler_address}', partition_mb: {mb}}}"
        got = _outputs(_docs_job(tmp_path, docs, executor, cluster_type), tmp_path / f"dask{mb}")
        assert got == local
    assert local[0].count(b"\n") > 300  # pairs were found (exact copies and near-duplicates)


def test_connected_components_on_the_workers_equal_local(tmp_path: Path, docs: Path, cluster: LocalCluster) -> None:
    from er_framework.executors.dask import task_forest
    import numpy as np

    local = _outputs(_docs_job(tmp_path, docs, ""), tmp_path / "local")
    executor = f"{{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.02, cluster_on: workers}}"
    assert _outputs(_docs_job(tmp_path, docs, executor), tmp_path / "dask") == local
    # the forest keeps the components with one edge per non-smallest node
    a = (np.array([5, 1, 9, 2]), np.array([7, 5, 12, 3]))
    b = (np.array([7, 3]), np.array([9, 20]))
    fl, fr = task_forest(a, b)
    assert sorted(zip(fl.tolist(), fr.tolist())) == [(1, 5), (1, 7), (1, 9), (1, 12), (2, 3), (2, 20)]
    with pytest.raises(ErError, match="connected components only"):
        run_job(parse_job(_docs_job(tmp_path, docs, executor, "louvain")), tmp_path / "x")


def test_dask_link_mode_customers_equal_local(tmp_path: Path, cluster: LocalCluster) -> None:
    text = (ROOT / "configs" / "customers_index.yaml").read_text()
    text = text.replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    (tmp_path / "local.yaml").write_text(text)
    (tmp_path / "dask.yaml").write_text(
        text + f"executor: {{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.05}}\n")
    assert _outputs(tmp_path / "dask.yaml", tmp_path / "d") == _outputs(tmp_path / "local.yaml", tmp_path / "l")


def test_dask_news_pages_equal_local(tmp_path: Path, cluster: LocalCluster) -> None:
    """A folder of HTML pages: one partition, the same text extraction as the local reader."""
    text = (ROOT / "configs" / "news.yaml").read_text().replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    (tmp_path / "local.yaml").write_text(text)
    (tmp_path / "dask.yaml").write_text(text + f"executor: {{type: dask, address: '{cluster.scheduler_address}'}}\n")
    got = _outputs(tmp_path / "dask.yaml", tmp_path / "d")
    assert got == _outputs(tmp_path / "local.yaml", tmp_path / "l")
    assert got[0].count(b"\n") > 10


def test_a_killed_worker_does_not_change_the_output(tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = _outputs(_docs_job(tmp_path, docs, ""), tmp_path / "local")
    monkeypatch.setenv(SLOW_ENV, "0.5")  # inherited by the worker processes: verify tasks take a while
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, Client(lc) as client:
        executor = f"{{type: dask, address: '{lc.scheduler_address}', partition_mb: 0.02}}"
        cfg = _docs_job(tmp_path, docs, executor)
        box: dict[str, object] = {}

        def run() -> None:
            try:
                box["out"] = _outputs(cfg, tmp_path / "dask")
            except BaseException as exc:  # noqa: BLE001 - checked below
                box["error"] = exc

        t = threading.Thread(target=run)
        t.start()
        deadline = time.time() + 60
        killed = False
        while time.time() < deadline and not killed:  # kill a worker while verify tasks run
            time.sleep(0.2)
            processing = client.processing()
            busy = [w for w, tasks in processing.items() if any("verify" in str(k) for k in tasks)]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed = True
        t.join(timeout=300)
        assert killed, "no verify task was seen running"
        assert "error" not in box, box.get("error")
        assert box["out"] == local


def test_dask_config_errors(tmp_path: Path, docs: Path) -> None:
    with pytest.raises(ErError, match="exactly one of 'address'"):
        parse_job(_docs_job(tmp_path, docs, "{type: dask}"))
    (tmp_path / "c.csv").write_text("id,name\n1,ann\n2,bob\n")
    cfg = tmp_path / "fs.yaml"
    cfg.write_text(textwrap.dedent(f"""
        sources: [{{name: c, path: {tmp_path / 'c.csv'}, id: id, fields: [name]}}]
        blockers: [{{type: field_hash, fields: [name]}}]
        verifier: {{type: fellegi_sunter, threshold: 0.9, fields: [{{field: name, levels: [100, 80]}}]}}
        executor: {{type: dask, local_cluster: {{n_workers: 1}}}}
    """))
    with pytest.raises(ErError, match="fellegi_sunter"):
        run_job(parse_job(cfg), tmp_path / "o")


def test_bad_partitions_and_duplicate_ids_across_partitions_are_clear_errors(tmp_path: Path, cluster: LocalCluster) -> None:
    lines = [json.dumps({"id": f"r{i}", "text": f"text number {i} " * 5}) for i in range(400)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:300] + ["{not json"] + lines[300:]) + "\n")
    executor = f"{{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.005}}"
    with pytest.raises(ErError) as exc:
        run_job(parse_job(_docs_job(tmp_path, bad, executor)), tmp_path / "o1")
    assert "bad.jsonl (bytes" in exc.value.render() and "not valid JSON" in exc.value.render()
    dup = tmp_path / "dup.jsonl"
    dup.write_text("\n".join(lines + [lines[3]]) + "\n")  # r3 again, in the last partition
    with pytest.raises(ErError, match="docs/r3"):
        run_job(parse_job(_docs_job(tmp_path, dup, executor)), tmp_path / "o2")
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_executor_typos_are_reported_once_with_a_suggestion(tmp_path: Path, docs: Path) -> None:
    with pytest.raises(ErError) as exc:
        parse_job(_docs_job(tmp_path, docs, "{type: dask, adress: 'tcp://x:8786'}"))
    text = exc.value.render()
    assert text.count("unknown key 'adress'") == 1 and "did you mean 'address'" in text


def test_a_source_of_many_files_reads_like_one_file_local_and_on_dask(tmp_path: Path, docs: Path, cluster: LocalCluster) -> None:
    lines = docs.read_text(encoding="utf-8").splitlines(keepends=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    for k in range(0, len(lines), 150):  # part-00.jsonl, part-01.jsonl, ... (name order = line order)
        (parts / f"part-{k // 150:02d}.jsonl").write_text("".join(lines[k : k + 150]), encoding="utf-8")
    single = _outputs(_docs_job(tmp_path, docs, ""), tmp_path / "single")
    many = tmp_path / "parts" / "part-*.jsonl"
    assert _outputs(_docs_job(tmp_path, many, ""), tmp_path / "many") == single
    executor = f"{{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.02}}"
    assert _outputs(_docs_job(tmp_path, many, executor), tmp_path / "many_dask") == single
    # an id in two files, a pattern matching nothing: clear errors
    (parts / "part-99.jsonl").write_text(lines[0], encoding="utf-8")
    with pytest.raises(ErError, match="more than one file"):
        run_job(parse_job(_docs_job(tmp_path, many, "")), tmp_path / "dup")
    with pytest.raises(ErError, match="matches no file"):
        parse_job(_docs_job(tmp_path, tmp_path / "nothing-*.jsonl", ""))
