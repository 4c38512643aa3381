"""The cluster stage and the answer: the pairs a job reports, the exact copies listed with every pair among them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import SourceAware, ability
from er_framework.config.resolve import Job
from er_framework.data import Pairs
from er_framework.engine.engine import Engine
from er_framework.engine.stages.exact import Exact, exact_groups
from er_framework.engine.stages.verification import with_exact
from er_framework.errors import ErError, InputError, Problem
from er_framework.kernels import pairs_in_groups
from er_framework.kernels.graph import canonical_labels
from er_framework.kernels.groups import cross_group_pairs
from er_framework.memory import available_memory, size_text

__all__ = ["ANSWER_MEMORY_SHARE", "ANSWER_PAIR_BYTES", "Answer", "answer", "cluster", "cluster_stats"]

Int64Array = npt.NDArray[np.int64]


def cluster(engine: Engine, n: int, pairs: Pairs, source: npt.NDArray[np.int32] | None = None) -> Int64Array:
    """The job's clusterer over the verified pairs: canonical labels (0, 1, … in order of first record).

    In link mode a :class:`~er_framework.capabilities.SourceAware` clusterer is given ``source`` (every
    record's source index) through ``cluster_sources``; other clusterers, and every clusterer in the other
    modes, through ``cluster``."""
    aware = ability(engine.clusterer, SourceAware)
    if aware is not None and engine.link and source is not None:
        raw = np.asarray(aware.cluster_sources(n, pairs, source))
    else:
        raw = np.asarray(engine.clusterer.cluster(n, pairs))
    if raw.shape != (n,):
        raise ErError(f"clusterer {engine.distribution(engine.clusterer)} returned {raw.shape} labels for {n} records")
    return canonical_labels(raw)


def cluster_stats(labels: Int64Array) -> dict[str, int]:
    """Counts of the clusters for the report."""
    counts = np.bincount(labels) if len(labels) else np.zeros(0, dtype=np.int64)
    return {
        "count": int(len(counts)),
        "singletons": int((counts == 1).sum()),
        "largest": int(counts.max()) if len(counts) else 0,
        "records_in_multi_record_clusters": int(counts[counts > 1].sum()),
        # the record pairs the clusters put together (k (k - 1) / 2 per cluster of k)
        "pairs": int((counts * (counts - 1) // 2).sum()),
    }


# ------------------------------------------------------------------ answer: the pairs a job reports


#: bytes of memory one listed pair costs until it is written (indices, score, the table's id columns)
ANSWER_PAIR_BYTES = 64
#: the listed pairs may take this share of the memory still available
ANSWER_MEMORY_SHARE = 0.4


@dataclass
class Answer:
    """The pairs a job reports (``pairs.csv``, ``Result.pairs``), global indices, normalized, scored."""

    pairs: Pairs
    #: with a clusterer that selects pairs (``one_to_one``): every verified pair before it (``verified_pairs.csv``)
    verified: Pairs | None
    stats: dict[str, Any]


def answer(job: Job, exact: Exact, verified: Pairs, labels: Int64Array, selects_pairs: bool) -> Answer:
    """The pairs the job reports: every pair at or above the threshold after the job's last step.

    Exact copies collapsed onto a representative (dedup modes) are listed
    with every pair among them (score 1.0), and each verified pair of a
    representative with every copy on either side (the copies' text is the
    representative's, so is their score): a group of k copies gives
    k (k - 1) / 2 pairs, a near-duplicate of it k more. ``output:
    {exact_pairs: star}`` lists each group as a star around its
    representative and pairs near-duplicates with the representative only
    (groups too large to list); the report counts the pairs either way. A
    clusterer that selects pairs (``one_to_one``) reports the pairs inside
    its clusters, the final links; the verified pairs before it go to
    ``verified``.
    """
    n = len(labels)
    group_of, starts, sizes, members = exact_groups(exact, n)
    vs = verified.score if verified.score is not None else np.ones(len(verified))
    within = sizes * (sizes - 1) // 2
    implied = int(within.sum()) + int((sizes[group_of[verified.left]] * sizes[group_of[verified.right]]).sum())
    mode = job.spec.output.exact_pairs
    stats: dict[str, Any] = {"exact_pairs": mode, "pairs_with_every_copy": implied}
    if mode == "star" or not exact.stats.get("records_collapsed", 0):
        listed = with_exact(verified, exact.pairs)
    else:
        avail = available_memory()
        if avail is not None and implied * ANSWER_PAIR_BYTES > ANSWER_MEMORY_SHARE * avail:
            raise InputError(
                Problem(
                    where=str(job.config_path),
                    path="output.exact_pairs",
                    message=f"listing every pair of the exact copies gives {implied:,} pairs "
                    f"(~{size_text(implied * ANSWER_PAIR_BYTES)}): more than this process can hold "
                    f"({size_text(avail)} of memory available)",
                    fix="set output: {exact_pairs: star} to list each group of copies as a star around its first record "
                    "(the report still counts every pair)",
                )
            )
        left, right = pairs_in_groups(members, starts, sizes)
        x, y, p = cross_group_pairs(group_of[verified.left], group_of[verified.right], starts, sizes, members)
        listed = Pairs(np.concatenate([left, x]), np.concatenate([right, y]), np.concatenate([np.ones(len(left)), vs[p]])).normalized()
    kept = listed
    if selects_pairs:
        kept = listed.select(labels[listed.left] == labels[listed.right])
        stats["verified_pairs_listed"] = int(len(listed))
    stats["pairs_listed"] = int(len(kept))
    stats["pairs_across_clusters"] = int((labels[kept.left] != labels[kept.right]).sum())
    return Answer(kept, listed if selects_pairs else None, stats)
