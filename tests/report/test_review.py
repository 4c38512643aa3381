"""The threshold review on report.html (er_framework.report.review): every candidate's score, the pairs
nearest the threshold with both records side by side, Fellegi–Sunter weights and waterfalls; drawn from
synthetic report.json sections, old report.json files without them, hostile values escaped."""

from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from er_framework.data import Pairs, Records
from er_framework.report.page import RunData, render_report
from er_framework.report.review import (
    candidate_scores,
    diff_markup,
    match_weights,
    nice_ticks,
    probability_ticks,
    review_pairs,
    review_records,
    waterfall_svg,
    weight_histogram,
)

EVIL_ID = "<img src=x onerror=alert(1)>"
EVIL_TEXT = "<script>alert('boom')</script>"


def assert_safe(page: str) -> None:
    """No markup from the data got through, nothing is loaded from elsewhere."""
    lowered = page.lower()
    for bad in ("<script", "<img src=x", "javascript:", "http://", "https://", "<iframe"):
        assert bad not in lowered, bad
    for attr in re.findall(r'(?:src|href|action)\s*=\s*"([^"]*)"', page):
        assert attr.startswith(("data:", "#")), attr


def section(page: str, sid: str) -> str:
    m = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
    assert m, f"no section {sid}"
    return m.group(1)


def order(page: str) -> list[str]:
    return re.findall(r'<section id="([a-z-]+)">', page)


# --------------------------------------------------------------------------
# synthetic runs
# --------------------------------------------------------------------------

FS_FIELDS = ["first_name", "last_name", "address", "city", "dob"]


def fs_records() -> Records:
    a = Records.from_columns(
        ["A1", "A2", EVIL_ID],
        {
            "first_name": ["Angela", "Lori", "Mark"],
            "last_name": ["Myers", "Allen", "Martinez"],
            "address": ["32 Banks Lane", "343 Jessica Rd.", "161 Banks Road"],
            "city": ["Crossport", "Johnsontown", None],
            "dob": ["1950-02-04", "1940-01-25", EVIL_TEXT],
        },
        source_name="A",
    )
    b = Records.from_columns(
        ["B1", "B2", "B3"],
        {
            "first_name": ["Angela", "Lory", "MARK"],
            "last_name": ["Myers", "Allen", "Martinez"],
            "address": ["10 Lake St.", "6 Anna Drive", "161 Banks Rd"],
            "city": ["East Shawn", "North Tiffany", "Jacksonville"],
            "dob": ["1950-02-04", "1930-01-23", "1938-03-14"],
        },
        source_name="B",
    )
    return Records.concat([a, b])


def fs_report() -> dict[str, Any]:
    lam = 0.1173
    return {
        "job": "<b>fs</b>",
        "mode": "link",
        "verifier": {
            "type": "fellegi_sunter",
            "threshold": 0.9,
            "lambda": lam,
            "u_mode": "fixed from random pairs",
            "per_field": {
                "first_name": {
                    "columns": ["first_name"],
                    "comparison": "jaro_winkler",
                    "levels": ["=100", ">=92", "<script>x</script>", "<80"],
                    "m": [0.918, 0.0342, 0.0209, 0.0269],
                    "u": [0.0167, 0.00381, 0.0128, 0.967],
                    "weight_log2": [5.78, 1.02, 1.66, -5.17],
                    "missing_pairs": 0,
                },
                "last_name": {
                    "columns": ["last_name"],
                    "comparison": "jaro_winkler",
                    "levels": ["=100", "<100"],
                    "m": [0.93, 0.07],
                    "u": [0.56, 0.44],
                    "weight_log2": [0.72, -2.65],
                    "missing_pairs": 0,
                },
                "location": {
                    "columns": ["address", "city"],
                    "comparison": "ratio",
                    "levels": ["=100", ">=85", "<85"],
                    "m": [0.9, 0.05, 0.05],
                    "u": [0.0001, 0.0004, 0.9995],
                    "weight_log2": [13.1, 6.97, -4.32],
                    "missing_pairs": 12,
                },
                "dob": {
                    "columns": ["dob"],
                    "comparison": "levenshtein",
                    "levels": ["=100", ">=80", "<80"],
                    "m": [0.987, 0.0115, 0.0013],
                    "u": [0.000139, 0.0171, 0.9828],
                    "weight_log2": [12.8, -0.57, -9.58],
                    "missing_pairs": 324,
                },
            },
        },
        "scores": {
            "threshold": 0.9,
            "candidates": 8524,
            "above": 999,
            "below": 7525,
            "nan": 0,
            "histogram": {"edges": [i / 10 for i in range(11)], "counts": [7520, 1, 1, 0, 0, 0, 2, 0, 1, 999]},
            "score": "match probability of the <fields> after normalize",
        },
        "review": {
            "threshold": 0.9,
            "above": [
                fs_entry(("A", "A1"), ("B", "B1"), [0, 0, 2, 0]),
                fs_entry(("A", EVIL_ID), ("B", "B3"), [0, 0, 1, -1]),
            ],
            "below": [
                fs_entry(("A", "A2"), ("B", "B2"), [1, 0, 2, 1]),
            ],
        },
        "stages": [],
        "clusters": {"count": 5},
    }


