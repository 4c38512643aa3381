"""Stable cluster ids: a merge keeps the larger cluster's id and records the change; cluster changes count sets, not ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_docs import docs_job, write_docs

from er_framework.config.resolve import parse_job
from er_framework.data import Records
from er_framework.index.build import build_index
from er_framework.index.recluster import cluster_changes


def test_merge_keeps_the_larger_clusters_id_and_records_it(tmp_path: Path) -> None:
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "omicron",
        "pi",
        "rho",
        "sigma",
    ]
    a = " ".join(words)
    b = " ".join(words[9:] + ["tau", "upsilon", "phi", "chi", "psi", "omega"] * 3)
    rows = [("a1", a), ("a2", a + " x"), ("a3", a + " y"), ("b1", b), ("b2", b + " z"), ("lone", "nothing alike at all, really nothing")]
    data = write_docs(tmp_path / "d.jsonl", rows)
    index, _ = build_index(parse_job(docs_job(tmp_path, data, threshold=0.5, exact="false")), tmp_path / "i.erx")
    before = index.clusters()
    assert before[("docs", "a1")] == before[("docs", "a3")] != before[("docs", "b1")]
    bridge = " ".join(words[5:] + ["tau", "upsilon", "phi", "chi", "psi", "omega"])
    stats = index.add(Records.from_columns(["bridge"], {"text": [bridge]}, "docs"))
    after = index.clusters()
    if after[("docs", "a1")] == after[("docs", "b1")]:  # the bridge linked both clusters
        assert after[("docs", "a1")] == before[("docs", "a1")]  # the larger cluster (3 records) keeps its id
        assert stats["merged"] == 1 and stats["ids_changed"] == 2
        kinds = index.conn.execute("SELECT kind, cluster, survivor, records FROM cluster_changes WHERE kind='merged'").fetchall()
        assert kinds == [("merged", before[("docs", "b1")], before[("docs", "a1")], 2)]
    else:
        pytest.fail(f"the bridge document did not merge the clusters: {stats}")
    assert after[("docs", "lone")] == before[("docs", "lone")]


def test_cluster_changes_counts_sets_not_ids() -> None:
    before = {1: 10, 2: 10, 3: 11, 4: 12}
    after = {1: 20, 2: 20, 3: 21, 4: 21}  # {1,2} kept (new id), {3}, {4} merged
    got = cluster_changes(before, after)
    assert got == {"clusters_before": 3, "clusters_after": 2, "clusters_changed": 1, "records_moved": 4}
