"""The clusterers of er_framework.cluster: contract, determinism, hand examples, the split pass."""

from __future__ import annotations

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from pydantic import ValidationError

from er_framework.components import Context
from er_framework.data import Pairs
from er_framework.kernels.graph import canonical_labels
from er_plugins.clusterers import (
    BUILTIN_CLUSTERERS,
    ConnectedComponents,
    ConnectedComponentsParams,
    GreedyModularity,
    Louvain,
    LouvainParams,
    OneToOne,
    SplitParams,
    greedy_matching,
    source_matching,
)

CLUSTERERS = {c.name: c for c in BUILTIN_CLUSTERERS}

#: every clusterer, and the component-based ones also with each kind of split
VARIANTS = [(name, {}) for name in CLUSTERERS] + [
    (name, {"split": split})
    for name in ("connected_components", "label_propagation", "louvain", "greedy_modularity")
    for split in ({"bridge_max_score": 0.9}, {"min_density": 0.5, "min_side": 2}, {"min_cut": 1.0})
]


def make(name: str, params: dict | None = None, seed: int = 0):
    cls = CLUSTERERS[name]
    return cls(cls.Params(**(params or {})), Context(seed=seed))


def pairs_of(edges) -> Pairs:
    left, right, score = map(np.array, zip(*edges))
    return Pairs(left, right, score.astype(float))


def clique(nodes, score=0.95):
    return [(a, b, score) for a, b in itertools.combinations(nodes, 2)]


def groups(labels) -> set[frozenset[int]]:
    out: dict[int, set[int]] = {}
    for i, lab in enumerate(np.asarray(labels).tolist()):
        out.setdefault(lab, set()).add(i)
    return {frozenset(g) for g in out.values()}


def random_graph(seed: int, n: int = 120) -> Pairs:
    """Small dense groups, chained by weak bridges, plus random noise edges."""
    rng = np.random.default_rng(seed)
    edges = []
    start = 0
    while start < n - 20:
        size = int(rng.integers(3, 9))
        edges += [
            (a, b, float(rng.uniform(0.8, 1.0))) for a, b in itertools.combinations(range(start, start + size), 2) if rng.random() < 0.8
        ]
        if start and rng.random() < 0.5:
            edges.append((start - 1, start, float(rng.uniform(0.5, 0.7))))
        start += size
    for _ in range(10):
        a, b = rng.integers(0, n - 20, 2)
        if a != b:
            edges.append((int(a), int(b), float(rng.uniform(0.5, 0.7))))
    return pairs_of(edges).normalized()


# ---------------------------------------------------------------- contract


def test_every_builtin_is_registered_with_documented_params() -> None:
    assert set(CLUSTERERS) == {"connected_components", "label_propagation", "louvain", "greedy_modularity", "one_to_one"}
    for cls in BUILTIN_CLUSTERERS:
        assert cls.__doc__ and cls.summary
        for name, field in cls.Params.model_fields.items():
            assert field.description, f"{cls.name}.{name} has no description"
    for name, field in SplitParams.model_fields.items():
        assert field.description, f"split.{name} has no description"


@pytest.mark.parametrize("name,params", VARIANTS, ids=lambda v: str(v))
def test_one_label_per_record_and_singletons_alone(name: str, params: dict) -> None:
    pairs = random_graph(0)
    n = 130  # records 100..129 have no pairs
    labels = make(name, params).cluster(n, pairs)
    assert labels.shape == (n,) and labels.dtype == np.int64
    touched = np.zeros(n, dtype=bool)
    touched[pairs.left] = touched[pairs.right] = True
    for i in np.flatnonzero(~touched):
        assert (labels == labels[i]).sum() == 1
    # a cluster never spans two connected components
    cc = ConnectedComponents().cluster(n, pairs)
    for g in groups(labels):
        assert len({int(cc[i]) for i in g}) == 1


