"""Clustering on the Dask workers: connected components, the job's clusterer per component, canonical
cluster ids and cluster sizes, with nothing per record or per pair on the client.

What the client has when clustering starts: ``P`` input partitions, partition ``i`` holding the records
``offsets[i] .. offsets[i+1]-1`` (global indices), each of one source (``source_of_partition``), and the
verified graph as futures of edge parts ``(left, right, score)`` (global indices, ``left < right``, any
partition on either end; the union of the parts is the graph the local executor clusters, each pair in
one part). Every shuffle below routes a value to the *owner* of a node, as one piece per destination
picked by small tasks (the pattern of ``dask_run``: ``D²`` tasks for ``D`` destinations). In (a) and (b)
the owner is a *group* of consecutive input partitions: ``G = min(P, ceil(edges / EDGES_PER_GROUP))``
groups (the client gathers one edge count per part), so that a graph small for its partitions is not
cut into ``P²`` tiny pieces per step; with one group, (a) is one task (the union-find kernel of
:mod:`er_framework.kernels.graph` over every edge part). In (c) the owner is the input partition
holding the node.

**(a) Connected components** (*alternating stars*, Kiveris et al., "Connected Components in MapReduce
and Beyond", SoCC 2014). Each edge part is first reduced to a spanning forest of its own (one edge
``(smallest node, node)`` per other node of each of its components: at most one edge per node it
touches). Then, over edges kept at the owners of their ends, rounds of

* *large star*: every node ``u`` with neighbours ``N(u)``, ``m = min(N(u) + u)``, replaces each edge to
  a larger neighbour ``v`` by ``(v, m)`` (each edge is held by both of its ends' owners);
* *small star*: every node ``u`` with smaller neighbours ``S(u)``, ``m = min(S(u) + u)``, replaces its
  edges to ``S(u)`` by ``(v, m)`` for ``v`` in ``S(u)`` and ``(u, m)`` (each edge held by its larger end's owner).

Both keep the components and never add edges (after dropping self-loops and duplicates); the pair of
them reaches, in ``O(log² n)`` rounds (measured: about ``log2`` of the longest path; a chain of 20,000
records takes 12 to 15 rounds, 200,000 records 15 to 19, where naive min-label propagation would take as
many rounds as the chain has records), the fixed point where every component is a star around its
smallest node. A large-star task also counts its nodes that are neither
a centre (only larger neighbours) nor a leaf (one smaller neighbour): the client gathers these ``P``
counts after each round and stops when all are 0. Each node's component root is then its smallest
member: a leaf's one neighbour, or itself.

**(b) The job's clusterer.** For ``connected_components`` without ``split`` the components are the
clusters. Otherwise every edge is sent to the owner of its left end, which adds the component root, then
to the owner of the root: one task per input partition holds every edge of the components rooted in it.
It renumbers their records ``0 .. k-1`` in global-index order (a monotone renumbering) and calls the
clusterer once for all of them: ``cluster_ids(ids, pairs)`` when the clusterer has it (the built-in
component clusterers of ``er_plugins.clusterers``: the graphs networkx sees carry the global numbers,
so each component gets exactly its whole-graph answer, see ``communities_per_component``), else
``cluster_sources`` (link mode, :class:`~er_framework.capabilities.SourceAware`) or ``cluster``.
``one_to_one`` needs no ``cluster_ids``: its greedy order (score descending, then ``(left, right)``) is
kept by a monotone renumbering and its decisions only look at records of one component; its choice
between the two rules depends on the number of sources of the whole run, so the sub-problem is given
one extra isolated record of every source present in the run (they are dropped from the answer). The
built-in clusterers seed every component's detection with the same seed (networkx builds a new random
state from an int seed at each call), so per-component application is the whole graph's answer; a plugin
clusterer is applied the same way and must be one whose answer on a component does not depend on the
other components. Each community's root is its smallest global index.

**(c) Canonical ids.** A record is a root when it is its cluster's smallest member. The task of the
root's partition holds, per root, every other member (the leaves of a star, or the members sent to it in
(b)); the task of a member's partition knows it is not a root. Each partition counts its roots (``P``
numbers to the client, prefix sums there: ``base``); the roots of partition ``j`` get the ids
``base[j] ..`` in index order (so the ids are ``0, 1, ...`` in order of each cluster's first record, as
:func:`~er_framework.kernels.graph.canonical_labels` numbers them) and every non-root gets its root's id
pushed to its partition. A singleton never leaves its partition.

**Cost.** Rounds: ``R`` alternating-star rounds (two shuffles of the current edges among the ``G``
groups each, at most the forest edges of the parts), one synchronous gather of ``G`` ints per round,
plus 3 shuffles in (b) (the verified edges twice, the members once) and one among the ``P`` partitions
in (c) (the non-root members). Tasks: ``R (2 G² + 3 G)`` in (a), ``3 G² + ...`` in (b), ``P² + 5 P`` in
(c). Shuffle volume: per round ``O(forest edges)`` (16 bytes an edge, each edge twice in the large
star); (b) ``O(verified edges)``; (c) ``O(records in clusters of 2 or more)``. Worker memory: one
group's edges (``EDGES_PER_GROUP`` order) or one partition's records (8 bytes a record) plus one
shuffle part, and in (b) the components rooted in one group (the largest component whole: networkx
needs it in one process). Client: ``O(P)`` numbers per round and ``O(P)`` futures.

:func:`cluster_sizes` sums the sizes where the roots are (the clusters rooted in partition ``j`` have the
ids ``base[j] .. base[j+1]-1``: a dense array per partition) and merges per-partition summaries:
:func:`~er_framework.engine.stages.clustering.cluster_stats`, the largest clusters as
:func:`~er_framework.report.page.largest_clusters` orders them and the size histogram.
:func:`members_of` gathers the members of a few chosen clusters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import SourceAware, ability
from er_framework.data import Pairs
from er_framework.errors import ErError
from er_framework.kernels.graph import connected_component_labels
from er_framework.report.page import largest_clusters

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

#: a guard on the alternating-star rounds (they converge in O(log² n); 200 would be a chain of 2**100)
MAX_ROUNDS = 200


# ------------------------------------------------------------------ small array helpers (worker side)


def owner_of(offsets: Int64Array, nodes: Int64Array) -> Int64Array:
    """The input partition holding each global index."""
    owner: Int64Array = np.searchsorted(offsets, nodes, side="right").astype(np.int64) - 1
    return owner


def split_by(dest: Int64Array, n_parts: int, *arrays: npt.NDArray[Any]) -> list[tuple[npt.NDArray[Any], ...]]:
    """``arrays`` (aligned) cut into ``n_parts`` pieces by ``dest`` (each piece keeps their order)."""
    order = np.argsort(dest, kind="stable")
    bounds = np.searchsorted(dest[order], np.arange(n_parts + 1))
    return [tuple(a[order[bounds[j] : bounds[j + 1]]] for a in arrays) for j in range(n_parts)]


def _empty() -> Int64Array:
    return np.zeros(0, np.int64)


def concat(pieces: list[tuple[npt.NDArray[Any], ...]], k: int, dtype: Any = np.int64) -> npt.NDArray[Any]:
    """Column ``k`` of every piece, concatenated."""
    return np.concatenate([p[k] for p in pieces]) if pieces else np.zeros(0, dtype)


def unique_edges(u: Int64Array, v: Int64Array) -> tuple[Int64Array, Int64Array]:
    """Distinct ``(u, v)`` rows without self-loops, sorted by ``(u, v)``."""
    keep = u != v
    u, v = u[keep], v[keep]
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    first = np.ones(len(u), dtype=bool)
    first[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
    return u[first], v[first]


def local_forest(left: Int64Array, right: Int64Array) -> tuple[Int64Array, Int64Array]:
    """A spanning forest of the edges: ``(smallest node of its component, node)`` per other node."""
    if len(left) == 0:
        return _empty(), _empty()
    nodes, inv = np.unique(np.concatenate([left, right]), return_inverse=True)
    inv = inv.reshape(-1)
    m = len(left)
    smallest = connected_component_labels(len(nodes), inv[:m], inv[m:])
    other = np.flatnonzero(smallest != np.arange(len(nodes)))
    return nodes[smallest[other]], nodes[other]


def both_ways(a: Int64Array, b: Int64Array, offsets: Int64Array) -> list[tuple[npt.NDArray[Any], ...]]:
    """Each edge as ``(u, v)`` at the owner of ``u`` and as ``(v, u)`` at the owner of ``v``."""
    u = np.concatenate([a, b])
    v = np.concatenate([b, a])
    return split_by(owner_of(offsets, u), len(offsets) - 1, u, v)


# ------------------------------------------------------------------ (a) connected components: tasks


def task_start(edges: tuple[Int64Array, Int64Array, Float64Array], offsets: Int64Array) -> list[tuple[npt.NDArray[Any], ...]]:
    """An edge part's spanning forest, each edge at the owners of both ends (the first large star's input)."""
    a, b = local_forest(np.asarray(edges[0], np.int64), np.asarray(edges[1], np.int64))
    return both_ways(a, b, offsets)


@dataclass
class Members:
    """One partition's share of the clusters: its records that are not roots (sorted) with their roots,
    and the other members of the clusters whose root it holds, ``(member, root)`` sorted by root."""

    nonroot: Int64Array = field(default_factory=_empty)
    nonroot_root: Int64Array = field(default_factory=_empty)
    member: Int64Array = field(default_factory=_empty)
    root: Int64Array = field(default_factory=_empty)


@dataclass
class LargeStar:
    """A large-star task's result: the edges for the small star (per owner of the larger end), the
    count of its nodes that are neither a centre nor a leaf, and, when that count is 0, its members."""

    pieces: list[tuple[npt.NDArray[Any], ...]]
    unsettled: int
    members: Members | None


def task_large_star(offsets: Int64Array, *pieces: tuple[npt.NDArray[Any], ...]) -> LargeStar:
    """The large star over one partition's nodes (every edge of each of them, as ``(node, neighbour)``)."""
    u, v = unique_edges(concat(list(pieces), 0), concat(list(pieces), 1))
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]]) if len(u) else _empty()
    m = np.minimum(u[starts], np.minimum.reduceat(v, starts)) if len(u) else _empty()
    deg = np.diff(np.r_[starts, len(u)])
    m_of = np.repeat(m, deg)
    up = v > u
    a, b = v[up], m_of[up]  # the new edge (v, m): v is the larger end (v > u >= m)
    small_pieces = split_by(owner_of(offsets, a), len(offsets) - 1, a, b)
    centre = m == u[starts]  # every neighbour larger
    leaf = (deg == 1) & ~centre
    unsettled = int(len(starts) - np.count_nonzero(centre | leaf))
    members = None
    if unsettled == 0:
        lf = u[starts[leaf]]
        c = np.repeat(centre, deg)
        members = Members(lf, v[starts[leaf]], v[c], u[c])
    return LargeStar(small_pieces, unsettled, members)


