"""``er explain OUT --left ID --right ID``: why a pair of a finished run scored what it scored."""

from __future__ import annotations

import argparse
import json
from typing import Any

from er_framework.cli.common import job_of_run, json_terminal_text, say, stderr

__all__ = ["add_parser", "cmd_explain"]


def cmd_explain(args: argparse.Namespace) -> int:
    """Print the waterfall of one pair (or its JSON with ``--json``)."""
    from pathlib import Path

    from er_framework.engine.explain import check_files_unchanged, explain_run
    from er_framework.engine.model import load_model

    report, job = job_of_run(args.out_dir, args.config)
    # refused when a source changed: the files before reading, the database sources as explain_run reads them
    for note in check_files_unchanged(report, job, allow_changed=args.allow_changed):
        stderr(f"note: {note}")
    saved = Path(args.out_dir) / "model.json"
    model = load_model(saved) if saved.is_file() else None
    found, notes = explain_run(
        job,
        report,
        (args.left_source or args.source, args.left),
        (args.right_source or args.source, args.right),
        model,
        allow_changed=args.allow_changed,
    )
    if args.json:
        print(json_terminal_text(json.dumps(found.to_json(), indent=2)))
    else:
        say(str(found))  # record values and ids: control characters escaped
    for note in notes:
        stderr(f"note: {note}")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "explain",
        help="why a pair of a finished run scored what it scored",
        description="Print the waterfall of one pair of a run: for Fellegi-Sunter the prior, each field's values "
        "on both sides, comparison level and weight in bits, the total and the match probability; for field_score "
        "each field's similarity and points; for jaccard the shared and differing shingles. The records are read "
        "again through the job; the fitted weights come from the run's model.json.",
    )
    p.add_argument("out_dir", help="a folder written by er run")
    p.add_argument("--left", required=True, help="id of one record")
    p.add_argument("--right", required=True, help="id of the other record")
    p.add_argument("--source", help="source of both records (when an id is in several sources)")
    p.add_argument("--left-source", help="source of the left record")
    p.add_argument("--right-source", help="source of the right record")
    p.add_argument("--config", help="the job file, when it moved since the run")
    p.add_argument("--json", action="store_true", help="print the explanation as JSON")
    p.add_argument(
        "--allow-changed",
        action="store_true",
        help="explain even when a source changed since the run (its fingerprint in report.json differs): the records "
        "are read as they are now, and may not be those the run compared",
    )
    p.set_defaults(func=cmd_explain)
