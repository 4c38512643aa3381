"""``er run CONFIG [--out DIR] [--quiet] [--workers N|auto] [--no-report]``: run a job, write pairs, clusters and
the report (report.json; report.html unless ``--no-report`` or ``output: {report: false}``)."""

from __future__ import annotations

import argparse
from typing import Any

from er_framework.cli.common import run_with_progress, stderr, workers_arg

__all__ = ["WARNINGS_EXIT", "add_parser", "cmd_run"]

#: the exit code of a run that warned (report.json ``warnings``) with ``fail_on_warnings: true``
WARNINGS_EXIT = 3


def cmd_run(args: argparse.Namespace) -> int:
    from er_framework.engine.model import check_model, load_model
    from er_framework.engine.result import warning_lines
    from er_framework.executors import run_job

    model = load_model(args.model) if args.model is not None else None
    fail_on_warnings = False

    def run(job: Any, update: Any) -> Any:
        nonlocal fail_on_warnings
        fail_on_warnings = bool(job.spec.fail_on_warnings)
        if args.report is not None:  # --report / --no-report over output.report of the YAML
            job.spec.output.report = args.report
        if model is not None:
            check_model(model, job)
        return run_job(job, args.out, progress=update, force=args.force, model=model)

    result = run_with_progress(args, run)
    if not args.quiet:
        print(result.summary())
    else:
        for line in warning_lines(result.report):  # --quiet drops the summary, never the warnings
            stderr(line)
    warnings = result.report.get("warnings") or []
    if warnings and fail_on_warnings:
        stderr(
            f"er: {len(warnings)} plausibility warning{'s' if len(warnings) != 1 else ''} and fail_on_warnings: true: exit {WARNINGS_EXIT}"
        )
        return WARNINGS_EXIT
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a YAML job",
        description="Run a YAML job and write pairs, clusters, report.json and report.html "
        "(--no-report or output: {report: false} skips report.html).",
    )
    p.add_argument("config", help="the job's YAML file")
    p.add_argument("--out", metavar="DIR", help="output folder (overrides output.dir of the YAML)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into an output folder that holds an input or files er did not write (inputs are never "
        "overwritten; only er's own output names are replaced)",
    )
    p.add_argument(
        "--report",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write report.html (--no-report: skip it; report.json is written either way; "
        "overrides output.report of the YAML, default true)",
    )
    p.add_argument("--model", metavar="FILE", help="apply a saved model (er train, or OUT/model.json of a run) instead of fitting one")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.add_argument(
        "--workers",
        type=workers_arg,
        metavar="N|auto",
        help="threads for shingling, signatures and verification (overrides workers: of the YAML; results are identical for any value)",
    )
    p.set_defaults(func=cmd_run)
