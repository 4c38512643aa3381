"""``er synth fingerprints|customers``: test data with known truth."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.errors import ErError, Problem

__all__ = ["add_parser", "cmd_synth_customers", "cmd_synth_fingerprints"]


def cmd_synth_customers(args: argparse.Namespace) -> int:
    from er_framework.synth.customers import generate_customers, write_customers

    try:
        data = generate_customers(args.n, args.overlap, args.seed)
    except ValueError as exc:
        raise ErError(f"er synth customers: {exc}") from None
    paths = write_customers(data, args.out)
    print(f"wrote {paths['a']} ({args.n:,} records), {paths['b']} ({args.n:,} records), "
          f"{paths['truth']} ({len(data.truth):,} pairs)")
    return 0


def cmd_synth_fingerprints(args: argparse.Namespace) -> int:
    """Simulated prints as JSONL minutiae plus a truth CSV (id, finger)."""
    from er_framework.synth.fingerprints import simulate_cells, simulate_minutiae, write_prints_jsonl

    problems = []
    if args.fingers < 1 or args.impressions < 1:
        problems.append(Problem(where="--fingers/--impressions", message="must be >= 1"))
    try:
        gx, gy = (int(v) for v in args.grid.lower().split("x"))
        if gx < 1 or gy < 1:
            raise ValueError
    except ValueError:
        problems.append(Problem(where="--grid", message=f"{args.grid!r} is not COLSxROWS", fix="e.g. --grid 20x20"))
        gx = gy = 1
    if problems:
        raise ErError(problems)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.mode == "cells":
        from er_framework.kernels.bits import unpack_bits

        bits, finger = simulate_cells(args.fingers, args.impressions, gx * gy, args.occupancy, args.agreement, seed=args.seed)
        cells = unpack_bits(bits, gx * gy)
        cw, ch = args.width / gx, args.height / gy
        centres = []
        for i in range(len(cells)):  # one step per print: cell centres as minutiae
            c = cells.row(i).astype("int64")
            centres.append(((c % gx + 0.5) * cw, (c // gx + 0.5) * ch))
        minutiae = [np.column_stack(xy) if len(xy[0]) else np.zeros((0, 2)) for xy in centres]
    else:
        minutiae, finger = simulate_minutiae(
            args.fingers, args.impressions, args.width, args.height, sigma=args.sigma, seed=args.seed
        )
    ids = [f"f{int(f)}-{i % args.impressions}" for i, f in enumerate(finger)]
    write_prints_jsonl(out / "prints.jsonl", ids, minutiae, truth_path=out / "truth.csv", finger=finger)
    print(f"wrote {len(ids):,} prints of {args.fingers:,} fingers to {out / 'prints.jsonl'} (truth: {out / 'truth.csv'})")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("synth", help="generate test data with known truth", description="Generate test data with ground truth.")
    synth_sub = p.add_subparsers(dest="domain", metavar="DOMAIN", required=True)
    f = synth_sub.add_parser(
        "fingerprints",
        help="simulated prints (JSONL minutiae + truth.csv)",
        description="Simulate fingerprints: 'cells' follows the seed's model (each cell occupied with probability p, "
        "a second impression keeps each occupied cell with probability q; minutiae at cell centres), "
        "'geometric' draws minutiae with displacement noise, drops and spurious points.",
    )
    f.add_argument("--fingers", type=int, required=True, help="number of fingers")
    f.add_argument("--impressions", type=int, default=2, help="impressions per finger (2)")
    f.add_argument("--mode", choices=["cells", "geometric"], default="geometric")
    f.add_argument("--grid", default="20x20", help="cells mode: COLSxROWS (20x20)")
    f.add_argument("--occupancy", type=float, default=0.2, help="cells mode: p (0.2)")
    f.add_argument("--agreement", type=float, default=0.8, help="cells mode: q (0.8)")
    f.add_argument("--width", type=float, default=500.0, help="frame width (500)")
    f.add_argument("--height", type=float, default=500.0, help="frame height (500)")
    f.add_argument("--sigma", type=float, default=3.0, help="geometric mode: displacement noise (3.0)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--out", required=True, metavar="DIR", help="folder for prints.jsonl and truth.csv")
    f.set_defaults(func=cmd_synth_fingerprints)
    f = synth_sub.add_parser(
        "customers",
        help="customer records of two companies (a.csv, b.csv, truth.csv)",
        description="Customer records of company A and company B: B holds corrupted copies of OVERLAP*N of A's "
        "customers (typos, nicknames, swapped names, changed phones, moved addresses, missing fields, other "
        "formatting) and new people. Deterministic for a seed (with the same Faker and nicknames versions).",
    )
    f.add_argument("--n", type=int, required=True, help="records per company")
    f.add_argument("--overlap", type=float, default=0.5, help="share of B's records copied from A (0.5)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--out", required=True, metavar="DIR", help="folder for a.csv, b.csv and truth.csv")
    f.set_defaults(func=cmd_synth_customers)
