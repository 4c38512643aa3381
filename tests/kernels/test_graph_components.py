"""connected_component_labels (numpy union-find by rounds) against scipy and networkx."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.kernels import graph
from er_framework.kernels.graph import connected_component_labels, connected_component_labels_scipy


def _networkx_labels(n: int, left: np.ndarray, right: np.ndarray) -> list[int]:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(left.tolist(), right.tolist()))
    out = [0] * n
    for comp in nx.connected_components(g):
        m = min(comp)
        for x in comp:
            out[x] = m
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.lists(st.tuples(st.integers(0, 59), st.integers(0, 59)), max_size=120))
def test_components_match_networkx(n: int, edges: list[tuple[int, int]]) -> None:
    e = [(a % n, b % n) for a, b in edges]
    left = np.array([a for a, _ in e], dtype=np.int64)
    right = np.array([b for _, b in e], dtype=np.int64)
    got = connected_component_labels(n, left, right)
    assert got.tolist() == _networkx_labels(n, left, right)
    assert np.array_equal(got, connected_component_labels_scipy(n, left, right))


@pytest.mark.parametrize("shape", ["path", "reversed path", "shuffled path", "star", "random"])
def test_components_of_long_chains_and_the_scipy_fallback(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Long paths in every node order (the rounds' worst cases), and with one round allowed the rest
    handed to scipy: the same labels."""
    n = 20_000
    rng = np.random.default_rng(3)
    perm = rng.permutation(n)
    left, right = {
        "path": (np.arange(n - 1), np.arange(1, n)),
        "reversed path": (np.arange(1, n), np.arange(n - 1)),
        "shuffled path": (perm[:-1], perm[1:]),
        "star": (np.full(n - 1, n - 1), np.arange(n - 1)),
        "random": (rng.integers(0, n, n // 2), rng.integers(0, n, n // 2)),
    }[shape]
    want = connected_component_labels_scipy(n, left, right)
    assert np.array_equal(connected_component_labels(n, left, right), want)
    monkeypatch.setattr(graph, "MAX_HOOK_ROUNDS", 1)
    assert np.array_equal(connected_component_labels(n, left, right), want)


def test_no_edges_and_self_loops() -> None:
    assert connected_component_labels(3, np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == [0, 1, 2]
    assert connected_component_labels(3, np.array([1, 2]), np.array([1, 1])).tolist() == [0, 1, 1]
