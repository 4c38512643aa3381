"""Whole processes, side by side (issue 15): `er run` with a shipped config, the contenders, and the physical floor.

For each scenario this script runs, one after the other and each as a whole
process started by ``benchmarks/measure.py`` (wall time and peak RSS measured
from outside the process, children included):

* ``er run <job.yaml> --force``, where ``job.yaml`` is the shipped
  ``configs/<name>.yaml`` with only ``sources[*].path`` and ``output.dir``
  replaced (checked: the parsed YAML differs from the shipped one in those
  keys only) — diagnostics, exact duplicates, report.html all as shipped;
* the contenders as whole processes (datasketch and rensa via
  ``bench_documents.py --worker``, Splink and recordlinkage via
  ``contenders.py``) reading the same files and writing their pairs;
* the physical floor (``floor.py``): read the input bytes, decode UTF-8, hash
  every character position once on every core;

then scores every job's pairs against the truth, prints one table per scenario
(plus er's stage breakdown from its report.json) and writes
``benchmarks/results/whole-<scenario>.json`` and ``whole-summary.md``.

Run from the repository root (see benchmarks/README.md, "Whole processes")::

    python benchmarks/bench_whole.py                                  # every scenario, full size
    python benchmarks/bench_whole.py --scenarios febrl4,documents-realtext --docs 2000 --results-dir /tmp/w
"""

from __future__ import annotations

import argparse
import compileall
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import code_fingerprint, machine_info

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONFIGS = ROOT / "configs"
MEASURE = HERE / "measure.py"
FLOOR = HERE / "floor.py"
REALTEXT = HERE / "realtext.py"
CONTENDERS_PY = HERE / "contenders.py"
BENCH_DOCUMENTS = HERE / "bench_documents.py"

SCENARIOS = ["startup", "documents-realtext", "febrl4", "febrl3", "customers-100k", "customers-1m", "documents-1m"]
CONTENDERS = ["datasketch", "rensa-rminhash", "splink", "recordlinkage"]
#: sizes of the scenarios at full size (a smaller value is a smoke run: its files get a size suffix)
DEFAULT_SIZES = {"docs": 20000, "docs_1m": 1_000_000, "customers": 100_000, "customers_1m": 1_000_000}
STARTUP_REPEAT = 5
DISTS = ("er-framework", "numpy", "datasketch", "rensa", "splink", "duckdb", "recordlinkage", "pandas")


# ----------------------------------------------------------------------------
# processes


def er_command() -> list[str]:
    """The ``er`` console script of this interpreter's environment (what a user types)."""
    exe = Path(sys.executable).with_name("er")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("er")
    return [found] if found else [sys.executable, "-m", "er_framework"]


@dataclass
class Job:
    name: str
    role: str  # "er", "contender" or "floor"
    cmd: list[str]
    pairs: Path | None = None  # the pairs file the job writes
    out_dir: Path | None = None  # er: output folder
    measured: dict[str, Any] = field(default_factory=dict)  # measure.py's result: runs, best, ok
    error: str | None = None


def measure_once(job: Job, work: Path, timeout: float, poll: float) -> dict[str, Any]:
    """One run of ``job`` under measure.py; its stdout/stderr appended to ``work/<name>.out/.err``."""
    tag = job.name.replace(" ", "_")
    out = work / f"{tag}.measure.json"
    cmd = [
        sys.executable,
        str(MEASURE),
        "--out",
        str(out),
        "--timeout",
        str(timeout),
        "--poll",
        str(poll),
        "--cwd",
        str(work),
        "--stdout",
        str(work / f"{tag}.out"),
        "--stderr",
        str(work / f"{tag}.err"),
        "--",
        *job.cmd,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"measure.py failed: {proc.stderr.strip()[-500:]}")
    return json.loads(out.read_text())["runs"][0]


def run_side_by_side(jobs: list[Job], work: Path, repeat: int, timeout: float, poll: float) -> None:
    """``repeat`` rounds; each round runs every job once, in order (rounds interleave, so drift in the
    machine's load touches every job alike). A job that fails is not run again."""
    for rnd in range(repeat):
        for job in jobs:
            if job.error:
                continue
            print(f"  [{rnd + 1}/{repeat}] {job.name} ...", end="", flush=True)
            run = measure_once(job, work, timeout, poll)
            job.measured.setdefault("runs", []).append(run)
            if run["timed_out"] or run["exit_code"] != 0:
                err = work / f"{job.name.replace(' ', '_')}.err"
                tail = err.read_text(errors="replace").strip().splitlines()[-3:] if err.exists() else []
                job.error = (f"timed out after {timeout:.0f} s" if run["timed_out"] else f"exit {run['exit_code']}") + (
                    ": " + " | ".join(tail) if tail else ""
                )
                print(f" FAILED ({job.error})", flush=True)
                continue
            if job.out_dir is not None and (job.out_dir / "report.json").exists():
                # keep each run's report.json: the stage breakdown shown is that of the best run
                kept = work / f"{job.name.replace(' ', '_')}.report.{rnd + 1}.json"
                shutil.copyfile(job.out_dir / "report.json", kept)
                run["report_json"] = str(kept)
            print(f" {run['wall_s']:.2f} s, {run['peak_rss_mb']:.0f} MB", flush=True)
    for job in jobs:
        ok = [r for r in job.measured.get("runs", []) if r["exit_code"] == 0 and not r["timed_out"]]
        if ok and not job.error:
            job.measured["best"] = min(ok, key=lambda r: r["wall_s"])