WEIGHTS = {
    "first_name": [5.78, 1.02, 1.66, -5.17],
    "last_name": [0.72, -2.65],
    "location": [13.1, 6.97, -4.32],
    "dob": [12.8, -0.57, -9.58],
}


def fs_entry(left: tuple[str, str], right: tuple[str, str], levels: list[int]) -> dict[str, Any]:
    prior = math.log2(0.1173 / (1 - 0.1173))
    terms: dict[str, Any] = {"prior_weight": prior}
    total = prior
    for (label, ws), lv in zip(WEIGHTS.items(), levels):
        w = 0.0 if lv < 0 else ws[lv]
        terms[f"level_{label}"] = lv
        terms[f"weight_{label}"] = w
        total += w
    terms["match_weight"] = total
    terms["score"] = 1 / (1 + 2**-total)
    return {
        "left": {"source": left[0], "id": left[1]},
        "right": {"source": right[0], "id": right[1]},
        "score": terms["score"],
        "terms": terms,
    }


def render(tmp_path: Path, report: dict[str, Any], records: Records, labels: list[int] | None = None) -> str:
    (tmp_path / "report.json").write_text(json.dumps(report), encoding="utf-8")
    n = len(records)
    lab = np.asarray(labels if labels is not None else list(range(n)), dtype=np.int64)
    return render_report(tmp_path, run=RunData(records, Pairs.empty(scored=True), lab))


# --------------------------------------------------------------------------
# Fellegi–Sunter
# --------------------------------------------------------------------------


def test_fs_page_sections_numbers_and_order(tmp_path: Path) -> None:
    page = render(tmp_path, fs_report(), fs_records(), labels=[0, 1, 2, 0, 1, 2])
    got = order(page)
    for sid in ("scores", "review", "weights", "waterfalls", "largest-clusters"):
        assert sid in got, sid
    assert got.index("review") < got.index("largest-clusters")  # borderline pairs come before the examples
    assert got.index("scores") < got.index("review") < got.index("weights") < got.index("waterfalls")
    assert "Every candidate&#x27;s score" in page and "Verified pair scores" not in page

    scores = section(page, "scores")
    assert "8,524 candidate pairs scored: 999 at or above the threshold 0.9 (11.7%), 7,525 below it." in scores
    assert scores.count("<rect ") == 10  # one bar per bin, even the empty ones
    assert "0.9 – 1: 999 pairs" in scores and "0 – 0.1: 7,520 pairs" in scores
    assert 'class="threshold"' in scores and "threshold 0.9" in scores
    assert "pairs (log scale)" in scores  # 7,520 against 1: counts on a log scale
    assert "match probability of the &lt;fields&gt; after normalize" in scores
    # the threshold line sits at 0.9 of the axis: x = left + width * 0.9
    x = float(re.search(r'<line class="threshold" x1="([\d.]+)"', scores).group(1))  # type: ignore[union-attr]
    x0 = float(re.search(r'<rect x="([\d.]+)"', scores).group(1)) - 0.3  # type: ignore[union-attr]
    assert x == pytest.approx(x0 + 0.9 * (760 - 62 - 16), abs=0.2)

    review = section(page, "review")
    assert "Just above the threshold (kept): 2 pairs" in review
    assert "Just below the threshold (dropped): 1 pair" in review
    first = review.split('<div class="rv">')[1]
    assert "A: <code>A1</code>" in first and "B: <code>B1</code>" in first
    assert "<td>=100</td>" in first and "+5.78" in first and "-4.32" in first and "<td>&lt;85</td>" in first
    assert "prior (λ = 0.1173)" in first and "-2.91" in first
    total = sum(
        fs_entry(("A", "A1"), ("B", "B1"), [0, 0, 2, 0])["terms"][k]
        for k in ("prior_weight", "weight_first_name", "weight_last_name", "weight_location", "weight_dob")
    )
    assert f"{total:+.2f}" in first
    assert "address:" in first and "city:" in first  # a field of two columns shows both
    third = review.split('<div class="rv">')[3]
    assert '<mark class="l">' in third and '<mark class="r">' in third  # Lori / Lory differ
    assert "<td>&gt;=92</td>" in third and "+1.02" in third


