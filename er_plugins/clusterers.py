"""Clustering of verified pairs into entities.

Similarity is not transitive (MMDS ch. 3; SEEDS §8): near-duplicates chain
(A~B, B~C, A and C far apart) and one record that resembles two entities
bridges them. The engine therefore offers, besides plain connected
components, community detection over the graph of verified pairs weighted by
score, a splitting pass and a one-to-one matching for record linkage:

* ``connected_components`` – every chain of verified pairs is one entity;
* ``label_propagation``    – networkx ``asyn_lpa_communities`` (weighted, seeded);
* ``louvain``              – networkx ``louvain_communities`` (weighted, seeded);
* ``greedy_modularity``    – networkx ``greedy_modularity_communities``
  (Clauset–Newman–Moore, weighted, deterministic without a seed);
* ``one_to_one``           – greedy matching by descending score: every record
  in at most one pair (link mode: at most one record of each other source,
  no cluster holding two records of one source).

Leiden is not offered: networkx 3.6 ships ``leiden_communities`` only as an
API that dispatches to a backend (``NotImplementedError`` with plain
networkx), and the engine does not depend on one.

**Per component.** Community detection runs on each connected component
separately, so the cost grows with component size, not graph size;
components of one or two records never touch networkx. Each component's
graph is built from sorted numpy slices (nodes ascending, edges in
``(left, right)`` order), so the result does not depend on the order of the
input pairs and is the same for a seed.

**Splitting pass.** Every component-based clusterer takes an optional
``split`` parameter (:class:`SplitParams`) that is applied to each connected
component *before* community detection (with ``connected_components`` the
pieces it leaves are the clusters)::

    cluster:
      type: louvain
      split: {bridge_max_score: 0.85, min_density: 0.4}

1. ``bridge_max_score``: bridges (edges whose removal disconnects the
   component) with score <= this are removed (linear time, networkx
   ``bridges``);
2. ``min_density`` / ``min_cut``: a piece whose edge density
   ``edges / (k (k - 1) / 2)`` is below ``min_density``, or whose weighted
   minimum edge cut (Stoer–Wagner, weight = score) is below ``min_cut``, is
   cut in two along that minimum cut; repeated on the pieces until none
   qualifies. Pieces with more than ``max_nodes`` records are not min-cut
   (Stoer–Wagner is O(k·(m + k)·log k) in Python);
3. ``min_side``: a bridge or minimum cut is cut only when both sides keep at
   least this many records. With 2, no single record is cut off (the end
   edge of a chain A~B~C is a bridge too); weak bridges are then judged
   weakest first, on what the earlier cuts left. A minimum cut whose smaller
   side is too small leaves the piece whole.

Running the pass first is cheaper than after detection (detection then runs
on the smaller pieces). With ``connected_components`` it is a
threshold-controlled alternative to community detection: cuts happen only
where a score or a density says so, never because of a resolution.

Labels are renumbered canonically by the engine: cluster ids are 0, 1, 2 …
in the order of each cluster's first record. Within this module a cluster's
label is its smallest record index. Scores are similarities (non-negative);
pairs without scores weigh 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from er_framework.capabilities import SourceAware
from er_framework.components import Clusterer, Params
from er_framework.data import Pairs
from er_framework.kernels.graph import connected_component_labels

if TYPE_CHECKING:
    import networkx as nx

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

#: ``detect(graph, seed)`` -> communities (iterables of node ids)
Detect = Callable[["nx.Graph", int], Iterable[Iterable[int]]]


def canonical_pairs(pairs: Pairs) -> tuple[Int64Array, Int64Array, Float64Array]:
    """``(left, right, weight)`` with ``left < right``, unique, sorted by ``(left, right)``.

    Self-pairs are dropped; of duplicate pairs the highest score is kept, so
    the result does not depend on the order of the input. Pairs without
    scores weigh 1. Already normalized pairs (what the engine passes) are
    returned without sorting.
    """
    score = pairs.score if pairs.score is not None else np.ones(len(pairs), dtype=np.float64)
    if pairs.is_normalized():
        return pairs.left, pairs.right, np.asarray(score, dtype=np.float64)
    lo = np.minimum(pairs.left, pairs.right)
    hi = np.maximum(pairs.left, pairs.right)
    keep = lo != hi
    lo, hi, score = lo[keep], hi[keep], score[keep]
    order = np.lexsort((-score, hi, lo))
    lo, hi, score = lo[order], hi[order], score[order]
    first = np.ones(len(lo), dtype=bool)
    first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    return lo[first], hi[first], np.asarray(score[first], dtype=np.float64)


# ---------------------------------------------------------------- splitting


class SplitParams(Params):
    """The splitting pass, applied to every connected component before detection.

    At least one of ``bridge_max_score``, ``min_density``, ``min_cut`` must be set.
    """

    bridge_max_score: float | None = Field(
        default=None,
        description="remove bridges (edges whose removal disconnects their component) with score <= this",
    )
    min_density: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="cut a piece along its weighted minimum cut while its density edges/(k(k-1)/2) is below this",
    )
    min_cut: float | None = Field(
        default=None,
        gt=0,
        description="cut a piece along its weighted minimum cut (Stoer-Wagner, sum of scores) while that cut is below this",
    )
    min_side: int = Field(
        default=1,
        ge=1,
        description="cut (a bridge or a minimum cut) only when both sides keep at least this many records",
    )
    max_nodes: int = Field(
        default=200,
        ge=3,
        description="pieces with more records than this are not min-cut (Stoer-Wagner is slow in Python); bridges are still removed",
    )

    @model_validator(mode="after")
    def _something_to_do(self) -> SplitParams:
        if self.bridge_max_score is None and self.min_density is None and self.min_cut is None:
            raise ValueError("split needs at least one of bridge_max_score, min_density, min_cut")
        return self


class _Piece:
    """A connected piece of a component: sorted nodes and its edges in ``(left, right)`` order."""

    __slots__ = ("nodes", "left", "right", "weight")

    def __init__(self, nodes: Int64Array, left: Int64Array, right: Int64Array, weight: Float64Array) -> None:
        self.nodes, self.left, self.right, self.weight = nodes, left, right, weight

    def graph(self, clip: bool = False) -> nx.Graph:
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(self.nodes.tolist())
        w = np.maximum(self.weight, 0.0) if clip else self.weight
        g.add_weighted_edges_from(zip(self.left.tolist(), self.right.tolist(), w.tolist()))
        return g

    def pieces(self, keep: npt.NDArray[np.bool_]) -> list[_Piece]:
        """The connected pieces left after keeping only the edges in ``keep``."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        k = len(self.nodes)
        li = np.searchsorted(self.nodes, self.left[keep])
        ri = np.searchsorted(self.nodes, self.right[keep])
        _, comp = connected_components(coo_matrix((np.ones(len(li), dtype=np.int8), (li, ri)), shape=(k, k)), directed=False)
        node_order = np.argsort(comp, kind="stable")
        node_bounds = np.concatenate([[0], np.cumsum(np.bincount(comp))])
        kept_left, kept_right, kept_weight = self.left[keep], self.right[keep], self.weight[keep]
        ecomp = comp[li]
        edge_order = np.argsort(ecomp, kind="stable")
        edge_bounds = np.concatenate([[0], np.cumsum(np.bincount(ecomp, minlength=len(node_bounds) - 1))])
        out = []
        for c in range(len(node_bounds) - 1):
            nodes = self.nodes[node_order[node_bounds[c] : node_bounds[c + 1]]]
            e = edge_order[edge_bounds[c] : edge_bounds[c + 1]]
            out.append(_Piece(nodes, kept_left[e], kept_right[e], kept_weight[e]))
        return out


