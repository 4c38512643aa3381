"""A capacity model of the Dask executor, fitted on bench_scale.py's measured runs.

    python benchmarks/capacity.py                          # every benchmarks/results/scale-*.json, fit on the largest
    python benchmarks/capacity.py --fit 1000000 --out /tmp/capacity.md
    python benchmarks/capacity.py results/scale-1000000.json results/scale-3000000.json results/scale-10000000.json

**The model.** One Dask run of ``N_f`` documents (``B_f`` bytes of input,
``W_f`` workers, ``P_f`` partitions) and its fixed cost (the same job on
``--baseline-docs`` documents right after, on a fresh cluster, ``T0``) give

    T(N, B, W) = T0 + a * B / min(W, ceil(B / partition)) + c * N
    client(P)  = M0 + m * P          (P partitions: the client holds O(partitions))

* ``a`` — worker-seconds per input byte: the seconds of the stages that run on
  the workers (report.json ``stages`` not in ``--client-stages``; today read,
  block and verify) above the baseline's, over the bytes per worker
  ``B / min(W, P)`` above the baseline's. A stage's seconds are
  its wall time on the client while every worker works, so the work is taken
  as spread evenly over the workers, never over more workers than partitions.
* ``c`` — client seconds per record: the client stages (``--client-stages``:
  normalize, exact_duplicates, diagnostics, cluster) plus what no stage covers
  (the wall time minus the stages: start-up, writing the outputs, report.html),
  above the baseline's, over the records above the baseline's. These do not
  shrink with more workers.
* ``M0``, ``m`` — the client's (the ``er`` process's) peak RSS and its growth
  per partition, between the baseline (or, without one, the measured run with
  the fewest partitions) and the fit. The client holds per-partition counts and
  futures, not records: its need follows the partitions (the shuffles submit
  P x P small tasks), so at thousands of partitions a larger ``partition_mb``
  keeps it small.

Long documents (4,000 characters) are costed by their bytes (shingling,
signatures and verification are linear in characters) with the same ``c`` per
record: an extrapolation from short documents, not a measurement. Each
worker's peak RSS is bounded by its partitions (``partition_mb``), not by the
data size: the fit's worker peak is shown as the need per worker.

**The check.** Every measured Dask run (the fit's too) is predicted from the
fit and shown with the measured wall time and client peak: the model is fitted
on one size (named in the output) and predicts the others.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLIENT_STAGES = ("normalize", "exact_duplicates", "diagnostics", "cluster")
SIZES = (10_000_000, 100_000_000, 1_000_000_000)
WORKERS = (2, 16, 128)
LONG_CHARS = 4000
JSON_OVERHEAD = 25  # bytes of {"id": "d<k>", "text": ""} per line beside the text
DEFAULT_PARTITION_MB = 64.0


@dataclass
class Run:
    """What the model reads of one bench_scale.py result: the Dask run and its baseline."""

    docs: int
    bytes: int
    workers: int
    partitions: int
    partition_mb: float
    wall_s: float
    client_mb: float
    worker_mb: float | None
    stages: dict[str, float]
    base_docs: int
    base_bytes: int
    base_wall_s: float
    base_client_mb: float
    base_stages: dict[str, float]
    source: str


@dataclass
class Fit:
    run: Run
    t0: float  # fixed seconds
    a: float  # worker-seconds per input byte
    c: float  # client seconds per record
    m0: float  # client MB, constant
    m: float  # client MB per partition
    client_stages: tuple[str, ...]


def stage_seconds(stages: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for st in stages:
        out[st["stage"]] = out.get(st["stage"], 0.0) + float(st.get("seconds") or 0.0)
    return out


def read_run(path: Path) -> Run | None:
    """The Dask run of a scale-<N>.json (``None`` when it has none that succeeded)."""
    res = json.loads(path.read_text(encoding="utf-8"))
    row = next((r for r in res.get("runs", []) if r.get("executor") == "dask" and r.get("ok")), None)
    if row is None:
        return None
    ex = row["report"].get("executor") or {}
    base = row.get("baseline") or {}
    base_ok = bool(base.get("ok"))
    workers = [v["peak_rss_mb"] for k, v in row.get("processes", {}).items() if k.startswith("worker")]
    return Run(
        docs=int(res["docs"]),
        bytes=int(res["corpus"]["bytes"]),
        workers=int(ex.get("workers") or row.get("n_workers") or 1),
        partitions=int(ex.get("partitions") or 1),
        partition_mb=float(ex.get("partition_mb") or DEFAULT_PARTITION_MB),
        wall_s=float(row["run"]["wall_s"]),
        client_mb=float(row["run"]["peak_rss_mb"]),
        worker_mb=max(workers) if workers else None,
        stages=stage_seconds(row["report"].get("stages", [])),
        base_docs=int(base.get("docs", 0)) if base_ok else 0,
        base_bytes=int(base.get("bytes", 0)) if base_ok else 0,
        base_wall_s=float(base["run"]["wall_s"]) if base_ok else 0.0,
        base_client_mb=float(base["run"]["peak_rss_mb"]) if base_ok else 0.0,
        base_stages=stage_seconds(base.get("report", {}).get("stages", [])) if base_ok else {},
        source=path.name,
    )


def split_seconds(wall: float, stages: dict[str, float], client_stages: tuple[str, ...]) -> tuple[float, float]:
    """(seconds of the worker stages, seconds on the client: client stages + the wall time no stage covers)."""
    on_workers = sum(s for name, s in stages.items() if name not in client_stages)
    return on_workers, wall - on_workers


def fit(run: Run, client_stages: tuple[str, ...] = CLIENT_STAGES, client_ref: Run | None = None) -> Fit:
    """The model's constants from one run and its baseline (see the module docstring); ``client_ref``: the
    run the client's growth per partition is measured from when ``run`` has no baseline."""
    w, c = split_seconds(run.wall_s, run.stages, client_stages)
    bw, bc = split_seconds(run.base_wall_s, run.base_stages, client_stages) if run.base_docs else (0.0, 0.0)
    d_docs = max(run.docs - run.base_docs, 1)
    # worker seconds = a * B / min(W, P) for the run and for its baseline (one partition, or a few)
    base_partitions = max(1, math.ceil(run.base_bytes / (run.partition_mb * 2**20)))
    base_share = run.base_bytes / min(run.workers, base_partitions)
    a = max(w - bw, 0.0) / max(run.bytes / min(run.workers, run.partitions) - base_share, 1.0)
    per_record = max(c - bc, 0.0) / d_docs
    # the client: from the baseline, else from another measured run with fewer partitions
    ref_parts, ref_mb = (base_partitions, run.base_client_mb) if run.base_docs else (0, 0.0)
    if not run.base_docs and client_ref is not None and client_ref.partitions < run.partitions:
        ref_parts, ref_mb = client_ref.partitions, client_ref.client_mb
    m = max(run.client_mb - ref_mb, 0.0) / max(run.partitions - ref_parts, 1)
    # the constants take the baseline's own (small) variable part out: the fit run is reproduced exactly
    t0 = run.base_wall_s - a * base_share - per_record * run.base_docs
    m0 = run.client_mb - m * run.partitions
    return Fit(run=run, t0=t0, a=a, c=per_record, m0=m0, m=m, client_stages=client_stages)


