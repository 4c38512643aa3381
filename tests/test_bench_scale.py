"""benchmarks/bench_scale.py, scale_corpus.py and capacity.py: the corpus, the job, the row comparison against a
naive reference, the process groups, the capacity model, and one small end-to-end run on real Dask processes.
No wall-clock bound is asserted."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


scale_corpus = _load("scale_corpus")
bench_scale = _load("bench_scale")
capacity = _load("capacity")

POOL = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A journey of a thousand miles begins with a single step forward.",
    "Return the value of the named attribute of object, or the default.",
    "Licensed works, modifications, and larger works may be distributed under different terms.",
    "Each sentence here is made of plain English words and nothing else at all.",
] * 3


# ---------------------------------------------------------------------------- corpus


def test_corpus_is_deterministic_sized_and_planted(tmp_path: Path) -> None:
    a = scale_corpus.write_corpus(tmp_path / "a", 2500, 5, chunk=1000, sentences=POOL)
    b = scale_corpus.write_corpus(tmp_path / "b", 2500, 5, chunk=1000, sentences=POOL)
    lines = (tmp_path / "a" / "docs.jsonl").read_text(encoding="utf-8").splitlines()
    assert (tmp_path / "a" / "docs.jsonl").read_bytes() == (tmp_path / "b" / "docs.jsonl").read_bytes()
    assert a["docs"] == len(lines) == 2500 and a["bytes"] == (tmp_path / "a" / "docs.jsonl").stat().st_size
    rows = [json.loads(line) for line in lines]
    assert [r["id"] for r in rows] == [f"d{k}" for k in range(2500)]
    vocab = set(scale_corpus.word_counts(POOL))
    lengths = [len(r["text"].split()) for r in rows]
    assert all(set(r["text"].split()) <= vocab for r in rows)
    assert min(lengths) >= 15 - 3 and max(lengths) <= 30 + 3  # copies: at most round(0.1 * 30) = 3 edits
    # 20% of every chunk are copies: 2,000 bases in chunks of 1000, 1000, 500 -> 800 + 800 + 400 bases
    assert a["families"] == b["families"] == 800 + 800 + 400


def test_corpus_chunks_do_not_depend_on_the_size(tmp_path: Path) -> None:
    scale_corpus.write_corpus(tmp_path / "small", 1500, 9, chunk=1000, sentences=POOL)
    scale_corpus.write_corpus(tmp_path / "big", 3000, 9, chunk=1000, sentences=POOL)
    small = (tmp_path / "small" / "docs.jsonl").read_text(encoding="utf-8").splitlines()
    big = (tmp_path / "big" / "docs.jsonl").read_text(encoding="utf-8").splitlines()
    assert small[:1000] == big[:1000]


def test_copies_are_near_duplicates_of_their_base() -> None:
    vocab = scale_corpus.Vocabulary(scale_corpus.word_counts(POOL))
    texts, family = scale_corpus.make_chunk(vocab, 3, 0, 500)
    sizes = Counter(family)
    assert len(texts) == 500 and sum(n - 1 for n in sizes.values()) == 100  # 20% copies
    for fam, n in sizes.items():
        if n > 1:
            members = [set(t.split()) for t, f in zip(texts, family) if f == fam]
            assert all(len(m ^ members[0]) <= 6 for m in members)  # at most 3 edits each side


def test_jsonl_line_is_json_dumps() -> None:
    for k, text in [(0, "plain words"), (123456, "The quick brown fox")]:
        assert scale_corpus.jsonl_line(k, text) == json.dumps({"id": f"d{k}", "text": text}) + "\n"


def test_ensure_corpus_reuses_a_complete_corpus_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale_corpus.realtext, "harvest_sentences", lambda *a: POOL)
    path, meta = scale_corpus.ensure_corpus(tmp_path, 300, 1, chunk=100)
    stamp = path.stat().st_mtime_ns
    assert scale_corpus.ensure_corpus(tmp_path, 300, 1, chunk=100)[0].stat().st_mtime_ns == stamp
    with open(path, "a", encoding="utf-8") as f:  # truncated or grown: not the corpus meta.json describes
        f.write("{}\n")
    assert scale_corpus.read_meta(path.parent) is None
    assert scale_corpus.ensure_corpus(tmp_path, 300, 1, chunk=100)[1]["bytes"] == meta["bytes"]


# ---------------------------------------------------------------------------- the job


def test_job_text_replaces_the_source_path_only(tmp_path: Path) -> None:
    from er_framework.config.resolve import parse_job

    template = bench_scale.TEMPLATE.read_text(encoding="utf-8")
    data = tmp_path / "my docs.jsonl"
    data.write_text(json.dumps({"id": "d0", "text": "hello world again"}) + "\n", encoding="utf-8")
    local = bench_scale.job_text(template, data)
    changed = [(x, y) for x, y in zip(template.splitlines(), local.splitlines()) if x != y]
    assert len(changed) == 1 and "data/docs.jsonl" in changed[0][0] and str(data) in changed[0][1]
    assert len(local.splitlines()) == len(template.splitlines())
    dask = bench_scale.job_text(template, data, "tcp://127.0.0.1:8786", 16.0)
    assert dask.startswith(local.rstrip("\n")) and dask.rstrip().endswith(
        'executor: {type: dask, address: "tcp://127.0.0.1:8786", partition_mb: 16}'
    )
    for i, text in enumerate((local, dask)):
        job = tmp_path / f"job{i}.yaml"
        job.write_text(text, encoding="utf-8")
        parsed = parse_job(job)
        assert [str(p) for p in parsed.source_paths(0)] == [str(data)]
    with pytest.raises(ValueError, match="path: data/docs.jsonl"):
        bench_scale.job_text("sources: []\n", data)


def test_executor_list_is_checked() -> None:
    assert bench_scale.executor_list("dask, local") == ["dask", "local"]
    for bad in ("spark", "", "local,local"):
        with pytest.raises(Exception, match="comma-separated"):
            bench_scale.executor_list(bad)
    assert bench_scale.parse_args(["--docs", "10", "--no-local"]).executors == ["dask"]


# ---------------------------------------------------------------------------- rows compared as multisets


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _naive(path: Path) -> Counter[tuple[str, ...]]:
    with open(path, encoding="utf-8", newline="") as f:
        r = csv.DictReader(f)
        cols = sorted(r.fieldnames or [])
        return Counter(tuple(row[c] for c in cols) for row in r)


def test_row_comparison_equals_a_naive_multiset_comparison(tmp_path: Path) -> None:
    import random

    rnd = random.Random(4)
    header = ["left_id", "right_id", "score"]
    rows = [[f"d{rnd.randrange(50)}", f'x,"{rnd.randrange(50)}"', f"{rnd.random():.3f}"] for _ in range(400)]
    rows += rows[:30]  # repeated rows count
    other = [list(r) for r in rows]
    rnd.shuffle(other)
    del other[:7]
    other += [["d1", "new", "0.5"], ["", "empty left", "1.0"], ["d2", "x\nwith newline", "0.9"]]
    _write_csv(tmp_path / "a.csv", header, rows)
    _write_csv(tmp_path / "b.csv", ["score", "left_id", "right_id"], [[r[2], r[0], r[1]] for r in other])  # columns reordered
    cols_a, ha = bench_scale.row_hashes([tmp_path / "a.csv"], batch_rows=64)
    cols_b, hb = bench_scale.row_hashes([tmp_path / "b.csv"])
    na, nb = _naive(tmp_path / "a.csv"), _naive(tmp_path / "b.csv")
    assert cols_a == cols_b == sorted(header)
    assert bench_scale.multiset_difference(ha, hb) == (sum((na - nb).values()), sum((nb - na).values()))
    assert bench_scale.multiset_difference(ha, ha) == (0, 0)


def test_compare_tables_reads_csv_and_parquet_parts(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [["d1", "c1"], ["d2", "c1"], ["d3", "c3"]]
    (tmp_path / "left").mkdir()
    _write_csv(tmp_path / "left" / "clusters.csv", ["id", "cluster"], rows)
    parts = tmp_path / "right" / "clusters"
    parts.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["d3"], "cluster": ["c3"]}), parts / "part-1.parquet")
    pq.write_table(pa.table({"id": ["d1", "d2"], "cluster": ["c1", "c1"]}), parts / "part-0.parquet")
    got = bench_scale.compare_tables(tmp_path / "left", tmp_path / "right", "clusters")
    assert got["equal"] and got["rows_left"] == got["rows_right"] == 3
    pq.write_table(pa.table({"id": ["d4"], "cluster": ["c3"]}), parts / "part-2.parquet")
    got = bench_scale.compare_tables(tmp_path / "left", tmp_path / "right", "clusters")
    assert not got["equal"] and (got["only_left"], got["only_right"]) == (0, 1)
    missing = bench_scale.compare_tables(tmp_path / "left", tmp_path / "right", "pairs")
    assert not missing["equal"] and "pairs missing" in missing["note"]


# ---------------------------------------------------------------------------- processes


def test_stop_group_stops_a_process_and_its_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    child = int(pidfile.read_text())
    sampler = bench_scale.PeakSampler(interval=0.05)
    sampler.watch("tree", proc.pid)
    bench_scale.stop_group(proc, grace=5)
    sampler.stop()
    assert proc.returncode is not None
    for _ in range(100):  # the child, killed too, is reaped by init
        if not os.path.exists(f"/proc/{child}") or "zombie" in Path(f"/proc/{child}/status").read_text().lower():
            break
        time.sleep(0.05)
    else:
        pytest.fail("the child of the stopped process still runs")
    if sys.platform == "linux":
        assert set(sampler.peaks()["tree"]["processes_mb"]) >= {str(proc.pid), str(child)}


def test_a_worker_that_does_not_start_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    args = ["--docs", "50", "--baseline-docs", "0", "--executors", "dask", "--memory-limit", "lots"]
    assert bench_scale.main([*args, "--data-dir", str(tmp_path / "data"), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "error: the dask worker 0 exited" in err and "worker-0.log" in err
    logs = sorted((tmp_path / "data" / "runs" / "50" / "dask-cluster").glob("*.log"))
    assert [p.name for p in logs] == ["scheduler.log", "worker-0.log", "worker-1.log"]


# ---------------------------------------------------------------------------- capacity model


def _result(docs: int, bytes_per_doc: int, wall: float, client: float, stages: dict[str, float], partitions: int) -> dict[str, Any]:
    return {
        "docs": docs,
        "corpus": {"bytes": docs * bytes_per_doc},
        "runs": [
            {
                "executor": "dask",
                "ok": True,
                "run": {"wall_s": wall, "peak_rss_mb": client},
                "processes": {"worker-0": {"peak_rss_mb": 300.0}, "worker-1": {"peak_rss_mb": 280.0}, "scheduler": {"peak_rss_mb": 80.0}},
                "report": {
                    "executor": {"partitions": partitions, "workers": 2, "partition_mb": 1.0},
                    "stages": [{"stage": k, "seconds": v} for k, v in stages.items()],
                },
                "baseline": {"docs": 1000, "bytes": 1000 * bytes_per_doc, "ok": True, "run": {"wall_s": 2.0, "peak_rss_mb": 100.0}},
            }
        ],
    }


def _model_run(f: Any, docs: int, per_doc: int) -> dict[str, Any]:
    """A result that the model with the constants of ``f`` describes exactly."""
    n_bytes = docs * per_doc
    parts = -(-n_bytes // 2**20)
    workers_s = f.a * n_bytes / min(2, parts)
    client_s = f.c * docs
    wall = f.t0 + workers_s + client_s
    return _result(
        docs, per_doc, wall, f.m0 + f.m * parts, {"read": workers_s / 2, "verify": workers_s / 2, "cluster": client_s / 2}, parts
    )


def test_capacity_fit_reproduces_its_run_and_predicts_runs_the_model_describes(tmp_path: Path) -> None:
    fit_doc = _result(1_000_000, 160, 40.0, 400.0, {"read": 10.0, "block": 12.0, "verify": 6.0, "cluster": 3.0}, 153)
    (tmp_path / "scale-1000000.json").write_text(json.dumps(fit_doc))
    run = capacity.read_run(tmp_path / "scale-1000000.json")
    f = capacity.fit(run)
    assert capacity.predict_seconds(f, run.docs, run.bytes, run.workers) == pytest.approx(40.0)
    assert capacity.predict_client_mb(f, run.partitions) == pytest.approx(400.0)
    # the baseline (no stages recorded: all on the client) ran 2 s: the workers' stages took 28 s more, the client 10 s more
    assert f.a * (run.bytes / 2 - 1000 * 160) == pytest.approx(28.0) and f.c * (run.docs - 1000) == pytest.approx(10.0)
    assert f.m == pytest.approx((400.0 - 100.0) / (153 - 1))  # per partition: the baseline's one partition to the fit's 153
    for docs in (200_000, 3_000_000):
        doc = _model_run(f, docs, 160)
        (tmp_path / f"scale-{docs}.json").write_text(json.dumps(doc))
    text_ok = capacity.main([str(p) for p in sorted(tmp_path.glob("scale-*.json"))] + ["--fit", "1000000", "--out", str(tmp_path / "c.md")])
    assert text_ok == 0
    md = (tmp_path / "c.md").read_text()
    assert "1,000,000 documents" in md and len(re.findall(r"\| [+-]0% \|", md)) == 3 and "| 1 B | long (4,000 chars) |" in md
    assert capacity.main([str(tmp_path / "scale-1000000.json"), "--fit", "5"]) == 2


def test_capacity_client_grows_per_partition_from_another_run_without_a_baseline() -> None:
    """No baseline: the client's growth per partition is measured from the run with the fewest partitions."""
    big = capacity.Run(10_000, 24 * 2**20, 2, 24, 1.0, 50.0, 135.0, None, {"read": 8.0}, 0, 0, 0.0, 0.0, {}, "big")
    small = capacity.Run(1_000, 3 * 2**20, 2, 3, 1.0, 9.0, 88.0, None, {"read": 1.0}, 0, 0, 0.0, 0.0, {}, "small")
    f = capacity.fit(big, ("cluster",), small)
    assert f.m == pytest.approx((135.0 - 88.0) / 21) and capacity.predict_client_mb(f, 3) == pytest.approx(88.0)
    assert capacity.predict_client_mb(f, 24) == pytest.approx(135.0)
    assert "follows the partitions" in capacity.client_verdict(f)


