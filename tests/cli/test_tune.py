"""``er tune`` (er_framework.cli.tune): the chosen bands and the S-curve, the fingerprint analysis, bad options."""

from __future__ import annotations

import pytest

from er_framework.cli.main import main
from er_framework.kernels import candidate_probability


def test_tune_prints_choice_and_s_curve(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--threshold", "0.8", "--num-perm", "128"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    b = int(first.split("bands b = ")[1].split(",")[0])
    r = int(first.split("rows r = ")[1].split()[0])
    assert b * r <= 128 and candidate_probability(0.8, b, r) >= 0.95
    rows = [line.split() for line in out.splitlines() if line.strip()[:3] in {f"{i / 10:.1f}"[:3] for i in range(1, 11)}]
    assert len(rows) == 10
    for s, p in rows:
        assert abs(float(p) - candidate_probability(float(s), b, r)) < 1e-4


def test_tune_with_explicit_bands_reproduces_the_seed_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--threshold", "0.8", "--num-perm", "100", "--bands", "20", "--rows", "5"]) == 0
    out = capsys.readouterr().out
    table = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip().startswith("0.")}
    assert (
        table["0.5"] == "0.4701"
        and table["0.6"] == "0.8019"
        and table["0.7"] == "0.9748"
        and table["0.8"] == "0.9996"
        and table["0.2"] == "0.0064"
    )


def test_tune_without_threshold_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune"]) == 2
    err = capsys.readouterr().err
    assert "--threshold is required" in err and "Traceback" not in err


def test_tune_reports_every_bad_option_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--threshold", "1.5", "--num-perm", "0", "--bands", "4"]) == 2
    err = capsys.readouterr().err
    assert "--threshold" in err and "--num-perm" in err and "--bands/--rows" in err


def test_tune_fingerprints_suggests_cells_and_sets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "fingerprints"]) == 0
    out = capsys.readouterr().out
    assert "P(candidate | same finger)" in out and "suggested: cells = " in out
    assert main(["tune", "fingerprints", "--occupancy", "0"]) == 2
    assert "--occupancy" in capsys.readouterr().err
