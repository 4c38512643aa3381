"""Chain flags (``er_framework.kernels.chain_flags``) measured: does the flag find the impure clusters?

Run from the repository root (~1 min on 2 cores)::

    python benchmarks/bench_chains.py
    python benchmarks/bench_chains.py --scale-edges 3000000     # time on a larger generated graph

**Quality.** The verified pairs of the ``chained`` job of
``benchmarks/bench_clustering.py`` (``chained_records(2000, seed=0)``; char
5-shingles, MinHash 128, LSH target recall 0.95, exact Jaccard >= 0.45),
clustered by every variant of :data:`VARIANTS`. For each variant: B-cubed
precision/recall/F1 against the truth, the clusters that hold records of
more than one true entity (*impure*), the clusters the kernel flags and how
many of the flagged are impure: the flag's precision and recall for "impure
cluster". The flag is computed with the kernel's defaults and with each
setting of :data:`FLAG_SETTINGS` on the connected-components clusters.

``cc + chain split`` is not a shipped clusterer: connected components, then
every flagged cluster is cut along its reported cut, repeated until nothing
is flagged (what a ``split`` option built on the kernel would do).

**Scale.** ``bench_clustering.scale_graph(--scale-edges)`` (small dense groups
chained by weaker bridges, three large components), connected components,
then ``chain_flags`` timed (large components over ``max_cluster`` are skipped
and counted).

Not a test: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_clustering as bc  # noqa: E402

from er_framework.data import Pairs  # noqa: E402
from er_framework.kernels import chain_flags  # noqa: E402
from er_framework.kernels.graph import connected_component_labels  # noqa: E402

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "connected_components": ("connected_components", {}),
    "label_propagation": ("label_propagation", {}),
    "louvain resolution 0.5": ("louvain", {"resolution": 0.5}),
    "louvain resolution 0.7": ("louvain", {"resolution": 0.7}),
    "louvain resolution 1": ("louvain", {"resolution": 1.0}),
    "louvain resolution 2": ("louvain", {"resolution": 2.0}),
    "cc + split bridges<=0.5 (side 2)": ("connected_components", {"split": {"bridge_max_score": 0.5, "min_side": 2}}),
    "cc + split bridges<=1 (side 2)": ("connected_components", {"split": {"bridge_max_score": 1.0, "min_side": 2}}),
    "cc + split bridges<=0.5 dens 0.5 (side 2)": (
        "connected_components",
        {"split": {"bridge_max_score": 0.5, "min_density": 0.5, "min_side": 2}},
    ),
    "cc + split bridges<=0.5 dens 0.7 (side 2)": (
        "connected_components",
        {"split": {"bridge_max_score": 0.5, "min_density": 0.7, "min_side": 2}},
    ),
    "cc + split dens 0.7 (side 2)": ("connected_components", {"split": {"min_density": 0.7, "min_side": 2}}),
    "cc + split min_cut 2 (side 2)": ("connected_components", {"split": {"min_cut": 2.0, "min_side": 2}}),
    "louvain 0.5 + split bridges<=1 (side 2)": ("louvain", {"resolution": 0.5, "split": {"bridge_max_score": 1.0, "min_side": 2}}),
}

FLAG_SETTINGS: list[dict[str, Any]] = [
    {},
    {"min_gap": 0.0},
    {"min_gap": 0.05},
    {"max_cut_density": 0.5},
    {"min_side_density": 0.3},
    {"min_size": 3},
]


def impure(labels: np.ndarray, truth: np.ndarray) -> set[int]:
    """Labels of the clusters holding records of more than one true entity."""
    u, inv = np.unique(labels, return_inverse=True)
    both = np.unique(np.stack([inv.ravel(), truth]), axis=1)
    entities = np.bincount(both[0], minlength=len(u))
    return {int(u[i]) for i in np.flatnonzero(entities > 1)}


def flag_quality(labels: np.ndarray, pairs: Pairs, truth: np.ndarray, **kw: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    flags, stats = chain_flags(labels, pairs.left, pairs.right, pairs.score, **kw)
    sec = time.perf_counter() - t0
    flagged = {f.cluster for f in flags}
    bad = impure(labels, truth)
    tp = len(flagged & bad)
    return {
        "settings": kw,
        "flagged": len(flagged),
        "flagged_impure": tp,
        "impure": len(bad),
        "precision": round(tp / len(flagged), 4) if flagged else None,
        "recall": round(tp / len(bad), 4) if bad else None,
        "seconds": round(sec, 3),
        "stats": stats,
    }


def chain_split(labels: np.ndarray, pairs: Pairs, **kw: Any) -> tuple[np.ndarray, int]:
    """Cut every flagged cluster along its cut until nothing is flagged; returns labels and rounds."""
    out = np.asarray(labels, dtype=np.int64).copy()
    rounds = 0
    while True:
        flags, _ = chain_flags(out, pairs.left, pairs.right, pairs.score, **kw)
        if not flags:
            return out, rounds
        rounds += 1
        for f in flags:
            out[f.members[1]] = int(out.max()) + 1


def quality(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        ds = bc.dataset_chained(Path(d), args.chained_entities, args.chained_threshold)
    pairs, truth = ds["pairs"], ds["truth"]
    n = len(truth)
    out: dict[str, Any] = {"settings": ds["settings"], "records": n, "pairs": len(pairs), **bc.pair_quality(pairs, truth)}
    cc = connected_component_labels(n, pairs.left, pairs.right)
    print(f"## chained: {n} records, {len(pairs)} verified pairs; {ds['settings']}")
    print("\nflag on the connected components, 'impure' = holds records of more than one true entity")
    print(f"{'settings':<34} {'flagged':>8} {'impure':>7} {'both':>6} {'P':>7} {'R':>7} {'sec':>6}")
    out["flag_on_cc"] = []
    for kw in FLAG_SETTINGS:
        q = flag_quality(cc, pairs, truth, **kw)
        out["flag_on_cc"].append(q)
        print(
            f"{json.dumps(kw) or 'defaults':<34} {q['flagged']:8d} {q['impure']:7d} {q['flagged_impure']:6d} "
            f"{q['precision'] or 0:7.4f} {q['recall'] or 0:7.4f} {q['seconds']:6.2f}",
            flush=True,
        )
    print("\nclusterers: B-cubed, impure clusters left, flagged (defaults) and flagged impure")
    print(f"{'clusterer':<44} {'P':>7} {'R':>7} {'F1':>7} {'clusters':>8} {'impure':>7} {'flagged':>8} {'both':>5} {'sec':>6}")
    rows: dict[str, Any] = {}

    def row(label: str, labels: np.ndarray, sec: float) -> None:
        p, r, f = bc.bcubed(truth, labels)
        q = flag_quality(labels, pairs, truth)
        rows[label] = {
            "precision": round(p, 4),
            "recall": round(r, 4),
            "f1": round(f, 4),
            "clusters": int(len(np.unique(labels))),
            "impure": q["impure"],
            "flagged": q["flagged"],
            "flagged_impure": q["flagged_impure"],
            "seconds": round(sec, 3),
        }
        print(
            f"{label:<44} {p:7.4f} {r:7.4f} {f:7.4f} {rows[label]['clusters']:8d} {q['impure']:7d} "
            f"{q['flagged']:8d} {q['flagged_impure']:5d} {sec:6.2f}",
            flush=True,
        )

    for label, (name, params) in VARIANTS.items():
        t0 = time.perf_counter()
        labels = np.asarray(bc.make(name, params).cluster(n, pairs))
        row(label, labels, time.perf_counter() - t0)
    for kw in ({}, {"min_gap": 0.0}, {"max_cut_density": 0.5}):
        t0 = time.perf_counter()
        labels, rounds = chain_split(cc, pairs, **kw)
        row(f"cc + chain split {json.dumps(kw)} ({rounds} rounds)", labels, time.perf_counter() - t0)
    out["clusterers"] = rows
    return out


def scale(args: argparse.Namespace) -> dict[str, Any]:
    left, right, score, n = bc.scale_graph(args.scale_edges, seed=0)
    labels = connected_component_labels(n, left, right)
    t0 = time.perf_counter()
    flags, stats = chain_flags(labels, left, right, score)
    sec = time.perf_counter() - t0
    res = {"edges": int(len(left)), "records": int(n), "seconds": round(sec, 2), "stats": stats}
    print(f"\n## scale: {json.dumps(res)}", flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chained-entities", type=int, default=2000)
    ap.add_argument("--chained-threshold", type=float, default=0.45)
    ap.add_argument("--scale-edges", type=int, default=1_000_000, help="0 = no scale run")
    ap.add_argument("--out", default="benchmarks/results/chains.json")
    args = ap.parse_args()
    result: dict[str, Any] = {"command": "python benchmarks/bench_chains.py " + " ".join(sys.argv[1:]), "quality": quality(args)}
    if args.scale_edges:
        result["scale"] = scale(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
