"""The Dask executor: partitioned reading, the same outputs as the local executor, a killed worker."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from distributed import Client, LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.errors import ErError
from er_framework.executors import run_job
from er_framework.executors.dask_tasks import SLOW_ENV
from er_framework.io.source_files import partition_ranges, read_source
from er_framework.synth.documents import planted_documents
from tests.shipped_jobs import shipped_job

ROOT = Path(__file__).resolve().parents[2]
#: the compared fields of configs/customers.yaml's fellegi_sunter (a verifier has no default fields)
FS_FIELDS: list[dict[str, Any]] = yaml.safe_load((ROOT / "configs" / "customers.yaml").read_text())["verifier"]["fields"]
#: field_score's customer fields: name, address, phone (a pair scores out of 300)
FIELD_RULES: list[dict[str, Any]] = [
    {"field": ["first_name", "last_name"], "name": "name", "scorer": "token_sort_ratio"},
    {"field": "address", "scorer": "ratio"},
    {"field": "phone", "scorer": "digits", "last_digits": 10},
]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = planted_documents(200, copies_per_family=(1, 3), words=(30, 80), edit_rates=(0.0, 0.15), n_singletons=500, seed=3)
    path = tmp_path_factory.mktemp("dask") / "docs.jsonl"
    rows = [(f"d{i}", t) for i, t in enumerate(d.texts)] + [(f"copy{i}", d.texts[i * 3]) for i in range(20)]
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), encoding="utf-8")
    return path


def _docs_job(tmp: Path, data: Path, executor: str, cluster: str = "connected_components") -> Path:
    cfg = tmp / f"job_{abs(hash((executor, cluster)))}.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 7
        threshold: 0.6
        sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 4}}
        signature: {{type: fss, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        cluster: {{type: {cluster}}}
    """)
        + (f"executor: {executor}\n" if executor else "")
    )
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


@pytest.fixture
def cluster(dask_cluster: LocalCluster) -> LocalCluster:
    """The session's shared 2-worker cluster (tests/conftest.py)."""
    return dask_cluster


@pytest.mark.parametrize("cluster_type", ["connected_components", "louvain"])
def test_dask_outputs_equal_the_local_executor_byte_for_byte(tmp_path: Path, docs: Path, cluster: LocalCluster, cluster_type: str) -> None:
    local = _outputs(_docs_job(tmp_path, docs, "", cluster_type), tmp_path / "local")
    for mb in (0.02, 1.0):  # ~25 partitions and one
        executor = f"{{type: dask, address: '{cluster.scheduler_address}', partition_mb: {mb}}}"
        got = _outputs(_docs_job(tmp_path, docs, executor, cluster_type), tmp_path / f"dask{mb}")
        assert got == local
    assert local[0].count(b"\n") > 300  # pairs were found (exact copies and near-duplicates)


def test_the_dask_executor_tells_the_stages_and_the_partitions(tmp_path: Path, docs: Path, cluster: LocalCluster) -> None:
    """The progress callback of a Dask run: every stage's start and end, and each partition read and verified
    (a batch boundary), told from the client's one StageLog."""
    from er_framework.engine.log import Progress

    got: list[Progress] = []
    executor = f"{{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.02}}"
    result = run_job(parse_job(_docs_job(tmp_path, docs, executor)), tmp_path / "out", progress=got.append)
    starts = [p.stage for p in got if p.event == "start"]
    assert starts == [p.stage for p in got if p.event == "end"]
    assert starts == [s["stage"] for s in result.report["stages"]]
    for stage in ("read", "verify"):
        batches = [p for p in got if p.event == "batch" and p.stage == stage]
        assert len(batches) > 5 and [p.done for p in batches] == list(range(1, batches[0].total + 1))  # type: ignore[operator]


def test_the_obsolete_cluster_on_option_changes_nothing(tmp_path: Path, docs: Path, cluster: LocalCluster) -> None:
    """cluster_on is accepted and ignored: the clusters are computed on the workers with any clusterer."""
    for clusterer in ("connected_components", "louvain"):
        local = _outputs(_docs_job(tmp_path, docs, "", clusterer), tmp_path / f"local-{clusterer}")
        executor = f"{{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.02, cluster_on: workers}}"
        assert _outputs(_docs_job(tmp_path, docs, executor, clusterer), tmp_path / f"dask-{clusterer}") == local


