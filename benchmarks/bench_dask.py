"""Benchmark: the same job on the local executor and on a Dask LocalCluster of 2 worker processes.

The documents job of ``bench_documents.py`` (char 5-shingles, ``fss`` K = 128,
LSH (13, 7), exact Jaccard >= 0.8, connected components) on ``--docs``
planted documents, run twice in this process: ``executor: local`` (the
default, ``workers: auto`` = 2 threads) and ``executor: {type: dask, address:
...}`` against a ``LocalCluster(n_workers=2, threads_per_worker=1)`` started
here. Reports wall time, the client's peak RSS and each worker process's peak
RSS (VmHWM read on the worker after the job), checks that pairs.csv and
clusters.csv are byte-identical, and sums the task durations per phase from
the scheduler's task stream: the measured cost per partition behind the
capacity estimate in README.md.

    python benchmarks/bench_dask.py --docs 1000000 --short
    python benchmarks/bench_dask.py --docs 250000 --short --partition-mb 32
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import code_fingerprint, machine_info

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_documents import make_documents  # noqa: E402
from bench_index import write_docs, write_job  # noqa: E402


def _worker_peak() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=1_000_000)
    p.add_argument("--short", action="store_true", help="tweet-like documents (15-30 words)")
    p.add_argument("--partition-mb", type=float, default=32.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", help="result JSON (default benchmarks/results/dask_<docs>[_short].json)")
    a = p.parse_args(argv)
    a.signature = "fss"
    a.words = (15, 30) if a.short else (450, 750)

    from distributed import Client, LocalCluster, get_task_stream

    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job

    scratch = Path(tempfile.mkdtemp(prefix="bench_dask_"))
    try:
        texts, _ = make_documents(a.docs, a.seed, a.words)
        data = scratch / "docs.jsonl"
        write_docs(data, [f"d{i}" for i in range(len(texts))], texts)
        size_mb = data.stat().st_size / 2**20
        del texts
        job = write_job(scratch / "local.yaml", data, a)
        with LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None) as lc, Client(lc) as client:
            dask_job = scratch / "dask.yaml"
            dask_job.write_text(
                job.read_text() + f"executor: {{type: dask, address: '{lc.scheduler_address}', partition_mb: {a.partition_mb}}}\n"
            )
            with get_task_stream(client=client) as ts:
                t1 = time.perf_counter()
                res = run_job(parse_job(dask_job), scratch / "dask")
                dask_s = time.perf_counter() - t1
            worker_peaks = client.run(_worker_peak)
            stream = ts.data
        client_peak = max(st["peak_rss_mb"] for st in res.report["stages"])
        t0 = time.perf_counter()
        local = run_job(parse_job(job), scratch / "local")
        local_s = time.perf_counter() - t0
        local_peak = max(s["peak_rss_mb"] for s in local.report["stages"])
        print(f"local: {local_s:.2f} s, peak {local_peak:.0f} MB, {local.report['verified_pairs']:,} verified pairs", flush=True)
        del local

        same = all((scratch / "local" / f).read_bytes() == (scratch / "dask" / f).read_bytes() for f in ("pairs.csv", "clusters.csv"))
        phases: dict[str, dict[str, float]] = {}
        for t in stream:
            name = str(t["key"]).split("-")[0].strip("('")
            secs = sum(s["stop"] - s["start"] for s in t["startstops"] if s["action"] == "compute")
            ph = phases.setdefault(name, {"tasks": 0, "seconds": 0.0})
            ph["tasks"] += 1
            ph["seconds"] += secs
        parts = res.report["stages"][0]["partitions"]
        work = sum(v["seconds"] for v in phases.values())
        print(
            f"dask ({a.workers} workers): {dask_s:.2f} s ({dask_s / local_s:.2f}x local), client peak {client_peak:.0f} MB, "
            f"worker peaks {sorted(round(v) for v in worker_peaks.values())} MB; {parts} partitions of "
            f"{a.partition_mb} MB ({size_mb:.0f} MB of input); outputs identical: {same}",
            flush=True,
        )
        print(
            f"task seconds per phase: { {k: round(v['seconds'], 2) for k, v in sorted(phases.items())} } "
            f"= {work:.1f} worker-seconds, {work / max(parts, 1):.2f} per partition",
            flush=True,
        )
        out = {
            "docs": a.docs,
            "input_mb": round(size_mb, 1),
            "words": list(a.words),
            "partition_mb": a.partition_mb,
            "partitions": parts,
            "workers": a.workers,
            "local_seconds": round(local_s, 3),
            "local_peak_rss_mb": round(local_peak, 1),
            "dask_seconds": round(dask_s, 3),
            "ratio": round(dask_s / local_s, 3),
            "dask_client_peak_rss_mb": round(client_peak, 1),
            "dask_worker_peak_rss_mb": {k: round(v, 1) for k, v in worker_peaks.items()},
            "outputs_identical": same,
            "task_seconds": phases,
            "worker_seconds": round(work, 2),
            "worker_seconds_per_partition": round(work / max(parts, 1), 3),
            "dask_stages": res.report["stages"],
            "machine": machine_info(("dask", "distributed", "numpy")),
            "code": code_fingerprint(),
            "load_avg": os.getloadavg(),
        }
        target = Path(a.out) if a.out else HERE / "results" / f"dask_{a.docs}{'_short' if a.short else ''}.json"
        target.write_text(json.dumps(out, indent=2))
        print(f"wrote {target}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
