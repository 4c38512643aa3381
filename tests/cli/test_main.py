"""The `er` command (er_framework.cli.main): the verbs, help everywhere, errors without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from er_framework.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]

VERBS = ["run", "train", "validate", "plugins", "tune", "synth", "evaluate", "explain", "review", "report", "index", "query", "schema"]


#: Arguments that parse for each verb, and the module whose cmd_* runs it (one module per verb).
PARSED = [
    (["run", "job.yaml"], "run", "cmd_run"),
    (["train", "job.yaml", "--model", "m.json"], "train", "cmd_train"),
    (["validate", "job.yaml"], "validate", "cmd_validate"),
    (["plugins"], "plugins", "cmd_plugins"),
    (["tune", "--threshold", "0.8"], "tune", "cmd_tune"),
    (["tune", "fingerprints"], "tune", "cmd_tune_fingerprints"),
    (["synth", "fingerprints", "--fingers", "2", "--out", "o"], "synth", "cmd_synth_fingerprints"),
    (["synth", "customers", "--n", "2", "--out", "o"], "synth", "cmd_synth_customers"),
    (["evaluate", "o", "--truth", "t.csv"], "evaluate", "cmd_evaluate"),
    (["explain", "o", "--left", "a", "--right", "b"], "explain", "cmd_explain"),
    (["review", "o"], "review", "cmd_review"),
    (["report", "o"], "report", "cmd_report"),
    (["index", "build", "job.yaml", "--index", "i"], "index", "cmd_index_build"),
    (["index", "add", "i", "new.csv"], "index", "cmd_index_add"),
    (["index", "remove", "i", "a"], "index", "cmd_index_remove"),
    (["index", "info", "i"], "index", "cmd_index_info"),
    (["query", "i", "--text", "t"], "index", "cmd_query"),
    (["schema"], "schema", "cmd_schema"),
]


def test_every_verb_in_order() -> None:
    text = build_parser().format_help()
    listed = [line.split()[0] for line in text.split("  COMMAND\n", 1)[1].splitlines() if line.startswith("    ")]
    assert listed == VERBS


@pytest.mark.parametrize(("argv", "module", "func"), PARSED, ids=[" ".join(p[0][:2]) for p in PARSED])
def test_each_verb_runs_the_cmd_of_its_module(argv: list[str], module: str, func: str) -> None:
    args = build_parser().parse_args(argv)
    assert args.func.__module__ == f"er_framework.cli.{module}" and args.func.__name__ == func


@pytest.mark.parametrize("cmd", [[], ["run"], ["validate"], ["plugins"], ["tune"], ["schema"]])
def test_help_everywhere(cmd: list[str]) -> None:
    res = subprocess.run([sys.executable, "-m", "er_framework", *cmd, "--help"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "usage: er" in res.stdout


def test_no_command_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: er") and all(verb in out for verb in VERBS)


def test_an_error_is_a_message_and_exit_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "none.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "none.yaml" in captured.err and "Traceback" not in captured.err


# ---------------------------------------------------------------- the last-resort handler (issue 18, case 18)


def fail_with(exc: BaseException) -> object:
    def cmd(args: object) -> int:
        raise exc

    return cmd


@pytest.fixture
def schema_fails(monkeypatch: pytest.MonkeyPatch) -> object:
    """``er schema`` raising the given exception (its cmd replaced before main builds the parser)."""
    from er_framework.cli import schema

    monkeypatch.delenv("ER_DEBUG", raising=False)

    def set_exc(exc: BaseException) -> None:
        monkeypatch.setattr(schema, "cmd_schema", fail_with(exc))

    return set_exc


def test_an_unexpected_error_is_one_line_and_exit_1(schema_fails: object, capsys: pytest.CaptureFixture[str]) -> None:
    schema_fails(RuntimeError("boom\n  on a second line"))  # type: ignore[operator]
    assert main(["schema"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("er: internal error: RuntimeError: boom on a second line; this is a bug")
    assert "--debug" in err and "ER_DEBUG=1" in err


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_shows_the_traceback(schema_fails: object, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    schema_fails(RuntimeError("boom"))  # type: ignore[operator]
    argv = ["--debug", "schema"] if how == "flag" else ["schema"]
    if how == "env":
        monkeypatch.setenv("ER_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main(argv)


def test_er_debug_0_is_off(schema_fails: object, monkeypatch: pytest.MonkeyPatch) -> None:
    schema_fails(KeyError("x"))  # type: ignore[operator]
    monkeypatch.setenv("ER_DEBUG", "0")
    assert main(["schema"]) == 1


def test_out_of_memory_is_a_message_naming_the_settings(schema_fails: object, capsys: pytest.CaptureFixture[str]) -> None:
    schema_fails(MemoryError())  # type: ignore[operator]
    assert main(["schema"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("er: out of memory") and "Traceback" not in err and err.count("\n") == 1
    assert "chunk_records" in err and "token_memory_mb" in err


def test_a_dead_worker_is_a_message(schema_fails: object, capsys: pytest.CaptureFixture[str]) -> None:
    from er_framework.kernels.parallel import WorkerDied

    schema_fails(WorkerDied("a worker process ended abruptly"))  # type: ignore[operator]
    assert main(["schema"]) == 1
    assert capsys.readouterr().err == "er: a worker process ended abruptly\n"


def test_an_interrupt_keeps_its_code(schema_fails: object, capsys: pytest.CaptureFixture[str]) -> None:
    schema_fails(KeyboardInterrupt())  # type: ignore[operator]
    assert main(["schema"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_sigterm_unwinds_as_terminated_and_the_handler_is_restored(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal

    from er_framework.cli import schema

    def cmd(args: object) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("not reached: SIGTERM raises Terminated")

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(schema, "cmd_schema", cmd)
    assert main(["schema"]) == 143
    assert capsys.readouterr().err == "terminated (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) == before


BUGGY = """
import sys
from er_framework.cli import main, schema
def cmd(args):
    return {}["missing key"]
