"""Active labelling rounds (:func:`er_framework.engine.active.propose`) on Febrl4, labelled by a truth oracle."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from er_framework.capabilities import Trainable
from er_framework.cli.review import merge_labels
from er_framework.config import parse_job
from er_framework.engine import stages
from er_framework.engine.active import Proposals, block_round, block_with_votes, kind_quotas, labelled_so_far, propose
from er_framework.engine.active_select import distance_to_threshold, expected_quality, pair_keys
from er_framework.engine.engine import Engine
from er_framework.engine.log import StageLog
from er_framework.executors import run_job
from er_plugins.fellegi_sunter import FellegiSunter

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "configs" / "febrl4.yaml"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("febrl4") / "out"
    run_job(parse_job(JOB), out)
    return out


def truth() -> set[tuple[str, str]]:
    with (ROOT / "configs" / "data" / "febrl" / "febrl4_truth.csv").open(encoding="utf-8", newline="") as fh:
        return {(r["a_id"], r["b_id"]) for r in csv.DictReader(fh)}


def label_all(path: Path) -> None:
    """Fill every empty match of the labels file from the truth (the oracle a person stands for)."""
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    known = truth()
    for r in rows:
        if r["match"] == "":
            r["match"] = "1" if (r["left_id"], r["right_id"]) in known else "0"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def keys(found: Proposals) -> list[tuple[str, str]]:
    return [(p.left_id, p.right_id) for p in found.rows]


def assert_side_kinds_near(found: Proposals) -> None:
    """A disagreement or near-miss is as near the threshold as the round's farthest uncertain pick."""
    dist = [(p.reason, float(distance_to_threshold(np.array([p.score]), found.threshold, True)[0])) for p in found.rows]
    cutoff = max(d for reason, d in dist if reason == "uncertain")
    assert all(d <= cutoff for reason, d in dist if reason != "uncertain")


def test_rounds_propose_new_pairs_refit_from_all_labels_and_are_deterministic(run: Path, tmp_path: Path) -> None:
    job = parse_job(JOB)
    labels = tmp_path / "labels.csv"
    first = propose(job, run, labels, 12)
    assert first.round == 1 and len(first.rows) == 12
    assert {p.reason for p in first.rows} <= {"uncertain", "disagreement", "near-miss"} and first.rows[0].reason == "uncertain"
    assert_side_kinds_near(first)
    assert first.after.matches == first.before.matches == 0
    again = propose(job, run, labels, 12)
    assert keys(again) == keys(first)  # the same job, labels and seed: the same proposals
    merge_labels(labels, first.label_rows())
    label_all(labels)
    second = propose(job, run, labels, 12)
    assert second.round == 2
    assert not set(keys(second)) & set(keys(first))  # never a labelled pair again
    assert second.after.matches + second.after.non_matches == 12  # the refit learned from every label
    assert second.before.matches == 0  # before: the unsupervised fit (no earlier round)
    assert second.after.model.training is not None and second.after.model.training["matches"] == second.after.matches
    merge_labels(labels, second.label_rows())
    label_all(labels)
    third = propose(job, run, labels, 12)
    assert third.after.matches + third.after.non_matches == 24
    assert third.before.matches + third.before.non_matches == 12  # the labels before the last labelled round
    assert third.weights and not set(keys(third)) & (set(keys(first)) | set(keys(second)))
    for p in third.rows:  # nor a labelled pair the other way round
        assert (p.right_id, p.left_id) not in set(keys(first)) | set(keys(second))
    records = {p.left for p in third.rows} | {p.right for p in third.rows}
    assert len(records) == 2 * len(third.rows)  # no record in two proposals of a round


def label_every(path: Path, word: str) -> None:
    """Fill every empty match of the labels file with ``word`` (a reviewer who says one thing only)."""
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["match"] = r["match"] or word
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_a_round_of_only_matches_is_learned_from(run: Path, tmp_path: Path) -> None:
    """fellegi_sunter with labels_fit: refine (febrl4's default) refits from a round labelled all matches: the
    labels' correction rises, and the round after has the one-kind labels as its *before* fit."""
    job = parse_job(JOB)
    labels = tmp_path / "labels.csv"
    first = propose(job, run, labels, 8)
    assert first.one_kind and first.trainable
    merge_labels(labels, first.label_rows())
    label_every(labels, "1")
    second = propose(job, run, labels, 8)
    assert (second.after.matches, second.after.non_matches) == (8, 0) and second.before.matches == 0
    assert second.notes == []
    training = second.after.model.training
    assert training is not None and (training["matches"], training["non_matches"]) == (8, 0)
    b0 = second.after.model.verifier_state["labels_refinement"]["b0"]
    assert b0 > 0 and "labels_refinement" not in (second.before.model.verifier_state or {})
    assert second.weights and second.after.expected != second.before.expected
    merge_labels(labels, second.label_rows())
    label_every(labels, "1")
    third = propose(job, run, labels, 8)
    assert (third.before.matches, third.before.non_matches) == (8, 0)  # the one-kind round before the last
    assert (third.after.matches, third.after.non_matches) == (16, 0)
    assert not set(keys(third)) & (set(keys(first)) | set(keys(second)))


