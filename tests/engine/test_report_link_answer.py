"""report.link_answer and report.borderline (the report's fast paths over millions of candidates) equal their
plain twins on random candidates: repeated and tied scores, NaN, pairs within a source, 2 and 3 sources,
one-record clusters and empty inputs."""

from __future__ import annotations

import numpy as np
import pytest

import er_framework.engine.report as report_module
from er_framework.data import Pairs
from er_framework.engine.report import borderline, borderline_reference, link_answer, link_answer_reference


def _case(seed: int, n: int, m: int, n_src: int) -> tuple[np.ndarray, Pairs, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    source = rng.integers(0, n_src, n).astype(np.int32)
    left = rng.integers(0, n, m)
    right = rng.integers(0, n, m)
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    keep = lo != hi
    scores = np.round(rng.random(int(keep.sum())), 2)  # many ties
    scores[rng.random(len(scores)) < 0.05] = np.nan
    labels = rng.integers(0, max(n // 3, 1), n)
    _, labels = np.unique(labels, return_inverse=True)
    return source, Pairs(lo[keep], hi[keep]), scores, labels.astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_src", [2, 3])
@pytest.mark.parametrize("threshold", [0.5, 0.9, 0.99])
def test_link_answer_equals_reference(seed: int, n_src: int, threshold: float) -> None:
    source, cands, scores, labels = _case(seed, 300, 2000, n_src)
    names = [f"S{i}" for i in range(n_src)]
    assert link_answer(source, names, cands, scores, labels, threshold) == link_answer_reference(
        source, names, cands, scores, labels, threshold
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_src", [2, 3, 4, 12])
def test_link_answer_per_source_pair_equals_reference(seed: int, n_src: int) -> None:
    source, cands, scores, labels = _case(seed, 200, 1500, n_src)
    names = [f"S{i}" for i in range(n_src)]
    verified = cands.select(np.nan_to_num(scores) >= 0.5)
    final = verified.select(labels[verified.left] == labels[verified.right])
    got = link_answer(source, names, cands, scores, labels, 0.5, verified, final)
    assert got == link_answer_reference(source, names, cands, scores, labels, 0.5, verified, final)
    rows = got["by_source_pair"]
    assert sum(r["candidate_pairs"] for r in rows) == len(cands)
    assert sum(r["verified_pairs"] for r in rows) == len(verified) and sum(r["pairs"] for r in rows) == len(final)
    pairs = [tuple(r["sources"]) for r in rows]
    assert pairs == sorted(pairs, key=lambda p: (names.index(p[0]), names.index(p[1])))
    if n_src <= report_module.SOURCE_PAIR_ROWS:  # every pair of two different sources is listed
        assert {(a, b) for a, b in pairs if a != b} == {(a, b) for i, a in enumerate(names) for b in names[i + 1 :]}


def test_link_answer_without_verified_pairs_counts_candidates_only() -> None:
    source = np.array([0, 1, 2, 0], dtype=np.int32)
    cands = Pairs(np.array([0, 0, 1, 2]), np.array([1, 2, 2, 3]))
    got = link_answer(source, ["A", "B", "C"], cands, np.array([0.9, 0.2, 0.8, 0.7]), np.arange(4), 0.5)
    assert got["by_source_pair"] == [
        {"sources": ["A", "B"], "candidate_pairs": 1, "verified_pairs": None, "pairs": None},
        {"sources": ["A", "C"], "candidate_pairs": 2, "verified_pairs": None, "pairs": None},
        {"sources": ["B", "C"], "candidate_pairs": 1, "verified_pairs": None, "pairs": None},
    ]


def test_link_answer_without_candidates_or_records() -> None:
    empty = Pairs(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    src = np.array([0, 1, 1], dtype=np.int32)
    lab = np.array([0, 0, 1], dtype=np.int64)
    for labels, source in ((lab, src), (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))):
        got = link_answer(source, ["A", "B"], empty, np.zeros(0), labels, 0.9)
        assert got == link_answer_reference(source, ["A", "B"], empty, np.zeros(0), labels, 0.9)
    assert link_answer(src, ["A", "B"], empty, np.zeros(0), lab, 0.9)["matched"] == {"A": 1, "B": 1}


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [0, 1, 3, 10, 5000])
@pytest.mark.parametrize("step", [1 << 22, 7, 256])  # one step, and many (ties across steps)
def test_borderline_equals_reference(seed: int, k: int, step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_module, "BORDERLINE_STEP", step)
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(3000), 2 if seed % 2 else 4)
    scores[rng.random(3000) < 0.03] = np.nan
    scores[:5] = 0.9  # ties at the threshold itself
    for t in (0.9, 0.0, 1.0, 2.0):
        got, want = borderline(scores, t, k), borderline_reference(scores, t, k)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == np.int64
    assert all(len(x) == 0 for x in borderline(np.zeros(0), 0.5))


@pytest.mark.parametrize("seed", range(3))
def test_link_answer_when_every_pair_crosses(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 400
    source = np.repeat(np.array([0, 1], dtype=np.int32), n // 2)
    left = rng.integers(0, n // 2, 3000)
    right = rng.integers(n // 2, n, 3000)
    scores = np.round(rng.random(3000), 3)
    labels = np.arange(n, dtype=np.int64)
    labels[n // 2 : n // 2 + 50] = np.arange(50)  # 50 mixed clusters
    _, labels = np.unique(labels, return_inverse=True)
    cands = Pairs(left, right)
    for t in (0.3, 0.9):
        assert link_answer(source, ["A", "B"], cands, scores, labels, t) == link_answer_reference(
            source, ["A", "B"], cands, scores, labels, t
        )