schema.cmd_schema = cmd
sys.exit(main.main(["schema"]))
"""


@pytest.mark.parametrize("debug", [False, True])
def test_whole_process_unexpected_error(debug: bool) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "ER_DEBUG"}
    if debug:
        env["ER_DEBUG"] = "1"
    res = subprocess.run([sys.executable, "-c", BUGGY], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 1
    if debug:
        assert "Traceback (most recent call last)" in res.stderr and "KeyError" in res.stderr
    else:
        assert res.stderr == (
            "er: internal error: KeyError: 'missing key'; this is a bug — rerun with --debug "
            "(or ER_DEBUG=1) for the traceback and report it\n"
        )


def test_one_blas_thread_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert main([]) == 2
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert main([]) == 2
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
    capsys.readouterr()


def test_the_command_ends_without_the_interpreters_teardown(tmp_path: Path) -> None:
    """`er` is cli.main:entry: main's exit code, stdout and stderr flushed, atexit functions run (temporary
    folders' finalizers...), then no module teardown nor native destructors (pyarrow's thread pools aborted
    there now and then: exit -6 after a clean error)."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["er"] == "er_framework.cli.main:entry"
    code = (
        "import atexit, sys, tempfile, pathlib\n"
        "d = tempfile.TemporaryDirectory(); p = pathlib.Path(d.name); (p / 'x').write_text('x')\n"
        f"pathlib.Path({str(tmp_path / 'dir')!r}).write_text(str(p))\n"
        "atexit.register(lambda: print('exit functions ran', flush=True))\n"
        "sys.stdout.write('unflushed text ')\n"
        "sys.argv = ['er', 'validate', 'missing.yaml']\n"
        "from er_framework.cli.main import entry\n"
        "entry()\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr and "missing.yaml" in res.stderr
    assert res.stdout == "unflushed text exit functions ran\n"
    assert not Path((tmp_path / "dir").read_text()).exists()  # the TemporaryDirectory's finalizer ran
    ok = subprocess.run([sys.executable, "-m", "er_framework", "--help"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "usage" in ok.stdout


# --------------------------------------------------------------------------
# the environment's errors: exit 2 with what, the file and the fix (issue 31)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("EROFS", "read-only"),
        ("ENOSPC", "free space"),
        ("EDQUOT", "quota"),
        ("EMFILE", "ulimit -n"),
        ("EACCES", "permissions"),
        ("EFBIG", "ulimit -f"),
        ("EIO", "check the disk"),
    ],
)
def test_an_environment_error_is_exit_2_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: str, needle: str
) -> None:
    import errno
    import os

    from er_framework.cli import schema

    def fails(args: object) -> int:
        raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)), "/data/out/pairs.csv")

    monkeypatch.setattr(schema, "cmd_schema", fails)
    assert main(["schema"]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "/data/out/pairs.csv" in err and needle in err and "er schema" in err


def test_an_environment_error_raised_from_another_is_found(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    from er_framework.cli import schema

    def fails(args: object) -> int:
        try:
            raise OSError(errno.EROFS, "Read-only file system")
        except OSError as exc:
            raise RuntimeError("writing failed") from exc

    monkeypatch.setattr(schema, "cmd_schema", fails)
    assert main(["schema"]) == 2
    assert "read-only" in capsys.readouterr().err


def test_another_os_error_stays_a_bug(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    from er_framework.cli import schema

    def fails(args: object) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(schema, "cmd_schema", fails)
    assert main(["schema"]) == 1
    assert "internal error" in capsys.readouterr().err


def test_a_database_error_of_the_environment_is_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    from er_framework.cli import schema

    def fails(args: object) -> int:
        con = sqlite3.connect(":memory:")
        try:
            con.execute("ATTACH DATABASE '/nonexistent/folder/x.db' AS x")
        finally:
            con.close()
        return 0

    monkeypatch.setattr(schema, "cmd_schema", fails)
    assert main(["schema"]) == 2
    err = capsys.readouterr().err
    assert "SQLITE_CANTOPEN" in err and "ulimit -n" in err


def test_a_closed_stdout_refuses_before_work(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from er_framework.cli import schema

    ran: list[bool] = []
    monkeypatch.setattr(schema, "cmd_schema", lambda args: ran.append(True) or 0)
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["schema"]) == 2
    assert not ran and "standard output is closed" in capsys.readouterr().err


def test_streams_print_what_their_encoding_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from er_framework.cli.main import prepare_streams

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", out)
    assert prepare_streams()
    print("José")
    out.flush()
    assert raw.getvalue() == b"Jos\\xe9\n"


def test_command_name_has_the_action() -> None:
    from er_framework.cli.main import command_name

    parser = build_parser()
    assert command_name(parser.parse_args(["index", "build", "j.yaml", "--index", "i"])) == "index build"
    assert command_name(parser.parse_args(["synth", "news", "--pages", "3", "--out", "o"])) == "synth news"
    assert command_name(parser.parse_args(["schema"])) == "schema"


# ---------------------------------------------------------------- --version, -v, ER_LOG_LEVEL


def test_version_prints_er_python_and_the_plugin_packages(capsys: pytest.CaptureFixture[str]) -> None:
    import platform
    from importlib import metadata

    import er_framework

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"er-framework {metadata.version('er-framework')}" == f"er-framework {er_framework.__version__}"
    assert lines[1] == f"Python {platform.python_version()} ({platform.python_implementation()})"
    builtin = [line for line in lines[2:] if line.startswith("plugins from er-framework ")]
    assert len(builtin) == 1 and "core" in builtin[0] and "records_scoring" in builtin[0]
    assert all(line.startswith("plugins from ") for line in lines[2:])


def test_the_version_of_a_source_tree_is_marked_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    import er_framework

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert er_framework.installed_version() == "0+unknown"


@pytest.fixture
def no_log_level(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ER_LOG_LEVEL", raising=False)


def _run(tmp_path: Path, *flags: str, after: tuple[str, ...] = ()) -> list[str]:
    return [*flags, "run", str(ROOT / "configs" / "documents.yaml"), "--out", str(tmp_path / "out"), "--force", *after]


@pytest.mark.usefixtures("no_log_level")
def test_verbose_prints_each_stage_with_a_timestamp_off_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import logging
    import re

    assert main(_run(tmp_path)) == 0
    plain = capsys.readouterr()
    assert plain.err == ""
    assert main(_run(tmp_path, "-v")) == 0
    verbose = capsys.readouterr()
    strip = re.compile(r"(?m)^seconds .*$")
    assert strip.sub("", verbose.out) == strip.sub("", plain.out)  # stdout is the summary, as without -v
    lines = verbose.err.splitlines()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO er: "
    assert all(re.match(stamp, line) for line in lines), lines
    assert re.match(stamp + "stage read started$", lines[0])
    assert re.match(stamp + r"stage read done in \d+\.\d\d s, peak memory \d+ MB, records=270$", lines[1])
    assert any(re.match(stamp + "stage write done in ", line) for line in lines)
    assert not any(" DEBUG " in line for line in lines)
    # -vv (here after the verb): the batches too
    assert main(_run(tmp_path, after=("-vv",))) == 0
    assert re.search(r" DEBUG er: stage shingle\+signatures: 1 of 1 batches, ", capsys.readouterr().err)
    # the command's handler is gone after it
    assert not [h for h in logging.getLogger("er_framework").handlers if not isinstance(h, logging.NullHandler)]
    assert logging.getLogger("er_framework").level == logging.NOTSET


def test_er_log_level_sets_the_level(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ER_LOG_LEVEL", "info")
    assert main(_run(tmp_path, after=("-q",))) == 0
    got = capsys.readouterr()
    assert got.out == "" and " INFO er: stage cluster done in " in got.err
    monkeypatch.setenv("ER_LOG_LEVEL", "10")
    assert main(_run(tmp_path, after=("-q",))) == 0
    assert " DEBUG er: " in capsys.readouterr().err
    monkeypatch.setenv("ER_LOG_LEVEL", "loud")
    assert main(_run(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "ER_LOG_LEVEL: 'loud' is not a log level" in err and "fix: set it to DEBUG, INFO, WARNING or ERROR, or unset it" in err
    assert "Traceback" not in err


def test_verbose_is_on_every_verb() -> None:
    parser = build_parser()
    for argv, _, _ in PARSED:
        args = parser.parse_args([*argv, "-v"])
        assert args.verbose_verb == 1, argv
    assert parser.parse_args(["-vv", "run", "j.yaml"]).verbose == 2
