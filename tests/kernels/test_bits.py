"""Grid-cell bit vectors and random-cell-set blocking (SEEDS §6): kernels vs naive references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels.groups import sorted_unique
from er_framework.kernels.bits import (
    HAS_BITWISE_COUNT,
    TooManyPairs,
    compact_unique,
    bits_from_bool,
    bool_from_bits,
    candidate_probabilities,
    candidate_probabilities_exact,
    cell_overlap,
    cell_overlap_reference,
    cell_sets,
    cell_sets_reference,
    grid_bit_candidates,
    grid_bit_candidates_reference,
    grid_cells,
    grid_cells_reference,
    pack_bits,
    pack_bits_reference,
    popcount,
    popcount_lut,
    popcount_reference,
    row_popcount,
    shares_bucket,
    shares_bucket_reference,
    suggest_sets,
    unpack_bits,
)

# ---------------------------------------------------------------- grid cells


@st.composite
def frames_and_prints(draw: st.DrawFn) -> tuple[dict, list[list[tuple[float, float]]]]:
    width = draw(st.sampled_from([1.0, 10.0, 7.3, 500.0]))
    height = draw(st.sampled_from([1.0, 3.1, 500.0]))
    gx = draw(st.integers(1, 6))
    gy = draw(st.integers(1, 6))
    cw, ch = width / gx, height / gy
    margin = draw(st.sampled_from([0.0, 0.05, 0.25, 0.5, 0.7])) * min(cw, ch)
    # coordinates: anywhere (also outside), exactly on grid lines, just beside them, NaN / inf
    xv = st.one_of(
        st.floats(-0.2 * width, 1.2 * width, allow_nan=False),
        st.integers(0, gx).map(lambda k: k * cw),
        st.tuples(st.integers(0, gx), st.sampled_from([-1e-9, 1e-9, -margin, margin])).map(lambda t: t[0] * cw + t[1]),
        st.sampled_from([math.nan, math.inf, -0.0, width, math.nextafter(width, 0)]),
    )
    yv = st.one_of(
        st.floats(-0.2 * height, 1.2 * height, allow_nan=False),
        st.integers(0, gy).map(lambda k: k * ch),
        st.tuples(st.integers(0, gy), st.sampled_from([-1e-9, 1e-9, -margin, margin])).map(lambda t: t[0] * ch + t[1]),
        st.sampled_from([math.nan, height, math.nextafter(height, 0)]),
    )
    prints = draw(st.lists(st.lists(st.tuples(xv, yv), max_size=8), max_size=6))
    return {"width": width, "height": height, "grid_x": gx, "grid_y": gy, "margin": margin}, prints


def _flatten(prints: list[list[tuple[float, float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs = np.array([x for p in prints for x, _ in p], dtype=np.float64)
    ys = np.array([y for p in prints for _, y in p], dtype=np.float64)
    off = np.zeros(len(prints) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in prints], out=off[1:])
    return xs, ys, off


@settings(max_examples=300, deadline=None)
@given(frames_and_prints())
def test_grid_cells_matches_reference(case: tuple[dict, list[list[tuple[float, float]]]]) -> None:
    kw, prints = case
    cells, invalid = grid_cells(*_flatten(prints), **kw)
    ref, ref_bad = grid_cells_reference(prints, **kw)
    assert cells.tokens.dtype == np.uint64 and cells.indptr.dtype == np.int64
    assert [cells.row(i).tolist() for i in range(len(cells))] == ref
    assert invalid.tolist() == [b for row in ref_bad for b in row]
    n_cells = kw["grid_x"] * kw["grid_y"]
    assert np.all(cells.tokens < n_cells)
    for i in range(len(cells)):
        row = cells.row(i)
        assert np.all(row[1:] > row[:-1])


def test_grid_cells_spill_edges_and_corners() -> None:
    # 4 x 4 grid on a 40 x 40 frame: cells are 10 x 10, margin 1
    kw = dict(width=40.0, height=40.0, grid_x=4, grid_y=4, margin=1.0)
    pts = [
        (15.0, 15.0),  # centre of cell (1, 1) = 5: no spill
        (10.5, 15.0),  # near its left edge: cells 5 and 4
        (19.5, 15.0),  # near its right edge: 5 and 6
        (15.0, 10.2),  # near its top edge: 5 and 1
        (10.5, 10.5),  # near the top-left corner: 5, 4, 1 and the diagonal 0
        (0.5, 0.5),  # corner of the frame: neighbours outside the grid are ignored
        (39.9, 39.9),  # bottom-right cell 15, near the frame edge: nothing outside
        (9.5, 25.0),  # left of the line x = 10, in cell (2, 0) = 8: spills right to 9
    ]
    expected = [[5], [4, 5], [5, 6], [1, 5], [0, 1, 4, 5], [0], [15], [8, 9]]
    cells, invalid = grid_cells(*_flatten([[p] for p in pts]), **kw)
    assert [cells.row(i).tolist() for i in range(len(pts))] == expected
    assert not invalid.any()
    none, _ = grid_cells(*_flatten([[p] for p in pts]), **{**kw, "margin": 0.0})
    assert [none.row(i).tolist() for i in range(len(pts))] == [[5], [5], [5], [5], [5], [0], [15], [8]]


def test_grid_cells_reports_invalid_minutiae_without_clipping() -> None:
    prints = [[(1.0, 1.0), (10.0, 1.0)], [], [(math.nan, 2.0)], [(-0.001, 5.0), (3.0, 9.999)], [(2.0, 10.0)]]
    cells, invalid = grid_cells(*_flatten(prints), width=10.0, height=10.0, grid_x=2, grid_y=2)
    assert invalid.tolist() == [False, True, True, True, False, True]
    assert [cells.row(i).tolist() for i in range(5)] == [[0], [], [], [2], []]  # nothing clipped into the grid


def test_grid_cells_validates_arguments() -> None:
    xs, ys, off = _flatten([[(1.0, 1.0)]])
    with pytest.raises(ValueError, match="width and height"):
        grid_cells(xs, ys, off, width=0.0, height=1.0, grid_x=2, grid_y=2)
    with pytest.raises(ValueError, match="grid_x"):
        grid_cells(xs, ys, off, width=2.0, height=2.0, grid_x=0, grid_y=2)
    with pytest.raises(ValueError, match="offsets"):
        grid_cells(xs, ys, np.array([0, 2]), width=2.0, height=2.0, grid_x=2, grid_y=2)
    empty, invalid = grid_cells([], [], [0], width=1.0, height=1.0, grid_x=3, grid_y=3)
    assert len(empty) == 0 and len(invalid) == 0


# ---------------------------------------------------------------- packing and popcount


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200).flatmap(lambda nb: st.tuples(st.just(nb), st.lists(st.sets(st.integers(0, nb - 1)), max_size=12))))
def test_pack_unpack_round_trip(case: tuple[int, list[set[int]]]) -> None:
    n_bits, sets = case
    ts = TokenSets.from_sets(sets)
    bits = pack_bits(ts, n_bits)
    assert bits.dtype == np.uint64 and bits.shape == (len(sets), max(1, -(-n_bits // 64)))
    assert np.array_equal(bits, pack_bits_reference(sets, n_bits))
    assert unpack_bits(bits, n_bits, chunk_rows=5).equals(ts)
    assert np.array_equal(bits_from_bool(bool_from_bits(bits, n_bits)), bits)
    assert row_popcount(bits).tolist() == [len(s) for s in sets]


def test_pack_bits_rejects_tokens_out_of_range() -> None:
    with pytest.raises(ValueError, match="does not fit in 10 bits"):
        pack_bits(TokenSets.from_sets([[3, 10]]), 10)
    with pytest.raises(ValueError, match="at or above n_bits"):
        unpack_bits(pack_bits(TokenSets.from_sets([[70]]), 128), 64)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=30))
def test_popcount_matches_reference(values: list[int]) -> None:
    arr = np.array(values, dtype=np.uint64)
    ref = popcount_reference(arr)
    assert popcount(arr).tolist() == ref
    assert popcount_lut(arr).tolist() == ref
    assert popcount(arr.reshape(-1, 1)).shape == (len(values), 1)


def test_popcount_uses_numpy_bitwise_count_when_available() -> None:
    assert HAS_BITWISE_COUNT == hasattr(np, "bitwise_count")
    x = np.array([[0, 1, 2**64 - 1, 0xF0F0]], dtype=np.uint64)
    assert popcount(x).tolist() == [[0, 1, 64, 8]]


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


# ---------------------------------------------------------------- probabilities


def test_candidate_probabilities_reproduce_the_seed() -> None:
    same, diff = candidate_probabilities(0.2, 0.8, 3, 1024)
    assert (0.2 * 0.8) ** 3 == pytest.approx(0.004096) and 0.2**6 == pytest.approx(0.000064)
    assert same == pytest.approx(1 - (1 - 0.004096) ** 1024, rel=1e-12)
    assert diff == pytest.approx(1 - (1 - 0.000064) ** 1024, rel=1e-12)
    assert round(same, 3) == 0.985 and round(diff, 3) == 0.063
    assert same == pytest.approx(0.985048, abs=1e-6) and diff == pytest.approx(0.063437, abs=1e-6)
    # 4 or 5 cells per set lower the false positives (and the recall, at the same M)
    s4, d4 = candidate_probabilities(0.2, 0.8, 4, 1024)
    s5, d5 = candidate_probabilities(0.2, 0.8, 5, 1024)
    assert d5 < d4 < diff and s5 < s4 < same


def test_candidate_probabilities_exact_against_direct_sums() -> None:
    from scipy.stats import binom, hypergeom

    n, m = 400, 1024
    k = np.arange(n + 1)
    for c in (3, 4, 5):
        x = np.array([math.comb(int(v), c) for v in k], dtype=float) / math.comb(n, c)
        f = 1 - (1 - x) ** m
        same, diff = candidate_probabilities_exact(0.2, 0.8, c, m, n)
        assert same == pytest.approx(float((binom.pmf(k, n, 0.16) * f).sum()), rel=1e-9)
        assert diff == pytest.approx(float((binom.pmf(k, n, 0.04) * f).sum()), rel=1e-9)
        fs, fd = candidate_probabilities_exact(0.2, 0.8, c, m, n, model="fixed")
        assert fs == pytest.approx(float(f[64]), rel=1e-12)
        assert fd == pytest.approx(float((hypergeom.pmf(k, n, 80, 80) * f).sum()), rel=1e-9)
    # the independence approximation overstates the same-finger rate on a 400-cell grid
    same, diff = candidate_probabilities_exact(0.2, 0.8, 3, 1024, 400)
    assert round(same, 3) == 0.967 and round(diff, 4) == 0.0623


def test_suggest_sets() -> None:
    s = suggest_sets(0.2, 0.8, target_recall=0.985, max_fp_rate=0.07)
    assert s.meets_targets and s.recommended is not None
    assert (s.recommended.cells, s.recommended.sets) == (3, 1024)  # the seed's choice is the cheapest
    by_c = {o.cells: o for o in s.options}
    assert by_c[4].sets == 6407 and by_c[5].sets == 40050
    for o in s.options:
        if o.sets is not None:
            assert o.p_same >= 0.985 and candidate_probabilities(0.2, 0.8, o.cells, o.sets - 1)[0] < 0.985
    assert by_c[3].p_diff > by_c[4].p_diff > by_c[5].p_diff
    strict = suggest_sets(0.2, 0.8, 0.985, 0.01)
    assert strict.meets_targets and strict.recommended.cells == 5
    none = suggest_sets(0.2, 0.8, 0.985, 1e-6)
    assert not none.meets_targets and "best compromise" in none.note
    assert none.recommended is not None and none.recommended.meets_recall
    hopeless = suggest_sets(0.2, 0.8, 0.999, 0.5, c_range=range(8, 10), max_sets=100)
    assert not hopeless.meets_targets and "no cells-per-set value reaches recall" in hopeless.note


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
