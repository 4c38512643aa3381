"""``er validate CONFIG``: check a job (every problem at once) without reading data."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "cmd_validate"]


def cmd_validate(args: argparse.Namespace) -> int:
    from er_framework.config.resolve import parse_job

    job = parse_job(args.config)
    print(
        f"{args.config}: valid ({job.spec.mode}, {len(job.spec.sources)} source(s), "
        f"blockers: {', '.join(b.cls.name for b in job.blockers)}, verifier: {job.verifier.cls.name}, "
        f"cluster: {job.clusterer.cls.name})"
    )
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help="check a job without reading data", description="Validate a YAML job: every problem at once.")
    p.add_argument("config", help="the job's YAML file")
    p.set_defaults(func=cmd_validate)
