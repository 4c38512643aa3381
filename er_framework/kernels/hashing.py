"""Stable 64-bit token hashing: shingles and word n-grams (MMDS ch. 3.2).

A k-shingle is a run of k consecutive characters of a document; the document
is represented by the *set* of its shingles (MMDS 3.2.1). Long shingles are
hashed to integers ("tokens", MMDS 3.2.3); here tokens are 64-bit so that two
different shingles share a token only with probability ~2**-64 per pair.

Token definition (the project's contract; identical in every process, on every
machine — Python's salted ``hash()`` is never used):

* ``mix64(x)`` is the splitmix64 finalizer, a bijection of 64-bit words::

      x ^= x >> 30; x *= 0xbf58476d1ce4e5b9
      x ^= x >> 27; x *= 0x94d049bb133111eb
      x ^= x >> 31

* a string ``s`` of length ``L`` with code points ``c_0 .. c_{L-1}``::

      poly(s)        = sum_j (c_j + 1) * B**(L-1-j)   mod 2**64,  B = 0x100000001B3
      hash_string(s) = mix64((poly(s) + L) mod 2**64)

* a character k-shingle is hashed as the string it is: the token of shingle
  ``"abc"`` is ``hash_string("abc")``;
* a word n-gram of word tokens ``w_j = hash_string(word_j)``::

      ngram(w_0..w_{n-1}) = mix64((sum_j w_j * B2**(n-1-j) + n) mod 2**64),  B2 = 0x9E3779B97F4A7C15

  so for ``n = 1`` the token of a word is ``mix64(hash_string(word) + 1)``.

All arithmetic is on uint64 and wraps modulo 2**64 *by definition* (this is
a hash, not a ``mod p`` computation; numpy's wrap-around is intended here).
A text shorter than the window (``0 < L < k`` characters, or fewer than ``n``
words) yields exactly one token, the same formula over the whole text; an
empty text yields no token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.groups import sort_segments
from er_framework.kernels.parallel import map_ordered, row_blocks

__all__ = [
    "B2",
    "B",
    "GOLDEN",
    "MASK32",
    "MASK64",
    "SHIFT32",
    "char_shingles",
    "char_shingles_reference",
    "codepoints",
    "hash_string_reference",
    "hash_strings",
    "mix64",
    "mix64_inplace",
    "mix64_reference",
    "sort_rows",
    "unique_rows",
    "word_ngrams",
    "word_ngrams_reference",
]

UInt64Array = npt.NDArray[np.uint64]
Int64Array = npt.NDArray[np.int64]

#: Base of the string polynomial (the 64-bit FNV prime).
B: int = 0x100000001B3
#: Base of the word n-gram polynomial (2**64 / golden ratio, odd).
B2: int = 0x9E3779B97F4A7C15

#: ``2**64 - 1``: ``x & MASK64`` is ``x mod 2**64`` for Python ints.
MASK64: int = (1 << 64) - 1
#: ``2**32 - 1``: the low 32 bits.
MASK32: int = 0xFFFFFFFF
#: ``floor(2**64 / golden ratio)``, odd: the step of the splitmix64 counter streams.
GOLDEN: int = 0x9E3779B97F4A7C15
#: shift by 32 bits, as a uint64 (numpy keeps uint64 arithmetic uint64).
SHIFT32 = np.uint64(32)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix64(x: npt.ArrayLike) -> UInt64Array:
    """splitmix64 finalizer, elementwise, arithmetic modulo 2**64.

    ``x ^= x>>30; x *= 0xbf58476d1ce4e5b9; x ^= x>>27; x *= 0x94d049bb133111eb;
    x ^= x>>31``. The multiplications wrap modulo 2**64 on purpose (a bijective
    bit mixer, not modular arithmetic over a prime). Returns a new array.
    """
    h = np.array(x, dtype=np.uint64)  # always a copy
    with np.errstate(over="ignore"):
        h ^= h >> _S30
        h *= _M1
        h ^= h >> _S27
        h *= _M2
        h ^= h >> _S31
    return h


def mix64_inplace(h: UInt64Array) -> UInt64Array:
    """:func:`mix64` of ``h``, written into ``h`` and returned: no copy, one temporary (for a caller's own
    fresh uint64 array: the window hashes, a token array XOR a seed). Anything else (another dtype, a
    read-only array) gets :func:`mix64`'s copy. Equal to :func:`mix64` (the tests compare them)."""
    if not isinstance(h, np.ndarray) or h.dtype != np.uint64 or not h.flags.writeable:
        return mix64(h)
    t = np.empty_like(h)
    with np.errstate(over="ignore"):
        np.right_shift(h, _S30, out=t)
        h ^= t
        h *= _M1
        np.right_shift(h, _S27, out=t)
        h ^= t
        h *= _M2
        np.right_shift(h, _S31, out=t)
        h ^= t
    return h


