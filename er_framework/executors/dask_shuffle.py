"""The Dask executor's shuffle tasks (run on workers): the distributed sort of the window passes, the buckets
of each shuffle part (sized, counted, paired) and their statistics, and the dedup of each pair part
(:mod:`er_framework.executors.dask` describes the plan).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.dtypes import StringDType

from er_framework.capabilities import GroupedKeys, has
from er_framework.executors.dask_tasks import Int64Array, JobRef, engine
from er_framework.kernels.groups import pack_pairs, pairs_in_groups, unpack_pairs
from er_framework.kernels.hashing import mix64


def task_bounds(samples: list[tuple[npt.NDArray[Any], Int64Array]], n_ranges: int) -> tuple[npt.NDArray[Any], Int64Array]:
    """``n_ranges - 1`` boundaries ``(key, global index)`` of a window pass, evenly spaced among the sampled keys."""
    if not samples:
        return np.zeros(0, dtype=StringDType()), np.zeros(0, np.int64)
    keys = np.concatenate([s[0] for s in samples])
    gidx = np.concatenate([s[1] for s in samples])
    order = np.lexsort((gidx, keys))
    m = len(order)
    at = np.array([m * r // n_ranges for r in range(1, n_ranges)], dtype=np.int64) if m else np.zeros(0, np.int64)
    return keys[order[at]], gidx[order[at]]


def _lower_bound(keys: npt.NDArray[Any], gidx: Int64Array, key: str, g: int) -> int:
    """First position of a run sorted by ``(key, index)`` holding ``(key, g)`` or more.

    A binary search with Python comparisons of the keys (code-point order, as
    numpy sorts them): numpy's ``searchsorted`` fails on ``StringDType``
    arrays holding strings longer than 15 bytes (numpy 2.4).
    """
    lo, hi = 0, len(keys)
    while lo < hi:  # O(log n) steps per boundary
        mid = (lo + hi) // 2
        k = keys[mid]
        if k < key or (k == key and int(gidx[mid]) < g):
            lo = mid + 1
        else:
            hi = mid
    return lo


def task_split(
    run: tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]],
    bounds: tuple[npt.NDArray[Any], Int64Array],
    n_ranges: int,
) -> list[tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]]:
    """A partition's sorted run cut at the pass's boundaries: one piece per range of the global order
    (the last ranges empty when the pass has fewer boundaries: no record has its keys)."""
    keys, gidx, src = run
    cuts = [0] + [_lower_bound(keys, gidx, k, int(g)) for k, g in zip(bounds[0].tolist(), bounds[1].tolist())]
    cuts += [len(gidx)] * (n_ranges + 1 - len(cuts))
    return [(keys[a:b], gidx[a:b], src[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def task_range(*pieces: tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]) -> tuple[Int64Array, npt.NDArray[np.int32]]:
    """One range of a pass's global order: ``(global index, source)`` of its records sorted by ``(key, index)``."""
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    keys = np.concatenate([p[0] for p in pieces])
    gidx = np.concatenate([p[1] for p in pieces])
    src = np.concatenate([p[2] for p in pieces])
    order = np.lexsort((gidx, keys))
    return gidx[order], src[order]


def task_carry(
    carry: tuple[Int64Array, npt.NDArray[np.int32]], rng: tuple[Int64Array, npt.NDArray[np.int32]], keep: int
) -> tuple[Int64Array, npt.NDArray[np.int32]]:
    """The last ``keep`` records of the global order up to the end of ``rng`` (``carry``: those before it)."""
    g = np.concatenate([carry[0], rng[0]])
    s = np.concatenate([carry[1], rng[1]])
    return g[len(g) - min(keep, len(g)) :], s[len(s) - min(keep, len(s)) :]


def task_windows(
    rng: tuple[Int64Array, npt.NDArray[np.int32]],
    carry: tuple[Int64Array, npt.NDArray[np.int32]],
    window: int,
    link: bool,
    blocker: int,
    n_parts: int,
) -> list[tuple[npt.NDArray[np.uint64], Int64Array]]:
    """Pairs of every record of a range with the ``window - 1`` records before it in the global order
    (``carry`` holds those of earlier ranges), unique, split by pair hash into ``n_parts``."""
    g = np.concatenate([carry[0], rng[0]])
    s = np.concatenate([carry[1], rng[1]])
    c = len(carry[0])
    packed: list[npt.NDArray[np.uint64]] = []
    for d in range(1, window):  # one whole-array step per offset: the later record is in this range
        b0 = max(c, d)
        if b0 >= len(g):  # no record of this range has a record d places before it
            break
        a, b = g[b0 - d : len(g) - d], g[b0:]
        if link:
            cross = s[b0 - d : len(s) - d] != s[b0:]
            a, b = a[cross], b[cross]
        if len(a):
            packed.append(pack_pairs(np.minimum(a, b), np.maximum(a, b)))
    keys = np.unique(np.concatenate(packed)) if packed else np.zeros(0, np.uint64)
    dest = (mix64(keys) % np.uint64(n_parts)).astype(np.int64)
    tag = np.full(len(keys), blocker, dtype=np.int64)
    return [(keys[dest == j], tag[dest == j]) for j in range(n_parts)]


