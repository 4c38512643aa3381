"""er_framework.engine.result: the summary's warnings (values a normalizer chain could not read, the run's
plausibility warnings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from er_framework.data import Pairs, Records
from er_framework.engine.result import Result, counts_text, result_counts, unparsed_lines, warning_lines
from tests.html_tags import HOSTILE, tags_of


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


# ---------------------------------------------------------------- notebooks: repr and _repr_html_


def big_result(n: int = 300_000) -> Result:
    """A result of ``n`` records whose first ids and values are hostile, with every table full size."""
    ids = [f"r{i}" for i in range(n)]
    ids[0] = HOSTILE
    source = np.zeros(n, dtype=np.int32)
    records = Records(ids=ids, source=source, source_names=["s"], fields={"name": [HOSTILE * 50] * n})
    left, right = np.arange(0, n - 1, 2, dtype=np.int64), np.arange(1, n, 2, dtype=np.int64)
    pairs = Pairs(left, right, np.full(len(left), 0.9))
    labels = left.repeat(2)[:n]
    ids_arr = np.array(ids, dtype=object)
    tables = {
        "pairs": {"left_source": np.full(len(left), "s", dtype=object), "left_id": ids_arr[left],
                  "right_source": np.full(len(left), "s", dtype=object), "right_id": ids_arr[right], "score": pairs.score},
        "clusters": {"source": np.full(n, "s", dtype=object), "id": ids_arr, "cluster_id": labels},
    }  # fmt: skip
    rep = report([{"code": "w", "message": HOSTILE, "fix": "x"}] * 100)
    rep["records"] = {"total": n, "per_source": {"s": n}}
    rep["threshold"] = {"value": 0.5}
    rep["verifier"] = {"type": "jaccard"}
    return Result(records=records, pairs=pairs, labels=labels, report=rep, tables=tables)


def test_the_repr_is_one_short_line() -> None:
    r = big_result()
    text = repr(r)
    assert "\n" not in text and len(text) < 300
    assert text == (
        "<Result: 300,000 records, 50,000 candidate pairs, 49,990 verified pairs, 1 clusters; "
        "verifier jaccard, threshold 0.5, warnings 100>"
    )
    assert repr(result([])) == "<Result: 10,000 records, 50,000 candidate pairs, 49,990 verified pairs, 1 clusters>"


def test_the_html_is_small_escaped_and_has_the_first_rows() -> None:
    from er_framework.engine.reprs import HTML_LIMIT, ROWS_SHOWN, WARNINGS_SHOWN

    r = big_result()
    html = r._repr_html_()
    assert len(html.encode()) < HTML_LIMIT
    assert tags_of(html) <= {"style", "div", "b", "table", "caption", "thead", "tbody", "tr", "th", "td", "pre"}
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "pairs (150,000 rows, the first 10 shown)" in html and "clusters (300,000 rows, the first 10 shown)" in html
    assert html.count("<tr>") == 2 * (ROWS_SHOWN + 1) + len(result_counts(r.report))
    assert ">r19<" in html and ">r20<" not in html  # the first rows only (10 pairs: r0 … r19)
    assert f"… {100 - WARNINGS_SHOWN} more warnings (report.json)" in html
    assert "300,000" in html and "jaccard" in html


def test_the_html_of_a_run_without_tables() -> None:
    html = result([])._repr_html_()
    assert "<caption" not in html and "10,000" in html and "seconds" in html


def test_result_counts_leave_out_what_the_report_lacks() -> None:
    assert result_counts({}) == []
    assert result_counts({"candidate_pairs": 3, "seconds_total": 1.234, "threshold": {"value": 0.25}}) == [
        ("candidate pairs", "3"),
        ("threshold", "0.25"),
        ("seconds", "1.23"),
    ]
    assert counts_text([("records", "5"), ("verifier", "v"), ("seconds", "1.00")]) == "5 records; verifier v, 1.00 s"