def mix64_reference(x: int) -> int:
    """Pure-Python splitmix64 finalizer on one integer (test oracle)."""
    x &= MASK64
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    x ^= x >> 31
    return x


def codepoints(texts: Sequence[str]) -> tuple[npt.NDArray[np.uint32], Int64Array]:
    """Code points of all texts, concatenated, and CSR offsets (length ``n + 1``).

    The texts are joined once and encoded once as UTF-32-LE (lone surrogates
    pass through as their code point), then viewed with ``np.frombuffer``;
    text ``i`` is ``cps[offsets[i]:offsets[i+1]]``.
    """
    n = len(texts)
    offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n), out=offsets[1:])
    raw = "".join(texts).encode("utf-32-le", errors="surrogatepass")
    cps = np.frombuffer(raw, dtype=np.uint32)
    return cps, offsets


def _powers(base: int, count: int) -> UInt64Array:
    """``[base**0, base**1, ..., base**(count-1)] mod 2**64``."""
    pw = np.full(max(count, 1), np.uint64(base), dtype=np.uint64)
    pw[0] = 1
    with np.errstate(over="ignore"):
        np.multiply.accumulate(pw, out=pw)
    return pw[:count]


def _segment_poly(values: UInt64Array, lengths: Int64Array, base: int) -> UInt64Array:
    """Per segment ``sum_j v_j * base**(L-1-j) mod 2**64`` (0 for an empty segment).

    Each value is multiplied by ``base`` to the power of its distance to the
    end of its segment (from a precomputed power table), then segments are
    summed with ``np.add.reduceat``. ``reduceat`` returns ``values[i]`` (not 0)
    for an empty segment, so it is applied to the non-empty segments only.
    """
    n = len(lengths)
    out = np.zeros(n, dtype=np.uint64)
    total = len(values)
    if total == 0:
        return out
    ends = np.cumsum(lengths)
    starts = ends - lengths
    dist = np.repeat(ends - 1, lengths) - np.arange(total, dtype=np.int64)
    pw = _powers(base, int(lengths.max()))
    with np.errstate(over="ignore"):
        terms = values * pw[dist]
        nonempty = lengths > 0
        out[nonempty] = np.add.reduceat(terms, starts[nonempty])
    return out


def _hash_segments(values: UInt64Array, lengths: Int64Array, base: int) -> UInt64Array:
    """``mix64(poly + L)`` per segment (see module docstring)."""
    poly = _segment_poly(values, lengths, base)
    with np.errstate(over="ignore"):
        poly += lengths.astype(np.uint64)
    return mix64(poly)


def hash_strings(strings: Sequence[str]) -> UInt64Array:
    """``hash_string(s)`` for every string of the batch, vectorized.

    ``hash_string(s) = mix64((sum_j (c_j + 1) * B**(L-1-j) + L) mod 2**64)``,
    ``B = 0x100000001B3``; ``hash_string("") = mix64(0) = 0``.
    """
    cps, offsets = codepoints(strings)
    values = cps.astype(np.uint64) + np.uint64(1)
    return _hash_segments(values, np.diff(offsets), B)


def hash_string_reference(s: str) -> int:
    """Pure-Python ``hash_string`` (Horner form of the polynomial; test oracle)."""
    h = 0
    for ch in s:
        h = (h * B + ord(ch) + 1) & MASK64
    return mix64_reference(h + len(s))


#: rows of at least this many tokens are sorted one numpy call each (measured ~4 ns/token and ~1.5 us/call,
#: against ~20-40 ns/token for the padded segmented sort, which keeps the rows shorter than this)
ROW_LOOP_MIN = 32


