"""pairs.csv is the answer: every pair at or above the threshold after the job's last step."""

from __future__ import annotations

import csv
import json
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import er_framework as er
from er_framework.capabilities import SourceAware, has
from er_framework.config import parse_job
from er_framework.data import Pairs
from er_framework.engine.stages import clustering
from er_framework.engine.stages.exact import Exact
from er_framework.errors import InputError
from er_framework.executors import run_job
from er_plugins.clusterers import OneToOne

ROOT = Path(__file__).resolve().parents[3]

BASE = (
    "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill "
    "and the birds sing in the old oak tree behind the garden wall."
)
OTHER = (
    "Completely unrelated text about the migration of arctic terns, which fly from pole to pole "
    "every year and see more daylight than any other animal on earth."
)


def write_docs(tmp: Path, exact_pairs: str | None = None, copies: int = 5) -> Path:
    """A corpus with a group of ``copies`` exact copies (c0..), a near-duplicate of one copy (near) and
    unrelated records; returns the job file."""
    rows = [{"id": f"c{i}", "text": BASE if i % 2 == 0 else "  " + BASE.upper() + " "} for i in range(copies)]
    rows.append({"id": "near", "text": BASE.replace("lazy dog", "lazy old dog")})
    rows += [
        {"id": f"u{i}", "text": t}
        for i, t in enumerate(
            [
                OTHER,
                "Sorting algorithms compared: merge sort, heap sort and quick sort on nearly sorted input.",
                "A recipe for bread: flour, water, salt and yeast, kneaded for ten minutes and left to rise.",
            ]
        )
    ]
    rows.append({"id": "alone", "text": "Nothing like the others at all: a note on compilers."})
    data = tmp / "docs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = f"\noutput: {{exact_pairs: {exact_pairs}}}" if exact_pairs else ""
    job = tmp / "job.yaml"
    job.write_text(
        f"""
name: answer
seed: 1
threshold: 0.7
sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
shingler: {{type: char, k: 5}}
signature: {{type: minhash, num_perm: 128}}
blockers: [{{type: lsh_bands}}]
verifier: {{type: jaccard}}
cluster: {{type: connected_components}}
diagnostics: 0{out}
""",
        encoding="utf-8",
    )
    return job


def pairs_csv(path: Path) -> dict[frozenset[str], float]:
    with path.open(encoding="utf-8", newline="") as fh:
        return {frozenset((r["left_id"], r["right_id"])): float(r["score"]) for r in csv.DictReader(fh)}


def test_an_exact_group_and_its_near_duplicate_are_listed_with_every_copy(tmp_path: Path) -> None:
    res = run_job(parse_job(write_docs(tmp_path)), tmp_path / "out")
    got = pairs_csv(tmp_path / "out" / "pairs.csv")
    copies = [f"c{i}" for i in range(5)]
    within = {frozenset(p) for p in combinations(copies, 2)}
    near = {frozenset(("near", c)) for c in copies}
    assert within <= set(got) and near <= set(got)
    assert all(got[p] == 1.0 for p in within)
    # the near-duplicate scores the same against every copy (one text)
    assert len({got[p] for p in near}) == 1 and 0.7 <= got[next(iter(near))] < 1.0
    assert len(within) + len(near) == 10 + 5
    assert set(got) - within - near == set()  # nothing else on this corpus
    rep = res.report
    assert rep["exact_duplicates"]["records_collapsed"] == 4
    assert rep["pairs"] == {"exact_pairs": "all", "pairs_with_every_copy": 15, "pairs_listed": 15, "pairs_across_clusters": 0}
    assert rep["pairs_written"] == 15
    # the clusters say the same: all six in one cluster
    with (tmp_path / "out" / "clusters.csv").open(encoding="utf-8") as fh:
        cid = {r["id"]: r["cluster_id"] for r in csv.DictReader(fh)}
    assert len({cid[x] for x in [*copies, "near"]}) == 1