def prepare_bytecode(compiled: bool) -> str:
    """Give every measured process the project's bytecode as a user has it, and say which.

    ``pip install`` compiles the installed modules to ``.pyc`` files, and an editable install writes them
    on its first run; an environment with ``PYTHONDONTWRITEBYTECODE`` set (this sandbox's is) never has
    them, so every ``er`` start would recompile ~100 modules (~0.2 s). By default the project's packages
    are compiled here once, and the variable is removed from the environment the processes inherit; the
    contenders' packages were compiled by pip when they were installed."""
    if not compiled:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        return "bytecode: none (recompiled at every start)"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    root = HERE.parent
    for pkg in ("er_framework", "er_plugins"):
        compileall.compile_dir(str(root / pkg), quiet=1)
    return "bytecode: compiled (as after pip install)"


def warm_cache(files: list[Path]) -> None:
    """Read every input once so that every job finds it in the page cache (the first job is not charged
    for the disk)."""
    for f in files:
        with open(f, "rb", buffering=0) as fh:
            while fh.read(1 << 24):
                pass


# ----------------------------------------------------------------------------
# the shipped job with its paths changed


def _yaml_str(path: Path) -> str:
    return json.dumps(str(path))  # a double-quoted YAML scalar


def shipped_job(config: str, paths: dict[str, Path], out_dir: Path, dest: Path) -> dict[str, Any]:
    """``configs/<config>`` with each source's ``path`` (by source name) and ``output.dir`` replaced,
    written to ``dest``. The text is edited in place (comments and everything else kept) and the result
    is checked: parsed, it equals the shipped job but for those keys."""
    import yaml

    src = CONFIGS / config
    text = src.read_text(encoding="utf-8")
    shipped = yaml.safe_load(text)
    expected = copy.deepcopy(shipped)
    lines = text.splitlines(keepends=True)
    pos = 0

    def replace(key: str, old: str, new: str) -> None:
        nonlocal pos
        for i in range(pos, len(lines)):
            stripped = lines[i].lstrip()
            if stripped.startswith(f"{key}:") and stripped[len(key) + 1 :].strip().split("#")[0].strip().strip("'\"") == old:
                indent = lines[i][: len(lines[i]) - len(stripped)]
                comment = stripped.split("#", 1)[1] if "#" in stripped else ""
                lines[i] = f"{indent}{key}: {new}" + (f"  # {comment.strip()}" if comment else "") + "\n"
                pos = i + 1
                return
        raise SystemExit(f"{src}: no line '{key}: {old}' after line {pos}: update bench_whole.shipped_job")

    changed: dict[str, str] = {}
    for k, s in enumerate(expected["sources"]):
        if s["name"] not in paths:
            raise SystemExit(f"{src}: source {s['name']!r} has no replacement path")
        replace("path", s["path"], _yaml_str(paths[s["name"]]))
        s["path"] = str(paths[s["name"]])
        changed[f"sources[{k}].path"] = str(paths[s["name"]])
    pos = next(i for i, line in enumerate(lines) if line.startswith("output:"))
    replace("dir", expected["output"]["dir"], _yaml_str(out_dir))
    expected["output"]["dir"] = str(out_dir)
    changed["output.dir"] = str(out_dir)
    new_text = f"# configs/{config} with only sources[*].path and output.dir replaced by benchmarks/bench_whole.py\n" + "".join(lines)
    if yaml.safe_load(new_text) != expected:
        raise SystemExit(f"{src}: the edited job differs from the shipped one in more than the paths")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(new_text, encoding="utf-8")
    return {"config": f"configs/{config}", "job": str(dest), "changed": changed, "shipped": shipped}


# ----------------------------------------------------------------------------
# data


def data_folder(a: argparse.Namespace, scratch: Path, key: str) -> tuple[Path, bool]:
    """``(folder, reused)``: ``--data-dir/key`` when given (reused when its meta.json exists), else scratch."""
    if a.data_dir:
        d = Path(a.data_dir) / key
        return d, (d / "meta.json").exists()
    return scratch / "data" / key, False


