"""report_cluster_parts: the cluster, link, answer and chains sections merged from random parts (empty parts
included) equal the whole report's sections (json.dumps equality)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from er_framework.data import Pairs, Records
from er_framework.engine import report_cluster_parts as rc
from er_framework.engine.report import chained_clusters, link_answer
from er_framework.engine.stages.clustering import answer, cluster_stats
from er_framework.engine.stages.exact import Exact, exact_groups
from er_framework.kernels.chains import chain_flags


def split(n: int, rng: np.random.Generator) -> list[slice]:
    """Contiguous slices covering ``0..n`` in order, some empty."""
    k = int(rng.integers(1, 7))
    bounds = [0, *np.sort(rng.integers(0, n + 1, k - 1)).tolist(), n]
    out = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    out.insert(int(rng.integers(0, len(out) + 1)), slice(0, 0))
    return out


def random_labels(rng: np.random.Generator, n: int) -> np.ndarray:
    """Canonical labels with singletons, pairs and large clusters."""
    raw = rng.integers(0, max(1, n // int(rng.choice([1, 2, 5, 50]))), n)
    _, first = np.unique(raw, return_index=True)
    order = np.argsort(first)
    canon = np.empty(len(first), dtype=np.int64)
    canon[order] = np.arange(len(first))
    return canon[np.unique(raw, return_inverse=True)[1].ravel()]


def stats_by_client(labels: np.ndarray, pieces: list[slice], multi: np.ndarray | None) -> dict[str, int]:
    tables = [rc.cluster_counts_part(labels[s], None if multi is None else multi[s]) for s in pieces]
    return rc.cluster_stats_of(rc.cluster_sums(rc.merge_cluster_counts(tables)))


def stats_by_hash_parts(labels: np.ndarray, pieces: list[slice], multi: np.ndarray | None, n_hash: int) -> dict[str, int]:
    tables = [rc.cluster_counts_part(labels[s], None if multi is None else multi[s]) for s in pieces]
    by_hash = [rc.split_cluster_counts(t, n_hash) for t in tables]  # each record part cuts its table
    sums = [rc.cluster_sums(rc.merge_cluster_counts(t[h] for t in by_hash)) for h in range(n_hash)]  # on the workers
    return rc.cluster_stats_of(rc.merge_cluster_sums(sums))


@pytest.mark.parametrize("seed", range(25))
def test_cluster_stats_from_parts_equal_the_whole(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 500))
    labels = random_labels(rng, n)
    sizes = np.bincount(labels) if n else np.zeros(0, dtype=np.int64)
    in_multi = sizes[labels] > 1 if n else np.zeros(0, dtype=bool)
    multi = in_multi | (rng.random(n) < 0.2)  # some singletons listed too: allowed
    want = json.dumps(cluster_stats(labels))
    for m in (None, multi):
        pieces = split(n, rng)
        assert json.dumps(stats_by_client(labels, pieces, m)) == want
        assert json.dumps(stats_by_hash_parts(labels, pieces, m, int(rng.integers(1, 5)))) == want
    gappy = labels * 3  # any labels: count is the highest + 1, as bincount says
    assert json.dumps(stats_by_client(gappy, split(n, rng), None)) == json.dumps(cluster_stats(gappy))


def link_by_parts(
    source: np.ndarray,
    names: list[str],
    cands: Pairs,
    scores: np.ndarray,
    labels: np.ndarray,
    threshold: float,
    more: dict[str, Pairs | None],
    rng: np.random.Generator,
) -> dict[str, Any]:
    n, n_src = len(labels), len(names)
    # records: (cluster, source) tables, merged per hash part of the cluster id
    n_hash = int(rng.integers(1, 4))
    tables = [rc.split_cluster_sources(rc.cluster_sources_part(labels[s], source[s]), n_hash) for s in split(n, rng)]
    matched = np.zeros(n_src, dtype=np.int64)
    for h in range(n_hash):  # on the workers: each hash part's tables merged, its matched records counted
        matched += rc.matched_counts(rc.merge_cluster_sources(t[h] for t in tables), n_src)
    # candidates: pass 1, pass 2, and both ends routed by record
    pieces = split(len(cands), rng)
    sl, sr = source[cands.left], source[cands.right]
    cross = rc.merge_cross_scores(rc.cross_scores_part(sl[s], sr[s], scores[s]) for s in pieces)
    grid = rc.link_grid(cross, threshold)
    rng_h = rc.link_histogram_range(cross, threshold)
    pairs = rc.merge_link_pairs((rc.link_pairs_part(sl[s], sr[s], scores[s], grid, rng_h) for s in pieces), len(grid))
    reach = np.zeros((len(grid), n_src), dtype=np.int64)
    if grid:
        ends = [rc.link_ends(cands.left[s], cands.right[s], sl[s], sr[s], scores[s], grid[0]) for s in pieces]
        rec, src, sc = (np.concatenate([e[i] for e in ends]) for i in range(3))
        n_route = int(rng.integers(1, 4))
        for h in range(n_route):  # the executor's shuffle by record
            at = rec % n_route == h
            reach += rc.link_reach_part(rec[at], src[at], sc[at], grid, n_src)
    per_pair: dict[str, np.ndarray | None] = {}
    for what, p in {"candidate_pairs": cands, **more}.items():
        if p is None:
            per_pair[what] = None
            continue
        counts = [rc.source_pair_counts_part(source[p.left[s]], source[p.right[s]], n_src) for s in split(len(p), rng)]
        per_pair[what] = np.sum(counts, axis=0)
    return rc.link_answer_of(names, threshold, matched, cross, pairs, reach, per_pair)


@pytest.mark.parametrize("seed", range(20))
def test_link_answer_from_parts_equals_the_whole(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_src = int(rng.integers(1, 13))
    names = [f"s{i}" for i in range(n_src)]
    n = int(rng.integers(0, 300))
    source = rng.integers(0, n_src, n).astype(np.int32)
    labels = random_labels(rng, n)
    m = int(rng.integers(0, 800)) if n else 0
    cands = Pairs(rng.integers(0, max(n, 1), m), rng.integers(0, max(n, 1), m))
    scores = np.round(rng.random(m), 2)
    scores[rng.random(m) < 0.05] = np.nan
    scores[rng.random(m) < 0.03] = np.inf
    threshold = float(rng.choice([0.5, 0.9, 0.99, 1.5]))
    keep = np.flatnonzero(scores >= threshold)
    verified = Pairs(cands.left[keep], cands.right[keep])
    final = None if seed % 3 == 0 else Pairs(verified.left[: len(keep) // 2], verified.right[: len(keep) // 2])
    want = link_answer(source, names, cands, scores, labels, threshold, verified, final)
    got = link_by_parts(source, names, cands, scores, labels, threshold, {"verified_pairs": verified, "pairs": final}, rng)
    assert json.dumps(got) == json.dumps(want)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("mode", ["all", "star"])
@pytest.mark.parametrize("selects", [False, True])
def test_answer_stats_from_parts_equal_the_whole(seed: int, mode: str, selects: bool) -> None:
    rng = np.random.default_rng(seed)
    n = 60
    rep_of = np.arange(n)
    for i in range(1, n):  # some records copy an earlier one's representative
        if rng.random() < 0.3:
            rep_of[i] = rep_of[rng.integers(0, i)]
    dup = rep_of != np.arange(n)
    exact = Exact(Pairs(rep_of[dup], np.flatnonzero(dup), np.ones(int(dup.sum()))).normalized(), np.flatnonzero(~dup), {})
    exact.stats["records_collapsed"] = int(dup.sum())
    reps = np.flatnonzero(~dup)
    cand = {tuple(sorted(rng.choice(reps, 2, replace=False))) for _ in range(25)}
    verified = Pairs(np.array([a for a, _ in cand]), np.array([b for _, b in cand]), rng.random(len(cand))).normalized()
    labels = rng.integers(0, 4, n).astype(np.int64)
    job: Any = SimpleNamespace(spec=SimpleNamespace(output=SimpleNamespace(exact_pairs=mode)), config_path="job.yaml")
    found = answer(job, exact, verified, labels, selects)
    # the parts: exact groups in parts, verified pairs in parts (each end's group size joined), listed pairs in parts
    group_of, _, sizes, _ = exact_groups(exact, n)
    implied = sum(rc.copies_part(sizes[s], [], []) for s in split(len(sizes), rng))
    size_of = sizes[group_of]
    implied += sum(rc.copies_part([], size_of[verified.left[s]], size_of[verified.right[s]]) for s in split(len(verified), rng))
    listed = found.verified if selects else found.pairs
    assert listed is not None
    parts = [rc.listed_part(labels[listed.left[s]], labels[listed.right[s]]) for s in split(len(listed), rng)]
    got = rc.answer_stats_of(mode, implied, rc.merge_listed(parts), selects)
    assert json.dumps(got) == json.dumps(found.stats)


def chained_graph(rng: np.random.Generator) -> tuple[np.ndarray, Pairs]:
    """Clusters made of two dense halves joined by a weak pair (flagged), cliques (not), singletons and pairs."""
    labels: list[int] = []
    left: list[int] = []
    right: list[int] = []
    score: list[float] = []
    for c in range(int(rng.integers(0, 40))):
        kind = int(rng.integers(0, 4))
        size = [1, 2, int(rng.integers(4, 9)), int(rng.integers(4, 9))][kind]
        start = len(labels)
        labels += [c] * size
        half = size // 2
        for a in range(size):
            for b in range(a + 1, size):
                same_half = (a < half) == (b < half)
                if kind == 3 or same_half:
                    left.append(start + a)
                    right.append(start + b)
                    score.append(float(rng.uniform(0.9, 1.0)))
        if kind == 2:  # the bridge
            left.append(start + half - 1)
            right.append(start + half)
            score.append(float(rng.uniform(0.5, 0.7)))
    n = len(labels)
    perm = rng.permutation(n)  # records of a cluster spread over the input
    lab = np.empty(n, dtype=np.int64)
    lab[perm] = labels
    return lab, Pairs(perm[np.array(left, dtype=np.int64)], perm[np.array(right, dtype=np.int64)], np.array(score))


def chains_reference(records: Records, pairs: Pairs, labels: np.ndarray) -> dict[str, Any]:
    """The whole report's chains as written before the parts (the twin)."""
    score = pairs.score if pairs.score is not None else np.ones(len(pairs))
    flags, stats = chain_flags(labels, pairs.left, pairs.right, score)
    listed = []
    for f in flags[: rc.CHAINS_LISTED]:
        item = f.to_json()
        item["bridge"] = [[records.source_names[int(records.source[r])], str(records.ids[r])] for r in f.bridge]
        listed.append(item)
    return {**stats, "listed": listed}