def test_dask_link_mode_customers_equal_local(tmp_path: Path, cluster: LocalCluster) -> None:
    text = (ROOT / "configs" / "customers_index.yaml").read_text()
    text = text.replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    (tmp_path / "local.yaml").write_text(text)
    (tmp_path / "dask.yaml").write_text(text + f"executor: {{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.05}}\n")
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


def test_the_dask_executor_reads_its_options_from_the_job(tmp_path: Path, docs: Path) -> None:
    from er_framework.config.executor_params import DaskParams
    from er_framework.executors.dask import run_dask

    job = parse_job(_docs_job(tmp_path, docs, "{type: dask, local_cluster: {n_workers: 1}, partition_mb: 2, cluster_on: workers}"))
    assert job.executor_params == DaskParams(local_cluster={"n_workers": 1}, partition_mb=2, cluster_on="workers")
    with pytest.raises(ErError, match="the dask executor was given a job for executor 'local'") as exc:
        run_dask(parse_job(_docs_job(tmp_path, docs, "")), tmp_path / "out")
    assert exc.value.problems[0].path == "executor.type" and not (tmp_path / "out").exists()


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


# ------------------------------------------------------------------ every built-in component on Dask


def _shipped(name: str, tmp: Path, executor: dict | None, tag: str, **changes: object) -> Path:
    """A shipped config with absolute source paths, no output folder, and an executor (and other changes)."""
    return shipped_job(name, tmp, tag, executor=executor, edit=dict(changes), output=False)


def _run_both(tmp: Path, local_cfg: Path, dask_cfg: Path) -> tuple[dict, dict]:
    """Run both jobs; the tables must be byte-identical; return both reports."""
    run_job(parse_job(local_cfg), tmp / "local")
    run_job(parse_job(dask_cfg), tmp / "dask")
    for table in ("pairs.csv", "clusters.csv"):
        assert (tmp / "dask" / table).read_bytes() == (tmp / "local" / table).read_bytes(), table
    return (json.loads((tmp / "local" / "report.json").read_text()), json.loads((tmp / "dask" / "report.json").read_text()))


@pytest.mark.parametrize("name, mb", [("customers.yaml", 0.05), ("fingerprints.yaml", 0.03)])
def test_shipped_configs_on_a_two_worker_local_cluster_equal_local(tmp_path: Path, name: str, mb: float) -> None:
    """customers (field_hash + sorted_neighbourhood, fellegi_sunter, one_to_one) and fingerprints
    (grid_cells shingled per partition, grid_bits, cell_overlap) give the local run's outputs."""
    executor = {"type": "dask", "local_cluster": {"n_workers": 2}, "partition_mb": mb}
    local, dask = _run_both(tmp_path, _shipped(name, tmp_path, None, "local"), _shipped(name, tmp_path, executor, "dask"))
    assert set(dask) == set(local)
    assert dask["executor"]["partitions"] >= 5 and dask["executor"]["workers"] == 2
    for key in ("records", "candidate_pairs", "verified_pairs", "pairs_written", "clusters", "verifier", "link", "shingler", "signature"):
        assert dask[key] == local[key], key
    assert [b["candidate_pairs"] for b in dask["blockers"]] == [b["candidate_pairs"] for b in local["blockers"]]
    assert local["verified_pairs"] > 100
    # the normalize stats, summed over the partitions, the distinct counts by a hash shuffle: the local ones
    assert set(dask["normalize"]) == set(local["normalize"]) and (bool(local["normalize"]) == (name == "customers.yaml"))
    assert dask["normalize"] == local["normalize"]
    assert dask["blockers"] == local["blockers"]  # sorted_neighbourhood's per-key statistics too
    if name == "customers.yaml":  # EM ran once, on counts summed over the partitions: the same fit
        assert dask["verifier"]["iterations"] > 1 and dask["verifier"]["random_pairs"] == 20000
        assert dask["link"]["matched"] == local["link"]["matched"]
    else:  # the shingler's and grid_bits' reports cover every print, from the partitions' counts
        assert dask["shingler"]["records"] == 300 and dask["shingler"]["occupancy"] > 0.2
        assert dask["blockers"] == local["blockers"] and local["blockers"][0]["raw_pairs"] > 10_000


