"""Chain flags: planted graphs, the brute-force oracle, the spanning forest, invariances."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.kernels import (
    ChainFlag,
    chain_flags,
    chain_flags_reference,
    max_spanning_forest,
    max_spanning_forest_reference,
)

Edges = list[tuple[int, int, float]]


def clique(nodes: range | list[int], rng: np.random.Generator, lo: float = 0.8, hi: float = 1.0) -> Edges:
    return [(a, b, float(rng.uniform(lo, hi))) for a, b in itertools.combinations(nodes, 2)]


def arrays(edges: Edges) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not edges:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
    left, right, score = zip(*edges)
    return np.array(left, np.int64), np.array(right, np.int64), np.array(score, np.float64)


def run(edges: Edges, n: int, labels: np.ndarray | None = None, **kw: Any) -> tuple[list[ChainFlag], dict[str, Any]]:
    lab = np.zeros(n, np.int64) if labels is None else labels
    return chain_flags(lab, *arrays(edges), **kw)


def two_cliques(rng: np.random.Generator, a: int, b: int, bridges: list[tuple[int, int, float]]) -> Edges:
    return clique(range(a), rng) + clique(range(a, a + b), rng) + bridges


# ---------------------------------------------------------------- planted graphs


def test_two_cliques_one_weak_edge() -> None:
    rng = np.random.default_rng(1)
    edges = two_cliques(rng, 5, 6, [(3, 7, 0.5)])
    flags, stats = run(edges, 11)
    assert stats == {
        "clusters": 1,
        "checked": 1,
        "too_small": 0,
        "skipped_too_large": 0,
        "disconnected": 0,
        "flagged": 1,
        "too_dense": 0,
        "cuts_scored": stats["cuts_scored"],
    }
    (f,) = flags
    assert (f.cluster, f.size, f.sides, f.cut_edges, f.bridge) == (0, 11, (5, 6), 1, (3, 7))
    assert f.cut_max_score == 0.5
    assert f.cut_density == pytest.approx(1 / 30)
    assert f.side_density == (1.0, 1.0)
    inside_a = [w for x, y, w in edges if x < 5 and y < 5]
    inside_b = [w for x, y, w in edges if x >= 5 and y >= 5]
    assert f.side_median_score == (float(np.median(inside_a)), float(np.median(inside_b)))
    assert f.gap == pytest.approx(min(f.side_median_score) - 0.5)
    assert f.members[0].tolist() == [0, 1, 2, 3, 4]
    assert f.members[1].tolist() == [5, 6, 7, 8, 9, 10]
    js = f.to_json()
    assert js["sides"] == [5, 6] and js["bridge"] == [3, 7] and "members" not in js


@pytest.mark.parametrize("n_bridges", [2, 3])
def test_two_cliques_several_weak_edges(n_bridges: int) -> None:
    rng = np.random.default_rng(n_bridges)
    bridges = [(0, 6, 0.55), (2, 8, 0.6), (4, 5, 0.5)][:n_bridges]
    flags, _ = run(two_cliques(rng, 5, 5, bridges), 10)
    (f,) = flags
    assert f.sides == (5, 5) and f.cut_edges == n_bridges
    strongest = max(bridges, key=lambda t: t[2])
    assert f.bridge == strongest[:2] and f.cut_max_score == strongest[2]
    assert f.members[0].tolist() == [0, 1, 2, 3, 4]


def test_bridge_reported_left_to_right_sides() -> None:
    """Side 0 is the side of the bridge's left record, not the side of the smallest record."""
    rng = np.random.default_rng(3)
    edges = clique([1, 3, 5, 7], rng) + clique([0, 2, 4, 6], rng) + [(3, 4, 0.3)]
    (f,) = run(edges, 8)[0]
    assert f.bridge == (3, 4)
    assert f.members[0].tolist() == [1, 3, 5, 7] and f.members[1].tolist() == [0, 2, 4, 6]