def _run_or_exit(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")


def prepare(
    a: argparse.Namespace, scratch: Path, key: str, cmd: list[str], what: str, meta_after: bool = False
) -> tuple[Path, dict[str, Any]]:
    """Generate data into its folder with ``cmd`` (``{out}`` replaced) unless a cached copy exists."""
    d, reused = data_folder(a, scratch, key)
    if reused:
        meta = json.loads((d / "meta.json").read_text())
        note = (
            f"data REUSED from the cache folder {d} (generated {meta.get('when', '?')} in "
            f"{meta.get('seconds', '?')} s by: {meta.get('command', '?')})"
        )
    else:
        d.mkdir(parents=True, exist_ok=True)
        full = [str(d) if x == "{out}" else x for x in cmd]
        t0 = time.perf_counter()
        print(f"generating {what} in {d} ...", flush=True)
        _run_or_exit(full, what)
        seconds = round(time.perf_counter() - t0, 1)
        meta = json.loads((d / "meta.json").read_text()) if not meta_after else {}
        meta.update(
            {
                "command": " ".join(full[1:] if full[0] == sys.executable else full),
                "seconds": seconds,
                "when": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
        )
        (d / "meta.json").write_text(json.dumps(meta, indent=1))
        note = f"data generated in {seconds} s" + (f" into the cache folder {d}" if a.data_dir else "")
    print(note, flush=True)
    return d, {**meta, "folder": str(d), "reused": reused, "note": note}


def make_documents_folder(out: Path, n: int, seed: int) -> int:
    """``--make-documents``: bench_documents.make_documents (planted synthetic words) as docs.jsonl +
    families.csv + meta.json, the layout of realtext.py."""
    from bench_documents import make_documents
    from realtext import Corpus, corpus_stats, write_corpus

    t0 = time.perf_counter()
    texts, family = make_documents(n, seed)
    corpus = Corpus(texts, family, [0.0] * len(texts))
    stats = corpus_stats(corpus)
    stats.pop("exact_copies")
    write_corpus(
        out,
        corpus,
        {
            "generator": "bench_documents.make_documents",
            "docs": n,
            "seed": seed,
            **stats,
            "generate_seconds": round(time.perf_counter() - t0, 1),
        },
    )
    return 0


# ----------------------------------------------------------------------------
# scenarios


@dataclass
class Scenario:
    name: str
    title: str
    quality: list[tuple[str, str]]  # (key in scores, column header)
    jobs: list[Job]
    info: dict[str, Any]
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)


def er_job(work: Path, job_yaml: Path, out_dir: Path) -> Job:
    return Job("er run", "er", [*er_command(), "run", str(job_yaml), "--force"], out_dir / "pairs.csv", out_dir)


def floor_job(files: list[Path]) -> Job:
    return Job("floor", "floor", [sys.executable, str(FLOOR), *map(str, files)])


def documents_scenario(a: argparse.Namespace, scratch: Path, name: str, contenders: list[str]) -> Scenario:
    from er_framework.kernels import choose_bands

    work = scratch / name
    work.mkdir(parents=True, exist_ok=True)
    if name == "documents-realtext":
        key = f"realtext-{a.docs}-s{a.seed_docs}"
        d, meta = prepare(
            a,
            scratch,
            key,
            [sys.executable, str(REALTEXT), "--docs", str(a.docs), "--seed", str(a.seed_docs), "--out", "{out}"],
            f"{a.docs:,} real-text documents",
        )
        contenders = [c for c in contenders if c in ("datasketch", "rensa-rminhash")]
    else:
        key = f"documents-{a.docs_1m}-s{a.seed_docs}"
        d, meta = prepare(
            a,
            scratch,
            key,
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--make-documents",
                "{out}",
                "--docs-1m",
                str(a.docs_1m),
                "--seed-docs",
                str(a.seed_docs),
            ],
            f"{a.docs_1m:,} planted documents",
        )
        contenders = []
    data = d / "docs.jsonl"
    job = shipped_job("documents.yaml", {"docs": data}, work / "er_out", work / "job.yaml")
    sj = job["shipped"]
    threshold = float(sj.get("threshold", 0.8))
    num_perm = int(sj["signature"].get("num_perm", 128))
    target = float(sj["blockers"][0].get("target_recall", 0.95))
    bands, rows = choose_bands(threshold, num_perm, target)
    jobs = [er_job(work, Path(job["job"]), work / "er_out")]
    lean = a.lean or meta.get("documents", 0) > 30000
    for c in contenders:
        jobs.append(
            Job(
                c,
                "contender",
                [
                    sys.executable,
                    str(BENCH_DOCUMENTS),
                    "--worker",
                    c,
                    "--data",
                    str(data),
                    "--result",
                    str(work / f"{c}.json"),
                    "--pairs",
                    str(work / f"{c}.pairs.npy"),
                    "--num-perm",
                    str(num_perm),
                    "--threshold",
                    str(threshold),
                    "--seed",
                    "42",
                    "--bands",
                    str(bands),
                    "--rows",
                    str(rows),
                    *(["--lean"] if lean else []),
                ],
                work / f"{c}.pairs.npy",
            )
        )
    jobs.append(floor_job([data]))
    title = (
        f"{name}: {meta.get('documents', '?'):,} documents of {meta.get('chars_mean', 0):,.0f} characters (mean), "
        f"{meta.get('within_family_pairs', 0):,} within-family pairs; {job['config']}, threshold {threshold}"
        + (
            f"; contenders with MinHash({num_perm}) and (b, r) = ({bands}, {rows}) = choose_bands({threshold}, {num_perm}, {target})"
            if contenders
            else ""
        )
        + ("; LEAN contenders (shingle sets rebuilt for candidate documents only)" if lean and contenders else "")
    )
    info = {
        "data": meta,
        "job": {k: v for k, v in job.items() if k != "shipped"},
        "threshold": threshold,
        "bands": bands,
        "rows": rows,
        "num_perm": num_perm,
        "lean": lean,
        "kind": "documents",
        "files": [str(data)],
        "families": str(d / "families.csv"),
    }
    q = [("recall_at_0.85", "recall J>=0.85"), (f"recall_at_{threshold:g}", f"recall J>={threshold:g}"), ("precision", "precision")]
    return Scenario(name, title, q, jobs, info)


