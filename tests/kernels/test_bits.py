"""Grid-cell bit vectors (SEEDS §6): kernels vs naive references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels.bits import (
    HAS_BITWISE_COUNT,
    bits_from_bool,
    bool_from_bits,
    grid_cells,
    grid_cells_reference,
    pack_bits,
    pack_bits_reference,
    popcount,
    popcount_lut,
    popcount_reference,
    row_popcount,
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
    assert hasattr(np, "bitwise_count") == HAS_BITWISE_COUNT
    x = np.array([[0, 1, 2**64 - 1, 0xF0F0]], dtype=np.uint64)
    assert popcount(x).tolist() == [[0, 1, 64, 8]]
