"""er_framework/engine/result.py: the summary a run prints, its plausibility warnings included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from er_framework.data import Pairs
from er_framework.engine.result import Result, warning_lines


def report(warnings: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "records": {"total": 10000, "per_source": {"p": 10000}},
        "exact_duplicates": {"records_collapsed": 0},
        "candidate_pairs": 50000,
        "verified_pairs": 49990,
        "clusters": {"count": 1, "largest": 10000, "singletons": 0},
        "seconds_total": 1.5,
        "peak_rss_mb": 100.0,
        "warnings": warnings,
    }


def result(warnings: list[dict[str, str]]) -> Result:
    none = np.zeros(0, dtype=np.int64)
    return Result(records=None, pairs=Pairs(none, none), labels=none, report=report(warnings), outputs={"pairs": Path("/o/pairs.csv")})  # type: ignore[arg-type]


def test_warning_lines() -> None:
    got = report(
        [{"code": "x", "message": "one cluster holds it all", "fix": "raise the threshold"}, {"code": "y", "message": "m", "fix": ""}]
    )
    assert warning_lines(got) == ["warning: one cluster holds it all - raise the threshold", "warning: m"]
    assert warning_lines({}) == [] and warning_lines({"warnings": None}) == []


def test_the_summary_prints_each_warning_before_the_files_written() -> None:
    lines = (
        result([{"code": "giant_cluster", "message": "one cluster holds 10,000 of the 10,000 records", "fix": "check the verifier"}])
        .summary()
        .splitlines()
    )
    assert lines[4].startswith("clusters") and "(largest 10000" in lines[4]
    assert lines[-2:] == ["warning: one cluster holds 10,000 of the 10,000 records - check the verifier", "wrote /o/pairs.csv"]
    assert not any(line.startswith("warning") for line in result([]).summary().splitlines())
