"""Benchmark: whole ``er run`` processes of the documents job on the local executor and on a Dask cluster.

Issue 30's measurement, repeatable. For each ``--docs`` size:

1. a JSONL corpus of tweet-sized documents (15-30 real English words, 20%
   near-duplicates; ``scale_corpus.py``) is generated once, streamed to disk,
   and cached under ``--data-dir`` (default /tmp/bench-data/scale);
2. the job is ``configs/documents.yaml`` with its source path replaced and
   nothing else changed; the Dask run's copy adds
   ``executor: {type: dask, address: tcp://127.0.0.1:PORT}`` (and
   ``partition_mb`` with ``--partition-mb``);
3. for the Dask run, ``dask scheduler`` and ``--workers`` (2) ``dask worker``
   processes (``--nthreads 1``, ``--memory-limit``, default 8GB) are started,
   each in its own process group, and stopped at the end (also on failure and
   Ctrl-C); ``python -m er_framework run job.yaml --out DIR`` is measured by
   ``measure.py`` started as its own small process: wall time and peak RSS of
   the ``er`` process, which is the Dask client; the scheduler's and each
   worker's peak RSS are sampled from /proc (``VmHWM``) every 0.25 s;
4. the local executor runs the same job in the same session (``--executors``,
   ``--no-local``), and the two runs' pairs and clusters are compared as
   multisets of rows (64-bit row hashes, streamed, sorted: 10 M rows fit);
5. ``benchmarks/results/scale-<N>.json`` and ``.md`` hold the machine, the code
   fingerprint, the commands and the figures; ``capacity.py`` reads them.

    python benchmarks/bench_scale.py --docs 100000
    python benchmarks/bench_scale.py --docs 1000000 3000000 10000000 --executors local,dask
    python benchmarks/bench_scale.py --docs 3000000 --no-local --partition-mb 64 --memory-limit 6GB

``er`` is this checkout's code (``python -m er_framework`` with PYTHONPATH set
to the repository, also for the scheduler and the workers).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import scale_corpus  # noqa: E402
from common import code_fingerprint, machine_info  # noqa: E402
from measure import descendants  # noqa: E402

TEMPLATE = ROOT / "configs" / "documents.yaml"
SOURCE_PATH = re.compile(r"^(?P<head>\s*path:\s*)data/docs\.jsonl(?P<tail>\s*(#.*)?)$", re.MULTILINE)
EXECUTORS = ("local", "dask")
TABLES = ("pairs", "clusters")
DISTS = ("numpy", "pyarrow", "pandas", "dask", "distributed")


# ----------------------------------------------------------------------------
# the job


def job_text(template: str, data: Path, address: str | None = None, partition_mb: float | None = None) -> str:
    """``template`` (configs/documents.yaml) with its source path set to ``data``; an executor line for Dask."""
    text, n = SOURCE_PATH.subn(lambda m: f"{m['head']}{json.dumps(str(data))}{m['tail']}", template)
    if n != 1:
        raise ValueError(f"{TEMPLATE}: expected one 'path: data/docs.jsonl' line to replace, found {n}")
    if address is not None:
        extra = "" if partition_mb is None else f", partition_mb: {partition_mb:g}"
        text = text.rstrip("\n") + f"\n\nexecutor: {{type: dask, address: {json.dumps(address)}{extra}}}\n"
    return text


def child_env() -> dict[str, str]:
    """This environment with the repository first on PYTHONPATH (er, the scheduler and workers run this checkout)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return env


def er_command(job: Path, out: Path, report: bool) -> list[str]:
    return [sys.executable, "-m", "er_framework", "run", str(job), "--out", str(out), "-q", *([] if report else ["--no-report"])]


# ----------------------------------------------------------------------------
# processes: peak RSS from /proc, process groups stopped for sure