def task_small_star(offsets: Int64Array, *pieces: tuple[npt.NDArray[Any], ...]) -> list[tuple[npt.NDArray[Any], ...]]:
    """The small star over one partition's nodes (their edges to smaller neighbours, as ``(node, smaller)``);
    the new edges at the owners of both ends."""
    u, w = unique_edges(concat(list(pieces), 0), concat(list(pieces), 1))
    if len(u) == 0:
        return both_ways(_empty(), _empty(), offsets)
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    m = np.minimum.reduceat(w, starts)
    m_of = np.repeat(m, np.diff(np.r_[starts, len(u)]))
    a = np.concatenate([w, u[starts]])  # (w, m) for every smaller neighbour w, and (u, m)
    b = np.concatenate([m_of, m])
    keep = a != b
    return both_ways(a[keep], b[keep], offsets)


def task_whole_components(*parts: tuple[Int64Array, Int64Array, Float64Array]) -> Members:
    """(a) in one task, when the graph is one group: the components by the union-find kernel, as stars."""
    left = np.concatenate([_empty()] + [np.asarray(e[0], np.int64) for e in parts])
    right = np.concatenate([_empty()] + [np.asarray(e[1], np.int64) for e in parts])
    root, node = local_forest(left, right)
    order = np.argsort(node)
    return Members(node[order], root[order], *_by_root(node, root))


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