def score_documents(s: Scenario) -> None:
    from whole_score import document_scores, er_doc_pairs, exact_jaccard_of, npy_doc_pairs, read_families, within_family_pairs

    t0 = time.perf_counter()
    info = s.info
    threshold = info["threshold"]
    within = within_family_pairs(read_families(Path(info["families"])))
    reported: dict[str, set[tuple[int, int]]] = {}
    for job in s.jobs:
        if job.role == "floor" or job.error or job.pairs is None:
            continue
        reported[job.name] = er_doc_pairs(job.pairs) if job.role == "er" else npy_doc_pairs(job.pairs)
    any_reported: set[tuple[int, int]] = set().union(*reported.values()) if reported else set()
    jac = exact_jaccard_of(Path(info["files"][0]), within | any_reported)
    truth_at = {level: {p for p in within | any_reported if jac[p] >= level} for level in (0.85, threshold)}
    for name, got in reported.items():
        s.scores[name] = document_scores(got, jac, truth_at, threshold)
    cross = sum(1 for p in any_reported - within if jac[p] >= threshold)
    wj = sorted(jac[p] for p in within)
    info["truth"] = {
        "definition": "within-family pairs and any pair reported by a job, with exact Jaccard of char 5-shingles of "
        "the normalized text >= the level",
        "within_family_pairs": len(within),
        "within_family_jaccard_percentiles": {str(q): round(wj[min(len(wj) - 1, int(q / 100 * len(wj)))], 4) for q in (0, 25, 50, 75, 100)}
        if wj
        else {},
        "cross_family_pairs_reported_at_threshold": cross,
        "pairs_scored": len(jac),
        "scoring_seconds": round(time.perf_counter() - t0, 1),
    }
    for level, t in truth_at.items():
        info["truth"][f"pairs_at_{level:g}"] = len(t)
    s.details.append(
        f"truth: {len(truth_at[0.85]):,} pairs with J >= 0.85, {len(truth_at[threshold]):,} with J >= "
        f"{threshold:g} ({cross} of them across families, found by a job); exact Jaccard of "
        f"{len(jac):,} pairs in {info['truth']['scoring_seconds']} s"
    )


def count_rows(csv_path: Path) -> int:
    """Lines of a CSV file after its header."""
    with open(csv_path, "rb") as f:
        return sum(1 for _ in f) - 1


def febrl_files() -> dict[str, Path]:
    f = CONFIGS / "data" / "febrl"
    return {
        "a": f / "febrl4_a.csv",
        "b": f / "febrl4_b.csv",
        "truth4": f / "febrl4_truth.csv",
        "dedupe": f / "febrl3.csv",
        "truth3": f / "febrl3_truth.csv",
    }


