"""Clustering of verified pairs into entities.

Similarity is not transitive (MMDS ch. 3; SEEDS §8), so the engine offers
community detection over the graph of verified pairs, weighted by score, as
well as plain connected components:

* ``connected_components`` – every chain of verified pairs is one entity;
* ``label_propagation``    – networkx ``asyn_lpa_communities`` (weighted, seeded);
* ``louvain``              – networkx ``louvain_communities`` (weighted, seeded).

Community detection runs on each connected component separately, so the cost
grows with component size, not graph size; components of one or two records
need no community detection at all. Labels are renumbered canonically: cluster
ids are 0, 1, 2 … in the order of each cluster's first record.
"""

from __future__ import annotations

from typing import Callable, Iterable

import networkx as nx
import numpy as np
import numpy.typing as npt
from pydantic import Field
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .components import Clusterer, Params
from .data import Pairs

Int64Array = npt.NDArray[np.int64]


def connected_component_labels(n: int, left: Int64Array, right: Int64Array) -> Int64Array:
    """Label of every node = smallest node index of its connected component.

    Uses ``scipy.sparse.csgraph.connected_components`` (linear time, in C) on
    the pair graph; checked against networkx in the tests.
    """
    if len(left) == 0:
        return np.arange(n, dtype=np.int64)
    graph = coo_matrix(
        (np.ones(len(left), dtype=np.int8), (np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64))),
        shape=(n, n),
    )
    _, comp = connected_components(graph, directed=False)
    smallest = np.full(int(comp.max()) + 1, n, dtype=np.int64)
    np.minimum.at(smallest, comp, np.arange(n, dtype=np.int64))
    return smallest[comp]


def canonical_labels(labels: npt.ArrayLike) -> Int64Array:
    """Renumber labels 0..C-1 in order of first appearance."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int64)
    return rank[inverse.ravel()]


def _communities_per_component(
    n: int,
    pairs: Pairs,
    detect: Callable[[nx.Graph, int], Iterable[Iterable[int]]],
    seed: int,
) -> Int64Array:
    """Run ``detect(graph, seed)`` on each connected component with > 2 nodes."""
    labels = connected_component_labels(n, pairs.left, pairs.right)
    if len(pairs) == 0:
        return labels
    weights = pairs.score if pairs.score is not None else np.ones(len(pairs))
    comp_of_edge = labels[pairs.left]
    order = np.argsort(comp_of_edge, kind="stable")
    comp_sorted = comp_of_edge[order]
    bounds = np.flatnonzero(np.diff(comp_sorted)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(order)]])
    out = labels.copy()
    for s, e in zip(starts, ends):
        edge_idx = order[s:e]
        if e - s < 2:  # one edge: two nodes, nothing to split
            continue
        g = nx.Graph()
        nodes = np.unique(np.concatenate([pairs.left[edge_idx], pairs.right[edge_idx]]))
        g.add_nodes_from(nodes.tolist())
        g.add_weighted_edges_from(
            zip(pairs.left[edge_idx].tolist(), pairs.right[edge_idx].tolist(), weights[edge_idx].tolist())
        )
        for community in detect(g, seed):
            members = np.fromiter(community, dtype=np.int64)
            out[members] = members.min()
    return out


class ConnectedComponents(Clusterer):
    """Every connected component of the verified-pair graph is one cluster."""

    name = "connected_components"
    summary = "connected components of the verified-pair graph (transitive closure)"

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        return connected_component_labels(n, pairs.left, pairs.right)


class LabelPropagationParams(Params):
    seed: int | None = Field(default=None, ge=0, description="random seed (default: the job seed)")


class LabelPropagation(Clusterer):
    """Asynchronous label propagation (networkx), weighted by score, seeded."""

    name = "label_propagation"
    summary = "weighted asynchronous label propagation per component (networkx), seeded"
    Params = LabelPropagationParams

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        return _communities_per_component(
            n,
            pairs,
            lambda g, seed: nx.community.asyn_lpa_communities(g, weight="weight", seed=seed),
            self.seed,
        )


class LouvainParams(Params):
    resolution: float = Field(default=1.0, gt=0, description="> 1 favours smaller communities")
    threshold: float = Field(default=1e-7, gt=0, description="modularity gain below which a level stops")
    seed: int | None = Field(default=None, ge=0, description="random seed (default: the job seed)")


class Louvain(Clusterer):
    """Louvain modularity communities (networkx), weighted by score, seeded."""

    name = "louvain"
    summary = "Louvain communities per component (networkx), weighted and seeded"
    Params = LouvainParams

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        p = self.params
        assert isinstance(p, LouvainParams)
        return _communities_per_component(
            n,
            pairs,
            lambda g, seed: nx.community.louvain_communities(
                g, weight="weight", resolution=p.resolution, threshold=p.threshold, seed=seed
            ),
            self.seed,
        )


BUILTIN_CLUSTERERS: list[type[Clusterer]] = [ConnectedComponents, LabelPropagation, Louvain]