def _pick_large(star: LargeStar, j: int) -> tuple[npt.NDArray[Any], ...]:
    return star.pieces[j]


def _unsettled(star: LargeStar) -> int:
    return star.unsettled


def _members(star: LargeStar) -> Members:
    return star.members if star.members is not None else Members()


# ------------------------------------------------------------------ (b) the clusterer per component: tasks


def task_by_left(edges: tuple[Int64Array, Int64Array, Float64Array], offsets: Int64Array) -> list[tuple[npt.NDArray[Any], ...]]:
    """An edge part's edges at the owner of their left end."""
    left, right = np.asarray(edges[0], np.int64), np.asarray(edges[1], np.int64)
    score = np.asarray(edges[2], np.float64) if edges[2] is not None else np.ones(len(left))
    return split_by(owner_of(offsets, left), len(offsets) - 1, left, right, score)


def roots_of(members: Members, nodes: Int64Array) -> Int64Array:
    """The root of each of ``nodes`` (of the partition of ``members``): its own index unless it is a non-root."""
    at = np.searchsorted(members.nonroot, nodes)
    at_c = np.minimum(at, max(len(members.nonroot) - 1, 0))
    hit = (at < len(members.nonroot)) & (members.nonroot[at_c] == nodes) if len(members.nonroot) else np.zeros(len(nodes), bool)
    out = nodes.copy()
    out[hit] = members.nonroot_root[at_c[hit]]
    return out


