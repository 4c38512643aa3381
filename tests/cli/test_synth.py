"""``er synth`` (er_framework.cli.synth): customers and fingerprints with truth, bad options."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from er_framework.cli.main import main


def test_synth_customers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "customers", "--n", "20", "--overlap", "0.5", "--out", str(tmp_path)]) == 0
    assert "a.csv (20 records)" in capsys.readouterr().out
    for name in ("a.csv", "b.csv"):
        with open(tmp_path / name, newline="", encoding="utf-8") as f:
            assert len(list(csv.DictReader(f))) == 20
    with open(tmp_path / "truth.csv", newline="", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == 10


def test_synth_customers_bad_overlap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "customers", "--n", "20", "--overlap", "2", "--out", str(tmp_path)]) == 2
    assert "er synth customers" in capsys.readouterr().err


def test_synth_fingerprints_bad_options_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["synth", "fingerprints", "--fingers", "0", "--grid", "20by20", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--fingers/--impressions" in err and "'20by20' is not COLSxROWS" in err
    assert not (tmp_path / "o").exists()
