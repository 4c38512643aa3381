"""er_framework.engine.result: the summary's warnings (values a normalizer chain could not read, the run's
plausibility warnings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from er_framework.data import Pairs, Records
from er_framework.engine.result import Result, unparsed_lines, warning_lines


def _stats(values: int, unparsed: int, missing: int = 0, examples: tuple[str, ...] = ("x",)) -> dict[str, Any]:
    present = values - missing
    return {
        "steps": ["date"],
        "values": values,
        "missing_before": missing,
        "placeholders": 0,
        "unparseable": unparsed,
        "unparseable_share": round(unparsed / present, 6) if present else 0.0,
        "unparseable_examples": list(examples),
    }


def _report(normalize: dict[str, Any]) -> dict[str, Any]:
    return {
        "records": {"total": 5000, "per_source": {}},
        "exact_duplicates": {"records_collapsed": 0},
        "candidate_pairs": 10,
        "verified_pairs": 4,
        "clusters": {"count": 4996, "largest": 2, "singletons": 4992},
        "seconds_total": 1.5,
        "peak_rss_mb": 100.0,
        "normalize": normalize,
    }


def test_one_warning_line_per_field_above_the_share() -> None:
    report = _report(
        {
            "date_of_birth": _stats(5200, 812, missing=200, examples=("19151111.0x", "31/02/99")),
            "ok": _stats(5000, 50),  # 1% exactly: no line
            "few": _stats(5000, 51),  # just above
            "none": _stats(10, 0, missing=10),
        }
    )
    lines = unparsed_lines(report)
    assert lines == [
        "warning: date_of_birth: 812 of 5,000 values (16.2%) could not be read by [date] and became missing, e.g. "
        "'19151111.0x', '31/02/99'; fix the values or the field's normalizers (er plugins lists their options), or set "
        "normalize_strict: true to stop on them",
        "warning: few: 51 of 5,000 values (1.0%) could not be read by [date] and became missing, e.g. 'x'; fix the values "
        "or the field's normalizers (er plugins lists their options), or set normalize_strict: true to stop on them",
    ]
    records = Records(ids=[], source=np.zeros(0, dtype=np.int32), source_names=["a"], fields={})
    empty = np.zeros(0, dtype=np.int64)
    summary = Result(records=records, pairs=Pairs(empty, empty), labels=empty, report=report).summary().splitlines()
    assert summary[-2:] == lines and summary[0].startswith("records read")
    assert unparsed_lines({}) == [] and unparsed_lines({"normalize": {}}) == []


# ---------------------------------------------------------------- plausibility warnings


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


def test_the_summary_line_of_the_link_answer_for_two_and_three_sources() -> None:
    none = np.zeros(0, dtype=np.int64)
    r = report([])
    r["records"]["per_source"] = {"A": 4000, "B": 3000, "C": 3000}
    r["link"] = {"sources": ["A", "B", "C"], "threshold": 0.5, "matched": {"A": 1200, "B": 1100, "C": 900}}
    lines = Result(records=None, pairs=Pairs(none, none), labels=none, report=r).summary().splitlines()  # type: ignore[arg-type]
    assert "records matched to another source: A 1,200 of 4,000, B 1,100 of 3,000, C 900 of 3,000 (score >= 0.5, after clustering)" in lines
    r["link"] = {"sources": ["A", "B"], "threshold": 0.5, "matched": {"A": 1100, "B": 1100}}
    lines = Result(records=None, pairs=Pairs(none, none), labels=none, report=r).summary().splitlines()  # type: ignore[arg-type]
    assert "B records matched to A: 1,100 of 3,000 (score >= 0.5, after clustering)" in lines
