"""Sources and answers of issue 33, as whole processes: three companies linked, databases in and out, golden records.

Every figure is a whole process started by ``benchmarks/measure.py`` (wall time and peak RSS from outside,
children included), ``--repeat`` rounds interleaved, best wall reported:

``three-sources``
    ``er synth customers --sources 3`` (a held-out seed: the shipped job was tuned on seeds 1-6 and 101)
    linked by ``er run`` with the shipped ``configs/customers3.yaml`` (paths replaced), beside Splink
    (``link_only`` over the three files, DuckDB, its Febrl4 set-up as in ``contenders.py``). Pairwise
    precision, recall and F1 per pair of sources, of pairs.csv and of the pairs clusters.csv implies.
``databases``
    The same two-company job (``configs/customers.yaml``, ``er synth customers --n N``) with its sources read
    from CSV files, from SQLite tables, from DuckDB tables and from PostgreSQL tables (a server this script
    starts and stops), and once writing its tables and golden records to PostgreSQL. Every variant's
    pairs.csv must equal the CSV run's (checked: a variant that differs is reported as such).

Run from the repository root::

    python benchmarks/bench_sources.py --scenarios three-sources,databases --n 100000 --repeat 3 \\
        --results-dir benchmarks/results
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from bench_whole import CONTENDERS_PY, Job, count_rows, er_command, run_side_by_side, shipped_job
from common import machine_info
from whole_score import prf

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tests.postgres_server import running_postgres  # noqa: E402  (the tests' server, started the same way)

Pair = tuple[str, str]


# ----------------------------------------------------------------------------
# data


def synth(out: Path, n: int, sources: int, seed: int) -> Path:
    if (out / "truth.csv").exists():
        print(f"data reused from {out}", flush=True)
        return out
    out.mkdir(parents=True, exist_ok=True)
    cmd = [*er_command(), "synth", "customers", "--n", str(n), "--overlap", "0.5", "--seed", str(seed), "--out", str(out)]
    if sources != 2:
        cmd += ["--sources", str(sources)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    print(f"generated {out} in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def read_csv_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        head = next(r)
        return head, list(r)


def load_sqlite(files: dict[str, Path], db: Path) -> None:
    """Each CSV as a table of text columns (empty cells as NULL), as a user's import would make it."""
    with contextlib.closing(sqlite3.connect(db)) as con:
        for name, path in files.items():
            head, rows = read_csv_rows(path)
            cols = ", ".join(f'"{h}" TEXT' for h in head)
            con.execute(f'DROP TABLE IF EXISTS "{name}"')
            con.execute(f'CREATE TABLE "{name}" ({cols})')
            marks = ", ".join("?" for _ in head)
            con.executemany(f'INSERT INTO "{name}" VALUES ({marks})', ([v if v != "" else None for v in row] for row in rows))
        con.commit()


def load_duckdb(files: dict[str, Path], db: Path) -> None:
    import duckdb

    con = duckdb.connect(str(db))
    for name, path in files.items():
        con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM read_csv(?, all_varchar = true, header = true)', [str(path)])
    con.close()


def load_postgres(files: dict[str, Path], url: str) -> None:
    import psycopg

    with psycopg.connect(url) as con, con.cursor() as cur:
        for name, path in files.items():
            head, _ = read_csv_rows(path)
            cur.execute(f'DROP TABLE IF EXISTS "{name}"')
            cur.execute(f'CREATE TABLE "{name}" ({", ".join(f"{chr(34)}{h}{chr(34)} text" for h in head)})')
            with cur.copy(f'COPY "{name}" FROM STDIN WITH (FORMAT csv, HEADER true)') as copy, open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    copy.write(chunk)


# ----------------------------------------------------------------------------
# jobs


def database_job(shipped: Path, dest: Path, out_dir: Path, url: str, tables: dict[str, str], sink: str | None = None) -> Path:
    """``shipped`` (a job already pointed at files by :func:`shipped_job`) reading each source from ``url``'s
    table instead of its file, and, with ``sink``, writing its tables and golden records to that database."""
    job = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    for s in job["sources"]:
        s.pop("path")
        s["database"] = url
        s["table"] = tables[s["name"]]
    job["output"]["dir"] = str(out_dir)
    if sink is not None:
        job["output"]["database"] = sink
        job["output"]["golden"] = {"rule": "most_frequent", "fields": {"address": "longest"}}
    dest.write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return dest


def golden_job(shipped: Path, dest: Path, out_dir: Path) -> Path:
    """``shipped`` (on files) writing golden records too: what golden.csv costs a whole run."""
    job = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    job["output"]["dir"] = str(out_dir)
    job["output"]["golden"] = {"rule": "most_frequent", "fields": {"address": "longest"}}
    dest.write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return dest


def er(name: str, job: Path, out_dir: Path) -> Job:
    return Job(name, "er", [*er_command(), "run", str(job), "--force"], out_dir / "pairs.csv", out_dir)