@pytest.mark.parametrize("name,params", VARIANTS, ids=lambda v: str(v))
def test_deterministic_and_invariant_to_pair_order(name: str, params: dict) -> None:
    pairs = random_graph(1)
    n = 125
    ref = canonical_labels(make(name, params, seed=7).cluster(n, pairs))
    again = canonical_labels(make(name, params, seed=7).cluster(n, pairs))
    assert np.array_equal(ref, again)
    rng = np.random.default_rng(3)
    for _ in range(3):
        perm = rng.permutation(len(pairs))
        swap = rng.random(len(pairs)) < 0.5
        left = np.where(swap, pairs.right, pairs.left)[perm]
        right = np.where(swap, pairs.left, pairs.right)[perm]
        shuffled = Pairs(left, right, pairs.score[perm])  # type: ignore[index]
        assert np.array_equal(canonical_labels(make(name, params, seed=7).cluster(n, shuffled)), ref)


@pytest.mark.parametrize("name", list(CLUSTERERS))
def test_empty_and_unscored_pairs(name: str) -> None:
    assert make(name).cluster(4, Pairs.empty(scored=True)).tolist() == [0, 1, 2, 3]
    assert make(name).cluster(0, Pairs.empty()).shape == (0,)
    unscored = Pairs(np.array([0, 1]), np.array([1, 2]))
    assert make(name).cluster(3, unscored).shape == (3,)


def test_small_components_never_touch_networkx(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a, **k):
        raise AssertionError("networkx used for a component of <= 2 records")

    import networkx  # the clusterers import it where they use it: the module itself is patched

    monkeypatch.setattr(networkx, "Graph", boom)
    pairs = pairs_of([(0, 1, 0.9), (2, 3, 0.8), (5, 9, 1.0)])
    for name, params in VARIANTS:
        labels = canonical_labels(make(name, params).cluster(10, pairs))
        assert labels.tolist() == [0, 0, 1, 1, 2, 3, 4, 5, 6, 3]


def test_params_validate_like_yaml() -> None:
    p = LouvainParams.model_validate({"resolution": 0.5, "split": {"bridge_max_score": 0.9, "min_side": 2}})
    assert p.split is not None and p.split.bridge_max_score == 0.9 and p.split.max_nodes == 200
    json.dumps(Louvain(p).describe())
    with pytest.raises(ValidationError):
        LouvainParams.model_validate({"split": {"bridge_max": 0.9}})  # unknown key
    with pytest.raises(ValidationError):
        ConnectedComponentsParams.model_validate({"split": {}})  # nothing to do
    with pytest.raises(ValidationError):
        SplitParams(min_density=1.5)


# ---------------------------------------------------------------- hand examples


def test_one_to_one_prefers_higher_scores() -> None:
    # 1-2 (0.95) is taken first; 0-1 and 2-3 are then blocked; 0-3 (0.5) is still free
    pairs = pairs_of([(0, 1, 0.9), (1, 2, 0.95), (2, 3, 0.9), (0, 3, 0.5), (4, 5, 0.2)])
    assert groups(OneToOne().cluster(7, pairs)) == {frozenset({1, 2}), frozenset({0, 3}), frozenset({4, 5}), frozenset({6})}
    assert greedy_matching(7, pairs).tolist() == [3, 2, 1, 0, 5, 4, -1]


def test_one_to_one_ties_break_by_left_then_right() -> None:
    pairs = pairs_of([(2, 0, 0.9), (0, 1, 0.9), (1, 2, 0.9)])
    assert groups(OneToOne().cluster(3, pairs)) == {frozenset({0, 1}), frozenset({2})}


def test_one_to_one_link_mode_matches_each_record_at_most_once() -> None:
    rng = np.random.default_rng(0)
    n_a, n_b = 40, 50  # source A: 0..39, source B: 40..89
    left = rng.integers(0, n_a, 600)
    right = rng.integers(n_a, n_a + n_b, 600)
    score = np.round(rng.uniform(0.5, 1.0, 600), 2)  # rounded: many ties
    pairs = Pairs(left, right, score).normalized()
    partner = greedy_matching(n_a + n_b, pairs)
    labels = OneToOne().cluster(n_a + n_b, pairs)
    sizes = np.bincount(canonical_labels(labels))
    assert sizes.max() == 2
    matched = np.flatnonzero(partner >= 0)
    assert np.array_equal(partner[partner[matched]], matched)  # symmetric: nobody matched twice
    assert np.all((matched < n_a) != (partner[matched] < n_a))  # always across the sources
    # greedy: every pair left out touches a record matched with at least as high a score
    best = np.full(n_a + n_b, -np.inf)
    key = {(min(a, b), max(a, b)): s for a, b, s in zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist())}
    for i in matched.tolist():
        best[i] = key[(min(i, partner[i]), max(i, partner[i]))]
    for a, b, s in zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()):
        if partner[a] != b:
            assert max(best[a], best[b]) >= s


