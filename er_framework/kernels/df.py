"""Document frequency of shingles: how many records hold each token, and pruning by it.

A shingle present in a large share of the records (navigation, a cookie
banner, a disclaimer every wire story carries) says nothing about which
record is which, but it lifts the Jaccard similarity of every pair that
shares it; dropping it from every token set (``max_df``) removes that lift.
A shingle in fewer than ``min_df`` records can be dropped the same way.

:class:`DocFreq` counts exactly, in one streaming pass over the chunks of
token sets: each chunk's distinct tokens with their counts, merged into the
running table like a log-structured merge (a run is merged when it is at
least as large as the one before it), so the work is ``O(V log chunks)``
for a vocabulary of ``V`` distinct tokens and the memory 16 bytes per
distinct token. Tables of several partitions merge with :meth:`DocFreq.merge`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.groups import sorted_unique
from er_framework.kernels.parallel import BLOCK_TOKENS, map_ordered, row_blocks

__all__ = ["DocFreq", "df_limits", "drop_tokens", "drop_tokens_reference", "pruned_tokens"]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


def _sum_sorted_runs(tokens: UInt64Array, counts: Int64Array) -> tuple[UInt64Array, Int64Array]:
    """Distinct tokens of a token array (any order) with their counts summed."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    order = np.argsort(tokens, kind="stable")
    t = tokens[order]
    c = counts[order]
    start = np.empty(len(t), dtype=bool)
    start[0] = True
    np.not_equal(t[1:], t[:-1], out=start[1:])
    idx = np.flatnonzero(start)
    return t[idx], np.add.reduceat(c, idx).astype(np.int64, copy=False)


