"""How often two random records agree exactly, from counts over the records, and the dependence of two fields.

Fellegi-Sunter takes the fields independent given the class. Among non-matches they often are not: a zip
gives the city, an address gives both, relatives share a surname and an address. Two records agreeing on
the address then agree on the city and the zip too, and the model counts the same evidence three times
(on generated persons: 13 + 9 + 11 bits for one fact worth 13), so relatives living together outweigh a
different first name and birth date.

The chance that a random pair agrees exactly on a field, or on two fields at once, is a function of the
records' value counts: ``P(f0) = sum_v c_v (c_v - 1) / (N (N - 1))`` among the pairs where the field is
present (in link mode, pairs of different sources); :func:`agreeing_pairs` counts such pairs. The caller
takes the matches' part out of the counts (rare fields, a phone, agree mostly between duplicates, whose
agreements go together because they are one person), and the non-matches' *lift*
``P(f0 and g0) / (P(f0) P(g0))`` (1 for independent fields) says how much of g's agreement f's already
says: :func:`dependence_terms` divides a pattern's likelihood ratio by the lifts of the fields it agrees on,
each field after the rarest conditioned on the earlier field it depends on most (a chain approximation
of the non-match class's joint law of exact agreements).

Counts are kept per (key, source) as arrays (:func:`keyed_counts`), so an executor sums the parts of the
records (:func:`merge_keyed`). Value keys are 64-bit hashes of the texts (:func:`value_keys`), stable
across processes. Tested against naive Python in tests/kernels/test_dependence.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "KeyCounts",
    "agreeing_pairs",
    "agreement_share",
    "combined_keys",
    "dependence_correction",
    "dependence_terms",
    "keyed_counts",
    "merge_keyed",
    "present_pairs",
    "value_keys",
    "value_keys_reference",
]

#: per-record key arrays: a key per record (uint64) and whether the record has one
KeyCounts = tuple[npt.NDArray[np.uint64], npt.NDArray[np.int32], npt.NDArray[np.int64]]

_MIX = np.uint64(0x9E3779B97F4A7C15)


#: values longer than this (UTF-8 bytes) are keyed one at a time (blake2b), the others column-wise (FNV-1a)
LONG_VALUE = 256
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def _blake(v: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(v, digest_size=8).digest(), "little")


def value_keys(values: Sequence[str]) -> npt.NDArray[np.uint64]:
    """A 64-bit key of every text, the same in every process (Python's ``hash`` is not): FNV-1a over the
    UTF-8 bytes, one byte position at a time over all the values (numpy), the length mixed in; values
    longer than :data:`LONG_VALUE` bytes by blake2b. Equal texts get equal keys; different ones collide
    with a chance of about 2**-64 per pair."""
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    n = len(encoded)
    out = np.zeros(n, dtype=np.uint64)
    if n == 0:
        return out
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    long = lengths > LONG_VALUE
    short = np.flatnonzero(~long)
    if len(short):
        width = int(lengths[short].max()) if len(short) else 0
        block = np.zeros((len(short), max(width, 1)), dtype=np.uint8)
        if width:
            raw = np.array([encoded[i] for i in short.tolist()], dtype=f"S{width}")
            block = raw.view(np.uint8).reshape(len(short), width)
        h = np.full(len(short), _FNV_OFFSET, dtype=np.uint64)
        ln = lengths[short]
        with np.errstate(over="ignore"):
            for j in range(width):
                live = ln > j
                h = np.where(live, (h ^ block[:, j].astype(np.uint64)) * _FNV_PRIME, h)
            h = (h ^ ln.astype(np.uint64)) * _FNV_PRIME  # "a" and "a\0" apart (the fixed-width view pads with NUL)
        out[short] = h
    for i in np.flatnonzero(long).tolist():
        out[i] = _blake(encoded[i])
    return out


def value_keys_reference(values: Sequence[str]) -> npt.NDArray[np.uint64]:
    """:func:`value_keys` one value at a time in Python (the reference its tests compare with)."""
    out = np.zeros(len(values), dtype=np.uint64)
    mask = (1 << 64) - 1
    for i, v in enumerate(values):
        b = v.encode("utf-8", "surrogatepass")
        if len(b) > LONG_VALUE:
            out[i] = _blake(b)
            continue
        h = int(_FNV_OFFSET)
        for byte in b:
            h = ((h ^ byte) * int(_FNV_PRIME)) & mask
        out[i] = ((h ^ len(b)) * int(_FNV_PRIME)) & mask
    return out


def combined_keys(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """One key per record for the pair of keys ``(a, b)`` (wrapping arithmetic; collisions ~2**-64 per pair of combos)."""
    with np.errstate(over="ignore"):
        out: npt.NDArray[np.uint64] = (a * _MIX) ^ (b + np.uint64(0x632BE59BD9B4E019))
    return out


def keyed_counts(keys: npt.NDArray[np.uint64], present: npt.NDArray[np.bool_], source: npt.NDArray[np.int32]) -> KeyCounts:
    """The records' count per (key, source), over the records where ``present``: (keys, sources, counts)."""
    k = np.asarray(keys, dtype=np.uint64)[present]
    s = np.asarray(source, dtype=np.int32)[present]
    return _summed(k, s, np.ones(len(k), dtype=np.int64))


def merge_keyed(parts: Sequence[KeyCounts]) -> KeyCounts:
    """The (key, source) counts of several parts summed (sorted by key, then source). Each part is such a
    sum already (:func:`keyed_counts`): one part is returned as it is."""
    if not parts:
        return np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros(0, np.int64)
    if len(parts) == 1:
        return parts[0]
    k = np.concatenate([p[0] for p in parts]).astype(np.uint64, copy=False)
    s = np.concatenate([p[1] for p in parts]).astype(np.int32, copy=False)
    c = np.concatenate([p[2] for p in parts]).astype(np.int64, copy=False)
    return _summed(k, s, c)


#: at most this many low bits of a key give way to the source in :func:`_summed` (more sources: two sorts)
SOURCE_BITS = 8


def _summed(k: npt.NDArray[np.uint64], s: npt.NDArray[np.int32], c: npt.NDArray[np.int64]) -> KeyCounts:
    """Counts ``c`` summed per (key ``k``, source ``s``), sorted by key, then source.

    The source takes the place of the key's lowest bits (as many as the largest source needs, one for two
    sources), so that one unstable sort of 64-bit numbers orders both (a lexsort of the two took five times
    as long: 20 ms for 200,000 records). The keys returned have those bits cleared: two keys that differ only
    there count as one, a chance of 2**-63 per two values with one bit, like a collision of the hash itself.
    """
    if len(k) == 0:
        return k, s, c
    bits = max(1, int(s.max()).bit_length())
    if bits > SOURCE_BITS:
        order = np.lexsort((s, k))
        k, s, c = k[order], s[order], c[order]
        start = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (s[1:] != s[:-1])])
        return k[start], s[start], np.add.reduceat(c, start)
    low = np.uint64((1 << bits) - 1)
    folded = (k & ~low) | s.astype(np.uint64)
    order = np.argsort(folded)
    folded = folded[order]
    start = np.flatnonzero(np.r_[True, folded[1:] != folded[:-1]])
    at = folded[start]
    return at & ~low, (at & low).astype(np.int32), np.add.reduceat(c[order], start)


