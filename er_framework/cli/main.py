"""The ``er`` command.

    er run CONFIG [--out DIR] [--quiet]     run a job, write pairs/clusters/report
               [--no-report]            (report.json only, no report.html)
    er validate CONFIG                      check a job without reading data
    er plugins [--json]                     installed plugins and components
    er tune --threshold T --num-perm K      choose LSH bands/rows, print the S-curve
    er tune fingerprints --occupancy ...    grid-bit blocking analysis, suggest (c, M)
    er synth fingerprints --fingers N ...   simulated prints with truth
    er evaluate OUT_DIR --truth FILE        metrics against ground truth
    er explain OUT --left ID --right ID     why a pair scored what it scored (the waterfall)
    er review OUT [--labels FILE]           the pairs nearest the threshold; a labels file to edit
    er report OUT_DIR                       (re)write OUT_DIR/report.html
    er schema                               JSON Schema of the job file
    er index build CONFIG --index PATH      run a job and persist it as an index
    er index add|remove|info PATH ...       grow or shrink it; stable cluster ids
    er query PATH --text T [--top-k K]      near-duplicates of new items (JSON lines)

    er --debug COMMAND ...                  a full traceback on an unexpected error (or ER_DEBUG=1)
    er -v COMMAND ... / er -vv COMMAND ...  each stage's start and end (-vv: and batches) on stderr, timestamped
                                            off a terminal (or ER_LOG_LEVEL=INFO / DEBUG); -v also after the verb
    er --version                            er-framework's, Python's and the plugin packages' versions

Exit codes: 0 success, 2 bad config or bad input (a message, never a
traceback), also out of memory (a message naming the settings that bound
memory) and a problem of the environment (a full disk, a read-only folder,
too many open files, a file too large, a closed standard output: what, the
file and the fix), 1 an unexpected error (a bug: one line on stderr, the traceback
with ``--debug``), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM; 129
SIGHUP). Worker processes never outlive ``er``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import io
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from er_framework.cli import evaluate, explain, index, plugins, report, review, run, schema, synth, train, tune, validate
from er_framework.cli.common import Terminated, log_level, signals_as_exceptions, stderr, stderr_logging
from er_framework.errors import ENVIRONMENT_ERRNOS, ErError, InputError, Problem, os_problem

#: environment variable that turns ``--debug`` on (any value but "", "0")
DEBUG_ENV = "ER_DEBUG"

#: what bounds memory, for the out-of-memory message
MEMORY_SETTINGS = (
    "chunk_records and token_memory_mb of the job bound the shingling and verification stages, "
    "max_block_size / window the candidate pairs, workers the copies held by worker processes"
)

#: The verbs in the order ``er --help`` lists them: one module each, with its ``cmd_*`` and its
#: ``add_parser(sub)`` (:mod:`er_framework.cli.index` adds ``index`` and ``query``).
VERBS = (run, train, validate, plugins, tune, synth, evaluate, explain, review, report, index, schema)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="er",
        description="er-framework: find records that refer to the same thing, at scale.",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"a full traceback on an unexpected error (also {DEBUG_ENV}=1)",
    )
    parser.add_argument("--version", action=VersionAction, help="the versions of er-framework, Python and plugins")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log each stage on stderr (-vv: each batch)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for verb in VERBS:
        verb.add_parser(sub)
    add_verbose(sub)
    return parser


VERBOSE_HELP = (
    "print each stage's start and end (counts, seconds, peak memory) on stderr as it happens, timestamped when "
    "stderr is not a terminal; -vv also each batch (also ER_LOG_LEVEL=INFO or DEBUG)"
)


def add_verbose(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``-v`` after the verb too (``er run JOB -v``), in every verb's parser and its own verbs' (``er index build``)."""
    for parser in sub.choices.values():
        parser.add_argument("-v", "--verbose", dest="verbose_verb", action="count", default=0, help=VERBOSE_HELP)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                add_verbose(action)


def verbosity(args: argparse.Namespace) -> int:
    """How many ``-v`` were given, before and after the verb."""
    return int(getattr(args, "verbose", 0) or 0) + int(getattr(args, "verbose_verb", 0) or 0)


