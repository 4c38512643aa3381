"""The Dask executor's read phase with a client that holds O(partitions): each partition is read and
normalized on a worker, which keeps its ids and exact-text keys; the client gathers each partition's record
count and normalize statistics only, and numbers the records by partition offsets (global index = position
in source order, as the local executor numbers them).

Two shuffles run on the workers (:mod:`er_framework.executors.dask` describes the plan):

* **ids** — every ``(source, id)`` is sent to the part of its id's digest; a part finds the ids it holds
  more than once and returns their count and a few examples (the client raises one error naming them).
* **exact duplicates** — every non-empty record's ``(key, global index, source)`` is sent to the part of
  its key; a part groups equal keys as :func:`~er_framework.engine.stages.exact.exact_groups_from_keys`
  does on all records (each key lives in one part, so the groups and their statistics are the same) and
  gives the exact pairs and, per input partition, the records it collapsed; each partition's *active*
  records are then its records minus those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.engine import stages
from er_framework.executors.dask_stats import ReadStats, read_with_stats
from er_framework.executors.dask_tasks import Int64Array, JobRef, Part, engine
from er_framework.kernels import pairs_in_groups
from er_framework.kernels.digests import text_digests
from er_framework.kernels.groups import pack_pairs
from er_framework.kernels.hashing import mix64

__all__ = [
    "EXACT_STATS",
    "ExactPart",
    "ScanPart",
    "ID_EXAMPLES",
    "scan_summary",
    "task_active",
    "task_exact_pairs_split",
    "task_exact_part",
    "task_exact_split",
    "task_find_ids",
    "task_id_check",
    "task_id_split",
    "task_ids",
    "task_read_stats",
    "task_representatives",
    "task_scan",
]

#: the exact-duplicate stage's counts, summed over the parts (each group of copies lives in one part)
EXACT_STATS = ("groups", "records_in_groups", "records_collapsed", "pairs")

#: duplicate ids a part names in its error (the count is exact)
ID_EXAMPLES = 5


@dataclass
class ScanPart:
    """One partition as read (a task result that stays on its worker): ids, exact-text keys, normalize stats."""

    ids: npt.NDArray[Any]  # object array of str
    keys: npt.NDArray[np.uint64]
    nonempty: npt.NDArray[np.bool_]
    stats: dict[str, Any] = field(default_factory=dict)
    #: the reader's and the HTML extraction's statistics, and the hashes of the distinct values of each field
    read: ReadStats | None = None


def task_scan(ref: JobRef, part: Part) -> ScanPart:
    """Ids, exact-duplicate keys, normalize stats (per field) and the reading statistics of a partition."""
    recs, stats, read = read_with_stats(ref, part)
    keys, nonempty = stages.exact_keys(recs, engine(ref).job.exact.normalize)
    return ScanPart(np.asarray(recs.ids, dtype=object), keys, nonempty, stats, read)


def scan_summary(scan: ScanPart) -> tuple[int, dict[str, Any]]:
    """What the client keeps of a partition: its record count and normalize stats."""
    return len(scan.ids), scan.stats


def task_read_stats(scan: ScanPart) -> ReadStats:
    """The partition's :class:`~er_framework.executors.dask_stats.ReadStats`."""
    assert scan.read is not None
    return scan.read


def task_ids(scan: ScanPart) -> npt.NDArray[Any]:
    """The partition's ids (kept on the workers for the written tables)."""
    return scan.ids


def _dest(digests: npt.NDArray[np.uint64], n_out: int) -> Int64Array:
    return (mix64(digests) % np.uint64(max(1, n_out))).astype(np.int64)


def task_id_split(scan: ScanPart, source: int, n_out: int) -> list[tuple[npt.NDArray[np.int32], npt.NDArray[Any]]]:
    """The partition's ``(source, id)`` sent by the digest of the id (the same id of a source meets in one part)."""
    ids = scan.ids
    dest = _dest(text_digests([str(i) for i in ids]), n_out) if len(ids) else np.zeros(0, np.int64)
    src = np.full(len(ids), source, dtype=np.int32)
    return [(src[dest == j], ids[dest == j]) for j in range(n_out)]


def task_id_check(*pieces: tuple[npt.NDArray[np.int32], npt.NDArray[Any]]) -> tuple[int, list[tuple[int, str]]]:
    """The ``(source, id)`` held more than once in one part: their number and the first few (sorted)."""
    seen: set[tuple[int, str]] = set()
    dup: set[tuple[int, str]] = set()
    for src, ids in pieces:
        for key in zip(src.tolist(), ids.tolist()):
            if key in seen:
                dup.add(key)
            else:
                seen.add(key)
    return len(dup), sorted(dup)[:ID_EXAMPLES]