def _distinct_counts(tokens: UInt64Array) -> tuple[UInt64Array, Int64Array]:
    """Distinct values of ``tokens`` and how often each occurs (a sort and a neighbour comparison)."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    t = np.sort(tokens)
    start = np.empty(len(t), dtype=bool)
    start[0] = True
    np.not_equal(t[1:], t[:-1], out=start[1:])
    idx = np.flatnonzero(start)
    counts = np.diff(np.append(idx, len(t))).astype(np.int64)
    return t[idx], counts


class DocFreq:
    """Exact document frequencies of tokens, counted chunk by chunk.

    ``add(token_sets)`` takes a chunk's token *sets* (each row's tokens
    distinct, as :meth:`Shingler.shingle` gives them): a token counts once
    per record holding it. ``table()`` returns ``(tokens, df)``: the sorted
    distinct tokens and the number of records holding each. ``records`` is
    how many records were counted.
    """

    def __init__(self) -> None:
        self.records = 0
        self._runs: list[tuple[UInt64Array, Int64Array]] = []

    def add(self, token_sets: TokenSets) -> None:
        self.records += len(token_sets)
        self._push(*_distinct_counts(np.asarray(token_sets.tokens, dtype=np.uint64)))

    def add_table(self, tokens: UInt64Array, df: Int64Array, records: int) -> None:
        """Add another table (another partition's :meth:`table`)."""
        self.records += int(records)
        self._push(np.asarray(tokens, dtype=np.uint64), np.asarray(df, dtype=np.int64))

    def _push(self, tokens: UInt64Array, counts: Int64Array) -> None:
        self._runs.append((tokens, counts))
        # merge while the newest run is at least as large as the one before (geometric sizes)
        while len(self._runs) >= 2 and len(self._runs[-1][0]) >= len(self._runs[-2][0]):
            (t2, c2), (t1, c1) = self._runs.pop(), self._runs.pop()
            self._runs.append(_sum_sorted_runs(np.concatenate([t1, t2]), np.concatenate([c1, c2])))

    @property
    def entries(self) -> int:
        """Table entries held (the distinct tokens, before the last runs are merged: at least as many)."""
        return sum(len(t) for t, _ in self._runs)

    @property
    def nbytes(self) -> int:
        """Bytes the counts take now (a merge needs about as much again for a moment)."""
        return sum(t.nbytes + c.nbytes for t, c in self._runs)

    def table(self) -> tuple[UInt64Array, Int64Array]:
        while len(self._runs) >= 2:
            (t2, c2), (t1, c1) = self._runs.pop(), self._runs.pop()
            self._runs.append(_sum_sorted_runs(np.concatenate([t1, t2]), np.concatenate([c1, c2])))
        if not self._runs:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        return self._runs[0]

    @classmethod
    def merge(cls, tables: list[tuple[UInt64Array, Int64Array, int]]) -> DocFreq:
        """One table from several ``(tokens, df, records)`` (e.g. one per partition)."""
        out = cls()
        for tokens, df, records in tables:
            out.add_table(tokens, df, records)
        return out


def df_limits(records: int, max_df: float | int | None, min_df: float | int | None, max_df_floor: int = 1) -> tuple[int | None, int]:
    """``(most, least)``: a token is kept when ``least <= df <= most`` (``most`` None: no upper limit).

    A float is a share of ``records`` (``max_df=0.05``: in at most 5% of the
    records, rounded down), an int a count of records. A share never limits
    below ``max_df_floor`` records: on a small corpus, 5% of 40 records would
    prune every shingle two records share.
    """
    most: int | None = None
    if max_df is not None:
        most = int(max_df) if isinstance(max_df, int) else max(1, int(max_df_floor), int(np.floor(float(max_df) * records + 1e-9)))
    least = 1
    if min_df is not None:
        least = int(min_df) if isinstance(min_df, int) else max(1, int(np.ceil(float(min_df) * records - 1e-9)))
    return most, least


def pruned_tokens(tokens: UInt64Array, df: Int64Array, most: int | None, least: int) -> UInt64Array:
    """The sorted tokens whose document frequency is above ``most`` or below ``least``."""
    drop = df < least
    if most is not None:
        drop |= df > most
    return np.asarray(tokens[drop], dtype=np.uint64)


def drop_tokens(
    token_sets: TokenSets,
    dropped: UInt64Array,
    *,
    sets: bool = False,
    workers: int = 1,
    block_tokens: int = BLOCK_TOKENS,
) -> tuple[TokenSets, Int64Array]:
    """``token_sets`` without the tokens of ``dropped`` (sorted, distinct), and how many distinct tokens each row lost.

    Rows may be sets or multisets (any order, repeats): each kept token keeps
    its place and its repeats, so a set stays a sorted set. ``sets``: the
    rows are known to be sets (a row's lost tokens are then counted without
    sorting them). Rows are processed in blocks of about a million tokens on
    ``workers`` threads (bounded temporaries); the result does not depend on
    either.
    """
    n = len(token_sets)
    if len(dropped) == 0 or len(token_sets.tokens) == 0:
        return token_sets, np.zeros(n, dtype=np.int64)
    d = np.asarray(dropped, dtype=np.uint64)
    blocks = row_blocks(token_sets, block_tokens)

    def one(bounds: tuple[int, int]) -> tuple[Int64Array, npt.NDArray[np.uint64] | npt.NDArray[np.uint32], Int64Array]:
        part = token_sets.slice(*bounds)
        t = np.asarray(part.tokens, dtype=np.uint64)
        m = len(part)
        pos = np.searchsorted(d, t)
        np.minimum(pos, len(d) - 1, out=pos)
        hit = d[pos] == t
        row = np.repeat(np.arange(m, dtype=np.int64), part.sizes)
        hit_rows = row[hit]
        removed = np.bincount(hit_rows, minlength=m).astype(np.int64)
        if sets:
            lost = removed
        else:  # distinct tokens lost per row (a multiset row may hold a dropped token more than once)
            pair = sorted_unique(hit_rows * np.int64(len(d)) + pos[hit].astype(np.int64))
            lost = np.bincount(pair // np.int64(len(d)), minlength=m).astype(np.int64)
        return part.sizes - removed, part.tokens[~hit], lost

    parts = map_ordered(one, blocks, workers)
    sizes = np.concatenate([p[0] for p in parts])
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    return TokenSets(indptr, np.concatenate([p[1] for p in parts])), np.concatenate([p[2] for p in parts])


def drop_tokens_reference(token_sets: TokenSets, dropped: UInt64Array) -> tuple[TokenSets, Int64Array]:
    """Row-by-row Python twin of :func:`drop_tokens` (test oracle)."""
    gone = {int(x) for x in dropped}
    rows, lost = [], []
    for i in range(len(token_sets)):
        row = [int(x) for x in token_sets.row(i)]
        kept = [x for x in row if x not in gone]
        rows.append(kept)
        lost.append(len(set(row) & gone))
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    flat: UInt64Array = np.asarray([x for r in rows for x in r], dtype=np.uint64)
    return TokenSets(indptr, flat), np.asarray(lost, dtype=np.int64)
