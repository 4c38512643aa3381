"""Random-cell-set blocking (SEEDS §6): cell sets, candidates and cell overlap, kernels vs naive references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels.bits import bits_from_bool, pack_bits
from er_framework.kernels.bits_candidates import (
    TooManyPairs,
    cell_overlap,
    cell_overlap_reference,
    cell_sets,
    cell_sets_reference,
    compact_unique,
    grid_bit_candidates,
    grid_bit_candidates_reference,
    shares_bucket,
    shares_bucket_reference,
)
from er_framework.kernels.groups import sorted_unique

# ---------------------------------------------------------------- cell sets


def test_cell_sets_match_reference_and_are_distinct() -> None:
    for m, c, n, seed in [(300, 3, 400, 0), (50, 5, 5, 7), (40, 1, 1, 3), (100, 4, 17, 2**63 + 5), (0, 3, 10, 1)]:
        sets = cell_sets(m, c, n, seed)
        assert sets.dtype == np.int64 and sets.shape == (m, c)
        assert sets.tolist() == cell_sets_reference(m, c, n, seed)
        if m:
            assert np.all(np.diff(sets, axis=1) > 0) and sets.min() >= 0 and sets.max() < n
    with pytest.raises(ValueError, match="distinct cells"):
        cell_sets(3, 5, 4, 0)


def test_cell_sets_are_pinned_forever() -> None:
    """Same seed -> same sets, on every machine and numpy version (splitmix64 + Floyd)."""
    assert cell_sets(4, 3, 400, 0).tolist() == cell_sets_reference(4, 3, 400, 0)
    assert cell_sets(4, 3, 400, 0).tolist() == PINNED_SETS
    assert not np.array_equal(cell_sets(64, 3, 400, 1), cell_sets(64, 3, 400, 2))


PINNED_SETS = [[21, 37, 49], [124, 235, 350], [155, 257, 360], [4, 69, 91]]


def test_cell_sets_are_uniform() -> None:
    """Each cell appears in a set with probability c / N; each pair of cells with c(c-1) / (N(N-1))."""
    n, c, m = 20, 3, 40000
    sets = cell_sets(m, c, n, 5)
    freq = np.bincount(sets.ravel(), minlength=n) / m
    assert np.allclose(freq, c / n, atol=0.006)  # sd ~ 0.0018
    pair = np.bincount((sets[:, 0] * n + sets[:, 1]), minlength=n * n).reshape(n, n)
    # the smallest two cells of a uniform 3-subset {a < b}: P = (n - 1 - b) / C(n, 3)
    b = np.arange(n)
    expect = np.triu(np.broadcast_to((n - 1 - b) / math.comb(n, 3), (n, n)), 1) * m
    mask = expect > 50
    assert np.all(np.abs(pair[mask] - expect[mask]) < 5 * np.sqrt(expect[mask]))


# ---------------------------------------------------------------- candidates


@st.composite
def populations(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
    n = draw(st.integers(0, 40))
    n_bits = draw(st.integers(1, 140))
    density = draw(st.sampled_from([0.1, 0.4, 0.8]))
    seed = draw(st.integers(0, 2**32))
    rng = np.random.default_rng(seed)
    bits = bits_from_bool(rng.random((n, n_bits)) < density)
    ids = rng.permutation(3 * n + 5)[:n].astype(np.int64)
    c = draw(st.integers(1, min(3, n_bits)))
    sets = cell_sets(draw(st.integers(0, 30)), c, n_bits, seed)
    cap = draw(st.one_of(st.none(), st.integers(2, 12)))
    return bits, ids, sets, cap


@settings(max_examples=150, deadline=None)
@given(populations(), st.sampled_from([(64, 1 << 24), (3, 5), (1, 1)]))
def test_grid_bit_candidates_matches_reference(case: tuple, chunks: tuple[int, int]) -> None:
    bits, ids, sets, cap = case
    left, right, stats = grid_bit_candidates(bits, ids, sets, cap, chunk_sets=chunks[0], pair_budget=chunks[1])
    ref_l, ref_r, ref_stats = grid_bit_candidates_reference(bits, ids, sets, cap)
    assert left.dtype == np.int64 and right.dtype == np.int64
    assert left.tolist() == ref_l and right.tolist() == ref_r
    assert stats == ref_stats
    assert np.all(left < right)
    # count_only: the same stats, no pairs
    cl, cr, cstats = grid_bit_candidates(bits, ids, sets, cap, count_only=True)
    assert len(cl) == len(cr) == 0 and cstats == ref_stats
    assert cstats["raw_pairs"] >= len(left)


def test_grid_bit_candidates_oversized_buckets_and_limits() -> None:
    # 6 prints; cells 0-2 held by prints 0-4 (a bucket of 5), cells 3-5 by prints 4, 5
    m = np.zeros((6, 8), dtype=bool)
    m[:5, :3] = True
    m[4:, 3:6] = True
    bits = bits_from_bool(m)
    sets = np.array([[0, 1, 2], [3, 4, 5], [1, 6, 7]])
    ids = np.arange(6)
    left, right, stats = grid_bit_candidates(bits, ids, sets, max_bucket_size=4)
    assert list(zip(left.tolist(), right.tolist())) == [(4, 5)]
    assert stats == {"buckets": 2, "largest_bucket": 5, "oversized_buckets": 1, "pairs_skipped": 10, "raw_pairs": 1}
    _, _, full = grid_bit_candidates(bits, ids, sets)
    assert full["raw_pairs"] == 11
    with pytest.raises(TooManyPairs) as exc:
        grid_bit_candidates(bits, ids, sets, max_raw_pairs=10)
    assert exc.value.raw_pairs == 11
    with pytest.raises(ValueError, match="ids must lie"):
        grid_bit_candidates(bits, ids - 1, sets)
    with pytest.raises(ValueError, match="set cells"):
        grid_bit_candidates(bits, ids, np.array([[0, 64]]))


@settings(max_examples=60, deadline=None)
@given(populations())
def test_shares_bucket_matches_reference_and_grid_bit_candidates(case: tuple) -> None:
    bits, _, sets, _ = case
    n = len(bits)
    if n < 2 or len(sets) == 0:
        return
    a, b = np.triu_indices(n, 1)
    hit = shares_bucket(bits, a, b, sets, chunk_pairs=7)
    assert hit.tolist() == shares_bucket_reference(bits, a.tolist(), b.tolist(), sets)
    left, right, _ = grid_bit_candidates(bits, np.arange(n), sets)
    assert set(zip(a[hit].tolist(), b[hit].tolist())) == set(zip(left.tolist(), right.tolist()))
    counts = shares_bucket(bits, a, b, sets, return_counts=True)
    assert np.array_equal(counts > 0, hit) and counts.max() <= len(sets)


def testsorted_unique_and_in_place_compaction() -> None:
    rng = np.random.default_rng(4)
    for size in (0, 1, 2, 50, 1000):
        a = rng.integers(0, 30, size).astype(np.uint64)
        assert sorted_unique(a).tolist() == sorted(set(a.tolist()))
        k = np.sort(a)
        w = compact_unique(k, block=7)
        assert k[:w].tolist() == sorted(set(a.tolist()))


# ---------------------------------------------------------------- overlap


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sets(st.integers(0, 129)), st.sets(st.integers(0, 129))), max_size=15))
def test_cell_overlap_matches_reference(pairs: list[tuple[set[int], set[int]]]) -> None:
    sets = [s for p in pairs for s in p]
    bits = pack_bits(TokenSets.from_sets(sets), 130)
    left = np.arange(0, 2 * len(pairs), 2)
    right = left + 1
    for kind in ("jaccard", "agreement", "overlap"):
        got = cell_overlap(bits, left, right, kind, chunk_pairs=4)
        ref = cell_overlap_reference([p[0] for p in pairs], [p[1] for p in pairs], kind)
        assert np.allclose(got, ref, rtol=0, atol=1e-12)
        assert np.allclose(cell_overlap(bits, right, left, kind), got)
    j = cell_overlap(bits, left, right, "jaccard")
    assert np.allclose(cell_overlap(bits, left, right, "agreement"), 2 * j / (1 + j))


def test_cell_overlap_empty_prints_score_zero() -> None:
    bits = pack_bits(TokenSets.from_sets([[], [], [1, 2]]), 10)
    for kind in ("jaccard", "agreement", "overlap"):
        assert cell_overlap(bits, np.array([0, 0]), np.array([1, 2]), kind).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="kind"):
        cell_overlap(bits, np.array([0]), np.array([1]), "cosine")  # type: ignore[arg-type]
