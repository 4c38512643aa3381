"""CSR token sets: one set of tokens per record as two arrays (``indptr``, ``tokens``).

The kernels' common input type. It lives with the kernels (which import
nothing else of the package); :mod:`er_framework.data` re-exports it as part
of the plugin contract.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["TokenSets"]

Int64Array = npt.NDArray[np.int64]


@dataclass
class TokenSets:
    """One *set* of tokens per record in CSR form.

    Row ``i`` holds ``tokens[indptr[i]:indptr[i + 1]]``, sorted ascending and
    unique. ``indptr`` is int64 of length ``n + 1`` starting at 0; tokens are
    uint64 (stable hashes of shingles) or uint32.
    """

    indptr: Int64Array
    tokens: npt.NDArray[np.uint64] | npt.NDArray[np.uint32]

    def __post_init__(self) -> None:
        self.indptr = np.asarray(self.indptr, dtype=np.int64)
        if self.indptr.ndim != 1 or len(self.indptr) == 0 or self.indptr[0] != 0:
            raise ValueError("indptr must be a 1-D int64 array starting at 0")
        if self.tokens.dtype not in (np.uint64, np.uint32):
            raise ValueError(f"tokens must be uint64 or uint32, got {self.tokens.dtype}")
        if self.indptr[-1] != len(self.tokens):
            raise ValueError(f"indptr[-1]={self.indptr[-1]} does not match {len(self.tokens)} tokens")

    def __len__(self) -> int:
        return len(self.indptr) - 1

    @property
    def sizes(self) -> Int64Array:
        """Number of tokens of every row."""
        return np.diff(self.indptr)

    def row(self, i: int) -> np.ndarray:
        return self.tokens[self.indptr[i] : self.indptr[i + 1]]

    @classmethod
    def from_sets(cls, sets: Iterable[Iterable[int]], dtype: Any = np.uint64) -> TokenSets:
        """Reference constructor from Python iterables (sorted, deduplicated here)."""
        rows = [np.unique(np.asarray(list(s), dtype=dtype)) for s in sets]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        if rows:
            indptr[1:] = np.cumsum([len(r) for r in rows])
            tokens = np.concatenate(rows).astype(dtype, copy=False)
        else:
            tokens = np.zeros(0, dtype=dtype)
        return cls(indptr=indptr, tokens=tokens)

    @classmethod
    def concat(cls, parts: Sequence[TokenSets]) -> TokenSets:
        if not parts:
            return cls(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint64))
        sizes = np.concatenate([p.sizes for p in parts])
        indptr = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        return cls(indptr, np.concatenate([p.tokens for p in parts]))

    def slice(self, start: int, stop: int) -> TokenSets:
        """Rows ``start .. stop-1`` sharing this object's token memory (no copy)."""
        t0 = int(self.indptr[start])
        return TokenSets(self.indptr[start : stop + 1] - t0, self.tokens[t0 : int(self.indptr[stop])])

    def take(self, index: npt.ArrayLike) -> TokenSets:
        """Rows at ``index`` (vectorized gather)."""
        idx = np.asarray(index, dtype=np.int64)
        starts = self.indptr[idx]
        sizes = self.indptr[idx + 1] - starts
        indptr = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        total = int(indptr[-1])
        pos = np.arange(total, dtype=np.int64) - np.repeat(indptr[:-1], sizes) + np.repeat(starts, sizes)
        return TokenSets(indptr, self.tokens[pos])

    def equals(self, other: TokenSets) -> bool:
        return bool(
            np.array_equal(self.indptr, other.indptr) and np.array_equal(self.tokens.astype(np.uint64), other.tokens.astype(np.uint64))
        )
