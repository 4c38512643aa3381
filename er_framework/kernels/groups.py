"""Grouping and pair-enumeration kernels (sort-based, fully vectorized).

Bucketing in LSH (MMDS ch. 3.4) and field-hash blocking both reduce to:
sort the keys, find runs of equal keys ("buckets"), and enumerate all
unordered pairs inside each run. A bucket of ``m`` members yields
``m (m - 1) / 2`` pairs. Everything here is whole-array numpy: there is no
Python loop per group, per member or per pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "cross_group_pairs",
    "cross_group_pairs_reference",
    "group_sorted",
    "pack_pairs",
    "pairs_in_groups",
    "pairs_in_groups_reference",
    "sort_segments",
    "unique_pairs",
    "unpack_pairs",
]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


def _run_starts(*sorted_columns: npt.NDArray[np.generic]) -> tuple[Int64Array, Int64Array]:
    """Start offsets and sizes of runs of equal rows in already-sorted columns.

    Row ``i`` starts a new run when any column differs from row ``i - 1``.
    """
    n = len(sorted_columns[0]) if sorted_columns else 0
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy()
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for col in sorted_columns:  # one pass per key column, not per row
        new[1:] |= col[1:] != col[:-1]
    starts = np.flatnonzero(new).astype(np.int64)
    sizes = np.diff(np.append(starts, np.int64(n))).astype(np.int64)
    return starts, sizes


def sort_segments(values: npt.NDArray[Any], lengths: Int64Array) -> npt.NDArray[Any]:
    """Sort every segment of ``values`` ascending (segments given by ``lengths``).

    Segmented sort without a comparison on the segment id: segments are bucketed
    by length class ``ceil(log2 L)`` (at most 64 classes, one step each), copied
    into a ``(segments, 2**class)`` matrix padded with the dtype's maximum, sorted
    along axis 1 (numpy's fast single-key sort) and copied back. The first ``L``
    entries of a sorted padded row are exactly the segment's values in order
    (padding is >= every value), so the result is exact. Extra memory is at most
    twice the class's elements. Much faster than ``np.lexsort((values, segment))``.
    """
    out = np.array(values, copy=True)
    lens = np.asarray(lengths, dtype=np.int64)
    if len(out) == 0 or len(lens) == 0:
        return out
    starts = np.cumsum(lens) - lens
    multi = lens >= 2
    if not multi.any():
        return out
    cls = np.zeros(len(lens), dtype=np.int64)
    cls[multi] = np.ceil(np.log2(lens[multi])).astype(np.int64)
    cls[multi & (np.left_shift(1, cls) < lens)] += 1  # guard float rounding of log2
    pad = np.iinfo(out.dtype).max
    for c in np.unique(cls[multi]):  # one step per length class
        segs = np.flatnonzero(multi & (cls == c))
        seg_len = lens[segs]
        tot = int(seg_len.sum())
        width = 1 << int(c)
        first = np.cumsum(seg_len) - seg_len  # first element of each segment in this class
        ar = np.arange(tot, dtype=np.int64)
        cell = np.repeat(np.arange(len(segs), dtype=np.int64) * width - first, seg_len) + ar
        mat = np.full(len(segs) * width, pad, dtype=out.dtype)
        if tot == len(out):  # every element is in this class: positions are 0..n-1
            mat[cell] = out
            mat.reshape(len(segs), width).sort(axis=1)
            out = mat[cell]
        else:
            pos = np.repeat(starts[segs] - first, seg_len) + ar
            mat[cell] = out[pos]
            mat.reshape(len(segs), width).sort(axis=1)
            out[pos] = mat[cell]
    return out


def group_sorted(keys: npt.NDArray[np.integer]) -> tuple[Int64Array, Int64Array, Int64Array]:
    """Stable argsort of ``keys`` and the runs of equal keys in sorted order.

    Returns ``(order, starts, sizes)``: ``keys[order]`` is sorted (ties keep
    their input order); group ``g`` is ``order[starts[g] : starts[g] + sizes[g]]``,
    all positions whose key equals ``keys[order[starts[g]]]``. Groups come in
    ascending key order; ``sizes.sum() == len(keys)``.
    """
    k = np.asarray(keys)
    if k.ndim != 1:
        raise ValueError(f"keys must be 1-D, got shape {k.shape}")
    order = np.argsort(k, kind="stable").astype(np.int64, copy=False)
    starts, sizes = _run_starts(k[order])
    return order, starts, sizes


def pairs_in_groups(members: Int64Array, starts: Int64Array, sizes: Int64Array) -> tuple[Int64Array, Int64Array]:
    """All unordered pairs of members within each group.

    Group ``g`` is ``members[starts[g] : starts[g] + sizes[g]]``; it yields its
    ``sizes[g] * (sizes[g] - 1) / 2`` pairs. Returns int64 ``(left, right)``
    with ``left <= right`` elementwise (swapped where needed; equal only if a
    member id repeats inside a group), *not* deduplicated across groups.

    Vectorized: the element at local position ``i`` of a group of size ``m``
    is paired with the ``m - 1 - i`` elements after it; ``np.repeat`` expands
    those counts and an ``arange`` minus the repeated exclusive cumulative sum
    gives each partner's offset.
    """
    mem = np.asarray(members, dtype=np.int64)
    st = np.asarray(starts, dtype=np.int64)
    sz = np.asarray(sizes, dtype=np.int64)
    if st.shape != sz.shape or st.ndim != 1:
        raise ValueError("starts and sizes must be 1-D arrays of one length")
    keep = sz >= 2
    st, sz = st[keep], sz[keep]
    empty = np.zeros(0, dtype=np.int64)
    if len(sz) == 0:
        return empty, empty.copy()
    n_elem = int(sz.sum())
    # position of every element of every (size >= 2) group inside `members`
    elem_group_start = np.repeat(st, sz)
    group_first = np.cumsum(sz) - sz  # exclusive cumsum: first element index per group
    local = np.arange(n_elem, dtype=np.int64) - np.repeat(group_first, sz)
    pos = elem_group_start + local
    # number of partners after this element inside its group
    cnt = np.repeat(sz, sz) - 1 - local
    n_pairs = int(cnt.sum())
    left_pos = np.repeat(pos, cnt)
    cnt_first = np.cumsum(cnt) - cnt
    offset = np.arange(n_pairs, dtype=np.int64) - np.repeat(cnt_first, cnt)
    right_pos = left_pos + 1 + offset
    a = mem[left_pos]
    b = mem[right_pos]
    return np.minimum(a, b), np.maximum(a, b)


def pairs_in_groups_reference(members: Int64Array, starts: Int64Array, sizes: Int64Array) -> tuple[list[int], list[int]]:
    """Naive double loop version of :func:`pairs_in_groups` (test oracle)."""
    left: list[int] = []
    right: list[int] = []
    mem = [int(x) for x in members]
    for s, m in zip([int(x) for x in starts], [int(x) for x in sizes]):
        grp = mem[s : s + m]
        for i in range(len(grp)):
            for j in range(i + 1, len(grp)):
                left.append(min(grp[i], grp[j]))
                right.append(max(grp[i], grp[j]))
    return left, right


def cross_group_pairs(
    left: Int64Array, right: Int64Array, starts: Int64Array, sizes: Int64Array, members: Int64Array
) -> tuple[Int64Array, Int64Array, Int64Array]:
    """Every pair of members across the groups of each given pair of groups.

    Group ``g`` is ``members[starts[g] : starts[g] + sizes[g]]``; the pair of
    groups ``(left[p], right[p])`` yields the ``sizes[left[p]] * sizes[right[p]]``
    pairs ``(x, y)``, x of the left group and y of the right one, x-major in
    member order. Returns ``(x, y, p)``: int64 arrays, ``p`` the index of the
    group pair each came from (to carry its score). Not normalized.

    Vectorized: element ``o`` of pair ``p``'s block is ``x = o // |right|``,
    ``y = o % |right|`` within the two groups.
    """
    lg = np.asarray(left, dtype=np.int64)
    rg = np.asarray(right, dtype=np.int64)
    st = np.asarray(starts, dtype=np.int64)
    sz = np.asarray(sizes, dtype=np.int64)
    mem = np.asarray(members, dtype=np.int64)
    if lg.shape != rg.shape or lg.ndim != 1:
        raise ValueError("left and right must be 1-D arrays of one length")
    la, rb = sz[lg], sz[rg]
    block = la * rb
    total = int(block.sum())
    p = np.repeat(np.arange(len(lg), dtype=np.int64), block)
    first = np.cumsum(block) - block
    o = np.arange(total, dtype=np.int64) - first[p]
    width = rb[p]
    x = mem[st[lg[p]] + o // width]
    y = mem[st[rg[p]] + o % width]
    return x, y, p


def cross_group_pairs_reference(
    left: Int64Array, right: Int64Array, starts: Int64Array, sizes: Int64Array, members: Int64Array
) -> tuple[list[int], list[int], list[int]]:
    """Naive loops of :func:`cross_group_pairs` (test oracle)."""
    xs: list[int] = []
    ys: list[int] = []
    ps: list[int] = []
    for p, (a, b) in enumerate(zip([int(v) for v in left], [int(v) for v in right])):
        ga = [int(v) for v in members[int(starts[a]) : int(starts[a]) + int(sizes[a])]]
        gb = [int(v) for v in members[int(starts[b]) : int(starts[b]) + int(sizes[b])]]
        for x in ga:
            for y in gb:
                xs.append(x)
                ys.append(y)
                ps.append(p)
    return xs, ys, ps


def pack_pairs(left: npt.ArrayLike, right: npt.ArrayLike) -> UInt64Array:
    """Pack pairs into one uint64 key: ``left << 32 | right``.

    Both values must lie in ``[0, 2**32)``; otherwise :class:`ValueError`.
    Sorting packed keys sorts pairs by ``(left, right)``.
    """
    lo = np.asarray(left)
    hi = np.asarray(right)
    if lo.shape != hi.shape:
        raise ValueError(f"left and right differ in shape: {lo.shape} vs {hi.shape}")
    for name, arr in (("left", lo), ("right", hi)):
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= 1 << 32):
            raise ValueError(
                f"{name} holds values outside [0, 2**32) (min {int(arr.min())}, max {int(arr.max())}); cannot pack into 64 bits"
            )
    return (lo.astype(np.uint64) << _SHIFT32) | hi.astype(np.uint64)


def unpack_pairs(keys: UInt64Array) -> tuple[Int64Array, Int64Array]:
    """Inverse of :func:`pack_pairs`: ``(keys >> 32, keys & 0xFFFFFFFF)`` as int64."""
    k = np.asarray(keys, dtype=np.uint64)
    return (k >> _SHIFT32).astype(np.int64), (k & _LOW32).astype(np.int64)


def sorted_unique(keys: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Sorted distinct values: ``np.sort`` and a neighbour comparison.

    Used instead of ``np.unique``: numpy 2.4's ``np.unique`` goes through a
    hash table and is ~100x slower than a sort on millions of uint64 keys
    (measured: 3.1 s against 0.03 s for 5 M keys).
    """
    return sort_unique(np.sort(keys))


def sort_unique(keys: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """:func:`sorted_unique` that sorts ``keys`` in place (no sorted copy: the caller gives up ``keys``)."""
    k = keys
    k.sort()
    if len(k) < 2:
        return k
    keep = np.empty(len(k), dtype=bool)
    keep[0] = True
    np.not_equal(k[1:], k[:-1], out=keep[1:])
    return k[keep]


def unique_pairs(left: npt.ArrayLike, right: npt.ArrayLike) -> tuple[Int64Array, Int64Array]:
    """Distinct ``(left, right)`` pairs sorted by ``(left, right)``.

    Pairs are taken as given (no swapping); packed with :func:`pack_pairs`
    and deduplicated with :func:`sorted_unique`. Values must lie in ``[0, 2**32)``.
    """
    keys = pack_pairs(left, right)
    return unpack_pairs(sorted_unique(keys))
