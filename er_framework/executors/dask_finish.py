"""The Dask executor's client side after verification: the answer's pair tables built on the workers
(:mod:`er_framework.executors.dask_answer`), each a list of futures, one per input partition, whose rows in
partition order are the local executor's rows; the client keeps counts only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from er_framework.executors.dask_answer import (
    task_expand,
    task_group_split,
    task_lookup,
    task_range_split,
    task_requests,
    task_route,
    task_sort_part,
    task_table,
    task_widths,
    task_within,
    task_within_count,
)

__all__ = ["AnswerParts", "answer_parts", "edge_parts", "pair_tables"]


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


@dataclass
class AnswerParts:
    """The pairs a run lists, as table parts (futures of column dicts, one per input partition), and the
    answer's statistics (the ``pairs`` section of report.json, as :func:`answer` gives it)."""

    pairs: list[Any]
    #: with a clusterer that selects pairs: every verified pair before it (``verified_pairs``)
    verified: list[Any] | None
    stats: dict[str, Any] = field(default_factory=dict)
    #: the listed pairs before the tables (``(left, right, score)`` futures): the clusters' edges of report.html
    listed: list[Any] = field(default_factory=list)


def edge_parts(run: Any, scanned: Any, verified: list[Any]) -> list[Any]:
    """The graph the clusterer sees: the verified pairs and the exact pairs (score 1.0), as pair parts."""
    return [*verified, *[run.submit(task_within, e, False) for e in scanned.exact_parts]]


def _expanded(run: Any, scanned: Any, verified: list[Any], count_only: bool) -> list[Any]:
    """The verified pairs with every copy of either end (``count_only``: their number carried as a weight)."""
    n = run.n_parts
    task = task_widths if count_only else task_expand
    groups = [run.submit(task_group_split, e, n) for e in scanned.exact_parts]
    pairs = verified
    if count_only:
        pairs = [run.submit(_weights_one, v, retries=0) for v in verified]
    for side in (0, 1):
        routed = [run.submit(task_route, v, side, n) for v in pairs]
        pairs = [
            run.submit(
                task, side, [run.submit(_pick, g, j, retries=0) for g in groups], *[run.submit(_pick, r, j, retries=0) for r in routed]
            )
            for j in range(n)
        ]
    return pairs


def _column(run: Any, split: list[Any], j: int) -> list[Any]:
    """Piece ``j`` of every split future (the inputs of shuffle part ``j``)."""
    return [run.submit(_pick, s, j, retries=0) for s in split]


def _weights_one(pairs: Any) -> Any:
    return pairs[0], pairs[1], np.ones(len(pairs[0]))


def _weight_sum(pairs: Any) -> int:
    return int(np.asarray(pairs[2]).sum())


def _rows_and_across(table: dict[str, Any]) -> tuple[int, int]:
    if "left_cluster" not in table:
        return len(table["score"]), 0
    return len(table["score"]), int(np.count_nonzero(table["left_cluster"] != table["right_cluster"]))


def _same_cluster(table: dict[str, Any]) -> dict[str, Any]:
    keep = table["left_cluster"] == table["right_cluster"]
    return {k: v[keep] for k, v in table.items()}


def answer_parts(run: Any, scanned: Any, verified: list[Any], labels: list[Any] | None, selects_pairs: bool) -> AnswerParts:
    """The answer of :func:`~er_framework.engine.stages.clustering.answer`, on the workers."""
    mode = run.job.spec.output.exact_pairs
    collapsed = scanned.exact_stats.get("records_collapsed", 0) > 0
    every = mode != "star" and collapsed
    within_count = sum(run.client.gather([run.submit(task_within_count, e) for e in scanned.exact_parts])) if collapsed else 0
    if every:
        cross = _expanded(run, scanned, verified, count_only=False)
        listed = [*[run.submit(task_within, e, True) for e in scanned.exact_parts], *cross]
        implied = within_count + sum(run.client.gather([run.submit(_length, c, retries=0) for c in cross]))
    else:
        weighted = _expanded(run, scanned, verified, count_only=True) if collapsed else verified
        implied = within_count + sum(run.client.gather([run.submit(_weight_sum if collapsed else _length, w, retries=0) for w in weighted]))
        listed = [*[run.submit(task_within, e, False) for e in scanned.exact_parts], *verified]
    stats: dict[str, Any] = {"exact_pairs": mode, "pairs_with_every_copy": int(implied)}
    tables = pair_tables(run, scanned, listed, labels)
    kept = [run.submit(_same_cluster, t, retries=0) for t in tables] if selects_pairs else tables
    counted = run.client.gather([run.submit(_rows_and_across, t, retries=0) for t in kept])
    if selects_pairs:
        stats["verified_pairs_listed"] = int(
            sum(r for r, _ in run.client.gather([run.submit(_rows_and_across, t, retries=0) for t in tables]))
        )
    stats["pairs_listed"] = int(sum(r for r, _ in counted))
    stats["pairs_across_clusters"] = int(sum(a for _, a in counted))
    return AnswerParts(kept, tables if selects_pairs else None, stats, listed)


def _length(pairs: Any) -> int:
    return len(pairs[0])


def pair_tables(run: Any, scanned: Any, parts: list[Any], labels: list[Any] | None) -> list[Any]:
    """Pair parts ``(left, right, score)`` as the rows of a pairs table, one part per input partition in the
    local executor's order (sorted by ``(left, right)``), with ids (and each end's cluster with ``labels``)."""
    offsets = scanned.offsets
    n_in = len(run.parts)
    off_f = run.submit(_same, offsets, retries=0)
    names = np.asarray([run.job.spec.sources[p.source].name for p in run.parts], dtype=object)
    split = [run.submit(task_range_split, p, off_f) for p in parts]
    sorted_parts = [run.submit(task_sort_part, *[run.submit(_pick, s, i, retries=0) for s in split]) for i in range(n_in)]
    requests = [run.submit(task_requests, s, off_f) for s in sorted_parts]
    lab = labels if labels is not None else [None] * n_in
    answers = [
        run.submit(task_lookup, scanned.ids[k], lab[k], int(offsets[k]), *[run.submit(_pick, r, k, retries=0) for r in requests])
        for k in range(n_in)
    ]
    return [
        run.submit(
            task_table,
            sorted_parts[i],
            scanned.ids[i],
            lab[i],
            i,
            off_f,
            names,
            requests[i],
            *[run.submit(_pick, a, i, retries=0) for a in answers],
        )
        for i in range(n_in)
    ]


def _same(obj: Any) -> Any:
    return obj