def version_lines() -> list[str]:
    """What ``er --version`` prints: er-framework's version, Python's, and one line per distribution that
    provides plugins or executors (its version and its entry points), read from the installed metadata
    (nothing is imported)."""
    import platform
    from importlib import metadata

    from er_framework import __version__

    lines = [f"er-framework {__version__}", f"Python {platform.python_version()} ({platform.python_implementation()})"]
    provided: dict[tuple[str, str], list[str]] = {}
    for group, kind in (("er_framework", ""), ("er_framework.executors", "executor ")):
        for ep in metadata.entry_points(group=group):
            dist = ep.dist
            key = (dist.metadata["Name"] or "?", dist.version) if dist is not None else ("?", "?")
            provided.setdefault(key, []).append(kind + ep.name)
    for (name, version), names in sorted(provided.items()):
        lines.append(f"plugins from {name} {version}: {', '.join(sorted(names))}")
    return lines


class VersionAction(argparse.Action):
    """``--version``: print :func:`version_lines` on stdout and exit 0 (computed only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        print("\n".join(version_lines()))
        parser.exit(0)


def command_name(args: argparse.Namespace) -> str:
    """The verb as typed, with its action or domain: "run", "index build", "synth customers"."""
    parts = [getattr(args, "command", None), getattr(args, "index_command", None), getattr(args, "domain", None)]
    return " ".join(str(p) for p in parts if p)


def debug_on(args: argparse.Namespace) -> bool:
    """``--debug`` given, or ``ER_DEBUG`` set to anything but "" or "0"."""
    return bool(getattr(args, "debug", False)) or os.environ.get(DEBUG_ENV, "") not in ("", "0")


#: OpenBLAS starts a thread per core when numpy is imported (~20 ms of CPU at every start); er's matrix
#: products are small (EM sums, label propagation over one component), so one BLAS thread serves. A value
#: the user set is kept.
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1"}


#: the message for a closed standard output (``er ... >&-``): er refuses before any work rather than lose
#: its results (and a file it opens could otherwise take descriptor 1 and receive what it prints)
STDOUT_CLOSED = (
    "er: standard output is closed: er prints its results and summaries there; "
    "send them to a file or discard them (>/dev/null) instead of closing it (>&-)"
)


def prepare_streams() -> bool:
    """Make stdout and stderr safe to print to; False when stdout is closed (``er ... >&-``).

    Both are reconfigured with ``errors="backslashreplace"``: a record value that the terminal's encoding
    cannot show (``LANG=C``, ``PYTHONIOENCODING=ascii``) is printed as ``\\u00e9`` instead of ending the
    command with a UnicodeEncodeError. A closed stderr (descriptor 2) is given /dev/null, so that no file er
    opens later takes its number.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")
    if sys.stderr is None or not fd_open(2):
        with contextlib.suppress(OSError):
            if not fd_open(2):
                fd = os.open(os.devnull, os.O_WRONLY)
                if fd != 2:
                    os.dup2(fd, 2)
                    os.close(fd)
    return sys.stdout is not None and stream_open(sys.stdout)


def fd_open(fd: int) -> bool:
    """File descriptor ``fd`` is open."""
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def stream_open(stream: object) -> bool:
    """``stream``'s file descriptor is open (a stream without one, such as a test's capture, is)."""
    fileno = getattr(stream, "fileno", None)
    if fileno is None:
        return True
    try:
        fd = fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return not getattr(stream, "closed", False)
    return fd_open(fd)


