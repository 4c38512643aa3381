"""Clustering on the Dask workers (executors/dask_graph.py) against the local cluster stage.

The reference is :func:`er_framework.engine.stages.clustering.cluster` (what the local executor runs) on
the whole graph. Graphs: many small components, chains longer than naive label propagation's rounds, a
giant component, empty edge parts and empty partitions, edges across partitions, isolated records.
Most graphs run through an in-process client (each task run at once, the same code as on Dask); a
LocalCluster (threads) runs each clusterer too and checks what the client receives.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from distributed import Client, Future, LocalCluster

from er_framework.components import Context
from er_framework.data import Pairs
from er_framework.engine.stages.clustering import cluster, cluster_stats
from er_framework.executors.dask_graph import (
    EDGES_PER_GROUP,
    Members,
    cluster_labels,
    cluster_sizes,
    group_offsets,
    local_forest,
    members_of,
    merge_summaries,
    plain_components,
    roots_of,
    split_by,
    task_large_star,
    task_size_summary,
    unique_edges,
)
from er_framework.kernels.graph import canonical_labels, connected_component_labels
from er_framework.report.page import largest_clusters
from er_plugins.clusterers import BUILTIN_CLUSTERERS

CLUSTERERS = {c.name: c for c in BUILTIN_CLUSTERERS}

#: (clusterer, params): every shipped clusterer, connected_components with and without split
VARIANTS = [
    ("connected_components", {}),
    ("connected_components", {"split": {"bridge_max_score": 0.9, "min_side": 2}}),
    ("connected_components", {"split": {"min_density": 0.5}}),
    ("label_propagation", {}),
    ("label_propagation", {"split": {"bridge_max_score": 0.9}}),
    ("louvain", {}),
    ("greedy_modularity", {}),
    ("one_to_one", {}),
]


def make(name: str, params: dict[str, Any] | None = None, seed: int = 7) -> Any:
    cls = CLUSTERERS[name]
    return cls(cls.Params(**(params or {})), Context(seed=seed))


def local_answer(clusterer: Any, n: int, pairs: Pairs, source: np.ndarray, link: bool) -> np.ndarray:
    """What the local executor gives: the engine's cluster stage over the whole graph."""
    engine = SimpleNamespace(clusterer=clusterer, link=link, distribution=lambda c: c.name)
    return cluster(engine, n, pairs, source.astype(np.int32))  # type: ignore[arg-type]


# ------------------------------------------------------------------ an in-process client


class Done:
    """A finished "future" of :class:`InProcess`."""

    def __init__(self, value: Any) -> None:
        self.value = value


class InProcess:
    """A client running every task at once in this process (arguments that are futures resolved)."""

    def __init__(self) -> None:
        self.tasks = 0

    def submit(self, fn: Any, *args: Any, pure: bool = True, retries: int = 0) -> Done:
        self.tasks += 1
        return Done(fn(*[a.value if isinstance(a, Done) else a for a in args]))

    def scatter(self, value: Any, hash: bool = True) -> Done:
        return Done(value)

    def gather(self, futures: Any) -> Any:
        return [f.value for f in futures] if isinstance(futures, list) else futures.value


# ------------------------------------------------------------------ graphs


def chain(nodes: np.ndarray, rng: np.random.Generator) -> list[tuple[int, int, float]]:
    return [(int(a), int(b), float(rng.uniform(0.5, 1.0))) for a, b in zip(nodes[:-1], nodes[1:])]