def test_sorted_neighbourhood_windows_cross_many_small_ranges(tmp_path: Path, cluster: LocalCluster) -> None:
    """Two sort keys (one with a prefix), a window longer than the ranges of the global order (the carried
    records come from several earlier ranges), field_score, label_propagation: the local answer."""
    a = tmp_path / "a.csv"  # the first 700 customers of A
    a.write_text("".join((ROOT / "configs" / "data" / "customers" / "a.csv").read_text().splitlines(True)[:701]))
    fields = "[first_name, last_name, address, city, zip, phone, email, dob]"
    job = textwrap.dedent(f"""
        mode: dedup
        sources: [{{name: A, path: {a}, id: id, fields: {fields}}}]
        normalize: {{first_name: [name, nickname], last_name: name, address: address, phone: phone}}
        blockers:
          - {{type: sorted_neighbourhood, keys: [[last_name, first_name], [zip, dob]], prefix: {{first_name: 2}}, window: 60}}
        verifier:
          type: field_score
          threshold: 150
          fields:
            - {{field: [first_name, last_name], name: name, scorer: token_sort_ratio}}
            - {{field: address, scorer: ratio}}
            - {{field: phone, scorer: digits, last_digits: 10}}
        cluster: {{type: label_propagation}}
    """)
    (tmp_path / "local.yaml").write_text(job)
    (tmp_path / "dask.yaml").write_text(job + f"executor: {{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.005}}\n")
    local, dask = _run_both(tmp_path, tmp_path / "local.yaml", tmp_path / "dask.yaml")
    assert dask["executor"]["partitions"] > 12  # ~50 records a range: a window of 60 spans two or three
    assert dask["candidate_pairs"] == local["candidate_pairs"] > 50_000
    assert dask["clusters"] == local["clusters"] and local["verified_pairs"] > 10


def test_fellegi_sunter_variants_on_dask_equal_local(tmp_path: Path, cluster: LocalCluster) -> None:
    """u fixed from random pairs, and no random pairs at all (EM's own initial u): the same fit and scores
    (and greedy_modularity, clustering on the client like every clusterer)."""
    executor = {"type": "dask", "address": cluster.scheduler_address, "partition_mb": 0.04}
    for k, (verifier, clusterer, mode) in enumerate(
        [
            (
                {"type": "fellegi_sunter", "threshold": 0.8, "u_from_random_pairs": 3000, "fix_u": True, "seed": 3, "fields": FS_FIELDS},
                "one_to_one",
                "link",
            ),
            (
                {"type": "fellegi_sunter", "threshold": 0.95, "u_from_random_pairs": 0, "estimation": "em", "fields": FS_FIELDS},
                "greedy_modularity",
                "link",
            ),
            # exact duplicates collapsed: the random pairs are drawn over the active records, as locally
            (
                {"type": "fellegi_sunter", "threshold": 0.9, "u_from_random_pairs": 5000, "fields": FS_FIELDS},
                "connected_components",
                "link_and_dedup",
            ),
        ]
    ):
        tmp = tmp_path / str(k)
        tmp.mkdir()
        changes = {"verifier": verifier, "cluster": {"type": clusterer}, "mode": mode, "exact_duplicates": mode != "link"}
        local, dask = _run_both(
            tmp, _shipped("customers.yaml", tmp, None, "local", **changes), _shipped("customers.yaml", tmp, executor, "dask", **changes)
        )
        assert dask["verifier"] == local["verifier"] and dask["link"] == local["link"]
        assert local["verifier"]["random_pairs"] == verifier["u_from_random_pairs"]
        assert dask["exact_duplicates"] == local["exact_duplicates"]
        if mode != "link":
            assert local["exact_duplicates"]["records_collapsed"] > 100