def proc_status_kb(pid: int, key: str) -> int:
    """``VmHWM`` / ``VmRSS`` of a process in kB from /proc/<pid>/status (0 when gone or not Linux)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def stop_group(proc: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM to the process group of ``proc`` (started with ``start_new_session``), SIGKILL after ``grace`` s.

    Only processes of that group are signalled: ``proc`` while it runs and the descendants it had (a nanny's
    worker) that are still in the group after it ended."""
    members = descendants(proc.pid) if proc.poll() is None else []
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(pid) == proc.pid:
                os.kill(pid, signal.SIGKILL)


class PeakSampler:
    """Largest ``VmHWM`` of every process of each named tree, sampled by a thread every ``interval`` s."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.roots: dict[str, int] = {}
        self.hwm_kb: dict[str, dict[int, int]] = {}
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, role: str, pid: int) -> None:
        with self._lock:
            self.roots[role] = pid
            self.hwm_kb.setdefault(role, {})
        self.sample()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def sample(self) -> None:
        with self._lock:
            for role, root in self.roots.items():
                seen = self.hwm_kb[role]
                for pid in [root, *descendants(root)]:
                    kb = proc_status_kb(pid, "VmHWM")
                    if kb > seen.get(pid, 0):
                        seen[pid] = kb

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self.sample()
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def peaks(self) -> dict[str, dict[str, Any]]:
        """Per role: the largest process's peak (the worker, not its nanny) and every process's, MB."""
        out: dict[str, dict[str, Any]] = {}
        self.sample()
        with self._lock:
            for role, seen in self.hwm_kb.items():
                per = {str(pid): round(kb / 1024, 1) for pid, kb in sorted(seen.items())}
                out[role] = {"peak_rss_mb": max(per.values(), default=None), "processes_mb": per}
        return out


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_line(log: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float, role: str = "process") -> None:
    """Wait until ``needle`` appears in ``log``; a clear error when ``proc`` exits first or ``timeout`` passes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if needle in text:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the {role} exited with {proc.returncode} before {needle!r}; its log {log}:\n{text[-2000:]}")
        time.sleep(0.1)
    raise RuntimeError(f"no {needle!r} in {log} after {timeout:.0f} s")


class DaskProcesses:
    """``dask scheduler`` and ``n_workers`` ``dask worker`` processes on 127.0.0.1, each in its own process group."""

    def __init__(self, workdir: Path, n_workers: int = 2, memory_limit: str = "8GB", start_timeout: float = 120.0) -> None:
        self.workdir = workdir
        self.n_workers = n_workers
        self.memory_limit = memory_limit
        self.start_timeout = start_timeout
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sampler = PeakSampler()
        self.address = ""

    def _spawn(self, role: str, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.workdir / f"{role}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "dask", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=child_env(),
                start_new_session=True,
            )
        self.procs.append(proc)
        self.sampler.watch(role, proc.pid)
        return proc, log

    def start(self) -> DaskProcesses:
        self.workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        sched, log = self._spawn("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"])
        wait_for_line(log, "Scheduler at:", sched, self.start_timeout, "dask scheduler")
        workers = []
        for i in range(self.n_workers):
            args = ["worker", self.address, "--nthreads", "1", "--memory-limit", self.memory_limit, "--no-dashboard"]
            args += ["--host", "127.0.0.1", "--name", f"worker-{i}", "--local-directory", str(self.workdir / f"worker-{i}")]
            workers.append(self._spawn(f"worker-{i}", args))
        for i, (proc, log) in enumerate(workers):
            wait_for_line(log, "Registered to:", proc, self.start_timeout, f"dask worker {i}")
        return self

    def stop(self) -> None:
        self.sampler.stop()
        for proc in reversed(self.procs):  # workers first, then the scheduler
            stop_group(proc)

    def peaks(self) -> dict[str, dict[str, Any]]:
        return self.sampler.peaks()

    def __enter__(self) -> DaskProcesses:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ----------------------------------------------------------------------------
# one measured run


