"""``er review OUT``: the borderline pairs side by side and a labels file that training reads."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from er_framework.capabilities import Trainable
from er_framework.cli.main import main
from er_framework.cli.review import differing_passages, merge_labels
from er_framework.config import parse_job
from er_framework.errors import InputError
from er_framework.executors import run_job
from er_plugins.fellegi_sunter import FellegiSunter

ROOT = Path(__file__).resolve().parents[2]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_review_prints_both_sides_and_writes_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "customers"
    assert main(["run", str(ROOT / "configs" / "customers.yaml"), "--out", str(out), "--quiet"]) == 0
    labels = tmp_path / "labels.csv"
    assert main(["review", str(out), "--labels", str(labels)]) == 0
    text = capsys.readouterr().out
    assert "#1  uncertain" in text and "#20  " in text and "bits" in text
    # what the near-miss probe says of blocking: a line either way (the counts are engine/active.py's, tested there)
    assert "    blocking: the model matches none of the " in text or "    blocking may lose pairs: the model matches " in text
    got = rows(labels)
    assert len(got) == 20 and {r["side"] for r in got} == {"above", "below"}
    assert all(r["match"] == "" for r in got) and {r["round"] for r in got} == {"1"}
    assert {r["reason"] for r in got} <= {"uncertain", "disagreement", "near-miss"}
    for r in got:  # the job threshold, 0.5
        assert (float(r["score"]) >= 0.5) == (r["side"] == "above")
    # label them from the truth and train: the job runs with the labels and says so
    truth = {(r["a_id"], r["b_id"]) for r in rows(ROOT / "configs" / "data" / "customers" / "truth.csv")}
    for r in got:
        r["match"] = "1" if (r["left_id"], r["right_id"]) in truth else "0"
    assert {r["match"] for r in got} == {"0", "1"}
    with labels.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(got[0]))
        w.writeheader()
        w.writerows(got)
    # a second review keeps the labels already written, and adds a round of new pairs
    assert main(["review", str(out), "--labels", str(labels)]) == 0
    assert [r["match"] for r in rows(labels)][:20] == [r["match"] for r in got]
    assert len(rows(labels)) == 40
    job = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8")
    job = job.replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/") + f"\ntraining: {{labels: {labels}}}\n"
    (tmp_path / "trained.yaml").write_text(job, encoding="utf-8")
    res = run_job(parse_job(tmp_path / "trained.yaml"), write=False)
    assert res.report["training"]["matches"] + res.report["training"]["non_matches"] == 20
    assert res.report["verifier"]["training"]


def test_differing_passages() -> None:
    a = "the cat sat on the mat and looked at the dog"
    b = "the cat sat on a mat and looked at the big dog"
    assert differing_passages(a, b) == [("the", "a"), ("", "big")]
    assert differing_passages(a, a) == []


def test_merge_labels_adds_only_new_pairs(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    row = {"left_source": "A", "left_id": "1", "right_source": "B", "right_id": "2", "score": "0.5", "side": "below", "match": ""}
    assert merge_labels(path, [row]) == (1, 1)
    swapped = {**row, "left_source": "B", "left_id": "2", "right_source": "A", "right_id": "1"}
    assert merge_labels(path, [row, swapped, {**row, "right_id": "3"}]) == (1, 2)


def test_a_labels_file_that_cannot_be_read_or_written_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "docs"
    assert main(["run", str(ROOT / "configs" / "documents.yaml"), "--out", str(out), "--quiet"]) == 0
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert main(["review", str(out), "--labels", str(tmp_path / "file" / "labels.csv")]) == 2
    assert "cannot write the labels file" in capsys.readouterr().err
    (tmp_path / "other.csv").write_bytes(b"left_source,left_id\n\xff\xfe\n")
    assert main(["review", str(out), "--labels", str(tmp_path / "other.csv")]) == 2
    assert "is not a labels file" in capsys.readouterr().err
    assert (tmp_path / "other.csv").read_bytes() == b"left_source,left_id\n\xff\xfe\n"
    (tmp_path / "bad.csv").write_bytes(b"left_source,left_id,right_source,right_id,score,side,match\n\xff\xfe\n")
    assert main(["review", str(out), "--labels", str(tmp_path / "bad.csv")]) == 2
    assert "cannot read the labels file" in capsys.readouterr().err


def test_an_existing_labels_file_is_read_with_its_extra_columns_and_its_problems_named(tmp_path: Path) -> None:
    row = {"left_source": "A", "left_id": "1", "right_source": "B", "right_id": "2", "score": "0.5", "side": "below", "match": ""}
    path = tmp_path / "labels.txt"  # er review writes CSV whatever the name, and reads it back as CSV
    path.write_text("left_source,left_id,right_source,right_id,score,side,match,note\nA,1,B,3,0.9,above,1,mine\n", encoding="utf-8")
    assert merge_labels(path, [row]) == (1, 2)
    assert rows(path) == [
        {
            "left_source": "A",
            "left_id": "1",
            "right_source": "B",
            "right_id": "3",
            "score": "0.9",
            "side": "above",
            "match": "1",
            "note": "mine",
        },
        {**row, "note": ""},
    ]
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    assert merge_labels(empty, [row]) == (1, 1)
    bad = tmp_path / "bad.csv"
    bad.write_text("left_source,left_id,right_source,right_id,score,side,match\nA,1,B,3,0.9,above,1,extra\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        merge_labels(bad, [row])
    [problem] = exc.value.problems
    assert problem.where == f"{bad}:2" and problem.message.startswith("cannot read the labels file to extend it: line 2")
    assert "give another --labels file" in problem.fix


def test_the_job_inputs_are_its_data_yaml_and_other_training_labels(tmp_path: Path) -> None:
    from er_framework.cli.review import job_inputs

    labels = tmp_path / "labels.csv"
    labels.write_text("left_source,left_id,right_source,right_id,match\n", encoding="utf-8")
    job = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8")
    job = job.replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/") + "\ntraining: {labels: labels.csv}\n"
    (tmp_path / "job.yaml").write_text(job, encoding="utf-8")
    parsed = parse_job(tmp_path / "job.yaml")
    data = ROOT / "configs" / "data" / "customers"
    others = {data / "a.csv", data / "b.csv", tmp_path / "job.yaml"}
    assert set(job_inputs(parsed, tmp_path / "new.csv")) == others | {labels}
    assert set(job_inputs(parsed, labels)) == others  # extending the training labels is what er review is for
    model = tmp_path / "model.json"
    model.write_text("{}", encoding="utf-8")
    assert model in job_inputs(parsed, labels, {"model": {"origin": str(model)}})
    assert merge_labels(labels, [], job_inputs(parsed, labels)) == (0, 0)
    with pytest.raises(InputError, match="an input of the job"):
        merge_labels(tmp_path / "job.yaml", [], job_inputs(parsed, labels))


def test_two_rounds_of_er_review_propose_different_pairs_beside_the_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = (ROOT / "configs" / "febrl4.yaml").read_text(encoding="utf-8").replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "f4.yaml").write_text(job, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "jobs" / "f4.yaml"), "--out", str(out), "--quiet"]) == 0
    assert main(["review", str(out), "--count", "6"]) == 0
    text = capsys.readouterr().out
    labels = tmp_path / "jobs" / "labels.csv"  # no --labels, no training: labels.csv beside the job file
    first = rows(labels)
    assert len(first) == 6 and "6 new pairs" in text and "training: {labels: labels.csv}" in text
    truth = {(r["a_id"], r["b_id"]) for r in rows(ROOT / "configs" / "data" / "febrl" / "febrl4_truth.csv")}
    for r in first:
        r["match"] = "1" if (r["left_id"], r["right_id"]) in truth else "0"
    with labels.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(first[0]))
        w.writeheader()
        w.writerows(first)
    assert main(["review", str(out), "--count", "6", "--labels", str(labels)]) == 0
    text = capsys.readouterr().out
    second = rows(labels)[6:]
    assert len(second) == 6 and {r["round"] for r in second} == {"2"}
    assert not {(r["left_id"], r["right_id"]) for r in second} & {(r["left_id"], r["right_id"]) for r in first}
    assert "round 2: the model refitted from 6 labelled pairs" in text and "expected F1" in text


@pytest.mark.parametrize("count", ["0", "-3", "many"])
def test_a_bad_count_is_refused(count: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["review", "out", "--count", count])
    assert exc.value.code == 2 and "--count" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--port", "8080"], ["--no-open"]])
def test_browser_options_without_serve_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: list[str]) -> None:
    """--port and --no-open belong to --serve: given alone they are an error naming the flag, not ignored."""
    assert main(["review", str(tmp_path / "out"), *flag]) == 2
    err = capsys.readouterr().err
    assert f"{flag[0]} is an option of the browser page" in err and "add --serve" in err


def _fill(path: Path, word: str) -> None:
    got = rows(path)
    for r in got:
        r["match"] = r["match"] or word
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(got[0]))
        w.writeheader()
        w.writerows(got)


@pytest.mark.parametrize("one_kind", [True, False])
def test_the_round_header_says_what_the_verifier_needs_to_refit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, one_kind: bool
) -> None:
    """fellegi_sunter (labels_fit: refine) refits from a round of non-matches only; a verifier that needs both
    kinds (the base class's answer) keeps the unsupervised fit, and the header says which."""
    if not one_kind:
        monkeypatch.setattr(FellegiSunter, "learns_from_one_kind", Trainable.learns_from_one_kind)
    out = tmp_path / "customers"
    assert main(["run", str(ROOT / "configs" / "customers.yaml"), "--out", str(out), "--quiet"]) == 0
    labels = tmp_path / "labels.csv"
    capsys.readouterr()
    assert main(["review", str(out), "--labels", str(labels), "--count", "6"]) == 0
    kinds = "" if one_kind else " of both kinds"
    assert f"round 1: no labels{kinds} in {labels} yet; the model is the unsupervised fit" in capsys.readouterr().out
    _fill(labels, "0")
    assert main(["review", str(out), "--labels", str(labels), "--count", "6"]) == 0
    got = capsys.readouterr()
    if one_kind:
        assert "round 2: the model refitted from 6 labelled pairs (0 matches, 6 non-matches)" in got.out
        assert "before: the unsupervised fit (no labels before the last round)" in got.out
    else:
        assert f"round 2: no labels of both kinds in {labels} yet; the model is the unsupervised fit" in got.out
        assert "0 matches and 6 non-matches: the verifier learns from labels once both kinds are labelled" in got.err
