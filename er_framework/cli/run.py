"""``er run CONFIG [--out DIR] [--quiet] [--workers N|auto]``: run a job, write pairs, clusters and the report."""

from __future__ import annotations

import argparse
from typing import Any

from er_framework.cli.common import run_with_progress, workers_arg

__all__ = ["add_parser", "cmd_run"]


def cmd_run(args: argparse.Namespace) -> int:
    from er_framework.executors import run_job

    result = run_with_progress(args, lambda job, update: run_job(job, args.out, progress=update, force=args.force))
    if not args.quiet:
        print(result.summary())
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="run a YAML job", description="Run a YAML job and write pairs, clusters and report.json.")
    p.add_argument("config", help="the job's YAML file")
    p.add_argument("--out", metavar="DIR", help="output folder (overrides output.dir of the YAML)")
    p.add_argument("--force", action="store_true",
                   help="write into an output folder that holds an input or files er did not write (inputs are never "
                   "overwritten; only er's own output names are replaced)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.add_argument("--workers", type=workers_arg, metavar="N|auto",
                   help="threads for shingling, signatures and verification (overrides workers: of the YAML; "
                   "results are identical for any value)")
    p.set_defaults(func=cmd_run)