def bridged_cliques() -> Pairs:
    """Two 6-cliques (0.95) joined by one weak edge 5-6 (0.81); records 12, 13 alone."""
    return pairs_of(clique(range(6)) + clique(range(6, 12)) + [(5, 6, 0.81)]).normalized()


@pytest.mark.parametrize(
    "name,params",
    [
        ("greedy_modularity", {}),
        ("louvain", {}),
        ("label_propagation", {}),
        ("connected_components", {"split": {"bridge_max_score": 0.85}}),
        ("connected_components", {"split": {"min_cut": 1.0}}),
        ("connected_components", {"split": {"min_density": 0.5}}),
    ],
)
def test_two_cliques_joined_by_a_weak_edge_are_split(name: str, params: dict) -> None:
    labels = make(name, params, seed=3).cluster(14, bridged_cliques())
    assert groups(labels) == {frozenset(range(6)), frozenset(range(6, 12)), frozenset({12}), frozenset({13})}
    assert len(groups(ConnectedComponents().cluster(14, bridged_cliques()))) == 3


def test_split_thresholds_are_respected() -> None:
    pairs = bridged_cliques()
    # the bridge scores 0.81: above bridge_max_score 0.8, so it stays
    assert len(groups(make("connected_components", {"split": {"bridge_max_score": 0.8}}).cluster(12, pairs))) == 1
    # the minimum cut is 0.81 (the bridge): not below min_cut 0.8
    assert len(groups(make("connected_components", {"split": {"min_cut": 0.8}}).cluster(12, pairs))) == 1
    # density 31 / 66 = 0.47: dense enough for min_density 0.45
    assert len(groups(make("connected_components", {"split": {"min_density": 0.45}}).cluster(12, pairs))) == 1
    # pieces above max_nodes are not min-cut
    assert len(groups(make("connected_components", {"split": {"min_cut": 1.0, "max_nodes": 11}}).cluster(12, pairs))) == 1


def test_min_side_keeps_pendants_and_cuts_group_bridges() -> None:
    # cliques {0..3} and {4..7} joined by 3-4 (0.5); record 8 hangs on 0 (0.5); 9-10-11 a chain (0.6)
    edges = clique(range(4)) + clique(range(4, 8)) + [(3, 4, 0.5), (0, 8, 0.5), (9, 10, 0.6), (10, 11, 0.6)]
    pairs = pairs_of(edges)
    loose = make("connected_components", {"split": {"bridge_max_score": 0.6}}).cluster(12, pairs)
    assert groups(loose) == {frozenset(range(4)), frozenset(range(4, 8)), frozenset({8}), frozenset({9}), frozenset({10}), frozenset({11})}
    kept = make("connected_components", {"split": {"bridge_max_score": 0.6, "min_side": 2}}).cluster(12, pairs)
    assert groups(kept) == {frozenset({0, 1, 2, 3, 8}), frozenset(range(4, 8)), frozenset({9, 10, 11})}


def test_min_side_is_judged_on_what_is_left() -> None:
    # path 0-1-2-3-4-5, weakest edge in the middle: cut 2-3, then no edge leaves two records on both sides
    scores = [0.9, 0.8, 0.5, 0.7, 0.6]
    pairs = pairs_of([(i, i + 1, s) for i, s in enumerate(scores)])
    labels = make("connected_components", {"split": {"bridge_max_score": 1.0, "min_side": 2}}).cluster(6, pairs)
    assert groups(labels) == {frozenset({0, 1, 2}), frozenset({3, 4, 5})}


def test_min_cut_separates_triangles_joined_by_two_weak_edges() -> None:
    # no bridge here: the two cross edges (0.3 each) make a cut of 0.6
    edges = clique(range(3), 0.9) + clique(range(3, 6), 0.9) + [(0, 3, 0.3), (1, 4, 0.3)]
    pairs = pairs_of(edges)
    assert groups(make("connected_components", {"split": {"bridge_max_score": 1.0}}).cluster(6, pairs)) == {frozenset(range(6))}
    assert groups(make("connected_components", {"split": {"min_cut": 0.7}}).cluster(6, pairs)) == {
        frozenset(range(3)),
        frozenset(range(3, 6)),
    }
    assert groups(make("connected_components", {"split": {"min_cut": 0.5}}).cluster(6, pairs)) == {frozenset(range(6))}