def task_by_root(members: Members, offsets: Int64Array, *pieces: tuple[npt.NDArray[Any], ...]) -> list[tuple[npt.NDArray[Any], ...]]:
    """The edges at one partition (by their left end), with their component's root, at the root's owner."""
    left, right, score = concat(list(pieces), 0), concat(list(pieces), 1), concat(list(pieces), 2, np.float64)
    root = roots_of(members, left)
    return split_by(owner_of(offsets, root), len(offsets) - 1, left, right, score)


@dataclass(frozen=True)
class ClusterCall:
    """How a group of components is clustered on a worker (what the local ``stages.cluster`` decides)."""

    clusterer: Any
    link: bool
    #: the input partitions' offsets and sources, and every source present in the run (records in it)
    offsets: Int64Array
    source_of_partition: Int64Array
    sources_present: Int64Array


def cluster_group(call: ClusterCall, nodes: Int64Array, pairs: Pairs) -> Int64Array:
    """The clusterer's raw labels of whole components (``nodes`` ascending, ``pairs`` numbered
    ``0 .. len(nodes)-1``, normalized): as the whole graph's answer gives them (module docstring, (b))."""
    k = len(nodes)
    by_ids: Callable[[Int64Array, Pairs], Any] | None = getattr(call.clusterer, "cluster_ids", None)
    aware = ability(call.clusterer, SourceAware)
    if aware is not None and call.link:
        src = call.source_of_partition[owner_of(call.offsets, nodes)]
        source = np.concatenate([src, call.sources_present]).astype(np.int32)
        raw = np.asarray(aware.cluster_sources(k + len(call.sources_present), pairs, source))[:k]
    elif by_ids is not None:
        raw = np.asarray(by_ids(nodes, pairs))
    else:
        raw = np.asarray(call.clusterer.cluster(k, pairs))
    if raw.shape != (k,):
        raise ErError(f"clusterer {type(call.clusterer).__name__} returned {raw.shape} labels for {k} records")
    return raw