def test_clique_with_random_scores_not_flagged() -> None:
    for seed in range(20):
        rng = np.random.default_rng(seed)
        flags, stats = run(clique(range(9), rng, 0.3, 1.0), 9)
        assert flags == [] and stats["checked"] == 1 and stats["too_dense"] == 1  # judged by its pair count


def test_uniform_path_not_flagged() -> None:
    for k in (4, 5, 8, 20):
        path = [(i, i + 1, 0.8) for i in range(k - 1)]
        assert run(path, k)[0] == []
        # similar scores (within min_gap) are the same as equal ones
        noisy = [(i, i + 1, 0.8 + 0.005 * ((-1) ** i)) for i in range(k - 1)]
        assert run(noisy, k)[0] == []


def test_path_with_a_clearly_weak_middle_pair_is_flagged() -> None:
    """Two pairs joined by one weak pair: the smallest chain of two entities (documented)."""
    (f,) = run([(0, 1, 0.9), (1, 2, 0.5), (2, 3, 0.9)], 4)[0]
    assert f.sides == (2, 2) and f.bridge == (1, 2)
    # longer uniform-ish paths stay unflagged because their sides are sparse: density 2/a < 0.5 for a > 4
    path = [(i, i + 1, 0.9) for i in range(11)]
    path[5] = (5, 6, 0.5)
    assert run(path, 12)[0] == []


def test_star_not_flagged() -> None:
    star = [(0, j, 0.5 + 0.04 * j) for j in range(1, 10)]
    assert run(star, 10)[0] == []


def test_small_clusters_not_checked() -> None:
    rng = np.random.default_rng(0)
    edges = two_cliques(rng, 2, 2, [(1, 2, 0.1)])  # would be flagged with min_size 4 ...
    assert len(run(edges, 4)[0]) == 1
    flags, stats = run(edges, 4, min_size=5)  # ... but it is too small here
    assert flags == [] and stats["too_small"] == 1 and stats["checked"] == 0


def test_too_large_skipped_and_counted() -> None:
    rng = np.random.default_rng(0)
    edges = two_cliques(rng, 5, 5, [(0, 5, 0.2)])
    flags, stats = run(edges, 10, max_cluster=9)
    assert flags == [] and stats["skipped_too_large"] == 1 and stats["checked"] == 0


def test_disconnected_cluster_counted_not_judged() -> None:
    rng = np.random.default_rng(0)
    edges = clique(range(4), rng) + clique(range(4, 8), rng)  # one label, no pair across
    flags, stats = run(edges, 8)
    assert flags == [] and stats["disconnected"] == 1 and stats["checked"] == 0


def test_pairs_across_clusters_and_self_pairs_ignored() -> None:
    rng = np.random.default_rng(0)
    edges = two_cliques(rng, 4, 4, [(0, 4, 0.3)]) + [(1, 1, 0.1)]
    labels = np.zeros(12, np.int64)
    labels[8:] = 1
    # cluster 1 is a clique {8..11}; pairs from it into cluster 0 do not count
    edges += clique(range(8, 12), rng) + [(3, 9, 0.99), (5, 10, 0.99)]
    flags, stats = run(edges, 12, labels)
    assert [f.cluster for f in flags] == [0]
    assert flags[0].cut_edges == 1 and stats["checked"] == 2


