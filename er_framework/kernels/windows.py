"""Verification in windows: an order of the candidate records in which pairs join records close together.

Verifying pairs needs both records' token sets. When the sets of the corpus do
not fit in memory they are computed again for the candidates' records; pairs
taken in record order need the far end of most pairs again and again (on
1,000,000 documents, 1.39 M records shingled for 1.03 M pairs). Here the
records of the candidate graph are ordered by reverse Cuthill-McKee (a
breadth-first order of each connected component that keeps an edge's two ends
close: the graph's *bandwidth* is small), cut into consecutive *chunks* of
about a token budget each, and each pair is verified with the sets of its
chunk and the chunk before: chunk ``c`` and ``c - 1`` in memory, each record's
set computed once. The few pairs whose ends lie further apart (*far* pairs) are
verified separately.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Windows", "window_order", "verify_windows"]

Int64Array = npt.NDArray[np.int64]


def window_order(n: int, left: Int64Array, right: Int64Array) -> Int64Array:
    """The nodes of ``0 .. n - 1`` that take part in a pair, in reverse Cuthill-McKee order of the
    graph of the pairs (``scipy.sparse.csgraph.reverse_cuthill_mckee``, deterministic): the nodes of a
    connected component together, an edge's two ends close to each other."""
    if len(left) == 0:
        return np.zeros(0, dtype=np.int64)
    from scipy.sparse import csr_matrix  # imported here: scipy.sparse costs ~0.1 s of er validate's start-up
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    lo = np.asarray(left, dtype=np.int64)
    hi = np.asarray(right, dtype=np.int64)
    nodes = np.unique(np.concatenate([lo, hi]))
    a, b = np.searchsorted(nodes, lo), np.searchsorted(nodes, hi)
    m = len(nodes)
    graph = csr_matrix((np.ones(2 * len(a), dtype=np.int8), (np.concatenate([a, b]), np.concatenate([b, a]))), shape=(m, m))
    perm = np.asarray(reverse_cuthill_mckee(graph, symmetric_mode=True), dtype=np.int64)
    order: Int64Array = nodes[perm]
    return order


@dataclass
class Windows:
    """The plan of a windowed verification (:func:`verify_windows`).

    ``order`` holds the records in the order they are read; chunk ``c`` is
    ``order[starts[c]:starts[c + 1]]``. ``pair_chunk[p]`` is the chunk in which
    pair ``p`` is verified (the later chunk of its two ends; the chunk before it
    is in memory too), or -1 for a far pair; ``position[r]`` is record ``r``'s
    index in ``order`` (-1 when it is in no pair).
    """

    order: Int64Array
    starts: Int64Array
    pair_chunk: Int64Array
    position: Int64Array

    @property
    def chunks(self) -> int:
        return int(len(self.starts) - 1)

    @property
    def far(self) -> npt.NDArray[np.bool_]:
        return self.pair_chunk < 0

    def chunk_of(self, positions: Int64Array) -> Int64Array:
        """The chunk of each position in :attr:`order`."""
        found: Int64Array = np.searchsorted(self.starts, positions, side="right").astype(np.int64) - 1
        return found


def verify_windows(n: int, left: Int64Array, right: Int64Array, cost: Int64Array, budget: int) -> Windows:
    """Chunks of the :func:`window_order` of the pairs' records, each of at most ``budget`` in ``cost``
    (a record costing more is a chunk of its own), and the chunk of every pair: the later of its two
    ends' chunks when they are the same or adjacent chunks, else -1 (far)."""
    order = window_order(n, left, right)
    position = np.full(n, -1, dtype=np.int64)
    position[order] = np.arange(len(order), dtype=np.int64)
    c = np.asarray(cost, dtype=np.int64)[order]
    starts = [0]
    total = 0
    # greedy cut: a chunk ends before the record that would take it over the budget
    cum = np.cumsum(c)
    at = 0
    while at < len(order):
        base = int(cum[at - 1]) if at else 0
        end = int(np.searchsorted(cum, base + max(int(budget), 0), side="right"))
        end = max(end, at + 1)
        starts.append(end)
        total += 1
        at = end
    start_arr = np.asarray(starts, dtype=np.int64)
    chunk_of = np.repeat(np.arange(total, dtype=np.int64), np.diff(start_arr)) if total else np.zeros(0, dtype=np.int64)
    cu = chunk_of[position[np.asarray(left, dtype=np.int64)]] if len(left) else np.zeros(0, dtype=np.int64)
    cv = chunk_of[position[np.asarray(right, dtype=np.int64)]] if len(right) else np.zeros(0, dtype=np.int64)
    pair_chunk = np.where(np.abs(cu - cv) <= 1, np.maximum(cu, cv), -1).astype(np.int64)
    return Windows(order, start_arr, pair_chunk, position)
