"""The sections of report.html (er_framework.report.sections), as drawn on the page of a run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from report_pages import assert_self_contained

from er_framework.report.page import write_report
from er_framework.report.sections import normalize_section


def test_lsh_report_shows_measured_s_curve(shipped: dict[str, Path]) -> None:
    page = write_report(shipped["documents"]).read_text(encoding="utf-8")
    assert "95% Wilson interval" in page and "measured rate per similarity bin" in page
    assert "Every candidate&#x27;s score" in page and "Verified pair scores" not in page  # below the threshold too
    assert re.search(r"cluster \d+: 3 records", page)  # the largest clusters, with their records
    assert "Execute file with arguments" in page


def test_news_report_shows_titles_and_grid_bits_text(shipped: dict[str, Path]) -> None:
    news = write_report(shipped["news"]).read_text(encoding="utf-8")
    assert "page title" in news and "visible text" in news
    prints = write_report(shipped["fingerprints"]).read_text(encoding="utf-8")
    assert "Grid-bit blocking" in prints and "S-curve does not apply" in prints
    assert "points of the records" in prints  # minutiae drawn
    assert "Only the theoretical curve" not in prints


def test_without_diagnostics_only_theoretical_curve(shipped: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "old"
    out.mkdir()
    for f in ("pairs.csv", "clusters.csv"):
        (out / f).write_bytes((shipped["news"] / f).read_bytes())
    report = json.loads((shipped["news"] / "report.json").read_text())
    report.pop("diagnostics", None)
    (out / "report.json").write_text(json.dumps(report))
    page = write_report(out).read_text(encoding="utf-8")
    assert "Only the theoretical curve is shown" in page
    assert "measured rate per similarity bin" not in page
    assert_self_contained(page)


def test_a_bounded_probe_is_said_on_the_page(shipped: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "capped"
    out.mkdir()
    for f in ("pairs.csv", "clusters.csv"):
        (out / f).write_bytes((shipped["documents"] / f).read_bytes())
    report = json.loads((shipped["documents"] / "report.json").read_text())
    # the shipped job's probe is bounded by its token budget (a small corpus: PROBE_SMALL_FACTOR), and says so
    shipped_page = write_report(shipped["documents"]).read_text(encoding="utf-8")
    assert report["diagnostics"]["s_curve"]["capped"]["token_budget"] > 0
    assert "The probe was bounded" in shipped_page
    report["diagnostics"]["s_curve"].pop("capped")
    (out / "report.json").write_text(json.dumps(report))
    assert "The probe was bounded" not in write_report(out).read_text(encoding="utf-8")
    report["diagnostics"]["s_curve"]["capped"] = {
        "records_skipped_long_text": 2,
        "max_record_chars": 800_000,
        "records_skipped_many_tokens": 0,
        "max_record_tokens": 100_000,
        "pairs_before_token_budget": 9000,
        "tokens_compared": 19_000_000,
        "token_budget": 20_000_000,
        "note": "…",
    }
    (out / "report.json").write_text(json.dumps(report))
    page = write_report(out).read_text(encoding="utf-8")
    assert "The probe was bounded: 2 records longer than 800,000 characters" in page


def test_the_warnings_box() -> None:
    from er_framework.report.sections import warnings_section

    assert warnings_section({}) == "" and warnings_section({"warnings": []}) == ""
    box = warnings_section(
        {"warnings": [{"code": "giant_cluster", "message": "one cluster holds <all>", "fix": "raise the threshold"}, {"message": "m"}]}
    )
    assert box.startswith('<section id="warnings" class="warnings"><h2>2 warnings: check the answer before using it</h2>')
    assert '<li><b>one cluster holds &lt;all&gt;</b><br><span class="fix">fix: raise the threshold</span></li>' in box
    assert "<li><b>m</b></li>" in box  # no fix: no fix line


def test_the_page_puts_the_warnings_on_top(shipped: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(next(iter(shipped.values())), out)
    report = json.loads((out / "report.json").read_text())
    assert not report.get("warnings")
    page = write_report(out).read_text()
    assert 'id="warnings"' not in page
    report["warnings"] = [{"code": "giant_cluster", "message": "one cluster holds 90% of the records", "fix": "check the verifier"}]
    (out / "report.json").write_text(json.dumps(report))
    page = write_report(out).read_text()
    box = page.index('<section id="warnings" class="warnings">')
    assert box < page.index('<section id="job">') and "one cluster holds 90% of the records" in page[box:]


def test_normalize_section_counts_and_warns() -> None:
    stats = {
        "steps": ["date"], "values": 5200, "missing_before": 150, "placeholders": 50, "unparseable": 812,
        "unparseable_share": 0.1624, "unparseable_examples": ["19151111.0x", "<b>31/02/99</b>"],
        "missing_after": 1012, "distinct_before": 4000, "distinct_after": 3500,
    }  # fmt: skip
    fine = {**stats, "steps": ["name", "nickname"], "unparseable": 3, "unparseable_share": 0.0006, "unparseable_examples": ["Mr"]}
    body = normalize_section({"normalize": {"dob": stats, "first_name": fine}})
    assert body.count('class="note warn"') == 1  # only dob is above the share
    assert "warning: dob: 812 of 5,000 values (16.2%) could not be read by [date]" in body
    assert "812 (16.2%)" in body and "name, nickname" in body and "3 (0.1%)" in body
    assert "&lt;b&gt;31/02/99&lt;/b&gt;" in body and "<b>31" not in body  # values are escaped
    assert "normalize_strict: true" in body
    assert "No field is normalized" in normalize_section({})


def test_page_shows_the_normalize_section_when_fields_are_normalized(shipped: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "norm"
    out.mkdir()
    for f in ("pairs.csv", "clusters.csv"):
        (out / f).write_bytes((shipped["documents"] / f).read_bytes())
    report = json.loads((shipped["documents"] / "report.json").read_text())
    assert not report.get("normalize")  # documents normalizes nothing: no section
    assert '<a href="#normalize">' not in write_report(shipped["documents"]).read_text(encoding="utf-8")
    report["normalize"] = {
        "text": {
            "steps": ["date"], "values": 100, "missing_before": 0, "placeholders": 0, "unparseable": 40,
            "unparseable_share": 0.4, "unparseable_examples": ["hello"], "missing_after": 40, "distinct_before": 90, "distinct_after": 50,
        }
    }  # fmt: skip
    (out / "report.json").write_text(json.dumps(report))
    page = write_report(out).read_text(encoding="utf-8")
    assert '<a href="#normalize">Normalized fields</a>' in page
    assert "warning: text: 40 of 100 values (40.0%) could not be read by [date]" in page
    assert_self_contained(page)