def test_bad_prints_and_too_many_pairs_are_the_local_errors_on_dask(tmp_path: Path, cluster: LocalCluster) -> None:
    """Bad prints of every partition are reported together; grid_bits' max_pairs stops the job before any
    pair is made, with the local message; no output is written."""
    prints = (ROOT / "configs" / "data" / "fingerprints" / "prints.jsonl").read_text().splitlines()
    bad = prints[:5] + ['{"id": "bad1", "minutiae": "[[1, 2], [3"}'] + prints[5:250] + ['{"id": "bad2", "minutiae": [[900, 1]]}']
    data = tmp_path / "prints.jsonl"
    data.write_text("\n".join(bad + prints[250:]) + "\n")
    executor = {"type": "dask", "address": cluster.scheduler_address, "partition_mb": 0.03}
    changes = {"sources": [{"name": "prints", "path": str(data), "id": "id", "fields": ["minutiae"]}]}
    errors = []
    for ex in (None, executor):
        with pytest.raises(ErError) as info:
            run_job(parse_job(_shipped("fingerprints.yaml", tmp_path, ex, f"bad-{ex is None}", **changes)), tmp_path / "o")
        errors.append(info.value.render())
    for text in errors:
        assert "'bad1'" in text and "'bad2'" in text and "outside the frame" in text and "no valid list" in text
    limited = {"blockers": [{"type": "grid_bits", "sets": 2048, "cells": 3, "max_pairs": 20000}]}
    messages = []
    for ex in (None, executor):
        with pytest.raises(ErError) as info:
            run_job(parse_job(_shipped("fingerprints.yaml", tmp_path, ex, f"lim-{ex is None}", **limited)), tmp_path / "o")
        messages.append(info.value.render())
    assert "max_pairs = 20,000" in messages[0] and messages[1] == messages[0]
    assert not (tmp_path / "o").exists()


def test_record_blockers_refuse_too_many_pairs_on_dask_with_the_local_message(tmp_path: Path, cluster: LocalCluster) -> None:
    """sorted_neighbourhood (counted from every partition's sorted records; the local message) and field_hash
    (from every bucket's size) stop the job before any pair is made."""
    executor = {"type": "dask", "address": cluster.scheduler_address, "partition_mb": 0.05}
    for k, blocker in enumerate(
        [
            {"type": "sorted_neighbourhood", "keys": [["last_name"], ["zip"]], "window": 40, "max_pairs": 30_000},
            {"type": "field_hash", "fields": ["last_name", "city"], "max_block_size": None, "max_pairs": 20_000},
        ]
    ):
        messages = []
        for ex in (None, executor):
            with pytest.raises(ErError) as info:
                job = _shipped("customers.yaml", tmp_path, ex, f"lim-{k}-{ex is None}", blockers=[blocker])
                run_job(parse_job(job), tmp_path / "o")
            messages.append(info.value.render())
        for text in messages:
            assert f"more than max_pairs = {blocker['max_pairs']:,}" in text, messages
        if blocker["type"] == "sorted_neighbourhood":  # field_hash on Dask counts all keys at once (and both orders)
            assert messages[1] == messages[0]
    assert not (tmp_path / "o").exists()