def sort_rows(tokens: npt.NDArray[Any], counts: Int64Array, in_place: bool = False) -> npt.NDArray[Any]:
    """Every row (``counts[i]`` consecutive values) sorted ascending: a new array (``in_place``: ``tokens``
    itself, sorted where it is, when it is a writable contiguous array).

    Long rows (:data:`ROW_LOOP_MIN` tokens or more) are sorted in place one
    slice at a time (numpy's SIMD sort; a document has thousands of
    shingles, so the per-call cost is noise); shorter rows go through the
    padded segmented sort of :func:`groups.sort_segments`. Equal to sorting
    each row on its own (the tests compare with that).
    """
    counts = np.asarray(counts, dtype=np.int64)
    own = in_place and tokens.flags.writeable and tokens.flags.c_contiguous
    out = tokens if own else np.array(tokens, copy=True)
    long = counts >= ROW_LOOP_MIN
    if not long.any():
        return sort_segments(out, counts)
    starts = np.cumsum(counts) - counts
    for a, b in zip(starts[long].tolist(), (starts + counts)[long].tolist()):  # one step per long row
        out[a:b].sort()
    short = (counts >= 2) & ~long
    if short.any():
        seg = counts[short]
        first = np.cumsum(seg) - seg
        pos = np.repeat(starts[short] - first, seg) + np.arange(int(seg.sum()), dtype=np.int64)
        out[pos] = sort_segments(out[pos], seg)
    return out


def _csr_unique_rows(tokens: npt.NDArray[Any], counts: Int64Array, in_place: bool = False) -> TokenSets:
    """Sort every row (``counts[i]`` consecutive tokens), drop duplicates within it, build CSR
    (:func:`sort_rows`; much faster than ``np.lexsort((tokens, rows))``). ``in_place``: ``tokens`` may be
    sorted where it is (an array the caller no longer needs in its order)."""
    n = len(counts)
    counts = np.asarray(counts, dtype=np.int64)
    t = sort_rows(tokens, counts, in_place=in_place)
    indptr = np.zeros(n + 1, dtype=np.int64)
    if len(t) == 0:
        return TokenSets(indptr, np.zeros(0, dtype=np.uint64))
    keep = np.ones(len(t), dtype=bool)
    nonempty = counts > 0
    starts = (np.cumsum(counts) - counts)[nonempty]
    if len(t) > 1:
        np.not_equal(t[1:], t[:-1], out=keep[1:])
        keep[starts] = True  # the first token of a row is always kept
    sizes = np.zeros(n, dtype=np.int64)
    sizes[nonempty] = np.add.reduceat(keep, starts, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    # np.compress, not t[keep]: the same values, ~4x faster than boolean indexing (numpy 2.4, measured)
    return TokenSets(indptr, np.ascontiguousarray(np.compress(keep, t), dtype=np.uint64))


def unique_rows(multiset: TokenSets, workers: int = 1, block_tokens: int = 1 << 20, in_place: bool = False) -> TokenSets:
    """The set of every row of ``multiset`` (its distinct tokens, sorted ascending): a new :class:`TokenSets`.

    For a shingler's :meth:`shingle_multiset` rows this is its :meth:`shingle` (the contract: the
    multiset's distinct tokens are the set). Blocks of whole rows of about ``block_tokens`` tokens are
    sorted and deduplicated on ``workers`` threads (numpy's sort releases the GIL) and their results
    joined in row order, so the result does not depend on either (tests compare with ``np.unique`` per row).
    ``in_place``: the rows of ``multiset`` are sorted where they are (it stays the same multiset; no copy).
    """
    blocks = row_blocks(multiset, block_tokens)
    if len(blocks) <= 1:
        return _csr_unique_rows(multiset.tokens, multiset.sizes, in_place=in_place)

    def one(ab: tuple[int, int]) -> TokenSets:
        part = multiset.slice(*ab)
        return _csr_unique_rows(part.tokens, part.sizes, in_place=in_place)

    return TokenSets.concat(map_ordered(one, blocks, workers))


def _window_valid(lengths: Int64Array, k: int, w: int) -> npt.NDArray[np.bool_]:
    """Whether each of the ``w`` windows of length ``k`` of the concatenation lies inside its segment.

    The windows starting in the last ``k - 1`` positions of a segment (all of
    a segment shorter than ``k``) cross its end; only those ``<= n (k - 1)``
    positions are written, no per-position segment number is built.
    """
    valid = np.ones(w, dtype=bool)
    if k <= 1 or w == 0:
        return valid
    ends = np.cumsum(lengths)
    first_bad = np.maximum(ends - lengths, ends - (k - 1))
    bad = ends - first_bad  # per segment, windows starting too late: min(L, k - 1)
    total = int(bad.sum())
    pos = np.repeat(first_bad - (np.cumsum(bad) - bad), bad) + np.arange(total, dtype=np.int64)
    valid[pos[pos < w]] = False
    return valid


def _window_hashes(
    values: UInt64Array, lengths: Int64Array, k: int, base: int, with_segments: bool = True
) -> tuple[UInt64Array, Int64Array | None, npt.NDArray[np.bool_]]:
    """Hashes of every length-``k`` window of the concatenation, the segment of each
    window start (None unless ``with_segments``), and whether the window lies inside its segment.

    ``h_i = mix64(sum_{j<k} v_{i+j} base**(k-1-j) + k)`` (mod 2**64), computed with
    ``k`` shifted multiply-adds (Horner) over the whole batch.
    """
    n = len(lengths)
    total = len(values)
    if total < k:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, bool)
    w = total - k + 1
    h = values[:w].copy()
    bb = np.uint64(base)
    with np.errstate(over="ignore"):
        for j in range(1, k):  # k shifted adds over the whole batch
            h *= bb
            h += values[j : j + w]
        h += np.uint64(k)
    seg = np.repeat(np.arange(n, dtype=np.int64), lengths)[:w] if with_segments else None
    return mix64_inplace(h), seg, _window_valid(lengths, k, w)


