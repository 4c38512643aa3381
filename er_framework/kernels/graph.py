"""Graph labels over record indices: connected components and canonical numbering (numpy)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_HOOK_ROUNDS", "canonical_labels", "connected_component_labels", "connected_component_labels_scipy"]

Int64Array = npt.NDArray[np.int64]

#: rounds of hooking after which :func:`connected_component_labels` hands the remaining edges to scipy
#: (each round at least merges every tree that has an edge to a tree of a smaller root: a handful of
#: rounds on pair graphs; the bound only guards against a pathological graph)
MAX_HOOK_ROUNDS = 64


def connected_component_labels(n: int, left: Int64Array, right: Int64Array) -> Int64Array:
    """Label of every node = smallest node index of its connected component.

    Numpy union-find by rounds (no scipy: importing ``scipy.sparse.csgraph`` costs ~0.15 s of a
    job's start): every node points to a smaller-or-equal node (``parent[x] <= x``), so the root of a
    tree is its smallest node. A round follows every pointer to its root (pointer jumping,
    ``parent = parent[parent]`` until nothing moves), then *hooks* the larger root of every edge whose
    two ends are in different trees under the smaller (``np.minimum.at``: of several candidates the
    smallest wins; the others are hooked in a later round), and drops the edges inside one tree. It ends
    when no edge joins two trees: every tree is then a whole component and its root its smallest node.
    After :data:`MAX_HOOK_ROUNDS` rounds the remaining edges between roots go to
    :func:`connected_component_labels_scipy`. Checked against scipy and networkx in the tests.
    """
    if len(left) == 0:
        return np.arange(n, dtype=np.int64)
    parent = np.arange(n, dtype=np.int64)
    lo = np.asarray(left, dtype=np.int64)
    hi = np.asarray(right, dtype=np.int64)
    for _ in range(MAX_HOOK_ROUNDS):
        a, b = parent[lo], parent[hi]  # roots: parent is fully compressed here
        apart = a != b
        if not apart.any():
            return parent
        a, b = a[apart], b[apart]
        np.minimum.at(parent, np.maximum(a, b), np.minimum(a, b))  # hook the larger root under the smaller
        lo, hi = lo[apart], hi[apart]
        while True:  # pointer jumping until every node points to its root
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up
    roots = connected_component_labels_scipy(n, parent[lo], parent[hi])  # a pathological graph
    return roots[parent]


def connected_component_labels_scipy(n: int, left: Int64Array, right: Int64Array) -> Int64Array:
    """:func:`connected_component_labels` by ``scipy.sparse.csgraph.connected_components`` (linear time,
    in C): the reference of the tests and the fallback of a pathological graph."""
    if len(left) == 0:
        return np.arange(n, dtype=np.int64)
    from scipy.sparse import coo_matrix  # imported here: scipy.sparse costs ~0.1 s of er validate's start-up
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix(
        (np.ones(len(left), dtype=np.int8), (np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64))),
        shape=(n, n),
    )
    _, comp = connected_components(graph, directed=False)
    smallest = np.full(int(comp.max()) + 1, n, dtype=np.int64)
    np.minimum.at(smallest, comp, np.arange(n, dtype=np.int64))
    labels: Int64Array = smallest[comp]
    return labels


def canonical_labels(labels: npt.ArrayLike) -> Int64Array:
    """Renumber labels 0..C-1 in order of first appearance."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int64)
    return rank[inverse.ravel()]
