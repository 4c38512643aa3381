"""training: {labels: FILE}: the labelled pairs, read and checked, reach a trainable verifier."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from er_framework.capabilities import Trainable
from er_framework.config import parse_job
from er_framework.engine.engine import Engine
from er_framework.engine.stages.reading import read
from er_framework.engine.stages.training import learns_from_one_kind, read_labels
from er_framework.errors import ConfigError, ErError, InputError
from er_framework.executors import run_job
from er_plugins.fellegi_sunter import FellegiSunter

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "configs" / "data" / "customers"


def job_with(tmp: Path, labels: list[tuple[str, str, str]], extra: str = "", verifier: str = "") -> Path:
    path = tmp / "labels.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        for a, b, m in labels:
            w.writerow(["A", a, "B", b, m])
    text = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8").replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    if verifier:  # more parameters of the verifier (e.g. "labels_fit: em")
        assert text.count("  type: fellegi_sunter") == 1
        text = text.replace("  type: fellegi_sunter", f"  {verifier}\n  type: fellegi_sunter")
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
        ([("A000001", "B000002", ""), ("A000002", "B000003", "")], "no labelled pair \\(2 rows without a label\\)"),
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


def test_dask_takes_a_job_with_training(tmp_path: Path) -> None:
    """Training runs on Dask (tests/executors/test_dask_training.py): nothing refuses it; the only error of a
    run without an output folder is that one (checked before a cluster starts)."""
    labels = [("A000001", "B000002", "1"), ("A000002", "B000003", "0")]
    job = job_with(tmp_path, labels)
    job.write_text(job.read_text(encoding="utf-8") + "executor: {type: dask, local_cluster: {n_workers: 1}}\n", encoding="utf-8")
    with pytest.raises(ErError, match="it needs an output folder") as err:
        run_job(parse_job(job), write=False)
    assert "training" not in str(err.value)


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


# ---------------------------------------------------------------- labels of one kind


def _candidate_keys(res: Any) -> list[tuple[str, str]]:
    """The (A id, B id) of every candidate of a run, in the candidates' order."""
    recs = res.records
    ids, src, names = recs.ids, recs.source, recs.source_names
    out = []
    for a, b in zip(res.candidates.left.tolist(), res.candidates.right.tolist()):
        if names[int(src[a])] != "A":
            a, b = b, a
        out.append((str(ids[a]), str(ids[b])))
    return out


@pytest.fixture(scope="module")
def unsupervised() -> Any:
    """The customers job without labels: its candidates' scores (the constructed cases start from them)."""
    return run_job(parse_job(ROOT / "configs" / "customers.yaml"), write=False)


def test_matches_alone_train_fs_refine_and_link_more(tmp_path: Path, unsupervised: Any) -> None:
    """A lenient reviewer: the ten best-scored candidates below the threshold labelled matches, and nothing else:
    the run trains from them (no refusal), the labels' correction is positive, those pairs score higher and
    more pairs are linked."""
    keys, s = _candidate_keys(unsupervised), np.asarray(unsupervised.candidates.score)
    below = [i for i in np.argsort(-s, kind="stable").tolist() if s[i] < 0.5][:10]
    res = run_job(parse_job(job_with(tmp_path, [(*keys[i], "1") for i in below])), write=False)
    tr = res.report["training"]
    assert (tr["matches"], tr["non_matches"]) == (10, 0)
    assert res.model.verifier_state["labels_refinement"]["b0"] > 0
    after = dict(zip(_candidate_keys(res), np.asarray(res.candidates.score).tolist()))
    assert all(after[keys[i]] > s[i] for i in below)
    assert int((np.asarray(res.candidates.score) >= 0.5).sum()) > int((s >= 0.5).sum())
    # the report's threshold chart reads the same labels (one kind is enough for its curve)
    curve = res.report["threshold_curve"]
    assert (curve["pairs"], curve["true_among_pairs"]) == (10, 10)


def test_non_matches_alone_train_fs_refine_and_link_fewer(tmp_path: Path, unsupervised: Any) -> None:
    """The ten linked candidates of least score labelled non-matches, nothing else: fewer pairs are linked."""
    keys, s = _candidate_keys(unsupervised), np.asarray(unsupervised.candidates.score)
    weak = [i for i in np.argsort(s, kind="stable").tolist() if s[i] >= 0.5][:10]
    res = run_job(parse_job(job_with(tmp_path, [(*keys[i], "0") for i in weak])), write=False)
    assert (res.report["training"]["matches"], res.report["training"]["non_matches"]) == (0, 10)
    assert res.model.verifier_state["labels_refinement"]["b0"] < 0
    after = dict(zip(_candidate_keys(res), np.asarray(res.candidates.score).tolist()))
    assert all(after[keys[i]] < s[i] for i in weak)
    assert int((np.asarray(res.candidates.score) >= 0.5).sum()) < int((s >= 0.5).sum())


@pytest.mark.parametrize("fit", ["em", "labels"])
def test_fs_em_and_labels_refuse_one_kind_with_the_message_of_before(tmp_path: Path, fit: str) -> None:
    labels = [("A000001", "B000002", "1"), ("A000002", "B000003", "1")]
    with pytest.raises(InputError, match="2 matches and 0 non-matches \\(0 rows without a label\\): training needs both") as info:
        run_job(parse_job(job_with(tmp_path, labels, verifier=f"labels_fit: {fit}")), write=False)
    assert "label pairs of both kinds" in info.value.render()


def test_a_verifier_without_the_attribute_refuses_one_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine asks the capability, not the plugin's name: FS refine with the base class's answer refuses."""
    assert Trainable().learns_from_one_kind() is False
    assert learns_from_one_kind(object()) is False
    monkeypatch.setattr(FellegiSunter, "learns_from_one_kind", Trainable.learns_from_one_kind)
    labels = [("A000001", "B000002", "0"), ("A000002", "B000003", "0")]
    with pytest.raises(InputError, match="0 matches and 2 non-matches \\(0 rows without a label\\): training needs both"):
        run_job(parse_job(job_with(tmp_path, labels)), write=False)


def test_read_labels_refuses_one_kind_unless_told(tmp_path: Path) -> None:
    job = parse_job(job_with(tmp_path, [("A000001", "B000002", "1"), ("A000002", "B000003", "yes")]))
    records = read(job)[0]
    with pytest.raises(InputError, match="training needs both"):
        read_labels(job, records)
    got = read_labels(job, records, one_kind=True)
    assert got.match.tolist() == [True, True] and (got.stats["matches"], got.stats["non_matches"]) == (2, 0)
    assert learns_from_one_kind(Engine(job).verifier)
