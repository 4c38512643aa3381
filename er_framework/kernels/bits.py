"""Fingerprints as grid-cell bit vectors, and blocking on random sets of cells.

The model (SEEDS §6; MMDS ch. 3.8, "matching fingerprints"):
a print is the set of grid cells that hold a minutia, stored as a bit vector.
Choose ``M`` random sets of ``c`` cells; a print falls in set ``j``'s bucket if
all ``c`` of its bits are 1; prints sharing a bucket are candidates.

This module holds the bit vectors: the grid cells of the minutiae, packing and
popcount. The blocking (random cell sets, candidate pairs, the cell overlap of
two prints) is in :mod:`.bits_candidates`; the candidate probabilities and the
choice of ``(c, M)`` are in :mod:`.bits_probabilities`.

Representation: a print's cells are packed into ``W = ceil(n_bits / 64)``
uint64 words; cell ``k`` is bit ``k % 64`` of word ``k // 64`` (least
significant bit first). Every function here is whole-batch numpy; each has a
naive ``*_reference`` twin used as a test oracle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.groups import sorted_unique
from er_framework.kernels.hashing import MASK64

__all__ = [
    "HAS_BITWISE_COUNT",
    "bits_from_bool",
    "bool_from_bits",
    "grid_cells",
    "grid_cells_reference",
    "n_words",
    "pack_bits",
    "pack_bits_reference",
    "popcount",
    "popcount_lut",
    "popcount_reference",
    "row_popcount",
    "unpack_bits",
]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]

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