def measured(cmd: list[str], result: Path, log: Path, timeout: float | None) -> dict[str, Any]:
    """``cmd`` measured by measure.py in its own small process (its RSS is not folded into the command's)."""
    launcher = [sys.executable, str(HERE / "measure.py"), "--out", str(result), "--stdout", str(log), "--stderr", str(log)]
    if timeout is not None:
        launcher += ["--timeout", str(timeout)]
    proc = subprocess.Popen([*launcher, "--", *cmd], env=child_env(), start_new_session=True)
    try:
        proc.wait()
    finally:
        if proc.poll() is None:  # interrupted: stop the measured command's own group, then the launcher
            for pid in descendants(proc.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGTERM)
            stop_group(proc)
    doc: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return dict(doc["best"])


def report_facts(out: Path) -> dict[str, Any]:
    """What capacity.py needs of report.json: the stages, counts, the executor section, input bytes."""
    try:
        rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    keys = ("records", "candidate_pairs", "verified_pairs", "pairs_written", "seconds_total", "peak_rss_mb", "executor", "workers")
    facts = {k: rep.get(k) for k in keys}
    facts["clusters"] = (rep.get("clusters") or {}).get("count") if isinstance(rep.get("clusters"), dict) else None
    facts["stages"] = rep.get("stages", [])
    return facts


def measure_job(label: str, text: str, a: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Write the job ``work/<label>.yaml``, measure ``er run`` of it into ``work/<label>/``."""
    out = work / label
    shutil.rmtree(out, ignore_errors=True)
    job = work / f"{label}.yaml"
    job.write_text(text, encoding="utf-8")
    cmd = er_command(job, out, a.report)
    got: dict[str, Any] = {"run": measured(cmd, work / f"{label}-measure.json", work / f"{label}.log", a.timeout)}
    got["command"] = ["python" if c == sys.executable else c for c in cmd]
    got["report"] = report_facts(out)
    got["ok"] = got["run"]["exit_code"] == 0 and not got["run"]["timed_out"]
    if not got["ok"]:
        got["log_tail"] = (work / f"{label}.log").read_text(encoding="utf-8", errors="replace")[-3000:]
    return got


def with_baseline(row: dict[str, Any], name: str, a: argparse.Namespace, work: Path) -> None:
    """The fixed cost: the same job on ``--baseline-docs`` documents after the measured run (Dask: on a fresh cluster too)."""
    if not a.baseline_docs or not row["ok"]:
        return
    data, corpus = scale_corpus.ensure_corpus(Path(a.data_dir), a.baseline_docs, a.seed)
    template = TEMPLATE.read_text(encoding="utf-8")
    label = f"{name}-baseline"
    if name == "local":
        base = measure_job(label, job_text(template, data), a, work)
    else:
        with DaskProcesses(work / "dask-cluster-baseline", a.workers, a.memory_limit) as cluster:
            base = measure_job(label, job_text(template, data, cluster.address, a.partition_mb), a, work)
    row["baseline"] = {"docs": a.baseline_docs, "bytes": corpus["bytes"], **base}
    shutil.rmtree(work / label, ignore_errors=True)


def run_executor(name: str, a: argparse.Namespace, data: Path, work: Path) -> dict[str, Any]:
    """One measured ``er run`` of the documents job on ``name`` (local or dask); outputs in work/<name>."""
    template = TEMPLATE.read_text(encoding="utf-8")
    if name == "local":
        row = {"executor": name, **measure_job(name, job_text(template, data), a, work)}
    else:
        with DaskProcesses(work / "dask-cluster", a.workers, a.memory_limit) as cluster:
            row = {"executor": name, **measure_job(name, job_text(template, data, cluster.address, a.partition_mb), a, work)}
            cluster.stop()
            row["processes"] = cluster.peaks()
        row["memory_limit"] = a.memory_limit
        row["n_workers"] = a.workers
    with_baseline(row, name, a, work)
    return row


# ----------------------------------------------------------------------------
# answers compared as multisets of rows


def table_files(out: Path, name: str) -> list[Path]:
    """The files holding table ``name`` of an output folder: name.csv, name.parquet, or the parts of a name/ folder."""
    for f in (out / f"{name}.csv", out / f"{name}.parquet"):
        if f.is_file():
            return [f]
    folder = out / name
    if folder.is_dir():
        return sorted(p for p in folder.rglob("*") if p.suffix in (".parquet", ".csv") and p.is_file())
    return []


def _batches(path: Path, batch_rows: int) -> Iterator[Any]:
    """Record batches of a CSV or Parquet file, every column as a string (CSV: nothing parsed)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if path.suffix == ".parquet":
        for b in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
            yield pa.RecordBatch.from_arrays([c.cast(pa.string()) for c in b.columns], names=b.schema.names)
        return
    with open(path, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f), [])
    convert = pcsv.ConvertOptions(
        column_types={c: pa.string() for c in header}, strings_can_be_null=False, quoted_strings_can_be_null=False
    )
    reader = pcsv.open_csv(path, read_options=pcsv.ReadOptions(block_size=64 << 20), convert_options=convert)
    yield from reader


