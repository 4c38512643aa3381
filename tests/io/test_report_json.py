"""er_framework.io.report_json: report.json as er wrote it, and the job file it names (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from er_framework.errors import InputError
from er_framework.io.report_json import check_report, is_job_file


def test_check_report_accepts_a_report_and_a_partial_one(tmp_path: Path) -> None:
    good = {
        "job": "t",
        "config": "job.yaml",
        "seed": 7,
        "records": {"total": 3, "per_source": {"a": 3}},
        "threshold": {"value": 0.5, "chosen": "fixed"},
        "review": {
            "threshold": 0.5,
            "above": [{"left": {"source": "a", "id": "1"}, "right": {"source": "a", "id": "2"}, "score": 0.9}],
            "below": [],
        },
        "outputs": ["pairs.csv"],
    }
    assert check_report(good, tmp_path / "report.json") is good
    assert check_report({"job": "t"}, "r.json") == {"job": "t"}  # an older report: fewer keys
    weighted = {
        "scores": {"weights": {"unit": "bits", "threshold": 0.0, "histogram": {"edges": [-1.0, 1.0], "counts": [3]}}},
        "review": {"threshold": 0.5, "weight_threshold": 0.0, "above": [], "below": []},
        "threshold_curve": {"scale": "bits", "best": None, "curve": {"threshold": [0.0], "f1": [None]}},
    }
    assert check_report(weighted, "r.json") is weighted


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ([1, 2], "it holds a list"),
        ("x", "it holds a string"),
        ({"threshold": "x"}, "threshold is a string, not an object"),
        ({"threshold": {"value": "x"}}, "threshold.value is a string"),
        ({"threshold": {"value": float("inf")}}, "threshold.value is not a finite number"),
        ({"seed": 10**400}, "seed is a number too large"),
        ({"seed": True}, "seed is true or false"),
        ({"sources": 5}, "sources is a whole number"),
        ({"records": {"per_source": {"a": "3"}}}, "records.per_source['a'] is a string"),
        ({"review": {"threshold": 0.5, "above": None, "below": []}}, "review.above is null"),
        ({"review": {"threshold": 0.5, "above": [{"left": "x"}], "below": []}}, "review.above[0].left is a string"),
        ({"verifier": {"per_field": "x"}}, "verifier.per_field is a string"),
        ({"outputs": [1]}, "outputs[0] is a whole number"),
        ({"scores": {"weights": {"threshold": "0"}}}, "scores.weights.threshold is a string"),
        (
            {"review": {"threshold": 0.5, "above": [{"left": {"source": "a", "id": "1", "compared": {"f": 3}}}], "below": []}},
            "compared['f']",
        ),
        ({"threshold_curve": {"best": {"threshold": "x"}}}, "threshold_curve.best.threshold is a string"),
        ({"threshold_curve": {"curve": {"f1": [0.5, "x"]}}}, "threshold_curve.curve.f1[1] is a string"),
    ],
)
def test_check_report_names_what_is_wrong_without_quoting(doc: object, why: str) -> None:
    with pytest.raises(InputError) as e:
        check_report(doc, "OUT/report.json")
    text = str(e.value)
    assert "OUT/report.json is not a report er wrote" in text and why in text


def test_check_report_shallow_places_are_checked_for_their_kind_only() -> None:
    doc = {"review": {"threshold": 0.5, "above": [{"left": "x"}], "below": []}, "scores": {"histogram": "no"}}
    assert check_report(doc, "r", shallow=("scores", "review.above[]"))
    with pytest.raises(InputError):
        check_report({"scores": "no"}, "r", shallow=("scores",))


def test_is_job_file(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("sources: []\nverifier: {type: jaccard}\n", encoding="utf-8")
    assert is_job_file(job)
    for text in ("root:*:20228:0:99999:7:::\n", "just text\n", "[1, 2]\n", "a: [\n", "x\0y: 1\n"):
        job.write_text(text, encoding="utf-8")
        assert not is_job_file(job), text
    assert not is_job_file(tmp_path)  # a folder
    assert not is_job_file(tmp_path / "missing.yaml")
