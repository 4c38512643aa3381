"""report.html of configs/febrl4.yaml (Fellegi–Sunter, link): the threshold decided on the match-weight scale.

One run of the shipped job, with two changes that leave its pairs as they are: the candidates are written (for
``er report --truth``) and postcode gets a level no candidate can reach (two 4-digit postcodes are equal or at
most 75% alike), which the match-weights table must call "never seen"."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
from report_pages import ROOT, assert_self_contained, run

from er_framework.cli.main import main
from er_framework.engine.score_scale import logit2

TRUTH = ROOT / "configs/data/febrl/febrl4_truth.csv"


@pytest.fixture(scope="module")
def febrl4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("febrl4")
    text = (ROOT / "configs/febrl4.yaml").read_text(encoding="utf-8")
    text = text.replace("path: data/", f"path: {ROOT}/configs/data/").replace("  format: csv", "  format: csv\n  candidates: true")
    old = "{field: postcode, comparison: levenshtein, levels: [100, 75]}"
    assert old in text
    text = text.replace(old, "{field: postcode, comparison: levenshtein, levels: [100, 99, 75]}")
    job = base / "febrl4.yaml"
    job.write_text(text, encoding="utf-8")
    return run(job, base / "out")


def _page(out: Path) -> str:
    return (out / "report.html").read_text(encoding="utf-8")


def _section(page: str, sid: str) -> str:
    i = page.index(f'<section id="{sid}"')
    return page[i : page.index("</section>", i)]


def test_every_candidates_match_weight_in_bits_with_the_threshold_marked(febrl4: Path) -> None:
    page = _page(febrl4)
    assert_self_contained(page)
    body = _section(page, "scores")
    assert 'aria-label="histogram of every candidate&#x27;s match weight"' in body or "every candidate's match weight" in body
    assert 'class="threshold"' in body and "threshold +0.00 bits (p = 0.5)" in body
    assert 'class="axis2"' in body and "match probability" in body  # the probability axis beside the bits
    weights = json.loads((febrl4 / "report.json").read_text(encoding="utf-8"))["scores"]["weights"]
    counts, edges = weights["counts"] if "counts" in weights else weights["histogram"]["counts"], weights["histogram"]["edges"]
    assert weights["unit"] == "bits" and weights["threshold"] == 0.0
    # the gap: no candidate between about -6 and +9 bits, thousands on each side
    mids = (np.array(edges[:-1]) + np.array(edges[1:])) / 2
    c = np.array(counts)
    assert c[(mids > -5) & (mids < 8)].sum() == 0
    assert c[mids < -5].sum() > 30_000 and c[mids > 8].sum() == weights["above"] == 4_999


def test_borderline_pairs_are_the_nearest_by_weight_on_each_side(febrl4: Path) -> None:
    review = json.loads((febrl4 / "report.json").read_text(encoding="utf-8"))["review"]
    rows = list(csv.DictReader(open(febrl4 / "candidates.csv", encoding="utf-8")))
    w = logit2(np.array([float(r["score"]) for r in rows]))  # exact here: the borderline weights are far below 40 bits
    above, below = np.sort(w[w >= 0])[:10], np.sort(w[w < 0])[::-1][:10]
    assert [e["weight"] for e in review["above"]] == pytest.approx(above.tolist(), abs=1e-6)
    assert [e["weight"] for e in review["below"]] == pytest.approx(below.tolist(), abs=1e-6)
    page = _section(_page(febrl4), "review")
    first = review["above"][0]["weight"]
    assert f"match weight {first:+.2f} bits ({first:+.2f} bits from the threshold)" in page


def test_cards_show_the_raw_and_the_compared_values(febrl4: Path) -> None:
    page = _section(_page(febrl4), "review")
    review = json.loads((febrl4 / "report.json").read_text(encoding="utf-8"))["review"]
    dob = review["above"][0]["left"]["compared"]["date_of_birth"]  # YYYYMMDD as read, ISO as compared
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", dob)
    text = re.sub(r"<[^>]+>", "", page)
    assert dob.replace("-", "") + "→ compared: " + dob in text
    # an address as read and as compared (the address normalizer abbreviates: "street" -> "st" …)
    shown = re.findall(r"([a-z ]+)→ compared: ([a-z ]+)", text)
    assert any(raw != cmp for raw, cmp in shown), shown


def test_a_level_no_candidate_reaches_is_never_seen(febrl4: Path) -> None:
    per_field = json.loads((febrl4 / "report.json").read_text(encoding="utf-8"))["verifier"]["per_field"]
    assert per_field["postcode"]["levels"][1] == ">=99" and per_field["postcode"]["candidate_pairs"][1] == 0
    body = _section(_page(febrl4), "weights")
    assert "never seen" in body and "postcode: &gt;=99" in body


def test_blocking_statistics_are_tables(febrl4: Path) -> None:
    body = _section(_page(febrl4), "blocking")
    assert body.count('<table class="blk">') == 2  # field_hash's and sorted_neighbourhood's keys
    assert "<code>given_name+surname</code>" in body and "pairs they cost" in body
    assert "per_key" not in body  # no raw JSON of the keys in a cell


def test_er_report_truth_draws_the_threshold_chart(febrl4: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(febrl4), "--truth", str(TRUTH)]) == 0
    capsys.readouterr()
    report = json.loads((febrl4 / "report.json").read_text(encoding="utf-8"))
    curve = report["threshold_curve"]
    assert curve["scale"] == "bits" and curve["true_pairs"] == 5000
    best = curve["best"]
    assert -6 < best["threshold"] < 9 and best["f1"] > 0.999  # in the gap
    body = _section(_page(febrl4), "threshold-curve")
    assert f"is reached at the threshold {best['threshold']:+.2f} bits" in body
    assert 'class="best-threshold"' in body and 'class="threshold"' in body


def test_er_report_truth_without_candidates_says_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(ROOT / "configs/febrl3.yaml", tmp_path / "febrl3")
    assert main(["report", str(out), "--truth", str(ROOT / "configs/data/febrl/febrl3_truth.csv")]) != 0
    err = capsys.readouterr().err
    assert "no candidates.csv" in err and "output: {candidates: true}" in err