def test_fs_weights_chart_and_monotonicity(tmp_path: Path) -> None:
    page = render(tmp_path, fs_report(), fs_records())
    weights = section(page, "weights")
    for label in ("first_name", "last_name", "location", "dob"):
        assert f"<h3>{label}</h3>" in weights
    assert "0.918" in weights and "0.0167" in weights and "+5.78" in weights and "-9.58" in weights
    assert "columns address, city" in weights
    assert "Not monotone: in first_name," in weights  # level 2 weighs more than level 1
    assert "last_name," not in weights.split("Not monotone")[1].split("</p>")[0]
    assert "prior weight log2(λ / (1 − λ)) = -2.91 bits" in weights
    assert "&lt;script&gt;x&lt;/script&gt;" in weights  # a hostile level name, escaped
    assert "324 candidate pairs with the value missing" in weights
    assert weights.count('class="wtrack"') == 4 + 2 + 3 + 3  # one bar per level
    # components no longer dump per_field as a JSON string
    assert '"weight_log2"' not in section(page, "components").replace("&quot;", '"')


def test_fs_waterfalls(tmp_path: Path) -> None:
    report = fs_report()
    report["review"]["above"] = [fs_entry(("A", "A1"), ("B", "B1"), [0, 0, 2, 0]) for _ in range(5)]
    page = render(tmp_path, report, fs_records())
    falls = section(page, "waterfalls")
    shown, folded = falls.split("<details>")
    assert shown.count("<svg") == 3 + 1  # three above, the one below
    assert folded.count("<svg") == 2 and "the other 2 review pairs" in folded
    e = report["review"]["above"][0]
    w = e["terms"]["match_weight"]
    assert f"total → probability {1 / (1 + 2**-w):.4f}" in shown
    assert f"{w:+.2f}" in shown
    assert "first_name: =100" in shown and "location: &lt;85" in shown
    assert f"threshold 0.9 in bits ({math.log2(9):+.2f})" in shown
    # values compared, in the hover text
    assert "address: 32 Banks Lane | 10 Lake St." in shown


def test_waterfall_bars_add_up() -> None:
    """Each step's bar starts where the previous one ended; the total bar spans 0 .. match_weight."""
    report = fs_report()
    e = fs_entry(("A", "A2"), ("B", "B2"), [1, 0, 2, 1])
    svg = waterfall_svg(e["terms"], report)
    rects = [
        (float(x), float(w), fill)
        for x, w, fill in re.findall(r'<rect x="([-\d.]+)" y="[-\d.]+" width="([\d.]+)" height="[\d.]+" fill="([^"]+)"', svg)
    ]
    assert len(rects) == 1 + 4 + 1
    ends = [(x, x + w) for x, w, _ in rects]
    for (a0, a1), (b0, b1) in zip(ends[:-2], ends[1:-1]):
        assert min(abs(a0 - b0), abs(a0 - b1), abs(a1 - b0), abs(a1 - b1)) < 0.15  # touching
    assert e["terms"]["match_weight"] < 0  # the total bar runs from its left end (the total) to 0
    assert min(abs(ends[-1][0] - x) for x in ends[-2]) < 0.15  # the last step ends at the total
    assert abs(ends[-1][1] - ends[0][1]) < 0.15  # the prior (negative) starts at 0, as the total bar ends
    assert rects[-1][2] == "#2f6fad"
    assert rects[1][2] == "#4c9a4c" and rects[3][2] == "#d0584e"  # first_name for, location against


