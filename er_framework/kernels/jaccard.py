"""Exact Jaccard similarity of token-set pairs (MMDS ch. 3.1.1).

``sim(A, B) = |A ∩ B| / |A ∪ B|`` and ``|A ∪ B| = |A| + |B| - |A ∩ B|``; the
Jaccard distance is ``1 - sim``. As a boolean matrix (rows = elements,
columns = sets) with row types a = (1,1), b = (1,0), c = (0,1):
``sim = a / (a + b + c)`` (MMDS 3.3.3).

Two empty sets have similarity 0.0 here (``0/0`` is undefined; an empty set
is no evidence of a match).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.parallel import map_ordered, split_sizes
from er_framework.kernels.groups import sort_segments

__all__ = ["intersection_sizes", "jaccard_pairs", "jaccard_reference"]

Int64Array = npt.NDArray[np.int64]


def _copy_rows(
    src: npt.NDArray[Any],
    src_start: Int64Array,
    sizes: Int64Array,
    dst: npt.NDArray[Any],
    dst_start: Int64Array,
) -> None:
    """``dst[dst_start[j] : dst_start[j] + sizes[j]] = src[src_start[j] : ...]`` for all j, vectorized."""
    total = int(sizes.sum())
    if total == 0:
        return
    first = np.cumsum(sizes) - sizes
    ar = np.arange(total, dtype=np.int64)
    dst[np.repeat(dst_start - first, sizes) + ar] = src[np.repeat(src_start - first, sizes) + ar]


def intersection_sizes(
    token_sets: TokenSets,
    left: Int64Array,
    right: Int64Array,
    max_tokens_per_batch: int = 1 << 22,
    workers: int = 1,
) -> Int64Array:
    """``|A ∩ B|`` of every pair of rows (int64).

    Rows must be sorted and unique (the :class:`TokenSets` invariant). Pairs
    are processed in batches of about ``max_tokens_per_batch`` gathered tokens
    (``|A| + |B|`` summed; a single larger pair forms its own batch) on
    ``workers`` threads (:mod:`er_framework.kernels.parallel`); the result does not
    depend on either.
    In a batch, the tokens of both sides of pair ``j`` are laid out as one
    segment ``A_j ‖ B_j`` and every segment is sorted (a segmented sort, i.e.
    a sort by ``(pair, token)``); as each side is unique, the number of
    adjacent equal entries in a segment is ``|A ∩ B|``.
    """
    lo = np.asarray(left, dtype=np.int64)
    hi = np.asarray(right, dtype=np.int64)
    if lo.shape != hi.shape or lo.ndim != 1:
        raise ValueError("left and right must be 1-D arrays of one length")
    if max_tokens_per_batch < 1:
        raise ValueError(f"max_tokens_per_batch must be >= 1, got {max_tokens_per_batch}")
    n_pairs = len(lo)
    out = np.zeros(n_pairs, dtype=np.int64)
    if n_pairs == 0:
        return out
    sizes = token_sets.sizes
    sa = sizes[lo]
    sb = sizes[hi]
    tokens = token_sets.tokens
    indptr = token_sets.indptr

    def batch(rng: tuple[int, int]) -> None:  # pairs [start, stop): writes out[start:stop]
        start, stop = rng
        m = stop - start
        a_sz, b_sz = sa[start:stop], sb[start:stop]
        seg = a_sz + b_sz  # pair j's segment: the tokens of A_j, then those of B_j
        seg_start = np.cumsum(seg) - seg
        both = np.empty(int(seg.sum()), dtype=tokens.dtype)
        _copy_rows(tokens, indptr[lo[start:stop]], a_sz, both, seg_start)
        _copy_rows(tokens, indptr[hi[start:stop]], b_sz, both, seg_start + a_sz)
        both = sort_segments(both, seg)
        # adjacent equal tokens inside a segment: one per common token
        eq = np.zeros(len(both), dtype=bool)
        if len(both) > 1:
            eq[1:] = both[1:] == both[:-1]
        nonempty = seg > 0
        eq[seg_start[nonempty]] = False
        inter = np.zeros(m, dtype=np.int64)
        if nonempty.any():
            inter[nonempty] = np.add.reduceat(eq, seg_start[nonempty], dtype=np.int64)
        out[start:stop] = inter

    # batches of whole pairs, each written to its own slice of ``out``: the
    # result does not depend on the batch size or the number of workers
    map_ordered(batch, split_sizes(np.maximum(sa + sb, 1), max_tokens_per_batch), workers)
    return out


def jaccard_pairs(
    token_sets: TokenSets,
    left: Int64Array,
    right: Int64Array,
    max_tokens_per_batch: int = 1 << 22,
    workers: int = 1,
) -> npt.NDArray[np.float64]:
    """Exact Jaccard similarity ``|A ∩ B| / |A ∪ B|`` of every pair of rows, from
    :func:`intersection_sizes` (same arguments); two empty sets give 0.0."""
    inter = intersection_sizes(token_sets, left, right, max_tokens_per_batch, workers).astype(np.float64)
    sizes = token_sets.sizes
    union = (sizes[np.asarray(left, dtype=np.int64)] + sizes[np.asarray(right, dtype=np.int64)]).astype(np.float64) - inter
    out = np.zeros(len(inter), dtype=np.float64)
    nz = union > 0
    out[nz] = inter[nz] / union[nz]
    return out


def jaccard_reference(token_sets: TokenSets, left: Int64Array, right: Int64Array) -> list[float]:
    """Python-set version of :func:`jaccard_pairs` (test oracle)."""
    out: list[float] = []
    for i, j in zip([int(x) for x in left], [int(x) for x in right]):
        a = {int(x) for x in token_sets.row(i)}
        b = {int(x) for x in token_sets.row(j)}
        u = len(a | b)
        out.append(len(a & b) / u if u else 0.0)
    return out