#: per group of a blocker with :meth:`~er_framework.capabilities.GroupedKeys.lookup_groups`: its buckets, those
#: with 2 or more members, the largest, the pairs of the kept ones (cross-source only in link mode), the
#: oversized ones, their members and their pairs (cross-source only in link mode); all sums but the largest
GROUP_STATS = ("distinct", "buckets", "largest_bucket", "pairs", "oversized_buckets", "oversized_records", "oversized_pairs")


@dataclass
class Buckets:
    """The buckets of one shuffle part: entries sorted by (bucket id, global index), the runs kept
    (2 or more members, within their blocker's cap), and per blocker the statistics of
    :data:`BUCKET_STATS` (summed over the parts, the largest bucket the maximum)."""

    keys: Int64Array
    gidx: Int64Array
    src: Int64Array
    which: Int64Array
    starts: Int64Array
    sizes: Int64Array
    use: npt.NDArray[np.bool_]
    stats: Int64Array  # (blockers, len(BUCKET_STATS))
    #: of the blockers with groups: ``(blocker, group, *GROUP_STATS)`` per group present in this part
    group_stats: Int64Array = dataclasses.field(default_factory=lambda: np.zeros((0, 2 + len(GROUP_STATS)), dtype=np.int64))
    #: of the blockers with groups: ``(blocker, group, size, first member's global index)`` per oversized bucket
    oversized: Int64Array = dataclasses.field(default_factory=lambda: np.zeros((0, 4), dtype=np.int64))


#: per blocker: buckets with 2 or more members, the largest, those over the cap and their pairs, the kept pairs
BUCKET_STATS = ("buckets", "largest_bucket", "oversized_buckets", "pairs_skipped", "raw_pairs")