def row_hashes(files: list[Path], batch_rows: int = 1 << 18) -> tuple[list[str], Any]:
    """The sorted 64-bit hashes of every row (columns in name order) and the column names."""
    import numpy as np
    import pandas as pd

    parts = []
    columns: list[str] = []
    for f in files:
        for batch in _batches(f, batch_rows):
            columns = sorted(batch.schema.names)
            frame = batch.to_pandas()[columns]
            parts.append(pd.util.hash_pandas_object(frame, index=False).to_numpy(np.uint64))
    hashes = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    hashes.sort()
    return columns, hashes


def multiset_difference(a: Any, b: Any) -> tuple[int, int]:
    """Rows of ``a`` not matched in ``b`` and of ``b`` not matched in ``a``, counting repeats (sorted uint64 arrays)."""
    import numpy as np

    ua, ca = np.unique(a, return_counts=True)
    ub, cb = np.unique(b, return_counts=True)
    keys = np.union1d(ua, ub)
    na = np.zeros(len(keys), np.int64)
    nb = np.zeros(len(keys), np.int64)
    na[np.searchsorted(keys, ua)] = ca
    nb[np.searchsorted(keys, ub)] = cb
    return int(np.maximum(na - nb, 0).sum()), int(np.maximum(nb - na, 0).sum())


def compare_tables(left: Path, right: Path, name: str) -> dict[str, Any]:
    """Table ``name`` of two output folders as multisets of rows: equal or not, and how many rows differ."""
    fl, fr = table_files(left, name), table_files(right, name)
    if not fl or not fr:
        return {"equal": False, "note": f"{name} missing in {left if not fl else right}"}
    cols_l, hl = row_hashes(fl)
    cols_r, hr = row_hashes(fr)
    only_l, only_r = multiset_difference(hl, hr)
    out: dict[str, Any] = {"rows_left": len(hl), "rows_right": len(hr), "only_left": only_l, "only_right": only_r}
    out["equal"] = cols_l == cols_r and only_l == 0 and only_r == 0
    if cols_l != cols_r:
        out["note"] = f"columns differ: {cols_l} vs {cols_r}"
    return out


# ----------------------------------------------------------------------------
# results


def fmt_mb(v: Any) -> str:
    return "–" if v is None else f"{v:,.0f}"


