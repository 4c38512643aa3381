"""Held-out inventor mentions (issue 29): `er run configs/inventors.yaml` beside Splink, as whole processes.

The real benchmark of issue 29 (133,541 inventor mentions of patents; an untuned er job reached pairwise F1
0.874, the production disambiguation 0.937, Splink's standard set-up 0.185) is not on this machine; this one
runs on ``er synth inventors`` data, hard in the same ways (heavy-tailed patents per inventor, teams on one
patent, many different inventors with one full name, careers, noisy mentions).

For every seed of ``--seeds`` (1,2,3: held out; the config's sample is seed 0) the script generates
``--n`` mentions (20,000) and runs, one after the other and each as a whole process started by
``benchmarks/measure.py`` (wall time and peak RSS of the process tree measured from outside):

* ``er run <job.yaml> --force`` (``python -m er_framework`` of ``--python``), ``job.yaml`` being
  ``configs/inventors.yaml`` with only ``sources[*].path`` and ``output.dir`` replaced
  (``bench_whole.shipped_job`` checks that);
* Splink 5 (DuckDB) in a standard set-up (:func:`splink_inventors`, this file's
  ``--worker splink-inventors``): blocking on the names (and last name + city, as the er job),
  ``NameComparison`` with term frequencies for first and last name, ``JaroWinklerAtThresholds`` for the
  middle name and the assignee, ``ExactMatch`` city / state / country, ``ArrayIntersectAtSizes`` for
  coinventors and classes; lambda from deterministic rules, u by random sampling, m by EM in sessions on
  the blocking rules; pairs at match probability >= 0.5, then
  ``cluster_pairwise_predictions_at_threshold`` at 0.5;

and scores both against the truth: pairwise precision / recall / F1 of the pairs each lists (er's
pairs.csv, Splink's predictions) AND of the clusters (every pair of records in one cluster: er's
clusters.csv, Splink's clusters) — the real benchmark scores clusters. Cluster pairs are counted from the
cluster x entity contingency table, never listed, so a giant cluster costs nothing.

Run from the repository root (Splink 5 and er in one environment; er from this tree through ``PYTHONPATH``)::

    PYTHONPATH=$PWD /tmp/benchvenv/bin/python benchmarks/bench_inventors.py
    PYTHONPATH=$PWD /tmp/benchvenv/bin/python benchmarks/bench_inventors.py --seeds 1 --n 5000 --results-dir /tmp/i

Writes ``<results-dir>/inventors-heldout.md`` (the table) and ``inventors-heldout.json`` (every run, the
settings, the machine, the code's git commit).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench_persons import Scenario, csv_list, record_benchmark, run_tools, splink_dedupe, version_of
from whole_score import csv_pairs, dedupe_truth, er_pairs, prf

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: match-probability threshold of Splink and of the er job, and Splink's clustering threshold
THRESHOLD = 0.5


# ----------------------------------------------------------------------------
# Splink on the inventors (a worker process: --worker splink-inventors)


def splink_inventors_settings() -> dict[str, Any]:
    """A standard Splink 5 set-up for the inventor columns, as its tutorials build one (imported lazily)."""
    import splink.comparison_library as cl
    from splink import block_on

    return {
        # typical SQL cleaning: names lower-case letters, lists split on ';' into arrays (empty -> null)
        "clean_sql": """with raw as (select * from read_csv('{path}', all_varchar=true, header=true))
            select id, patent_id,
                nullif(trim(regexp_replace(lower(first_name), '[^a-z -]', '', 'g')), '') as first_name,
                nullif(trim(regexp_replace(lower(middle_name), '[^a-z -]', '', 'g')), '') as middle_name,
                nullif(trim(regexp_replace(lower(last_name), '[^a-z -]', '', 'g')), '') as last_name,
                nullif(trim(lower(city)), '') as city,
                nullif(trim(state), '') as state,
                nullif(trim(country), '') as country,
                nullif(trim(lower(assignee)), '') as assignee,
                case when coalesce(coinventors, '') = '' then null else string_split(coinventors, ';') end as coinventors,
                case when coalesce(classes, '') = '' then null else string_split(classes, ';') end as classes
            from raw""",
        "blocking": [block_on("first_name", "last_name"), block_on("last_name", "city")],
        "comparisons": [
            cl.NameComparison("first_name").configure(term_frequency_adjustments=True),
            cl.JaroWinklerAtThresholds("middle_name", [0.92]),
            cl.NameComparison("last_name").configure(term_frequency_adjustments=True),
            cl.ExactMatch("city").configure(term_frequency_adjustments=True),
            cl.ExactMatch("state"),
            cl.ExactMatch("country"),
            cl.JaroWinklerAtThresholds("assignee", [0.9, 0.8]),
            cl.ArrayIntersectAtSizes("coinventors", [2, 1]),
            cl.ArrayIntersectAtSizes("classes", [2, 1]),
        ],
        "deterministic": [block_on("first_name", "middle_name", "last_name", "city"), block_on("first_name", "last_name", "assignee")],
        "recall": 0.7,
        "em_rules": [block_on("first_name", "last_name"), block_on("last_name", "city")],
    }


def splink_inventors(path: Path, seed: int, u_pairs: float) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, Any]]:
    """Splink 5 on DuckDB, ``dedupe_only`` (:func:`bench_persons.splink_dedupe`): lambda from deterministic
    rules, u by random sampling, m by EM in sessions on the blocking rules, pairs at match probability >= 0.5,
    clusters of those at 0.5. Returns (pairs, (id, cluster) of every record, details)."""
    pairs, members, detail = splink_dedupe(path, "inventors", splink_inventors_settings(), seed, u_pairs, cluster=True)
    assert members is not None
    return pairs, members, detail


def worker_splink_inventors(a: argparse.Namespace) -> int:
    pairs, members, detail = splink_inventors(Path(a.csv), a.seed, a.u_pairs)
    for path, head, rows in ((a.pairs, ["id_l", "id_r"], pairs), (a.clusters, ["id", "cluster_id"], members)):
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(head)
            w.writerows(rows)
    print(json.dumps({"tool": "splink", "pairs": len(pairs), "clusters": len({c for _, c in members}), **detail}))
    return 0


# ----------------------------------------------------------------------------
# scoring


def read_truth(truth_csv: Path) -> dict[str, str]:
    """``id,entity`` rows: id -> entity."""
    with open(truth_csv, newline="", encoding="utf-8") as f:
        return {r["id"]: r["entity"] for r in csv.DictReader(f)}


def read_clusters(clusters_csv: Path, id_column: str = "id", cluster_column: str = "cluster_id") -> dict[str, str]:
    """id -> cluster of a clusters CSV (er's clusters.csv, the Splink worker's)."""
    with open(clusters_csv, newline="", encoding="utf-8") as f:
        return {r[id_column]: r[cluster_column] for r in csv.DictReader(f)}


def cluster_prf(cluster_of: dict[str, str], entity_of: dict[str, str]) -> dict[str, Any]:
    """Pairwise precision / recall / F1 of the clusters: every pair of records in one cluster is predicted.

    Counted from the cluster x entity contingency table (a record missing from ``cluster_of`` is alone), so
    a cluster of n records costs one count, not n(n-1)/2 pairs.
    """

    def pairs(counts: Counter[Any]) -> int:
        return sum(k * (k - 1) // 2 for k in counts.values())

    cluster = {rid: cluster_of.get(rid, f"\0{rid}") for rid in entity_of}
    tp = pairs(Counter((cluster[r], e) for r, e in entity_of.items()))
    predicted = pairs(Counter(cluster.values()))
    truth = pairs(Counter(entity_of.values()))
    sizes = Counter(cluster.values())
    p = tp / predicted if predicted else 0.0
    r = tp / truth if truth else 1.0
    return {
        "predicted": predicted,
        "true_positives": tp,
        "truth_pairs": truth,
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r) if p + r else 0.0,
        "clusters": len(sizes),
        "largest_cluster": max(sizes.values()) if sizes else 0,
    }


def score(s: Scenario, tool: str, work: Path) -> dict[str, Any]:
    truth = dedupe_truth(s.truth)
    entity_of = read_truth(s.truth)
    if tool == "er":
        res = prf(er_pairs(work / "er_out" / "pairs.csv", None), truth)
        res["clusters"] = cluster_prf(read_clusters(work / "er_out" / "clusters.csv"), entity_of)
        return res
    cmd = s.splink_cmd
    res = prf(csv_pairs(Path(cmd[cmd.index("--pairs") + 1]), ordered=False), truth)
    res["clusters"] = cluster_prf(read_clusters(Path(cmd[cmd.index("--clusters") + 1])), entity_of)
    return res


# ----------------------------------------------------------------------------
# the run


def _generate(py: str, n: int, seed: int, out: Path) -> None:
    cmd = [py, "-m", "er_framework", "synth", "inventors", "--n", str(n), "--seed", str(seed), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"er synth inventors failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")


def make_scenarios(a: argparse.Namespace, scratch: Path) -> list[Scenario]:
    out: list[Scenario] = []
    for seed in a.seeds:
        d = scratch / f"inventors-{a.n}-s{seed}"
        print(f"generating inventors n={a.n:,} seed={seed} ...", flush=True)
        _generate(a.python, a.n, seed, d)
        splink = [a.python, str(Path(__file__).resolve()), "--worker", "splink-inventors", "--csv", str(d / "inventors.csv")]
        splink += ["--pairs", str(d / "splink.pairs.csv"), "--clusters", str(d / "splink.clusters.csv")]
        splink += ["--seed", "7", "--u-pairs", f"{a.u_pairs:g}"]
        note = f"er synth inventors --n {a.n} --seed {seed}"
        sources = {"inventors": d / "inventors.csv"}
        out.append(Scenario(f"inventors-s{seed}", "dedupe", sources, d / "truth.csv", "inventors.yaml", splink, note))
    return out


def run_scenario(a: argparse.Namespace, s: Scenario, scratch: Path) -> None:
    s.results["inventors"] = len(set(read_truth(s.truth).values()))

    def line(sc: dict[str, Any], run: dict[str, Any]) -> str:
        cl = sc["clusters"]
        return (
            f"pairs F1 {sc['f1']:.4f} (P {sc['precision']:.4f}, R {sc['recall']:.4f}), clusters F1 {cl['f1']:.4f} "
            f"(P {cl['precision']:.4f}, R {cl['recall']:.4f}, largest {cl['largest_cluster']:,}), "
            f"{run['wall_s']:.2f} s, {run['peak_rss_mb']:.0f} MB"
        )

    run_tools(a, s, scratch, score, line)


def _f(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown(scenarios: list[Scenario]) -> str:
    head = (
        "| scenario | mentions | inventors | true pairs | tool | pairs P | pairs R | pairs F1 | cluster P | cluster R | cluster F1 "
        "| clusters (largest) | wall s | peak MB |"
    )
    lines = [head, "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in scenarios:
        for tool in ("er", "splink"):
            e = s.results.get(tool)
            if e is None:
                continue
            sc, run = e.get("scores") or {}, e["run"]
            cl = sc.get("clusters") or {}
            ok = "error" not in run
            lines.append(
                f"| {s.name} | {s.results['records']:,} | {s.results['inventors']:,} | {_f(s.results.get('truth_pairs'), ',')} | {tool} | "
                f"{_f(sc.get('precision'), '.4f')} | {_f(sc.get('recall'), '.4f')} | {_f(sc.get('f1'), '.4f')} | "
                f"{_f(cl.get('precision'), '.4f')} | {_f(cl.get('recall'), '.4f')} | {_f(cl.get('f1'), '.4f')} | "
                f"{_f(cl.get('clusters'), ',')} ({_f(cl.get('largest_cluster'), ',')}) | "
                f"{_f(run['wall_s'] if ok else None, '.2f')} | {_f(run['peak_rss_mb'] if ok else None, '.0f')} |"
                + ("" if ok else f" FAILED: {run['error'][:200]}")
            )
    return "\n".join(lines) + "\n"


def orchestrate(a: argparse.Namespace) -> int:
    def intro(code: str) -> str:
        return (
            "# Held-out inventor mentions: er run vs Splink (benchmarks/bench_inventors.py)\n\n"
            "Data: `er synth inventors` (one record per inventor named on a patent; heavy-tailed patents per inventor, "
            "teams on one patent, many inventors sharing a full name, careers, noisy mentions), seeds not looked at while "
            "writing the job. Whole processes measured by benchmarks/measure.py (wall seconds, peak RSS of the process tree); "
            "er: `python -m er_framework run` with configs/inventors.yaml as shipped (paths replaced, untuned); "
            f"Splink {version_of(a.python, 'splink')} (DuckDB) in a standard set-up (see the script), match probability >= "
            f"{THRESHOLD} for both, Splink's clusters at {THRESHOLD}. Pairwise precision / recall / F1 of the pairs each lists, "
            "and of the clusters (every pair of mentions in one cluster; er's clusters.csv, Splink's "
            f"cluster_pairwise_predictions_at_threshold). {code}"
        )

    extra = {"splink_inventors": {"clean_sql": splink_inventors_settings()["clean_sql"] if not a.skip_splink else None}}
    packages = ("er-framework", "numpy", "splink", "duckdb", "pandas", "faker")
    return record_benchmark(a, "inventors-heldout", make_scenarios, run_scenario, markdown, intro, extra, packages)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=lambda t: [int(x) for x in csv_list(t)], default=[1, 2, 3], help="data seeds (1,2,3)")
    p.add_argument("--n", type=int, default=20_000, help="mentions per seed (20,000)")
    p.add_argument("--results-dir", default=str(HERE / "results"))
    p.add_argument("--skip-splink", action="store_true", help="run er only")
    p.add_argument("--u-pairs", type=float, default=1e7, help="Splink: estimate_u_using_random_sampling(max_pairs=...) (1e7)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per process (3600)")
    p.add_argument("--python", default=sys.executable, help="interpreter of every process: er and Splink (this one)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder")
    # worker
    p.add_argument("--worker", choices=["splink-inventors"], help=argparse.SUPPRESS)
    p.add_argument("--csv", help=argparse.SUPPRESS)
    p.add_argument("--pairs", help=argparse.SUPPRESS)
    p.add_argument("--clusters", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker == "splink-inventors":
        return worker_splink_inventors(a)
    return orchestrate(a)


if __name__ == "__main__":
    sys.exit(main())