@pytest.mark.parametrize("seed", range(15))
def test_chains_from_parts_holding_whole_clusters_equal_the_whole(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels, pairs = chained_graph(rng)
    n = len(labels)
    records = Records(ids=[f"r{i}" for i in range(n)], source=rng.integers(0, 2, n).astype(np.int32), source_names=["a", "b"], fields={})
    want = json.dumps(chains_reference(records, pairs, labels))
    assert json.dumps(chained_clusters(records, pairs, labels)) == want
    # parts: clusters routed by label (whole), the pairs by their left record's label
    n_parts = int(rng.integers(1, 5))
    route = (labels * 7919) % n_parts
    ids = np.array(records.ids, dtype=object)
    parts = []
    for p in range(n_parts):
        rows = np.flatnonzero(route == p)
        at = route[pairs.left] == p
        sc = pairs.score[at] if pairs.score is not None else None
        part = rc.chains_part(labels[rows], pairs.left[at], pairs.right[at], sc, ids[rows], records.source[rows], ["a", "b"], rows=rows)
        parts.append(part)
    merged = rc.merge_chains([rc.merge_chains(parts[:1]), *parts[1:]])
    assert json.dumps(rc.chains_section(merged)) == want
    assert rc.chains_section(rc.merge_chains([]))["clusters"] == 0