def test_capacity_uses_no_more_workers_than_partitions() -> None:
    run = capacity.Run(1000, 2**20, 2, 1, 1.0, 10.0, 100.0, None, {"read": 8.0}, 0, 0, 0.0, 0.0, {}, "x")
    f = capacity.fit(run, ("cluster",))
    assert f.a == pytest.approx(8.0 / 2**20)  # one partition: one worker did the work
    assert capacity.predict_seconds(f, 1000, 2**20, 128) == pytest.approx(10.0)
    assert capacity.predict_seconds(f, 1000, 4 * 2**20, 128) == pytest.approx(2.0 + 8.0)  # 4 partitions, 4 workers


# ---------------------------------------------------------------------------- end to end


def test_bench_scale_end_to_end_on_real_dask_processes(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    out = tmp_path / "results"
    code = bench_scale.main(
        ["--docs", "1500", "--baseline-docs", "200", "--data-dir", str(tmp_path / "data"), "--results", str(out), "--memory-limit", "2GB"]
    )
    assert code == 0
    res = json.loads((out / "scale-1500.json").read_text())
    local, dask = res["runs"]
    assert local["executor"] == "local" and dask["executor"] == "dask" and local["ok"] and dask["ok"]
    assert res["answers"]["pairs"]["equal"] and res["answers"]["clusters"]["rows_left"] == 1500
    assert dask["report"]["executor"]["type"] == "dask" and dask["baseline"]["ok"]
    assert {"scheduler", "worker-0", "worker-1"} <= set(dask["processes"]) and dask["processes"]["worker-0"]["peak_rss_mb"] > 0
    assert dask["run"]["peak_rss_mb"] > 0 and res["machine"]["nproc"] and res["code"]["sources_sha256"]
    md = (out / "scale-1500.md").read_text()
    assert "| dask |" in md and "equal as sets of rows" in md
    # the scheduler and the workers are gone
    for role in ("scheduler", "worker-0", "worker-1"):
        for pid in dask["processes"][role]["processes_mb"]:
            assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert capacity.main([str(out / "scale-1500.json")]) == 0