def test_star_lists_each_group_around_its_first_record(tmp_path: Path) -> None:
    res = run_job(parse_job(write_docs(tmp_path, exact_pairs="star")), tmp_path / "out")
    got = pairs_csv(tmp_path / "out" / "pairs.csv")
    assert set(got) == {frozenset(("c0", f"c{i}")) for i in range(1, 5)} | {frozenset(("c0", "near"))}
    assert res.report["pairs"]["pairs_with_every_copy"] == 15 and res.report["pairs"]["pairs_listed"] == 5


def test_expansion_against_a_naive_listing(tmp_path: Path) -> None:
    """answer() against the pairs listed by hand from the groups, on random groups and pairs."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = 40
        rep_of = np.arange(n)
        for i in range(1, n):  # some records copy an earlier one's representative
            if rng.random() < 0.4:
                rep_of[i] = rep_of[rng.integers(0, i)]
        dup = rep_of != np.arange(n)
        exact = Exact(er.Pairs(rep_of[dup], np.flatnonzero(dup)).normalized(), np.flatnonzero(~dup), {"records_collapsed": int(dup.sum())})
        exact.pairs.score = np.ones(len(exact.pairs))
        reps = np.flatnonzero(~dup)
        cand = {tuple(sorted(rng.choice(reps, 2, replace=False))) for _ in range(15)}
        verified = er.Pairs(np.array([a for a, _ in cand]), np.array([b for _, b in cand]), rng.random(len(cand))).normalized()
        job = parse_job(write_docs(tmp_path))
        found = clustering.answer(job, exact, verified, np.zeros(n, dtype=np.int64), selects_pairs=False)
        expect: dict[tuple[int, int], float] = {}
        for a in range(n):
            for b in range(a + 1, n):
                if rep_of[a] == rep_of[b]:
                    expect[(a, b)] = 1.0
        for a, b, s in zip(verified.left, verified.right, verified.score):
            for x in np.flatnonzero(rep_of == a):
                for y in np.flatnonzero(rep_of == b):
                    expect[(min(x, y), max(x, y))] = s
        got = {(int(a), int(b)): s for a, b, s in zip(found.pairs.left, found.pairs.right, found.pairs.score)}
        assert got == expect
        assert found.stats["pairs_with_every_copy"] == len(expect)


def test_listing_that_would_not_fit_is_refused_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clustering, "available_memory", lambda: 1000)
    with pytest.raises(InputError, match="exact_pairs: star"):
        run_job(parse_job(write_docs(tmp_path)), tmp_path / "out")


def test_one_to_one_writes_exactly_its_final_links(tmp_path: Path) -> None:
    res = run_job(parse_job(ROOT / "configs" / "customers.yaml"), tmp_path / "out")
    with (tmp_path / "out" / "pairs.csv").open(encoding="utf-8") as fh:
        links = [(r["left_id"], r["right_id"]) for r in csv.DictReader(fh)]
    with (tmp_path / "out" / "verified_pairs.csv").open(encoding="utf-8") as fh:
        verified = [(r["left_id"], r["right_id"], float(r["score"])) for r in csv.DictReader(fh)]
    with (tmp_path / "out" / "clusters.csv").open(encoding="utf-8") as fh:
        cid = {(r["source"], r["id"]): r["cluster_id"] for r in csv.DictReader(fh)}
    # every record at most once, and the links are exactly the pairs inside a cluster
    assert len({a for a, _ in links}) == len(links) == len({b for _, b in links})
    inside = {(a, b) for a, b, _ in verified if cid[("A", a)] == cid[("B", b)]}
    assert set(links) == inside and set(links) <= {(a, b) for a, b, _ in verified}
    assert res.report["link"]["matched"]["B"] == len(links) == res.report["pairs"]["pairs_listed"]
    assert res.report["pairs"]["verified_pairs_listed"] == len(verified) >= len(links)


def test_char_preset_raw_scores_the_raw_text(tmp_path: Path) -> None:
    """A pair whose normalized text is near-identical scores its raw character Jaccard with preset: raw."""
    a = "The Licence grants YOU the right to COPY and modify.   Permission is hereby granted."
    b = "the licence grants you the right to copy and modify. permission is hereby granted."
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "text": a}) + "\n" + json.dumps({"id": "b", "text": b}) + "\n", encoding="utf-8")
    job = tmp_path / "j.yaml"
    job.write_text(
        f"""