def task_exact_split(scan: ScanPart, offset: int, source: int, n_out: int) -> list[tuple[npt.NDArray[np.uint64], Int64Array, Int64Array]]:
    """The partition's non-empty records as ``(key, global index, source)``, sent by key."""
    rows = np.flatnonzero(scan.nonempty).astype(np.int64)
    keys = scan.keys[rows]
    gidx = rows + offset
    src = np.full(len(rows), source, dtype=np.int64)
    dest = _dest(keys, n_out) if len(keys) else np.zeros(0, np.int64)
    return [(keys[dest == j], gidx[dest == j], src[dest == j]) for j in range(n_out)]


@dataclass
class ExactPart:
    """What one part of the exact shuffle found: its exact pairs (global indices, left < right, score 1.0),
    the records it collapsed per input partition (global indices, sorted) and its :data:`EXACT_STATS`."""

    left: Int64Array
    right: Int64Array
    collapsed: list[Int64Array]
    stats: Int64Array


def task_exact_part(collapse: bool, offsets: Int64Array, *pieces: tuple[npt.NDArray[np.uint64], Int64Array, Int64Array]) -> ExactPart:
    """The groups of equal keys of one part, as :func:`exact_groups_from_keys` forms them on every record.

    ``collapse`` (dedup modes): each group is a star around its smallest index, the others collapsed;
    otherwise (link mode) every cross-source pair of a group, nothing collapsed."""
    keys = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.uint64)
    gidx = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    src = np.concatenate([p[2] for p in pieces]) if pieces else np.zeros(0, np.int64)
    order = np.lexsort((gidx, keys))
    keys, members, src = keys[order], gidx[order], src[order]
    n = len(keys)
    new = np.ones(n, dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(new).astype(np.int64)
    sizes = np.diff(np.append(starts, np.int64(n))).astype(np.int64)
    multi = sizes >= 2
    n_parts = len(offsets) - 1
    if collapse:
        group_of = np.cumsum(new) - 1
        rep = members[starts[group_of]] if n else np.zeros(0, np.int64)
        dup = members != rep
        left, right = rep[dup], members[dup]
        gone = np.sort(right)
        owner = np.searchsorted(offsets, gone, side="right") - 1
        collapsed = [gone[owner == i] for i in range(n_parts)]
    else:
        pl, pr = pairs_in_groups(np.arange(n, dtype=np.int64), starts[multi], sizes[multi])  # positions
        cross = src[pl] != src[pr]
        left, right = members[pl[cross]], members[pr[cross]]
        collapsed = [np.zeros(0, np.int64) for _ in range(n_parts)]
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    stats = np.array([int(multi.sum()), int(sizes[multi].sum()), int(len(right)) if collapse else 0, int(len(lo))], dtype=np.int64)
    return ExactPart(lo.astype(np.int64), hi.astype(np.int64), collapsed, stats)


def task_exact_pairs_split(part: ExactPart, n_out: int) -> list[npt.NDArray[np.uint64]]:
    """The part's exact pairs packed and sent by pair hash, as the candidate pairs are (each dedup part
    removes the exact pairs among its candidates)."""
    packed = pack_pairs(part.left, part.right) if len(part.left) else np.zeros(0, np.uint64)
    dest = _dest(packed, n_out) if len(packed) else np.zeros(0, np.int64)
    return [packed[dest == j] for j in range(n_out)]


def task_active(count: int, offset: int, *collapsed: Int64Array) -> Int64Array:
    """The partition's active records (numbered within it): every record but those the exact parts collapsed."""
    keep = np.ones(count, dtype=bool)
    for c in collapsed:
        keep[c - offset] = False
    return np.flatnonzero(keep).astype(np.int64)


def task_find_ids(ids: npt.NDArray[Any], offset: int, wanted: list[str]) -> tuple[list[str], Int64Array]:
    """Which of the ``wanted`` ids (of the partition's source) the partition holds, and their global indices."""
    want = set(wanted)
    rows = [k for k, i in enumerate(ids.tolist()) if str(i) in want]
    at = np.asarray(rows, dtype=np.int64)
    return [str(ids[k]) for k in rows], at + offset


def task_representatives(part: ExactPart, wanted: Int64Array) -> tuple[Int64Array, Int64Array]:
    """The wanted records this part collapsed (dedup modes) and the representative of each (its group's
    smallest index: each collapsed copy is one exact pair ``(representative, copy)``)."""
    at = np.isin(part.right, wanted)
    return part.right[at], part.left[at]
