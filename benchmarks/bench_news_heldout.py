"""News pages of held-out template families: the shipped news job as a user runs it, untuned and tuned.

For each corpus of :func:`er_framework.synth.news_corpus.make_corpus` (default:
the TUNE families with seeds 1 and 2 and the HELDOUT families with seeds 101
and 102, 3,000 pages each) the script

1. writes the corpus to a scratch folder (``pages/<site>/<story>.html``, ``truth.csv``);
2. writes a job there: ``--config`` (default ``configs/news.yaml``) loaded,
   ``sources[0].path`` set to the pages, plus the ``--set KEY=VALUE``
   overrides (dotted YAML paths; the value is read as YAML);
3. runs ``er run JOB --out OUT`` as a whole process (``python -m
   er_framework.cli.main``) through a small launcher that reads the child's
   peak RSS with ``os.wait4`` (a child forked from this process would count
   this process's pages as its own);
4. scores ``clusters.csv`` against ``truth.csv`` (cluster column ``story``)
   with ``er_framework.evaluate.metrics.evaluate``: B-cubed and pairwise
   P/R/F1, clusters against stories, the largest cluster.

``--grid`` adds the oracle no user has: the best B-cubed F1 over thresholds
0.20-0.60 (step 0.05) x connected_components / louvain / label_propagation.
It runs ``er run`` once more at the lowest threshold (same job otherwise),
then clusters the verified pairs with a score >= each threshold with each
clusterer (default parameters, ``er_plugins.clusterers``) in this process;
the LSH bands chosen for the lowest threshold find (with higher
probability) every pair a job at a higher threshold would find.

``--jaccard`` adds the exact stop-word Jaccard (n=2, english; the job's
shingler on the visible text, ``boilerplate: keep``) of page pairs of the
first TUNE and the first HELDOUT corpus by class: same story; different
stories sharing a disclaimer or background sentence (from the truth);
different stories on one site; on two sites of one family; all other pairs
(a random sample of ``--jaccard-sample`` of them).

Run from the repository root::

    python benchmarks/bench_news_heldout.py                      # ~45 s on 2 cores (--grid --jaccard: ~3 min)
    python benchmarks/bench_news_heldout.py --grid --jaccard --out benchmarks/results/news-heldout-before.json
    python benchmarks/bench_news_heldout.py --set threshold=0.35 --set cluster.type=louvain

Not a test: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import code_fingerprint, machine_info  # noqa: E402

from er_framework.evaluate.metrics import bcubed, evaluate  # noqa: E402
from er_framework.evaluate.truth import load_truth  # noqa: E402
from er_framework.synth.news_corpus import HELDOUT_FAMILIES, TUNE_FAMILIES, make_corpus, write_corpus  # noqa: E402

#: runs ``python ARGS`` as its child and prints the child's peak RSS (KB, from wait4) to a file: this launcher
#: is small when it forks, so the figure is er's own (ru_maxrss keeps the high-water mark from before exec)
LAUNCHER = """
import os, sys
out = sys.argv[1]
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
"""

GRID_THRESHOLDS = tuple(round(0.2 + 0.05 * i, 2) for i in range(9))
GRID_CLUSTERERS = ("connected_components", "louvain", "label_propagation")


def set_path(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """``doc[a][b][c] = value`` for ``dotted`` = ``a.b.c`` (list items by index: ``sources.0.path``)."""
    keys = dotted.split(".")
    node: Any = doc
    for k in keys[:-1]:
        if isinstance(node, list):
            node = node[int(k)]
        else:
            node = node.setdefault(k, {})
    if isinstance(node, list):
        node[int(keys[-1])] = value
    else:
        node[keys[-1]] = value


def parse_sets(items: list[str]) -> list[tuple[str, Any]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE, e.g. --set threshold=0.35")
        out.append((key.strip(), yaml.safe_load(value)))
    return out


def write_job(config: Path, folder: Path, sets: list[tuple[str, Any]]) -> Path:
    job = yaml.safe_load(config.read_text(encoding="utf-8"))
    job["sources"][0]["path"] = "pages"  # relative paths resolve against the job file's folder
    for key, value in sets:
        set_path(job, key, value)
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False), encoding="utf-8")
    return path


def run_er(job: Path, out: Path) -> dict[str, Any]:
    """``er run JOB --out OUT`` as a process: wall seconds, peak RSS MB, exit code, stderr tail."""
    fd, rusage = tempfile.mkstemp(prefix="er-rusage-")
    os.close(fd)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCHER, rusage, "-m", "er_framework.cli.main", "run", str(job), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - t0
    try:
        peak_kb = int(Path(rusage).read_text() or 0)
    finally:
        os.unlink(rusage)
    return {
        "exit": proc.returncode,
        "seconds": round(seconds, 2),
        "peak_mb": round(peak_kb / 1024, 1),
        "stderr_tail": proc.stderr[-2000:] if proc.returncode else "",
    }


def score(out: Path, truth_csv: Path) -> dict[str, Any]:
    m = evaluate(out, load_truth(truth_csv, id_column="id", cluster_column="story"))
    c, pw = m["clusters"], m["pairwise"]["cluster_pairs"]
    sizes: dict[str, int] = {}
    with open(out / "clusters.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            sizes[row["cluster_id"]] = sizes.get(row["cluster_id"], 0) + 1

    def r4(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    return {
        "bcubed_precision": r4(c["bcubed_precision"]),
        "bcubed_recall": r4(c["bcubed_recall"]),
        "bcubed_f1": r4(c["bcubed_f1"]),
        "pairwise_precision": r4(pw["precision"]),
        "pairwise_recall": r4(pw["recall"]),
        "pairwise_f1": r4(pw["f1"]),
        "clusters": c["predicted_clusters"],
        "stories": c["true_clusters"],
        "largest": max(sizes.values()),
        "verified_pairs": m["pairwise"]["verified_pairs"]["predicted"],
    }


def oracle(folder: Path, config: Path, sets: list[tuple[str, Any]], ids: list[str], truth: np.ndarray) -> dict[str, Any]:
    """Best B-cubed F1 over GRID_THRESHOLDS x GRID_CLUSTERERS (one er run at the lowest threshold)."""
    from er_framework.components import Context
    from er_framework.data import Pairs
    from er_plugins.clusterers import BUILTIN_CLUSTERERS

    classes = {c.name: c for c in BUILTIN_CLUSTERERS}
    gdir = folder / "grid"
    gdir.mkdir(exist_ok=True)
    (gdir / "pages").symlink_to(folder / "pages", target_is_directory=True)
    job = write_job(config, gdir, [*sets, ("threshold", GRID_THRESHOLDS[0])])
    ran = run_er(job, gdir / "out")
    if ran["exit"]:
        return {"error": ran}
    row = {x: i for i, x in enumerate(ids)}
    left, right, sc = [], [], []
    with open(gdir / "out" / "pairs.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            left.append(row[r["left_id"]])
            right.append(row[r["right_id"]])
            sc.append(float(r["score"]))
    L, R, S = np.array(left, dtype=np.int64), np.array(right, dtype=np.int64), np.array(sc)
    grid: list[dict[str, Any]] = []
    for t in GRID_THRESHOLDS:
        keep = t <= S
        pairs = Pairs(L[keep], R[keep], S[keep]).normalized()
        for name in GRID_CLUSTERERS:
            cls = classes[name]
            labels = cls(cls.Params(), Context(seed=42)).cluster(len(ids), pairs)
            p, r, f1 = bcubed(truth, np.asarray(labels, dtype=np.int64))
            grid.append({"threshold": t, "cluster": name, "bcubed_f1": round(float(f1 or 0), 4), "clusters": int(len(np.unique(labels)))})
    best = max(grid, key=lambda g: g["bcubed_f1"])
    return {"best": best, "grid": grid, "run_at_lowest_threshold": ran}


def jaccard_classes(corpus: Any, sample: int, seed: int = 0) -> dict[str, Any]:
    """Exact stop-word Jaccard (n=2, english) of page pairs by class: min / quantiles / max."""
    from er_framework.data import Records
    from er_framework.io.html import extract_text
    from er_framework.kernels import jaccard_pairs
    from er_plugins.news import StopwordShingler

    pages = corpus.pages
    texts, _ = extract_text([p.html for p in pages], boilerplate="keep")
    recs = Records.from_columns([p.page_id for p in pages], {"text": [t or "" for t in texts]})
    tokens = StopwordShingler(StopwordShingler.Params(n=2, language="english")).shingle(recs)
    n = len(pages)
    story = np.array([p.story for p in pages])
    site = np.array([p.site for p in pages])
    fam = np.array([p.family for p in pages])
    # pairs sharing a disclaimer or a background sentence: through the recorded units
    by_unit: dict[str, list[int]] = {}
    bg_units = {u for s in corpus.stories for u in s.background_units}
    for i, p in enumerate(pages):
        for u in p.units:
            if u.startswith("d:") or u in bg_units:
                by_unit.setdefault(u, []).append(i)
    shared: set[tuple[int, int]] = set()
    for members in by_unit.values():
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                if story[members[a]] != story[members[b]]:
                    shared.add((members[a], members[b]))
    groups: dict[str, list[tuple[int, int]]] = {
        "same story": [],
        "different story, shared disclaimer/background": sorted(shared),
        "different story, same site": [],
        "different story, same family, other site": [],
    }
    for key, arr in (("story", story), ("site", site)):
        order: dict[str, list[int]] = {}
        for i, v in enumerate(arr):
            order.setdefault(str(v), []).append(i)
        for members in order.values():
            for a in range(len(members)):
                for b in range(a + 1, len(members)):
                    i, j = members[a], members[b]
                    if key == "story":
                        groups["same story"].append((i, j))
                    elif story[i] != story[j] and (i, j) not in shared:
                        groups["different story, same site"].append((i, j))
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=sample * 2)
    j = rng.integers(0, n, size=sample * 2)
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    ok = (lo != hi) & (story[lo] != story[hi]) & (site[lo] != site[hi])
    lo, hi = lo[ok], hi[ok]
    sh = np.array([(a, b) in shared for a, b in zip(lo.tolist(), hi.tolist())], dtype=bool)
    lo, hi = lo[~sh], hi[~sh]
    same_fam = fam[lo] == fam[hi]
    groups["different story, same family, other site"] = list(zip(lo[same_fam].tolist(), hi[same_fam].tolist()))
    groups[f"other (sample of {sample:,})"] = list(zip(lo[~same_fam][:sample].tolist(), hi[~same_fam][:sample].tolist()))
    out: dict[str, Any] = {}
    qs = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
    for name, pairs in groups.items():
        if not pairs:
            out[name] = {"pairs": 0}
            continue
        a = np.array([p[0] for p in pairs], dtype=np.int64)
        b = np.array([p[1] for p in pairs], dtype=np.int64)
        j_ = jaccard_pairs(tokens, a, b)
        out[name] = {
            "pairs": len(pairs),
            "min": round(float(j_.min()), 3),
            **{f"q{int(q * 100):02d}": round(float(np.quantile(j_, q)), 3) for q in qs},
            "max": round(float(j_.max()), 3),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--seeds-tune", default="1,2", help="seeds of the TUNE-family corpora ('' for none)")
    ap.add_argument("--seeds-heldout", default="101,102", help="seeds of the HELDOUT-family corpora ('' for none)")
    ap.add_argument("--config", default=str(ROOT / "configs" / "news.yaml"))
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="sets",
        help="override of the job (dotted YAML path), repeatable: --set threshold=0.35",
    )
    ap.add_argument("--chrome-scale", type=float, default=1.0, help="make_corpus(chrome_scale=...) (1.0)")
    ap.add_argument("--grid", action="store_true", help="also the oracle: best B-cubed F1 over thresholds x clusterers")
    ap.add_argument("--jaccard", action="store_true", help="also the stop-word Jaccard by pair class")
    ap.add_argument("--jaccard-sample", type=int, default=300_000)
    ap.add_argument("--scratch", help="folder for the corpora and runs (default: a temporary folder, removed)")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    sets = parse_sets(args.sets)
    config = Path(args.config).resolve()
    corpora = [("tune", int(s)) for s in args.seeds_tune.split(",") if s.strip()]
    corpora += [("heldout", int(s)) for s in args.seeds_heldout.split(",") if s.strip()]

    results: dict[str, Any] = {
        "benchmark": "news-heldout",
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine_info(("numpy", "pyarrow", "selectolax", "justext")),
        "code": code_fingerprint(),
        "config": str(config.relative_to(ROOT) if config.is_relative_to(ROOT) else config),
        "overrides": dict(sets),
        "pages": args.pages,
        "chrome_scale": args.chrome_scale,
        "families": {"tune": list(TUNE_FAMILIES), "heldout": list(HELDOUT_FAMILIES)},
        "grid": {"thresholds": list(GRID_THRESHOLDS), "clusterers": list(GRID_CLUSTERERS)} if args.grid else None,
        "corpora": [],
    }
    tmp = tempfile.TemporaryDirectory(prefix="news-heldout-") if args.scratch is None else None
    scratch = Path(tmp.name if tmp else args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    jaccard_done: set[str] = set()
    try:
        for split, seed in corpora:
            folder = scratch / f"{split}-{seed}"
            for old in ("pages", "out", "grid"):  # of an earlier run with this --scratch
                if (folder / old).is_dir():
                    shutil.rmtree(folder / old)
            folder.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            corpus = make_corpus(args.pages, split, seed, chrome_scale=args.chrome_scale)
            write_corpus(corpus, folder)
            gen = time.perf_counter() - t0
            job = write_job(config, folder, sets)
            ran = run_er(job, folder / "out")
            entry: dict[str, Any] = {
                "families": split,
                "seed": seed,
                "pages": len(corpus.pages),
                "stories": len(corpus.stories),
                "sites": len({p.site for p in corpus.pages}),
                "cut_pages": sum(p.cut for p in corpus.pages),
                "pages_with_wire_disclaimer": sum(p.wire_disclaimer is not None for p in corpus.pages),
                "pages_with_site_disclaimer": sum(p.site_disclaimer is not None for p in corpus.pages),
                "pages_with_background": sum(p.background_from is not None for p in corpus.pages),
                "seconds_generate": round(gen, 2),
                "run": ran,
            }
            if ran["exit"] == 0:
                entry["untuned"] = score(folder / "out", folder / "truth.csv")
            if args.grid:
                ids = [p.page_id for p in corpus.pages]
                codes = {s: k for k, s in enumerate(dict.fromkeys(p.story for p in corpus.pages))}
                truth = np.array([codes[p.story] for p in corpus.pages], dtype=np.int64)
                entry["oracle"] = oracle(folder, config, sets, ids, truth)
            if args.jaccard and split not in jaccard_done:
                entry["jaccard"] = jaccard_classes(corpus, args.jaccard_sample)
                jaccard_done.add(split)
            results["corpora"].append(entry)
            u = entry.get("untuned", {})
            print(
                f"{split}-{seed}: {entry['pages']} pages, {entry['stories']} stories, untuned B-cubed F1 "
                f"{u.get('bcubed_f1')}, {ran['seconds']} s" + (f" (exit {ran['exit']})" if ran["exit"] else ""),
                file=sys.stderr,
                flush=True,
            )
            if ran["exit"]:
                print(ran["stderr_tail"], file=sys.stderr, flush=True)
    finally:
        if tmp:
            tmp.cleanup()

    print(
        f"\nconfig {results['config']}"
        + (f" with {', '.join(args.sets)}" if args.sets else "")
        + f"; tuning families {', '.join(TUNE_FAMILIES)}; held-out families {', '.join(HELDOUT_FAMILIES)}"
    )
    head = f"{'corpus':<14}{'pages':>6}{'stories':>8} | {'B3 F1':>7}{'pair F1':>8}{'clusters':>9}{'largest':>8}{'sec':>7}{'peak MB':>8}"
    if args.grid:
        head += f" | {'oracle (threshold, clusterer)':<34}{'B3 F1':>7}"
    print(head)
    print("-" * len(head))
    for e in results["corpora"]:
        u = e.get("untuned", {})
        line = (
            f"{e['families'] + ' ' + str(e['seed']):<14}{e['pages']:>6}{e['stories']:>8} | "
            f"{u.get('bcubed_f1', float('nan')):>7.4f}{u.get('pairwise_f1') or 0:>8.4f}{u.get('clusters', 0):>9}"
            f"{u.get('largest', 0):>8}{e['run']['seconds']:>7.1f}{e['run']['peak_mb']:>8.0f}"
        )
        if args.grid:
            best = e["oracle"].get("best") if e.get("oracle") else None
            line += f" | {best['threshold']:.2f}, {best['cluster']:<28}{best['bcubed_f1']:>7.4f}" if best else " | error"
        print(line)
    if args.jaccard:
        for e in results["corpora"]:
            if "jaccard" in e:
                print(f"\nstop-word Jaccard (n=2, english), {e['families']} {e['seed']}:")
                print(f"  {'pairs':<52}{'n':>9}{'min':>7}{'q01':>7}{'q05':>7}{'q25':>7}{'q50':>7}{'q75':>7}{'q95':>7}{'q99':>7}{'max':>7}")
                for name, d in e["jaccard"].items():
                    if d["pairs"]:
                        print(
                            f"  {name:<52}{d['pairs']:>9,}"
                            + "".join(f"{d[k]:>7.3f}" for k in ("min", "q01", "q05", "q25", "q50", "q75", "q95", "q99", "max"))
                        )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
