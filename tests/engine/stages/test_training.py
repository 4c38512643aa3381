"""training: {labels: FILE}: the labelled pairs, read and checked, reach a trainable verifier."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from er_framework.config import parse_job
from er_framework.errors import ConfigError, ErError, InputError
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "configs" / "data" / "customers"


def job_with(tmp: Path, labels: list[tuple[str, str, str]], extra: str = "") -> Path:
    path = tmp / "labels.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        for a, b, m in labels:
            w.writerow(["A", a, "B", b, m])
    text = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8").replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    job = tmp / "job.yaml"
    job.write_text(text + f"\ntraining: {{labels: labels.csv{extra}}}\n", encoding="utf-8")
    return job


def truth_pairs() -> list[tuple[str, str]]:
    with (DATA / "truth.csv").open(encoding="utf-8") as fh:
        return [(r["a_id"], r["b_id"]) for r in csv.DictReader(fh)]


def test_labels_reach_the_verifier_and_the_report(tmp_path: Path) -> None:
    true = truth_pairs()[:60]
    false = [(a, b2) for (a, _), (_, b2) in zip(true[:40], true[1:41])]
    labels = [(a, b, "1") for a, b in true] + [(a, b, "no") for a, b in false] + [(true[0][0], true[1][1], "")]
    res = run_job(parse_job(job_with(tmp_path, labels)), write=False)
    tr = res.report["training"]
    assert (tr["matches"], tr["non_matches"], tr["unlabelled_rows"]) == (60, 40, 1)
    assert res.report["verifier"]["training"]
    assert "training" in [s["stage"] for s in res.report["stages"]]


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ([("A000001", "B999999", "1"), ("A000002", "B000003", "0")], "no record 'B999999' in source 'B'"),
        ([("A000001", "B000002", "perhaps"), ("A000002", "B000003", "0")], "neither a match nor a non-match"),
        ([("A000001", "B000002", "1"), ("A000002", "B000003", "1")], "2 matches and 0 non-matches"),
    ],
)
def test_bad_labels_are_named_with_their_line(tmp_path: Path, labels: list[tuple[str, str, str]], message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        run_job(parse_job(job_with(tmp_path, labels)), write=False)
    assert "labels.csv" in str(info.value)


def test_training_needs_a_trainable_verifier_and_an_existing_file(tmp_path: Path) -> None:
    job = tmp_path / "j.yaml"
    job.write_text(
        f"""
sources: [{{name: d, path: {ROOT / "configs" / "data" / "docs.jsonl"}, fields: [text]}}]
threshold: 0.8
shingler: {{type: char}}
signature: {{type: minhash}}
blockers: [{{type: lsh_bands}}]
verifier: {{type: jaccard}}
training: {{labels: missing.csv}}
output: {{comparisons: true}}
""",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        parse_job(job)
    text = str(info.value)
    assert "does not learn from labelled pairs" in text and "fellegi_sunter" in text
    assert "labels file 'missing.csv' does not exist" in text


def test_dask_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    labels = [("A000001", "B000002", "1"), ("A000002", "B000003", "0")]
    job = job_with(tmp_path, labels)
    job.write_text(job.read_text(encoding="utf-8") + "executor: {type: dask, local_cluster: {n_workers: 1}}\n", encoding="utf-8")
    with pytest.raises(ErError, match="dask executor cannot run it"):
        run_job(parse_job(job), write=False)


def test_a_pair_labelled_both_ways_is_refused_naming_both_lines(tmp_path: Path) -> None:
    labels = [("A000001", "B000002", "1"), ("A000002", "B000003", "0"), ("A000001", "B000002", "no")]
    with pytest.raises(InputError) as info:
        run_job(parse_job(job_with(tmp_path, labels)), write=False)
    [p] = info.value.problems
    assert p.where.endswith("labels.csv:4") and "labelled a non-match here and a match at " in p.message
    assert p.message.endswith("labels.csv:2")
    # the other orientation of the same pair is the same pair
    path = tmp_path / "labels.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("A,A000001,B,B000002,no", "B,B000002,A,A000001,0"), encoding="utf-8")
    with pytest.raises(InputError, match="labelled a non-match here and a match at"):
        run_job(parse_job(tmp_path / "job.yaml"), write=False)


def test_bad_labels_fail_before_blocking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.engine.stages import matching

    def no_blocking(*args: object) -> None:
        raise AssertionError("blocking ran before the labels were checked")

    monkeypatch.setattr(matching, "exact_duplicates", no_blocking)
    monkeypatch.setattr(matching, "block", no_blocking)
    labels = [("A000001", "B000002", "1"), ("A000001", "B000002", "0")]
    with pytest.raises(InputError, match="labelled a non-match here"):
        run_job(parse_job(job_with(tmp_path, labels)), write=False)


@pytest.mark.parametrize("secret", [b"SECRET=xyz123\x00HOME=/root\x00", b"root:xyz123:19000:0:99999:7:::\n"])
def test_a_file_that_is_not_a_labels_file_is_never_quoted(tmp_path: Path, secret: bytes) -> None:
    job = job_with(tmp_path, [])
    (tmp_path / "labels.csv").write_bytes(secret)
    with pytest.raises(InputError) as info:
        run_job(parse_job(job), write=False)
    text = info.value.render()
    assert "is not a labels file" in text and "xyz123" not in text and "root" not in text.replace(str(tmp_path), "")


def test_a_spreadsheet_saved_labels_file_trains(tmp_path: Path) -> None:
    true = truth_pairs()[:12]
    false = [(a, b2) for (a, _), (_, b2) in zip(true[:12], true[1:13])]
    job = job_with(tmp_path, [])
    lines = ["left_source;left_id;right_source;right_id;match"] + [f"A;{a};B;{b};1" for a, b in true] + [f"A;{a};B;{b};0" for a, b in false]
    (tmp_path / "labels.csv").write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode())
    res = run_job(parse_job(job), write=False)
    assert (res.report["training"]["matches"], res.report["training"]["non_matches"]) == (12, len(false))