def test_components_that_cannot_run_by_partition_are_refused_by_name(tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blocker with neither bucket ids nor sort keys, a trained verifier without pair codes, a shingler
    needing the whole corpus: one refusal each, naming it, why, and what to use instead; no cluster started."""
    import er_framework.executors.dask as dask_executor
    from er_framework.capabilities import Learner, WholeCorpus
    from er_framework.components import Blocker, Shingler, Verifier
    from er_framework.engine import Engine

    class Whole(Blocker):
        name = "whole_corpus"

    class Trained(Verifier, Learner):  # fits on all pairs of a run, and not from pair codes (not CodeFitted)
        name = "trained"

    class Corpus(WholeCorpus, Shingler):
        name = "idf_shingles"

    class Refusing(Engine):
        def __init__(self, job: Any, model: Any = None) -> None:
            super().__init__(job, model)
            self.blockers, self.verifier, self.shingler = [Whole()], Trained(), Corpus()

    started = []
    monkeypatch.setattr(dask_executor, "Engine", Refusing)
    monkeypatch.setattr(dask_executor, "_client", lambda job: started.append(job))
    job = parse_job(_docs_job(tmp_path, docs, "{type: dask, address: 'tcp://127.0.0.1:9'}"))
    with pytest.raises(ErError) as info:
        run_job(job, tmp_path / "o")
    text = info.value.render()
    assert not started and not (tmp_path / "o").exists()
    for name, reason, alternative in [
        ("whole_corpus", "neither lookup_keys", "sorted_neighbourhood"),
        ("trained", "no pair codes", "er train JOB --model FILE"),
        ("idf_shingles", "not Partitionable", "executor: local"),
    ]:
        line = next(line for line in text.splitlines() if repr(name) in line)
        assert reason in line and alternative in line, line
    # the customers' job runs partition by partition, and one item at a time too: its sorted_neighbourhood
    # is left out of an index that has field_hash keys, and the index fits fellegi_sunter's model on its corpus
    customers = Engine(parse_job(_shipped("customers.yaml", tmp_path, None, "c")))
    assert not customers.lookup_refusals("partition") and not customers.lookup_refusals("item")
    fingerprints = Engine(parse_job(_shipped("fingerprints.yaml", tmp_path, None, "f")))
    # grid_cells is partitionable (a print's cells depend on that print alone): one item too
    assert not fingerprints.lookup_refusals("partition") and not fingerprints.lookup_refusals("item")


@pytest.mark.parametrize("mode", ["link", "link_and_dedup"])
def test_field_hash_reports_on_dask_what_it_reports_locally(tmp_path: Path, cluster: LocalCluster, mode: str) -> None:
    """field_hash's report (per key: records keyed and missing, distinct values, buckets, pairs, the purged
    buckets with the largest ten and their values, ties included) merged from the partitions and every
    bucket equals the local one, in link mode (cross-source pairs only) and in a dedup report."""
    blockers = [
        {
            "type": "field_hash",
            "fields": ["city", "zip", ["last_name", "city"], "dob", {"any_order": ["first_name", "last_name"]}],
            "max_block_size": 4,
        }
    ]
    executor = {"type": "dask", "address": cluster.scheduler_address, "partition_mb": 0.05}
    changes: dict[str, Any] = {
        "blockers": blockers,
        "mode": mode,
        "verifier": {"type": "field_score", "threshold": 150, "fields": FIELD_RULES},
    }
    local, dask = _run_both(
        tmp_path,
        _shipped("customers.yaml", tmp_path, None, "local", **changes),
        _shipped("customers.yaml", tmp_path, executor, "dask", **changes),
    )
    assert dask["executor"]["partitions"] >= 5
    mine, theirs = dask["blockers"][0], local["blockers"][0]
    assert mine == theirs
    assert theirs["mode"] == ("link" if mode == "link" else "dedup")
    purged = [k["purged"] for k in theirs["per_key"]]
    assert all(p["buckets"] > TOP for p in purged[:2])  # city and zip: more purged buckets than listed
    sizes = [b["size"] for b in purged[0]["largest"]]
    assert len(sizes) == TOP and sizes == sorted(sizes, reverse=True) and len(set(sizes)) < TOP  # ties ordered
    assert theirs["raw_pairs"] == sum(k["pairs_generated"] for k in theirs["per_key"]) > theirs["candidates"] > 0


TOP = 10  # field_hash lists the ten largest purged buckets of a key


@pytest.mark.parametrize(
    "shipped, changes",
    [
        ("documents.yaml", {"blockers": [{"type": "lsh_bands", "bands": 16, "rows": 2, "max_bucket_size": 3}]}),
        # a whole-corpus shingler with a builder taking minima: the local run signs its sets
        (
            "fingerprints.yaml",
            {
                "signature": {"type": "minhash", "num_perm": 64},
                "blockers": [{"type": "lsh_bands", "bands": 16, "rows": 4, "max_bucket_size": 5}],
                "verifier": {"type": "jaccard", "threshold": 0.5},
            },
        ),
    ],
)
def test_lsh_bands_and_tokens_report_on_dask_what_they_report_locally(
    tmp_path: Path, cluster: LocalCluster, shipped: str, changes: dict[str, Any]
) -> None:
    """lsh_bands' bucket statistics with oversized buckets, and the tokens section (with repeats for
    multisets, distinct when the local run signs sets), merged from the partitions: the local numbers."""
    executor = {"type": "dask", "address": cluster.scheduler_address, "partition_mb": 0.02}
    local, dask = _run_both(
        tmp_path, _shipped(shipped, tmp_path, None, "local", **changes), _shipped(shipped, tmp_path, executor, "dask", **changes)
    )
    assert dask["executor"]["partitions"] >= 3
    assert dask["blockers"] == local["blockers"] and local["blockers"][0]["oversized_buckets"] > 0
    assert local["blockers"][0]["pairs_skipped"] > 0
    same = {k: v for k, v in local["tokens"].items() if k not in ("chunks", "token_sets_kept")}
    assert {k: v for k, v in dask["tokens"].items() if k in same} == same and set(dask["tokens"]) == set(local["tokens"])
    assert local["tokens"]["tokens_counted"] == ("with repeats" if shipped == "documents.yaml" else "distinct")
    assert dask["tokens"]["chunks"] == dask["executor"]["partitions"] and dask["tokens"]["token_sets_kept"] is False


def _customers_as_users_have_them(tmp_path: Path, delimiter: str, quote: str, encoding: str) -> str:
    """configs/customers_index.yaml over copies of its files written with ``delimiter``, ``quote`` and
    ``encoding`` and with first_name renamed to ``given``: the job maps it back (``columns:``, ``csv:``)."""
    import csv

    text = (ROOT / "configs" / "customers_index.yaml").read_text()
    for name in ("a", "b"):
        with open(ROOT / "configs" / "data" / "customers" / f"{name}.csv", encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        rows[0] = ["given" if c == "first_name" else c for c in rows[0]]
        with open(tmp_path / f"{name}.csv", "w", encoding=encoding, newline="") as f:
            csv.writer(f, delimiter=delimiter, quotechar=quote, quoting=csv.QUOTE_NONNUMERIC).writerows(rows)
        text = text.replace(
            f"path: data/customers/{name}.csv",
            f"path: {tmp_path / f'{name}.csv'}\n    columns: {{first_name: given}}\n"
            f"    csv: {{delimiter: {json.dumps(delimiter)}, quote: {json.dumps(quote)}, encoding: {encoding}}}",
        )
    return text


def test_dask_partitions_of_mapped_semicolon_files_equal_local_on_the_original_files(tmp_path: Path, cluster: LocalCluster) -> None:
    from er_framework.executors.dask import plan_parts

    original = (ROOT / "configs" / "customers_index.yaml").read_text().replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    (tmp_path / "local.yaml").write_text(original)
    text = _customers_as_users_have_them(tmp_path, ";", "'", "utf-8")
    (tmp_path / "dask.yaml").write_text(text + f"executor: {{type: dask, address: '{cluster.scheduler_address}', partition_mb: 0.05}}\n")
    parts = plan_parts(parse_job(tmp_path / "dask.yaml"), 0.05)
    assert len(parts) > 4 and all(p.byte_range is not None for p in parts)
    assert _outputs(tmp_path / "dask.yaml", tmp_path / "d") == _outputs(tmp_path / "local.yaml", tmp_path / "l")


def test_a_source_of_another_encoding_is_one_partition_read_like_its_utf8_twin(tmp_path: Path) -> None:
    from er_framework.executors.dask import plan_parts

    (tmp_path / "latin.yaml").write_text(_customers_as_users_have_them(tmp_path, "|", '"', "cp1252"))
    job = parse_job(tmp_path / "latin.yaml")
    parts = plan_parts(job, 0.05)
    assert [p.byte_range for p in parts] == [None, None]
    spec = job.spec.sources[0]
    latin = read_source(parts[0].path, **spec.read_options())
    utf8 = read_source(ROOT / "configs" / "data" / "customers" / "a.csv", id_column="id", fields=spec.fields, name=spec.name)
    assert latin.ids == utf8.ids and latin.fields == utf8.fields
