"""Pairs.normalized: the packed-key fast path (no scores, indices below 2**32) equals the lexsort reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import Pairs

INDEX = st.one_of(st.integers(0, 12), st.integers(0, 2**32 - 1), st.integers(2**32, 2**40))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(INDEX, INDEX), max_size=40), st.booleans())
def test_normalized_equals_the_lexsort_reference(rows: list[tuple[int, int]], scored: bool) -> None:
    left = np.array([a for a, _ in rows], dtype=np.int64)
    right = np.array([b for _, b in rows], dtype=np.int64)
    score = np.arange(len(rows), dtype=np.float64) if scored else None
    got, want = Pairs(left, right, score).normalized(), Pairs(left, right, score).normalized_reference()
    assert got.left.tolist() == want.left.tolist() and got.right.tolist() == want.right.tolist()
    assert (got.score is None) == (want.score is None)
    if got.score is not None and want.score is not None:
        assert got.score.tolist() == want.score.tolist()
    assert got.is_normalized() and got.left.dtype == np.int64 and got.right.dtype == np.int64


def test_union_of_large_sets() -> None:
    rng = np.random.default_rng(3)
    parts = [Pairs(rng.integers(0, 5000, 20000), rng.integers(0, 5000, 20000)) for _ in range(3)]
    got = Pairs.union(parts)
    want = Pairs(np.concatenate([p.left for p in parts]), np.concatenate([p.right for p in parts])).normalized_reference()
    assert np.array_equal(got.left, want.left) and np.array_equal(got.right, want.right)
    truth = {(min(a, b), max(a, b)) for p in parts for a, b in zip(p.left.tolist(), p.right.tolist()) if a != b}
    assert len(got) == len(truth)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(INDEX, INDEX), max_size=15), max_size=4))
def test_union_equals_the_lexsort_reference(parts_rows: list[list[tuple[int, int]]]) -> None:
    # the packed union (every part in [0, 2**32)) and the concatenating path (a part outside it)
    parts = [Pairs(np.array([a for a, _ in rows], dtype=np.int64), np.array([b for _, b in rows], dtype=np.int64)) for rows in parts_rows]
    got = Pairs.union(parts)
    if not parts:
        assert len(got) == 0
        return
    want = Pairs(np.concatenate([p.left for p in parts]), np.concatenate([p.right for p in parts])).normalized_reference()
    assert got.left.tolist() == want.left.tolist() and got.right.tolist() == want.right.tolist()
    assert got.left.dtype == np.int64 and got.right.dtype == np.int64 and got.score is None
