"""``er report OUT_DIR``: (re)write OUT_DIR/report.html (see :mod:`er_framework.report.page`)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "cmd_report"]


def cmd_report(args: argparse.Namespace) -> int:
    """``er report OUT_DIR [--config JOB.yaml] [--examples N]``: write and print the page's path."""
    from er_framework.report.page import write_report

    path = write_report(
        args.out_dir,
        config_path=getattr(args, "config", None),
        max_examples=getattr(args, "max_examples", None) or 5,
    )
    print(path)
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="(re)generate report.html in a run's output folder",
        description="Write OUT_DIR/report.html: one self-contained page with plots, counts and the largest clusters.",
    )
    p.add_argument("out_dir", help="a folder written by er run")
    p.add_argument("--config", help="the job file, when it moved since the run (to show example records)")
    p.add_argument("--examples", dest="max_examples", type=int, default=5, help="example records per cluster (5)")
    p.set_defaults(func=cmd_report)