def link_scenario(a: argparse.Namespace, scratch: Path, name: str, contenders: list[str]) -> Scenario:
    work = scratch / name
    work.mkdir(parents=True, exist_ok=True)
    if name == "febrl4":
        ff = febrl_files()
        sources = {"A": ff["a"], "B": ff["b"]}
        truth, config, kind = ff["truth4"], "febrl4.yaml", "febrl"
        meta: dict[str, Any] = {"note": "configs/data/febrl (shipped)", "reused": True}
    else:
        n = a.customers if name == "customers-100k" else a.customers_1m
        d, meta = prepare(
            a,
            scratch,
            f"customers-{n}-o0.5-s7",
            [*er_command(), "synth", "customers", "--n", str(n), "--overlap", "0.5", "--seed", "7", "--out", "{out}"],
            f"{n:,} x {n:,} customers",
            meta_after=True,
        )
        sources = {"A": d / "a.csv", "B": d / "b.csv"}
        truth, config, kind = d / "truth.csv", "customers.yaml", "customers"
        # Splink on the generated customers (at a million only with --splink-1m); recordlinkage on request
        contenders = [
            c
            for c in contenders
            if (c == "splink" and (name == "customers-100k" or a.splink_1m)) or (c == "recordlinkage" and a.recordlinkage_customers)
        ]
    job = shipped_job(config, sources, work / "er_out", work / "job.yaml")
    jobs = [er_job(work, Path(job["job"]), work / "er_out")]
    csv_args = [x for src, p in sources.items() for x in ("--csv", f"{src}={p}")]
    for c in contenders:
        if c in ("splink", "recordlinkage"):
            jobs.append(
                Job(
                    c,
                    "contender",
                    [
                        sys.executable,
                        str(CONTENDERS_PY),
                        c,
                        "--dataset",
                        kind,
                        *csv_args,
                        "--pairs",
                        str(work / f"{c}.pairs.csv"),
                        "--seed",
                        "7",
                    ],
                    work / f"{c}.pairs.csv",
                )
            )
    jobs.append(floor_job(list(sources.values())))
    n_truth = count_rows(truth)
    sizes = [count_rows(p) for p in sources.values()]
    title = (
        f"{name}: {sizes[0]:,} x {sizes[1]:,} records, {n_truth:,} true links; {job['config']} "
        f"(threshold {job['shipped']['verifier'].get('threshold')}, cluster {job['shipped']['cluster']['type']})"
    )
    info = {
        "data": meta,
        "job": {k: v for k, v in job.items() if k != "shipped"},
        "kind": "link",
        "truth": str(truth),
        "first_source": next(iter(sources)),
        "files": [str(p) for p in sources.values()],
    }
    return Scenario(name, title, [("precision", "precision"), ("recall", "recall"), ("f1", "F1")], jobs, info)


def dedupe_scenario(a: argparse.Namespace, scratch: Path, name: str, contenders: list[str]) -> Scenario:
    work = scratch / name
    work.mkdir(parents=True, exist_ok=True)
    ff = febrl_files()
    job = shipped_job("febrl3.yaml", {"febrl3": ff["dedupe"]}, work / "er_out", work / "job.yaml")
    jobs = [er_job(work, Path(job["job"]), work / "er_out")]
    if "splink" in contenders:
        jobs.append(
            Job(
                "splink",
                "contender",
                [
                    sys.executable,
                    str(CONTENDERS_PY),
                    "splink",
                    "--dataset",
                    "febrl",
                    "--csv",
                    f"febrl3={ff['dedupe']}",
                    "--pairs",
                    str(work / "splink.pairs.csv"),
                    "--seed",
                    "7",
                ],
                work / "splink.pairs.csv",
            )
        )
    jobs.append(floor_job([ff["dedupe"]]))
    n = count_rows(ff["dedupe"])
    title = (
        f"{name}: {n:,} records (dedupe); {job['config']} (threshold {job['shipped']['verifier'].get('threshold')}, "
        f"cluster {job['shipped']['cluster']['type']}); Splink dedupe_only with the Febrl4 settings"
    )
    info = {
        "data": {"note": "configs/data/febrl (shipped)", "reused": True},
        "job": {k: v for k, v in job.items() if k != "shipped"},
        "kind": "dedupe",
        "truth": str(ff["truth3"]),
        "files": [str(ff["dedupe"])],
    }
    return Scenario(name, title, [("precision", "precision"), ("recall", "recall"), ("f1", "F1")], jobs, info)


def score_records(s: Scenario) -> None:
    from whole_score import csv_pairs, dedupe_truth, er_cluster_pairs, er_pairs, link_truth, prf

    dedupe = s.info["kind"] == "dedupe"
    truth = dedupe_truth(Path(s.info["truth"])) if dedupe else link_truth(Path(s.info["truth"]))
    for job in s.jobs:
        if job.role == "floor" or job.error or job.pairs is None:
            continue
        if job.role == "er":
            got = er_pairs(job.pairs, None if dedupe else s.info["first_source"])
        else:
            got = csv_pairs(job.pairs, ordered=not dedupe)
        s.scores[job.name] = prf(got, truth)
        if job.role == "er" and dedupe and job.out_dir is not None:
            cl = prf(er_cluster_pairs(job.out_dir / "clusters.csv"), truth)
            s.scores[job.name]["cluster_pairs"] = cl
            s.details.append(
                f"er cluster-implied pairs (clusters.csv): precision {cl['precision']:.4f}, recall "
                f"{cl['recall']:.4f}, F1 {cl['f1']:.4f} (the table scores pairs.csv)"
            )


