"""``er run`` (er_framework.cli.run): the summary, --quiet, a bad job."""

from __future__ import annotations

from pathlib import Path

import pytest

from er_framework.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_run_prints_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "configs/documents.yaml"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "records read" in out and "verified pairs" in out and "clusters" in out
    assert (tmp_path / "report.json").exists()


def test_run_quiet_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "configs/documents.yaml"), "--out", str(tmp_path), "--quiet", "--workers", "1"]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / "pairs.csv").exists() and (tmp_path / "clusters.csv").exists()


def test_run_of_a_missing_job_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "none.yaml" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_run_refuses_a_bad_workers_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "job.yaml", "--workers", "0"])
    assert exc.value.code == 2
    assert "expected a whole number from 1 to 1024 or 'auto'" in capsys.readouterr().err
