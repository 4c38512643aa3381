"""Exact Jaccard of token-set pairs against Python sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels import jaccard_pairs, jaccard_reference

SETS = st.lists(st.lists(st.integers(0, 12), max_size=10), min_size=1, max_size=8)


@settings(max_examples=80, deadline=None)
@given(SETS, st.data(), st.integers(1, 30))
def test_fast_matches_reference(sets: list[list[int]], data: st.DataObject, batch: int) -> None:
    ts = TokenSets.from_sets(sets)
    idx = st.integers(0, len(sets) - 1)
    pairs = data.draw(st.lists(st.tuples(idx, idx), max_size=20))
    left = np.array([p[0] for p in pairs], dtype=np.int64)
    right = np.array([p[1] for p in pairs], dtype=np.int64)
    ref = jaccard_reference(ts, left, right)
    got = jaccard_pairs(ts, left, right)
    assert got.dtype == np.float64
    assert got.tolist() == ref  # identical arithmetic: inter / union in float64
    assert jaccard_pairs(ts, left, right, max_tokens_per_batch=batch).tolist() == ref


def test_batching_invariance_large() -> None:
    rng = np.random.default_rng(4)
    sets = [rng.integers(0, 60, size=int(rng.integers(0, 40))) for _ in range(80)]
    ts = TokenSets.from_sets(sets)
    left = rng.integers(0, 80, size=500)
    right = rng.integers(0, 80, size=500)
    full = jaccard_pairs(ts, left, right)
    assert full.tolist() == jaccard_reference(ts, left, right)
    for batch in (1, 7, 64, 1000):
        assert np.array_equal(jaccard_pairs(ts, left, right, max_tokens_per_batch=batch), full)


def test_empty_sets() -> None:
    ts = TokenSets.from_sets([[], [], [1, 2]])
    got = jaccard_pairs(ts, np.array([0, 0, 2]), np.array([1, 2, 2]))
    assert got.tolist() == [0.0, 0.0, 1.0]  # two empty sets: 0.0 (no evidence of a match)
    assert len(jaccard_pairs(ts, np.zeros(0, np.int64), np.zeros(0, np.int64))) == 0


def test_uint32_tokens() -> None:
    ts = TokenSets.from_sets([[1, 2, 3], [2, 3, 4, 5]], dtype=np.uint32)
    assert jaccard_pairs(ts, np.array([0]), np.array([1])).tolist() == [0.4]
