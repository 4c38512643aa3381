"""The selection kernels of active labelling, against naive computations."""

from __future__ import annotations

import itertools
import math

import numpy as np

from er_framework.engine.active_select import (
    LABELS_CORRECTION,
    disagreements,
    distance_to_threshold,
    expected_quality,
    pair_keys,
    pick_spread,
    pick_uncertain,
    probe_pairs,
    tie_keys,
    weight_changes,
)


def test_expected_quality_against_a_naive_sum() -> None:
    rng = np.random.default_rng(3)
    p = rng.random(200) ** 3
    got = expected_quality(p, 0.5)
    kept = [x for x in p if x >= 0.5]
    tp = sum(kept)
    matches = sum(p)
    assert got.kept == len(kept)
    assert math.isclose(got.precision, tp / len(kept))
    assert math.isclose(got.recall, tp / matches)
    assert math.isclose(got.f1, 2 * (tp / len(kept)) * (tp / matches) / (tp / len(kept) + tp / matches))
    assert expected_quality(np.zeros(3), 0.5).f1 == 0.0


def test_distance_is_in_bits_for_probabilities() -> None:
    d = distance_to_threshold(np.array([0.5, 0.8, 0.2, 1.0]), 0.5, probability=True)
    assert np.allclose(d[:3], [0.0, 2.0, 2.0])
    assert d[3] > 40  # clipped, finite
    assert np.allclose(distance_to_threshold(np.array([0.3, 0.9]), 0.5, probability=False), [0.2, 0.4])


def test_pick_uncertain_alternates_sides_one_per_pattern_and_record() -> None:
    distance = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    above = np.array([True, True, False, False, True, False])
    left = np.array([0, 2, 4, 0, 8, 10])
    right = np.array([1, 3, 5, 7, 9, 11])
    patterns = ["a", "a", "b", "c", "d", "e"]
    used: set[int] = set()
    got = pick_uncertain(distance, above, tie_keys(np.arange(6), 1), left, right, 4, used, patterns)
    assert got == [0, 2, 4, 5]  # 1 repeats pattern a, 3 repeats record 0
    assert used == {0, 1, 4, 5, 8, 9, 10, 11}


def test_pick_spread_skips_used_records() -> None:
    used = {3}
    assert pick_spread(np.array([0, 1, 2]), np.array([3, 1, 1]), np.array([4, 2, 5]), 5, used) == [1]


def test_disagreement_kinds() -> None:
    scores = np.array([0.9, 0.8, 0.1, 0.2, 0.95])
    keep = scores >= 0.5
    votes = np.array([1, 2, 2, 1, 1])
    same = np.array([True, False, True, False, True])
    kinds = dict(disagreements(scores, keep, votes, 2, same, tie_keys(np.arange(5), 0)))
    assert kinds["only 1 of 2 blockers produced it; the model calls it a match"].tolist() == [0, 4]  # lowest score first
    assert kinds["all 2 blockers produced it; the model rejects it"].tolist() == [2]
    assert kinds["the model calls it a match; the clusterer put its records apart"].tolist() == [1]
    assert kinds["the model rejects it; the clusterer put its records together"].tolist() == [2]
    assert len(disagreements(scores, keep, None, 1, None, tie_keys(np.arange(5), 0))) == 0


def test_probe_pairs_against_a_naive_count() -> None:
    fields = {
        "name": ["ann lee", "ann lee", "bob ray", "bo ray", None, "zed"],
        "city": ["x", "y", "x", "y", "x", "zed"],
    }
    source = np.array([0, 1, 0, 1, 0, 1])
    left, right, score = probe_pairs(fields, source, cross_source_only=True, seed=0, max_df=3)
    naive: dict[tuple[int, int], float] = {}
    holders: dict[tuple[str, str], set[int]] = {}
    for name, col in fields.items():
        for r, v in enumerate(col):
            if v is None:
                continue
            words = v.split()
            for t in {v, *(words if len(words) > 1 else [])}:
                holders.setdefault((name, t), set()).add(r)
    for rows in holders.values():
        if 2 <= len(rows) <= 3:
            for a, b in itertools.combinations(sorted(rows), 2):
                if source[a] != source[b]:
                    naive[(a, b)] = naive.get((a, b), 0.0) + math.log2(6 / len(rows))
    got = {(int(a), int(b)): float(s) for a, b, s in zip(left, right, score)}
    assert got.keys() == naive.keys()
    assert all(math.isclose(got[k], naive[k]) for k in naive)
    assert list(score) == sorted(score, reverse=True)


def test_weight_changes_largest_first() -> None:
    before = {"fields": {"a": {"levels": ["=", "<"], "m": [0.8, 0.2], "u": [0.1, 0.9]}}}
    after = {"fields": {"a": {"levels": ["=", "<"], "m": [0.9, 0.1], "u": [0.05, 0.95]}}}
    got = weight_changes(before, after)
    assert [(c.field, c.level) for c in got] == [("a", "="), ("a", "<")]  # +1.17 bits, then -1.08
    assert math.isclose(got[1].change, math.log2(0.1 / 0.95) - math.log2(0.2 / 0.9))
    assert weight_changes(None, after) == []


def test_weight_changes_of_a_refined_fit_show_beta_and_the_labels_correction() -> None:
    before = {"fields": {"a": {"levels": ["=", "<"], "m": [0.8, 0.2], "u": [0.1, 0.9]}}}
    after = {**before, "labels_refinement": {"b0": -1.5, "beta": {"a": 0.5}}}
    got = {(c.field, c.level): c for c in weight_changes(before, after)}
    assert set(got) == {("a", "="), ("a", "<"), LABELS_CORRECTION}
    assert math.isclose(got[("a", "=")].after, 0.5 * math.log2(8.0)) and math.isclose(got[("a", "=")].before, 3.0)
    assert got[LABELS_CORRECTION].before == 0.0 and got[LABELS_CORRECTION].after == -1.5


def test_pair_keys_are_unordered() -> None:
    assert pair_keys(np.array([3]), np.array([1]), 10)[0] == pair_keys(np.array([1]), np.array([3]), 10)[0] == 13