def stage_seconds(row: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for st in row.get("report", {}).get("stages", []):
        out[st["stage"]] = round(out.get(st["stage"], 0.0) + float(st.get("seconds", 0.0)), 3)
    return out


def run_line(row: dict[str, Any]) -> str:
    """One executor's row of the Markdown table."""
    run, rep = row["run"], row.get("report", {})
    procs = row.get("processes", {})
    workers = ", ".join(fmt_mb(v["peak_rss_mb"]) for k, v in sorted(procs.items()) if k.startswith("worker")) or "–"
    executor = rep.get("executor")
    records = rep.get("records")
    records = records.get("total") if isinstance(records, dict) else records
    partitions = executor.get("partitions", "–") if isinstance(executor, dict) else "–"
    name = row["executor"] + ("" if row["ok"] else " (failed)")
    scheduler = fmt_mb(procs.get("scheduler", {}).get("peak_rss_mb"))
    cells = [
        name,
        f"{run['wall_s']:.2f}",
        fmt_mb(run["peak_rss_mb"]),
        scheduler,
        workers,
        partitions,
        records,
        rep.get("verified_pairs"),
    ]
    return "| " + " | ".join("–" if c is None else str(c) for c in cells) + " |"


def answer_line(name: str, cmp: dict[str, Any]) -> str:
    verdict = "equal" if cmp["equal"] else "NOT equal"
    rows = f"{cmp.get('rows_left', 0):,} local rows, {cmp.get('rows_right', 0):,} Dask rows"
    differ = f"{cmp.get('only_left', 0):,} only local, {cmp.get('only_right', 0):,} only Dask"
    return f"- {name}: {verdict} as sets of rows ({rows}; {differ}){'; ' + cmp['note'] if cmp.get('note') else ''}"


def stage_table(runs: list[dict[str, Any]]) -> list[str]:
    """Seconds per report.json stage, one row per executor, stages in the order they ran."""
    names: list[str] = []
    for row in runs:
        names += [s for s in stage_seconds(row) if s not in names]
    lines = ["| executor | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for row in runs:
        secs = stage_seconds(row)
        lines.append(f"| {row['executor']} | " + " | ".join(f"{secs[n]:.2f}" if n in secs else "–" for n in names) + " |")
    return lines


def markdown(res: dict[str, Any]) -> str:
    """The result as a Markdown page: one row per executor, the answers, the stages, the commands."""
    corpus, machine = res["corpus"], res["machine"]
    about = (
        f"{corpus['bytes'] / 2**20:,.0f} MB of JSONL ({corpus['generator']}, seed {corpus['seed']}, "
        f"{corpus['words'][0]}-{corpus['words'][1]} words, {corpus['near_duplicate_share']:.0%} near-duplicates); "
        f"{machine['nproc']} cores, {machine['memory_gb']} GB; git {res['code']['git_head'][:10]}; "
        f"load average before {res['load_avg_before'][0]:.2f}."
    )
    lines = [f"# Scale benchmark: {res['docs']:,} tweet-sized documents", "", about, ""]
    lines += ["| executor | wall s | er (client) peak MB | scheduler peak MB | worker peaks MB | partitions | records | verified pairs |"]
    lines += ["|---|---:|---:|---:|---:|---:|---:|---:|", *(run_line(row) for row in res["runs"])]
    if "ratio" in res:
        lines += ["", f"Dask / local wall time: **{res['ratio']:.2f}×**."]
    fixed = [f"{r['executor']} {r['baseline']['run']['wall_s']:.2f} s" for r in res["runs"] if r.get("baseline", {}).get("ok")]
    if fixed:
        docs = next(r["baseline"]["docs"] for r in res["runs"] if "baseline" in r)
        lines += ["", f"Fixed cost (the same job on {docs:,} documents, right after, Dask on a fresh cluster): {', '.join(fixed)}."]
    lines += ["", *(answer_line(name, cmp) for name, cmp in res.get("answers", {}).items())]
    lines += ["", "Seconds per stage (report.json `stages`):", "", *stage_table(res["runs"])]
    lines += ["", "Commands:", "", "```console", f"$ {res['command']}", *(f"$ {' '.join(row['command'])}" for row in res["runs"])]
    return "\n".join([*lines, "```", ""])


def compare_runs(runs: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    done = {r["executor"]: r for r in runs if r["ok"]}
    if set(EXECUTORS) - set(done):
        return {}
    return {name: compare_tables(work / "local", work / "dask", name) for name in TABLES}


def bench_size(n: int, a: argparse.Namespace, command: str) -> dict[str, Any]:
    """Generate (or reuse) the corpus of ``n`` documents, run every executor, compare, write the results."""
    t0 = time.perf_counter()
    data, corpus = scale_corpus.ensure_corpus(Path(a.data_dir), n, a.seed)
    print(f"{n:,} documents: {data} ({corpus['bytes'] / 2**20:,.0f} MB; ready in {time.perf_counter() - t0:.1f} s)", flush=True)
    work = Path(a.data_dir) / "runs" / str(n)
    work.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {"docs": n, "command": command, "corpus": corpus, "load_avg_before": os.getloadavg(), "runs": []}
    for name in a.executors:
        row = run_executor(name, a, data, work)
        res["runs"].append(row)
        print(f"  {name}: {row['run']['wall_s']:.2f} s, er peak {fmt_mb(row['run']['peak_rss_mb'])} MB, ok {row['ok']}", flush=True)
        if not row["ok"]:
            print(row.get("log_tail", ""), file=sys.stderr)
    walls = {r["executor"]: r["run"]["wall_s"] for r in res["runs"] if r["ok"]}
    if len(walls) == 2:
        res["ratio"] = round(walls["dask"] / walls["local"], 3)
    res["answers"] = compare_runs(res["runs"], work)
    for name, cmp in res["answers"].items():
        print(" " + answer_line(name, cmp)[1:], flush=True)
    res["load_avg_after"] = os.getloadavg()
    res["machine"] = machine_info(DISTS)
    res["code"] = code_fingerprint()
    if not a.keep:
        for name in a.executors:
            shutil.rmtree(work / name, ignore_errors=True)
    return res


def write_results(res: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"scale-{res['docs']}.json"
    target.write_text(json.dumps(res, indent=1), encoding="utf-8")
    target.with_suffix(".md").write_text(markdown(res), encoding="utf-8")
    return target


# ----------------------------------------------------------------------------


def executor_list(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in EXECUTORS]
    if bad or not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(EXECUTORS)} (each once), got {text!r}")
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, nargs="+", default=[100_000], help="corpus sizes, one run each (default 100000)")
    p.add_argument("--executors", type=executor_list, default=list(EXECUTORS), help="local,dask (the order they run in)")
    p.add_argument("--no-local", action="store_true", help="skip the local run (same as --executors dask)")
    p.add_argument("--workers", type=int, default=2, help="dask worker processes (default 2)")
    p.add_argument("--memory-limit", default="8GB", help="each worker's --memory-limit (default 8GB)")
    p.add_argument("--partition-mb", type=float, default=None, help="executor partition_mb (default: the executor's)")
    p.add_argument("--no-report", dest="report", action="store_false", help="er run --no-report (no report.html)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", default="/tmp/bench-data/scale", help="corpora and run folders (default /tmp/bench-data/scale)")
    p.add_argument("--results", default=str(HERE / "results"), help="folder of scale-<N>.json/.md (default benchmarks/results)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per er run (default none)")
    p.add_argument("--baseline-docs", type=int, default=1000, help="the fixed cost: a run this small after each run (0: none)")
    p.add_argument("--keep", action="store_true", help="keep the output folders of the runs")
    a = p.parse_args(argv)
    if a.no_local:
        a.executors = [x for x in a.executors if x != "local"] or ["dask"]
    if any(n < 1 for n in a.docs) or a.workers < 1:
        p.error("--docs and --workers must be >= 1")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    command = "python benchmarks/bench_scale.py " + " ".join(sys.argv[1:] if argv is None else argv)
    # finally blocks stop the cluster on SIGTERM and on Ctrl-C (also when started where SIGINT was ignored)
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143)), signal.signal(signal.SIGINT, signal.default_int_handler)
    failed = False
    try:
        for n in a.docs:
            res = bench_size(n, a, command)
            print(f"wrote {write_results(res, Path(a.results))}", flush=True)
            failed |= not all(r["ok"] for r in res["runs"]) or not all(c["equal"] for c in res["answers"].values())
    except KeyboardInterrupt:
        print("interrupted: the er run, the scheduler and the workers were stopped", file=sys.stderr)
        return 130
    except RuntimeError as exc:  # a scheduler or worker that did not start (its log is quoted)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