# --------------------------------------------------------------------------
# field_score, set verifiers, documents
# --------------------------------------------------------------------------


def test_field_score_terms(tmp_path: Path) -> None:
    recs = Records.from_columns(
        ["1", "2"], {"name": ["Jon Smith", "John Smith"], "phone": ["555 1234", None], "note": ["a", "b"]}, source_name="s"
    )
    report = {
        "job": "fs",
        "mode": "dedup",
        "verifier": {
            "type": "field_score",
            "threshold": 150.0,
            "per_field": {
                "name": {"columns": ["name"], "scorer": "token_sort_ratio", "weight": 1.0},
                "phone": {"columns": ["phone"], "scorer": "digits", "weight": 1.0},
            },
        },
        "scores": {
            "threshold": 150.0,
            "candidates": 3,
            "above": 1,
            "below": 2,
            "nan": 0,
            "histogram": {"edges": [0.0, 100.0, 200.0], "counts": [2, 1]},
            "score": "sum of points",
        },
        "review": {
            "threshold": 150.0,
            "above": [
                {
                    "left": {"source": "s", "id": "1"},
                    "right": {"source": "s", "id": "2"},
                    "score": 195.2,
                    "terms": {
                        "similarity_name": 95.2,
                        "points_name": 95.2,
                        "similarity_phone": float("nan"),
                        "points_phone": 100.0,
                        "score": 195.2,
                    },
                }
            ],
            "below": [],
        },
    }
    text = json.dumps(report).replace("NaN", "null")  # JSON has no NaN: the engine writes null
    page = render(tmp_path, json.loads(text), recs)
    review = section(page, "review")
    assert '<th class="num">similarity</th>' in review and '<th class="num">points</th>' in review
    assert ">95.2<" in review and ">195.20<" in review and ">missing<" in review
    assert "<td>note</td>" in review  # a field no term uses is still shown
    assert "Just below the threshold (dropped): 0 pairs" in review and "No candidate pair scored below" in review
    assert "weights" not in order(page) and "waterfalls" not in order(page)
    assert "3 candidate pairs scored: 1 at or above the threshold 150" in section(page, "scores")


def doc(words: list[str]) -> str:
    return " ".join(words)


def test_set_terms_and_document_passages(tmp_path: Path) -> None:
    base = [f"w{i}" for i in range(400)]
    left = base[:100] + ["ONLY", "LEFT", "PASSAGE"] + base[100:300] + base[300:]
    right = base[:100] + base[100:300] + ["right", "side", "insert"] + base[300:]
    recs = Records.from_columns(["d1", "d2", "d3"], {"text": [doc(left), doc(right), EVIL_TEXT * 3]}, source_name="docs")
    report = {
        "job": "docs",
        "mode": "dedup",
        "verifier": {"type": "jaccard", "threshold": 0.8},
        "scores": {
            "threshold": 0.8,
            "candidates": 10,
            "above": 6,
            "below": 4,
            "nan": 0,
            "histogram": {"edges": [0.6, 0.7, 0.8, 0.9, 1.0], "counts": [2, 2, 3, 3]},
            "score": "Jaccard",
        },
        "review": {
            "threshold": 0.8,
            "above": [
                {
                    "left": {"source": "docs", "id": "d1"},
                    "right": {"source": "docs", "id": "d2"},
                    "score": 0.834,
                    "terms": {"shared": 216, "left_only": 40, "right_only": 3, "score": 0.834},
                }
            ],
            "below": [{"left": {"source": "docs", "id": "d1"}, "right": {"source": "docs", "id": "d3"}, "score": 0.1, "terms": None}],
        },
    }
    page = render(tmp_path, report, recs)
    review = section(page, "review")
    assert "shared 216 · only on the left 40 · only on the right 3 → 216 / 259 = 0.8340" in review
    first = review.split('<div class="rv">')[1]
    assert '<mark class="l">ONLY LEFT PASSAGE</mark>' in first
    assert '<mark class="r">right side insert</mark>' in first
    assert "[… 92 shared words …]" in first  # 100 shared words before the change, 8 kept next to it
    assert "[… 184 shared words …]" in first  # 200 between the two changes, 8 kept on each side
    assert "w99" in first and "w92" in first and "w91 " not in first
    assert len(first) < 6000
    second = review.split('<div class="rv">')[2]
    assert "&lt;script&gt;alert(&#x27;boom&#x27;)&lt;/script&gt;" in second
    assert "waterfalls" not in order(page)
    assert_safe(page)


