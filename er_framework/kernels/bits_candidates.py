"""Blocking fingerprints on random sets of grid cells: the sets, the candidate pairs, the cell overlap of a pair.

A print is a bit vector of grid cells (:mod:`.bits`: cell ``k`` is bit
``k % 64`` of word ``k // 64``). Choose ``M`` random sets of ``c`` cells
(:func:`cell_sets`); a print falls in set ``j``'s bucket if all ``c`` of its
bits are 1; prints sharing a bucket are candidates (:func:`grid_bit_candidates`),
verified by the overlap of their cells (:func:`cell_overlap`). The probability
that a pair becomes a candidate is in :mod:`.bits_probabilities`. Every
function here is whole-batch numpy; each has a naive ``*_reference`` twin used
as a test oracle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from er_framework.kernels.bits import bool_from_bits, n_words, row_popcount
from er_framework.kernels.groups import pack_pairs, pairs_in_groups, sorted_unique
from er_framework.kernels.hashing import GOLDEN, MASK64, mix64, mix64_reference

__all__ = [
    "TooManyPairs",
    "cell_overlap",
    "cell_overlap_reference",
    "cell_sets",
    "cell_sets_reference",
    "compact_unique",
    "grid_bit_candidates",
    "grid_bit_candidates_reference",
    "shares_bucket",
    "shares_bucket_reference",
]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: tag mixed into the seed of :func:`cell_sets`, so that its stream differs from
#: the MinHash coefficients (``hash_params``) drawn from the same job seed
_SETS_TAG = 0x6772696442697473  # "gridBits"


# --------------------------------------------------------------------------- random cell sets


def cell_sets(n_sets: int, cells_per_set: int, n_cells: int, seed: int) -> Int64Array:
    """``n_sets`` random sets of ``cells_per_set`` distinct cells: int64 ``(M, c)``, rows sorted.

    Deterministic forever (numpy's RNG is not used). The random words come
    from a splitmix64 counter stream: ``s = mix64((seed + TAG) mod 2**64)``
    with ``TAG = 0x6772696442697473``, then for set ``j`` and step ``i``::

        r_{j,i} = mix64((s + (j * c + i + 1) * 0x9E3779B97F4A7C15) mod 2**64)

    Each set is drawn by Floyd's algorithm (a uniform random ``c``-subset of
    ``0 .. N-1``): for ``i = 0 .. c-1`` let ``t = N - c + i`` and
    ``u = r_{j,i} mod (t + 1)``; take ``u`` unless the set already holds it,
    else take ``t``. The modulo bias is below ``N / 2**64``. Sets are drawn
    independently of one another, so two sets coincide with probability about
    ``M**2 / (2 C(N, c))`` (a repeated set only wastes work). Vectorized over
    the sets: ``c`` whole-array steps.
    """
    m, c, n = int(n_sets), int(cells_per_set), int(n_cells)
    if m < 0 or c < 1 or n < 1:
        raise ValueError(f"need n_sets >= 0, cells_per_set >= 1, n_cells >= 1; got {m}, {c}, {n}")
    if c > n:
        raise ValueError(f"cannot choose {c} distinct cells out of {n}")
    out = np.zeros((m, c), dtype=np.int64)
    if m == 0:
        return out
    s = int(mix64(np.array([(int(seed) + _SETS_TAG) & MASK64], dtype=np.uint64))[0])
    with np.errstate(over="ignore"):
        ctr = np.arange(1, m * c + 1, dtype=np.uint64).reshape(m, c) * np.uint64(GOLDEN) + np.uint64(s)
    r = mix64(ctr)
    for i in range(c):  # Floyd's algorithm, one step per cell of a set
        t = n - c + i
        u = (r[:, i] % np.uint64(t + 1)).astype(np.int64)
        taken = (out[:, :i] == u[:, None]).any(axis=1) if i else np.zeros(m, dtype=bool)
        out[:, i] = np.where(taken, t, u)
    out.sort(axis=1)
    return out


def cell_sets_reference(n_sets: int, cells_per_set: int, n_cells: int, seed: int) -> list[list[int]]:
    """Pure-Python :func:`cell_sets` (test oracle)."""
    s = mix64_reference((int(seed) + _SETS_TAG) & MASK64)
    c = cells_per_set
    out = []
    for j in range(n_sets):
        chosen: list[int] = []
        for i in range(c):
            r = mix64_reference((s + (j * c + i + 1) * GOLDEN) & MASK64)
            t = n_cells - c + i
            u = r % (t + 1)
            chosen.append(t if u in chosen else u)
        out.append(sorted(chosen))
    return out


def _check_sets(sets: npt.ArrayLike, n_bits: int) -> Int64Array:
    s = np.asarray(sets, dtype=np.int64)
    if s.ndim != 2 or s.shape[1] < 1:
        raise ValueError(f"sets must be (M, c) with c >= 1, got shape {s.shape}")
    if s.size and (int(s.min()) < 0 or int(s.max()) >= n_bits):
        raise ValueError(f"set cells must lie in [0, {n_bits}), got {int(s.min())} .. {int(s.max())}")
    return s


# --------------------------------------------------------------------------- candidates


def _bit_slices(bits: UInt64Array, chunk_rows: int = 1 << 16) -> UInt64Array:
    """Transpose ``(n, W)`` print-major bits to cell-major bits ``(64 W, ceil(n / 64))``.

    Row ``k`` of the result is the bit vector, over prints, of cell ``k``:
    print ``i`` is bit ``i % 64`` of word ``i // 64``. Done ``chunk_rows``
    prints at a time (a multiple of 64) so that the unpacked booleans stay
    bounded (``chunk_rows * 64 W`` bytes).
    """
    n, w = bits.shape
    nw = n_words(n) if n else 0
    out = np.zeros((64 * w, nw * 8), dtype=np.uint8)
    step = max(64, (chunk_rows // 64) * 64)
    for a in range(0, n, step):  # one step per chunk of prints
        m = bool_from_bits(bits[a : a + step])  # (rows, 64 W)
        packed = np.packbits(m.T, axis=1, bitorder="little")  # (64 W, ceil(rows / 8))
        out[:, a // 8 : a // 8 + packed.shape[1]] = packed
    return np.ascontiguousarray(out).view("<u8").astype(np.uint64, copy=False)


def _bucket_stats(sizes: Int64Array, oversized: BoolArray, raw_pairs: int) -> dict[str, int]:
    big = sizes[oversized]
    return {
        "buckets": int(np.count_nonzero(sizes >= 2)),
        "largest_bucket": int(sizes.max()) if len(sizes) else 0,
        "oversized_buckets": len(big),
        "pairs_skipped": int((big * (big - 1) // 2).sum()),
        "raw_pairs": int(raw_pairs),
    }


class TooManyPairs(ValueError):
    """Raised by :func:`grid_bit_candidates` when the pairs would exceed ``max_raw_pairs``."""

    def __init__(self, raw_pairs: int, limit: int, stats: dict[str, int]) -> None:
        self.raw_pairs = raw_pairs
        self.limit = limit
        self.stats = stats
        super().__init__(f"the buckets hold {raw_pairs:,} pairs (with repeats), more than the limit {limit:,}")


def _grid_args(
    bits: npt.ArrayLike, ids: npt.ArrayLike, sets: npt.ArrayLike, chunk_sets: int, pair_budget: int
) -> tuple[UInt64Array, Int64Array, Int64Array]:
    """``bits``, ``ids`` and ``sets`` of :func:`grid_bit_candidates` as arrays, their shapes and the chunk sizes checked."""
    b = np.asarray(bits, dtype=np.uint64)
    idv = np.asarray(ids, dtype=np.int64)
    if b.ndim != 2 or b.shape[0] != len(idv):
        raise ValueError(f"bits must be (n, W) with n = len(ids) = {len(idv)}, got shape {b.shape}")
    if chunk_sets < 1 or pair_budget < 1:
        raise ValueError("chunk_sets and pair_budget must be >= 1")
    return b, idv, _check_sets(sets, 64 * b.shape[1])


def _bucket_words(slices: UInt64Array, sets: Int64Array, rows: Int64Array) -> UInt64Array:
    """The buckets of sets ``sets[rows]`` as bit rows over the prints: the AND of each set's ``c`` cell slices."""
    acc: UInt64Array = slices[sets[rows, 0]].copy()
    for i in range(1, sets.shape[1]):  # one step per cell of a set
        acc &= slices[sets[rows, i]]
    return acc


