"""The page of er review --serve: self-contained, escaped, the report's pair card and waterfall."""

from __future__ import annotations

import re

from er_framework.report.label_page import CELL_CHARS, cluster_view, label_page, pair_view

REPORT = {
    "review": {"threshold": 0.5},
    "verifier": {"lambda": 0.001, "per_field": {"name": {"levels": ["=100", "<100"], "weight_log2": [5.0, -3.0], "columns": ["name"]}}},
}
TERMS = {"prior_weight": -9.97, "level_name": 0, "weight_name": 5.0, "match_weight": -4.97, "score": 0.03}


def entry(terms: dict[str, object] | None) -> dict[str, object]:
    return {"left": {"source": "A", "id": "<a1>"}, "right": {"source": "B", "id": "b1"}, "score": 0.03, "terms": terms}


def test_the_page_loads_nothing_from_elsewhere_and_escapes_its_texts() -> None:
    page = label_page("tok-en_1", "n0nce", "<job>", "labels<.csv")
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no CDN, no network
    assert "http://" not in page and "https://" not in page
    assert '<script nonce="n0nce">' in page and page.count("<script") == 1
    assert '<meta name="er-token" content="tok-en_1">' in page
    assert "<job>" not in page and "&lt;job&gt;" in page and "labels&lt;.csv" in page
    for key in ("m: () => label(1)", "n: () => label(0)", "s: () =>", "u: undo", "Backspace: undo", "ArrowLeft", "ArrowRight"):
        assert key in page


def test_pair_view_shows_fields_terms_and_the_waterfall() -> None:
    values = {("A", "<a1>"): {"name": "ann <b>", "city": None}, ("B", "b1"): {"name": "ann <b>", "city": "x"}}
    html = pair_view(REPORT, entry(TERMS), 3, values, ["name", "city"])
    assert "3. score 0.0300" in html
    assert "&lt;a1&gt;" in html and "<a1>" not in html and "ann &lt;b&gt;" in html
    assert "waterfall of the match weight" in html and "<svg" in html
    assert "(missing)" in html
    # without terms: the fields only
    plain = pair_view(REPORT, entry(None), 1, values, ["name", "city"])
    assert "<svg" not in plain and "ann &lt;b&gt;" in plain


def test_cluster_view_has_a_group_choice_per_record() -> None:
    long = "w " * CELL_CHARS
    members = [("A", "1"), ("B", "<2>"), ("C", "gone")]
    values = {("A", "1"): {"name": "x"}, ("B", "<2>"): {"name": long}}
    html = cluster_view("c<1>", members, values, ["name"])
    assert html.count('type="radio"') == 6 and html.count("checked") == 3  # A by default
    assert [int(i) for i in re.findall(r'data-i="(\d+)"', html)] == [0, 1, 2]
    assert "cluster c&lt;1&gt;: 3 records" in html and "&lt;2&gt;" in html
    assert "not found among the records read" in html
    assert f"({len(long.strip()):,} characters)" in html
