"""``er report`` (er_framework.cli.report): writes report.html of a run and prints its path."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from er_framework.cli.main import main
from er_framework.cli.report import cmd_report
from er_framework.config.resolve import parse_job
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "documents"
    run_job(parse_job(ROOT / "configs" / "documents.yaml"), out, write=True)
    return out


def test_cmd_report_prints_the_path(documents: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (documents / "report.html").unlink()
    assert cmd_report(argparse.Namespace(out_dir=str(documents))) == 0
    assert capsys.readouterr().out.strip() == str(documents / "report.html")
    assert (documents / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_er_report_with_examples(documents: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(documents), "--examples", "2", "--config", str(ROOT / "configs/documents.yaml")]) == 0
    assert capsys.readouterr().out.strip() == str(documents / "report.html")


def test_er_report_of_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "no such output folder" in err and "Traceback" not in err