def _bucket_sizes(slices: UInt64Array, sets: Int64Array, chunk_sets: int) -> Int64Array:
    """Pass 1: the size of every set's bucket, ``chunk_sets`` sets at a time.

    The bucket of a set is the AND of its ``c`` cell rows (64 prints per word
    operation) and its size a popcount, with ``chunk_sets * n / 8`` bytes of
    temporaries.
    """
    m_sets = sets.shape[0]
    sizes = np.zeros(m_sets, dtype=np.int64)
    for a in range(0, m_sets, chunk_sets):  # one step per chunk of sets
        rows = np.arange(a, min(a + chunk_sets, m_sets), dtype=np.int64)
        sizes[rows] = row_popcount(_bucket_words(slices, sets, rows))
    return sizes


def _kept_buckets(sizes: Int64Array, max_bucket_size: int | None, max_raw_pairs: int | None) -> tuple[BoolArray, Int64Array]:
    """Which buckets are oversized, and the pairs of each kept bucket (0 for the others).

    :class:`TooManyPairs` when the kept buckets hold more than ``max_raw_pairs`` pairs.
    """
    oversized = np.zeros(len(sizes), dtype=bool) if max_bucket_size is None else sizes > max_bucket_size
    use = (sizes >= 2) & ~oversized
    per_set = np.where(use, sizes * (sizes - 1) // 2, 0)
    total = int(per_set.sum())
    if max_raw_pairs is not None and total > max_raw_pairs:
        raise TooManyPairs(total, max_raw_pairs, _bucket_stats(sizes, oversized, total))
    return oversized, per_set


def _chunk_pair_keys(slices: UInt64Array, sets: Int64Array, ids: Int64Array, rows: Int64Array) -> tuple[UInt64Array, int]:
    """The sorted distinct keys of the pairs within the buckets of sets ``sets[rows]``, and their number with repeats.

    The buckets are unpacked to ``(sets, n)`` booleans, their members
    enumerated with :func:`~.groups.pairs_in_groups` and packed into uint64
    keys (pairs of an id with itself dropped).
    """
    member = bool_from_bits(_bucket_words(slices, sets, rows), len(ids))  # (sets, n)
    set_of, pos = np.nonzero(member)
    cnt = np.bincount(set_of, minlength=len(rows)).astype(np.int64)
    st = np.cumsum(cnt) - cnt
    left, right = pairs_in_groups(ids[pos], st, cnt)
    keep = left != right
    return sorted_unique(pack_pairs(left[keep], right[keep])), len(left)


def _bucket_pair_keys(
    slices: UInt64Array,
    sets: Int64Array,
    ids: Int64Array,
    todo: Int64Array,
    per_set: Int64Array,
    chunk_sets: int,
    pair_budget: int,
) -> tuple[UInt64Array, int]:
    """Pass 2: the sorted distinct pair keys of the buckets of sets ``todo``, and the pairs with repeats.

    ``per_set[j]`` is the number of pairs in the bucket of set ``todo[j]``
    (from pass 1). The sets are taken in chunks holding at most
    ``pair_budget`` pairs and ``chunk_sets`` sets (a single larger bucket
    forms its own chunk); each chunk's distinct keys go into one buffer sized
    by pass 1 (no list + concatenate copy), and the chunks' keys are merged
    with one sort, compacted in place.
    """
    buf = np.empty(int(per_set.sum()), dtype=np.uint64)
    filled = 0
    raw = 0
    chunks = 0
    i = 0
    cum = np.cumsum(per_set)
    while i < len(todo):  # one step per chunk of sets
        base = cum[i - 1] if i else 0
        j = int(np.searchsorted(cum, base + pair_budget, side="right"))
        j = min(max(j, i + 1), i + chunk_sets)
        k, n_raw = _chunk_pair_keys(slices, sets, ids, todo[i:j])
        raw += n_raw
        buf[filled : filled + len(k)] = k
        filled += len(k)
        chunks += 1
        i = j
    keys = buf[:filled]
    if chunks > 1:  # each chunk's keys are sorted and distinct; merge them
        keys.sort()  # in place
        filled = compact_unique(keys)
        keys = keys[:filled]
    return keys, raw


def _unpack_keys_in_place(keys: UInt64Array) -> tuple[Int64Array, Int64Array]:
    """``(keys >> 32, keys & 0xFFFFFFFF)`` as int64: ``left`` is a new array, ``right`` reuses the key buffer."""
    left = (keys >> np.uint64(32)).view(np.int64)
    np.bitwise_and(keys, np.uint64(0xFFFFFFFF), out=keys)
    return left, keys.view(np.int64)


def grid_bit_candidates(
    bits: npt.ArrayLike,
    ids: npt.ArrayLike,
    sets: npt.ArrayLike,
    max_bucket_size: int | None = None,
    count_only: bool = False,
    *,
    chunk_sets: int = 64,
    pair_budget: int = 1 << 24,
    max_raw_pairs: int | None = None,
) -> tuple[Int64Array, Int64Array, dict[str, int]]:
    """Candidate pairs of prints sharing a bucket of some cell set.

    ``bits[i]`` (uint64 words, cell ``k`` = bit ``k % 64`` of word ``k // 64``)
    is print ``ids[i]``'s bit vector; ``sets`` is ``(M, c)`` cell indices. The
    bucket of set ``j`` holds the prints having all ``c`` bits of the set.
    Candidates are all pairs within each bucket of size >= 2, deduplicated
    across buckets (packed into uint64 keys as :func:`~.groups.unique_pairs`
    does, then sorted), ``left < right``, sorted.
    Buckets larger than ``max_bucket_size`` are skipped and counted. Ids must
    lie in ``[0, 2**32)``; pairs of an id with itself are dropped.

    How (no Python loop per print or per pair): bits transposed to cell-major
    slices (:func:`_bit_slices`); pass 1, every bucket size and so all stats
    (:func:`_bucket_sizes`); pass 2, unless ``count_only``, the pairs in
    chunks of at most ``pair_budget`` (:func:`_bucket_pair_keys`). Memory:
    ``n * W * 8`` bytes of slices, ``chunk_sets * n`` booleans and one chunk's
    pairs (~40 bytes each) at a time, then ~16 bytes per distinct pair plus 8
    per repeated pair.

    ``count_only=True`` materializes no pairs (pass 1 only): it returns
    empty arrays and stats whose ``raw_pairs`` is the sum over the kept buckets
    of ``m (m - 1) / 2`` — pairs *with multiplicity*, an upper bound on the
    distinct candidates (a pair sharing several buckets counts once per
    bucket), which are not known exactly in that mode. This is for populations
    whose distinct pairs cannot be held in memory (1M prints at occupancy 0.2
    and c = 3 give ~3e10 candidate pairs).

    ``max_raw_pairs`` (optional): when the kept buckets hold more pairs than
    this (counted in pass 1, before any pair is made), :class:`TooManyPairs`
    is raised instead of running out of memory.

    Stats (as :func:`~.banding.bucket_candidates`): ``buckets`` (sets whose
    bucket has >= 2 prints, skipped ones included), ``largest_bucket``,
    ``oversized_buckets``, ``pairs_skipped`` (sum of ``m (m-1) / 2`` over
    skipped buckets), ``raw_pairs`` (pairs emitted before deduplication).
    """
    b, idv, s = _grid_args(bits, ids, sets, chunk_sets, pair_budget)
    n, m_sets = b.shape[0], s.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if n == 0 or m_sets == 0:
        return empty, empty.copy(), _bucket_stats(np.zeros(m_sets, dtype=np.int64), np.zeros(m_sets, dtype=bool), 0)
    if len(idv) and (int(idv.min()) < 0 or int(idv.max()) >= 1 << 32):
        raise ValueError("ids must lie in [0, 2**32)")
    slices = _bit_slices(b)  # (64 W, nw)
    sizes = _bucket_sizes(slices, s, chunk_sets)
    oversized, per_set = _kept_buckets(sizes, max_bucket_size, max_raw_pairs)
    if count_only:
        return empty, empty.copy(), _bucket_stats(sizes, oversized, int(per_set.sum()))
    todo = np.flatnonzero(per_set).astype(np.int64)  # the kept buckets (size >= 2: at least one pair)
    keys, raw = _bucket_pair_keys(slices, s, idv, todo, per_set[todo], chunk_sets, pair_budget)
    left, right = _unpack_keys_in_place(keys)
    return left, right, _bucket_stats(sizes, oversized, raw)


def compact_unique(k: UInt64Array, block: int = 1 << 22) -> int:
    """Drop repeats from a sorted array in place; return the number of distinct values.

    Processed ``block`` values at a time: the write position never passes the
    read position, so the move is safe and needs only ``block``-sized temporaries.
    """
    n = len(k)
    if n < 2:
        return n
    w = 0
    prev: Any = None
    for a in range(0, n, block):  # one step per block of values
        chunk = k[a : a + block].copy()
        keep = np.empty(len(chunk), dtype=bool)
        keep[0] = prev is None or chunk[0] != prev
        np.not_equal(chunk[1:], chunk[:-1], out=keep[1:])
        vals = chunk[keep]
        k[w : w + len(vals)] = vals
        w += len(vals)
        prev = chunk[-1]
    return w


def grid_bit_candidates_reference(
    bits: npt.ArrayLike,
    ids: npt.ArrayLike,
    sets: npt.ArrayLike,
    max_bucket_size: int | None = None,
    count_only: bool = False,
) -> tuple[list[int], list[int], dict[str, int]]:
    """Dictionary-based :func:`grid_bit_candidates` (test oracle)."""
    b = np.asarray(bits, dtype=np.uint64)
    idl = [int(x) for x in np.asarray(ids).ravel()]
    ints = [sum(int(x) << (64 * k) for k, x in enumerate(row)) for row in b]
    buckets: dict[int, list[int]] = {}
    for j, cells in enumerate(np.asarray(sets).tolist()):
        buckets[j] = [idl[i] for i, v in enumerate(ints) if all((v >> int(c)) & 1 for c in cells)]
    stats = {"buckets": 0, "largest_bucket": 0, "oversized_buckets": 0, "pairs_skipped": 0, "raw_pairs": 0}
    pairs: set[tuple[int, int]] = set()
    for members in buckets.values():
        m = len(members)
        stats["largest_bucket"] = max(stats["largest_bucket"], m)
        if m < 2:
            continue
        stats["buckets"] += 1
        if max_bucket_size is not None and m > max_bucket_size:
            stats["oversized_buckets"] += 1
            stats["pairs_skipped"] += m * (m - 1) // 2
            continue
        stats["raw_pairs"] += m * (m - 1) // 2
        for x in range(m):
            for y in range(x + 1, m):
                a, c = members[x], members[y]
                if a != c:
                    pairs.add((min(a, c), max(a, c)))
    if count_only:
        return [], [], stats
    ordered = sorted(pairs)
    return [p[0] for p in ordered], [p[1] for p in ordered], stats


def _pair_args(bits: npt.ArrayLike, left: npt.ArrayLike, right: npt.ArrayLike) -> tuple[UInt64Array, Int64Array, Int64Array]:
    """``bits`` as a 2-D uint64 matrix and ``left``/``right`` as int64 arrays of one length."""
    b = np.asarray(bits, dtype=np.uint64)
    lo = np.asarray(left, dtype=np.int64)
    hi = np.asarray(right, dtype=np.int64)
    if b.ndim != 2:
        raise ValueError(f"bits must be 2-D, got shape {b.shape}")
    if lo.shape != hi.shape or lo.ndim != 1:
        raise ValueError("left and right must be 1-D arrays of one length")
    return b, lo, hi


def shares_bucket(
    bits: npt.ArrayLike,
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    sets: npt.ArrayLike,
    *,
    return_counts: bool = False,
    chunk_pairs: int = 1 << 14,
) -> BoolArray | Int64Array:
    """Whether prints ``left[i]`` and ``right[i]`` share the bucket of some cell set.

    The pair is a candidate of :func:`grid_bit_candidates` (without a bucket
    cap) iff the AND of the two bit vectors has all ``c`` bits of at least one
    set. Vectorized over pairs (``chunk_pairs`` at a time) and sets: the
    common cells are unpacked to ``(pairs, 64 W)`` booleans and the ``c``
    columns of every set AND-ed, giving a ``(pairs, M)`` hit matrix
    (``chunk_pairs * M`` booleans). With ``return_counts`` the number of sets
    hit per pair (int64) is returned instead of the boolean — its mean over
    pairs divided by ``M`` estimates the per-set probability (``(p q)**c``).
    Use it to measure candidate rates on sampled pairs without enumerating
    all pairs of a population.
    """
    b, lo, hi = _pair_args(bits, left, right)
    s = _check_sets(sets, 64 * b.shape[1])
    counts = np.zeros(len(lo), dtype=np.int64)
    for a in range(0, len(lo), chunk_pairs):  # one step per chunk of pairs
        common = bool_from_bits(b[lo[a : a + chunk_pairs]] & b[hi[a : a + chunk_pairs]])
        hit = common[:, s[:, 0]]
        for i in range(1, s.shape[1]):  # one step per cell of a set
            hit &= common[:, s[:, i]]
        counts[a : a + len(common)] = hit.sum(axis=1)
    return counts if return_counts else counts > 0


def shares_bucket_reference(bits: npt.ArrayLike, left: Sequence[int], right: Sequence[int], sets: npt.ArrayLike) -> list[bool]:
    """Python-integer version of :func:`shares_bucket` (test oracle)."""
    b = np.asarray(bits, dtype=np.uint64)
    ints = [sum(int(x) << (64 * k) for k, x in enumerate(row)) for row in b]
    ss = np.asarray(sets).tolist()
    out = []
    for i, j in zip(left, right):
        v = ints[int(i)] & ints[int(j)]
        out.append(any(all((v >> int(c)) & 1 for c in cells) for cells in ss))
    return out


# --------------------------------------------------------------------------- verification


OverlapKind = Literal["jaccard", "agreement", "overlap"]


def cell_overlap(
    bits: npt.ArrayLike,
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    kind: OverlapKind = "jaccard",
    chunk_pairs: int = 1 << 18,
) -> Float64Array:
    """Similarity of the cell sets ``A = bits[left[i]]``, ``B = bits[right[i]]`` for every pair.

    * ``"jaccard"``:   ``|A ∧ B| / |A ∨ B|``;
    * ``"agreement"``: ``2 |A ∧ B| / (|A| + |B|)`` (Dice) — the fraction of
      the two prints' occupied cells that the other print shares (the
      harmonic mean of ``|A ∧ B| / |A|`` and ``|A ∧ B| / |B|``). This is the
      seed's "agreeing on 80% of occupied cells": two impressions of one
      finger in the model of :mod:`er_framework.synth.fingerprints` score
      about ``q = 0.8``, prints of different fingers about ``p = 0.2``;
      ``agreement = 2 J / (1 + J)``;
    * ``"overlap"``:   ``|A ∧ B| / min(|A|, |B|)`` — 1 when one print's cells
      are a subset of the other's (partial prints).

    Two empty prints score 0 (no evidence), as does an empty print against
    any print. Symmetric in ``(left, right)``; popcounts on the packed words,
    ``chunk_pairs`` pairs at a time.
    """
    b, lo, hi = _pair_args(bits, left, right)
    if kind not in ("jaccard", "agreement", "overlap"):
        raise ValueError(f"kind must be 'jaccard', 'agreement' or 'overlap', got {kind!r}")
    out = np.zeros(len(lo), dtype=np.float64)
    for a in range(0, len(lo), chunk_pairs):  # one step per chunk of pairs
        x = b[lo[a : a + chunk_pairs]]
        y = b[hi[a : a + chunk_pairs]]
        inter = row_popcount(x & y).astype(np.float64)
        if kind == "jaccard":
            den = row_popcount(x | y).astype(np.float64)
            num = inter
        elif kind == "agreement":
            den = (row_popcount(x) + row_popcount(y)).astype(np.float64)
            num = 2.0 * inter
        else:
            den = np.minimum(row_popcount(x), row_popcount(y)).astype(np.float64)
            num = inter
        res = np.zeros(len(x), dtype=np.float64)
        np.divide(num, den, out=res, where=den > 0)
        out[a : a + len(x)] = res
    return out


def cell_overlap_reference(sets_a: Sequence[set[int]], sets_b: Sequence[set[int]], kind: OverlapKind = "jaccard") -> list[float]:
    """Set-based :func:`cell_overlap` (test oracle)."""
    out = []
    for a, b in zip(sets_a, sets_b):
        inter = len(a & b)
        if kind == "jaccard":
            den, num = len(a | b), inter
        elif kind == "agreement":
            den, num = len(a) + len(b), 2 * inter
        else:
            den, num = min(len(a), len(b)), inter
        out.append(num / den if den else 0.0)
    return out
