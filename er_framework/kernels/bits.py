"""Fingerprints as grid-cell bit vectors, and blocking on random sets of cells.

The model (SEEDS §6; MMDS ch. 3.8, "matching fingerprints"):
a print is the set of grid cells that hold a minutia, stored as a bit vector.
Choose ``M`` random sets of ``c`` cells; a print falls in set ``j``'s bucket if
all ``c`` of its bits are 1; prints sharing a bucket are candidates.

With a fraction ``p`` of cells occupied and two prints of one finger agreeing
on a fraction ``q`` of their occupied cells (and every cell independent)::

    P(one set hits both | same finger)       = (p q)**c
    P(one set hits both | different fingers) = p**(2 c)
    P(candidate | same) = 1 - (1 - (p q)**c)**M
    P(candidate | diff) = 1 - (1 - p**(2 c))**M

(p = 0.2, q = 0.8, c = 3, M = 1024: 0.985 and 0.063.) The last two lines
treat the ``M`` set hits of one pair as independent events. They are not on a
finite grid: every set looks at the same pair of prints, and a pair with more
common cells than average hits many sets at once. Averaging over the number
``k`` of cells the two prints share gives the exact value for sets drawn
uniformly at random (:func:`candidate_probabilities_exact`)::

    P(candidate) = E_k[ 1 - (1 - C(k, c) / C(N, c))**M ]

which for ``N = 400`` cells, ``k ~ Binomial(400, 0.16)`` is 0.967 (not 0.985),
and 0.0623 (not 0.0634) for different fingers. The concave map
``x -> 1 - (1 - x)**M`` is what lowers the value (Jensen); the per-set
probabilities ``(p q)**c`` and ``p**(2c)`` are exact.

Representation: a print's cells are packed into ``W = ceil(n_bits / 64)``
uint64 words; cell ``k`` is bit ``k % 64`` of word ``k // 64`` (least
significant bit first). Every function here is whole-batch numpy; each has a
naive ``*_reference`` twin used as a test oracle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.groups import pack_pairs, pairs_in_groups, sorted_unique
from er_framework.kernels.hashing import GOLDEN, MASK64, mix64, mix64_reference

__all__ = [
    "HAS_BITWISE_COUNT",
    "SetChoice",
    "Suggestion",
    "TooManyPairs",
    "bits_from_bool",
    "bool_from_bits",
    "candidate_probabilities",
    "candidate_probabilities_exact",
    "cell_overlap",
    "cell_overlap_reference",
    "cell_sets",
    "cell_sets_reference",
    "compact_unique",
    "grid_bit_candidates",
    "grid_bit_candidates_reference",
    "grid_cells",
    "grid_cells_reference",
    "n_words",
    "pack_bits",
    "pack_bits_reference",
    "popcount",
    "popcount_lut",
    "popcount_reference",
    "row_popcount",
    "shares_bucket",
    "shares_bucket_reference",
    "suggest_sets",
    "unpack_bits",
]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: tag mixed into the seed of :func:`cell_sets`, so that its stream differs from
#: the MinHash coefficients (``hash_params``) drawn from the same job seed
_SETS_TAG = 0x6772696442697473  # "gridBits"

#: numpy >= 2.0 has a native popcount ufunc
HAS_BITWISE_COUNT: bool = hasattr(np, "bitwise_count")

_LUT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


# --------------------------------------------------------------------------- grid cells


def _cell_geometry(width: float, height: float, grid_x: int, grid_y: int, margin: float) -> tuple[float, float]:
    if not (width > 0 and height > 0 and math.isfinite(width) and math.isfinite(height)):
        raise ValueError(f"width and height must be finite and > 0, got {width} x {height}")
    if grid_x < 1 or grid_y < 1:
        raise ValueError(f"grid_x and grid_y must be >= 1, got {grid_x} x {grid_y}")
    if not (margin >= 0 and math.isfinite(margin)):
        raise ValueError(f"margin must be finite and >= 0, got {margin}")
    return width / grid_x, height / grid_y


def grid_cells(
    xs: npt.ArrayLike,
    ys: npt.ArrayLike,
    offsets: npt.ArrayLike,
    *,
    width: float,
    height: float,
    grid_x: int,
    grid_y: int,
    margin: float = 0.0,
) -> tuple[TokenSets, BoolArray]:
    """The set of grid cells holding a minutia, for every print.

    Print ``i`` owns minutiae ``offsets[i] : offsets[i + 1]`` of ``xs``/``ys``
    (float64, frame units). The frame ``[0, width) x [0, height)`` is cut into
    ``grid_x`` columns of width ``cw = width / grid_x`` and ``grid_y`` rows of
    height ``ch = height / grid_y``. A minutia at ``(x, y)`` lies in::

        col = min(floor(x / cw), grid_x - 1),  row = min(floor(y / ch), grid_y - 1)
        cell = row * grid_x + col

    (the ``min`` only guards float rounding just below ``width``). Boundary
    spill: when ``x - col * cw < margin`` the minutia also marks column
    ``col - 1``; when ``(col + 1) * cw - x < margin`` also ``col + 1`` (the same
    on the y axis with rows). Near a corner on both axes the diagonal
    neighbour is marked too (every combination of the marked columns and
    rows). Neighbours outside the grid are ignored. ``margin = 0`` means no
    spill; a margin of half a cell or more reaches both neighbours; spill
    never goes further than the adjacent cells.

    Returns ``(cells, invalid)``: ``cells`` is a :class:`TokenSets` of uint64
    cell indices (rows sorted, unique; a print without valid minutiae has an
    empty row) and ``invalid`` a bool mask over the minutiae that are not
    finite or lie outside the frame. Invalid minutiae are left out of
    ``cells``; they are never clipped — the caller is expected to report them.
    """
    x = np.asarray(xs, dtype=np.float64).ravel()
    y = np.asarray(ys, dtype=np.float64).ravel()
    off = np.asarray(offsets, dtype=np.int64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"xs and ys differ in length: {x.shape} vs {y.shape}")
    if off.ndim != 1 or len(off) == 0 or off[0] != 0 or off[-1] != len(x) or np.any(np.diff(off) < 0):
        raise ValueError("offsets must be non-decreasing int64[n + 1] from 0 to len(xs)")
    cw, ch = _cell_geometry(width, height, grid_x, grid_y, margin)
    n = len(off) - 1
    n_cells = grid_x * grid_y
    with np.errstate(invalid="ignore"):
        invalid = ~((x >= 0) & (x < width) & (y >= 0) & (y < height))  # NaN compares False
    counts = np.diff(off)
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    ok = ~invalid
    xv, yv, owner = x[ok], y[ok], owner[ok]
    col = np.minimum(np.floor(xv / cw), grid_x - 1).astype(np.int64)
    row = np.minimum(np.floor(yv / ch), grid_y - 1).astype(np.int64)
    # which neighbours (-1, 0, +1) each minutia marks on each axis
    if margin > 0:
        x_near = {-1: (xv - col * cw < margin) & (col > 0), 1: ((col + 1) * cw - xv < margin) & (col < grid_x - 1)}
        y_near = {-1: (yv - row * ch < margin) & (row > 0), 1: ((row + 1) * ch - yv < margin) & (row < grid_y - 1)}
    else:
        x_near, y_near = {}, {}
    keys = [owner * n_cells + row * grid_x + col]
    for dy in (-1, 0, 1):  # at most 9 whole-array steps, not one per minutia
        for dx in (-1, 0, 1):
            if dx == 0 and dy == 0:
                continue
            if (dx != 0 and dx not in x_near) or (dy != 0 and dy not in y_near):
                continue
            m = np.ones(len(xv), dtype=bool)
            if dx:
                m &= x_near[dx]
            if dy:
                m &= y_near[dy]
            keys.append(owner[m] * n_cells + (row[m] + dy) * grid_x + (col[m] + dx))
    uk = sorted_unique(np.concatenate(keys))  # sorted by (print, cell), unique
    indptr = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.bincount(uk // n_cells, minlength=n), out=indptr[1:])
    return TokenSets(indptr, (uk % n_cells).astype(np.uint64)), invalid


def grid_cells_reference(
    prints: Sequence[Sequence[tuple[float, float]]],
    *,
    width: float,
    height: float,
    grid_x: int,
    grid_y: int,
    margin: float = 0.0,
) -> tuple[list[list[int]], list[list[bool]]]:
    """Per-minutia Python loop version of :func:`grid_cells` (test oracle)."""
    cw, ch = _cell_geometry(width, height, grid_x, grid_y, margin)
    out: list[list[int]] = []
    bad: list[list[bool]] = []
    for pts in prints:
        cells: set[int] = set()
        flags: list[bool] = []
        for x, y in pts:
            x, y = float(x), float(y)
            if not (0 <= x < width and 0 <= y < height):
                flags.append(True)
                continue
            flags.append(False)
            col = min(math.floor(x / cw), grid_x - 1)
            row = min(math.floor(y / ch), grid_y - 1)
            cols = [col]
            rows = [row]
            if x - col * cw < margin:
                cols.append(col - 1)
            if (col + 1) * cw - x < margin:
                cols.append(col + 1)
            if y - row * ch < margin:
                rows.append(row - 1)
            if (row + 1) * ch - y < margin:
                rows.append(row + 1)
            for r in rows:
                for c in cols:
                    if 0 <= r < grid_y and 0 <= c < grid_x:
                        cells.add(r * grid_x + c)
        out.append(sorted(cells))
        bad.append(flags)
    return out, bad


# --------------------------------------------------------------------------- packing


def n_words(n_bits: int) -> int:
    """``ceil(n_bits / 64)`` (at least 1, so that a 0-bit vector still has a column)."""
    return max(1, -(-int(n_bits) // 64))


def pack_bits(token_sets: TokenSets, n_bits: int) -> UInt64Array:
    """Bit vectors of the token sets: ``(n, ceil(n_bits / 64))`` uint64.

    Token ``t`` sets bit ``t % 64`` of word ``t // 64``. Every token must lie
    in ``[0, n_bits)`` (:class:`ValueError` otherwise). Vectorized: the rows
    are sorted, so the tokens of one ``(row, word)`` are contiguous and are
    OR-ed with one ``np.bitwise_or.reduceat``.
    """
    if n_bits < 1:
        raise ValueError(f"n_bits must be >= 1, got {n_bits}")
    n = len(token_sets)
    w = n_words(n_bits)
    out = np.zeros((n, w), dtype=np.uint64)
    tok = token_sets.tokens.astype(np.uint64, copy=False)
    if len(tok) == 0:
        return out
    if int(tok.max()) >= n_bits:
        raise ValueError(f"token {int(tok.max())} does not fit in {n_bits} bits (tokens must lie in [0, {n_bits}))")
    row = np.repeat(np.arange(n, dtype=np.int64), token_sets.sizes)
    word = (tok >> np.uint64(6)).astype(np.int64)
    val = np.left_shift(np.uint64(1), tok & np.uint64(63))
    key = row * w + word  # non-decreasing: rows in order, tokens sorted within a row
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    out.ravel()[key[starts]] = np.bitwise_or.reduceat(val, starts)
    return out


def pack_bits_reference(sets: Iterable[Iterable[int]], n_bits: int) -> UInt64Array:
    """Python-integer version of :func:`pack_bits` (test oracle)."""
    rows = [list(s) for s in sets]
    w = n_words(n_bits)
    out = np.zeros((len(rows), w), dtype=np.uint64)
    for i, s in enumerate(rows):
        v = 0
        for t in s:
            v |= 1 << int(t)
        for j in range(w):
            out[i, j] = (v >> (64 * j)) & MASK64
    return out


def _as_bytes(bits: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Little-endian byte view of a 2-D uint64 array: byte ``8 w + b`` of a row is bits ``64 w + 8 b ..``."""
    arr = np.ascontiguousarray(bits, dtype="<u8")
    return arr.view(np.uint8).reshape(arr.shape[0], 8 * arr.shape[1])


