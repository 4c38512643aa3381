"""LSH banding of MinHash signatures (MMDS ch. 3.4).

The ``K`` rows of every signature are split into ``b`` bands of ``r`` rows.
Each band of each column is hashed to a bucket; the band number is part of
the bucket key, so two different bands never share a bucket. Columns sharing
a bucket in at least one band are candidate pairs (MMDS 3.4.1). For a pair
with Jaccard similarity ``s`` (MMDS 3.4.2)::

    P(candidate | s) = 1 - (1 - s**r)**b          (the S-curve)
    threshold       t ~ (1/b)**(1/r)              (steepest rise)

e.g. ``b = 20, r = 5``: ``P(0.8) = 0.9996`` and ``P(0.3) = 0.047``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.kernels.groups import pairs_in_groups, unique_pairs
from er_framework.kernels.hashing import B, mix64

__all__ = [
    "BAND_KEY_ROWS",
    "band_keys",
    "bucket_ids",
    "bucket_candidates",
    "bucket_candidates_reference",
    "candidate_probability",
    "choose_bands",
    "false_positive_area",
    "threshold_estimate",
]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]
FloatOrArray = float | npt.NDArray[np.float64]


def candidate_probability(s: npt.ArrayLike, bands: int, rows: int) -> Any:
    """``P(candidate | s) = 1 - (1 - s**r)**b`` (MMDS 3.4.2).

    ``s`` may be a scalar (returns ``float``) or an array (returns float64 array).
    """
    arr = np.asarray(s, dtype=np.float64)
    p = 1.0 - (1.0 - arr**rows) ** bands
    return float(p) if p.ndim == 0 else p


def threshold_estimate(bands: int, rows: int) -> float:
    """``t ~ (1/b)**(1/r)``: where the S-curve rises steepest (MMDS 3.4.2)."""
    return float((1.0 / bands) ** (1.0 / rows))


def false_positive_area(threshold: float, bands: npt.ArrayLike, rows: npt.ArrayLike, num_points: int = 2049) -> Any:
    """``integral_0^t P(s) ds``, with ``P(s) = 1 - (1 - s**r)**b`` (composite Simpson).

    The area under the S-curve left of the threshold: the (unweighted)
    expected share of candidates among pairs below the threshold, i.e. the
    false-positive cost of a ``(b, r)`` choice (MMDS 3.4.3). ``bands`` and
    ``rows`` broadcast; ``num_points`` is odd.
    """
    if num_points < 3 or num_points % 2 == 0:
        raise ValueError(f"num_points must be odd and >= 3, got {num_points}")
    bb = np.asarray(bands, dtype=np.float64)
    rr = np.asarray(rows, dtype=np.float64)
    s = np.linspace(0.0, threshold, num_points)
    shape = np.broadcast(bb, rr).shape
    bb = np.broadcast_to(bb, shape)[..., None]
    rr = np.broadcast_to(rr, shape)[..., None]
    y = 1.0 - (1.0 - s**rr) ** bb
    w = np.ones(num_points)
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    area = (y * w).sum(axis=-1) * (threshold / (num_points - 1) / 3.0)
    return float(area) if area.ndim == 0 else area


def choose_bands(threshold: float, num_perm: int, target_recall: float = 0.95) -> tuple[int, int]:
    """Pick ``(bands, rows)`` for a similarity ``threshold`` and ``num_perm`` minhashes.

    Among all ``(b, r)`` with ``b * r <= num_perm`` and
    ``P(threshold) = 1 - (1 - threshold**r)**b >= target_recall`` (a pair exactly
    at the threshold is found with at least that probability; pairs above it
    with more, as P rises in s), return the one with the smallest false-positive
    area ``integral_0^threshold P(s) ds`` (:func:`false_positive_area`).
    P rises with ``b``, so for each ``r`` only the smallest feasible ``b`` is a
    candidate (a larger ``b`` only adds false positives). Ties are broken by
    fewer signature rows used (``b * r``), then fewer rows per band.

    Raises :class:`ValueError` when no ``(b, r)`` is feasible, naming the
    ``num_perm`` that would be needed.
    """
    if not (0.0 < threshold <= 1.0):
        raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
    if not (0.0 < target_recall < 1.0):
        raise ValueError(f"target_recall must lie in (0, 1), got {target_recall}")
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {num_perm}")
    cands: list[tuple[int, int]] = []
    for r in range(1, num_perm + 1):  # one step per rows-per-band value (<= K)
        b_all = np.arange(1, num_perm // r + 1)
        probs = 1.0 - (1.0 - threshold**r) ** b_all  # candidate_probability for every b
        feasible = np.flatnonzero(probs >= target_recall)
        if len(feasible):
            cands.append((int(b_all[feasible[0]]), r))
    if not cands:
        need = _needed_num_perm(threshold, target_recall)
        if need is None:
            raise ValueError(
                f"threshold {threshold} is too low for LSH banding: no signature of a usable length reaches recall "
                f"{target_recall} at that similarity; raise the threshold (LSH finds pairs of similarity well above 0), "
                "or block on exact keys instead (field_hash)"
            )
        raise ValueError(
            f"num_perm={num_perm} cannot reach recall {target_recall} at threshold "
            f"{threshold} with any bands x rows <= {num_perm}; use num_perm >= {need[0]} "
            f"(e.g. bands={need[1]}, rows={need[2]}) or lower target_recall"
        )
    bs = np.array([c[0] for c in cands])
    rs = np.array([c[1] for c in cands])
    areas = false_positive_area(threshold, bs, rs)
    best = min(range(len(cands)), key=lambda i: (float(areas[i]), int(bs[i] * rs[i]), int(rs[i])))
    return cands[best]


#: the longest signature :func:`_needed_num_perm` proposes (beyond it, a threshold is too low for banding)
MAX_NEEDED_NUM_PERM = 1 << 20


def _needed_num_perm(threshold: float, target_recall: float, max_rows: int = 64) -> tuple[int, int, int] | None:
    """Smallest ``b * r`` (over ``r <= max_rows``) reaching ``target_recall`` at ``threshold``; None when even
    that exceeds :data:`MAX_NEEDED_NUM_PERM` (a threshold near 0)."""
    best: tuple[int, int, int] | None = None
    for r in range(1, max_rows + 1):
        if best is not None and r >= best[0]:
            break  # b * r >= r cannot beat the best any more
        q = threshold**r
        bands = math.log1p(-target_recall) / math.log1p(-q) if q > 0 else math.inf
        if not bands * r <= MAX_NEEDED_NUM_PERM:
            continue
        b = max(1, math.ceil(bands))
        for _ in range(3):  # guard float rounding of the closed form
            if -math.expm1(b * math.log1p(-q)) >= target_recall:
                break
            b += 1
        if best is None or b * r < best[0]:
            best = (b * r, b, r)
    return best


def band_keys(signatures: npt.NDArray[np.unsignedinteger], bands: int, rows: int) -> UInt64Array:
    """One 64-bit bucket key per band: shape ``(n, bands)`` uint64.

    Band ``j`` covers signature columns ``j*r .. j*r + r - 1`` (only the first
    ``bands * rows`` columns are used). Its key is ``h_r`` of
    ``h_0 = 0, h_{i+1} = mix64(h_i * B + v_i) mod 2**64`` (``B = 0x100000001B3``),
    computed for all bands at once, one step per row of the band. Keys are
    a hash of the band's values, so different values collide with probability
    ~2**-64; the band number is *not* mixed in (see :func:`bucket_candidates`).
    """
    sig = np.asarray(signatures)
    if sig.ndim != 2:
        raise ValueError(f"signatures must be 2-D, got shape {sig.shape}")
    if bands < 1 or rows < 1:
        raise ValueError(f"bands and rows must be >= 1, got bands={bands}, rows={rows}")
    if bands * rows > sig.shape[1]:
        raise ValueError(f"bands * rows = {bands * rows} exceeds the signature length {sig.shape[1]}")
    n = sig.shape[0]
    out = np.empty((n, bands), dtype=np.uint64)
    bb = np.uint64(B)
    for a in range(0, n, BAND_KEY_ROWS):  # one step per block of records: the temporaries stay small
        b = min(n, a + BAND_KEY_ROWS)
        v = sig[a:b, : bands * rows].reshape(b - a, bands, rows)
        h = np.zeros((b - a, bands), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for i in range(rows):
                h *= bb
                h += v[:, :, i].astype(np.uint64)
                h = mix64(h)
        out[a:b] = h
    return out


#: records whose band keys are computed per step (the step's temporaries: ~40 bytes per record and band;
#: the whole 1,000,000-document signature matrix at once made ~0.5 GB of them)
BAND_KEY_ROWS = 1 << 16

#: odd 64-bit constant separating the key spaces of bands (and blockers)
_SALT = np.uint64(0x9E3779B97F4A7C15)


def bucket_ids(keys: UInt64Array, space: int = 0) -> UInt64Array:
    """Globally distinct bucket ids of band keys: ``mix64(key + (j + 1 + space*2**20) * SALT)``.

    ``keys`` is ``(n, bands)`` (:func:`band_keys`): column ``j``'s values are
    mixed with the band number, so that one flat table of bucket ids holds
    every band (two bands share an id with probability ~2**-64). ``space``
    separates the buckets of different blockers of one job.
    """
    k = np.asarray(keys, dtype=np.uint64)
    salt = (np.arange(k.shape[1], dtype=np.uint64) + np.uint64(1 + space * (1 << 20))) * _SALT
    with np.errstate(over="ignore"):
        return mix64(k + salt[None, :])


def _bucket_stats(sizes: Int64Array, oversized: npt.NDArray[np.bool_], raw_pairs: int) -> dict[str, int]:
    big = sizes[oversized]
    return {
        "buckets": int(np.count_nonzero(sizes >= 2)),
        "largest_bucket": int(sizes.max()) if len(sizes) else 0,
        "oversized_buckets": len(big),
        "pairs_skipped": int((big * (big - 1) // 2).sum()),
        "raw_pairs": int(raw_pairs),
    }


def bucket_candidates(
    keys: UInt64Array, ids: Int64Array, max_bucket_size: int | None = None
) -> tuple[Int64Array, Int64Array, dict[str, int]]:
    """Candidate pairs from band keys (MMDS 3.4.1).

    ``keys[i, j]`` is record ``ids[i]``'s key in band ``j``. A bucket is a
    ``(band, key)`` value: entries are grouped by band first, then by key (a
    sort along each band's row, equivalent to a lexsort over both), so two
    bands never share a bucket. Every pair of ids in a
    bucket of size >= 2 is a candidate; pairs are deduplicated across bands
    and returned sorted, ``left < right`` (pairs of an id with itself are
    dropped). Buckets larger than ``max_bucket_size`` are skipped and counted.

    ``ids`` must lie in ``[0, 2**32)`` (pairs are packed into uint64 keys for
    deduplication). Records whose signature is empty (all ``EMPTY``) should be
    excluded by the caller: their keys are all equal and would pair them with
    each other.

    Returns ``(left, right, stats)`` with ``stats`` = ``buckets`` (buckets with
    >= 2 members, skipped ones included), ``largest_bucket`` (size of the
    largest bucket, 0 without records), ``oversized_buckets``,
    ``pairs_skipped`` (sum of ``m (m-1) / 2`` over skipped buckets),
    ``raw_pairs`` (pairs emitted before deduplication).
    """
    k = np.asarray(keys, dtype=np.uint64)
    idv = np.asarray(ids, dtype=np.int64)
    if k.ndim != 2 or k.shape[0] != len(idv):
        raise ValueError(f"keys must be (n, bands) with n = len(ids) = {len(idv)}, got {k.shape}")
    n, nb = k.shape
    # Group by (band, key), one band at a time (band-major, as np.lexsort((key, band)) would order
    # them): a band's sort and groups are temporaries of ~40 bytes per record, not of every band at once
    # (the 1,000,000-document job's block stage held ~0.7 GB of them)
    lefts: list[Int64Array] = []
    rights: list[Int64Array] = []
    all_sizes: list[Int64Array] = []
    raw = 0
    for j in range(nb):  # one step per band
        order = np.argsort(k[:, j])
        sk = k[order, j]
        members = idv[order]
        new = np.ones(n, dtype=bool)
        if n > 1:
            np.not_equal(sk[1:], sk[:-1], out=new[1:])
        starts = np.flatnonzero(new).astype(np.int64)
        sizes = np.diff(np.append(starts, np.int64(n))).astype(np.int64)
        all_sizes.append(sizes)
        use = sizes >= 2
        if max_bucket_size is not None:
            use &= sizes <= max_bucket_size
        left, right = pairs_in_groups(members, starts[use], sizes[use])
        raw += len(left)
        keep = left != right
        lefts.append(left[keep])
        rights.append(right[keep])
    sizes = np.concatenate(all_sizes) if all_sizes else np.zeros(0, dtype=np.int64)
    oversized = sizes > max_bucket_size if max_bucket_size is not None else np.zeros(len(sizes), dtype=bool)
    left, right = unique_pairs(
        np.concatenate(lefts) if lefts else np.zeros(0, dtype=np.int64), np.concatenate(rights) if rights else np.zeros(0, dtype=np.int64)
    )
    return left, right, _bucket_stats(sizes, oversized, raw)


def bucket_candidates_reference(
    keys: UInt64Array, ids: Int64Array, max_bucket_size: int | None = None
) -> tuple[list[int], list[int], dict[str, int]]:
    """Dictionary-based :func:`bucket_candidates` (test oracle)."""
    buckets: dict[tuple[int, int], list[int]] = {}
    kk = [[int(x) for x in row] for row in np.asarray(keys)]
    for i, row in enumerate(kk):
        for band, key in enumerate(row):
            buckets.setdefault((band, key), []).append(int(ids[i]))
    pairs: set[tuple[int, int]] = set()
    stats = {
        "buckets": 0,
        "largest_bucket": 0,
        "oversized_buckets": 0,
        "pairs_skipped": 0,
        "raw_pairs": 0,
    }
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
        for i in range(m):
            for j in range(i + 1, m):
                stats["raw_pairs"] += 1
                a, b = members[i], members[j]
                if a != b:
                    pairs.add((min(a, b), max(a, b)))
    ordered = sorted(pairs)
    return [p[0] for p in ordered], [p[1] for p in ordered], stats