def _window_tokens(values: UInt64Array, lengths: Int64Array, k: int, base: int, unique: bool = True) -> TokenSets:
    """Set of window hashes per segment: ``mix64(sum_{j<k} v_{i+j} base**(k-1-j) + k)``.

    Windows crossing a segment boundary are masked out. Segments with
    ``0 < L < k`` give one token over all ``L`` values; empty segments give none.
    ``unique=False`` skips the per-row sort and deduplication: every window in
    text order, repeats included (a *multiset*; see :func:`char_shingles`).
    """
    has_windows = lengths >= k
    short = (lengths > 0) & ~has_windows
    counts = np.where(has_windows, lengths - k + 1, short.astype(np.int64)).astype(np.int64)
    h, _, valid = _window_hashes(values, lengths, k, base, with_segments=False)
    if not short.any():  # every token is a window (the usual case): no slot mask
        tokens = np.compress(valid, h)  # h[valid], ~4x faster
    else:
        tokens = np.empty(int(counts.sum()), dtype=np.uint64)
        from_windows = np.repeat(has_windows, counts)  # token slots filled by windows
        tokens[from_windows] = np.compress(valid, h)  # valid windows come in row order
        pos_mask = np.repeat(short, lengths)
        tokens[~from_windows] = _hash_segments(values[pos_mask], lengths[short], base)
    if not unique:
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return TokenSets(indptr, tokens)
    return _csr_unique_rows(tokens, counts, in_place=True)  # tokens is this function's own array


def char_shingles(texts: Sequence[str], k: int, unique: bool = True) -> TokenSets:
    """The set of character k-shingles of every text, as 64-bit tokens (MMDS 3.2.1).

    Token of a shingle ``s`` = ``hash_string(s)``. Row ``i`` is sorted ascending
    and unique. A text with ``0 < len < k`` yields one token, the hash of the
    whole text; an empty text yields an empty row. No preprocessing is done
    here (lower-casing, whitespace handling belong to the caller).

    Vectorized: code points of the batch are obtained with one encode; the
    window polynomial is built with ``k`` shifted multiply-adds over the
    concatenation and windows crossing a text boundary are masked out.

    ``unique=False`` returns the *multiset*: every shingle in text order,
    repeats included, rows unsorted. Its distinct tokens per row are exactly
    the set; a signature that only takes minima (MinHash, OPH, FSS) is the
    same on both, and skipping the per-row sort halves the cost.
    """
    if k < 1:
        raise ValueError(f"shingle size k must be >= 1, got {k}")
    cps, offsets = codepoints(texts)
    values = cps.astype(np.uint64) + np.uint64(1)
    return _window_tokens(values, np.diff(offsets), int(k), B, unique=unique)


def char_shingles_reference(texts: Sequence[str], k: int) -> list[list[int]]:
    """Pure-Python :func:`char_shingles`: sorted unique tokens per text (test oracle)."""
    out: list[list[int]] = []
    for t in texts:
        if not t:
            out.append([])
        elif len(t) < k:
            out.append([hash_string_reference(t)])
        else:
            out.append(sorted({hash_string_reference(t[i : i + k]) for i in range(len(t) - k + 1)}))
    return out


