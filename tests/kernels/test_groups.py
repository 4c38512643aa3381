"""cross_group_pairs against its naive loops."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.kernels.groups import cross_group_pairs, cross_group_pairs_reference


@st.composite
def grouped(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.asarray(draw(st.lists(st.integers(1, 5), min_size=1, max_size=8)), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    members = np.asarray(draw(st.permutations(list(range(int(sizes.sum()))))), dtype=np.int64)
    g = len(sizes)
    pairs = draw(st.lists(st.tuples(st.integers(0, g - 1), st.integers(0, g - 1)), max_size=10))
    left = np.asarray([a for a, _ in pairs], dtype=np.int64)
    right = np.asarray([b for _, b in pairs], dtype=np.int64)
    return left, right, starts, sizes, members


@settings(max_examples=200, deadline=None)
@given(grouped())
def test_cross_group_pairs_matches_reference(case: tuple[np.ndarray, ...]) -> None:
    left, right, starts, sizes, members = case
    x, y, p = cross_group_pairs(left, right, starts, sizes, members)
    rx, ry, rp = cross_group_pairs_reference(left, right, starts, sizes, members)
    assert x.tolist() == rx and y.tolist() == ry and p.tolist() == rp
    assert len(x) == int((sizes[left] * sizes[right]).sum())


def test_cross_group_pairs_example() -> None:
    # groups: {7, 8} and {3}; the pair of groups (0, 1) gives (7, 3), (8, 3)
    x, y, p = cross_group_pairs(np.array([0]), np.array([1]), np.array([0, 2]), np.array([2, 1]), np.array([7, 8, 3]))
    assert list(zip(x.tolist(), y.tolist())) == [(7, 3), (8, 3)] and p.tolist() == [0, 0]