def bits_from_bool(matrix: npt.ArrayLike) -> UInt64Array:
    """Pack a boolean ``(n, n_bits)`` matrix (column ``k`` = cell ``k``) into uint64 words."""
    m = np.asarray(matrix, dtype=bool)
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {m.shape}")
    w = n_words(m.shape[1])
    packed = np.packbits(m, axis=1, bitorder="little")
    buf = np.zeros((m.shape[0], w * 8), dtype=np.uint8)
    buf[:, : packed.shape[1]] = packed
    return buf.view("<u8").astype(np.uint64)


def bool_from_bits(bits: npt.ArrayLike, n_bits: int | None = None) -> BoolArray:
    """Inverse of :func:`bits_from_bool`: ``(n, n_bits)`` bool (default ``n_bits = 64 W``)."""
    b = np.asarray(bits, dtype=np.uint64)
    if b.ndim != 2:
        raise ValueError(f"bits must be 2-D, got shape {b.shape}")
    m = np.unpackbits(_as_bytes(b), axis=1, bitorder="little").view(bool)
    return m if n_bits is None else m[:, :n_bits]


def unpack_bits(bits: npt.ArrayLike, n_bits: int | None = None, chunk_rows: int = 1 << 16) -> TokenSets:
    """Token sets (uint64 cell indices, rows sorted) of packed bit vectors.

    ``n_bits`` (default ``64 W``) bounds the tokens; a set bit at or above
    ``n_bits`` is a :class:`ValueError`. Rows are unpacked ``chunk_rows`` at a
    time (``chunk_rows * 64 W`` bytes of booleans).
    """
    b = np.asarray(bits, dtype=np.uint64)
    if b.ndim != 2:
        raise ValueError(f"bits must be 2-D, got shape {b.shape}")
    n, w = b.shape
    nb = 64 * w if n_bits is None else int(n_bits)
    if nb > 64 * w:
        raise ValueError(f"n_bits={nb} exceeds the {64 * w} bits of {w} words")
    counts = np.zeros(n, dtype=np.int64)
    toks: list[UInt64Array] = []
    for a in range(0, n, chunk_rows):  # one step per chunk of rows
        m = bool_from_bits(b[a : a + chunk_rows])
        if m[:, nb:].any():
            raise ValueError(f"bit vectors hold bits at or above n_bits={nb}")
        r, c = np.nonzero(m[:, :nb])
        counts[a : a + len(m)] = np.bincount(r, minlength=len(m))
        toks.append(c.astype(np.uint64))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    tokens = np.concatenate(toks) if toks else np.zeros(0, dtype=np.uint64)
    return TokenSets(indptr, tokens)


