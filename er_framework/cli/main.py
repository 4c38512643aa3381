"""The ``er`` command.

    er run CONFIG [--out DIR] [--quiet]     run a job, write pairs/clusters/report
    er validate CONFIG                      check a job without reading data
    er plugins [--json]                     installed plugins and components
    er tune --threshold T --num-perm K      choose LSH bands/rows, print the S-curve
    er tune fingerprints --occupancy ...    grid-bit blocking analysis, suggest (c, M)
    er synth fingerprints --fingers N ...   simulated prints with truth
    er evaluate OUT_DIR --truth FILE        metrics against ground truth
    er report OUT_DIR                       (re)write OUT_DIR/report.html
    er schema                               JSON Schema of the job file
    er index build CONFIG --index PATH      run a job and persist it as an index
    er index add|remove|info PATH ...       grow or shrink it; stable cluster ids
    er query PATH --text T [--top-k K]      near-duplicates of new items (JSON lines)

Exit codes: 0 success, 2 bad config or bad input (a message, never a
traceback), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from er_framework.cli.common import run_with_progress, stderr, workers_arg
from er_framework.errors import ErError


def cmd_run(args: argparse.Namespace) -> int:
    from er_framework.executors import run_job

    result = run_with_progress(args, lambda job, update: run_job(job, args.out, progress=update))
    if not args.quiet:
        print(result.summary())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from er_framework.config.job import parse_job

    job = parse_job(args.config)
    print(f"{args.config}: valid ({job.spec.mode}, {len(job.spec.sources)} source(s), "
          f"blockers: {', '.join(b.cls.name for b in job.blockers)}, verifier: {job.verifier.cls.name}, "
          f"cluster: {job.clusterer.cls.name})")
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    from er_framework.components import FAMILIES
    from er_framework.registry import default_registry, describe_params, iter_components

    reg = default_registry()
    if args.json:
        out: dict[str, Any] = {
            "plugins": [p.__dict__ for p in reg.plugins],
            "blocked": reg.blocked,
            "components": [
                {
                    "family": c.family,
                    "name": c.name,
                    "class": f"{c.cls.__module__}.{c.cls.__qualname__}",
                    "plugin": c.plugin.name,
                    "distribution": c.plugin.distribution,
                    "version": c.plugin.version,
                    "summary": c.cls.summary,
                    "params": describe_params(c.cls),
                }
                for c in iter_components(reg)
            ],
            # the normalizer family again, its params as "options" (the word of a job's normalize: steps)
            "normalizers": [
                {"name": c.name, "description": c.cls.summary, "plugin": c.plugin.name,
                 "options": describe_params(c.cls)}
                for c in iter_components(reg)
                if c.family == "normalizer"
            ],
        }
        print(json.dumps(out, indent=2, default=str))
        return 0
    print("plugins:")
    for p in reg.plugins:
        print(f"  {p.name:<14} {p.module:<28} {p.distribution} {p.version}")
    if reg.blocked:
        print(f"  blocked: {', '.join(reg.blocked)}")
    family = None
    for c in iter_components(reg):
        if c.family != family:
            family = c.family
            fam = FAMILIES[family]
            if fam.per_field:
                where = f"{fam.section}: {{FIELD: NAME or [NAME, {{type: NAME, option: value}}, …]}}"
            else:
                where = f"{fam.many}: [{{type: NAME}}, …]" if fam.many else f"{fam.section}: {{type: NAME}}"
            print(f"\n{family}s ({where}):")
        print(f"  {c.name:<22} {c.cls.summary}  [{c.plugin.name}: {c.plugin.distribution} {c.plugin.version}]")
        for prm in describe_params(c.cls):
            default = "required" if prm["required"] else f"default {json.dumps(prm['default'], default=str)}"
            desc = f"  {prm['description']}" if prm["description"] else ""
            print(f"      {prm['name']:<20} {prm['type']:<14} {default}{desc}")
    return 0


def cmd_tune_fingerprints(args: argparse.Namespace) -> int:
    """SEEDS §6 analysis: P(candidate | same / different finger) and a (c, M) suggestion."""
    from er_framework.errors import Problem
    from er_framework.kernels.bits import candidate_probabilities, suggest_sets

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
        print(f"\nsuggested: cells = {r.cells}, sets = {r.sets} "
              f"(P(same) = {r.p_same:.4f}, P(different) = {r.p_diff:.3g} <= {args.max_fp})")
    else:
        print(f"\nno (c, M) meets both targets: {sug.note}")
    return 0


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
    from pathlib import Path

    from er_framework.errors import Problem
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
        minutiae = []
        for i in range(len(cells)):  # one step per print: cell centres as minutiae
            c = cells.row(i).astype("int64")
            minutiae.append(((c % gx + 0.5) * cw, (c // gx + 0.5) * ch))
        import numpy as np

        minutiae = [np.column_stack(xy) if len(xy[0]) else np.zeros((0, 2)) for xy in minutiae]
    else:
        minutiae, finger = simulate_minutiae(
            args.fingers, args.impressions, args.width, args.height, sigma=args.sigma, seed=args.seed
        )
    ids = [f"f{int(f)}-{i % args.impressions}" for i, f in enumerate(finger)]
    write_prints_jsonl(out / "prints.jsonl", ids, minutiae, truth_path=out / "truth.csv", finger=finger)
    print(f"wrote {len(ids):,} prints of {args.fingers:,} fingers to {out / 'prints.jsonl'} (truth: {out / 'truth.csv'})")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from er_framework.errors import Problem

    if args.threshold is None:
        raise ErError(Problem(where="er tune", message="--threshold is required", fix="er tune --threshold 0.8 [--num-perm 128], or er tune fingerprints --help"))
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
    print(f"P(candidate | s = {args.threshold}) = {candidate_probability(args.threshold, b, r):.4f}; "
          f"S-curve midpoint (1/b)^(1/r) = {threshold_estimate(b, r):.3f}")
    print("\n     s   P(candidate) = 1 - (1 - s^r)^b")
    for i in range(1, 11):
        s = i / 10
        print(f"  {s:4.1f}   {candidate_probability(s, b, r):.4f}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from er_framework.config.schema import job_json_schema

    print(json.dumps(job_json_schema(), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="er",
        description="er-framework: find records that refer to the same thing, at scale.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("run", help="run a YAML job", description="Run a YAML job and write pairs, clusters and report.json.")
    p.add_argument("config", help="the job's YAML file")
    p.add_argument("--out", metavar="DIR", help="output folder (overrides output.dir of the YAML)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.add_argument("--workers", type=workers_arg, metavar="N|auto",
                   help="threads for shingling, signatures and verification (overrides workers: of the YAML; "
                   "results are identical for any value)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("validate", help="check a job without reading data", description="Validate a YAML job: every problem at once.")
    p.add_argument("config", help="the job's YAML file")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("plugins", help="list installed plugins and components", description="List plugins, components, parameters and defaults.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plugins)

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

    p = sub.add_parser(
        "evaluate",
        help="metrics of a run's outputs against ground truth",
        description="Blocking pair completeness and reduction ratio, pairwise precision/recall/F1, "
        "B-cubed precision/recall/F1 and adjusted Rand index of OUT_DIR against a truth file.",
    )
    p.add_argument("out_dir", help="a folder written by er run")
    p.add_argument("--truth", required=True, help="truth: pairs (two id columns) or a cluster column (CSV/JSONL/Parquet)")
    p.add_argument("--id-column", help="id column of a cluster-column truth file")
    p.add_argument("--cluster-column", help="cluster/entity column of the truth file")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.set_defaults(func=lambda a: __import__("er_framework.evaluate.metrics", fromlist=["cmd_evaluate"]).cmd_evaluate(a))

    p = sub.add_parser(
        "report",
        help="(re)generate report.html in a run's output folder",
        description="Write OUT_DIR/report.html: one self-contained page with plots, counts and the largest clusters.",
    )
    p.add_argument("out_dir", help="a folder written by er run")
    p.add_argument("--config", help="the job file, when it moved since the run (to show example records)")
    p.add_argument("--examples", dest="max_examples", type=int, default=5, help="example records per cluster (5)")
    p.set_defaults(func=lambda a: __import__("er_framework.report.page", fromlist=["cmd_report"]).cmd_report(a))

    from er_framework.cli.index import add_parsers

    add_parsers(sub, workers_arg)

    p = sub.add_parser("schema", help="print the JSON Schema of job files", description="JSON Schema of job files, for editor completion.")
    p.set_defaults(func=cmd_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except ErError as exc:
        stderr(exc.render())
        return exc.exit_code
    except KeyboardInterrupt:
        stderr("interrupted")
        return 130
    except BrokenPipeError:  # output piped into head & co.: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
