"""``er tune --threshold T``: choose LSH bands and rows and print the S-curve;
``er tune fingerprints``: grid-bit blocking analysis and a (c, M) suggestion."""

from __future__ import annotations

import argparse
from typing import Any

from er_framework.errors import ErError, Problem

__all__ = ["add_parser", "cmd_tune", "cmd_tune_fingerprints"]


def cmd_tune(args: argparse.Namespace) -> int:
    if args.threshold is None:
        raise ErError(
            Problem(
                where="er tune",
                message="--threshold is required",
                fix="er tune --threshold 0.8 [--num-perm 128], or er tune fingerprints --help",
            )
        )
    from er_framework.kernels import candidate_probability, choose_bands, threshold_estimate

    problems = []
    if not 0 < args.threshold <= 1:
        problems.append(Problem(where="--threshold", message=f"{args.threshold} is not in (0, 1]", fix="e.g. --threshold 0.8"))
    if args.num_perm < 1:
        problems.append(Problem(where="--num-perm", message=f"{args.num_perm} must be >= 1", fix="e.g. --num-perm 128"))
    if not 0 < args.target_recall < 1:
        problems.append(Problem(where="--target-recall", message=f"{args.target_recall} is not in (0, 1)"))
    if (args.bands is None) != (args.rows is None):
        problems.append(Problem(where="--bands/--rows", message="give both or neither"))
    elif args.bands is not None and args.bands * args.rows > args.num_perm:
        problems.append(
            Problem(where="--bands/--rows", message=f"bands * rows = {args.bands * args.rows} exceeds --num-perm {args.num_perm}")
        )
    if problems:
        raise ErError(problems)
    if args.bands is not None:
        b, r = args.bands, args.rows
        how = "given"
    else:
        try:
            b, r = choose_bands(args.threshold, args.num_perm, args.target_recall)
        except ValueError as exc:
            raise ErError(Problem(where="er tune", message=str(exc))) from None
        how = f"chosen for P(candidate | s={args.threshold}) >= {args.target_recall}"
    print(f"bands b = {b}, rows r = {r}  ({how}; uses {b * r} of {args.num_perm} signature rows)")
    print(
        f"P(candidate | s = {args.threshold}) = {candidate_probability(args.threshold, b, r):.4f}; "
        f"S-curve midpoint (1/b)^(1/r) = {threshold_estimate(b, r):.3f}"
    )
    print("\n     s   P(candidate) = 1 - (1 - s^r)^b")
    for i in range(1, 11):
        s = i / 10
        print(f"  {s:4.1f}   {candidate_probability(s, b, r):.4f}")
    return 0


def cmd_tune_fingerprints(args: argparse.Namespace) -> int:
    """SEEDS §6 analysis: P(candidate | same / different finger) and a (c, M) suggestion."""
    from er_framework.kernels.bits_probabilities import candidate_probabilities, suggest_sets

    problems = []
    for flag, value in (("--occupancy", args.occupancy), ("--agreement", args.agreement)):
        if not 0 < value <= 1:
            problems.append(Problem(where=flag, message=f"{value} is not in (0, 1]", fix="a probability, e.g. 0.2"))
    for flag, value in (("--cells", args.cells), ("--sets", args.sets)):
        if value < 1:
            problems.append(Problem(where=flag, message=f"{value} must be >= 1"))
    if not 0 < args.target_recall < 1:
        problems.append(Problem(where="--target-recall", message=f"{args.target_recall} is not in (0, 1)"))
    if not 0 <= args.max_fp <= 1:
        problems.append(Problem(where="--max-fp", message=f"{args.max_fp} is not in [0, 1]"))
    if problems:
        raise ErError(problems)
    p, q, c, m = args.occupancy, args.agreement, args.cells, args.sets
    same, diff = candidate_probabilities(p, q, c, m)
    print(f"occupancy p = {p}, agreement q = {q}, cells per set c = {c}, sets M = {m}")
    print(f"P(one set hits both | same finger)      = (p q)^c = {(p * q) ** c:.6g}")
    print(f"P(one set hits both | different finger) = p^(2c)  = {p ** (2 * c):.6g}")
    print(f"P(candidate | same finger)      = 1 - (1 - (p q)^c)^M = {same:.3f}  ({same:.6f})")
    print(f"P(candidate | different finger) = 1 - (1 - p^(2c))^M  = {diff:.3f}  ({diff:.6f})")
    sug = suggest_sets(p, q, args.target_recall, args.max_fp)
    print(f"\nfewest sets M reaching P(candidate | same) >= {args.target_recall}, per c:")
    print("   c          M   P(same)    P(different)")
    for o in sug.options:
        sets = f"{o.sets:>10,}" if o.sets is not None else "   too many"
        mark = "  <- meets both" if o.meets_recall and o.meets_fp else ""
        print(f"  {o.cells:>2} {sets}   {o.p_same:.4f}    {o.p_diff:.3g}{mark}")
    if sug.recommended is not None and sug.meets_targets:
        r = sug.recommended
        print(f"\nsuggested: cells = {r.cells}, sets = {r.sets} (P(same) = {r.p_same:.4f}, P(different) = {r.p_diff:.3g} <= {args.max_fp})")
    else:
        print(f"\nno (c, M) meets both targets: {sug.note}")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tune",
        help="choose LSH bands and rows for a threshold",
        description="Choose (b, r) with b*r <= K so that P(candidate | s = T) >= target, and print the S-curve.",
    )
    p.add_argument("--threshold", type=float, help="similarity to catch, in (0, 1] (required for documents)")
    p.add_argument("--num-perm", type=int, default=128, help="signature length K (default 128)")
    p.add_argument("--target-recall", type=float, default=0.95, help="P(candidate | s = threshold) to reach (default 0.95)")
    p.add_argument("--bands", type=int, help="evaluate these bands instead of choosing")
    p.add_argument("--rows", type=int, help="evaluate these rows instead of choosing")
    p.set_defaults(func=cmd_tune)
    tune_sub = p.add_subparsers(dest="domain", metavar="DOMAIN")
    f = tune_sub.add_parser(
        "fingerprints",
        help="grid-bit blocking: P(candidate | same/different finger), suggest (c, M)",
        description="P(candidate | same) = 1 - (1 - (p q)^c)^M, P(candidate | different) = 1 - (1 - p^(2c))^M (MMDS 3.8).",
    )
    f.add_argument("--occupancy", type=float, default=0.2, help="p, share of grid cells holding minutiae (default 0.2)")
    f.add_argument("--agreement", type=float, default=0.8, help="q, share of occupied cells two prints of one finger share (0.8)")
    f.add_argument("--cells", type=int, default=3, help="c, cells per set (3)")
    f.add_argument("--sets", type=int, default=1024, help="M, number of sets (1024)")
    f.add_argument("--target-recall", type=float, default=0.95, help="for the suggestion: P(candidate | same) to reach (0.95)")
    f.add_argument("--max-fp", type=float, default=0.01, help="for the suggestion: highest P(candidate | different) (0.01)")
    f.set_defaults(func=cmd_tune_fingerprints)