def er_stage_detail(s: Scenario) -> dict[str, Any] | None:
    """er's report.json of its best run: stages, and the share of the wall outside them and in diagnostics."""
    job = next((j for j in s.jobs if j.role == "er"), None)
    best = job.measured.get("best") if job is not None and not job.error else None
    if best is None or not best.get("report_json"):
        return None
    rep = json.loads(Path(best["report_json"]).read_text())
    wall = best["wall_s"]
    stages = [
        {"stage": st["stage"], "seconds": float(st.get("seconds", 0.0)), "peak_rss_mb": st.get("peak_rss_mb")}
        for st in rep.get("stages", [])
    ]
    total = float(rep.get("seconds_total") or sum(x["seconds"] for x in stages))
    diag = sum(x["seconds"] for x in stages if x["stage"] == "diagnostics")
    out = {
        "stages": stages,
        "seconds_total": total,
        "wall_of_that_run": wall,
        "outside_stages": wall - total,
        "diagnostics_seconds": diag,
        "diagnostics_share_of_wall": diag / wall if wall else None,
        "peak_rss_mb_report": rep.get("peak_rss_mb"),
        "candidate_pairs": rep.get("candidate_pairs"),
        "verified_pairs": rep.get("verified_pairs"),
        "outputs": rep.get("outputs"),
    }
    s.details.append(
        "er stages (report.json of the best run; seconds, peak MB): "
        + ", ".join(f"{x['stage']} {x['seconds']:.2f}" + (f" ({x['peak_rss_mb']:.0f})" if x["peak_rss_mb"] else "") for x in stages)
        + f"; sum {total:.2f} s of a {wall:.2f} s wall: {wall - total:.2f} s outside the stages (interpreter start-up, "
        f"imports, parsing the job, writing the outputs and report.html); diagnostics {diag:.2f} s = "
        f"{100 * diag / wall if wall else 0:.1f}% of the wall"
    )
    return out


# ----------------------------------------------------------------------------
# tables


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def rows_of(s: Scenario) -> list[dict[str, Any]]:
    er = next((j for j in s.jobs if j.role == "er" and "best" in j.measured), None)
    floor = next((j for j in s.jobs if j.role == "floor" and "best" in j.measured), None)
    rows = []
    for job in s.jobs:
        b = job.measured.get("best")
        row: dict[str, Any] = {"job": job.name, "role": job.role, "error": job.error, "runs": len(job.measured.get("runs", []))}
        if b:
            row.update(
                {
                    "wall_s": b["wall_s"],
                    "peak_rss_mb": b["peak_rss_mb"],
                    "cpu_s": b["user_s"] + b["sys_s"],
                    "vs_er": b["wall_s"] / er.measured["best"]["wall_s"] if er else None,
                    "vs_floor": b["wall_s"] / floor.measured["best"]["wall_s"] if floor else None,
                }
            )
        row.update({k: s.scores.get(job.name, {}).get(k) for k, _ in s.quality})
        rows.append(row)
    return rows