def _weak_bridges(piece: _Piece, g: nx.Graph, spec: SplitParams) -> npt.NDArray[np.bool_]:
    """Mask of the piece's edges to cut as weak bridges (score <= ``bridge_max_score``).

    With ``min_side`` > 1 the weak bridges are taken weakest first (ties by
    ``(left, right)``) and one is cut only when, at that moment, both of its
    sides hold at least ``min_side`` records; the side sizes are counted on
    the forest of blocks that the weak bridges join, stopping at ``min_side``.
    """
    import networkx as nx
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    assert spec.bridge_max_score is not None
    m = len(piece.left)
    weak = {(min(u, v), max(u, v)) for u, v in nx.bridges(g) if g[u][v]["weight"] <= spec.bridge_max_score}
    if not weak:
        return np.zeros(m, dtype=bool)
    is_weak = np.fromiter(((a, b) in weak for a, b in zip(piece.left.tolist(), piece.right.tolist())), dtype=bool, count=m)
    if spec.min_side <= 1:
        return is_weak
    k = len(piece.nodes)
    li = np.searchsorted(piece.nodes, piece.left)
    ri = np.searchsorted(piece.nodes, piece.right)
    keep = ~is_weak
    _, block = connected_components(
        coo_matrix((np.ones(int(keep.sum()), dtype=np.int8), (li[keep], ri[keep])), shape=(k, k)), directed=False
    )
    size = np.bincount(block).tolist()
    adj: dict[int, set[int]] = {}
    cand = np.flatnonzero(is_weak)
    cand = cand[np.lexsort((piece.right[cand], piece.left[cand], piece.weight[cand]))]
    ends = [(int(block[li[e]]), int(block[ri[e]])) for e in cand.tolist()]
    for a, b in ends:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)

    def side_at_least(start: int, avoid: int) -> bool:
        total, seen, stack = 0, {start, avoid}, [start]
        while stack:
            x = stack.pop()
            total += size[x]
            if total >= spec.min_side:
                return True
            for y in adj[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return False

    cut = np.zeros(m, dtype=bool)
    for e, (a, b) in zip(cand.tolist(), ends):
        if side_at_least(a, b) and side_at_least(b, a):
            cut[e] = True
            adj[a].discard(b)
            adj[b].discard(a)
    return cut


def split_piece(piece: _Piece, spec: SplitParams) -> list[_Piece]:
    """Apply the splitting pass to one connected piece; returns connected pieces."""
    import networkx as nx

    if len(piece.nodes) < 3:
        return [piece]
    todo = [piece]
    if spec.bridge_max_score is not None:
        cut = _weak_bridges(piece, piece.graph(), spec)
        if cut.any():
            todo = piece.pieces(~cut)
    if spec.min_density is None and spec.min_cut is None:
        return todo
    done: list[_Piece] = []
    while todo:
        p = todo.pop()
        k = len(p.nodes)
        if k < 3 or k > spec.max_nodes:
            done.append(p)
            continue
        sparse = spec.min_density is not None and len(p.left) < spec.min_density * k * (k - 1) / 2
        if not sparse and spec.min_cut is None:
            done.append(p)
            continue
        cut_value, (side_a, side_b) = nx.stoer_wagner(p.graph(clip=True))
        wanted = sparse or (spec.min_cut is not None and cut_value < spec.min_cut)
        if wanted and min(len(side_a), len(side_b)) >= spec.min_side:
            in_a = np.isin(p.nodes, np.asarray(side_a, dtype=np.int64))
            ia = in_a[np.searchsorted(p.nodes, p.left)]
            ib = in_a[np.searchsorted(p.nodes, p.right)]
            todo.extend(p.pieces(ia == ib))
        else:
            done.append(p)
    done.sort(key=lambda q: int(q.nodes[0]))
    return done


# ---------------------------------------------------------------- per component


def communities_per_component(
    n: int,
    pairs: Pairs,
    detect: Detect | None,
    seed: int,
    split: SplitParams | None = None,
    settled: Callable[[Float64Array, npt.NDArray[np.bool_]], npt.NDArray[np.bool_]] | None = None,
    ids: Int64Array | None = None,
) -> Int64Array:
    """Split (optional) and run ``detect(graph, seed)`` on each connected component.

    Components with one or two records are left as they are without building
    a graph. Each component's nodes and edges are numpy slices of one global
    sort by component, in ascending order. With ``detect=None`` the pieces of
    the splitting pass are the clusters. ``settled(weights, adjacency)``
    (without ``split``): for the components of 3 to :data:`SETTLED_MAX_NODES`
    nodes, given as dense ``(m, k, k)`` weight and adjacency matrices (rows
    and columns in node order), which of them ``detect`` is known to leave
    whole; those are not handed to ``detect`` (see :func:`lpa_single_community`).

    ``ids`` (ascending, one per record): the records are whole components of a larger graph, where
    record ``i`` is ``ids[i]`` (the Dask executor clusters groups of components on its workers). The
    graphs handed to ``split`` and ``detect`` then carry those numbers, so that each component's answer
    is the one it gets in the whole graph: networkx's results may depend on the node numbers (the
    iteration order of sets of them), not only on their order. Labels are still local (``0 .. n-1``).
    """
    left, right, weight = canonical_pairs(pairs)
    if len(left) == 0:
        return np.arange(n, dtype=np.int64)
    root = connected_component_labels(n, left, right)  # a component's id: its smallest node
    out = root.copy()
    node_count = np.bincount(root, minlength=n)
    big = np.flatnonzero(node_count >= 3)
    if len(big) == 0 or (detect is None and split is None):
        return out
    node_order = np.argsort(root, kind="stable")
    node_start = np.concatenate([[0], np.cumsum(node_count)])
    edge_comp = root[left]
    edge_order = np.argsort(edge_comp, kind="stable")
    edge_start = np.concatenate([[0], np.cumsum(np.bincount(edge_comp, minlength=n))])
    if settled is not None and split is None:
        done = _settled_components(settled, node_count, node_order, node_start, root, left, right, weight)
        big = big[~done[big]]
    del edge_comp
    for c in big.tolist():
        nodes = node_order[node_start[c] : node_start[c + 1]]
        e = edge_order[edge_start[c] : edge_start[c + 1]]
        if ids is None:
            piece = _Piece(nodes, left[e], right[e], weight[e])
        else:
            piece = _Piece(ids[nodes], ids[left[e]], ids[right[e]], weight[e])
        _component_communities(out, piece, detect, seed, split, ids)
    return out


def _component_communities(
    out: Int64Array, piece: _Piece, detect: Detect | None, seed: int, split: SplitParams | None, ids: Int64Array | None
) -> None:
    """Label one component's communities in ``out`` (each by its smallest record): the pieces of the
    splitting pass, each handed to ``detect``; ``ids``: the numbers ``piece`` carries (see
    :func:`communities_per_component`), mapped back to positions in ``out``."""

    def local(x: Int64Array) -> Int64Array:
        return x if ids is None else np.searchsorted(ids, x).astype(np.int64)

    pieces = split_piece(piece, split) if split is not None else [piece]
    for p in pieces:
        at = local(p.nodes)
        out[at] = at[0]
        if detect is None or len(p.nodes) < 3:
            continue
        for community in detect(p.graph(), seed):
            members = local(np.fromiter(community, dtype=np.int64))
            out[members] = members.min()


#: components of up to this many nodes are offered to a clusterer's ``settled`` test (5 nodes: 51
#: partitions to rule out; 6 would be 202)
SETTLED_MAX_NODES = 5


def _settled_components(
    settled: Callable[[Float64Array, npt.NDArray[np.bool_]], npt.NDArray[np.bool_]],
    node_count: Int64Array,
    node_order: Int64Array,
    node_start: Int64Array,
    root: Int64Array,
    left: Int64Array,
    right: Int64Array,
    weight: Float64Array,
) -> npt.NDArray[np.bool_]:
    """Per component id (its smallest node), whether ``settled`` says the clusterer leaves it whole
    (components of 3 to :data:`SETTLED_MAX_NODES` nodes; false for every other)."""
    n = len(root)
    done = np.zeros(n, dtype=bool)
    rank = np.empty(n, dtype=np.int64)  # a node's position within its component (node order)
    rank[node_order] = np.arange(n, dtype=np.int64) - node_start[root[node_order]]
    edge_size = node_count[root[left]]
    for k in range(3, SETTLED_MAX_NODES + 1):  # one step per component size
        comps = np.flatnonzero(node_count == k)
        if len(comps) == 0:
            continue
        which = np.full(n, -1, dtype=np.int64)
        which[comps] = np.arange(len(comps), dtype=np.int64)
        e = np.flatnonzero(edge_size == k)
        c, i, j = which[root[left[e]]], rank[left[e]], rank[right[e]]
        w = np.zeros((len(comps), k, k), dtype=np.float64)
        adj = np.zeros((len(comps), k, k), dtype=bool)
        w[c, i, j] = w[c, j, i] = weight[e]
        adj[c, i, j] = adj[c, j, i] = True
        done[comps] = settled(w, adj)
    return done


def set_partitions(k: int) -> list[tuple[int, ...]]:
    """Every partition of ``k`` items as a tuple of block labels, blocks numbered in order of first
    item (restricted growth strings: ``(0, 0, 1)`` is ``{0, 1}, {2}``); Bell(k) of them."""
    out: list[tuple[int, ...]] = [()]
    for _ in range(k):
        out = [p + (b,) for p in out for b in range(max(p, default=-1) + 2)]
    return out


#: label weights closer than this (relative) count as a tie in :func:`lpa_single_community`
LPA_TIE = 1e-9


def lpa_single_community(weights: Float64Array, adjacency: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """For small connected graphs (``(m, k, k)`` symmetric weights and adjacency), whether asynchronous
    label propagation can only end with the whole graph as one community.

    networkx's ``asyn_lpa_communities`` stops only after a pass over every node
    in which no label changed, i.e. in a *fixed point*: every node's label
    is among the labels of largest total edge weight among its neighbours.
    Its result is one of those fixed points (which one may depend on the
    seeded visiting order). One community is always a fixed point; a graph
    is settled when no other partition of its nodes is one: for every other
    partition some node's own label is missing among its neighbours' or
    weighs less than another label's (by more than :data:`LPA_TIE`, so
    that a sum's rounding never decides; near-ties are left to networkx).
    Every connected graph of 3 nodes is settled; a 4-clique with scores in
    (0.5, 1] too (a 2 + 2 split needs a node's partner to outweigh its two
    other neighbours). The tests compare with networkx on random graphs.
    """
    m, k, _ = weights.shape
    maybe_other_fixed_point = np.zeros(m, dtype=bool)
    nodes = np.arange(k)
    for labels in set_partitions(k)[1:]:  # every partition but the single block (its labels are all 0)
        lab = np.asarray(labels, dtype=np.int64)
        onehot = np.zeros((k, int(lab.max()) + 1), dtype=np.float64)
        onehot[nodes, lab] = 1.0
        per_label = weights @ onehot  # (m, k, C): each node's total weight per label among its neighbours
        present = (adjacency.astype(np.float64) @ onehot) > 0
        best = np.where(present, per_label, -np.inf).max(axis=2)
        own = per_label[:, nodes, lab]
        own_present = present[:, nodes, lab]
        tol = LPA_TIE * np.maximum(1.0, np.abs(best))
        moved = ~own_present | (own < best - tol)  # this node would change its label
        maybe_other_fixed_point |= ~moved.any(axis=1)
    return ~maybe_other_fixed_point


# ---------------------------------------------------------------- clusterers


class ComponentParams(Params):
    """Parameters shared by the component-based clusterers."""

    split: SplitParams | None = Field(
        default=None,
        description="splitting pass applied to each connected component before detection "
        "(bridge_max_score, min_density, min_cut, min_side, max_nodes); null = none",
    )


class ConnectedComponentsParams(ComponentParams):
    pass


class ConnectedComponents(Clusterer[ConnectedComponentsParams]):
    """Every connected component of the verified-pair graph is one cluster.

    With ``split`` set, the pieces the splitting pass leaves of each
    component are the clusters (bridges and sparse or weakly cut components
    are broken); without it, one linear-time scipy pass.
    """

    name = "connected_components"
    summary = "connected components of the verified-pair graph (transitive closure), optionally split"
    Params = ConnectedComponentsParams

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        return self._labels(n, pairs, None)

    def cluster_ids(self, ids: Int64Array, pairs: Pairs) -> Int64Array:
        """:meth:`cluster` of whole connected components of a larger graph, where record ``i`` here
        (``pairs`` are numbered ``0 .. len(ids)-1``) is ``ids[i]`` (ascending): the labels these records
        get in the whole graph's answer (:func:`communities_per_component`). The Dask executor clusters
        groups of components on its workers with it."""
        return self._labels(len(ids), pairs, ids)

    def _labels(self, n: int, pairs: Pairs, ids: Int64Array | None) -> Int64Array:
        split = self.params.split
        if split is None:
            return connected_component_labels(n, pairs.left, pairs.right)
        return communities_per_component(n, pairs, None, self.seed, split, ids=ids)


class LabelPropagationParams(ComponentParams):
    seed: int | None = Field(default=None, ge=0, description="random seed (default: the job seed)")


def asyn_lpa(g: nx.Graph, seed: int) -> Iterable[Iterable[int]]:
    """networkx's weighted asynchronous label propagation (networkx imported only when a component needs it)."""
    import networkx as nx

    communities: Iterable[Iterable[int]] = nx.community.asyn_lpa_communities(g, weight="weight", seed=seed)
    return communities


class LabelPropagation(Clusterer[LabelPropagationParams]):
    """Asynchronous label propagation (networkx), weighted by score, seeded, per component."""

    name = "label_propagation"
    summary = "weighted asynchronous label propagation per component (networkx), seeded"
    Params = LabelPropagationParams

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        return self._labels(n, pairs, None)

    def cluster_ids(self, ids: Int64Array, pairs: Pairs) -> Int64Array:
        """As :meth:`ConnectedComponents.cluster_ids`."""
        return self._labels(len(ids), pairs, ids)

    def _labels(self, n: int, pairs: Pairs, ids: Int64Array | None) -> Int64Array:
        return communities_per_component(n, pairs, asyn_lpa, self.seed, self.params.split, settled=lpa_single_community, ids=ids)


class LouvainParams(ComponentParams):
    resolution: float = Field(default=1.0, gt=0, description="> 1 favours smaller communities")
    threshold: float = Field(default=1e-7, gt=0, description="modularity gain below which a level stops")
    seed: int | None = Field(default=None, ge=0, description="random seed (default: the job seed)")


class Louvain(Clusterer[LouvainParams]):
    """Louvain modularity communities (networkx), weighted by score, seeded, per component."""

    name = "louvain"
    summary = "Louvain communities per component (networkx), weighted and seeded"
    Params = LouvainParams

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        return self._labels(n, pairs, None)

    def cluster_ids(self, ids: Int64Array, pairs: Pairs) -> Int64Array:
        """As :meth:`ConnectedComponents.cluster_ids`."""
        return self._labels(len(ids), pairs, ids)

    def _labels(self, n: int, pairs: Pairs, ids: Int64Array | None) -> Int64Array:
        import networkx as nx

        p = self.params
        return communities_per_component(
            n,
            pairs,
            lambda g, seed: nx.community.louvain_communities(g, weight="weight", resolution=p.resolution, threshold=p.threshold, seed=seed),
            self.seed,
            p.split,
            ids=ids,
        )


class GreedyModularityParams(ComponentParams):
    resolution: float = Field(default=1.0, gt=0, description="> 1 favours smaller communities")


class GreedyModularity(Clusterer[GreedyModularityParams]):
    """Greedy modularity maximisation (Clauset–Newman–Moore, networkx), weighted, per component.

    Merges the pair of communities with the largest modularity gain until no
    merge gains; deterministic (no seed). Slower than Louvain on large
    components.
    """

    name = "greedy_modularity"
    summary = "greedy (Clauset-Newman-Moore) modularity communities per component (networkx), weighted"
    Params = GreedyModularityParams

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        return self._labels(n, pairs, None)

    def cluster_ids(self, ids: Int64Array, pairs: Pairs) -> Int64Array:
        """As :meth:`ConnectedComponents.cluster_ids`."""
        return self._labels(len(ids), pairs, ids)

    def _labels(self, n: int, pairs: Pairs, ids: Int64Array | None) -> Int64Array:
        import networkx as nx

        p = self.params
        return communities_per_component(
            n,
            pairs,
            lambda g, seed: nx.community.greedy_modularity_communities(g, weight="weight", resolution=p.resolution),
            self.seed,
            p.split,
            ids=ids,
        )


def greedy_matching(n: int, pairs: Pairs, chunk: int = 1 << 20) -> Int64Array:
    """Partner of every record (``-1`` for none) in the greedy matching by descending score.

    Pairs are taken in the order (score descending, left, right); a pair is
    kept when neither record is matched yet. Chunks of the sorted pairs are
    pre-filtered with numpy against the records matched so far, so the Python
    loop only sees pairs that may still be kept.
    """
    left, right, weight = canonical_pairs(pairs)
    partner = np.full(n, -1, dtype=np.int64)
    if len(left) == 0:
        return partner
    order = np.lexsort((right, left, -weight))
    flags = bytearray(n)  # the Python loop reads and writes this ...
    matched = np.frombuffer(flags, dtype=np.uint8)  # ... numpy sees the same memory
    got_a: list[int] = []
    got_b: list[int] = []
    for s in range(0, len(order), chunk):
        idx = order[s : s + chunk]
        chunk_left, chunk_right = left[idx], right[idx]
        free = (matched[chunk_left] | matched[chunk_right]) == 0
        for a, b in zip(chunk_left[free].tolist(), chunk_right[free].tolist()):
            if not flags[a] and not flags[b]:
                flags[a] = flags[b] = 1
                got_a.append(a)
                got_b.append(b)
    a_arr = np.asarray(got_a, dtype=np.int64)
    b_arr = np.asarray(got_b, dtype=np.int64)
    partner[a_arr] = b_arr
    partner[b_arr] = a_arr
    return partner


def source_matching(n: int, pairs: Pairs, source: npt.NDArray[np.integer]) -> Int64Array:
    """Clusters of the greedy matching by descending score with at most one record of each source per cluster.

    Pairs are taken in the order (score descending, left, right), as
    :func:`greedy_matching` takes them; a pair joins the clusters of its two
    records when they are different clusters holding no common source (the
    two records' clusters would otherwise hold two records of one source),
    and is left out otherwise (a pair inside one cluster already changes
    nothing). Union-find over the records, each cluster's sources a bit set
    (a Python int, so any number of sources). Returns a label per record: the
    smallest record index of its cluster. With two sources and pairs across
    them only, this is exactly :func:`greedy_matching`'s pairs.
    """
    left, right, weight = canonical_pairs(pairs)
    src = np.asarray(source, dtype=np.int64)
    if len(src) != n:
        raise ValueError(f"source has {len(src)} entries for {n} records")
    if len(left) == 0:
        return np.arange(n, dtype=np.int64)
    order = np.lexsort((right, left, -weight))
    parent = list(range(n))
    sources = [1 << s for s in src.tolist()]  # per root: its cluster's sources

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    got_a: list[int] = []
    got_b: list[int] = []
    for a, b in zip(left[order].tolist(), right[order].tolist()):
        ra, rb = find(a), find(b)
        if ra == rb or sources[ra] & sources[rb]:
            continue
        if rb < ra:
            ra, rb = rb, ra
        parent[rb] = ra
        sources[ra] |= sources[rb]
        got_a.append(a)
        got_b.append(b)
    return connected_component_labels(n, np.asarray(got_a, dtype=np.int64), np.asarray(got_b, dtype=np.int64))


class OneToOne(SourceAware, Clusterer):
    """Greedy one-to-one matching for record linkage.

    Pairs are accepted in order of descending score (ties broken by
    ``(left, right)``) when neither record has been matched yet; unmatched
    records are singletons. In link mode with two sources every record is
    therefore matched to at most one record of the other source.

    **Link mode with three or more sources** (``cluster_sources``, given the
    records' sources by the engine): each record is matched to at most one
    record *of each other source*, consistently — a cluster never holds two
    records of one source (the same customer in three companies' files is
    one cluster of three records). The rule (:func:`source_matching`): pairs
    in order of descending score, ties by ``(left, right)``; a pair joins
    its records' clusters when they are different clusters with no source in
    common, and is left out otherwise. With two sources the engine's answer
    is that of the rule above (byte for byte).

    Outside link mode the rule does not look at sources: in link_and_dedup a
    record gets at most one partner in all, and in dedup mode the clusters
    are pairs (a greedy matching), not entities — use it for 1:1 linkage
    only. Greedy matching is a 1/2-approximation of the maximum-weight matching.
    """

    name = "one_to_one"
    summary = "greedy one-to-one matching by descending score (link mode: at most one partner per record of each other source)"
    # its answer is the matched pairs: pairs.csv lists them, verified_pairs.csv the pairs before matching
    selects_pairs = True

    def cluster(self, n: int, pairs: Pairs) -> Int64Array:
        partner = greedy_matching(n, pairs)
        labels = np.arange(n, dtype=np.int64)
        has = partner >= 0
        labels[has] = np.minimum(labels[has], partner[has])
        return labels

    def cluster_sources(self, n: int, pairs: Pairs, source: npt.NDArray[np.int32]) -> Int64Array:
        if len(np.unique(source)) <= 2:  # two sources: the one-partner matching, as without sources
            return self.cluster(n, pairs)
        return source_matching(n, pairs, source)


BUILTIN_CLUSTERERS: list[type[Clusterer]] = [
    ConnectedComponents,
    LabelPropagation,
    Louvain,
    GreedyModularity,
    OneToOne,
]