def predict_seconds(f: Fit, docs: int, n_bytes: float, workers: int, partition_mb: float | None = None) -> float:
    partitions = max(1, math.ceil(n_bytes / ((partition_mb or f.run.partition_mb) * 2**20)))
    return f.t0 + f.a * n_bytes / min(workers, partitions) + f.c * docs


def partitions_of(n_bytes: float, partition_mb: float) -> int:
    return max(1, math.ceil(n_bytes / (partition_mb * 2**20)))


def predict_client_mb(f: Fit, partitions: int) -> float:
    return f.m0 + f.m * partitions


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def memory(mb: float) -> str:
    return f"{mb:,.0f} MB" if mb < 10_000 else f"{mb / 1024:,.0f} GB"


def count(n: int) -> str:
    for unit, div in (("B", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= div and n % (div // 10) == 0:
            return f"{n / div:g} {unit}"
    return f"{n:,}"


def client_verdict(f: Fit) -> str:
    """What the client's need follows: a few MB per partition at most is O(partitions), not O(records)."""
    if f.m <= 5:
        return f"the client's need follows the partitions, not the records ({f.m:.2f} MB per partition)"
    return f"the client's need grows fast with the partitions ({f.m:,.1f} MB per partition): check what it holds"


def formula_lines(f: Fit) -> list[str]:
    r = f.run
    parts = f"{r.partitions} partition{'s' if r.partitions != 1 else ''} of {r.partition_mb:g} MB"
    return [
        f"Fitted on the Dask run of **{r.docs:,} documents** ({r.source}: {r.bytes / 2**20:,.0f} MB, {r.workers} workers, "
        f"{parts}; fixed cost from its {r.base_docs:,}-document baseline); every other run is predicted, not fitted.",
        "",
        "```text",
        "T(N docs, B bytes, W workers) = T0 + a * B / min(W, ceil(B / partition)) + c * N",
        "client peak RSS (P partitions) = M0 + m * P",
        "```",
        "",
        f"- T0 = {f.t0:.2f} s (start-up, connection, cold workers, tasks: the baseline run less its variable part)",
        f"- a = {f.a * 2**20:.3f} worker-seconds per MB of input (stages on the workers: every stage but {', '.join(f.client_stages)})",
        f"- c = {f.c * 1e6:.2f} client seconds per million records ({', '.join(f.client_stages)}, and the time no stage covers: "
        "start-up, writing, report.html)",
        f"- M0 = {f.m0:,.0f} MB, m = {f.m:.2f} MB per partition (the client's peak RSS: its growth to the fit): " + client_verdict(f),
        f"- each worker: {memory(f.run.worker_mb) if f.run.worker_mb else 'not measured'} at the fit "
        f"(bounded by its partitions of {r.partition_mb:g} MB, not by the data size)",
    ]


def prediction_table(f: Fit, short_bytes: float) -> list[str]:
    """Wall time per size, kind and worker count, and the client's need."""
    kinds = {"short (tweet)": short_bytes, f"long ({LONG_CHARS:,} chars)": LONG_CHARS + JSON_OVERHEAD}
    head = "| documents | kind | input | " + " | ".join(f"{w} workers" for w in WORKERS) + " | client |"
    lines = [head, "|---|---|---:|" + "---:|" * (len(WORKERS) + 1)]
    for docs in SIZES:
        for kind, per_doc in kinds.items():
            b = docs * per_doc
            cells = [duration(predict_seconds(f, docs, b, w)) for w in WORKERS]
            client = predict_client_mb(f, partitions_of(b, f.run.partition_mb))
            lines.append(f"| {count(docs)} | {kind} | {memory(b / 2**20)} | " + " | ".join(cells) + f" | {memory(client)} |")
    return lines


def check_table(f: Fit, runs: list[Run]) -> list[str]:
    """Every measured run against the model's prediction for it."""
    lines = [
        "| measured run | workers | wall measured | wall predicted | error | client measured | client predicted |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(runs, key=lambda r: r.docs):
        t = predict_seconds(f, r.docs, r.bytes, r.workers, r.partition_mb)
        mb = predict_client_mb(f, r.partitions)
        tag = " (fit)" if r is f.run else ""
        lines.append(
            f"| {r.docs:,}{tag} | {r.workers} | {r.wall_s:.1f} s | {t:.1f} s | {(t - r.wall_s) / r.wall_s:+.0%} "
            f"| {r.client_mb:,.0f} MB | {mb:,.0f} MB |"
        )
    return lines


def report(runs: list[Run], fit_docs: int | None, client_stages: tuple[str, ...]) -> str:
    """The Markdown of the model: formula and constants, predictions, check against the measured runs."""
    chosen = max(runs, key=lambda r: r.docs) if fit_docs is None else next((r for r in runs if r.docs == fit_docs), None)
    if chosen is None:
        raise ValueError(f"no measured Dask run of {fit_docs:,} documents to fit on (measured: {sorted(r.docs for r in runs)})")
    others = [r for r in runs if r is not chosen and r.partitions < chosen.partitions]
    f = fit(chosen, client_stages, min(others, key=lambda r: (r.partitions, -r.docs)) if others else None)
    lines = ["## Capacity of the Dask executor (model)", "", *formula_lines(f), ""]
    lines += ["Predicted wall time of `er run` (documents job) and the client's peak RSS:", ""]
    lines += [*prediction_table(f, chosen.bytes / chosen.docs), ""]
    lines += ["Check: the model's prediction for each measured run (same machine, same job):", "", *check_table(f, runs), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="*", type=Path, help="scale-<N>.json files (default benchmarks/results/scale-*.json)")
    p.add_argument("--fit", type=int, default=None, help="fit on the run of this many documents (default the largest)")
    p.add_argument("--client-stages", default=",".join(CLIENT_STAGES), help="report.json stages that run on the client")
    p.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    a = p.parse_args(argv)
    files = a.results or sorted((HERE / "results").glob("scale-*.json"))
    runs = [r for r in (read_run(f) for f in files) if r is not None]
    if not runs:
        print(f"error: no successful Dask run in {', '.join(map(str, files)) or 'benchmarks/results/scale-*.json'}", file=sys.stderr)
        return 2
    try:
        text = report(runs, a.fit, tuple(s.strip() for s in a.client_stages.split(",") if s.strip()))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text)
    if a.out is not None:
        a.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
