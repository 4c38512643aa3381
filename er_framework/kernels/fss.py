"""Fast Similarity Sketching (Dahlgaard, Knudsen, Thorup, FOCS 2017).

One-permutation hashing (:mod:`.oph`) hashes every token once into one of
``K`` bins; a set with few tokens leaves bins empty, and densification fills
them by copying other bins of the *same* partition of the few tokens, so all
``K`` positions move together when two tokens of ``A ∪ B`` collide in a bin:
for ``|A ∪ B| = 20`` and ``K = 128`` the mean squared error of the Jaccard
estimate is ~1.3x classic MinHash's. Fast Similarity Sketching
(Dahlgaard, Knudsen, Thorup, "Fast Similarity Sketching", FOCS 2017) keeps OPH's
first round and fills the empty bins with *fresh* hash rounds instead: round
``r`` throws every token once more into a bin with new, independent hash
functions, and a bin keeps the value of the first round that reaches it. Every
token lands in exactly one bin per round, so the tokens are spread evenly over
the bins (no token is copied into many positions), which is what gives
MinHash-like accuracy at every set size. Work ``O(tokens + K log K)`` per set
in expectation; a set with ``tokens >> K ln K`` is done after round 0, which is
exactly OPH without densification.

Definition (the project's contract; all arithmetic on uint64, wrapping modulo
2**64 only inside ``mix64``, a bijective bit mixer, and in the salt counters —
every other product below is exact because both factors are < 2**32). Rounds
``r = 0, 1, ..., 2K - 1``; per round two salts::

    a_r = mix64((seed + (2r + 1) * 0x9E3779B97F4A7C15) mod 2**64)
    b_r = mix64((seed + (2r + 2) * 0x9E3779B97F4A7C15) mod 2**64)

(``a_0, b_0`` are :func:`.oph.oph_salts` ``s_1, s_2``: round 0 *is* OPH's
hashing; the counters ``1 .. 4K`` are distinct, so all salts are distinct).
For a 64-bit token ``x``::

    h_r(x)   = mix64(x XOR a_r)
    val_r(x) = ((mix64(h_r(x) XOR b_r) & 0xFFFFFFFF) * 0xFFFFFFFF) >> 32   in [0, 2**32 - 2]
    bin_r(x) = ((h_r(x) >> 32) * K) >> 32     in [0, K)   for r < K       (phase 1; K <= 2**31)
    bin_r(x) = r - K                                      for K <= r < 2K  (phase 2)

so ``val`` never equals :data:`EMPTY` (``0xFFFFFFFF``). Every token ``x`` of
a set ``S`` and every round ``r`` give a *pair* ``(r, x)`` landing in bin
``bin_r(x)``. Bin ``j`` of ``S`` is ``val_r(x)`` of the pair with the smallest
``(r, val_r(x))`` (lexicographic) among the pairs landing in bin ``j``. Phase
2 puts every token into bin ``j`` in round ``K + j``, so every bin of a
non-empty set receives a pair; the signature of an empty set is all
:data:`EMPTY`.

Computation. An earlier round beats every later one, so a bin filled in round
``r`` is final: round 0 fills bins with the per-bin minimum of ``val_0``
(OPH without densification), round 1 is evaluated only for sets that still
have empty bins and fills only bins that were empty *before* round 1, and so
on; a set is done as soon as it has no empty bin and later rounds are never
evaluated for it. With ``n`` tokens a round throws ``n`` balls into ``K`` bins,
so all bins are filled after about ``K H_K / n`` rounds (coupon collector,
``K H_K ~ K ln K``; 695 balls for K = 128): O(n + K log K) hash evaluations
in expectation. A set reaches phase 2 with probability at most
``K (1 - 1/K)**(nK) <= K e**-n``, i.e. in practice only with a handful of
tokens; a set with ``n >> K ln K`` tokens is done after round 0 with
probability ``>= 1 - K e**(-n/K)`` (1 - 2e-11 for n = 3,800, K = 128) and
then costs exactly what OPH's hashing costs, and its signature equals OPH's
(no bin was empty, so OPH densifies nothing).

Estimator. For every position ``j``::

    P[SIG_A[j] == SIG_B[j]] = J(A, B)

(up to the ~2**-32 chance that two different tokens share a 32-bit value):
the pairs of ``A`` and of ``B`` are subsets of the pairs of ``A ∪ B``, so if
the minimizing pair ``(r*, x*)`` of bin ``j`` over ``A ∪ B`` has
``x* in A ∩ B`` it is the minimum for both sets and the values agree; if
``x*`` lies in only one of them that set stores ``val_{r*}(x*)`` and the other
a different pair's value. With idealized (fully random) hash functions the
tokens of ``A ∪ B`` are exchangeable, so ``x*`` is uniform over ``A ∪ B``.
The fraction of agreeing positions is therefore an unbiased estimate of the
Jaccard similarity, usable by :func:`.minhash.estimate_jaccard` and LSH
banding unchanged.

Variance. Dahlgaard, Knudsen and Thorup (FOCS 2017) prove for this sketch
(size ``t = K``) ``E[X_i] = J(A, B)`` for
``X_i = [S(A)[i] = S(B)[i]]``, and Chernoff-style concentration of
``X = sum_i X_i`` around ``K J`` like that of ``K`` independent MinHash
values — for *every* set size, with no regime of empty bins and no copied
positions — so its variance is comparable to classic MinHash's
``J (1 - J) / K``. It is in fact lower for sets smaller than ``K ln K``:
every token throws exactly one ball per round, so the ``K`` positions are
shared among the tokens of ``A ∪ B`` far more evenly than by ``K``
independent minima (measured, K = 128: MSE ~0.5x classic MinHash for
``|A ∪ B|`` = 20 to 100); as the sets grow past ``K ln K`` it becomes
OPH's variance, below classic MinHash's as well (bins sample the union
without replacement; ~0.9x measured for ``|A ∪ B|`` = 1000). ``tests/kernels/test_fss.py`` measures the mean squared
error against classic MinHash on the same pairs.

Storage: only the 32-bit ``val`` is stored (the round is not), uint32, 4
bytes per entry, the layout of :func:`.minhash.minhash_signatures`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.hashing import GOLDEN, MASK32, MASK64, SHIFT32, mix64, mix64_inplace, mix64_reference
from er_framework.kernels.minhash import EMPTY
from er_framework.kernels.oph import check_num_perm
from er_framework.kernels.parallel import row_blocks

__all__ = [
    "fss_reference",
    "fss_reference_with_rounds",
    "fss_salts",
    "fss_signatures",
    "fss_signatures_with_rounds",
]

UInt32Array = npt.NDArray[np.uint32]
UInt64Array = npt.NDArray[np.uint64]
Int64Array = npt.NDArray[np.int64]


def fss_salts(seed: int, r: int) -> tuple[int, int]:
    """``(a_r, b_r)``: ``mix64((seed + c * 0x9E3779B97F4A7C15) mod 2**64)`` for ``c = 2r + 1, 2r + 2``."""
    if r < 0:
        raise ValueError(f"round must be >= 0, got {r}")
    s = int(seed) & MASK64
    return (
        mix64_reference((s + (2 * r + 1) * GOLDEN) & MASK64),
        mix64_reference((s + (2 * r + 2) * GOLDEN) & MASK64),
    )


def _salt_arrays(seed: int, rounds: Int64Array) -> tuple[UInt64Array, UInt64Array]:
    """``(a_r, b_r)`` for every round of ``rounds`` (vectorized :func:`fss_salts`)."""
    r = rounds.astype(np.uint64)
    s = np.uint64(int(seed) & MASK64)
    with np.errstate(over="ignore"):
        c = (r * np.uint64(2) + np.uint64(1)) * np.uint64(GOLDEN) + s  # mod 2**64 by definition
        a = mix64(c)
        c += np.uint64(GOLDEN)
    return a, mix64(c)


def _bins(h: UInt64Array, k: int) -> Int64Array:
    """Phase-1 bin ``((h >> 32) * K) >> 32`` (exact: both factors < 2**32), as int64.

    For ``K = 2**p`` (p >= 1) that is ``h >> (64 - p)``, one pass instead of three.
    """
    if k > 1 and k & (k - 1) == 0:
        t = h >> np.uint64(64 - (k.bit_length() - 1))
    else:
        t = h >> SHIFT32
        t *= np.uint64(k)
        t >>= SHIFT32
    return t.view(np.int64)  # < 2**31: same value


def _values(h: UInt64Array, b: np.uint64 | UInt64Array) -> UInt32Array:
    """``((mix64(h XOR b) & 0xFFFFFFFF) * 0xFFFFFFFF) >> 32`` as uint32."""
    m = mix64_inplace(h ^ b)  # a fresh array: mixed where it is
    m &= np.uint64(MASK32)
    m *= np.uint64(MASK32)  # < 2**64: exact
    m >>= SHIFT32
    return m.astype(np.uint32)


def _fss_block(
    tokens: npt.NDArray[np.unsignedinteger],
    sizes: Int64Array,
    block: UInt32Array,
    rounds: Int64Array,
    k: int,
    seed: int,
) -> None:
    """Fill ``block`` (``(m, K)``, all EMPTY, C-contiguous) and ``rounds`` (m) for one chunk of rows.

    ``tokens`` are the chunk's tokens in row order, ``sizes`` the row lengths.
    One vectorized pass per round over the tokens of the rows that still have
    empty bins ("open" rows); phase 2 is one pass over (empty bin, token of
    its row) pairs. ``n_empty`` counts each open row's empty bins, decreased
    by the distinct bins a round fills: a bin filled by several tokens of one
    round is counted once, through the token whose value won the minimum;
    two tokens tying on the 32-bit value (or a duplicate token) would be
    counted twice, so a row whose count reaches 0 is checked against the
    block before it is closed (and recounted if a bin is still empty).
    """
    m = len(sizes)
    kk = np.int64(k)
    flat = block.reshape(-1)  # view: writes go to block
    toks = tokens.astype(np.uint64, copy=False)
    base = np.repeat(np.arange(m, dtype=np.int64) * kk, sizes)  # row * K per token
    # round 0: every bin is empty, every token counts (OPH without densification)
    a, b = fss_salts(seed, 0)
    h = mix64_inplace(toks ^ np.uint64(a))
    idx = _bins(h, k)
    idx += base
    np.minimum.at(flat, idx, _values(h, np.uint64(b)))
    n_empty = np.count_nonzero(block == EMPTY, axis=1).astype(np.int64)
    nonempty = sizes > 0
    is_open = nonempty & (n_empty > 0)
    rounds[nonempty & ~is_open] = 1
    act = np.flatnonzero(is_open)  # open rows, ascending
    if act.size == 0:
        return
    if act.size < m:
        keep = np.flatnonzero(np.repeat(is_open, sizes))
        toks, base = toks.take(keep), base.take(keep)
    # phase 1, rounds 1 .. K-1: only open rows, only bins empty before the round
    for r in range(1, k):  # one step per round, over all open rows at once
        a, b = fss_salts(seed, r)
        h = mix64_inplace(toks ^ np.uint64(a))
        idx = _bins(h, k)
        idx += base
        hit = np.flatnonzero(np.take(flat, idx) == EMPTY)  # evaluated before any write of the round
        if hit.size == 0:
            continue
        pos = idx.take(hit)
        vals = _values(h.take(hit), np.uint64(b))
        np.minimum.at(flat, pos, vals)
        np.subtract.at(n_empty, pos[vals == flat.take(pos)] // kk, 1)
        cand = act[n_empty.take(act) <= 0]
        if cand.size == 0:
            continue
        left = np.count_nonzero(block[cand] == EMPTY, axis=1)
        n_empty[cand] = left
        done = cand[left == 0]
        if done.size == 0:
            continue
        rounds[done] = r + 1
        still = n_empty.take(act) > 0
        keep = np.flatnonzero(np.repeat(still, sizes.take(act)))
        toks, base, act = toks.take(keep), base.take(keep), act[still]
        if act.size == 0:
            return
    # phase 2: round K + j fills bin j with min_x val_{K+j}(x), for every bin j still empty
    rr, j = np.nonzero(block[act] == EMPTY)
    rows = act[rr]
    empty_pos = rows * kk + j
    counts = sizes[rows]
    starts = (np.cumsum(sizes) - sizes)[rows]  # first token of each row in the chunk
    total = int(counts.sum())
    gather = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total, dtype=np.int64)
    a2, b2 = _salt_arrays(seed, j + kk)
    h = mix64_inplace(tokens[gather].astype(np.uint64) ^ np.repeat(a2, counts))
    np.minimum.at(flat, np.repeat(empty_pos, counts), _values(h, np.repeat(b2, counts)))
    np.maximum.at(rounds, rows, j + np.int64(k + 1))


def fss_signatures_with_rounds(
    token_sets: TokenSets,
    num_perm: int,
    seed: int,
    chunk_tokens: int = 1 << 17,
) -> tuple[UInt32Array, Int64Array]:
    """:func:`fss_signatures` and, per set, the number of rounds it needed.

    ``rounds[i]`` is ``1 +`` the round in which the last empty bin of set ``i``
    was filled (the rounds the definition evaluates before the set is done):
    1 when round 0 leaves no bin empty, ``K + j + 1`` when the set ends in
    phase 2 with bin ``j``, 0 for an empty set.
    """
    k = check_num_perm(num_perm)
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be >= 1, got {chunk_tokens}")
    n = len(token_sets)
    sig = np.full((n, k), EMPTY, dtype=np.uint32)
    rounds = np.zeros(n, dtype=np.int64)
    if n == 0:
        return sig, rounds
    indptr = token_sets.indptr
    sizes = np.diff(indptr)
    for r0, r1 in row_blocks(token_sets, chunk_tokens):  # one step per chunk of whole rows
        t0, t1 = int(indptr[r0]), int(indptr[r1])
        if t1 == t0:
            continue
        _fss_block(token_sets.tokens[t0:t1], sizes[r0:r1], sig[r0:r1], rounds[r0:r1], k, seed)
    return sig, rounds


def fss_signatures(
    token_sets: TokenSets,
    num_perm: int,
    seed: int,
    chunk_tokens: int = 1 << 17,
) -> UInt32Array:
    """Fast Similarity Sketch signatures, shape ``(n_sets, K)``, uint32.

    Definition in the module docstring. Round 0 hashes every token of the
    batch at once (twice, ``mix64``; the same hashes as OPH) and takes the
    per-(row, bin) minimum with ``np.minimum.at`` on the flat ``(rows x K)``
    array, as :func:`.oph.oph_signatures` does. Each later round is one
    vectorized pass over the tokens of the rows that still have an empty bin:
    ``h_r`` and the bin for all of them, the value hash only for tokens that
    land in a bin empty before the round, then ``np.minimum.at`` into those
    bins. The Python loop runs over rounds (and chunks), never over rows or
    tokens; rows drop out of the pass as soon as they are full. Phase 2 (bins
    still empty after round K - 1; only sets with a handful of tokens) is one
    pass over all (empty bin, token of its row) pairs. Rows are processed in
    chunks of about ``chunk_tokens`` tokens (a row is never split); the output
    does not depend on the chunking. An empty set gives all :data:`EMPTY`.
    """
    return fss_signatures_with_rounds(token_sets, num_perm, seed, chunk_tokens)[0]


def fss_reference_with_rounds(sets: Sequence[Sequence[int]], num_perm: int, seed: int) -> tuple[list[list[int]], list[int]]:
    """Per-set naive Fast Similarity Sketch, Python ints, and rounds used (test oracle).

    Literally the definition: rounds in order, every token of the set gives
    the pair ``(r, val_r(x))`` in bin ``bin_r(x)`` and a bin keeps the
    lexicographically smallest pair. The set stops after the first round that
    leaves no bin empty (no later pair can be smaller: its round is larger).
    """
    k = check_num_perm(num_perm)
    sigs: list[list[int]] = []
    used: list[int] = []
    for s in sets:
        best: list[tuple[int, int] | None] = [None] * k
        n_rounds = 0
        for r in range(2 * k if len(s) else 0):
            a, b = fss_salts(seed, r)
            for x in s:
                h = mix64_reference(int(x) ^ a)
                j = ((h >> 32) * k) >> 32 if r < k else r - k
                pair = (r, ((mix64_reference(h ^ b) & MASK32) * MASK32) >> 32)
                cur = best[j]
                if cur is None or pair < cur:
                    best[j] = pair
            if all(p is not None for p in best):
                n_rounds = r + 1
                break
        sigs.append([p[1] if p is not None else int(EMPTY) for p in best])
        used.append(n_rounds)
    return sigs, used


def fss_reference(sets: Sequence[Sequence[int]], num_perm: int, seed: int) -> list[list[int]]:
    """Per-set naive Fast Similarity Sketch, Python ints (test oracle)."""
    return fss_reference_with_rounds(sets, num_perm, seed)[0]