def text_table(s: Scenario, rows: list[dict[str, Any]]) -> str:
    head = ["job", "wall s", "peak RSS MB", "CPU s", *[h for _, h in s.quality], "÷ er", "÷ floor"]
    lines = [head]
    for r in rows:
        if r["error"]:
            lines.append([r["job"], "FAILED", *["-"] * (len(head) - 2)])
            continue
        lines.append(
            [
                r["job"],
                f"{r['wall_s']:.2f}",
                f"{r['peak_rss_mb']:,.0f}",
                f"{r['cpu_s']:.1f}",
                *[_fmt(r[k], ".4f") for k, _ in s.quality],
                _fmt(r["vs_er"], ".2f"),
                _fmt(r["vs_floor"], ".1f"),
            ]
        )
    widths = [max(len(x[i]) for x in lines) for i in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def markdown_rows(s: Scenario, rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        if r["error"]:
            why = r["error"][:80].replace("|", "/")
            out.append(f"| {s.name} | {r['job']} | failed: {why} | | | | |")
            continue
        quality = " · ".join(f"{h} {r[k]:.4f}" for k, h in s.quality if r[k] is not None) or "-"
        out.append(
            f"| {s.name} | {r['job']} | {'**' if r['role'] == 'er' else ''}{r['wall_s']:.2f}"
            f"{'**' if r['role'] == 'er' else ''} | {r['peak_rss_mb']:,.0f} | {quality} | "
            f"{_fmt(r['vs_er'], '.2f')} | {_fmt(r['vs_floor'], '.1f')} |"
        )
    return out


MD_HEAD = ["| scenario | job | wall s | peak RSS MB | quality | ÷ er | ÷ floor |", "|---|---|---:|---:|---|---:|---:|"]


# ----------------------------------------------------------------------------
# orchestration


def run_startup(a: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    work = scratch / "startup"
    work.mkdir(parents=True, exist_ok=True)
    er = er_command()
    cmds = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("er --help", [*er, "--help"]),
        ("er validate configs/documents.yaml", [*er, "validate", str(CONFIGS / "documents.yaml")]),
        ("er validate configs/customers.yaml", [*er, "validate", str(CONFIGS / "customers.yaml")]),
    ]
    rows: list[dict[str, Any]] = []
    for label, cmd in cmds:
        out = work / f"{len(rows)}.json"
        proc = subprocess.run(
            [
                sys.executable,
                str(MEASURE),
                "--out",
                str(out),
                "--repeat",
                str(STARTUP_REPEAT),
                "--poll",
                "0.005",
                "--stderr",
                str(work / f"{len(rows)}.err"),
                "--",
                *cmd,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        res: dict[str, Any] = json.loads(out.read_text()) if proc.returncode == 0 and out.exists() else {"ok": False, "runs": []}
        walls = [r["wall_s"] for r in res["runs"]]
        rows.append(
            {
                "command": label,
                "cmd": cmd,
                "ok": res["ok"],
                "walls": walls,
                "best_s": min(walls) if res["ok"] else None,
                "median_s": statistics.median(walls) if res["ok"] else None,
                "peak_rss_mb": max((r["peak_rss_mb"] for r in res["runs"]), default=None),
            }
        )
    print(f"\nstart-up (whole process, best and median of {STARTUP_REPEAT})")
    w = max(len(r["command"]) for r in rows)
    print(f"{'command':<{w}}  {'best s':>7}  {'median s':>8}  {'peak RSS MB':>11}")
    for r in rows:
        print(
            f"{r['command']:<{w}}  {_fmt(r['best_s'], '7.3f')}  {_fmt(r['median_s'], '8.3f')}  {_fmt(r['peak_rss_mb'], '11.0f')}"
            + ("" if r["ok"] else "  FAILED")
        )
    md = ["| command | best s | median s | peak RSS MB |", "|---|---:|---:|---:|"] + [
        f"| `{r['command']}` | {_fmt(r['best_s'], '.3f')} | {_fmt(r['median_s'], '.3f')} | {_fmt(r['peak_rss_mb'], '.0f')} |" for r in rows
    ]
    return {"rows": rows, "markdown": "\n".join(md)}


def size_suffix(a: argparse.Namespace, name: str) -> str:
    key = {"documents-realtext": "docs", "documents-1m": "docs_1m", "customers-100k": "customers", "customers-1m": "customers_1m"}.get(name)
    if key is None or getattr(a, key) == DEFAULT_SIZES[key]:
        return ""
    return f"-{getattr(a, key)}"


def write_json(a: argparse.Namespace, name: str, doc: dict[str, Any]) -> Path:
    out = Path(a.results_dir) / f"whole-{name}{size_suffix(a, name)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, default=str))
    return out


def common_doc(a: argparse.Namespace, name: str, load_start: tuple[float, ...]) -> dict[str, Any]:
    return {
        "benchmark": "whole",
        "scenario": name,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "repeat": a.repeat,
        "machine": machine_info(DISTS),
        "code": {k: v for k, v in code_fingerprint().items() if k != "files"},
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "bytecode": getattr(a, "bytecode", None),
    }


def orchestrate(a: argparse.Namespace) -> int:
    scenarios = [x.strip() for x in a.scenarios.split(",") if x.strip()]
    unknown = [x for x in scenarios if x not in SCENARIOS]
    contenders = [x.strip() for x in a.contenders.split(",") if x.strip()]
    bad = [x for x in contenders if x not in CONTENDERS]
    if unknown or bad:
        print(f"unknown scenario(s) {unknown} / contender(s) {bad}; scenarios: {SCENARIOS}; contenders: {CONTENDERS}", file=sys.stderr)
        return 2
    if a.repeat < 1:
        print("--repeat must be >= 1", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="er_bench_whole_", dir=a.scratch_dir))
    a.bytecode = prepare_bytecode(not a.no_bytecode)
    print(
        f"scratch {scratch}; er = {' '.join(er_command())}; best of {a.repeat} run(s) per process; {a.bytecode}; "
        f"load average {os.getloadavg()[0]:.2f} (nproc {os.cpu_count()})",
        flush=True,
    )
    md = list(MD_HEAD)
    startup_md = None
    written = []
    for name in scenarios:
        load_start = os.getloadavg()
        print(f"\n=== {name} ===", flush=True)
        if name == "startup":
            res = run_startup(a, scratch)
            startup_md = res["markdown"]
            written.append(write_json(a, name, {**common_doc(a, name, load_start), **res}))
            continue
        if name in ("documents-realtext", "documents-1m"):
            s = documents_scenario(a, scratch, name, contenders)
        elif name == "febrl3":
            s = dedupe_scenario(a, scratch, name, contenders)
        else:
            s = link_scenario(a, scratch, name, contenders)
        print(s.title, flush=True)
        warm_cache([Path(f) for f in s.info["files"]])
        run_side_by_side(s.jobs, scratch / name, a.repeat, a.timeout, a.poll)
        if s.info["kind"] == "documents":
            score_documents(s)
        else:
            score_records(s)
        stage = er_stage_detail(s)
        rows = rows_of(s)
        print()
        print(s.title)
        print(
            f"(wall and peak RSS of whole processes measured from outside; best of {a.repeat}; ÷ er = wall / er's "
            f"wall, ÷ floor = wall / the floor's wall)"
        )
        print(text_table(s, rows))
        for line in s.details:
            print(line)
        if s.info["data"].get("note"):
            print(s.info["data"]["note"])
        for job in s.jobs:
            if job.error:
                print(f"{job.name} FAILED: {job.error}")
        md += markdown_rows(s, rows)
        doc = {
            **common_doc(a, name, load_start),
            "title": s.title,
            "info": s.info,
            "er_report": stage,
            "rows": rows,
            "scores": s.scores,
            "details": s.details,
            "processes": [
                {
                    "name": j.name,
                    "role": j.role,
                    "cmd": j.cmd,
                    "runs": j.measured.get("runs", []),
                    "best": j.measured.get("best"),
                    "error": j.error,
                }
                for j in s.jobs
            ],
            "markdown": "\n".join(MD_HEAD + markdown_rows(s, rows)),
        }
        written.append(write_json(a, name, doc))
    summary = [f"<!-- bench_whole.py {' '.join(sys.argv[1:])} ({time.strftime('%Y-%m-%d %H:%M')}) -->", *md]
    if startup_md:
        summary += ["", startup_md]
    print("\n" + "\n".join(summary))
    out_md = Path(a.results_dir) / "whole-summary.md"
    out_md.write_text("\n".join(summary) + "\n", encoding="utf-8")
    print("\nwrote " + ", ".join(str(p) for p in [*written, out_md]))
    if a.keep:
        print(f"kept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Column meanings and run instructions: benchmarks/README.md, 'Whole processes (issue 15)'.",
    )
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated subset of {','.join(SCENARIOS)}")
    p.add_argument(
        "--contenders", default=",".join(CONTENDERS), help=f"contenders to run where they apply (default all: {','.join(CONTENDERS)})"
    )
    p.add_argument("--docs", type=int, default=DEFAULT_SIZES["docs"], help="documents-realtext: documents (default 20,000)")
    p.add_argument("--docs-1m", type=int, default=DEFAULT_SIZES["docs_1m"], help="documents-1m: documents (default 1,000,000)")
    p.add_argument(
        "--customers", type=int, default=DEFAULT_SIZES["customers"], help="customers-100k: records per company (default 100,000)"
    )
    p.add_argument(
        "--customers-1m", type=int, default=DEFAULT_SIZES["customers_1m"], help="customers-1m: records per company (default 1,000,000)"
    )
    p.add_argument("--seed-docs", type=int, default=15, help="seed of the generated documents (default 15)")
    p.add_argument("--splink-1m", action="store_true", help="also run Splink on customers-1m (may take very long)")
    p.add_argument(
        "--recordlinkage-customers", action="store_true", help="also run recordlinkage on the generated customers (febrl4 always has it)"
    )
    p.add_argument("--lean", action="store_true", help="datasketch/rensa keep no shingle sets (automatic above 30,000 documents)")
    p.add_argument("--repeat", type=int, default=1, help="runs per process, rounds interleaved; the best wall is reported")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per process run (default 3600)")
    p.add_argument("--poll", type=float, default=0.02, help="RSS sampling interval of measure.py, seconds")
    p.add_argument(
        "--data-dir", default=None, help="cache folder for generated data: reused when present (said so in the output), else written there"
    )
    p.add_argument("--results-dir", default=str(HERE / "results"), help="where whole-<scenario>.json go")
    p.add_argument("--scratch-dir", default=None, help="parent of the scratch folder (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (jobs, outputs, pairs, logs)")
    p.add_argument(
        "--no-bytecode",
        action="store_true",
        help="run every process without .pyc files of the project (PYTHONDONTWRITEBYTECODE=1 and none "
        "compiled): every start recompiles er_framework and er_plugins (default: compile them first, "
        "as `pip install` does)",
    )
    p.add_argument("--make-documents", type=Path, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.make_documents is not None:
        return make_documents_folder(a.make_documents, a.docs_1m, a.seed_docs)
    for k in ("docs", "docs_1m", "customers", "customers_1m"):
        if getattr(a, k) < 2:
            p.error(f"--{k.replace('_', '-')} must be >= 2")
    return orchestrate(a)


if __name__ == "__main__":
    sys.exit(main())
