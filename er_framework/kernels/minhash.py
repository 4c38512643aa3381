"""MinHash signatures (MMDS ch. 3.3).

Minhashing a set under a random permutation of the rows gives the first row,
in permuted order, in which the set's column has a 1; for two sets,
``P[h(C1) = h(C2)] = sim(C1, C2)`` (Jaccard; MMDS 3.3.3). A signature is
``K`` such minhashes; the fraction of agreeing positions estimates the Jaccard
similarity (MMDS 3.3.4), with standard error ``sqrt(J (1 - J) / K)``.

Permutations are simulated with hash functions (MMDS 3.3.5)::

    h_i(x) = (a_i * x + b_i) mod p,   p = PRIME = 2**32 - 5 (largest prime < 2**32)
    a_i in [1, p - 1],  b_i in [0, p - 1]

For prime ``p`` every such ``h_i`` is a permutation of ``0 .. p-1``.

Exact arithmetic. 64-bit tokens are first reduced ``x = token mod p``. Then
``a_i, x <= p - 1 < 2**32`` so ``a_i * x + b_i <= (p-1)**2 + (p-1) = p (p-1) < 2**64``:
the uint64 computation never wraps and the ``mod p`` is exact (unlike
libraries that multiply 64-bit values and silently wrap before ``mod p``).
The reduction ``token mod p`` merges tokens that agree modulo ``p``: a set of
``m`` distinct tokens loses a token to such a merge with probability about
``m**2 / (2 p)`` (~1e-4 for m = 1000), which biases the estimate negligibly.

Storage: signatures are uint32 (every value is < p < 2**32), 4 bytes per entry:
100,000 documents x 100 minhashes x 4 B = 40 MB (MMDS 3.3). The signature of an
empty set is all :data:`EMPTY` (``0xFFFFFFFF``, larger than any hash value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.hashing import GOLDEN, MASK64, mix64

__all__ = [
    "EMPTY",
    "PRIME",
    "estimate_jaccard",
    "estimate_jaccard_pairs",
    "hash_params",
    "is_permutation",
    "minhash_reference",
    "minhash_rowwise_reference",
    "minhash_signatures",
]

UInt64Array = npt.NDArray[np.uint64]
UInt32Array = npt.NDArray[np.uint32]
Int64Array = npt.NDArray[np.int64]

#: 2**32 - 5, the largest prime below 2**32.
PRIME: int = 4294967291
#: Signature value of an empty set (greater than every hash value, as p < 2**32 - 1).
EMPTY = np.uint32(0xFFFFFFFF)


def _check_p(p: int) -> None:
    if not (2 <= p < 0xFFFFFFFF):
        raise ValueError(f"p must satisfy 2 <= p < 2**32 - 1, got {p}")


def hash_params(num_perm: int, seed: int, p: int = PRIME) -> tuple[UInt64Array, UInt64Array]:
    """Coefficients ``(a, b)`` of ``num_perm`` hash functions ``(a x + b) mod p``.

    Deterministic forever (numpy's RNG streams are not used, as they may change
    between versions). The values come from the splitmix64 stream of ``seed``:
    counters ``c_j = (seed + (j + 1) * 0x9E3779B97F4A7C15) mod 2**64`` and
    ``r_j = mix64(c_j)``; then::

        a_i = 1 + r_{2i}     mod (p - 1)    in [1, p - 1]
        b_i =     r_{2i + 1} mod p          in [0, p - 1]

    (the modulo bias is below ``p / 2**64 ~ 2**-32``).
    """
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {num_perm}")
    _check_p(p)
    with np.errstate(over="ignore"):
        counters = np.arange(1, 2 * num_perm + 1, dtype=np.uint64) * np.uint64(GOLDEN)
        counters += np.uint64(int(seed) & MASK64)
    r = mix64(counters)
    a = np.uint64(1) + r[0::2] % np.uint64(p - 1)
    b = r[1::2] % np.uint64(p)
    return a.astype(np.uint64), b.astype(np.uint64)


def _check_params(a: npt.ArrayLike, b: npt.ArrayLike, p: int) -> tuple[UInt64Array, UInt64Array]:
    _check_p(p)
    aa = np.asarray(a, dtype=np.uint64).ravel()
    bb = np.asarray(b, dtype=np.uint64).ravel()
    if aa.shape != bb.shape or aa.size == 0:
        raise ValueError(f"a and b must be non-empty and of one length, got {aa.shape} and {bb.shape}")
    if int(aa.min()) < 1 or int(aa.max()) > p - 1:
        raise ValueError(f"every a_i must lie in [1, p-1] = [1, {p - 1}]")
    if int(bb.max()) > p - 1:
        raise ValueError(f"every b_i must lie in [0, p-1] = [0, {p - 1}]")
    return aa, bb


def minhash_signatures(
    token_sets: TokenSets,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    p: int = PRIME,
    chunk_tokens: int = 1 << 14,
) -> UInt32Array:
    """MinHash signature matrix, shape ``(n_sets, K)``, uint32.

    ``SIG[c, i] = min_{x in row c} (a_i * (x mod p) + b_i) mod p`` (MMDS 3.3.5),
    ``EMPTY`` for an empty row. Exact in uint64 (see module docstring).

    Tokens are processed in chunks of at most ``chunk_tokens``: one
    ``(K, chunk)`` uint64 hash matrix at a time, reduced per row with
    ``np.minimum.reduceat``; a row spanning a chunk boundary is merged by
    ``np.minimum`` with what earlier chunks found. Peak extra memory is about
    ``chunk_tokens * K * 8`` bytes (16 MB for the default and K = 128) plus the
    ``n * K * 4`` byte result.
    """
    aa, bb = _check_params(a, b, p)
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be >= 1, got {chunk_tokens}")
    n = len(token_sets)
    k = len(aa)
    sig = np.full((n, k), EMPTY, dtype=np.uint32)
    indptr = token_sets.indptr
    total = int(indptr[-1])
    pp = np.uint64(p)
    a_col = aa[:, None]
    b_col = bb[:, None]
    # (K, chunk) layout: the per-row minimum then runs along contiguous memory
    buf = np.empty((k, min(chunk_tokens, max(total, 1))), dtype=np.uint64)
    for t0 in range(0, total, chunk_tokens):  # one iteration per chunk of tokens
        t1 = min(total, t0 + chunk_tokens)
        x = token_sets.tokens[t0:t1].astype(np.uint64) % pp
        h = buf[:, : t1 - t0]
        np.multiply(a_col, x[None, :], out=h)  # exact: a*x + b < 2**64 (module doc)
        h += b_col
        np.remainder(h, pp, out=h)
        rows = np.searchsorted(indptr, np.arange(t0, t1, dtype=np.int64), side="right") - 1
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        mins = np.minimum.reduceat(h, starts, axis=1).T.astype(np.uint32)
        seg_rows = rows[starts]  # distinct within a chunk: rows are contiguous
        sig[seg_rows] = np.minimum(sig[seg_rows], mins)
    return sig


def minhash_reference(
    sets: Sequence[Sequence[int]],
    a: Sequence[int] | npt.ArrayLike,
    b: Sequence[int] | npt.ArrayLike,
    p: int = PRIME,
) -> list[list[int]]:
    """Per-document naive MinHash with Python ints (test oracle).

    ``sig[c][i] = min_{x in sets[c]} (a_i * (x mod p) + b_i) mod p``; an empty
    set gives ``[0xFFFFFFFF] * K``.
    """
    aa = [int(v) for v in np.asarray(a).ravel()]
    bb = [int(v) for v in np.asarray(b).ravel()]
    out: list[list[int]] = []
    for s in sets:
        xs = [int(x) % p for x in s]
        if not xs:
            out.append([int(EMPTY)] * len(aa))
            continue
        out.append([min((ai * x + bi) % p for x in xs) for ai, bi in zip(aa, bb)])
    return out


def minhash_rowwise_reference(
    matrix: Sequence[Sequence[int]],
    hash_funcs: Sequence[Callable[[int], int]],
    row_numbers: Sequence[int] | None = None,
) -> list[list[float]]:
    """The row-by-row MinHash algorithm of MMDS 3.3.5, verbatim.

    ``matrix`` is rows x columns of 0/1 (rows = shingles, columns = sets);
    row ``r`` is known to the hash functions as ``row_numbers[r]`` (default
    ``r``). ``SIG(i, c) = inf`` initially; for each row ``r`` compute every
    ``h_i(r)``; for each column ``c`` with a 1 in row ``r``,
    ``SIG(i, c) = min(SIG(i, c), h_i(r))``. Returns ``SIG[i][c]`` (hash function
    ``i``, column ``c``); a column without any 1 keeps ``math.inf``.
    """
    n_cols = len(matrix[0]) if matrix else 0
    nums = list(row_numbers) if row_numbers is not None else list(range(len(matrix)))
    sig: list[list[float]] = [[math.inf] * n_cols for _ in hash_funcs]
    for r, row in enumerate(matrix):
        hv = [h(nums[r]) for h in hash_funcs]
        for c in range(n_cols):
            if row[c]:
                for i in range(len(hash_funcs)):
                    sig[i][c] = min(sig[i][c], hv[i])
    return sig


def estimate_jaccard(sig_a: npt.ArrayLike, sig_b: npt.ArrayLike) -> float:
    """Fraction of positions where two signatures agree (MMDS 3.3.4).

    Returns 0.0 when either signature is all ``EMPTY`` (an empty set: no
    evidence of similarity).
    """
    sa = np.asarray(sig_a).ravel()
    sb = np.asarray(sig_b).ravel()
    if sa.shape != sb.shape:
        raise ValueError(f"signatures differ in length: {sa.shape} vs {sb.shape}")
    if sa.size == 0 or bool(np.all(sa == EMPTY)) or bool(np.all(sb == EMPTY)):
        return 0.0
    return float(np.count_nonzero(sa == sb)) / sa.size


def estimate_jaccard_pairs(
    sigs: npt.NDArray[np.unsignedinteger],
    left: Int64Array,
    right: Int64Array,
    chunk_pairs: int = 1 << 16,
) -> npt.NDArray[np.float64]:
    """:func:`estimate_jaccard` for every pair ``(left[j], right[j])``, vectorized.

    Pairs are processed in chunks of ``chunk_pairs`` (two ``(chunk, K)`` gathers).
    """
    lo = np.asarray(left, dtype=np.int64)
    hi = np.asarray(right, dtype=np.int64)
    out = np.zeros(len(lo), dtype=np.float64)
    if sigs.ndim != 2:
        raise ValueError(f"sigs must be 2-D, got shape {sigs.shape}")
    k = sigs.shape[1]
    if k == 0 or len(lo) == 0:
        return out
    empty = np.all(sigs == EMPTY, axis=1)
    for s in range(0, len(lo), chunk_pairs):
        l_, r_ = lo[s : s + chunk_pairs], hi[s : s + chunk_pairs]
        agree = np.count_nonzero(sigs[l_] == sigs[r_], axis=1)
        est = agree / k
        est[empty[l_] | empty[r_]] = 0.0
        out[s : s + chunk_pairs] = est
    return out


def is_permutation(a: int, b: int, p: int) -> bool:
    """Whether ``x -> (a x + b) mod p`` permutes ``0 .. p-1`` (MMDS 3.3.5).

    Always true for prime ``p`` and ``a`` in ``[1, p-1]``; for composite ``p``
    only when ``gcd(a, p) = 1``.
    """
    x = np.arange(p, dtype=np.uint64)
    return len(np.unique((np.uint64(a) * x + np.uint64(b)) % np.uint64(p))) == p