# --------------------------------------------------------------------------- popcount


def popcount_lut(words: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Set bits of every uint64 element, by an 8-bit lookup table (works on any numpy)."""
    a = np.ascontiguousarray(words, dtype="<u8")
    per_byte = _LUT8[a.view(np.uint8)].reshape(a.shape + (8,))
    counts: npt.NDArray[np.uint8] = per_byte.sum(axis=-1, dtype=np.uint8)
    return counts


def popcount(words: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Number of set bits of every uint64 element (same shape, uint8).

    ``np.bitwise_count`` (numpy >= 2.0, one hardware popcount per element)
    when available, else :func:`popcount_lut`.
    """
    a = np.asarray(words, dtype=np.uint64)
    if HAS_BITWISE_COUNT:
        return np.bitwise_count(a)
    return popcount_lut(a)


def popcount_reference(words: npt.ArrayLike) -> list[int]:
    """``bin(x).count("1")`` per element of the flattened input (test oracle)."""
    return [bin(int(x)).count("1") for x in np.asarray(words, dtype=np.uint64).ravel()]


def row_popcount(bits: npt.ArrayLike) -> Int64Array:
    """Set bits per row of a ``(n, W)`` uint64 matrix, int64 ``(n,)``."""
    b = np.asarray(bits, dtype=np.uint64)
    if b.ndim != 2:
        raise ValueError(f"bits must be 2-D, got shape {b.shape}")
    counts: Int64Array = popcount(b).sum(axis=1, dtype=np.int64)
    return counts


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


def _pair_args(
    bits: npt.ArrayLike, left: npt.ArrayLike, right: npt.ArrayLike
) -> tuple[UInt64Array, Int64Array, Int64Array]:
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


def shares_bucket_reference(
    bits: npt.ArrayLike, left: Sequence[int], right: Sequence[int], sets: npt.ArrayLike
) -> list[bool]:
    """Python-integer version of :func:`shares_bucket` (test oracle)."""
    b = np.asarray(bits, dtype=np.uint64)
    ints = [sum(int(x) << (64 * k) for k, x in enumerate(row)) for row in b]
    ss = np.asarray(sets).tolist()
    out = []
    for i, j in zip(left, right):
        v = ints[int(i)] & ints[int(j)]
        out.append(any(all((v >> int(c)) & 1 for c in cells) for cells in ss))
    return out


# --------------------------------------------------------------------------- probabilities


def _one_minus_pow(x: Any, m: Any) -> Any:
    """``1 - (1 - x)**m``, accurate for small ``x`` (``-expm1(m log1p(-x))``)."""
    with np.errstate(divide="ignore"):  # x = 1: log1p(-1) = -inf, result 1
        return -np.expm1(np.asarray(m, dtype=np.float64) * np.log1p(-np.asarray(x, dtype=np.float64)))


def candidate_probabilities(occupancy: float, agreement: float, cells: int, sets: int) -> tuple[float, float]:
    """``(P(candidate | same finger), P(candidate | different fingers))`` (SEEDS §6).

    ``P_same = 1 - (1 - (p q)**c)**M``, ``P_diff = 1 - (1 - p**(2 c))**M``
    with occupancy ``p``, agreement ``q``, ``c`` cells per set, ``M`` sets.
    Assumes the ``M`` set hits of one pair are independent; see
    :func:`candidate_probabilities_exact` for a finite grid.
    p = 0.2, q = 0.8, c = 3, M = 1024 gives (0.98505, 0.06344).
    """
    _check_pq(occupancy, agreement)
    p, q = float(occupancy), float(agreement)
    same = float(_one_minus_pow((p * q) ** cells, sets))
    diff = float(_one_minus_pow(p ** (2 * cells), sets))
    return same, diff


def _check_pq(p: float, q: float) -> None:
    if not (0.0 <= p <= 1.0) or not (0.0 <= q <= 1.0):
        raise ValueError(f"occupancy and agreement must lie in [0, 1], got {p} and {q}")


def _log_comb(n: Float64Array, k: int) -> Float64Array:
    """``log C(n, k)`` elementwise (``-inf`` where ``n < k``)."""
    from math import lgamma

    out = np.full(len(n), -np.inf)
    ok = n >= k
    out[ok] = [lgamma(v + 1) - lgamma(k + 1) - lgamma(v - k + 1) for v in n[ok]]
    return out


def _binom_pmf(n: int, r: float) -> Float64Array:
    from math import lgamma, log

    k = np.arange(n + 1, dtype=np.float64)
    if r <= 0.0 or r >= 1.0:
        out = np.zeros(n + 1)
        out[0 if r <= 0.0 else n] = 1.0
        return out
    lc = np.array([lgamma(n + 1) - lgamma(v + 1) - lgamma(n - v + 1) for v in k])
    return np.exp(lc + k * log(r) + (n - k) * log(1.0 - r))


def _hypergeom_pmf(n: int, a: int, b: int) -> Float64Array:
    """``P(|A ∩ B| = k)``, ``k = 0 .. n``, for independent uniform subsets of sizes ``a``, ``b`` of ``n`` items."""
    k = np.arange(n + 1, dtype=np.float64)
    log_p = np.zeros(n + 1, dtype=np.float64)
    for i, v in enumerate(k):  # n + 1 scalar terms (a pmf table, not a hot path)
        if v > a or b - v < 0 or b - v > n - a:
            log_p[i] = -np.inf
        else:
            log_p[i] = (
                math.lgamma(a + 1) - math.lgamma(v + 1) - math.lgamma(a - v + 1)
                + math.lgamma(n - a + 1) - math.lgamma(b - v + 1) - math.lgamma(n - a - b + v + 1)
                - (math.lgamma(n + 1) - math.lgamma(b + 1) - math.lgamma(n - b + 1))
            )
    return np.exp(log_p)


def candidate_probabilities_exact(
    occupancy: float,
    agreement: float,
    cells: int,
    sets: int,
    n_cells: int,
    model: Literal["latent", "fixed"] = "latent",
) -> tuple[float, float]:
    """Candidate probabilities on a grid of ``N = n_cells`` cells, without the independence assumption.

    For sets drawn independently and uniformly (as :func:`cell_sets` does),
    given that the two prints share ``k`` cells, the sets are i.i.d. and each
    lies inside the shared cells with probability ``C(k, c) / C(N, c)``, so::

        P(candidate) = E_k[ 1 - (1 - C(k, c) / C(N, c))**M ]

    (averaged over the random sets; a fixed collection deviates slightly).
    The distribution of ``k`` depends on the print model
    (see :mod:`er_framework.synth.fingerprints`):

    * ``"latent"`` — every cell independent: ``k ~ Binomial(N, p q)`` for the
      same finger, ``Binomial(N, p**2)`` for different fingers;
    * ``"fixed"`` — every print has exactly ``K = round(p N)`` cells and two
      impressions of one finger share exactly ``round(q K)``: ``k`` is that
      number for the same finger, ``Hypergeometric(N, K, K)`` for different
      fingers.
    """
    _check_pq(occupancy, agreement)
    n, c = int(n_cells), int(cells)
    if c > n:
        raise ValueError(f"cells={c} exceeds n_cells={n}")
    k = np.arange(n + 1, dtype=np.float64)
    x = np.exp(_log_comb(k, c) - _log_comb(np.array([float(n)]), c)[0])
    f = _one_minus_pow(x, sets)
    p, q = float(occupancy), float(agreement)
    if model == "latent":
        w_same, w_diff = _binom_pmf(n, p * q), _binom_pmf(n, p * p)
    elif model == "fixed":
        kk = int(round(p * n))
        w_same = np.zeros(n + 1)
        w_same[int(round(q * kk))] = 1.0
        w_diff = _hypergeom_pmf(n, kk, kk)
    else:
        raise ValueError(f"model must be 'latent' or 'fixed', got {model!r}")
    return float((w_same * f).sum()), float((w_diff * f).sum())


@dataclass(frozen=True)
class SetChoice:
    """For ``cells = c``: the fewest sets reaching the recall, and the resulting rates."""

    cells: int
    sets: int | None  # None: more than max_sets would be needed
    p_same: float
    p_diff: float
    meets_recall: bool
    meets_fp: bool


@dataclass(frozen=True)
class Suggestion:
    """Result of :func:`suggest_sets`."""

    options: list[SetChoice]
    recommended: SetChoice | None
    meets_targets: bool
    note: str = ""
    targets: dict[str, float] = field(default_factory=dict)


def _sets_needed(x: float, target: float) -> int | None:
    """Smallest ``M`` with ``1 - (1 - x)**M >= target`` (``None`` when ``x = 0``)."""
    if x <= 0.0:
        return None
    if x >= 1.0:
        return 1
    m = max(1, math.ceil(math.log1p(-target) / math.log1p(-x)))
    while float(_one_minus_pow(x, m)) < target:  # guard float rounding of the closed form
        m += 1
    while m > 1 and float(_one_minus_pow(x, m - 1)) >= target:
        m -= 1
    return m


def suggest_sets(
    occupancy: float,
    agreement: float,
    target_recall: float,
    max_fp_rate: float,
    c_range: Iterable[int] = range(1, 11),
    max_sets: int = 1 << 20,
) -> Suggestion:
    """Choose ``(c, M)``: for each ``c`` the fewest sets ``M`` with ``P_same >= target_recall``.

    ``M = ceil(log(1 - recall) / log(1 - (p q)**c))`` (then checked exactly);
    ``P_diff`` is the false-positive rate at that ``M``
    (:func:`candidate_probabilities`). Each option records whether it meets
    the recall (``M <= max_sets``) and the false-positive target.

    Recommended: among the options meeting both targets, the one with the
    fewest sets (the blocking work grows with ``M``; ties: the lower
    false-positive rate). When none meets both, the best compromise is
    returned with ``meets_targets = False`` and a note: the option meeting
    the recall with the lowest false-positive rate; failing that, the option
    with the highest recall at ``max_sets``.
    """
    _check_pq(occupancy, agreement)
    if not (0.0 < target_recall < 1.0):
        raise ValueError(f"target_recall must lie in (0, 1), got {target_recall}")
    if not (0.0 <= max_fp_rate <= 1.0):
        raise ValueError(f"max_fp_rate must lie in [0, 1], got {max_fp_rate}")
    p, q = float(occupancy), float(agreement)
    options: list[SetChoice] = []
    for c in c_range:  # one step per candidate set size
        if c < 1:
            raise ValueError(f"cells per set must be >= 1, got {c}")
        m = _sets_needed((p * q) ** c, target_recall)
        if m is None or m > max_sets:
            same, diff = candidate_probabilities(p, q, c, max_sets)
            options.append(SetChoice(c, None, same, diff, False, diff <= max_fp_rate))
        else:
            same, diff = candidate_probabilities(p, q, c, m)
            options.append(SetChoice(c, m, same, diff, True, diff <= max_fp_rate))
    targets = {"target_recall": target_recall, "max_fp_rate": max_fp_rate, "max_sets": max_sets}
    good = [o for o in options if o.meets_recall and o.meets_fp]
    if good:
        best = min(good, key=lambda o: (o.sets, o.p_diff))
        return Suggestion(options, best, True, "", targets)
    recall_ok = [o for o in options if o.meets_recall]
    if recall_ok:
        best = min(recall_ok, key=lambda o: (o.p_diff, o.sets))
        note = (
            f"no cells-per-set value reaches recall {target_recall} with a false-positive rate <= {max_fp_rate} "
            f"within {max_sets} sets; best compromise: c={best.cells}, M={best.sets} with P(candidate | different) = "
            f"{best.p_diff:.4g}; allow more sets or a higher false-positive rate"
        )
        return Suggestion(options, best, False, note, targets)
    if not options:
        return Suggestion(options, None, False, "c_range is empty", targets)
    best = max(options, key=lambda o: (o.p_same, -o.p_diff))
    note = (
        f"no cells-per-set value reaches recall {target_recall} within {max_sets} sets; "
        f"highest recall: c={best.cells} with {max_sets} sets gives {best.p_same:.4g}"
    )
    return Suggestion(options, best, False, note, targets)


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
