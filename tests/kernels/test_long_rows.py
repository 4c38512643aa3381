"""Long rows (documents: thousands of shingles): the per-row and per-pair loops of the kernels against the
vectorized segmented paths and naive Python, on both sides of their switch-over sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels import char_shingles, char_shingles_reference, hashing, jaccard, jaccard_pairs, jaccard_reference
from er_framework.kernels.hashing import sort_rows
from er_framework.kernels.jaccard import intersection_sizes


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 90), max_size=25), st.integers(0, 2**32), st.sampled_from([0, 1, 5, 32, 10**9]))
def test_sort_rows_sorts_every_row_on_its_own(counts: list[int], seed: int, loop_min: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = np.asarray(counts, dtype=np.int64)
    values = rng.integers(0, 50, size=int(sizes.sum()), dtype=np.uint64)  # repeats included
    starts = np.cumsum(sizes) - sizes
    want = np.concatenate([np.sort(values[a : a + k]) for a, k in zip(starts, sizes)]) if len(sizes) else values
    old = hashing.ROW_LOOP_MIN
    try:
        hashing.ROW_LOOP_MIN = loop_min  # every row looped, none, or a mix
        got = sort_rows(values, sizes)
    finally:
        hashing.ROW_LOOP_MIN = old
    assert got.dtype == values.dtype and np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="ab cdé", min_size=0, max_size=400), min_size=1, max_size=8), st.integers(1, 9))
def test_char_shingles_of_long_texts_match_the_reference(texts: list[str], k: int) -> None:
    sets = char_shingles(texts, k)
    assert [sets.row(i).tolist() for i in range(len(texts))] == char_shingles_reference(texts, k)
    multi = char_shingles(texts, k, unique=False)
    assert [sorted(set(multi.row(i).tolist())) for i in range(len(texts))] == char_shingles_reference(texts, k)
    lengths = [len(t) for t in texts]
    assert multi.sizes.tolist() == [max(n - k + 1, 1) if n else 0 for n in lengths]


@pytest.mark.parametrize("loop_min", [0, 96, 10**9])
@pytest.mark.parametrize("workers", [1, 2])
def test_intersections_of_large_and_small_pairs_are_exact_on_both_paths(
    monkeypatch: pytest.MonkeyPatch, loop_min: int, workers: int
) -> None:
    rng = np.random.default_rng(11)
    # sizes from empty to ~1,500 tokens, drawn from a small universe so that pairs share many tokens
    sets = [rng.integers(0, 3000, size=int(rng.choice([0, 1, 5, 40, 300, 1500]))) for _ in range(60)]
    ts = TokenSets.from_sets(sets)
    left = rng.integers(0, 60, size=400)
    right = rng.integers(0, 60, size=400)
    ref = jaccard_reference(ts, left, right)
    want = [len(set(ts.row(a).tolist()) & set(ts.row(b).tolist())) for a, b in zip(left, right)]
    monkeypatch.setattr(jaccard, "PAIR_LOOP_MIN", loop_min)
    for batch in (1, 999, 1 << 22):
        got = intersection_sizes(ts, left, right, max_tokens_per_batch=batch, workers=workers)
        assert got.tolist() == want
        assert jaccard_pairs(ts, left, right, max_tokens_per_batch=batch, workers=workers).tolist() == ref


def test_a_token_equal_to_the_largest_uint64_is_counted() -> None:
    top = np.iinfo(np.uint64).max
    a = list(range(200)) + [top]
    ts = TokenSets(np.array([0, 201, 402, 403], dtype=np.int64), np.array(a + list(range(100, 300)) + [top] + [top], dtype=np.uint64))
    for loop_min in (0, 10**9):
        old = jaccard.PAIR_LOOP_MIN
        try:
            jaccard.PAIR_LOOP_MIN = loop_min
            got = intersection_sizes(ts, np.array([0, 0, 1]), np.array([1, 2, 2]))
        finally:
            jaccard.PAIR_LOOP_MIN = old
        assert got.tolist() == [101, 1, 1]