def word_ngrams(texts: Sequence[str], n: int, pattern: str = r"\w+", unique: bool = True) -> TokenSets:
    """The set of word n-grams of every text, as 64-bit tokens.

    Words are the matches of ``pattern`` (``re.finditer``, whole match); word
    tokens ``w = hash_string(word)`` are computed for all words of the batch
    at once. An n-gram token is
    ``mix64((sum_{j=0}^{n-1} w_j * B2**(n-1-j) + n) mod 2**64)``,
    ``B2 = 0x9E3779B97F4A7C15``; for ``n = 1`` that is ``mix64(w + 1)``.
    A text with ``0 < words < n`` yields one token (the formula over all its
    words, with ``n`` replaced by the word count); a text without words
    yields an empty row. Rows are sorted ascending and unique; ``unique=False``
    gives the multiset (as :func:`char_shingles`).
    """
    if n < 1:
        raise ValueError(f"n-gram size n must be >= 1, got {n}")
    w, counts = word_tokens(texts, pattern)
    return _window_tokens(w, counts, int(n), B2, unique=unique)


def word_tokens(texts: Sequence[str], pattern: str = r"\w+") -> tuple[UInt64Array, Int64Array]:
    """Token of every word of the batch (``hash_string``) and the word count per text.

    Words are the matches of ``pattern``: one regex scan per text, the
    hashing vectorized over the whole batch.
    """
    rx = re.compile(pattern)
    words: list[str] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    for i, t in enumerate(texts):  # one regex scan per text, one step per word
        found = rx.findall(t) if rx.groups == 0 else [m.group(0) for m in rx.finditer(t)]
        counts[i] = len(found)
        words.extend(found)
    return hash_strings(words), counts


def stopword_shingles(texts: Sequence[str], stop_words: Sequence[str], n: int = 2, pattern: str = r"\w+") -> TokenSets:
    """Stop-word shingles (MMDS 3.2.4): a stop word followed by the next ``n`` words.

    "I recommend that you buy Sudzo for your laundry" with n = 2 gives
    "I recommend that", "that you buy", "you buy Sudzo", "for your laundry", …
    — every window of ``n + 1`` words whose first word is a stop word. The
    token of a shingle is the word n-gram token of its ``n + 1`` words (the
    same formula as :func:`word_ngrams` with ``n + 1``), so a stop-word
    shingle equals the word (n+1)-gram it spells. A stop word with fewer than
    ``n`` words after it in its text starts no shingle. Matching is exact on
    the word strings (lower-case both sides beforehand for case-insensitive
    matching). Vectorized: stop words are found with ``np.isin`` on the word
    tokens, windows with :func:`_window_hashes`.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    w, counts = word_tokens(texts, pattern)
    k = int(n) + 1
    h, seg, valid = _window_hashes(w, counts, k, B2)
    assert seg is not None
    starts_at_stop = np.isin(w[: len(h)], hash_strings(list(stop_words)))
    keep = valid & starts_at_stop
    per_row = np.bincount(seg[keep], minlength=len(counts)).astype(np.int64)
    return _csr_unique_rows(h[keep], per_row)


def stopword_shingles_reference(texts: Sequence[str], stop_words: Sequence[str], n: int = 2, pattern: str = r"\w+") -> list[list[int]]:
    """Pure-Python :func:`stopword_shingles` (test oracle)."""
    rx = re.compile(pattern)
    stops = set(stop_words)
    out: list[list[int]] = []
    for t in texts:
        words = [m.group(0) for m in rx.finditer(t)]
        toks = [hash_string_reference(x) for x in words]
        out.append(sorted({_ngram_reference(toks[i : i + n + 1]) for i in range(len(words) - n) if words[i] in stops}))
    return out


def _ngram_reference(ws: Sequence[int]) -> int:
    h = 0
    for x in ws:
        h = (h * B2 + x) & MASK64
    return mix64_reference(h + len(ws))


def word_ngrams_reference(texts: Sequence[str], n: int, pattern: str = r"\w+") -> list[list[int]]:
    """Pure-Python :func:`word_ngrams`: sorted unique tokens per text (test oracle)."""
    rx = re.compile(pattern)
    out: list[list[int]] = []
    for t in texts:
        ws = [hash_string_reference(m.group(0)) for m in rx.finditer(t)]
        if not ws:
            out.append([])
        elif len(ws) < n:
            out.append([_ngram_reference(ws)])
        else:
            out.append(sorted({_ngram_reference(ws[i : i + n]) for i in range(len(ws) - n + 1)}))
    return out
