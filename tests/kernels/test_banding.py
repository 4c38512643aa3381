"""LSH banding (MMDS 3.4) and the grouping kernels it is built on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels import (
    band_keys,
    bucket_candidates,
    bucket_candidates_reference,
    candidate_probability,
    choose_bands,
    false_positive_area,
    group_sorted,
    hash_params,
    minhash_signatures,
    mix64_reference,
    pack_pairs,
    pairs_in_groups,
    threshold_estimate,
    unique_pairs,
    unpack_pairs,
)
from er_framework.kernels.groups import pairs_in_groups_reference, sort_segments

# ---------------------------------------------------------------- groups


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=40))
def test_group_sorted(keys: list[int]) -> None:
    arr = np.array(keys, dtype=np.int16)
    order, starts, sizes = group_sorted(arr)
    assert order.dtype == starts.dtype == sizes.dtype == np.int64
    assert np.array_equal(order, np.argsort(arr, kind="stable"))
    distinct = sorted(set(keys))
    assert len(starts) == len(distinct) and int(sizes.sum()) == len(keys)
    for g, key in enumerate(distinct):
        members = order[starts[g] : starts[g] + sizes[g]]
        assert all(keys[m] == key for m in members) and len(members) == keys.count(key)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=30), st.data())
def test_pairs_in_groups_matches_reference(members: list[int], data: st.DataObject) -> None:
    n = len(members)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    bounds = [0, *cuts, n]
    starts = np.array(bounds[:-1], dtype=np.int64)
    sizes = np.diff(np.array(bounds, dtype=np.int64)).astype(np.int64)
    mem = np.array(members, dtype=np.int64)
    left, right = pairs_in_groups(mem, starts, sizes)
    ref_l, ref_r = pairs_in_groups_reference(mem, starts, sizes)
    assert left.dtype == np.int64 and right.dtype == np.int64
    assert sorted(zip(left.tolist(), right.tolist())) == sorted(zip(ref_l, ref_r))
    assert np.all(left <= right)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0, 1, 5, 2**63, 2**64 - 1]), max_size=9), max_size=8))
def test_sort_segments_small(segments: list[list[int]]) -> None:
    """Segmented sort, including values equal to the padding value 2**64 - 1."""
    values = np.array([v for seg in segments for v in seg], dtype=np.uint64)
    lengths = np.array([len(seg) for seg in segments], dtype=np.int64)
    got = sort_segments(values, lengths)
    assert got.tolist() == [v for seg in segments for v in sorted(seg)]


def test_sort_segments_mixed_lengths() -> None:
    rng = np.random.default_rng(8)
    lengths = rng.choice([0, 1, 2, 3, 17, 64, 65, 1000, 5000], size=60).astype(np.int64)
    values = rng.integers(0, 2**64, size=int(lengths.sum()), dtype=np.uint64, endpoint=False)
    values[::7] = np.uint64(2**64 - 1)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    expected = values[np.lexsort((values, rows))]
    assert np.array_equal(sort_segments(values, lengths), expected)
    assert np.array_equal(sort_segments(values[:0], lengths[:0]), values[:0])


def test_pack_unpack_unique() -> None:
    left = np.array([3, 1, 3, 0, 2**32 - 1], dtype=np.int64)
    right = np.array([4, 2, 4, 9, 5], dtype=np.int64)
    keys = pack_pairs(left, right)
    assert keys.dtype == np.uint64
    lo, hi = unpack_pairs(keys)
    assert lo.tolist() == left.tolist() and hi.tolist() == right.tolist()
    lo, hi = unique_pairs(left, right)
    assert list(zip(lo.tolist(), hi.tolist())) == [(0, 9), (1, 2), (3, 4), (2**32 - 1, 5)]
    with pytest.raises(ValueError):
        pack_pairs(np.array([2**32]), np.array([0]))
    with pytest.raises(ValueError):
        pack_pairs(np.array([0]), np.array([-1]))


# ---------------------------------------------------------------- S-curve


def test_candidate_probability_shapes_and_threshold() -> None:
    assert isinstance(candidate_probability(0.5, 20, 5), float)
    s = np.linspace(0, 1, 11)
    p = candidate_probability(s, 20, 5)
    assert p.shape == (11,) and p[0] == 0.0 and p[-1] == 1.0 and np.all(np.diff(p) > 0)
    assert threshold_estimate(20, 5) == pytest.approx((1 / 20) ** (1 / 5))
    assert threshold_estimate(20, 5) == pytest.approx(0.5493, abs=1e-4)


def test_false_positive_area_closed_form() -> None:
    # b = 1: integral_0^t s**r ds = t**(r+1)/(r+1);  r = 1, b = 2: t**2 - t**3/3
    assert false_positive_area(0.8, 1, 3) == pytest.approx(0.8**4 / 4, rel=1e-9)
    assert false_positive_area(0.7, 2, 1) == pytest.approx(0.7**2 - 0.7**3 / 3, rel=1e-9)
    assert false_positive_area(0.5, np.array([1, 2]), 1).shape == (2,)


@pytest.mark.parametrize("threshold,num_perm", [(0.8, 128), (0.5, 128), (0.9, 64), (0.7, 200), (0.3, 100)])
def test_choose_bands_is_feasible_and_optimal(threshold: float, num_perm: int) -> None:
    b, r = choose_bands(threshold, num_perm)
    assert b * r <= num_perm
    assert candidate_probability(threshold, b, r) >= 0.95
    best = false_positive_area(threshold, b, r)
    for rr in range(1, num_perm + 1):  # brute force over every feasible (b, r)
        for bb in range(1, num_perm // rr + 1):
            if candidate_probability(threshold, bb, rr) >= 0.95:
                assert false_positive_area(threshold, bb, rr) >= best - 1e-12


def test_choose_bands_infeasible_names_needed_num_perm() -> None:
    with pytest.raises(ValueError, match=r"num_perm >= \d+"):
        choose_bands(0.1, 8)
    with pytest.raises(ValueError):
        choose_bands(1.5, 8)


# ---------------------------------------------------------------- band keys


def test_band_keys_formula_and_columns_used() -> None:
    rng = np.random.default_rng(1)
    sig = rng.integers(0, 2**32 - 5, size=(6, 13), dtype=np.uint32)
    keys = band_keys(sig, 4, 3)
    assert keys.dtype == np.uint64 and keys.shape == (6, 4)
    b = 0x100000001B3
    for i in range(6):
        for j in range(4):
            h = 0
            for v in sig[i, 3 * j : 3 * j + 3]:
                h = mix64_reference((h * b + int(v)) & ((1 << 64) - 1))
            assert int(keys[i, j]) == h
    sig2 = sig.copy()
    sig2[:, 12] = 7  # the unused 13th column does not matter
    assert np.array_equal(band_keys(sig2, 4, 3), keys)
    with pytest.raises(ValueError):
        band_keys(sig, 5, 3)


# ---------------------------------------------------------------- buckets


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 12),
    st.integers(1, 4),
    st.integers(0, 2**20),
    st.one_of(st.none(), st.integers(1, 5)),
)
def test_bucket_candidates_matches_reference(n: int, nb: int, seed: int, max_size: int | None) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 3, size=(n, nb)).astype(np.uint64)  # many collisions
    ids = rng.permutation(100)[:n].astype(np.int64)
    left, right, stats = bucket_candidates(keys, ids, max_bucket_size=max_size)
    rl, rr, rstats = bucket_candidates_reference(keys, ids, max_bucket_size=max_size)
    assert left.tolist() == rl and right.tolist() == rr
    assert stats == rstats
    assert np.all(left < right)


def test_bands_never_collide() -> None:
    keys = np.array([[10, 20], [30, 10], [20, 40]], dtype=np.uint64)
    left, right, stats = bucket_candidates(keys, np.array([0, 1, 2], dtype=np.int64))
    assert len(left) == 0 and stats["buckets"] == 0
    keys[2, 1] = 10  # now records 1 and 2 share band 1's key
    left, right, _ = bucket_candidates(keys, np.array([0, 1, 2], dtype=np.int64))
    assert list(zip(left.tolist(), right.tolist())) == [(1, 2)]


def test_oversized_buckets_are_skipped_and_counted() -> None:
    keys = np.array([[1], [1], [1], [1], [2], [2]], dtype=np.uint64)
    ids = np.arange(6, dtype=np.int64)
    left, right, stats = bucket_candidates(keys, ids, max_bucket_size=3)
    assert list(zip(left.tolist(), right.tolist())) == [(4, 5)]
    assert stats == {
        "buckets": 2,
        "largest_bucket": 4,
        "oversized_buckets": 1,
        "pairs_skipped": 6,
        "raw_pairs": 1,
    }
    empty = bucket_candidates(np.zeros((0, 3), dtype=np.uint64), np.zeros(0, dtype=np.int64))
    assert len(empty[0]) == 0 and empty[2]["largest_bucket"] == 0


def test_s_curve_statistics() -> None:
    """Measured candidate rate follows 1 - (1 - s**5)**20 within 4 binomial SE (K=100)."""
    rng = np.random.default_rng(77)
    union, per_s, bands, rows = 100, 400, 20, 5
    s_values = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    sets: list[np.ndarray] = []
    for s in s_values:  # exact Jaccard s: |A∩B| = s * union, |A∪B| = union
        inter = round(s * union)
        own = (union - inter) // 2
        assert (union - inter) % 2 == 0
        toks = rng.integers(0, 2**64, size=(per_s, union), dtype=np.uint64, endpoint=False)
        for row in toks:
            sets.append(row[: inter + own])
            sets.append(np.concatenate([row[:inter], row[inter + own :]]))
    ts = TokenSets.from_sets(sets)
    sig = minhash_signatures(ts, *hash_params(100, seed=5))
    n = len(sets)
    left, right, _ = bucket_candidates(band_keys(sig, bands, rows), np.arange(n, dtype=np.int64))
    found = np.isin(pack_pairs(np.arange(0, n, 2), np.arange(1, n, 2)), pack_pairs(left, right)).reshape(len(s_values), per_s)
    for s, hits in zip(s_values, found):
        p = candidate_probability(s, bands, rows)
        se = math.sqrt(p * (1 - p) / per_s)
        assert abs(hits.mean() - p) <= 4 * se + 1e-12, (s, hits.mean(), p)


def test_band_keys_are_the_same_in_any_blocks_of_records(monkeypatch) -> None:
    """band_keys computes BAND_KEY_ROWS records per step: the same keys as one step."""
    from er_framework.kernels import banding

    rng = np.random.default_rng(9)
    sig = rng.integers(0, 2**32, (1000, 40), dtype=np.uint64).astype(np.uint32)
    whole = banding.band_keys(sig, 8, 5)
    for step in (1, 7, 999, 1000, 5000):
        monkeypatch.setattr(banding, "BAND_KEY_ROWS", step)
        assert np.array_equal(banding.band_keys(sig, 8, 5), whole)


@pytest.mark.parametrize("threshold", [1e-6, 1e-12, 1e-300, 5e-324])
def test_a_threshold_too_low_for_banding_is_a_message(threshold: float) -> None:
    with pytest.raises(ValueError, match="too low for LSH banding"):
        choose_bands(threshold, 128)


def test_the_needed_signature_is_still_named_when_one_exists() -> None:
    with pytest.raises(ValueError, match=r"use num_perm >= \d+"):
        choose_bands(0.5, 4, 0.99)