def task_communities(call: ClusterCall, offsets: Int64Array, *pieces: tuple[npt.NDArray[Any], ...]) -> list[Members]:
    """The clusterer over the components rooted in one group: every non-root (at its owner) and every
    ``(member, root)`` (at the root's owner), one :class:`Members` piece per group (``offsets``: the groups')."""
    n_parts = len(offsets) - 1
    p = Pairs(concat(list(pieces), 0), concat(list(pieces), 1), concat(list(pieces), 2, np.float64)).normalized()
    if len(p) == 0:
        return [Members() for _ in range(n_parts)]
    nodes = np.unique(np.concatenate([p.left, p.right]))
    local = Pairs(np.searchsorted(nodes, p.left).astype(np.int64), np.searchsorted(nodes, p.right).astype(np.int64), p.score)
    raw = cluster_group(call, nodes, local)
    _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
    smallest = np.full(len(first), len(nodes), dtype=np.int64)
    np.minimum.at(smallest, inverse.reshape(-1), np.arange(len(nodes), dtype=np.int64))
    root = nodes[smallest[inverse.reshape(-1)]]
    moved = root != nodes
    member, mroot = nodes[moved], root[moved]
    at_member = split_by(owner_of(offsets, member), n_parts, member, mroot)
    at_root = split_by(owner_of(offsets, mroot), n_parts, member, mroot)
    return [Members(a[0], a[1], *_by_root(r[0], r[1])) for a, r in zip(at_member, at_root)]


def _by_root(member: Int64Array, root: Int64Array) -> tuple[Int64Array, Int64Array]:
    order = np.lexsort((member, root))
    return member[order], root[order]


def task_merge_members(*pieces: Members) -> Members:
    """One group's :class:`Members` from the pieces the groups sent it."""
    nonroot = np.concatenate([_empty()] + [p.nonroot for p in pieces])
    nonroot_root = np.concatenate([_empty()] + [p.nonroot_root for p in pieces])
    order = np.argsort(nonroot, kind="stable")
    member, root = _by_root(np.concatenate([_empty()] + [p.member for p in pieces]), np.concatenate([_empty()] + [p.root for p in pieces]))
    return Members(nonroot[order], nonroot_root[order], member, root)


def task_part_members(members: Members, offsets: Int64Array, j: int) -> Members:
    """Partition ``j``'s share of its group's :class:`Members`: its non-roots, the members of its roots."""
    a, b = np.searchsorted(members.nonroot, offsets[j : j + 2])
    c, d = np.searchsorted(members.root, offsets[j : j + 2])
    return Members(members.nonroot[a:b], members.nonroot_root[a:b], members.member[c:d], members.root[c:d])


# ------------------------------------------------------------------ (c) canonical ids: tasks


def root_count(members: Members, offsets: Int64Array, j: int) -> int:
    """The number of roots (clusters) of partition ``j``."""
    return int(offsets[j + 1] - offsets[j]) - len(members.nonroot)


def root_ids(members: Members, offsets: Int64Array, j: int, base: int, nodes: Int64Array) -> Int64Array:
    """The cluster id of each of ``nodes``, roots of partition ``j``: ``base`` + their rank among its roots."""
    ids: Int64Array = base + (nodes - offsets[j]) - np.searchsorted(members.nonroot, nodes).astype(np.int64)
    return ids


def task_push(members: Members, offsets: Int64Array, j: int, base: int) -> list[tuple[npt.NDArray[Any], ...]]:
    """The id of every member of the clusters rooted in partition ``j``, at the member's owner."""
    ids = root_ids(members, offsets, j, base, members.root)
    return split_by(owner_of(offsets, members.member), len(offsets) - 1, members.member, ids)


def task_labels(members: Members, offsets: Int64Array, j: int, base: int, *pieces: tuple[npt.NDArray[Any], ...]) -> Int64Array:
    """The cluster id of every record of partition ``j``."""
    nodes = np.arange(offsets[j], offsets[j + 1], dtype=np.int64)
    labels = root_ids(members, offsets, j, base, nodes)
    labels[concat(list(pieces), 0) - offsets[j]] = concat(list(pieces), 1)
    return labels


