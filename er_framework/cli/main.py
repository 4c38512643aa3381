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
import os
import sys
from collections.abc import Sequence

from er_framework.cli import evaluate, index, plugins, report, run, schema, synth, tune, validate
from er_framework.cli.common import stderr
from er_framework.errors import ErError

#: The verbs in the order ``er --help`` lists them: one module each, with its ``cmd_*`` and its
#: ``add_parser(sub)`` (:mod:`er_framework.cli.index` adds ``index`` and ``query``).
VERBS = (run, validate, plugins, tune, synth, evaluate, report, index, schema)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="er",
        description="er-framework: find records that refer to the same thing, at scale.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for verb in VERBS:
        verb.add_parser(sub)
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
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