def test_diff_markup() -> None:
    a, b = diff_markup("Lori", "Lory")
    assert a == 'Lor<mark class="l">i</mark>' and b == 'Lor<mark class="r">y</mark>'
    a, b = diff_markup("(943) 257-2457", "343-655-2353")  # little in common: marked whole, not letter by letter
    assert a == '<mark class="l">(943) 257-2457</mark>' and b == '<mark class="r">343-655-2353</mark>'
    a, b = diff_markup("PETERSON", "Peterson")  # compared ignoring case
    assert "mark" not in a + b and 'class="same"' in a
    a, b = diff_markup(None, "<b>x</b>")
    assert "(missing)" in a and b == "&lt;b&gt;x&lt;/b&gt;"
    a, b = diff_markup("<i>a</i> " * 30, "<i>b</i> " * 30)
    assert "<i>" not in a + b
    # many differences: each side is cut, saying how much was left out
    left = " ".join(f"x{i} same{i}" for i in range(3000))
    right = " ".join(f"y{i} same{i}" for i in range(3000))
    a, b = diff_markup(left, right, limit=500)
    assert len(a) < 8000 and len(b) < 8000
    assert "more differing passages not shown" in a and "more differing passages not shown" in b


def test_diff_of_long_documents_is_bounded() -> None:
    import time

    rng = np.random.default_rng(1)
    vocab = [f"v{i}" for i in range(5000)]
    left = " ".join(rng.choice(vocab, 40_000))
    right = " ".join(rng.choice(vocab, 40_000))
    t = time.perf_counter()
    a, b = diff_markup(left, right)
    assert "more words not compared" in a and "more words not compared" in b
    assert len(a) < 20_000 and len(b) < 20_000
    assert time.perf_counter() - t < 60  # a guard against a quadratic blow-up, not a speed test


# --------------------------------------------------------------------------
# old report.json files, malformed sections, hostile values
# --------------------------------------------------------------------------


def test_old_report_without_the_new_sections(tmp_path: Path) -> None:
    report = fs_report()
    for key in ("scores", "review"):
        report.pop(key)
    recs = fs_records()
    (tmp_path / "report.json").write_text(json.dumps(report), encoding="utf-8")
    run = RunData(recs, Pairs(np.array([0]), np.array([3]), np.array([0.97])), np.array([0, 1, 2, 0, 4, 5]))
    page = render_report(tmp_path, run=run)
    got = order(page)
    assert "review" not in got and "waterfalls" not in got
    assert "Verified pair scores" in page and "Every candidate" not in page
    assert "weights" in got  # the per_field section alone is enough for the weight chart
    assert "cluster 0: 2 records" in page


def test_malformed_sections_are_noted_not_fatal(tmp_path: Path) -> None:
    report = fs_report()
    report["scores"]["histogram"] = "not a histogram"
    report["review"]["above"] = [{"left": "x"}, fs_entry(("A", "A1"), ("B", "B1"), [0, 0, 0, 0])]
    report["review"]["above"][1]["terms"]["level_dob"] = "?"
    report["verifier"]["per_field"]["dob"]["m"] = {"not": "a list"}
    page = render(tmp_path, report, fs_records())
    assert "this section could not be drawn from report.json" in section(page, "scores")
    review = section(page, "review")
    assert "Just above the threshold (kept): 1 pair" in review and "A: <code>A1</code>" in review
    assert "<h3>dob</h3>" in section(page, "weights")