def task_sizes(members: Members, offsets: Int64Array, j: int) -> Int64Array:
    """The size of every cluster rooted in partition ``j`` (ids ``base[j] ..``, in order)."""
    count = root_count(members, offsets, j)
    rank = root_ids(members, offsets, j, 0, members.root)
    sizes: Int64Array = 1 + np.bincount(rank, minlength=count).astype(np.int64)
    return sizes


# ------------------------------------------------------------------ the client side


@dataclass
class ClusterLabels:
    """The clusters of a run on the workers: per input partition a future of the cluster id of each of its
    records (canonical: ``0 .. count-1`` in order of each cluster's first record), and small numbers."""

    labels: list[Any]
    #: the number of clusters
    count: int
    #: ``base[j]``: the first id of the clusters rooted in partition ``j`` (``P + 1`` numbers, ``base[P] == count``)
    base: Int64Array
    #: per partition, a future of its :class:`Members` (the members of the clusters it roots)
    members: list[Any]
    offsets: Int64Array
    #: alternating-star rounds the connected components took (0: one group, the union-find kernel in one task)
    rounds: int


class Submitter:
    """Submits tasks (not pure: each call is its own task; retried when a worker dies) and picks pieces."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __call__(self, fn: Callable[..., Any], *args: Any, retries: int = 3) -> Any:
        return self.client.submit(fn, *args, pure=False, retries=retries)

    def column(self, futures: list[Any], j: int, pick: Callable[..., Any] = _pick) -> list[Any]:
        """Piece ``j`` of every future's result (a shuffle's input to part ``j``)."""
        return [self(pick, f, j) for f in futures]


def components(submit: Submitter, edge_parts: list[Any], off: Any, n_parts: int) -> tuple[list[Any], int]:
    """(a): per group of partitions (``off``: their offsets, ``n_parts`` of them) a future of its
    :class:`Members` (the component stars), and the rounds taken (0: one group, one task)."""
    if n_parts == 1:
        return [submit(task_whole_components, *edge_parts)], 0
    entries = [submit(task_start, e, off) for e in edge_parts]
    for rounds in range(1, MAX_ROUNDS + 1):
        large = [submit(task_large_star, off, *submit.column(entries, j)) for j in range(n_parts)]
        unsettled = submit.client.gather([submit(_unsettled, f) for f in large])  # P ints
        if sum(unsettled) == 0:
            return [submit(_members, f) for f in large], rounds
        entries = [submit(task_small_star, off, *submit.column(large, j, _pick_large)) for j in range(n_parts)]
    raise ErError(f"connected components on the workers did not converge in {MAX_ROUNDS} rounds")


def communities(submit: Submitter, edge_parts: list[Any], members: list[Any], off: Any, call: ClusterCall, n_parts: int) -> list[Any]:
    """(b): per group of partitions a future of its :class:`Members` under the job's clusterer."""
    call_f = submit(_same, call)
    by_left = [submit(task_by_left, e, off) for e in edge_parts]
    by_root = [submit(task_by_root, members[j], off, *submit.column(by_left, j)) for j in range(n_parts)]
    grouped = [submit(task_communities, call_f, off, *submit.column(by_root, j)) for j in range(n_parts)]
    return [submit(task_merge_members, *submit.column(grouped, j)) for j in range(n_parts)]


def _same(x: Any) -> Any:
    return x


#: verified edges per group of partitions in (a) and (b): every shuffle there has (groups)² pieces, each
#: one small task, so the partitions are taken together in groups of about this many edges (in all, not
#: per partition: a graph of 1M edges is clustered by one task per step)
EDGES_PER_GROUP = 2_000_000


