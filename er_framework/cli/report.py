"""``er report OUT_DIR``: (re)write OUT_DIR/report.html (see :mod:`er_framework.report.page`)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "cmd_report"]


def cmd_report(args: argparse.Namespace) -> int:
    """``er report OUT_DIR [--config JOB.yaml] [--examples N] [--truth FILE]``: write and print the page's path
    (with ``--truth``, the threshold-selection chart against that truth, and the F1-maximizing threshold)."""
    from er_framework.report.page import write_report

    curve = None
    if getattr(args, "truth", None):
        from er_framework.evaluate.threshold_truth import truth_curve

        options = {"id_column": getattr(args, "id_column", None), "cluster_column": getattr(args, "cluster_column", None)}
        curve = truth_curve(args.out_dir, args.truth, **options)
    path = write_report(
        args.out_dir,
        config_path=getattr(args, "config", None),
        max_examples=getattr(args, "max_examples", None) or 5,
        threshold_curve=curve,
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
    p.add_argument(
        "--truth",
        help="a truth file (pairs or clusters, as er evaluate reads; or a labels file: over the labelled pairs only): "
        "adds precision, recall and F1 by threshold (needs the run's candidates: output: {candidates: true})",
    )
    p.add_argument("--id-column", help="id column of a cluster-column truth file")
    p.add_argument("--cluster-column", help="cluster/entity column of the truth file")
    p.set_defaults(func=cmd_report)