def test_many_clusters_each_judged_alone() -> None:
    rng = np.random.default_rng(5)
    edges: Edges = []
    labels: list[int] = []
    expect: dict[int, bool] = {}
    names = [907, -3, 42, 10**12, 7, 0]
    for i, name in enumerate(names):
        base = len(labels)
        chained = i % 2 == 0
        size = 4 + i
        if chained:
            h = size // 2
            e = clique(range(h), rng) + clique(range(h, size), rng) + [(0, h, 0.4)]
        else:
            e = clique(range(size), rng, 0.5, 1.0)
        edges += [(a + base, b + base, w) for a, b, w in e]
        labels += [name] * size
        expect[name] = chained
    perm = rng.permutation(len(labels))
    inv = np.argsort(perm)
    lab = np.array(labels, np.int64)[inv]  # record j becomes record perm[j]
    moved = [(int(perm[a]), int(perm[b]), w) for a, b, w in edges]
    flags, stats = run(moved, len(lab), lab)
    assert {f.cluster for f in flags} == {k for k, v in expect.items() if v}
    assert stats["checked"] == len(names) and stats["flagged"] == 3
    for f in flags:
        assert set(f.members[0].tolist()) | set(f.members[1].tolist()) == set(np.flatnonzero(lab == f.cluster).tolist())
    gaps = [f.gap for f in flags]
    assert gaps == sorted(gaps, reverse=True)


def test_input_checks() -> None:
    with pytest.raises(ValueError, match="min_side"):
        chain_flags(np.zeros(4, np.int64), *arrays([(0, 1, 1.0)]), min_side=1)
    with pytest.raises(ValueError, match="length"):
        chain_flags(np.zeros(4, np.int64), np.array([0]), np.array([1]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="record indices"):
        chain_flags(np.zeros(4, np.int64), np.array([0]), np.array([4]), np.array([1.0]))
    flags, stats = chain_flags(np.zeros(0, np.int64), *arrays([]))
    assert flags == [] and stats["clusters"] == 0


# ---------------------------------------------------------------- against the brute force


def random_clusters(rng: np.random.Generator, ties: bool) -> tuple[np.ndarray, Edges]:
    """Up to 4 clusters of 2-10 records: two blobs of random density joined by random pairs."""
    edges: Edges = []
    labels: list[int] = []
    for _ in range(int(rng.integers(1, 5))):
        k = int(rng.integers(2, 11))
        split = int(rng.integers(1, k))
        p_in, p_out = rng.uniform(0.3, 1.0), rng.uniform(0.0, 0.4)
        base = len(labels)
        for a, b in itertools.combinations(range(k), 2):
            same = (a < split) == (b < split)
            if rng.random() < (p_in if same else p_out):
                w = rng.uniform(0.5, 1.0) if same else rng.uniform(0.1, 0.9)
                edges.append((a + base, b + base, round(w * 4) / 4 if ties else float(w)))
        labels += [int(rng.integers(-5, 5)) * 100 + len(labels)] * k
    perm = rng.permutation(len(labels))
    inv = np.argsort(perm)
    return np.array(labels, np.int64)[inv], [(int(perm[a]), int(perm[b]), w) for a, b, w in edges]


def same_flags(fast: list[ChainFlag], ref: list[ChainFlag]) -> None:
    assert [f.to_json() for f in fast] == [f.to_json() for f in ref]
    for f, g in zip(fast, ref):
        assert f.members[0].tolist() == g.members[0].tolist()
        assert f.members[1].tolist() == g.members[1].tolist()


PARAMS = [
    {},
    {"min_gap": 0.0, "max_cut_density": 0.5, "min_side_density": 0.3},
    {"min_size": 5, "min_side": 3, "max_cut_density": 0.4},
    {"min_gap": 0.1, "min_side_density": 0.0, "max_cut_density": 1.0},
]


@pytest.mark.parametrize("params", PARAMS)
def test_fast_matches_brute_force_distinct_scores(params: dict[str, Any]) -> None:
    flagged = 0
    for seed in range(100):
        labels, edges = random_clusters(np.random.default_rng(seed), ties=False)
        fast, fs = run(edges, len(labels), labels, **params)
        ref, rs = chain_flags_reference(labels, *arrays(edges), **params)
        same_flags(fast, ref)
        for key in ("cuts_scored", "too_dense"):
            fs.pop(key), rs.pop(key)
        assert fs == rs
        flagged += len(fast)
    assert flagged >= 5  # the loop exercises flagged clusters, not only clean ones


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(PARAMS))
def test_fast_flags_satisfy_the_criterion_with_ties(seed: int, params: dict[str, Any]) -> None:
    """With tied scores the fast path tries one spanning tree's cuts: a subset of the reference's flags."""
    labels, edges = random_clusters(np.random.default_rng(seed), ties=True)
    fast, fs = run(edges, len(labels), labels, **params)
    ref, rs = chain_flags_reference(labels, *arrays(edges), **params)
    assert {f.cluster for f in fast} <= {f.cluster for f in ref}
    ref_by = {f.cluster: f for f in ref}
    for f in fast:  # never better than the best cut there is
        assert f.gap <= ref_by[f.cluster].gap
    for key in ("checked", "too_small", "skipped_too_large", "disconnected"):
        assert fs[key] == rs[key]