def group_offsets(offsets: Int64Array, total_edges: int, edges_per_group: int) -> tuple[Int64Array, Int64Array]:
    """The groups of consecutive partitions for (a) and (b): ``(first partition of each group and P, their offsets)``."""
    n_parts = len(offsets) - 1
    n_groups = min(n_parts, max(1, -(-total_edges // max(1, edges_per_group))))
    first = np.unique(np.round(np.linspace(0, n_parts, n_groups + 1)).astype(np.int64))
    return first, offsets[first]


def _edge_count(edges: tuple[Int64Array, Int64Array, Float64Array]) -> int:
    return len(edges[0])


def plain_components(clusterer: Any) -> bool:
    """Whether the clusters are the connected components themselves (``connected_components`` without ``split``)."""
    return getattr(clusterer, "name", None) == "connected_components" and getattr(getattr(clusterer, "params", None), "split", None) is None


def cluster_labels(
    client: Any,
    edge_parts: list[Any],
    offsets: Int64Array,
    clusterer: Any,
    *,
    link: bool,
    source_of_partition: list[int] | Int64Array,
    edges_per_group: int = EDGES_PER_GROUP,
) -> ClusterLabels:
    """The job's clusters on the workers, with the canonical ids the local executor gives
    (``stages.cluster``): the module docstring tells the algorithm and its cost. ``edges_per_group``:
    :data:`EDGES_PER_GROUP`."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n_parts = len(offsets) - 1
    src = np.asarray(source_of_partition, dtype=np.int64).reshape(-1)
    if n_parts < 1 or len(src) != n_parts:
        raise ValueError(f"cluster_labels: {n_parts} partitions (offsets) and {len(src)} sources of partitions")
    submit = Submitter(client)
    total = sum(client.gather([submit(_edge_count, e) for e in edge_parts]))  # one int per edge part
    first, goffsets = group_offsets(offsets, int(total), edges_per_group)
    n_groups = len(first) - 1
    goff = submit(_same, goffsets)
    grouped, rounds = components(submit, edge_parts, goff, n_groups)
    if not plain_components(clusterer):
        present = np.unique(src[np.diff(offsets) > 0])
        call = ClusterCall(clusterer, link, offsets, src, present)
        grouped = communities(submit, edge_parts, grouped, goff, call, n_groups)
    off = submit(_same, offsets)
    group_of = np.searchsorted(first, np.arange(n_parts), side="right") - 1
    members = [submit(task_part_members, grouped[group_of[j]], off, j) for j in range(n_parts)]
    counts = client.gather([submit(root_count, members[j], off, j) for j in range(n_parts)])  # P ints
    base = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    pushed = [submit(task_push, members[j], off, j, int(base[j])) for j in range(n_parts)]
    labels = [submit(task_labels, members[j], off, j, int(base[j]), *submit.column(pushed, j)) for j in range(n_parts)]
    return ClusterLabels(labels, int(base[-1]), base, members, offsets, rounds)


# ------------------------------------------------------------------ sizes, summary, members


#: the largest clusters the summary lists by default (the report's ``largest_clusters`` top)
TOP = 20


@dataclass
class SizeSummary:
    """What the report needs of the cluster sizes, merged from the partitions' (all small)."""

    #: :func:`~er_framework.engine.stages.clustering.cluster_stats`
    stats: dict[str, int]
    #: ``(cluster id, size)`` of the largest clusters of 2 or more records, size descending, ties by id
    largest: list[tuple[int, int]]
    #: ``{size: number of clusters}``
    histogram: dict[int, int]


@dataclass
class ClusterSizes:
    """Per partition a future of the sizes of the clusters it roots (ids ``base[j] .. base[j+1]-1``), and the summary."""

    sizes: list[Any]
    base: Int64Array
    summary: SizeSummary


def task_size_summary(sizes: Int64Array, base: int, top: int) -> tuple[Int64Array, list[tuple[int, int]], Int64Array, Int64Array]:
    """One partition's share of the summary: the sums of ``cluster_stats`` (and the largest size), its
    ``top`` largest clusters, and its size histogram ``(sizes, counts)``."""
    multi = sizes[sizes > 1]
    largest = int(sizes.max()) if len(sizes) else 0
    pairs = int((sizes * (sizes - 1) // 2).sum())
    stats = np.array([len(sizes), int((sizes == 1).sum()), largest, int(multi.sum()), pairs], dtype=np.int64)
    chosen = [(base + c, int(sizes[c])) for c in largest_clusters(sizes, top)]
    values, counts = np.unique(sizes, return_counts=True)
    return stats, chosen, values.astype(np.int64), counts.astype(np.int64)


def merge_summaries(parts: list[tuple[Int64Array, list[tuple[int, int]], Int64Array, Int64Array]], top: int) -> SizeSummary:
    """The partitions' summaries merged (sums; the largest size the maximum; the top ``top`` of the tops)."""
    total = np.sum([p[0] for p in parts], axis=0) if parts else np.zeros(5, np.int64)
    largest = max((int(p[0][2]) for p in parts), default=0)
    stats = {
        "count": int(total[0]),
        "singletons": int(total[1]),
        "largest": largest,
        "records_in_multi_record_clusters": int(total[3]),
        "pairs": int(total[4]),
    }
    tops = sorted((c for p in parts for c in p[1]), key=lambda c: (-c[1], c[0]))[:top]
    histogram: dict[int, int] = {}
    for _, _, values, counts in parts:
        for v, c in zip(values.tolist(), counts.tolist()):
            histogram[v] = histogram.get(v, 0) + c
    return SizeSummary(stats, [(int(c), int(s)) for c, s in tops], dict(sorted(histogram.items())))


def cluster_sizes(client: Any, labels: ClusterLabels, top: int = TOP) -> ClusterSizes:
    """The cluster sizes, summed on the workers where the roots are, and their summary (``O(P · top)``
    numbers and the histogram come to the client)."""
    submit = Submitter(client)
    off = submit(_same, labels.offsets)
    n_parts = len(labels.offsets) - 1
    sizes = [submit(task_sizes, labels.members[j], off, j) for j in range(n_parts)]
    parts = client.gather([submit(task_size_summary, sizes[j], int(labels.base[j]), top) for j in range(n_parts)])
    return ClusterSizes(sizes, labels.base, merge_summaries(list(parts), top))


def task_members_of(labels: Int64Array, offset: int, wanted: Int64Array) -> tuple[Int64Array, Int64Array]:
    """``(cluster id, global index)`` of the records of one partition in the ``wanted`` clusters."""
    rows = np.flatnonzero(np.isin(labels, wanted))
    return labels[rows], rows.astype(np.int64) + offset


def members_of(client: Any, labels: ClusterLabels | list[Any], offsets: Int64Array, cluster_ids: list[int]) -> dict[int, list[int]]:
    """The global indices (ascending) of the records of each of ``cluster_ids`` (a few chosen clusters:
    what comes back is their members)."""
    futures = labels.labels if isinstance(labels, ClusterLabels) else labels
    wanted = np.unique(np.asarray(cluster_ids, dtype=np.int64))
    submit = Submitter(client)
    got = client.gather([submit(task_members_of, f, int(offsets[j]), wanted) for j, f in enumerate(futures)])
    out: dict[int, list[int]] = {int(c): [] for c in cluster_ids}
    for ids, rows in got:
        for c, r in zip(ids.tolist(), rows.tolist()):
            out[c].append(r)
    return out


__all__ = [
    "MAX_ROUNDS",
    "TOP",
    "EDGES_PER_GROUP",
    "ClusterCall",
    "ClusterLabels",
    "ClusterSizes",
    "LargeStar",
    "Members",
    "SizeSummary",
    "Submitter",
    "both_ways",
    "cluster_group",
    "cluster_labels",
    "cluster_sizes",
    "communities",
    "components",
    "concat",
    "group_offsets",
    "local_forest",
    "members_of",
    "merge_summaries",
    "owner_of",
    "plain_components",
    "root_count",
    "root_ids",
    "roots_of",
    "split_by",
    "task_by_left",
    "task_by_root",
    "task_communities",
    "task_labels",
    "task_large_star",
    "task_members_of",
    "task_merge_members",
    "task_part_members",
    "task_push",
    "task_size_summary",
    "task_sizes",
    "task_small_star",
    "task_start",
    "task_whole_components",
    "unique_edges",
]