def test_a_verifier_that_needs_both_kinds_keeps_the_unsupervised_fit(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the capability (the base class's answer) one kind is not learned from, and a note says why."""
    monkeypatch.setattr(FellegiSunter, "learns_from_one_kind", Trainable.learns_from_one_kind)
    job = parse_job(JOB)
    labels = tmp_path / "labels.csv"
    first = propose(job, run, labels, 6)
    assert not first.one_kind
    merge_labels(labels, first.label_rows())
    label_every(labels, "0")
    second = propose(job, run, labels, 6)
    assert (second.after.matches, second.after.non_matches) == (0, 0) and second.after.model.training is None
    assert any("0 matches and 6 non-matches" in n and "once both kinds are labelled" in n for n in second.notes)


def test_near_misses_are_not_candidates_and_scores_are_the_models(run: Path, tmp_path: Path) -> None:
    job = parse_job(JOB)
    found = propose(job, run, tmp_path / "l.csv", 20)
    records, _ = stages.read(job)
    compared, _ = stages.normalize(job, records)
    blocked = block_round(job, compared, StageLog())
    n = len(compared)
    cand = set(pair_keys(blocked.candidates.left, blocked.candidates.right, n).tolist())
    near = [p for p in found.rows if p.reason == "near-miss"]
    assert near and all(int(pair_keys(np.array([p.left]), np.array([p.right]), n)[0]) not in cand for p in near)
    assert all(not p.candidate for p in near) and all(p.candidate for p in found.rows if p.reason != "near-miss")
    assert_side_kinds_near(found)
    for p in found.rows:  # the score printed is the verifier's own (its terms' score)
        assert p.terms and abs(float(p.terms["score"]) - p.score) < 1e-9


def test_the_pairs_blocking_loses_are_named_non_candidates_the_model_matches(tmp_path: Path) -> None:
    """persons.yaml: its candidates hold 197 of the 200 true pairs; the round names the probe's pairs that no
    blocker produced and the model matches, best first: on this sample they are the 3 true pairs lost."""
    job = parse_job(ROOT / "configs" / "persons.yaml")
    out = tmp_path / "out"
    run_job(job, out_dir=out)
    found = propose(job, out, tmp_path / "l.csv", 10)
    missed = found.missed
    assert missed is not None and missed.probed > 0 and missed.matched == len(missed.examples) == 3
    compared, _ = stages.normalize(job, stages.read(job)[0])
    blocked = block_round(job, compared, StageLog())
    n = len(compared)
    cand = set(pair_keys(blocked.candidates.left, blocked.candidates.right, n).tolist())
    scores = [p.score for p in missed.examples]
    assert scores == sorted(scores, reverse=True) and min(scores) >= found.threshold
    assert all(int(pair_keys(np.array([p.left]), np.array([p.right]), n)[0]) not in cand for p in missed.examples)
    with (ROOT / "configs" / "data" / "persons" / "truth.csv").open(encoding="utf-8", newline="") as fh:
        entity = {r["id"]: r["entity"] for r in csv.DictReader(fh)}
    assert all(entity[p.left_id] == entity[p.right_id] for p in missed.examples)


def test_the_expected_quality_is_the_models_over_the_candidates(run: Path, tmp_path: Path) -> None:
    job = parse_job(JOB)
    found = propose(job, run, tmp_path / "l.csv", 4)
    with (run / "pairs.csv").open(encoding="utf-8") as fh:
        kept = sum(1 for _ in fh) - 1
    assert found.after.expected is not None and found.after.expected.kept == kept  # one_to_one keeps all here
    assert found.after.expected == found.before.expected
    assert expected_quality(np.array([1.0, 0.0]), 0.5).f1 == 1.0


def test_block_with_votes_gives_the_block_stages_candidates() -> None:
    job = parse_job(JOB)
    records, _ = stages.read(job)
    compared, _ = stages.normalize(job, records)
    blocked = block_round(job, compared, StageLog())
    engine = Engine(job)
    reference, reports = stages.block(engine, blocked.batch, blocked.exact)
    assert np.array_equal(reference.left, blocked.candidates.left) and np.array_equal(reference.right, blocked.candidates.right)
    assert int(blocked.votes.sum()) == sum(r["candidate_pairs"] for r in reports)
    assert set(blocked.votes.tolist()) == {1, 2}
    again = block_with_votes(engine, blocked.batch, blocked.exact)
    assert np.array_equal(again[1], blocked.votes)


def test_labels_so_far_and_quotas(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_text("left_source,left_id,right_source,right_id,match,round\nA,1,B,2,1,1\nA,3,B,4,,2\nA,5,B,6,no,\n", encoding="utf-8")
    got = labelled_so_far(path)
    assert (got.matches, got.non_matches, got.next_round) == (1, 1, 3)
    assert ("B", "4", "A", "3") in got.keys and got.rounds == {("A", "1", "B", "2"): 1, ("A", "5", "B", "6"): 0}
    assert labelled_so_far(tmp_path / "none.csv").next_round == 1
    assert kind_quotas(20) == {"uncertain": 16, "disagreement": 2, "near-miss": 2}
    assert kind_quotas(10) == {"uncertain": 8, "disagreement": 1, "near-miss": 1}
    assert kind_quotas(3) == {"uncertain": 3, "disagreement": 0, "near-miss": 0}
    assert sum(kind_quotas(7).values()) == 7