def test_split_runs_before_detection() -> None:
    # two 5-cliques joined by a weak bridge, each with a weak chord to a third 5-clique:
    # Louvain alone already splits; the split pass must not disturb a clean result
    edges = clique(range(5)) + clique(range(5, 10)) + clique(range(10, 15)) + [(4, 5, 0.5), (9, 10, 0.5)]
    pairs = pairs_of(edges)
    expect = {frozenset(range(5)), frozenset(range(5, 10)), frozenset(range(10, 15))}
    assert groups(make("louvain", {"split": {"bridge_max_score": 0.6}}, seed=1).cluster(15, pairs)) == expect
    assert groups(make("connected_components", {"split": {"bridge_max_score": 0.6}}).cluster(15, pairs)) == expect


def test_labels_are_the_smallest_member() -> None:
    pairs = pairs_of([(3, 1, 0.9), (1, 2, 0.9), (0, 4, 0.9)])
    for name, params in VARIANTS:
        labels = make(name, params).cluster(5, pairs)
        for g in groups(labels):
            assert {int(labels[i]) for i in g} == {min(g)}


def test_greedy_modularity_on_a_barbell_matches_networkx() -> None:
    g = nx.barbell_graph(5, 0)  # two 5-cliques joined by one edge
    left, right = map(np.array, zip(*g.edges()))
    labels = GreedyModularity().cluster(10, Pairs(left, right, np.ones(len(left))))
    expect = {frozenset(c) for c in nx.community.greedy_modularity_communities(g)}
    assert groups(labels) == expect == {frozenset(range(5)), frozenset(range(5, 10))}


def test_leiden_needs_a_networkx_backend() -> None:
    """Why there is no ``leiden`` clusterer: plain networkx only dispatches it."""
    with pytest.raises(NotImplementedError):
        nx.community.leiden_communities(nx.barbell_graph(4, 0), seed=1)
    assert "leiden" not in CLUSTERERS


# ---------------------------------------------------------------- chained data


def test_chained_records_merge_entities_under_connected_components() -> None:
    from er_framework.kernels import char_shingles, jaccard_pairs
    from er_framework.synth.documents import chained_records

    d = chained_records(80, seed=2)
    again = chained_records(80, seed=2)
    assert d.texts == again.texts and d.entity == again.entity
    assert len(d.ids) == len(d.texts) == len(d.entity) == len(d.kind) == len(d.other_entity)
    assert d.kind.count("bridge") == 8
    n = len(d.texts)
    tokens = char_shingles([t.lower() for t in d.texts], 5)
    left, right = np.triu_indices(n, 1)
    left, right = left.astype(np.int64), right.astype(np.int64)
    j = jaccard_pairs(tokens, left, right)
    keep = j >= 0.45
    pairs = Pairs(left[keep], right[keep], j[keep])
    entity = np.array(d.entity)
    cc = ConnectedComponents().cluster(n, pairs)
    merged = [g for g in groups(cc) if len({int(entity[i]) for i in g}) > 1]
    assert merged, "connected components should merge entities through bridges"
    kind = np.array(d.kind)
    assert any((kind[list(g)] == "bridge").any() for g in merged)
    # and community detection separates most of them again
    lv = Louvain(LouvainParams(resolution=0.5), Context(seed=0)).cluster(n, pairs)

    def impure(labels) -> int:
        return sum(len(g) for g in groups(labels) if len({int(entity[i]) for i in g}) > 1)

    assert impure(lv) < impure(cc)


# ---------------------------------------------------------------- label propagation: settled components