def graph(kind: str, seed: int) -> tuple[int, Pairs]:
    """``(records, pairs)`` of one kind of test graph (normalized, scored; some scores tie)."""
    rng = np.random.default_rng(seed)
    n = 600
    edges: list[tuple[int, int, float]] = []
    if kind == "many":  # small dense groups, weak bridges between some, isolated records
        start = 0
        while start < n - 60:
            size = int(rng.integers(2, 8))
            edges += [(a, b, round(float(rng.uniform(0.7, 1.0)), 1)) for a, b in itertools.combinations(range(start, start + size), 2)]
            if rng.random() < 0.3:
                edges.append((start, start + size, 0.55))
            start += size + int(rng.integers(0, 3))
    elif kind == "chains":  # chains in index order and in random order, longer than a naive method's rounds
        edges += chain(np.arange(0, 250), rng) + chain(rng.permutation(np.arange(250, 560)), rng)
    elif kind == "giant":  # one component of most records, spanning every partition, plus a few pairs
        edges += chain(rng.permutation(500), rng)
        edges += [(int(a), int(b), float(rng.uniform(0.5, 1.0))) for a, b in rng.integers(0, 500, (300, 2)) if a != b]
        edges += [(510 + 2 * i, 511 + 2 * i, 0.9) for i in range(20)]
    else:  # "random": uniform random edges across the partitions
        edges += [(int(a), int(b), round(float(rng.uniform(0.5, 1.0)), 2)) for a, b in rng.integers(0, n, (500, 2)) if a != b]
    left, right, score = (np.array(x) for x in zip(*edges))
    return n, Pairs(left.astype(np.int64), right.astype(np.int64), score.astype(np.float64)).normalized()


#: partitions of the 600 records: uneven, one empty
OFFSETS = np.array([0, 70, 200, 200, 333, 480, 600], dtype=np.int64)