def environment_error(exc: BaseException) -> OSError | None:
    """The :class:`OSError` of the environment (a full disk, a read-only folder, too many open files …:
    :data:`~er_framework.errors.ENVIRONMENT_ERRNOS`) that ``exc`` is or was raised from, else None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and errno.errorcode.get(cur.errno or 0, "") in ENVIRONMENT_ERRNOS:
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


#: SQLite's result codes (the index's database) that mean the environment, not er: a full disk, a file size
#: limit, an I/O error, a file that cannot be opened (too many open files, permissions), a read-only file
SQLITE_ENVIRONMENT = ("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_NOLFS")


def database_error(exc: BaseException, command: str) -> str | None:
    """The exit-2 message when ``exc`` (or what it was raised from) is an SQLite error of the environment
    (:data:`SQLITE_ENVIRONMENT`), else None. sqlite3 is looked up, never imported."""
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is None:
        return None
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        name = str(getattr(cur, "sqlite_errorname", "") or "")
        if isinstance(cur, sqlite3.Error) and name.startswith(SQLITE_ENVIRONMENT):
            problem = Problem(
                where=f"er {command}",
                message=f"cannot complete `er {command}`: the index database reported {one_line(str(cur))!r} ({name})",
                fix="check the free space, the file size limit (ulimit -f), the open-file limit (ulimit -n) and the "
                "permissions of the index folder, then run the command again",
            )
            return InputError(problem).render()
        cur = cur.__cause__ or cur.__context__
    return None


def environment_message(exc: OSError, command: str) -> str:
    """The exit-2 message of an environment error met by ``er COMMAND``: what, the file, the fix."""
    where = str(exc.filename) if exc.filename is not None else f"er {command}"
    return InputError(os_problem(exc, where, f"complete `er {command}`")).render()


def main(argv: Sequence[str] | None = None) -> int:
    for name, value in BLAS_THREADS.items():
        os.environ.setdefault(name, value)
    stdout_ok = prepare_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None or not stdout_ok:
        return no_command(parser, stdout_ok)
    debug = debug_on(args)
    command = command_name(args)
    try:
        with signals_as_exceptions(), stderr_logging(log_level(verbosity(args))):
            return int(args.func(args))
    except ErError as exc:
        stderr(exc.render())
        return exc.exit_code
    except KeyboardInterrupt:
        stderr("interrupted")
        return 130
    except Terminated as exc:
        stderr(f"terminated ({exc})")
        return exc.exit_code
    except BrokenPipeError:  # output piped into head & co.: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except MemoryError as exc:
        if debug:
            raise
        detail = f": {exc}" if str(exc) else ""
        stderr(
            f"er: out of memory (MemoryError{detail}): the job needs more memory than this process may use; "
            f"{MEMORY_SETTINGS} (lower them); rerun with --debug for the traceback"
        )
        return 2
    except Exception as exc:
        if debug:
            raise
        message, code = unexpected_error(exc, command)
        stderr(message)
        return code


def no_command(parser: argparse.ArgumentParser, stdout_ok: bool) -> int:
    """Exit 2 without running a verb: no verb given (the help, when stdout is open), or stdout closed."""
    if stdout_ok:
        parser.print_help()
    else:
        stderr(STDOUT_CLOSED)
    return 2


def unexpected_error(exc: Exception, command: str) -> tuple[str, int]:
    """The message and exit code of an exception no verb turned into an :class:`ErError`: the environment's
    problems (a closed stdout, a full disk, a read-only folder, a database the system could not write) are
    exit 2 with what to do; a worker killed is exit 1 with what happened; anything else is a bug (exit 1,
    one line, the traceback with ``--debug``)."""
    if isinstance(exc, OSError) and exc.errno == errno.EBADF and not stream_open(sys.stdout):
        return STDOUT_CLOSED, 2
    env = environment_error(exc)
    if env is not None:
        return environment_message(env, command), 2
    database = database_error(exc, command)
    if database is not None:
        return database, 2
    if worker_died(exc):
        return f"er: {exc}", 1
    return (
        f"er: internal error: {type(exc).__name__}: {one_line(str(exc))}; this is a bug — rerun with "
        f"--debug (or {DEBUG_ENV}=1) for the traceback and report it"
    ), 1


def worker_died(exc: BaseException) -> bool:
    """``exc`` is :class:`er_framework.kernels.parallel.WorkerDied` (a worker process was killed).

    Only a command that loaded the worker pool can raise it: when that module is not loaded, the
    answer is no without importing it (``er --help`` and ``er validate`` stay light).
    """
    parallel = sys.modules.get("er_framework.kernels.parallel")
    return parallel is not None and isinstance(exc, parallel.WorkerDied)


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (whitespace runs folded), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def entry() -> NoReturn:
    """The ``er`` command: :func:`main`, then the end of the process without the interpreter's teardown.

    Python's exit functions still run (:mod:`atexit`: temporary folders' finalizers, thread pools'
    joins) and stdout and stderr are flushed; what is skipped is the module teardown and the C++ static
    destructors of the native libraries. pyarrow's thread pools, torn down there, aborted the process
    now and then after a run that had read a Parquet file ("terminate called without an active exception",
    exit -6 instead of the run's code: 5 of 180 runs under load, none of 240 this way; apache/arrow#34314).
    Everything er writes is closed (and the outputs fsynced) before :func:`main` returns.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # closed when er started
            continue
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (er ... | head): nothing more to say there
            stream.flush()
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None:  # pragma: no cover - an interpreter without it: the ordinary exit
        sys.exit(code)
    run_exit_functions()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