def test_hostile_values_are_escaped(tmp_path: Path) -> None:
    report = fs_report()
    report["verifier"]["per_field"]["<b>evil</b>"] = report["verifier"]["per_field"].pop("dob")
    for side in ("above", "below"):
        for e in report["review"][side]:
            e["terms"]["level_<b>evil</b>"] = e["terms"].pop("level_dob")
            e["terms"]["weight_<b>evil</b>"] = e["terms"].pop("weight_dob")
    page = render(tmp_path, report, fs_records())
    assert_safe(page)
    assert "&lt;img src=x onerror=alert(1)&gt;" in section(page, "review")
    assert "&lt;img src=x onerror=alert(1)&gt;" in section(page, "waterfalls")
    assert "<b>evil</b>" not in page and "&lt;b&gt;evil&lt;/b&gt;" in section(page, "weights")
    assert "&lt;b&gt;evil&lt;/b&gt;" in section(page, "waterfalls")
    assert "&lt;script&gt;alert(&#x27;boom&#x27;)&lt;/script&gt;" in section(page, "review")
    assert "<b>fs</b>" not in page


def test_review_records_and_helpers() -> None:
    assert review_records(fs_report()) == {("A", "A1"), ("B", "B1"), ("A", EVIL_ID), ("B", "B3"), ("A", "A2"), ("B", "B2")}
    assert review_records({}) == set() and review_records({"review": "x"}) == set()
    assert nice_ticks(0.0, 1.0, 5) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-6.3, 8.1, 8) == [-6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0]
    assert match_weights({"verifier": {"type": "jaccard"}}) is None
    body = candidate_scores(
        {"threshold": 0.5, "candidates": 4, "above": 1, "below": 2, "nan": 1, "histogram": {"edges": [0, 0.5, 1], "counts": [2, 1]}}
    )
    assert "4 candidate pairs scored: 1 at or above the threshold 0.5 (25.0%), 2 below it, 1 without a score" in body
    assert "pairs (log scale)" not in body  # counts 2 and 1: linear


# --------------------------------------------------------------------------
# through a real run: er run draws it from memory, er report from the files
# --------------------------------------------------------------------------


