"""The cluster ids of an index after a write: the touched components clustered again, their ids kept.

Stable cluster ids. After a write, the connected components of the pair
graph that the write touched are clustered again with the job's clusterer
(every built-in clusterer works per connected component, so the other
components' clusters cannot change). Each new cluster is then matched to the
old ids its records held: the (cluster, old id) pairs are taken in order of
overlap (records of the cluster that held the id), largest first, then
smaller id first; a pair is used when neither the cluster nor the id has one
yet. So when a batch merges clusters the *largest* of them keeps its id
(ties: the oldest, i.e. smallest, id) and the others are recorded as merged
into it; a cluster without an old id gets a fresh id (never reused, in order
of its first record). Records outside the touched components keep their id.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from er_framework.components import Clusterer
from er_framework.data import Pairs
from er_framework.index.sqlite import CHUNK, chunks, marks, meta_get, meta_set


def component(conn: sqlite3.Connection, seeds: set[int]) -> tuple[list[int], Pairs]:
    """Every record connected to ``seeds`` in the stored pair graph, and the pairs among them."""
    nodes = set(seeds)
    frontier = sorted(seeds)
    edges: dict[tuple[int, int], float] = {}
    while frontier:
        nxt: set[int] = set()
        for part in chunks(frontier, CHUNK // 2):
            q = marks(len(part))
            for a, b, s in conn.execute(
                f"SELECT a, b, score FROM pairs WHERE a IN ({q}) UNION ALL SELECT a, b, score FROM pairs WHERE b IN ({q})",
                list(part) + list(part),
            ):
                edges[(a, b)] = s
                for x in (a, b):
                    if x not in nodes:
                        nodes.add(x)
                        nxt.add(x)
        frontier = sorted(nxt)
    order = sorted(nodes)
    pos = {r: i for i, r in enumerate(order)}
    items = sorted(edges.items())
    return order, Pairs(
        np.asarray([pos[a] for (a, _), _ in items], dtype=np.int64),
        np.asarray([pos[b] for (_, b), _ in items], dtype=np.int64),
        np.asarray([s for _, s in items], dtype=np.float64),
    )


def recluster(
    conn: sqlite3.Connection, clusterer: Clusterer, seeds: set[int], seq: int, removed_ids: dict[int, int] | None = None
) -> dict[str, Any]:
    """Cluster the components touching ``seeds`` again and give the clusters ids (module docstring)."""
    stats: dict[str, Any] = {"records_reclustered": 0, "ids_changed": 0, "new_clusters": 0, "merged": 0, "split": 0, "retired": 0}
    if not seeds and not removed_ids:
        return stats
    nodes, pairs = component(conn, seeds)
    stats["records_reclustered"] = len(nodes)
    labels = np.asarray(clusterer.cluster(len(nodes), pairs), dtype=np.int64)
    old: dict[int, int] = {}
    for part in chunks(nodes):
        for rid, c in conn.execute(f"SELECT rid, cluster FROM records WHERE rid IN ({marks(len(part))})", part):
            old[rid] = c
    groups: dict[int, list[int]] = {}
    for rid, lab in zip(nodes, labels.tolist()):
        groups.setdefault(lab, []).append(rid)
    clusters = sorted(groups.values(), key=lambda g: g[0])
    overlap: dict[tuple[int, int], int] = {}
    for ci, members in enumerate(clusters):
        for r in members:
            c = old[r]
            if c >= 0:
                overlap[(ci, c)] = overlap.get((ci, c), 0) + 1
    assigned: dict[int, int] = {}
    taken: set[int] = set()
    for (ci, c), _cnt in sorted(overlap.items(), key=lambda kv: (-kv[1], kv[0][1], kv[0][0])):
        if ci not in assigned and c not in taken:
            assigned[ci] = c
            taken.add(c)
    next_id = int(meta_get(conn, "next_cluster_id"))
    updates: list[tuple[int, int]] = []
    changes: list[tuple[int, str, int, int | None, int]] = []
    moved: dict[tuple[int, int], int] = {}  # (old id, new id) -> records
    for ci, members in enumerate(clusters):
        if ci not in assigned:
            assigned[ci] = next_id
            next_id += 1
            stats["new_clusters"] += 1
            changes.append((seq, "created", assigned[ci], None, len(members)))
        new = assigned[ci]
        for r in members:
            if old[r] != new:
                updates.append((new, r))
                if old[r] >= 0:
                    moved[(old[r], new)] = moved.get((old[r], new), 0) + 1
    for (c, new), cnt in sorted(moved.items()):
        kind = "merged" if c not in taken else "split"
        stats[kind] += 1
        changes.append((seq, kind, c, new, cnt))
    gone = set((removed_ids or {}).values()) - taken - {c for c, _ in moved}
    for c in sorted(gone):
        left = conn.execute("SELECT COUNT(*) FROM records WHERE cluster = ?", (c,)).fetchone()[0]
        if left == 0:
            stats["retired"] += 1
            changes.append((seq, "retired", c, None, sum(1 for v in (removed_ids or {}).values() if v == c)))
    stats["ids_changed"] = sum(1 for new, r in updates if old[r] >= 0)
    conn.executemany("UPDATE records SET cluster = ? WHERE rid = ?", updates)
    conn.executemany("INSERT INTO cluster_changes(seq, kind, cluster, survivor, records) VALUES (?, ?, ?, ?, ?)", changes)
    meta_set(conn, "next_cluster_id", str(next_id))
    return stats


def cluster_changes(before: dict[int, int], after: dict[int, int]) -> dict[str, int]:
    """How two clusterings of the same records differ: ``clusters_changed`` (clusters of ``after`` whose set of
    records no cluster of ``before`` had), ``clusters_before`` / ``clusters_after`` and ``records_moved`` (records
    whose cluster id changed)."""

    def groups(labels: dict[int, int]) -> set[frozenset[int]]:
        by: dict[int, set[int]] = {}
        for rid, c in labels.items():
            by.setdefault(c, set()).add(rid)
        return {frozenset(g) for g in by.values()}

    old, new = groups(before), groups(after)
    return {
        "clusters_before": len(old),
        "clusters_after": len(new),
        "clusters_changed": len(new - old),
        "records_moved": sum(1 for rid, c in after.items() if before.get(rid) != c),
    }


__all__ = ["cluster_changes", "component", "recluster"]