# ---------------------------------------------------------------- invariances


def test_order_invariance_and_determinism() -> None:
    rng = np.random.default_rng(11)
    labels, edges = random_clusters(rng, ties=True)
    for _ in range(3):
        more, extra = random_clusters(rng, ties=True)
        edges += [(a + len(labels), b + len(labels), w) for a, b, w in extra]
        labels = np.concatenate([labels, more + 10_000])
    base = [f.to_json() for f in run(edges, len(labels), labels)[0]]
    assert base == [f.to_json() for f in run(edges, len(labels), labels)[0]]
    for seed in range(10):
        r = np.random.default_rng(seed)
        shuffled = [edges[i] for i in r.permutation(len(edges))]
        flipped = [(b, a, w) if r.random() < 0.5 else (a, b, w) for a, b, w in shuffled]
        dup = flipped + [(a, b, w - 0.01) for a, b, w in flipped[:5]]  # lower-scored duplicates do not count
        assert [f.to_json() for f in run(dup, len(labels), labels)[0]] == base


def test_label_values_do_not_matter() -> None:
    rng = np.random.default_rng(2)
    labels, edges = random_clusters(rng, ties=False)
    renamed = labels * 7 - 3
    a = run(edges, len(labels), labels)[0]
    b = run(edges, len(labels), renamed)[0]
    assert [f.cluster * 7 - 3 for f in a] == [f.cluster for f in b]
    assert [f.bridge for f in a] == [f.bridge for f in b]


# ---------------------------------------------------------------- spanning forest


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 30), st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29), st.integers(0, 3)), max_size=90))
def test_max_spanning_forest_matches_kruskal(n: int, raw: list[tuple[int, int, int]]) -> None:
    seen: dict[tuple[int, int], float] = {}
    for a, b, w in raw:
        a, b = a % n, b % n
        if a != b:
            seen[(min(a, b), max(a, b))] = w / 3  # ties on purpose
    left = np.array([p[0] for p in seen], np.int64)
    right = np.array([p[1] for p in seen], np.int64)
    score = np.array(list(seen.values()), np.float64)
    got = max_spanning_forest(n, left, right, score)
    ref = max_spanning_forest_reference(n, left, right, score)
    assert got.tolist() == ref.tolist()


def test_max_spanning_forest_large_path_and_weights() -> None:
    rng = np.random.default_rng(0)
    n = 3000
    left = np.arange(n - 1, dtype=np.int64)
    right = left + 1
    extra_l = rng.integers(0, n, 6000)
    extra_r = rng.integers(0, n, 6000)
    keep = extra_l < extra_r
    left = np.concatenate([left, extra_l[keep]])
    right = np.concatenate([right, extra_r[keep]])
    pair = left * n + right
    _, first = np.unique(pair, return_index=True)
    left, right = left[first], right[first]
    score = rng.random(len(left))
    got = max_spanning_forest(n, left, right, score)
    assert got.tolist() == max_spanning_forest_reference(n, left, right, score).tolist()
    assert int(got.sum()) == n - 1
