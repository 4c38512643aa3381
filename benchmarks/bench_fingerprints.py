"""Grid-bit blocking of 1,000,000 simulated prints (issue 5): seconds, candidate pairs, peak memory.

    python benchmarks/bench_fingerprints.py [--prints 1000000] [--sets 1024] [--out benchmarks/results/fingerprints.json]

Prints follow the seed's cell model (SEEDS §6; ``simulate_cells`` "latent":
occupancy p = 0.2, two impressions of a finger share a cell with probability
p q, q = 0.8) on a 20 x 20 grid, two impressions per finger. For c = 3, 4, 5
cells per set and M sets it measures:

* the bucket pass over all prints (``grid_bit_candidates(count_only=True)``):
  seconds, pairs counted with multiplicity (an upper bound of the distinct
  candidates), largest bucket;
* materialized distinct candidate pairs where they fit (``--materialize-max``
  raw pairs), with seconds and the step's peak RSS;
* the candidate rate of 20,000 same-finger pairs and 200,000 different-finger
  pairs (``shares_bucket``) against 1 - (1 - (pq)^c)^M and 1 - (1 - p^2c)^M.

Peak memory is the process's VmHWM, reset before each step (Linux
``/proc/self/clear_refs``). No wall-clock assertions: this prints numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from er_framework.kernels.bits import row_popcount
from er_framework.kernels.bits_candidates import cell_sets, grid_bit_candidates, shares_bucket
from er_framework.kernels.bits_probabilities import candidate_probabilities, candidate_probabilities_exact
from er_framework.memory import peak_rss_mb as peak_mb
from er_framework.memory import reset_peak_rss as reset_peak
from er_framework.synth.fingerprints import simulate_cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prints", type=int, default=1_000_000)
    ap.add_argument("--sets", type=int, default=1024)
    ap.add_argument("--cells", default="3,4,5")
    ap.add_argument("--occupancy", type=float, default=0.2)
    ap.add_argument("--agreement", type=float, default=0.8)
    ap.add_argument("--grid", type=int, default=20, help="grid side (cells = grid^2)")
    ap.add_argument("--materialize-max", type=float, default=2e8, help="materialize distinct pairs when raw pairs <= this")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="benchmarks/results/fingerprints.json")
    args = ap.parse_args()

    n_cells = args.grid * args.grid
    p, q = args.occupancy, args.agreement
    out: dict = {
        "command": "python benchmarks/bench_fingerprints.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"),
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
        "settings": {"prints": args.prints, "sets": args.sets, "occupancy": p, "agreement": q, "cells_grid": n_cells},
        "results": [],
    }
    reset_peak()
    t = time.perf_counter()
    bits, finger = simulate_cells(args.prints // 2, 2, n_cells, p, q, seed=args.seed)
    n = len(finger)
    ids = np.arange(n, dtype=np.int64)
    occ = float(row_popcount(bits).mean()) / n_cells
    out["simulate"] = {
        "prints": n,
        "seconds": round(time.perf_counter() - t, 2),
        "peak_mb": round(peak_mb()),
        "measured_occupancy": round(occ, 4),
        "bits_mb": round(bits.nbytes / 2**20, 1),
    }
    print(f"simulated {n:,} prints ({bits.nbytes / 2**20:.0f} MB of bits), occupancy {occ:.4f}, {out['simulate']['seconds']} s")

    rng = np.random.default_rng(args.seed)
    same_l = np.arange(0, min(n, 40_000), 2, dtype=np.int64)
    same_r = same_l + 1
    a = rng.integers(0, n, 220_000)
    b = rng.integers(0, n, 220_000)
    keep = finger[a] != finger[b]
    diff_l, diff_r = a[keep][:200_000], b[keep][:200_000]

    for c in [int(x) for x in args.cells.split(",")]:
        sets = cell_sets(args.sets, c, n_cells, seed=args.seed)
        row: dict = {"cells": c, "sets": args.sets}
        reset_peak()
        t = time.perf_counter()
        _, _, stats = grid_bit_candidates(bits, ids, sets, count_only=True)
        row["count_seconds"] = round(time.perf_counter() - t, 2)
        row["count_peak_mb"] = round(peak_mb())
        row["raw_pairs"] = int(stats["raw_pairs"])
        row["largest_bucket"] = int(stats["largest_bucket"])
        if stats["raw_pairs"] <= args.materialize_max:
            reset_peak()
            t = time.perf_counter()
            left, _, _ = grid_bit_candidates(bits, ids, sets)
            row["pairs_seconds"] = round(time.perf_counter() - t, 2)
            row["pairs_peak_mb"] = round(peak_mb())
            row["distinct_pairs"] = int(len(left))
            del left
        else:
            row["distinct_pairs"] = None
            row["note"] = f"raw pairs {stats['raw_pairs']:.3g} > --materialize-max: distinct pairs not materialized"
        t = time.perf_counter()
        hit_same = float(shares_bucket(bits, same_l, same_r, sets).mean())
        hit_diff = float(shares_bucket(bits, diff_l, diff_r, sets).mean())
        row["rate_seconds"] = round(time.perf_counter() - t, 2)
        ps, pd = candidate_probabilities(p, q, c, args.sets)
        es, ed = candidate_probabilities_exact(p, q, c, args.sets, n_cells)
        row.update(
            {
                "rate_same_measured": round(hit_same, 4),
                "rate_same_seed_formula": round(ps, 4),
                "rate_same_finite_grid": round(es, 4),
                "rate_diff_measured": round(hit_diff, 5),
                "rate_diff_seed_formula": round(pd, 5),
                "rate_diff_finite_grid": round(ed, 5),
                "same_pairs": int(len(same_l)),
                "diff_pairs": int(len(diff_l)),
            }
        )
        out["results"].append(row)
        dp = f"{row['distinct_pairs']:,}" if row["distinct_pairs"] is not None else "not materialized"
        print(
            f"c={c} M={args.sets}: bucket pass {row['count_seconds']} s (peak {row['count_peak_mb']} MB), "
            f"raw pairs {row['raw_pairs']:.3g}, largest bucket {row['largest_bucket']:,}, distinct pairs {dp}"
            + (f" in {row['pairs_seconds']} s (peak {row['pairs_peak_mb']} MB)" if row["distinct_pairs"] is not None else "")
            + f"; candidate rate same {hit_same:.4f} (seed {ps:.4f}, finite grid {es:.4f}), "
            f"different {hit_diff:.5f} (seed {pd:.5f}, finite grid {ed:.5f})"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
