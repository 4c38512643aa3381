"""The `er` command (er_framework.cli.main): the verbs, help everywhere, errors without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from er_framework.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]

VERBS = ["run", "validate", "plugins", "tune", "synth", "evaluate", "report", "index", "query", "schema"]


#: Arguments that parse for each verb, and the module whose cmd_* runs it (one module per verb).
PARSED = [
    (["run", "job.yaml"], "run", "cmd_run"),
    (["validate", "job.yaml"], "validate", "cmd_validate"),
    (["plugins"], "plugins", "cmd_plugins"),
    (["tune", "--threshold", "0.8"], "tune", "cmd_tune"),
    (["tune", "fingerprints"], "tune", "cmd_tune_fingerprints"),
    (["synth", "fingerprints", "--fingers", "2", "--out", "o"], "synth", "cmd_synth_fingerprints"),
    (["synth", "customers", "--n", "2", "--out", "o"], "synth", "cmd_synth_customers"),
    (["evaluate", "o", "--truth", "t.csv"], "evaluate", "cmd_evaluate"),
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