def edge_parts(pairs: Pairs, n_parts: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The pairs dealt at random into ``n_parts`` parts (the last one empty)."""
    rng = np.random.default_rng(seed)
    where = rng.integers(0, n_parts - 1, len(pairs))
    return [(pairs.left[where == k], pairs.right[where == k], pairs.score[where == k]) for k in range(n_parts)]  # type: ignore[index]


def sources(link_sources: int) -> list[int]:
    """The source of each partition of :data:`OFFSETS`."""
    return {1: [0] * 6, 2: [0, 0, 1, 1, 1, 1], 3: [0, 1, 1, 2, 2, 2]}[link_sources]


def record_sources(src_of_part: list[int]) -> np.ndarray:
    return np.repeat(np.asarray(src_of_part), np.diff(OFFSETS))


def cross_source(pairs: Pairs, source: np.ndarray) -> Pairs:
    return pairs.select(source[pairs.left] != source[pairs.right])


def labels_of(client: Any, got: Any) -> np.ndarray:
    parts = client.gather(got.labels)
    assert [len(p) for p in parts] == np.diff(OFFSETS).tolist()
    return np.concatenate(parts)


# ------------------------------------------------------------------ every clusterer, in-process


@pytest.mark.parametrize("name, params", VARIANTS, ids=lambda v: str(v))
@pytest.mark.parametrize("kind", ["many", "chains", "giant", "random"])
@pytest.mark.parametrize("per_group", [1, 150, EDGES_PER_GROUP])  # a group per partition, 3 to 4 groups, one group
def test_labels_equal_the_local_cluster_stage(name: str, params: dict[str, Any], kind: str, per_group: int) -> None:
    n, pairs = graph(kind, seed=len(kind))
    clusterer = make(name, params)
    client = InProcess()
    parts = [client.scatter(p) for p in edge_parts(pairs, 5, seed=1)]
    got = cluster_labels(client, parts, OFFSETS, clusterer, link=False, source_of_partition=sources(1), edges_per_group=per_group)
    labels = labels_of(client, got)
    want = local_answer(clusterer, n, pairs, record_sources(sources(1)), link=False)
    assert np.array_equal(labels, want)
    assert got.count == int(want.max()) + 1


@pytest.mark.parametrize("n_sources", [2, 3])
@pytest.mark.parametrize("kind", ["many", "random", "giant"])
@pytest.mark.parametrize("per_group", [1, EDGES_PER_GROUP])
def test_one_to_one_in_link_mode_equals_local(n_sources: int, kind: str, per_group: int) -> None:
    """``cluster_sources``: with three sources the matching keeps one record per source per cluster, and
    the choice of rule follows the sources of the whole run, not of one group of components."""
    n, pairs = graph(kind, seed=11)
    source = record_sources(sources(n_sources))
    pairs = cross_source(pairs, source)
    clusterer = make("one_to_one")
    client = InProcess()
    parts = [client.scatter(p) for p in edge_parts(pairs, 3, seed=2)]
    got = cluster_labels(client, parts, OFFSETS, clusterer, link=True, source_of_partition=sources(n_sources), edges_per_group=per_group)
    assert np.array_equal(labels_of(client, got), local_answer(clusterer, n, pairs, source, link=True))


def test_one_to_one_follows_the_rule_of_the_whole_runs_sources() -> None:
    """Three sources in the run but a component holding two: the three-source rule still applies (never
    two records of one source in a cluster), as on the whole graph. (Link mode's pairs cross sources, so
    there both rules agree on such a component; a pair within a source shows which rule ran.)"""
    src_of_part = sources(3)
    source = record_sources(src_of_part)
    a = np.flatnonzero(source == 0)[:4]
    b = np.flatnonzero(source == 1)[:4]
    pairs = Pairs(np.array([a[0], a[1], a[2]]), np.array([a[1], b[0], b[1]]), np.array([0.99, 0.9, 0.8])).normalized()
    clusterer = make("one_to_one")
    client = InProcess()
    got = cluster_labels(
        client, [client.scatter((pairs.left, pairs.right, pairs.score))], OFFSETS, clusterer, link=True, source_of_partition=src_of_part
    )
    want = local_answer(clusterer, 600, pairs, source, link=True)
    assert np.array_equal(labels_of(client, got), want)
    assert want[a[0]] != want[a[1]] and want[a[1]] == want[b[0]]  # the two-source rule would join a0-a1 (score 0.99)


def test_a_graph_without_edges_and_only_empty_parts() -> None:
    client = InProcess()
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    for clusterer in (make("connected_components"), make("louvain")):
        got = cluster_labels(client, [client.scatter(empty)] * 3, OFFSETS, clusterer, link=False, source_of_partition=sources(1))
        assert np.array_equal(labels_of(client, got), np.arange(600)) and got.count == 600 and got.rounds == 0
        got = cluster_labels(client, [], OFFSETS, clusterer, link=False, source_of_partition=sources(1))
        assert np.array_equal(labels_of(client, got), np.arange(600))


def test_bad_partition_sources_are_a_clear_error() -> None:
    with pytest.raises(ValueError, match="6 partitions .* 2 sources"):
        cluster_labels(InProcess(), [], OFFSETS, make("louvain"), link=False, source_of_partition=[0, 1])


# ------------------------------------------------------------------ rounds of the alternating stars


@pytest.mark.parametrize("seed", range(40))
def test_alternating_stars_on_random_graphs_and_partitions(seed: int) -> None:
    """Random sizes, densities, partitions (some empty) and edge parts, a group per partition: the
    components' labels equal the kernel's."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    m = int(rng.integers(0, 2 * n))
    left, right = rng.integers(0, n, m), rng.integers(0, n, m)
    pairs = Pairs(left, right, rng.random(m)).normalized()
    n_parts = int(rng.integers(1, 9))
    offsets = np.sort(np.concatenate([[0, n], rng.integers(0, n + 1, n_parts - 1)])).astype(np.int64)
    client = InProcess()
    deal = rng.integers(0, 3, len(pairs))
    parts = [client.scatter((pairs.left[deal == k], pairs.right[deal == k], pairs.score[deal == k])) for k in range(3)]  # type: ignore[index]
    got = cluster_labels(
        client, parts, offsets, make("connected_components"), link=False, source_of_partition=[0] * n_parts, edges_per_group=1
    )
    want = canonical_labels(connected_component_labels(n, pairs.left, pairs.right))
    assert np.array_equal(np.concatenate(client.gather(got.labels)), want)
    assert cluster_sizes(client, got).summary.stats == cluster_stats(want)


@pytest.mark.parametrize("order", ["ascending", "descending", "random"])
def test_a_long_chain_takes_logarithmic_rounds(order: str) -> None:
    """A chain of 20,000 records over 8 partitions: naive min-label propagation needs 20,000 rounds."""
    n = 20_000
    nodes = {"ascending": np.arange(n), "descending": np.arange(n)[::-1], "random": np.random.default_rng(0).permutation(n)}[order]
    left, right = np.minimum(nodes[:-1], nodes[1:]), np.maximum(nodes[:-1], nodes[1:])
    offsets = np.linspace(0, n, 9).astype(np.int64)
    client = InProcess()
    deal = np.random.default_rng(1).integers(0, 4, n - 1)  # each part a scattering of the chain's edges
    parts = [client.scatter((left[deal == k], right[deal == k], np.ones(int((deal == k).sum())))) for k in range(4)]
    got = cluster_labels(
        client, parts, offsets, make("connected_components"), link=False, source_of_partition=[0] * 8, edges_per_group=1000
    )
    assert np.array_equal(np.concatenate(client.gather(got.labels)), np.zeros(n, np.int64))
    assert got.rounds <= 2 * math.ceil(math.log2(n)), got.rounds


# ------------------------------------------------------------------ sizes, summary, members


@pytest.mark.parametrize("kind", ["many", "giant", "random"])
@pytest.mark.parametrize("top", [1, 5, 1000])
def test_sizes_and_summary_equal_the_local_ones(kind: str, top: int) -> None:
    n, pairs = graph(kind, seed=5)
    clusterer = make("louvain")
    client = InProcess()
    got = cluster_labels(
        client, [client.scatter(p) for p in edge_parts(pairs, 4, seed=3)], OFFSETS, clusterer, link=False, source_of_partition=sources(1)
    )
    want = local_answer(clusterer, n, pairs, record_sources(sources(1)), link=False)
    counts = np.bincount(want)
    sizes = cluster_sizes(client, got, top=top)
    assert np.array_equal(np.concatenate(client.gather(sizes.sizes)), counts)
    assert sizes.summary.stats == cluster_stats(want)
    assert sizes.summary.largest == [(c, int(counts[c])) for c in largest_clusters(counts, top)]
    values, times = np.unique(counts, return_counts=True)
    assert sizes.summary.histogram == dict(zip(values.tolist(), times.tolist()))
    chosen = [0, int(want[-1]), int(np.argmax(counts))]
    assert members_of(client, got, OFFSETS, chosen) == {c: np.flatnonzero(want == c).tolist() for c in chosen}


def test_merging_no_partition_summaries_and_one_without_clusters() -> None:
    assert merge_summaries([], 3).stats == cluster_stats(np.zeros(0, np.int64))
    assert merge_summaries([task_size_summary(np.zeros(0, np.int64), 0, 3)], 3).stats == cluster_stats(np.zeros(0, np.int64))


# ------------------------------------------------------------------ the helpers, against naive versions


def test_helpers_against_naive_versions() -> None:
    rng = np.random.default_rng(4)
    u, v = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    a, b = unique_edges(u, v)
    assert list(zip(a.tolist(), b.tolist())) == sorted({(x, y) for x, y in zip(u.tolist(), v.tolist()) if x != y})
    fl, fr = local_forest(u, v)
    assert len(fl) == len(np.unique(np.concatenate([fr]))) and np.all(fl < fr)
    nodes = np.arange(30)
    assert np.array_equal(connected_component_labels(30, fl, fr), connected_component_labels(30, u, v))
    dest = rng.integers(0, 4, 50)
    pieces = split_by(dest, 4, np.arange(50))
    assert [p[0].tolist() for p in pieces] == [np.flatnonzero(dest == j).tolist() for j in range(4)]
    m = Members(np.array([3, 7]), np.array([1, 2]))
    assert roots_of(m, nodes[:9]).tolist() == [0, 1, 2, 1, 4, 5, 6, 2, 8]
    assert roots_of(Members(), nodes[:3]).tolist() == [0, 1, 2]
    assert plain_components(make("connected_components")) and not plain_components(make("connected_components", VARIANTS[1][1]))
    assert not plain_components(make("louvain"))
    offsets = np.array([0, 5, 5, 9, 20, 30], dtype=np.int64)
    assert [x.tolist() for x in group_offsets(offsets, 10, 100)] == [[0, 5], [0, 30]]
    assert [x.tolist() for x in group_offsets(offsets, 10, 5)] == [[0, 2, 5], [0, 5, 30]]
    assert [x.tolist() for x in group_offsets(offsets, 10, 1)] == [list(range(6)), offsets.tolist()]
    assert [x.tolist() for x in group_offsets(offsets, 0, 1)] == [[0, 5], [0, 30]]


def test_a_large_star_counts_the_nodes_that_are_not_yet_a_centre_or_a_leaf() -> None:
    offsets = np.array([0, 10], dtype=np.int64)
    star = task_large_star(offsets, (np.array([0, 0, 5, 6]), np.array([5, 6, 0, 0])))
    assert star.unsettled == 0 and star.members is not None
    assert star.members.nonroot.tolist() == [5, 6] and star.members.member.tolist() == [5, 6]
    path = task_large_star(offsets, (np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])))  # 0 - 1 - 2
    assert path.unsettled == 1 and path.members is None  # node 1 has a smaller and a larger neighbour
    assert [p[0].tolist() for p in path.pieces] == [[1, 2]] and [p[1].tolist() for p in path.pieces] == [[0, 0]]


