"""Shared data of the estimator tests: pairs of sets with a known Jaccard similarity,
and a builder's estimates side by side with classic MinHash's on the same pairs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from er_framework.data import TokenSets
from er_framework.kernels import hash_params, minhash_signatures
from er_framework.kernels.minhash import estimate_jaccard_pairs

K = 128
JACS = [0.1, 0.3, 0.5, 0.7, 0.9, 0.95]


def pairs_with_jaccard(rng: np.random.Generator, jac: float, union: int, m: int) -> tuple[TokenSets, float]:
    """``m`` independent pairs (rows 2j, 2j+1) with |A ∪ B| = union and J = c / union."""
    c = round(jac * union)
    a = (union - c) // 2
    sets = []
    for _ in range(m):
        toks = np.unique(rng.integers(0, 1 << 63, size=union, dtype=np.uint64))
        assert len(toks) == union
        toks = rng.permutation(toks)
        sets.append(toks[: c + a])
        sets.append(np.concatenate([toks[:c], toks[c + a :]]))
    return TokenSets.from_sets(sets), c / union


def estimates(
    kernel: Callable[[TokenSets, int, int], np.ndarray], union: int, m: int, rng_seed: int
) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Per J in :data:`JACS`: (exact J, the kernel's estimates, classic MinHash's estimates)."""
    rng = np.random.default_rng(rng_seed)
    left = np.arange(0, 2 * m, 2, dtype=np.int64)
    a, b = hash_params(K, 11)
    out = []
    for jac in JACS:
        ts, exact = pairs_with_jaccard(rng, jac, union, m)
        e_new = estimate_jaccard_pairs(kernel(ts, K, 11), left, left + 1)
        e_cls = estimate_jaccard_pairs(minhash_signatures(ts, a, b), left, left + 1)
        out.append((exact, e_new, e_cls))
    return out