def agreeing_pairs(counted: KeyCounts, cross_source_only: bool) -> float:
    """How many pairs of records agree on the key: within one collection ``sum c (c - 1) / 2``; with
    ``cross_source_only``, pairs of different sources ``sum_key [(sum_s c)^2 - sum_s c^2] / 2``."""
    keys, _, cnt = counted
    c = cnt.astype(np.float64)
    per_key = _sum_by_key(keys, c)
    if not cross_source_only:
        return float((per_key * (per_key - 1.0)).sum() / 2.0)
    return float((per_key * per_key - _sum_by_key(keys, c * c)).sum() / 2.0)


def present_pairs(counted: KeyCounts, cross_source_only: bool) -> float:
    """How many pairs of records both have a key (within one collection ``N (N - 1) / 2`` of the ``N``
    records counted; with ``cross_source_only``, pairs of different sources ``[(sum_s N_s)^2 - sum_s N_s^2] / 2``)."""
    _, src, cnt = counted
    c = cnt.astype(np.float64)
    if not cross_source_only:
        n = float(c.sum())
        return n * (n - 1.0) / 2.0
    sizes = np.bincount(src, weights=c) if len(src) else np.zeros(0)
    return (float(sizes.sum()) ** 2 - float((sizes * sizes).sum())) / 2.0


def agreement_share(counted: KeyCounts, cross_source_only: bool) -> float:
    """P(two random records agree on the key), among the pairs of records that both have one:
    :func:`agreeing_pairs` over :func:`present_pairs`. 0.0 when there is no such pair."""
    den = present_pairs(counted, cross_source_only)
    return agreeing_pairs(counted, cross_source_only) / den if den > 0 else 0.0


def _sum_by_key(keys: npt.NDArray[np.uint64], values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``values`` summed over runs of equal (sorted) keys."""
    if len(keys) == 0:
        return np.zeros(0)
    start = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    out: npt.NDArray[np.float64] = np.add.reduceat(values, start)
    return out


def dependence_terms(patterns: npt.NDArray[np.int64], log_lift: npt.NDArray[np.float64], order: Sequence[int]) -> npt.NDArray[np.float64]:
    """``(P, F)``: the natural-log weight each field loses in each pattern for the dependence of the
    pattern's exact agreements among non-matches (:func:`dependence_correction` is their sum).

    ``log_lift[f, g]`` (symmetric, >= 0; 0 for fields not compared exactly) is the log lift of the exact
    agreements of f and g among non-matches, ``log(P(f0 and g0) / (P(f0) P(g0)))``; ``order``: the fields
    from the rarest exact agreement to the commonest. Each field g at level 0 after the first such field in
    ``order`` loses ``max log_lift[f, g]`` over the fields f before it in ``order`` at level 0 too: the
    non-match likelihood of the agreements becomes ``P(f0) P(g0 | f0) ...`` (a chain), not ``P(f0) P(g0)``.
    Only exact agreements are corrected: given the address, an exact surname is common among non-matches
    (relatives) while a near one (a typo) is not, so an exact agreement may then weigh less than a near one.
    """
    pat = np.asarray(patterns, dtype=np.int64)
    out = np.zeros(pat.shape, dtype=np.float64)
    agree = pat == 0
    seen: list[int] = []
    for g in order:
        if seen:
            lifts = np.asarray(log_lift[seen, g], dtype=np.float64)
            if lifts.any():
                best = np.max(np.where(agree[:, seen], lifts[None, :], 0.0), axis=1)
                out[:, g] = np.where(agree[:, g], best, 0.0)
        seen.append(int(g))
    return out


def dependence_correction(
    patterns: npt.NDArray[np.int64], log_lift: npt.NDArray[np.float64], order: Sequence[int]
) -> npt.NDArray[np.float64]:
    """The log-odds to subtract from each pattern's (:func:`dependence_terms` summed over the fields)."""
    out: npt.NDArray[np.float64] = dependence_terms(patterns, log_lift, order).sum(axis=1)
    return out