def small_job(tmp: Path) -> Path:
    rows = [
        {"id": "1", "text": "the quick brown fox jumps over the lazy dog " * 3},
        {"id": "<2>", "text": "the quick brown fox jumps over the lazy cat " * 3 + EVIL_TEXT},
        {"id": "3", "text": "the quick brown fox leaps over a lazy dog " * 3},
        {"id": "4", "text": "something else entirely, unrelated to foxes"},
    ]
    (tmp / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = tmp / "job.yaml"
    cfg.write_text(
        textwrap.dedent("""
        name: small
        threshold: 0.7
        sources: [{name: src, path: a.jsonl, fields: [text]}]
        shingler: {type: char, k: 3}
        signature: {type: minhash, num_perm: 128}
        blockers: [{type: lsh_bands, bands: 64, rows: 2}]
        verifier: {type: jaccard}
    """)
    )
    return cfg


def test_review_through_a_run_from_memory_and_from_files(tmp_path: Path) -> None:
    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job
    from er_framework.report.page import write_report

    out = tmp_path / "o"
    run_job(parse_job(small_job(tmp_path)), out, write=True)
    from_run = (out / "report.html").read_text(encoding="utf-8")
    from_files = write_report(out).read_text(encoding="utf-8")
    report = json.loads((out / "report.json").read_text())
    assert report["scores"]["candidates"] == report["scores"]["above"] + report["scores"]["below"] + report["scores"]["nan"]
    for page in (from_run, from_files):
        assert "Every candidate&#x27;s score" in page
        review = section(page, "review")
        n = len(report["review"]["above"]) + len(report["review"]["below"])
        assert n >= 2 and review.count('<div class="rv">') == n
        assert "not found among the records read" not in review
        assert "quick brown fox" in review
        assert_safe(page)
    assert section(from_run, "review") == section(from_files, "review")


# --------------------------------------------------------------------------
# the match-weight scale, compared values, levels never seen (issue 32)
# --------------------------------------------------------------------------


def _fs_report() -> dict[str, Any]:
    return {
        "verifier": {
            "lambda": 0.01,
            "per_field": {
                "street": {
                    "columns": ["street"],
                    "levels": ["=100", ">=99", "<99"],
                    "m": [0.8, 0.1, 0.1],
                    "u": [0.01, 0.001, 0.989],
                    "weight_log2": [6.3, 6.6, -3.3],
                    "candidate_pairs": [40, 0, 900],
                }
            },
        },
        "review": {
            "threshold": 0.5,
            "weight_threshold": 0.0,
            "above": [
                {
                    "left": {"source": "A", "id": "1", "compared": {"street": "rose ln ctr"}},
                    "right": {"source": "B", "id": "2", "compared": {"street": "rose ln entre"}},
                    "score": 0.75,
                    "weight": 1.585,
                    "terms": {"prior_weight": -6.6, "level_street": 2, "weight_street": -3.3, "match_weight": 1.585, "score": 0.75},
                }
            ],
            "below": [],
        },
    }


def test_probability_ticks_fit_their_labels_and_sit_at_their_weights() -> None:
    ticks = probability_ticks(-40.0, 60.0, 682.0)
    xs = [x for x, _ in ticks]
    assert xs == sorted(xs) and all((b - a) * 682.0 / 100.0 >= 64.0 for a, b in zip(xs, xs[1:]))
    assert (0.0, "0.5") in ticks
    for x, label in ticks:
        p = 1.0 - float(label.split("−")[1]) if "−" in label else float(label)
        assert math.isclose(x, math.log2(p / (1 - p)), abs_tol=1e-6)
    assert probability_ticks(1.0, 1.0) == []


def test_weight_histogram_draws_bits_and_refuses_a_malformed_section() -> None:
    section = {
        "unit": "bits",
        "threshold": 0.0,
        "above": 3,
        "below": 5,
        "how": "log2",
        "histogram": {"edges": [-10.0, 0.0, 10.0], "counts": [5, 3]},
    }
    html = weight_histogram(section)
    assert html is not None and "match weight of the candidate pair" in html and "threshold +0.00 bits (p = 0.5)" in html
    assert weight_histogram({"histogram": {"edges": [0.0], "counts": [1, 2]}}) is None
    assert weight_histogram(None) is None
    body = candidate_scores(
        {
            "threshold": 0.5,
            "candidates": 8,
            "above": 3,
            "below": 5,
            "histogram": {"edges": [0.0, 0.5, 1.0], "counts": [5, 3]},
            "weights": section,
        }
    )
    assert "match weight of the candidate pair" in body
    plain = candidate_scores(
        {"threshold": 0.5, "candidates": 8, "above": 3, "below": 5, "histogram": {"edges": [0.0, 0.5, 1.0], "counts": [5, 3]}}
    )
    assert "match weight" not in plain and "score of the candidate pair" in plain  # other verifiers: the score scale


def test_cards_show_the_weight_and_the_compared_values_beside_the_raw_ones() -> None:
    values = {("A", "1"): {"street": "Rose Lane Centre"}, ("B", "2"): {"street": "rose lane entre"}}
    html = review_pairs(_fs_report(), values, ["street"])
    text = re.sub(r"<[^>]+>", "", html)
    assert "match weight +1.58 bits (+1.58 bits from the threshold) · probability 0.7500" in text
    assert "Rose Lane Centre→ compared: rose ln ctr" in text and "rose lane entre→ compared: rose ln entre" in text
    same = {("A", "1"): {"street": "Rose Ln Ctr"}, ("B", "2"): {"street": "rose ln entre"}}
    assert "→ compared" not in review_pairs(_fs_report(), same, ["street"])  # equal but for case: nothing more to show


def test_a_level_no_candidate_reached_is_never_seen() -> None:
    html = match_weights(_fs_report()) or ""
    rows = re.findall(r"<tr><td>(.*?)</tr>", html)
    never = [r for r in rows if r.startswith("&gt;=99")]
    assert len(never) == 1 and "never seen" in never[0] and ">+6.60<" not in never[0]  # in the tip only, not shown as learned
    assert "Never seen among the candidates" in html and "street: &gt;=99" in html
    old = _fs_report()
    del old["verifier"]["per_field"]["street"]["candidate_pairs"]  # an older report.json: no counts, no claim
    assert "never seen" not in (match_weights(old) or "")