def splink_job(work: Path, files: dict[str, Path]) -> Job:
    csv_args = [x for src, p in files.items() for x in ("--csv", f"{src}={p}")]
    out = work / "splink.pairs.csv"
    cmd = [sys.executable, str(CONTENDERS_PY), "splink", "--dataset", "customers", *csv_args, "--pairs", str(out), "--seed", "7"]
    return Job("splink", "contender", cmd, out)


# ----------------------------------------------------------------------------
# scoring


def sourced_pairs(path: Path) -> set[tuple[str, str, str, str]]:
    """Pairs of a ``left_source,left_id,right_source,right_id`` file, each ordered by (source, id)."""
    out = set()
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            a, b = (row["left_source"], row["left_id"]), (row["right_source"], row["right_id"])
            out.add((*min(a, b), *max(a, b)))
    return out


def cluster_pairs(clusters_csv: Path) -> set[tuple[str, str, str, str]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    with open(clusters_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            groups.setdefault(row["cluster_id"], []).append((row["source"], row["id"]))
    out = set()
    for g in groups.values():
        g.sort()
        out.update((*g[i], *g[j]) for i in range(len(g)) for j in range(i + 1, len(g)) if g[i][0] != g[j][0])
    return out


def truth_pairs(truth_csv: Path) -> set[tuple[str, str, str, str]]:
    """``left_id,right_id`` truth of ``er synth customers --sources N``: an id's first letter is its source."""
    out = set()
    with open(truth_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            a, b = (row["left_id"][0], row["left_id"]), (row["right_id"][0], row["right_id"])
            out.add((*min(a, b), *max(a, b)))
    return out


def per_source_pair(got: set[tuple[str, str, str, str]], truth: set[tuple[str, str, str, str]], names: list[str]) -> dict[str, Any]:
    scores: dict[str, Any] = {}
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            g = {(p[1], p[3]) for p in got if {p[0], p[2]} == {x, y}}
            t = {(p[1], p[3]) for p in truth if {p[0], p[2]} == {x, y}}
            scores[f"{x}-{y}"] = prf(g, t)
    scores["all"] = prf({(p[1], p[3]) for p in got}, {(p[1], p[3]) for p in truth})
    return scores


# ----------------------------------------------------------------------------
# scenarios


def best(job: Job) -> dict[str, Any] | None:
    b = job.measured.get("best")
    return None if b is None else {"wall_s": round(b["wall_s"], 2), "peak_rss_mb": round(b["peak_rss_mb"]), "runs": job.measured["runs"]}


def three_sources(a: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    d = synth(Path(a.data_dir) / f"customers3-{a.n}-s{a.seed}", a.n, 3, a.seed)
    files = {"A": d / "a.csv", "B": d / "b.csv", "C": d / "c.csv"}
    work = scratch / "three-sources"
    work.mkdir(parents=True, exist_ok=True)
    job = shipped_job("customers3.yaml", files, work / "er_out", work / "job.yaml")
    jobs = [er("er run", Path(job["job"]), work / "er_out")]
    if not a.no_splink:
        jobs.append(splink_job(work, files))
    run_side_by_side(jobs, work, a.repeat, a.timeout, 0.02)
    truth = truth_pairs(d / "truth.csv")
    names = list(files)
    doc: dict[str, Any] = {"data": str(d), "records": {k: count_rows(p) for k, p in files.items()}, "truth_pairs": len(truth), "jobs": {}}
    for j in jobs:
        entry: dict[str, Any] = {"measured": best(j), "error": j.error}
        if j.error is None and j.pairs is not None and j.pairs.exists():
            entry["pairs"] = per_source_pair(sourced_pairs(j.pairs), truth, names)
            if j.out_dir is not None:
                entry["cluster_pairs"] = per_source_pair(cluster_pairs(j.out_dir / "clusters.csv"), truth, names)
        doc["jobs"][j.name] = entry
    return doc


def databases(a: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    d = synth(Path(a.data_dir) / f"customers-{a.n}-s{a.seed}", a.n, 2, a.seed)
    files = {"A": d / "a.csv", "B": d / "b.csv"}
    work = scratch / "databases"
    work.mkdir(parents=True, exist_ok=True)
    shipped = shipped_job("customers.yaml", files, work / "csv_out", work / "csv.yaml")
    csv_job = Path(shipped["job"])
    tables = {"A": "company_a", "B": "company_b"}
    t0 = time.perf_counter()
    load_sqlite(dict(zip(tables.values(), files.values())), work / "customers.db")
    t_sqlite = time.perf_counter() - t0
    t0 = time.perf_counter()
    load_duckdb(dict(zip(tables.values(), files.values())), work / "customers.duckdb")
    t_duck = time.perf_counter() - t0
    sqlite_url, duckdb_url = f"sqlite:///{work / 'customers.db'}", f"duckdb:///{work / 'customers.duckdb'}"
    with running_postgres() as url:
        t0 = time.perf_counter()
        load_postgres(dict(zip(tables.values(), files.values())), url)
        t_pg = time.perf_counter() - t0
        jobs = [
            er("er csv", csv_job, work / "csv_out"),
            er("er csv + golden", golden_job(csv_job, work / "golden.yaml", work / "golden_out"), work / "golden_out"),
            er(
                "er sqlite",
                database_job(csv_job, work / "sqlite.yaml", work / "sqlite_out", sqlite_url, tables),
                work / "sqlite_out",
            ),
            er(
                "er duckdb",
                database_job(csv_job, work / "duckdb.yaml", work / "duckdb_out", duckdb_url, tables),
                work / "duckdb_out",
            ),
            er("er postgresql", database_job(csv_job, work / "pg.yaml", work / "pg_out", url, tables), work / "pg_out"),
            er(
                "er postgresql + sink + golden",
                database_job(csv_job, work / "pg_sink.yaml", work / "pg_sink_out", url, tables, sink=url),
                work / "pg_sink_out",
            ),
        ]
        run_side_by_side(jobs, work, a.repeat, a.timeout, 0.02)
        sink_rows = postgres_counts(url, ["er_pairs", "er_clusters", "er_golden"])
    reference = (work / "csv_out" / "pairs.csv").read_bytes() if (work / "csv_out" / "pairs.csv").exists() else None
    doc: dict[str, Any] = {
        "data": str(d),
        "records": {k: count_rows(p) for k, p in files.items()},
        "load_seconds": {"sqlite": round(t_sqlite, 2), "duckdb": round(t_duck, 2), "postgresql_copy": round(t_pg, 2)},
        "sink_rows": sink_rows,
        "jobs": {},
    }
    for j in jobs:
        same = j.pairs is not None and j.pairs.exists() and reference is not None and j.pairs.read_bytes() == reference
        doc["jobs"][j.name] = {"measured": best(j), "error": j.error, "pairs_equal_csv_run": same}
    return doc


def postgres_counts(url: str, tables: list[str]) -> dict[str, int | None]:
    import psycopg

    out: dict[str, int | None] = {}
    with psycopg.connect(url) as con:
        for t in tables:
            try:
                out[t] = con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]  # type: ignore[index]
            except psycopg.Error:
                con.rollback()
                out[t] = None
    return out


def summary(doc: dict[str, Any]) -> str:
    """The results as markdown tables: wall, memory and F1 per pair of sources; the database variants."""
    lines: list[str] = []
    three = doc.get("three-sources")
    if three:
        lines += [
            f"three-sources: {three['records']} records, {three['truth_pairs']:,} true cross-source pairs ({three['data']})",
            "",
            "| job | wall s | peak MB | F1 A-B | F1 A-C | F1 B-C | F1 all | cluster-pair F1 all |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, j in three["jobs"].items():
            m, pr, cl = j["measured"] or {}, j.get("pairs") or {}, j.get("cluster_pairs") or {}
            f1 = [f"{pr[k]['f1']:.4f}" if k in pr else "-" for k in ("A-B", "A-C", "B-C", "all")]
            lines.append(
                f"| {name} | {m.get('wall_s', '-')} | {m.get('peak_rss_mb', '-')} | {' | '.join(f1)} | {cl['all']['f1']:.4f} |"
                if cl
                else f"| {name} | {m.get('wall_s', '-')} | {m.get('peak_rss_mb', '-')} | {' | '.join(f1)} | - |"
            )
        lines.append("")
    db = doc.get("databases")
    if db:
        lines += [
            f"databases: {db['records']} records; loading the tables took {db['load_seconds']} s (not in the figures); "
            f"rows written to PostgreSQL: {db['sink_rows']}",
            "",
            "| job | wall s | peak MB | pairs.csv equal to the CSV run |",
            "|---|---|---|---|",
        ]
        for name, j in db["jobs"].items():
            m = j["measured"] or {}
            lines.append(f"| {name} | {m.get('wall_s', '-')} | {m.get('peak_rss_mb', '-')} | {j['pairs_equal_csv_run']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", default="three-sources,databases")
    p.add_argument("--n", type=int, default=100_000, help="records per company")
    p.add_argument("--seed", type=int, default=202, help="generator seed (held out: the shipped jobs were not tuned on it)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--no-splink", action="store_true")
    p.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "bench-sources-data"))
    p.add_argument("--results-dir", default=str(HERE / "results"))
    a = p.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="bench-sources-"))
    machine = machine_info(("er-framework", "numpy", "splink", "duckdb", "psycopg"))
    doc: dict[str, Any] = {"machine": machine, "args": vars(a), "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        for name in a.scenarios.split(","):
            print(f"== {name}", flush=True)
            doc[name] = {"three-sources": three_sources, "databases": databases}[name](a, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = Path(a.results_dir) / f"sources-{a.n}.json"
    out.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    text = summary(doc)
    (out.with_suffix(".md")).write_text(f"python benchmarks/bench_sources.py {' '.join(argv or sys.argv[1:])}\n\n{text}", encoding="utf-8")
    print(text)
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
