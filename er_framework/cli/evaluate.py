"""``er evaluate OUT_DIR --truth FILE``: metrics of a run's outputs against ground truth
(see :mod:`er_framework.evaluate.metrics`; the truth file: :mod:`er_framework.evaluate.truth`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from er_framework.cli.common import json_terminal_text, say

__all__ = ["add_parser", "cmd_evaluate"]


def cmd_evaluate(args: argparse.Namespace) -> int:
    """``er evaluate OUT_DIR --truth FILE [--id-column C] [--cluster-column C] [--json]``.

    Prints the table (or the JSON with ``--json``) and writes
    ``OUT_DIR/evaluation.json``. Bad input raises :class:`InputError`.
    """
    from er_framework.evaluate.metrics import evaluate, format_table, write_metrics
    from er_framework.evaluate.truth import load_truth

    truth = load_truth(
        args.truth,
        id_column=getattr(args, "id_column", None),
        cluster_column=getattr(args, "cluster_column", None),
        left=getattr(args, "left", None),
        right=getattr(args, "right", None),
        source=getattr(args, "source", None),
    )
    metrics = evaluate(args.out_dir, truth)
    path = write_metrics(args.out_dir, metrics)
    if getattr(args, "json", False):
        print(json_terminal_text(json.dumps(metrics, indent=2, ensure_ascii=False)))
    else:
        say(format_table(metrics))  # source names, file names: control characters escaped
        say(f"\nwrote {path}")
    return 0


def add_parser(sub: Any) -> None:
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
    p.set_defaults(func=cmd_evaluate)
