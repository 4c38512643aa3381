"""The sections of report.html (er_framework.report.sections), as drawn on the page of a run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from report_pages import assert_self_contained

from er_framework.report.page import write_report


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
