"""report.json's review and threshold curve (engine/report.py; the basename test_report.py is tests/cli's): the
pairs nearest the threshold by match weight, the values the verifier compared, and the curve over a job's
labelled pairs checked against a loop."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from er_framework.config.resolve import parse_job
from er_framework.data import Pairs, Records
from er_framework.engine.report import borderline_reference, compared_values, review_section
from er_framework.engine.threshold_curve import threshold_curve_reference
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]


def _records(n: int) -> Records:
    return Records(
        ids=[f"r{i}" for i in range(n)],
        source=np.zeros(n, dtype=np.int32),
        source_names=["S"],
        fields={"name": [f"n {i}" for i in range(n)], "city": [None if i % 3 == 0 else f"c{i}" for i in range(n)]},
    )


def test_review_is_nearest_by_weight_with_weights_and_compared_values() -> None:
    rng = np.random.default_rng(3)
    n, m = 60, 300
    left = rng.integers(0, n, m)
    right = (left + 1 + rng.integers(0, n - 1, m)) % n
    cand = Pairs(left.astype(np.int64), right.astype(np.int64))
    weights = np.round(rng.normal(0, 20, m), 2)
    weights[:40] = 60.0  # probabilities exactly 1.0: ties on the probability scale, not on the weight scale
    weights[:40] += np.arange(40)
    scores = 1.0 / (1.0 + np.exp2(-weights))
    out = review_section(_records(n), cand, scores, 0.9, None, weights, ["city"])
    tw = np.log2(0.9 / 0.1)
    assert out["weight_threshold"] == pytest.approx(tw)
    up, down = borderline_reference(weights, tw)
    assert [e["weight"] for e in out["above"]] == weights[up].tolist()
    assert [e["weight"] for e in out["below"]] == weights[down].tolist()
    for e in out["above"] + out["below"]:
        for side in ("left", "right"):
            row = e[side]["row"]
            assert e[side]["compared"] == {"city": None if row % 3 == 0 else f"c{row}"}  # the normalized fields only


def test_without_weights_the_review_is_by_score_and_records_without_values_give_no_compared() -> None:
    scores = np.array([0.1, 0.55, 0.45, 0.9])
    cand = Pairs(np.array([0, 1, 2, 3]), np.array([4, 5, 6, 7]))
    bare = Records(ids=[str(i) for i in range(8)], source=np.zeros(8, dtype=np.int32), source_names=["S"], fields={})
    out = review_section(bare, cand, scores, 0.5, None, None, ["city"])
    assert "weight_threshold" not in out
    assert [e["score"] for e in out["above"]] == [0.55, 0.9] and [e["score"] for e in out["below"]] == [0.45, 0.1]
    assert all("compared" not in e["left"] and "weight" not in e for e in out["above"])
    assert compared_values(bare, np.array([1]), ["city"]) is None


def _labelled_febrl4(tmp_path: Path) -> tuple[Path, list[tuple[str, str, int]]]:
    """febrl4 trained on labels: 30 true pairs of the truth file and 30 pairs that are not."""
    truth = list(csv.DictReader(open(ROOT / "configs/data/febrl/febrl4_truth.csv", encoding="utf-8")))
    rows = [(t["a_id"], t["b_id"], 1) for t in truth[:30]]
    rows += [(truth[i]["a_id"], truth[i + 1]["b_id"], 0) for i in range(100, 130)]
    labels = tmp_path / "labels.csv"
    with labels.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        w.writerows([("A", a, "B", b, m) for a, b, m in rows])
    text = (ROOT / "configs/febrl4.yaml").read_text(encoding="utf-8")
    text = text.replace("path: data/", f"path: {ROOT}/configs/data/").replace("  format: csv", "  format: csv\n  candidates: true")
    text += "\ntraining:\n  labels: labels.csv\n"
    job = tmp_path / "febrl4_labels.yaml"
    job.write_text(text, encoding="utf-8")
    return job, rows


def test_labels_curve_over_the_labelled_pairs(tmp_path: Path) -> None:
    job, rows = _labelled_febrl4(tmp_path)
    out = tmp_path / "out"
    result = run_job(parse_job(job), out, write=True)
    curve = result.report["threshold_curve"]
    assert curve["scale"] == "bits" and "labelled pairs" in curve["over"]
    assert curve["true_pairs"] == 30 and curve["pairs"] == 60
    # the loop: each labelled pair's weight from candidates.csv (a probability of 1 above every other weight)
    weight = {}
    for r in csv.DictReader(open(out / "candidates.csv", encoding="utf-8")):
        p = float(r["score"])
        weight[(r["left_id"], r["right_id"])] = np.log2(p) - np.log2(1 - p) if p < 1 else 1000.0
    values = np.array([weight.get((a, b), -np.inf) for a, b, _ in rows])
    truth = np.array([m == 1 for _, _, m in rows])
    ref = threshold_curve_reference(values, truth, 30)
    best = max(ref, key=lambda r: (r[3], r[0]))
    assert curve["best"]["f1"] == pytest.approx(best[3], abs=1e-6)
    assert curve["best"]["kept"] == best[4]
    now = [r for r in ref if r[0] >= 0.0]
    assert curve["at_threshold"]["kept"] == (now[-1][4] if now else 0)
