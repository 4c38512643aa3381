"""Quick upper bounds of string similarities, for skipping comparisons that cannot reach a level.

A Fellegi-Sunter comparison only needs each pair's *agreement level*
(similarity >= 92, >= 80, else ...), and on blocked candidates most pairs
are far below the lowest level: two different customers' addresses or
emails. Their exact similarity (a rapidfuzz call per pair) is wasted work
when a cheap bound already shows that it is below the lowest threshold.

The bound is the *bag* (multiset) overlap of the two strings' characters:
the longest common subsequence, and the number of matching characters of
Jaro, never exceed ``sum_c min(count_a(c), count_b(c))``. Characters are
counted in :data:`SIG_BUCKETS` buckets (several characters share one), which
only makes the sum larger, so the bound stays an upper bound:

* ``ratio`` (normalized InDel similarity, 0..100):
  ``100 * 2 LCS / (la + lb) <= 200 * bag / (la + lb)``;
* ``levenshtein`` (``1 - distance / max(la, lb)``, times 100): every character
  of the longer string not matched to an equal one costs an edit, so
  ``distance >= max(la, lb) - bag``: ``<= 100 * bag / max(la, lb)``;
* ``jaro_winkler`` (times 100): Jaro ``(m/la + m/lb + (m - t)/m) / 3`` with
  ``m <= bag`` and ``(m - t)/m <= 1``, and the Winkler boost (prefix of at
  most 4 characters, weight 0.1) is increasing in Jaro:
  ``<= 100 * (J + 0.4 (1 - J))`` with ``J = (bag/la + bag/lb + 1) / 3``
  (0 when ``bag = 0``).

Signatures (:func:`bag_signatures`) are 32 bytes per distinct value: its
character counts per bucket. Buckets are chosen per column by character
frequency (each character, most frequent first, goes to the least loaded
bucket), so common characters are rarely merged. A value that is not ASCII
or is longer than 255 characters (a count could not be held in a byte) gets
no signature: pairs with such a value are never skipped (``exact_only``).

Everything is whole-array numpy; :func:`bag_overlap_reference` and
:func:`similarity_upper_bound_reference` are the naive twins the tests use.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "BOUNDED_SCORERS",
    "SIG_BUCKETS",
    "BagSignatures",
    "bag_overlap",
    "bag_overlap_reference",
    "bag_signatures",
    "char_buckets",
    "similarity_upper_bound",
    "similarity_upper_bound_reference",
]

#: bytes (character-count buckets) per value
SIG_BUCKETS = 32
#: longest value with a signature (its counts fit in a byte, and a pair's overlap in a byte-sum)
MAX_SIG_LENGTH = 255
#: scorers with an upper bound from the bag overlap (names as in er_plugins.record_columns.SCORERS)
BOUNDED_SCORERS = frozenset({"ratio", "levenshtein", "jaro_winkler"})
#: bytes of values whose signatures are counted in one step (bounds the temporaries: 32 bytes per byte)
CHUNK_BYTES = 1 << 20

_BYTE_SUM = np.uint64(0x0101010101010101)
_TOP_BYTE = np.uint64(56)


@dataclass
class BagSignatures:
    """Per distinct value: its character counts per bucket (``sig``, ``(n, 32)`` uint8), its length
    in characters (``lengths``) and whether pairs with it must always be compared (``exact_only``)."""

    sig: npt.NDArray[np.uint8]
    lengths: npt.NDArray[np.int64]
    exact_only: npt.NDArray[np.bool_]


def char_buckets(byte_counts: npt.ArrayLike, buckets: int = SIG_BUCKETS) -> npt.NDArray[np.uint8]:
    """Bucket of each ASCII character (128 entries): characters taken by decreasing count (ties by
    code), each into the bucket holding the fewest characters so far (ties: the lowest bucket)."""
    counts = np.zeros(128, dtype=np.int64)
    c = np.asarray(byte_counts, dtype=np.int64)[:128]
    counts[: len(c)] = c
    order = np.lexsort((np.arange(128), -counts))
    load = np.zeros(buckets, dtype=np.int64)
    out = np.zeros(128, dtype=np.uint8)
    for ch in order.tolist():  # 128 steps
        j = int(np.argmin(load))
        out[ch] = j
        load[j] += counts[ch]
    return out


def bag_signatures(data: npt.NDArray[np.uint8], offsets: npt.NDArray[np.integer]) -> BagSignatures:
    """Signatures of the values held as UTF-8 bytes: value ``i`` is ``data[offsets[i]:offsets[i + 1]]``.

    Each byte is looked up as four 64-bit words holding a 1 in the byte lane
    of its bucket, and the words of a value are added (``np.add.reduceat``):
    lane ``j`` then counts the value's characters of bucket ``j`` (no carry
    between lanes: a value with a signature has at most 255 characters).
    """
    data = np.asarray(data, dtype=np.uint8)
    off = np.asarray(offsets, dtype=np.int64)
    n = len(off) - 1
    if n <= 0:
        return BagSignatures(np.zeros((0, SIG_BUCKETS), np.uint8), np.zeros(0, np.int64), np.zeros(0, bool))
    lengths = np.diff(off)
    counts = np.zeros(256, dtype=np.int64)
    for a in range(int(off[0]), int(off[-1]), CHUNK_BYTES):  # bincount makes an int64 copy: a chunk at a time
        counts += np.bincount(data[a : min(a + CHUNK_BYTES, int(off[-1]))], minlength=256)
    table = char_buckets(counts)
    words = SIG_BUCKETS // 8
    lut = np.zeros((256, words), dtype=np.uint64)
    for ch in range(128):
        j = int(table[ch])
        lut[ch, j // 8] = np.uint64(1) << np.uint64(8 * (j % 8))
    sig = np.zeros((n, words), dtype=np.uint64)
    non_ascii = np.zeros(n, dtype=bool)
    # chunks of whole values of about CHUNK_BYTES bytes
    cuts = np.searchsorted(off, np.arange(off[0], off[-1], CHUNK_BYTES, dtype=np.int64), side="right") - 1
    bounds = np.unique(np.concatenate([cuts, [0, n]]))
    for v0, v1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        seg = data[off[v0] : off[v1]]
        filled = np.flatnonzero(lengths[v0:v1] > 0) + v0  # empty values hold no byte (and stay exact_only)
        if len(filled) == 0:
            continue
        starts = off[filled] - off[v0]  # strictly increasing: each sum runs to the next filled value's start
        sig[filled] = np.add.reduceat(np.take(lut, seg, axis=0), starts, axis=0)
        non_ascii[filled] = np.maximum.reduceat(seg, starts) >= 128
    exact_only = non_ascii | (lengths > MAX_SIG_LENGTH) | (lengths == 0)
    sig[exact_only] = 0
    return BagSignatures(sig.view(np.uint8).reshape(n, SIG_BUCKETS), lengths.astype(np.int64), exact_only)


def bag_overlap(sig: npt.NDArray[np.uint8], a: npt.NDArray[np.integer], b: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    """``sum over buckets of min(count_a, count_b)`` for the value pairs ``(a[k], b[k])``.

    The 32 byte-minima of a pair are added 8 at a time by one multiplication
    (the top byte of ``w * 0x0101010101010101`` is the sum of ``w``'s bytes,
    exact while below 256: a pair's sum is at most the shorter length, <= 255).
    """
    if len(a) == 0:
        return np.zeros(0, dtype=np.int64)
    x = np.minimum(sig[a], sig[b])
    words = x.view(np.uint64)  # (m, 4)
    sums = (words * _BYTE_SUM) >> _TOP_BYTE
    return np.asarray(sums.sum(axis=1, dtype=np.int64), dtype=np.int64)


def similarity_upper_bound(
    scorer: str, bag: npt.NDArray[np.integer], la: npt.NDArray[np.integer], lb: npt.NDArray[np.integer]
) -> npt.NDArray[np.float64]:
    """Upper bound (0..100 scale) of ``scorer``'s similarity of pairs with bag overlap ``bag`` and lengths ``la``, ``lb``."""
    m = np.asarray(bag, dtype=np.float64)
    x = np.asarray(la, dtype=np.float64)
    y = np.asarray(lb, dtype=np.float64)
    if scorer == "ratio":
        return 200.0 * m / (x + y)
    if scorer == "levenshtein":
        return 100.0 * m / np.maximum(x, y)
    if scorer == "jaro_winkler":
        j = np.where(m > 0, (m / x + m / y + 1.0) / 3.0, 0.0)
        return 100.0 * (j + 0.4 * (1.0 - j))
    raise ValueError(f"no bound for scorer {scorer!r}; bounded: {sorted(BOUNDED_SCORERS)}")


def bag_overlap_reference(a: str, b: str) -> int:
    """Naive twin of :func:`bag_overlap` without buckets: the exact multiset intersection of the characters
    (the bucketed overlap is never smaller)."""
    return sum((Counter(a) & Counter(b)).values())


def similarity_upper_bound_reference(scorer: str, a: str, b: str) -> float:
    """Naive twin of :func:`similarity_upper_bound` for one pair of strings (exact multiset overlap)."""
    m, x, y = bag_overlap_reference(a, b), len(a), len(b)
    if scorer == "ratio":
        return 200.0 * m / (x + y)
    if scorer == "levenshtein":
        return 100.0 * m / max(x, y)
    if scorer == "jaro_winkler":
        j = (m / x + m / y + 1.0) / 3.0 if m else 0.0
        return 100.0 * (j + 0.4 * (1.0 - j))
    raise ValueError(f"no bound for scorer {scorer!r}")
