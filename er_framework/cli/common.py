"""What the ``er`` commands share: messages on stderr, the stage progress line, log records, parsing the job."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "Terminated",
    "LOGGER",
    "LOG_LEVEL_ENV",
    "json_terminal_text",
    "log_level",
    "progress_bar",
    "run_with_progress",
    "say",
    "signals_as_exceptions",
    "stderr",
    "stderr_logging",
    "terminal_text",
    "workers_arg",
]


def stderr(msg: str) -> None:
    print(terminal_text(msg), file=sys.stderr)


def say(text: str) -> None:
    """Print ``text`` (a result that may hold record values, ids, file names) on stdout through :func:`terminal_text`."""
    print(terminal_text(text))


#: C0 and C1 control characters but the line end and the tab, and DEL: a record value or a file name holding
#: ESC [ ... could move the cursor, retitle the window or hide text on the user's terminal
CONTROL_CHARS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0))}
CONTROL_CHARS.update({0x2028: "\\u2028", 0x2029: "\\u2029", 0x202E: "\\u202e", 0x202D: "\\u202d"})


def terminal_text(text: str) -> str:
    """``text`` as it may reach a terminal: control characters (ESC, CR, BEL, C1, bidirectional overrides)
    shown escaped (``\\x1b``); ``\\n`` and ``\\t`` kept. Every line er prints that may hold a record value,
    an id or a file name goes through it."""
    return text.translate(CONTROL_CHARS)


#: the characters of :data:`CONTROL_CHARS` as JSON escapes (``\u001b``): valid inside a JSON string
JSON_CONTROL_CHARS = {c: f"\\u{c:04x}" for c in CONTROL_CHARS}


def json_terminal_text(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) as it may reach a terminal: the control characters
    that JSON leaves raw (C1, DEL, bidirectional overrides, line separators) written as ``\\uXXXX`` escapes,
    so the text stays the same JSON."""
    return text.translate(JSON_CONTROL_CHARS)


class Terminated(BaseException):
    """SIGTERM or SIGHUP received: unwinds like Ctrl-C (``finally`` blocks run, worker processes are stopped).

    A ``BaseException`` (like ``KeyboardInterrupt``), so no ``except Exception`` swallows it.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process ended by that signal (143 for SIGTERM)."""
        return 128 + self.signum


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Inside: SIGTERM and SIGHUP raise :class:`Terminated` in the main thread (the previous handlers are
    restored after). Only the main thread can set handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    # a signal ignored by whoever started er (nohup: SIGHUP) stays ignored
    old = {sig: signal.signal(sig, _raise_terminated) for sig in sigs if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def progress_bar(quiet: bool) -> tuple[Any, Callable[[], None]]:
    """The stage progress line on stderr (:class:`~er_framework.engine.log.ProgressLine`: one line rewritten in
    place, erased at the end) and its ``close``; off when quiet, when stderr is not a terminal (logs and pipes get
    the ``-v`` records instead) and when ``-v`` already prints the stages' records there."""
    if quiet or not sys.stderr.isatty() or logging.getLogger(LOGGER).isEnabledFor(logging.INFO):
        return None, lambda: None
    from er_framework.engine.log import ProgressLine

    line = ProgressLine(sys.stderr)
    return line, line.close


#: the logger of the package (:data:`er_framework.engine.log.LOGGER_NAME`; named here so that the parser
#: imports no engine)
LOGGER = "er_framework"

#: the environment variable setting the log level of the ``er`` command (a level name or number), as ``-v``
LOG_LEVEL_ENV = "ER_LOG_LEVEL"


def log_level(verbose: int) -> int | None:
    """The level of ``er``'s log records on stderr: ``-v`` INFO, ``-vv`` DEBUG, else :data:`LOG_LEVEL_ENV`
    (``INFO``, ``debug``, ``20``), else None (only warnings). A value that is no level is an
    :class:`~er_framework.errors.InputError` naming the variable and the levels."""
    if verbose:
        return logging.INFO if verbose == 1 else logging.DEBUG
    text = os.environ.get(LOG_LEVEL_ENV, "").strip()
    if not text:
        return None
    if text.isdigit():
        return int(text)
    level = logging.getLevelName(text.upper())
    if not isinstance(level, int):
        from er_framework.errors import InputError, Problem

        raise InputError(
            Problem(where=LOG_LEVEL_ENV, message=f"{text!r} is not a log level", fix="set it to DEBUG, INFO, WARNING or ERROR, or unset it")
        )
    return level


@contextmanager
def stderr_logging(level: int | None) -> Iterator[None]:
    """Inside: the ``er_framework`` logger's records at ``level`` and above (WARNING when None) printed on stderr,
    one line each, with a timestamp when stderr is not a terminal (a cron mail, a CI log); the handler and level
    are removed after."""
    log = logging.getLogger(LOGGER)
    handler = logging.StreamHandler(sys.stderr)
    timestamps = not sys.stderr.isatty()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s er: %(message)s" if timestamps else "er: %(message)s"))
    old_level = log.level
    log.setLevel(logging.WARNING if level is None else level)
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)


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


def run_with_progress(args: argparse.Namespace, run: Callable[[Any, Any], Any]) -> Any:
    """Parse ``args.config`` (``args.workers`` overrides the YAML) and call ``run(job, progress)``
    with the stage progress line shown unless ``args.quiet`` (``progress``: a progress callback or None)."""
    from er_framework.config.resolve import parse_job
    from er_framework.kernels.parallel import resolve_workers

    job = parse_job(args.config)
    if args.workers is not None:
        job.context.workers = resolve_workers(args.workers)
    update, close = progress_bar(args.quiet)
    try:
        return run(job, update)
    finally:
        close()


def job_of_run(out_dir: str, config: str | None) -> tuple[dict[str, Any], Any]:
    """report.json of the run in ``out_dir`` and its job (``config``, else the job file report.json names),
    parsed; an input error when either cannot be found (``er explain``, ``er review``)."""
    from pathlib import Path

    from er_framework.config.resolve import parse_job
    from er_framework.errors import InputError, Problem
    from er_framework.io.outputs import find_job_file, read_report

    report = read_report(out_dir)
    path, tried = find_job_file(report, Path(out_dir), config)
    if path is None:
        raise InputError(
            Problem(
                where=str(out_dir),
                message="the job file of this run was not found (looked at "
                + (", ".join(str(p) for p in tried) or "nothing: report.json names none")
                + ")",
                fix="pass it: --config JOB.yaml",
            )
        )
    job = parse_job(path)
    if report.get("config_hash") and job.config_hash() != report["config_hash"]:
        stderr(
            f"note: {path} changed since the run (its config hash differs from report.json's); "
            "the records are read with the current job file"
        )
    return report, job
