"""Clusters that look like a chain: a low-score bridge between dense parts (numpy + stdlib).

Similarity is not transitive: near-duplicates that share boilerplate chain
(A~B, B~C, …), so one cluster can hold two real entities joined by a few
weak pairs. :func:`chain_flags` judges every cluster on its own verified
pairs and flags it when it can be cut in two **sides** such that

1. each side holds at least ``min_side`` records (>= 2: a side is a part
   with pairs of its own, never one record cut off);
2. each side is **dense**: its internal pairs / ``a (a - 1) / 2`` >=
   ``min_side_density`` (and it has at least one pair);
3. the pairs **across** are few: ``cut_edges / (a * b) <= max_cut_density``;
4. the pairs across are **weak**: the strongest of them scores more than
   ``min_gap`` below the lower of the two sides' median internal scores
   (default 0.02: scores closer than that count as the same);
5. each side **holds together on its own** (bottleneck convexity): for any
   two records of a side, the strongest chain of pairs between them that
   stays inside the side is as strong as the strongest chain through the
   whole cluster (strength of a chain = its weakest pair). A side is never
   a loose set that only the other side connects.

Of the cuts that qualify, the one with the largest gap (``min(side
medians) - cut_max_score``) is reported; ties: the weaker bridge, then the
bridge's record indices.

**How the cut is found.** Condition 5 says the sides are subtrees of a
maximum spanning tree (by score): for distinct scores the bipartitions
satisfying it are exactly the ``k - 1`` cuts that remove one tree edge, and
the strongest pair across such a cut is that tree edge (cycle property).
So the kernel builds one maximum spanning forest of all clusters at once
(Borůvka, vectorized: O(m log k)), roots each cluster's tree (O(k)), counts
for every tree edge the records on each side and the pairs inside and
across (subtree sums of degrees and of pairs per lowest common ancestor;
ancestors by binary lifting, O(m log k)), filters by conditions 1–3, and
computes the side medians (condition 4, O(m) each) for at most
``max_candidates`` surviving cuts, weakest tree edge first. With tied scores
the tree is the one of Kruskal's order (score descending, then ``(left,
right)``), and only its cuts are tried (every flag still satisfies 1–5).
:func:`chain_flags_reference` enumerates every bipartition (small clusters
only) and is the test oracle.

**What is not flagged.** A dense cluster (a clique, whatever its scores):
every cut has density 1. A star: a side without the centre has no pairs.
A path A~B~C~D of near-duplicates of one entity with similar scores: its
two-record sides are dense (one pair is a clique of two), so density alone
cannot tell it from two pairs joined by one pair — the score condition
does: the pair across is as strong as the pairs inside (gap <= ``min_gap``).
The other side of that coin: two pairs A~B, C~D joined by one clearly
weaker pair B~C *are* flagged — that is the smallest chain of two entities.
Longer paths also fail density (a side of ``a`` records on a path has
density ``2 / a``).

Clusters with fewer than ``min_size`` records are not checked; clusters with
more than ``max_cluster`` records are skipped and counted; a cluster whose
pairs do not connect it (possible after community detection) is counted as
``disconnected`` and not judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ChainFlag",
    "chain_flags",
    "chain_flags_reference",
    "max_spanning_forest",
    "max_spanning_forest_reference",
]

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class ChainFlag:
    """One cluster that looks like a chain, and its weakest qualifying cut."""

    cluster: int  #: the cluster label (as given)
    size: int  #: records in the cluster
    sides: tuple[int, int]  #: records on each side (side 0 holds ``bridge[0]``)
    cut_edges: int  #: verified pairs across the cut
    cut_max_score: float  #: the strongest pair across
    cut_density: float  #: ``cut_edges / (a * b)``
    side_density: tuple[float, float]  #: internal pairs / ``a (a - 1) / 2`` per side
    side_median_score: tuple[float, float]  #: median score of each side's internal pairs
    bridge: tuple[int, int]  #: record indices of the strongest pair across (side 0, side 1)
    gap: float = 0.0  #: ``min(side_median_score) - cut_max_score`` (the severity)
    #: sorted record indices of each side (not in :meth:`to_json`: a report prints ids from them)
    members: tuple[Int64Array, Int64Array] = field(
        default_factory=lambda: (np.zeros(0, np.int64), np.zeros(0, np.int64)), repr=False, compare=False
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": int(self.cluster),
            "size": int(self.size),
            "sides": [int(self.sides[0]), int(self.sides[1])],
            "cut_edges": int(self.cut_edges),
            "cut_max_score": float(self.cut_max_score),
            "cut_density": float(self.cut_density),
            "side_density": [float(self.side_density[0]), float(self.side_density[1])],
            "side_median_score": [float(self.side_median_score[0]), float(self.side_median_score[1])],
            "bridge": [int(self.bridge[0]), int(self.bridge[1])],
            "gap": float(self.gap),
        }


# ---------------------------------------------------------------- input


def _check(
    labels: npt.ArrayLike, left: npt.ArrayLike, right: npt.ArrayLike, score: npt.ArrayLike, min_side: int
) -> tuple[Int64Array, Int64Array, Int64Array, Float64Array]:
    lab = np.asarray(labels, dtype=np.int64).ravel()
    lo = np.asarray(left, dtype=np.int64).ravel()
    hi = np.asarray(right, dtype=np.int64).ravel()
    sc = np.asarray(score, dtype=np.float64).ravel()
    if not (len(lo) == len(hi) == len(sc)):
        raise ValueError(f"left, right and score differ in length ({len(lo)}, {len(hi)}, {len(sc)})")
    n = len(lab)
    if len(lo) and (min(int(lo.min()), int(hi.min())) < 0 or max(int(lo.max()), int(hi.max())) >= n):
        raise ValueError(f"pair record indices must lie in [0, {n}) (one label per record)")
    if len(sc) and not np.isfinite(sc).all():
        raise ValueError("scores must be finite")
    if min_side < 2:
        raise ValueError(f"min_side must be >= 2 (got {min_side}): a side is a part with pairs of its own")
    return lab, lo, hi, sc


def _intra_pairs(lab: Int64Array, lo: Int64Array, hi: Int64Array, sc: Float64Array) -> tuple[Int64Array, Int64Array, Float64Array]:
    """Pairs inside a cluster: ``left < right``, unique (highest score kept), sorted by ``(left, right)``."""
    a = np.minimum(lo, hi)
    b = np.maximum(lo, hi)
    keep = (a != b) & (lab[a] == lab[b])
    a, b, s = a[keep], b[keep], sc[keep]
    order = np.lexsort((-s, b, a))
    a, b, s = a[order], b[order], s[order]
    first = np.ones(len(a), dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[first], b[first], s[first]


# ---------------------------------------------------------------- spanning forest


def max_spanning_forest(n: int, left: Int64Array, right: Int64Array, score: Float64Array) -> BoolArray:
    """Mask of the pairs in the maximum spanning forest of the graph on ``n`` nodes.

    Borůvka's algorithm, vectorized: every round each component takes its
    best incident pair (score descending, then ``(left, right)`` ascending: a
    total order, so the result is the unique forest Kruskal builds in that
    order) and components merge by pointer jumping; at most ``log2 n``
    rounds of O(m) numpy work. Pairs must be unique with ``left != right``.
    """
    m = len(left)
    in_tree = np.zeros(m, dtype=bool)
    if m == 0:
        return in_tree
    rank = np.empty(m, dtype=np.int64)
    rank[np.lexsort((right, left, -score))] = np.arange(m, dtype=np.int64)
    comp = np.arange(n, dtype=np.int64)
    alive = np.arange(m, dtype=np.int64)
    big = np.int64(m)
    while True:
        cu, cv = comp[left[alive]], comp[right[alive]]
        cross = cu != cv
        alive, cu, cv = alive[cross], cu[cross], cv[cross]
        if len(alive) == 0:
            return in_tree
        best = np.full(n, big, dtype=np.int64)
        r = rank[alive]
        np.minimum.at(best, cu, r)
        np.minimum.at(best, cv, r)
        chooser = np.flatnonzero(best < big)  # component roots with a pair leaving them
        by_rank = np.empty(m, dtype=np.int64)
        by_rank[r] = alive
        chosen = by_rank[best[chooser]]
        in_tree[chosen] = True
        a, b = comp[left[chosen]], comp[right[chosen]]
        other = np.where(a == chooser, b, a)
        parent = np.arange(n, dtype=np.int64)
        parent[chooser] = other
        mutual = parent[other] == chooser  # both chose the same pair: the smaller root stays a root
        parent[chooser[mutual & (chooser < other)]] = chooser[mutual & (chooser < other)]
        while True:
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt
        comp = parent[comp]


def max_spanning_forest_reference(n: int, left: Int64Array, right: Int64Array, score: Float64Array) -> BoolArray:
    """Kruskal with a union-find in plain Python, pairs in the same total order (test oracle)."""
    order = sorted(range(len(left)), key=lambda e: (-float(score[e]), int(left[e]), int(right[e])))
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    in_tree = np.zeros(len(left), dtype=bool)
    for e in order:
        a, b = find(int(left[e])), find(int(right[e]))
        if a != b:
            parent[max(a, b)] = min(a, b)
            in_tree[e] = True
    return in_tree


# ---------------------------------------------------------------- the fast path


@dataclass
class _Cut:
    gap: float
    cut_max: float
    bridge: tuple[int, int]
    side0: Int64Array  # sorted record indices of the side holding bridge[0]
    side1: Int64Array
    cut_edges: int
    density: tuple[float, float]
    median: tuple[float, float]

    def key(self) -> tuple[float, float, int, int]:
        return (-self.gap, self.cut_max, self.bridge[0], self.bridge[1])


def _judge_cluster(
    nodes: Int64Array,
    left: Int64Array,
    right: Int64Array,
    score: Float64Array,
    tree: BoolArray,
    min_side: int,
    min_side_density: float,
    max_cut_density: float,
    min_gap: float,
    max_candidates: int,
) -> tuple[_Cut | None, int]:
    """The best qualifying cut of one connected cluster (``nodes`` sorted, its pairs and tree mask)."""
    k = len(nodes)
    m = len(left)
    li = np.searchsorted(nodes, left)
    ri = np.searchsorted(nodes, right)
    # root the tree at local node 0: parent, preorder, depth (iterative DFS, O(k))
    tl, tr = li[tree].tolist(), ri[tree].tolist()
    adj: list[list[int]] = [[] for _ in range(k)]
    for x, y in zip(tl, tr):
        adj[x].append(y)
        adj[y].append(x)
    parent = [0] * k
    depth = [0] * k
    order: list[int] = []
    seen = [False] * k
    seen[0] = True
    stack = [0]
    while stack:
        x = stack.pop()
        order.append(x)
        for y in adj[x]:
            if not seen[y]:
                seen[y] = True
                parent[y] = x
                depth[y] = depth[x] + 1
                stack.append(y)
    par = np.asarray(parent, dtype=np.int64)
    dep = np.asarray(depth, dtype=np.int64)
    pre = np.asarray(order, dtype=np.int64)
    tin = np.empty(k, dtype=np.int64)
    tin[pre] = np.arange(k, dtype=np.int64)
    # subtree sizes: children before parents = reverse preorder
    size = np.ones(k, dtype=np.int64)
    for x in reversed(order[1:]):
        size[parent[x]] += size[x]
    # lowest common ancestor of every pair's ends (binary lifting)
    ups = [par]
    while (1 << len(ups)) < k:
        ups.append(ups[-1][ups[-1]])
    u, v = li.copy(), ri.copy()
    swap = dep[u] < dep[v]
    u[swap], v[swap] = v[swap], u[swap]
    diff = dep[u] - dep[v]
    for j, up in enumerate(ups):
        step = ((diff >> j) & 1).astype(bool)
        u[step] = up[u[step]]
    for up in reversed(ups):
        move = up[u] != up[v]
        u[move] = up[u[move]]
        v[move] = up[v[move]]
    lca = np.where(u == v, u, par[u])
    # per subtree (= side A of the tree edge above its root): pairs inside, degree sum
    deg = np.bincount(li, minlength=k) + np.bincount(ri, minlength=k)
    at_lca = np.bincount(lca, minlength=k)
    pre_deg = np.concatenate([[0], np.cumsum(deg[pre])])
    pre_lca = np.concatenate([[0], np.cumsum(at_lca[pre])])
    end = tin + size
    inside_a = pre_lca[end] - pre_lca[tin]
    cut = (pre_deg[end] - pre_deg[tin]) - 2 * inside_a
    inside_b = m - inside_a - cut
    a = size
    b = k - size
    with np.errstate(divide="ignore", invalid="ignore"):
        dens_a = inside_a / (a * (a - 1) / 2)
        dens_b = inside_b / (b * (b - 1) / 2)
        cut_dens = cut / (a * b)
    ok = (np.arange(k) != 0) & (a >= min_side) & (b >= min_side)
    ok &= (dens_a >= min_side_density) & (dens_b >= min_side_density) & (cut_dens <= max_cut_density)
    cand = np.flatnonzero(ok)  # child end (local) of each surviving tree edge
    if len(cand) == 0:
        return None, 0
    # the tree edge above each candidate child: its score and pair
    t_idx = np.flatnonzero(tree)
    child = np.where(dep[li[t_idx]] > dep[ri[t_idx]], li[t_idx], ri[t_idx])
    edge_of = np.empty(k, dtype=np.int64)
    edge_of[child] = t_idx
    ce = edge_of[cand]
    pick = np.lexsort((right[ce], left[ce], score[ce]))[:max_candidates]  # weakest tree edges first
    best: _Cut | None = None
    tin_l, tin_r = tin[li], tin[ri]
    for c, e in zip(cand[pick].tolist(), ce[pick].tolist()):
        lo_t, hi_t = tin[c], tin[c] + size[c]
        in_l = (tin_l >= lo_t) & (tin_l < hi_t)
        in_r = (tin_r >= lo_t) & (tin_r < hi_t)
        inner_a, inner_b = score[in_l & in_r], score[~in_l & ~in_r]
        if len(inner_a) == 0 or len(inner_b) == 0:  # only with min_side_density 0: a side with no pairs
            continue
        med_a, med_b = float(np.median(inner_a)), float(np.median(inner_b))
        cut_max = float(score[e])
        gap = min(med_a, med_b) - cut_max
        if not gap > min_gap:
            continue
        in_sub = (tin >= lo_t) & (tin < hi_t)
        sub, rest = nodes[in_sub], nodes[~in_sub]
        dens = (float(dens_a[c]), float(dens_b[c]))
        meds = (med_a, med_b)
        bl, br = int(left[e]), int(right[e])
        if not in_sub[li[e]]:  # side 0 holds the bridge's left record
            sub, rest = rest, sub
            dens, meds = (dens[1], dens[0]), (meds[1], meds[0])
        found = _Cut(gap, cut_max, (bl, br), sub, rest, int(cut[c]), dens, meds)
        if best is None or found.key() < best.key():
            best = found
    return best, len(pick)


def _cut_possible(k: Int64Array, m: Int64Array, min_side: int, max_cut_density: float) -> BoolArray:
    """Per cluster (``k`` records, ``m`` pairs): can any cut with sides >= ``min_side`` be sparse enough?

    A cut into ``a + b = k`` has ``m <= C(a, 2) + C(b, 2) + max_cut_density * a * b``
    pairs at most; that bound is convex in ``a`` for ``max_cut_density <= 1``
    (largest at ``a = min_side``) and concave beyond (largest at ``a = k / 2``).
    Clusters with more pairs (near-cliques: most clusters of a dedup job)
    are judged without building their tree.
    """
    kf = k.astype(np.float64)

    def most(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        b = kf - a
        out: npt.NDArray[np.float64] = a * (a - 1) / 2 + b * (b - 1) / 2 + max_cut_density * a * b
        return out

    bound = np.maximum(most(np.full(len(kf), float(min_side))), np.maximum(most(np.floor(kf / 2)), most(np.ceil(kf / 2))))
    ok: BoolArray = (k >= 2 * min_side) & (m <= bound * (1 + 1e-12) + 1e-9)
    return ok


def _flag(label: int, k: int, cut: _Cut) -> ChainFlag:
    a, b = len(cut.side0), len(cut.side1)
    return ChainFlag(
        cluster=label,
        size=k,
        sides=(a, b),
        cut_edges=cut.cut_edges,
        cut_max_score=cut.cut_max,
        cut_density=cut.cut_edges / (a * b),
        side_density=cut.density,
        side_median_score=cut.median,
        bridge=cut.bridge,
        gap=cut.gap,
        members=(cut.side0, cut.side1),
    )


def _severity(f: ChainFlag) -> tuple[float, int, int]:
    return (-f.gap, -f.size, f.cluster)


def chain_flags(
    labels: npt.ArrayLike,
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    min_size: int = 4,
    min_side: int = 2,
    max_cut_density: float = 0.25,
    min_side_density: float = 0.5,
    min_gap: float = 0.02,
    max_cluster: int = 5000,
    max_candidates: int = 64,
) -> tuple[list[ChainFlag], dict[str, Any]]:
    """Clusters whose pairs look like a chain: a low-score bridge between dense parts.

    ``labels``: one cluster label per record (any integers); ``left``,
    ``right``, ``score``: the verified pairs that were clustered (record
    indices; pairs across clusters, self-pairs and duplicates are ignored,
    of duplicates the highest score counts). See the module docstring for
    the criterion. Returns the flags, most severe first (largest gap, then
    larger cluster, then label), and counts: ``clusters`` (all labels),
    ``checked``, ``too_small`` (< ``min_size``), ``skipped_too_large`` (>
    ``max_cluster``), ``disconnected``, ``flagged``, ``too_dense`` (checked
    clusters with too many pairs for any cut to be sparse: judged from their
    pair count alone), ``cuts_scored`` (cuts whose medians were computed). The result does not depend on the order
    of the pairs or on the label values.
    """
    lab, lo, hi, sc = _check(labels, left, right, score, min_side)
    uniq, inverse, counts = np.unique(lab, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    checked = (counts >= min_size) & (counts <= max_cluster)
    stats: dict[str, Any] = {
        "clusters": int(len(uniq)),
        "checked": 0,
        "too_small": int((counts < min_size).sum()),
        "skipped_too_large": int((counts > max_cluster).sum()),
        "disconnected": 0,
        "flagged": 0,
        "too_dense": 0,
        "cuts_scored": 0,
    }
    flags: list[ChainFlag] = []
    if not checked.any():
        return flags, stats
    a, b, s = _intra_pairs(lab, lo, hi, sc)
    keep = checked[inverse[a]]
    a, b, s = a[keep], b[keep], s[keep]
    tree = max_spanning_forest(len(lab), a, b, s)
    # records and pairs of the checked clusters, grouped by cluster (ascending indices within)
    cl_ids = np.flatnonzero(checked)
    rec = np.flatnonzero(checked[inverse])
    rec = rec[np.argsort(inverse[rec], kind="stable")]
    rec_start = np.concatenate([[0], np.cumsum(counts[cl_ids])])
    e_cl = inverse[a]
    e_order = np.argsort(e_cl, kind="stable")
    e_count = np.bincount(e_cl, minlength=len(uniq))[cl_ids]
    t_count = np.bincount(e_cl[tree], minlength=len(uniq))[cl_ids]
    e_start = np.concatenate([[0], np.cumsum(e_count)])
    possible = _cut_possible(counts[cl_ids], e_count, min_side, max_cut_density)
    for i, c in enumerate(cl_ids.tolist()):
        k = int(counts[c])
        if int(t_count[i]) != k - 1:
            stats["disconnected"] += 1
            continue
        stats["checked"] += 1
        if not possible[i]:
            stats["too_dense"] += 1
            continue
        e = e_order[e_start[i] : e_start[i + 1]]
        found, scored = _judge_cluster(
            rec[rec_start[i] : rec_start[i + 1]],
            a[e],
            b[e],
            s[e],
            tree[e],
            min_side,
            min_side_density,
            max_cut_density,
            min_gap,
            max_candidates,
        )
        stats["cuts_scored"] += scored
        if found is not None:
            flags.append(_flag(int(uniq[c]), k, found))
    flags.sort(key=_severity)
    stats["flagged"] = len(flags)
    return flags, stats


# ---------------------------------------------------------------- reference


def _maximin(k: int, pairs: dict[tuple[int, int], float], members: list[int]) -> dict[tuple[int, int], float]:
    """Strength of the strongest chain (weakest pair on it, maximized) between members, within them."""
    inf = float("inf")
    best = {(x, y): (inf if x == y else -inf) for x in members for y in members}
    for (x, y), w in pairs.items():
        if (x, y) in best:
            best[(x, y)] = best[(y, x)] = max(best[(x, y)], w)
    for z in members:
        for x in members:
            for y in members:
                via = min(best[(x, z)], best[(z, y)])
                if via > best[(x, y)]:
                    best[(x, y)] = via
    return best


def chain_flags_reference(
    labels: npt.ArrayLike,
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    min_size: int = 4,
    min_side: int = 2,
    max_cut_density: float = 0.25,
    min_side_density: float = 0.5,
    min_gap: float = 0.02,
    max_cluster: int = 5000,
    max_records: int = 12,
) -> tuple[list[ChainFlag], dict[str, Any]]:
    """Every bipartition of every cluster against conditions 1–5, in plain Python (test oracle).

    Clusters over ``max_records`` records raise ``ValueError`` (2^k cuts).
    Same result as :func:`chain_flags` when the scores inside each cluster are
    distinct (with ties :func:`chain_flags` tries the cuts of one spanning
    tree only, so it flags a subset); ``too_dense`` and ``cuts_scored`` are
    not counted.
    """
    lab, lo, hi, sc = _check(labels, left, right, score, min_side)
    best_pair: dict[tuple[int, int], float] = {}
    for x, y, w in zip(lo.tolist(), hi.tolist(), sc.tolist()):
        p, q = min(x, y), max(x, y)
        if p != q and lab[p] == lab[q]:
            best_pair[(p, q)] = max(best_pair.get((p, q), -float("inf")), w)
    members: dict[int, list[int]] = {}
    for r, c in enumerate(lab.tolist()):
        members.setdefault(c, []).append(r)
    stats: dict[str, Any] = {
        "clusters": len(members),
        "checked": 0,
        "too_small": 0,
        "skipped_too_large": 0,
        "disconnected": 0,
        "flagged": 0,
        "too_dense": 0,
        "cuts_scored": 0,
    }
    flags: list[ChainFlag] = []
    for c, recs in members.items():
        k = len(recs)
        if k < min_size:
            stats["too_small"] += 1
            continue
        if k > max_cluster:
            stats["skipped_too_large"] += 1
            continue
        if k > max_records:
            raise ValueError(f"cluster {c} has {k} records: the reference enumerates 2^k cuts (max_records={max_records})")
        pairs = {p: w for p, w in best_pair.items() if lab[p[0]] == c}
        whole = _maximin(k, pairs, recs)
        if any(whole[(recs[0], y)] == -float("inf") for y in recs):
            stats["disconnected"] += 1
            continue
        stats["checked"] += 1
        best: _Cut | None = None
        for mask in range(1, 1 << (k - 1)):  # recs[-1] always on side B: each bipartition once
            side_a = [r for j, r in enumerate(recs) if mask >> j & 1]
            set_a = set(side_a)
            side_b = [r for r in recs if r not in set_a]
            na, nb = len(side_a), len(side_b)
            if min(na, nb) < min_side:
                continue
            inner_a = [w for (x, y), w in pairs.items() if x in set_a and y in set_a]
            inner_b = [w for (x, y), w in pairs.items() if x not in set_a and y not in set_a]
            across = [((x, y), w) for (x, y), w in pairs.items() if (x in set_a) != (y in set_a)]
            dens_a = len(inner_a) / (na * (na - 1) / 2)
            dens_b = len(inner_b) / (nb * (nb - 1) / 2)
            if dens_a < min_side_density or dens_b < min_side_density or len(across) / (na * nb) > max_cut_density:
                continue
            if not inner_a or not inner_b:
                continue
            med_a, med_b = float(np.median(inner_a)), float(np.median(inner_b))
            (bx, by), cut_max = min(across, key=lambda t: (-t[1], t[0]))
            gap = min(med_a, med_b) - cut_max
            if not gap > min_gap:
                continue
            convex = True
            for side in (side_a, side_b):
                own = _maximin(len(side), {p: w for p, w in pairs.items() if p[0] in side and p[1] in side}, side)
                if any(own[(x, y)] < whole[(x, y)] for x in side for y in side):
                    convex = False
                    break
            if not convex:
                continue
            s0, s1 = (side_a, side_b) if bx in set_a else (side_b, side_a)
            m0, m1 = (med_a, med_b) if bx in set_a else (med_b, med_a)
            d0, d1 = (dens_a, dens_b) if bx in set_a else (dens_b, dens_a)
            found = _Cut(
                gap,
                cut_max,
                (bx, by),
                np.asarray(sorted(s0), dtype=np.int64),
                np.asarray(sorted(s1), dtype=np.int64),
                len(across),
                (d0, d1),
                (m0, m1),
            )
            if best is None or found.key() < best.key():
                best = found
        if best is not None:
            flags.append(_flag(int(c), k, best))
    flags.sort(key=_severity)
    stats["flagged"] = len(flags)
    return flags, stats