def _small_components(seed: int, n: int = 400) -> Pairs:
    """Many components of 2 to 6 nodes: cliques, paths, stars and random graphs, with scores in
    (0.8, 1], in [0, 1], rounded to 0.1 (ties) or all 1.0."""
    rng = np.random.default_rng(seed)
    edges: list[tuple[int, int, float]] = []
    start = 0
    kind = seed % 4
    while start < n - 6:
        k = int(rng.integers(2, 7))
        nodes = list(range(start, start + k))
        shape = rng.integers(0, 4)
        if shape == 0:
            es = list(itertools.combinations(nodes, 2))
        elif shape == 1:
            es = list(zip(nodes, nodes[1:]))
        elif shape == 2:
            es = [(nodes[0], x) for x in nodes[1:]]
        else:
            es = list(zip(nodes, nodes[1:])) + [e for e in itertools.combinations(nodes, 2) if rng.random() < 0.5]
        for a, b in es:
            s = [rng.uniform(0.8, 1.0), rng.uniform(0.0, 1.0), round(float(rng.uniform(0, 1)), 1), 1.0][kind]
            edges.append((a, b, float(s)))
        start += k
    return pairs_of(edges).normalized()


@pytest.mark.parametrize("seed", range(8))
def test_label_propagation_skips_only_components_networkx_leaves_whole(seed: int) -> None:
    """The fast path (components whose only fixed point is one community are not handed to networkx)
    against networkx on every component, and the settled test against the fixed points of every
    partition found by brute force (the naive reference)."""
    from er_plugins import clusterers as cl

    pairs = _small_components(seed)
    n = int(pairs.right.max()) + 1
    fast = cl.communities_per_component(n, pairs, cl.asyn_lpa, 7, None, settled=cl.lpa_single_community)
    slow = cl.communities_per_component(n, pairs, cl.asyn_lpa, 7, None)
    assert np.array_equal(fast, slow)
    # the settled test, one component at a time, against a brute-force search for another fixed point
    g = nx.Graph()
    g.add_weighted_edges_from(zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()))
    seen = {True: 0, False: 0}
    for comp in nx.connected_components(g):
        nodes = sorted(comp)
        k = len(nodes)
        if not 3 <= k <= cl.SETTLED_MAX_NODES:
            continue
        w = np.zeros((1, k, k))
        adj = np.zeros((1, k, k), dtype=bool)
        for a, b, d in g.subgraph(nodes).edges(data="weight"):
            i, j = nodes.index(a), nodes.index(b)
            w[0, i, j] = w[0, j, i] = d
            adj[0, i, j] = adj[0, j, i] = True
        other_fixed_point = False
        for labels in cl.set_partitions(k)[1:]:
            stable = True
            for i in range(k):
                freq: dict[int, float] = {}
                for j in range(k):
                    if adj[0, i, j]:
                        freq[labels[j]] = freq.get(labels[j], 0.0) + w[0, i, j]
                best = max(freq.values())
                if labels[i] not in freq or freq[labels[i]] < best - 1e-6:
                    stable = False
            other_fixed_point |= stable
        got = bool(cl.lpa_single_community(w, adj)[0])
        if not other_fixed_point:
            assert got, (nodes, w)  # near-ties aside (none with these weights), every settled one is found
        else:
            assert not got, (nodes, w)
        seen[got] += 1
    assert seen[True] > 0 and (seed % 4 == 3 or seen[False] > 0)


def test_set_partitions_are_the_bell_numbers() -> None:
    from er_plugins.clusterers import set_partitions

    assert [len(set_partitions(k)) for k in range(1, 7)] == [1, 2, 5, 15, 52, 203]
    assert set_partitions(3) == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 1, 2)]


