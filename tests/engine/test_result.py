"""er_framework.engine.result: the summary's warnings for values a normalizer chain could not read."""

from __future__ import annotations

from typing import Any

import numpy as np

from er_framework.data import Pairs, Records
from er_framework.engine.result import Result, unparsed_lines


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