def task_bucket_sort(ref: JobRef, pieces: list[tuple[Int64Array, ...]]) -> Buckets:
    """Every bucket of one shuffle part (each bucket lies in one part), sized before any pair is made."""
    eng = engine(ref)
    caps = eng.caps()
    keys = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.int64)
    gidx = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    src = np.concatenate([p[2] for p in pieces]) if pieces else np.zeros(0, np.int64)
    which = np.concatenate([p[3] for p in pieces]) if pieces else np.zeros(0, np.int64)
    group = np.concatenate([p[4] for p in pieces]) if pieces else np.zeros(0, np.int64)
    order = np.lexsort((gidx, keys))
    keys, gidx, src, which, group = keys[order], gidx[order], src[order], which[order], group[order]
    n = len(keys)
    new = np.ones(n, dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(new).astype(np.int64)
    sizes = np.diff(np.append(starts, np.int64(n))).astype(np.int64)
    cap = np.array([c if c is not None else np.iinfo(np.int64).max for c in caps], dtype=np.int64)
    use = sizes >= 2
    use[use] &= sizes[use] <= cap[which[starts[use]]]
    owner = which[starts]
    nb = len(caps)
    pairs = sizes * (sizes - 1) // 2
    over = sizes > cap[owner]
    stats = np.zeros((nb, len(BUCKET_STATS)), dtype=np.int64)
    stats[:, 0] = np.bincount(owner[sizes >= 2], minlength=nb)
    np.maximum.at(stats[:, 1], owner, sizes)
    stats[:, 2] = np.bincount(owner[over], minlength=nb)
    stats[:, 3] = np.bincount(owner[over], weights=pairs[over], minlength=nb).astype(np.int64)
    stats[:, 4] = np.bincount(owner[use], weights=pairs[use], minlength=nb).astype(np.int64)
    grouped = np.array([has(b, GroupedKeys) for b in eng.blockers], dtype=bool)
    if not grouped.any():
        return Buckets(keys, gidx, src, which, starts, sizes, use, stats)
    # pairs each bucket makes: all of them, or in link mode those of members of different sources
    # (entries sorted by global index within a bucket, so each source's members are one run)
    made = pairs
    if eng.link and n:
        sub = new.copy()
        sub[1:] |= src[1:] != src[:-1]
        sub_starts = np.flatnonzero(sub)
        sub_sizes = np.diff(np.append(sub_starts, np.int64(n))).astype(np.int64)
        same = np.bincount(np.cumsum(new)[sub_starts] - 1, weights=sub_sizes * (sub_sizes - 1) // 2, minlength=len(starts)).astype(np.int64)
        made = pairs - same
    sel = np.flatnonzero(grouped[owner])
    b_own, b_grp = owner[sel], group[starts[sel]]
    cells, inv = np.unique(np.stack([b_own, b_grp], axis=1), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    s_sel, o_sel, u_sel = sizes[sel], over[sel], use[sel]
    g_stats = np.zeros((len(cells), len(GROUP_STATS)), dtype=np.int64)
    k = len(cells)
    g_stats[:, 0] = np.bincount(inv, minlength=k)
    g_stats[:, 1] = np.bincount(inv[s_sel >= 2], minlength=k)
    np.maximum.at(g_stats[:, 2], inv, s_sel)
    g_stats[:, 3] = np.bincount(inv[u_sel], weights=made[sel][u_sel], minlength=k).astype(np.int64)
    g_stats[:, 4] = np.bincount(inv[o_sel], minlength=k)
    g_stats[:, 5] = np.bincount(inv[o_sel], weights=s_sel[o_sel], minlength=k).astype(np.int64)
    g_stats[:, 6] = np.bincount(inv[o_sel], weights=made[sel][o_sel], minlength=k).astype(np.int64)
    ov = sel[o_sel]
    oversized = np.stack([owner[ov], group[starts[ov]], sizes[ov], gidx[starts[ov]]], axis=1).astype(np.int64).reshape(-1, 4)
    return Buckets(
        keys,
        gidx,
        src,
        which,
        starts,
        sizes,
        use,
        stats,
        np.concatenate([cells.astype(np.int64).reshape(-1, 2), g_stats], axis=1),
        oversized,
    )


def merge_bucket_stats(parts: list[Int64Array], n_blockers: int) -> Int64Array:
    """Every part's bucket statistics combined: sums, the largest bucket the maximum."""
    if not parts:
        return np.zeros((n_blockers, len(BUCKET_STATS)), dtype=np.int64)
    out: Int64Array = np.sum(np.stack(parts), axis=0).astype(np.int64)
    out[:, 1] = np.stack([p[:, 1] for p in parts]).max(axis=0)
    return out


def task_buckets(ref: JobRef, buckets: Buckets, n_parts: int) -> list[tuple[npt.NDArray[np.uint64], Int64Array]]:
    """Pairs of every bucket of one shuffle part, unique per blocker, with their blocker, split by pair hash into ``n_parts``."""
    eng = engine(ref)
    gidx, src, which, starts, sizes, use = buckets.gidx, buckets.src, buckets.which, buckets.starts, buckets.sizes, buckets.use
    left, right = pairs_in_groups(gidx, starts[use], sizes[use])
    group_size = sizes[use]
    blocker = np.repeat(which[starts[use]], group_size * (group_size - 1) // 2)
    keep = left != right
    if eng.link:  # cross-source pairs only
        u, first = np.unique(gidx, return_index=True)
        src_u = src[first]
        keep &= src_u[np.searchsorted(u, left)] != src_u[np.searchsorted(u, right)]
    left, right, blocker = left[keep], right[keep], blocker[keep]
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    packed = pack_pairs(lo, hi)
    both = np.unique(np.stack([packed, blocker.astype(np.uint64)], axis=1), axis=0) if len(packed) else np.zeros((0, 2), np.uint64)
    packed, blocker = both[:, 0], both[:, 1].astype(np.int64)
    dest = (mix64(packed) % np.uint64(n_parts)).astype(np.int64)
    return [(packed[dest == j], blocker[dest == j]) for j in range(n_parts)]


def task_dedup(
    pieces: list[tuple[npt.NDArray[np.uint64], Int64Array]],
    exact_pieces: list[npt.NDArray[np.uint64]],
    offsets: Int64Array,
    n_blockers: int,
) -> tuple[npt.NDArray[np.uint64], list[Int64Array], Int64Array]:
    """Unique candidate pairs of one part (the exact pairs sent to this part removed), the records needed per
    input partition, and each blocker's count of distinct pairs in this part (before the exact pairs are
    removed, as locally)."""
    exact = np.concatenate(exact_pieces) if exact_pieces else np.zeros(0, np.uint64)
    packed = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.uint64)
    blocker = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    per_blocker = np.array([len(np.unique(packed[blocker == b])) for b in range(n_blockers)], dtype=np.int64)
    packed = np.unique(packed)
    if len(exact):
        packed = packed[~np.isin(packed, exact)]
    left, right = unpack_pairs(packed)
    need = np.unique(np.concatenate([left, right]))
    owner = np.searchsorted(offsets, need, side="right") - 1
    return packed, [need[owner == i] for i in range(len(offsets) - 1)], per_blocker


__all__ = [
    "BUCKET_STATS",
    "Buckets",
    "GROUP_STATS",
    "merge_bucket_stats",
    "task_bounds",
    "task_bucket_sort",
    "task_buckets",
    "task_carry",
    "task_dedup",
    "task_range",
    "task_split",
    "task_windows",
]