def test_label_propagation_of_small_cliques_does_not_import_networkx() -> None:
    """Components of 3 nodes and 4-cliques of high scores are one community without networkx."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from er_framework.data import Pairs\n"
        "from er_framework.components import Context\n"
        "from er_plugins.clusterers import LabelPropagation\n"
        "p = Pairs(np.array([0, 0, 1, 4, 4, 4, 5, 5, 6]), np.array([1, 2, 2, 5, 6, 7, 6, 7, 7]),"
        " np.array([0.9, 0.85, 1.0, 0.9, 0.95, 0.81, 0.99, 0.9, 0.88]))\n"
        "lab = LabelPropagation(LabelPropagation.Params(), Context(seed=1)).cluster(9, p)\n"
        "assert lab.tolist() == [0, 0, 0, 3, 4, 4, 4, 4, 8], lab\n"
        "assert 'networkx' not in sys.modules and 'scipy.sparse' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- one_to_one with three or more sources


def naive_source_matching(n: int, edges: list[tuple[int, int, float]], source: list[int]) -> list[int]:
    """Plain reference: pairs by (score desc, left, right); join two clusters when they share no source."""
    cluster = {i: {i} for i in range(n)}  # record -> the set of its cluster's records (shared objects)
    for a, b, _ in sorted(((min(a, b), max(a, b), w) for a, b, w in edges if a != b), key=lambda e: (-e[2], e[0], e[1])):
        ca, cb = cluster[a], cluster[b]
        if ca is cb or {source[x] for x in ca} & {source[x] for x in cb}:
            continue
        merged = ca | cb
        for x in merged:
            cluster[x] = merged
    return [min(cluster[i]) for i in range(n)]


def random_link_pairs(seed: int, n: int, k: int, m: int) -> tuple[Pairs, np.ndarray]:
    rng = np.random.default_rng(seed)
    source = rng.integers(0, k, n).astype(np.int32)
    left, right = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = (source[left] != source[right]) & (left != right)
    scores = np.round(rng.random(int(keep.sum())), 1)  # many ties
    return Pairs(left[keep], right[keep], scores), source


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [3, 4, 7])
def test_source_matching_equals_naive_reference(seed: int, k: int) -> None:
    pairs, source = random_link_pairs(seed, 80, k, 400)
    edges = list(zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()))
    want = naive_source_matching(80, edges, source.tolist())
    got = source_matching(80, pairs, source)
    assert got.tolist() == want
    # no cluster holds two records of one source, and order of the pairs does not matter
    assert np.unique(got * k + source, return_counts=True)[1].max() == 1
    perm = np.random.default_rng(seed).permutation(len(pairs))
    assert source_matching(80, Pairs(pairs.right[perm], pairs.left[perm], pairs.score[perm]), source).tolist() == want


def test_three_sources_make_one_cluster_per_customer() -> None:
    # records 0, 1, 2 of sources A, B, C are one customer; 3 (source B) is a weaker rival of 1
    source = np.array([0, 1, 2, 1], dtype=np.int32)
    pairs = pairs_of([(0, 1, 0.99), (1, 2, 0.95), (0, 2, 0.9), (0, 3, 0.8), (2, 3, 0.7)])
    labels = OneToOne().cluster_sources(4, pairs, source)
    assert groups(labels) == {frozenset({0, 1, 2}), frozenset({3})}
    # without sources: at most one partner in all
    assert groups(OneToOne().cluster(4, pairs)) == {frozenset({0, 1}), frozenset({2, 3})}


def test_two_sources_keep_the_one_partner_matching() -> None:
    for seed in range(5):
        pairs, source = random_link_pairs(seed, 60, 2, 300)
        one = OneToOne()
        assert one.cluster_sources(60, pairs, source).tolist() == one.cluster(60, pairs).tolist()
        assert groups(source_matching(60, pairs, source)) == groups(one.cluster(60, pairs))


def test_source_matching_checks_the_sources_length() -> None:
    with pytest.raises(ValueError, match="3 entries for 4 records"):
        source_matching(4, pairs_of([(0, 1, 0.9)]), np.zeros(3, dtype=np.int32))


@pytest.mark.parametrize("name,params", [v for v in VARIANTS if v[0] != "one_to_one"], ids=lambda v: str(v))
def test_cluster_ids_of_some_components_give_their_whole_graph_labels(name: str, params: dict) -> None:
    """``cluster_ids`` (the Dask executor's per-group call): components taken out of the graph, renumbered
    0..k-1 in order, get the labels the whole graph gives them (networkx sees their global numbers)."""
    pairs = random_graph(3, n=400)
    n = 420
    whole = make(name, params, seed=5).cluster(n, pairs)
    comp = ConnectedComponents().cluster(n, pairs)
    rng = np.random.default_rng(1)
    roots = np.unique(comp)
    for chosen in (roots[rng.random(len(roots)) < 0.5], roots):
        ids = np.flatnonzero(np.isin(comp, chosen))
        keep = np.isin(pairs.left, ids)
        local = Pairs(np.searchsorted(ids, pairs.left[keep]), np.searchsorted(ids, pairs.right[keep]), pairs.score[keep])
        got = make(name, params, seed=5).cluster_ids(ids, local)
        assert groups(canonical_labels(got)) == groups(canonical_labels(whole[ids]))
        assert np.array_equal(ids[got], whole[ids])  # labels are smallest members, in local numbers