# ------------------------------------------------------------------ on a LocalCluster


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    # threads in this process; the dashboard on a free loopback port (None would take 8787 when free)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as lc, Client(lc) as c:
        yield c


def elements(obj: Any) -> int:
    """How many numbers (and strings) an object holds, through arrays, containers and dataclasses."""
    if isinstance(obj, np.ndarray):
        return int(obj.size)
    if isinstance(obj, dict):
        return sum(elements(k) + elements(v) for k, v in obj.items())
    if isinstance(obj, list | tuple | set):
        return sum(elements(x) for x in obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        return sum(elements(getattr(obj, f.name)) for f in fields(obj))
    return 1


@pytest.mark.parametrize("name, params", VARIANTS, ids=lambda v: str(v))
def test_on_a_local_cluster_the_client_receives_o_partitions(
    client: Client, name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every object the client gathers while clustering (``client.gather``; ``Future.result`` is refused)
    holds at most a few numbers per partition: the per-round counts, the root counts, the summary
    (``5 + 2 top`` numbers and the histogram's distinct sizes per partition)."""
    n, pairs = graph("giant" if name != "one_to_one" else "many", seed=9)
    clusterer = make(name, params)
    parts = [client.scatter(p, hash=False) for p in edge_parts(pairs, 4, seed=4)]  # not shared with another test's futures
    n_parts, top = len(OFFSETS) - 1, 3
    received: list[int] = []
    gather = client.gather

    def counting_gather(futures: Any, *args: Any, **kwargs: Any) -> Any:
        got = gather(futures, *args, **kwargs)
        received.append(elements(got))
        return got

    def no_result(self: Future, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Future.result called on the client")

    with monkeypatch.context() as mp:
        mp.setattr(client, "gather", counting_gather)
        mp.setattr(Future, "result", no_result)
        got = cluster_labels(client, parts, OFFSETS, clusterer, link=False, source_of_partition=sources(1), edges_per_group=1)
        # the edge parts' sizes, one count per group (here a group per partition) a round, the root counts
        assert received == [len(parts)] + [n_parts] * got.rounds + [n_parts]
        sizes = cluster_sizes(client, got, top=top)
        distinct = len(sizes.summary.histogram)
        assert received[-1] <= n_parts * (5 + 2 * top + 2 * distinct)
    assert max(received) < n / 4  # nothing per record (600) or per pair
    want = local_answer(clusterer, n, pairs, record_sources(sources(1)), link=False)
    assert np.array_equal(np.concatenate(client.gather(got.labels)), want)
    assert sizes.summary.stats == cluster_stats(want)


def test_one_to_one_three_sources_on_a_local_cluster(client: Client) -> None:
    n, pairs = graph("random", seed=21)
    source = record_sources(sources(3))
    pairs = cross_source(pairs, source)
    clusterer = make("one_to_one")
    parts = [client.scatter(p, hash=False) for p in edge_parts(pairs, 3, seed=5)]
    got = cluster_labels(client, parts, OFFSETS, clusterer, link=True, source_of_partition=sources(3))
    assert np.array_equal(np.concatenate(client.gather(got.labels)), local_answer(clusterer, n, pairs, source, link=True))