sources: [{{name: d, path: {data}, fields: [text]}}]
threshold: 0.1
shingler: {{type: char, k: 5, preset: raw}}
signature: {{type: minhash}}
blockers: [{{type: lsh_bands, bands: 64, rows: 1}}]
verifier: {{type: jaccard}}
diagnostics: 0
""",
        encoding="utf-8",
    )
    res = run_job(parse_job(job), write=False)
    raw = lambda t: {t[i : i + 5] for i in range(len(t) - 4)}  # noqa: E731
    expect = len(raw(a) & raw(b)) / len(raw(a) | raw(b))
    assert res.report["exact_duplicates"]["records_collapsed"] == 0  # not copies as written
    assert len(res.pairs) == 1 and res.pairs.score[0] == pytest.approx(expect)
    assert "as written" in res.report["score"]["tokens"]


def test_comparisons_csv_breaks_every_candidates_score_into_its_terms(tmp_path: Path) -> None:
    text = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8")
    text = text.replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/").replace(
        "  candidates: false", "  candidates: true\n  comparisons: true"
    )
    (tmp_path / "job.yaml").write_text(text, encoding="utf-8")
    res = run_job(parse_job(tmp_path / "job.yaml"), tmp_path / "out")
    with (tmp_path / "out" / "comparisons.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    with (tmp_path / "out" / "candidates.csv").open(encoding="utf-8") as fh:
        cands = list(csv.DictReader(fh))
    assert len(rows) == len(cands) == res.report["candidate_pairs"]
    cols = list(rows[0])
    assert cols[:4] == ["left_source", "left_id", "right_source", "right_id"] and cols[-1] == "score"
    assert cols[4] == "prior_weight" and "level_location" in cols and "weight_dob" in cols and "match_weight" in cols
    weights = [c for c in cols if c.startswith("weight_")]
    for row, cand in zip(rows, cands):
        assert (row["left_id"], row["right_id"]) == (cand["left_id"], cand["right_id"])
        total = float(row["prior_weight"]) + sum(float(row[c]) for c in weights)
        assert total == pytest.approx(float(row["match_weight"]), abs=1e-6)
        assert float(row["score"]) == pytest.approx(float(cand["score"]), abs=1e-12)


def test_cluster_stats_count_the_pairs_the_clusters_hold() -> None:
    labels = np.array([0, 0, 0, 1, 2, 2, 3, 3, 3, 3], dtype=np.int64)
    got = clustering.cluster_stats(labels)
    naive = sum(1 for a, b in combinations(range(len(labels)), 2) if labels[a] == labels[b])
    assert got == {"count": 4, "singletons": 1, "largest": 4, "records_in_multi_record_clusters": 9, "pairs": naive}
    assert naive == 3 + 1 + 6
    assert clustering.cluster_stats(np.zeros(0, dtype=np.int64))["pairs"] == 0


def test_the_cluster_stage_gives_a_source_aware_clusterer_the_sources_in_link_mode_only() -> None:
    """one_to_one declares SourceAware: with three sources in link mode the stage passes every record's source,
    so the customer of A, B and C is one cluster; without sources (or outside link mode) ``cluster`` is called."""
    assert has(OneToOne, SourceAware)
    pairs = Pairs(np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([0.99, 0.95, 0.9]))
    source = np.array([0, 1, 2], dtype=np.int32)
    link = SimpleNamespace(clusterer=OneToOne(), link=True, distribution=str)
    assert clustering.cluster(link, 3, pairs, source).tolist() == [0, 0, 0]  # type: ignore[arg-type]
    assert clustering.cluster(link, 3, pairs).tolist() == [0, 0, 1]  # type: ignore[arg-type]
    dedup = SimpleNamespace(clusterer=OneToOne(), link=False, distribution=str)
    assert clustering.cluster(dedup, 3, pairs, source).tolist() == [0, 0, 1]  # type: ignore[arg-type]
