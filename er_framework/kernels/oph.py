"""One-permutation hashing with optimal densification (Shrivastava, ICML 2017).

Classic MinHash (:mod:`.minhash`) evaluates ``K`` hash functions on every
token: ``O(tokens x K)`` work per set. One-permutation hashing (OPH; Li, Owen,
Zhang 2012) hashes every token *once*, splits the hash range into ``K`` bins
and keeps the minimum per bin: ``O(tokens + K)``. A bin that receives no token
of a set is *empty*; "Optimal Densification for Fast and Accurate Minwise
Hashing" (Shrivastava, ICML 2017) fills it by probing other bins with a hash
of ``(bin, attempt)`` that is the same for every set, until a non-empty bin is
found, and copying that bin's value.

Definition (the project's contract; all arithmetic on uint64, wrapping modulo
2**64 only inside ``mix64``, a bijective bit mixer — every other product below
is exact because both factors are < 2**32)::

    s_j = mix64((seed + j * 0x9E3779B97F4A7C15) mod 2**64),   j = 1, 2, 3   (salts)
    h(x)   = mix64(x XOR s_1)                                  (x = 64-bit token)
    bin(x) = ((h(x) >> 32) * K) >> 32                          in [0, K)   (top 32 bits times K, >> 32;
                                                                            K <= 2**31 so exact in uint64)
    val(x) = ((mix64(h(x) XOR s_2) & 0xFFFFFFFF) * 0xFFFFFFFF) >> 32   in [0, 2**32 - 2]

so ``val`` never equals :data:`EMPTY` (``0xFFFFFFFF``). Bin ``i`` of set ``S``
is ``v_i = min {val(x) : x in S, bin(x) = i}`` when some token falls into it.
An empty bin ``i`` takes ``v_j`` of the first non-empty bin ``j`` in the probe
sequence ``probe(i, 1), probe(i, 2), ...``::

    probe(i, t) = ((mix64(s_3 XOR (i * 2**32 + t)) >> 32) * K) >> 32   in [0, K)

(``i < K <= 2**31`` and ``t < 2**32``, so ``i * 2**32 + t`` is exact and
distinct for every ``(i, t)``). Only originally non-empty bins are copied from,
never bins filled by densification. A probe may land on ``i`` itself or on
another empty bin; then the next attempt is made. With ``m`` non-empty bins an
empty bin needs ``K / m`` attempts on average. The signature of an empty set
is all :data:`EMPTY`.

Estimator. For every position ``i`` (Shrivastava 2017, Thm. 1)::

    P[SIG_A[i] == SIG_B[i]] = J(A, B)

(up to the ~2**-32 chance that two different tokens share a bin value), so the
fraction of agreeing positions is an unbiased estimate of the Jaccard
similarity, usable by :func:`.minhash.estimate_jaccard` and LSH banding
unchanged. Variance (Shrivastava 2017, Thm. 2): exact expression in terms of
``K``, ``J`` and the number of empty bins of ``A ∪ B``. Without empty bins
(``|A ∪ B| >> K``) it is OPH's variance, which is *below* classic MinHash's
``J (1 - J) / K`` (bins sample the union without replacement; Li, Owen, Zhang
2012); with empty bins optimal densification keeps it close to
``J (1 - J) / K`` — each empty bin copies an independent, uniformly chosen
non-empty bin, which is what makes the densification "optimal" (earlier
rotation schemes copy the neighbouring bin and correlate runs of positions).
The tests measure the mean squared error against classic MinHash on the
same pairs.

Storage: uint32, 4 bytes per entry, as :func:`.minhash.minhash_signatures`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.hashing import GOLDEN, MASK32, MASK64, SHIFT32, mix64, mix64_reference
from er_framework.kernels.minhash import EMPTY
from er_framework.kernels.parallel import row_blocks

__all__ = ["check_num_perm", "oph_reference", "oph_salts", "oph_signatures", "probe_bins"]

UInt32Array = npt.NDArray[np.uint32]
UInt64Array = npt.NDArray[np.uint64]

_MAX_K = 1 << 31


def check_num_perm(num_perm: int) -> int:
    """``num_perm`` (the number of bins K) as an int; ValueError unless ``1 <= K <= 2**31``."""
    k = int(num_perm)
    if not (1 <= k <= _MAX_K):
        raise ValueError(f"num_perm must satisfy 1 <= num_perm <= 2**31, got {num_perm}")
    return k


def oph_salts(seed: int) -> tuple[int, int, int]:
    """``s_j = mix64((seed + j * 0x9E3779B97F4A7C15) mod 2**64)`` for ``j = 1, 2, 3``."""
    s = int(seed) & MASK64
    s1, s2, s3 = (mix64_reference((s + j * GOLDEN) & MASK64) for j in (1, 2, 3))
    return s1, s2, s3


def probe_bins(num_perm: int, seed: int, attempt: int) -> UInt64Array:
    """``probe(i, attempt)`` for every bin ``i = 0 .. K-1`` (module docstring), uint64."""
    k = check_num_perm(num_perm)
    if not (1 <= attempt < (1 << 32)):
        raise ValueError(f"attempt must lie in [1, 2**32), got {attempt}")
    s3 = np.uint64(oph_salts(seed)[2])
    key = (np.arange(k, dtype=np.uint64) << SHIFT32) | np.uint64(attempt)
    return ((mix64(key ^ s3) >> SHIFT32) * np.uint64(k)) >> SHIFT32


def _bins_and_values(tokens: npt.NDArray[np.unsignedinteger], k: int, s1: int, s2: int) -> tuple[UInt64Array, UInt32Array]:
    """``bin(x)`` (uint64) and ``val(x)`` (uint32) of every token, vectorized."""
    h = mix64(tokens.astype(np.uint64) ^ np.uint64(s1))
    bins = ((h >> SHIFT32) * np.uint64(k)) >> SHIFT32
    m = mix64(h ^ np.uint64(s2))
    m &= np.uint64(MASK32)
    m *= np.uint64(MASK32)  # < 2**64: exact
    m >>= SHIFT32
    return bins, m.astype(np.uint32)


def _densify(sig: UInt32Array, rows: npt.NDArray[np.int64], k: int, seed: int) -> None:
    """Optimal densification of ``sig[rows]`` in place (rows have >= 1 non-empty bin).

    One vectorized step per attempt ``t`` over all (row, bin) positions still
    empty; values are copied from the bins as they were before densification.
    """
    orig = sig[rows]  # snapshot: copy only from originally non-empty bins
    flat = orig.ravel()
    todo = np.flatnonzero(flat == EMPTY)  # flat positions r * K + i into orig
    if todo.size == 0:
        return
    out = flat.copy()
    kk = np.int64(k)
    t = 0
    while todo.size:  # one step per attempt (expected ~K / m attempts)
        t += 1
        probe = probe_bins(k, seed, t).astype(np.int64)
        src = todo - todo % kk + probe[todo % kk]
        v = flat[src]
        hit = v != EMPTY
        out[todo[hit]] = v[hit]
        todo = todo[~hit]
    sig[rows] = out.reshape(orig.shape)


def oph_signatures(
    token_sets: TokenSets,
    num_perm: int,
    seed: int,
    chunk_tokens: int = 1 << 17,
) -> UInt32Array:
    """OPH signatures with optimal densification, shape ``(n_sets, K)``, uint32.

    Definition in the module docstring. Work ``O(tokens + K)`` per set: every
    token is hashed twice (``mix64``) for the whole batch at once; the
    per-(row, bin) minimum is a segmented reduction ``np.minimum.at`` on a flat
    ``(rows x K)`` uint32 array (measured faster than sorting a combined
    ``(row * K + bin) << 32 | val`` uint64 key with ``np.argsort``: no
    ``O(T log T)`` sort); empty bins are filled by :func:`_densify`, one
    vectorized step per probe attempt (not per row). Rows are processed in
    chunks of about ``chunk_tokens`` tokens (a row is never split), bounding
    the temporaries to ~40 bytes per token of a chunk. An empty set gives all
    :data:`EMPTY`.
    """
    k = check_num_perm(num_perm)
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be >= 1, got {chunk_tokens}")
    s1, s2, _ = oph_salts(seed)
    n = len(token_sets)
    sig = np.full((n, k), EMPTY, dtype=np.uint32)
    if n == 0:
        return sig
    indptr = token_sets.indptr
    sizes = np.diff(indptr)
    for r0, r1 in row_blocks(token_sets, chunk_tokens):  # one step per chunk of whole rows
        t0, t1 = int(indptr[r0]), int(indptr[r1])
        if t1 == t0:
            continue
        bins, vals = _bins_and_values(token_sets.tokens[t0:t1], k, s1, s2)
        local_rows = np.repeat(np.arange(r1 - r0, dtype=np.uint64), sizes[r0:r1])
        flat_idx = (local_rows * np.uint64(k) + bins).astype(np.intp)
        block = sig[r0:r1].ravel()  # contiguous view, writes go to sig
        np.minimum.at(block, flat_idx, vals)
        nonempty = np.flatnonzero(sizes[r0:r1] > 0) + r0
        _densify(sig, nonempty, k, seed)
    return sig


def oph_reference(sets: Sequence[Sequence[int]], num_perm: int, seed: int) -> list[list[int]]:
    """Per-set naive OPH with optimal densification, Python ints (test oracle)."""
    k = check_num_perm(num_perm)
    s1, s2, s3 = oph_salts(seed)

    def probe(i: int, t: int) -> int:
        return ((mix64_reference(s3 ^ ((i << 32) | t)) >> 32) * k) >> 32

    out: list[list[int]] = []
    for s in sets:
        bins: list[int | None] = [None] * k
        for x in s:
            h = mix64_reference(int(x) ^ s1)
            b = ((h >> 32) * k) >> 32
            v = ((mix64_reference(h ^ s2) & MASK32) * MASK32) >> 32
            cur = bins[b]
            bins[b] = v if cur is None else min(cur, v)
        if all(v is None for v in bins):
            out.append([int(EMPTY)] * k)
            continue
        row: list[int] = []
        for i in range(k):
            got = bins[i]
            t = 0
            while got is None:
                t += 1
                got = bins[probe(i, t)]
            row.append(got)
        out.append(row)
    return out
