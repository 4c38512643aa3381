"""What the ``er`` commands share: messages on stderr, the stage progress bar, parsing the job."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from er_framework.kernels.parallel import resolve_workers

__all__ = ["progress_bar", "run_with_progress", "stderr", "workers_arg"]


def stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


def progress_bar(quiet: bool) -> tuple[Callable[[str], None] | None, Callable[[], None]]:
    """A stage progress bar on stderr; off when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    from er_framework.engine.log import STAGES

    bar = tqdm(total=len(STAGES), unit="stage", file=sys.stderr, leave=False, dynamic_ncols=True)
    started: list[str] = []

    def update(name: str) -> None:
        if started:
            bar.update(1)
        started.append(name)
        bar.set_description(name)

    def close() -> None:
        bar.update(bar.total - bar.n)
        bar.close()

    return update, close


def workers_arg(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 1024:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 1024 or 'auto', got {text!r}")
    return n


def run_with_progress(args: argparse.Namespace, run: Callable[[Any, Callable[[str], None] | None], Any]) -> Any:
    """Parse ``args.config`` (``args.workers`` overrides the YAML) and call ``run(job, progress)``
    with the stage progress bar shown unless ``args.quiet``."""
    from er_framework.config.job import parse_job

    job = parse_job(args.config)
    if args.workers is not None:
        job.context.workers = resolve_workers(args.workers)
    update, close = progress_bar(args.quiet)
    try:
        return run(job, update)
    finally:
        close()
