"""The Dask executor's answer on the workers: the pairs a run lists (:func:`~er_framework.engine.stages.clustering.answer`)
and its pair tables with ids, in the local executor's row order, without the client holding a pair.

* **exact copies** (dedup modes, ``output: {exact_pairs: all}``): every pair within a group of copies is made
  in the exact part that holds the group; each verified pair of representatives is joined with the groups
  of its two ends (two shuffles: by left end, then by right end), giving every copy on either side, as
  :func:`~er_framework.kernels.groups.cross_group_pairs` does with the whole groups. With ``star`` (or in link
  mode) the exact pairs are listed as found.
* **tables**: the listed pairs are sent to the input partition of their left end (a range partition of the
  global order) and sorted there, so the parts in partition order are the local executor's sorted rows; the
  left end's id and cluster are the partition's own, the right end's are asked of the partition holding it
  (one request and one answer per pair of partitions).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.executors.dask_scan import ExactPart
from er_framework.executors.dask_tasks import Int64Array
from er_framework.kernels import pairs_in_groups
from er_framework.kernels.hashing import mix64

__all__ = [
    "PairPart",
    "concat_pairs",
    "task_expand",
    "task_group_split",
    "task_lookup",
    "task_range_split",
    "task_requests",
    "task_route",
    "task_sort_part",
    "task_table",
    "task_widths",
    "task_within",
    "task_within_count",
]

Float64Array = npt.NDArray[np.float64]
#: ``(left, right, score)``: global indices and scores of some pairs
PairPart = tuple[Int64Array, Int64Array, Float64Array]


def _empty() -> PairPart:
    return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)


def concat_pairs(*parts: PairPart) -> PairPart:
    """Several pair parts as one."""
    if not parts:
        return _empty()
    return (
        np.concatenate([p[0] for p in parts]).astype(np.int64),
        np.concatenate([p[1] for p in parts]).astype(np.int64),
        np.concatenate([p[2] for p in parts]).astype(np.float64),
    )


def _groups(rep: Int64Array, member: Int64Array) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array]:
    """Groups of copies from star pairs ``(rep, member)``: ``(reps, starts, sizes, members)``, each group's
    members in index order with its representative (its smallest index) first."""
    reps = np.unique(rep)
    nodes = np.concatenate([reps, member])
    grp = np.concatenate([reps, rep])
    order = np.lexsort((nodes, grp))
    nodes, grp = nodes[order], grp[order]
    new = np.ones(len(grp), dtype=bool)
    new[1:] = grp[1:] != grp[:-1]
    starts = np.flatnonzero(new).astype(np.int64)
    sizes = np.diff(np.append(starts, np.int64(len(grp)))).astype(np.int64)
    return reps, starts, sizes, nodes.astype(np.int64)


def task_within(part: ExactPart, every_pair: bool) -> PairPart:
    """The exact pairs a part lists: with ``every_pair`` every pair within each of its groups of copies,
    otherwise its exact pairs as found (the star, or link mode's cross-source pairs); score 1.0."""
    if not every_pair or len(part.left) == 0:
        return part.left, part.right, np.ones(len(part.left))
    _, starts, sizes, members = _groups(part.left, part.right)
    left, right = pairs_in_groups(members, starts, sizes)
    return left, right, np.ones(len(left))


def _dest(values: Int64Array, n_out: int) -> Int64Array:
    return (mix64(values.astype(np.uint64)) % np.uint64(max(1, n_out))).astype(np.int64)


def task_group_split(part: ExactPart, n_out: int) -> list[tuple[Int64Array, Int64Array]]:
    """The part's star pairs ``(rep, member)`` sent by the hash of the representative."""
    dest = _dest(part.left, n_out)
    return [(part.left[dest == j], part.right[dest == j]) for j in range(n_out)]


def task_route(pairs: PairPart, side: int, n_out: int) -> list[PairPart]:
    """Pairs sent by the hash of their left (``side`` 0) or right (1) end."""
    dest = _dest(np.asarray(pairs[side], dtype=np.int64), n_out)
    return [(pairs[0][dest == j], pairs[1][dest == j], pairs[2][dest == j]) for j in range(n_out)]


def _group_of_ends(
    groups: list[tuple[Int64Array, Int64Array]], end: Int64Array
) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array, npt.NDArray[np.bool_]] | None:
    """The groups of copies given (star pairs) as ``(starts, sizes, members)``, and for each of ``end`` the
    group it would represent (``at``) and whether it does (``hit``); None when there is no group or no end."""
    rep = np.concatenate([g[0] for g in groups]) if groups else np.zeros(0, np.int64)
    member = np.concatenate([g[1] for g in groups]) if groups else np.zeros(0, np.int64)
    if len(rep) == 0 or len(end) == 0:
        return None
    reps, starts, sizes, members = _groups(rep, member)
    at = np.minimum(np.searchsorted(reps, end), len(reps) - 1)
    return starts, sizes, members, at, reps[at] == end


def task_expand(side: int, groups: list[tuple[Int64Array, Int64Array]], *pieces: PairPart) -> PairPart:
    """Each pair whose ``side`` end represents a group of copies, repeated for every member of the group
    (the representative first, then the copies in index order, as :func:`cross_group_pairs` orders them);
    the other pairs as they are. The groups given are those of the representatives sent to this part."""
    left, right, score = concat_pairs(*pieces)
    end = (left, right)[side]
    found = _group_of_ends(groups, end)
    if found is None:
        return left, right, score
    starts, sizes, members, at, hit = found
    width = np.where(hit, sizes[at], 1)
    p = np.repeat(np.arange(len(end), dtype=np.int64), width)
    o = np.arange(len(p), dtype=np.int64) - (np.cumsum(width) - width)[p]
    new_end = np.where(hit[p], members[starts[at[p]] + o], end[p])
    if side == 0:
        return new_end, right[p], score[p]
    return left[p], new_end, score[p]


def _extra(pairs: Any) -> dict[str, npt.NDArray[Any]]:
    """The extra columns a pair part carries (a 4th element: the comparisons' terms), or none."""
    return pairs[3] if len(pairs) > 3 else {}


def _with(pairs: Any, at: Any) -> Any:
    """The rows ``at`` (a mask or positions) of a pair part, with its extra columns."""
    out: tuple[Any, ...] = (pairs[0][at], pairs[1][at], pairs[2][at])
    extra = _extra(pairs)
    return (*out, {k: np.asarray(v)[at] for k, v in extra.items()}) if extra else out


def task_range_split(pairs: Any, offsets: Int64Array) -> list[Any]:
    """Pairs normalized (``left < right``) and sent to the input partition holding their left end (with
    their extra columns)."""
    lo, hi = np.minimum(pairs[0], pairs[1]), np.maximum(pairs[0], pairs[1])
    normal = (lo, hi, pairs[2], *pairs[3:])
    owner = np.searchsorted(offsets, lo, side="right") - 1
    return [_with(normal, owner == i) for i in range(len(offsets) - 1)]


def task_sort_part(*pieces: Any) -> Any:
    """One partition's pairs sorted by ``(left, right)``, self-pairs and repeats dropped (the first score
    kept, as :meth:`~er_framework.data.Pairs.normalized` keeps it), with their extra columns."""
    joined: tuple[Any, ...] = concat_pairs(*pieces)
    extras = [_extra(p) for p in pieces]
    if any(extras):
        names = next(e for e in extras if e)
        # a piece without rows may carry no columns (its task had nothing to compare)
        joined = (*joined, {k: np.concatenate([np.asarray(e[k]) for e in extras if e]) for k in names})
    left, right = joined[0], joined[1]
    keep = np.flatnonzero(left != right)
    order = keep[np.lexsort((right[keep], left[keep]))]
    left, right = left[order], right[order]
    first = np.ones(len(left), dtype=bool)
    first[1:] = (left[1:] != left[:-1]) | (right[1:] != right[:-1])
    return _with(joined, order[first])


def task_requests(pairs: PairPart, offsets: Int64Array) -> list[Int64Array]:
    """The right ends of a partition's pairs, per input partition holding them (unique, sorted)."""
    need = np.unique(pairs[1])
    owner = np.searchsorted(offsets, need, side="right") - 1
    return [need[owner == k] for k in range(len(offsets) - 1)]


def task_lookup(
    ids: npt.NDArray[Any], labels: Int64Array | None, offset: int, *requests: Int64Array
) -> list[tuple[npt.NDArray[Any], Int64Array | None]]:
    """A partition's answer to every partition's request: the ids (and cluster ids) of the records asked for."""
    return [(ids[r - offset], None if labels is None else labels[r - offset]) for r in requests]


def task_table(
    pairs: Any,
    ids: npt.NDArray[Any],
    labels: Int64Array | None,
    part_no: int,
    offsets: Int64Array,
    names: npt.NDArray[Any],
    requested: list[Int64Array],
    *answers: tuple[npt.NDArray[Any], Int64Array | None],
) -> dict[str, Any]:
    """One partition's rows of a pairs table (``left_source, left_id, right_source, right_id, score``) and,
    when cluster ids are given, each end's cluster (``left_cluster``, ``right_cluster``: not written)."""
    left, right, score = pairs[0], pairs[1], pairs[2]
    owner = np.searchsorted(offsets, right, side="right") - 1
    right_ids = np.empty(len(right), dtype=object)
    right_lab = np.zeros(len(right), dtype=np.int64)
    for k, (got_ids, got_lab) in enumerate(answers):
        at = np.flatnonzero(owner == k)
        if len(at) == 0:
            continue
        pos = np.searchsorted(requested[k], right[at])
        right_ids[at] = got_ids[pos]
        if got_lab is not None:
            right_lab[at] = got_lab[pos]
    offset = int(offsets[part_no])  # (an empty partition shares its offset with the next: the number says which)
    table: dict[str, Any] = {
        "left_source": np.full(len(left), names[part_no], dtype=object),
        "left_id": ids[left - offset] if len(left) else np.zeros(0, dtype=object),
        "right_source": names[owner] if len(right) else np.zeros(0, dtype=object),
        "right_id": right_ids,
        **_extra(pairs),
        "score": score,
    }
    if labels is not None:
        table["left_cluster"] = labels[left - offset]
        table["right_cluster"] = right_lab
    return table


def task_widths(side: int, groups: list[tuple[Int64Array, Int64Array]], *pieces: PairPart) -> PairPart:
    """As :func:`task_expand`, counting instead of listing: each pair's third column multiplied by the size
    of the group its ``side`` end represents (``output: {exact_pairs: star}`` counts every pair it does not list)."""
    left, right, weight = concat_pairs(*pieces)
    found = _group_of_ends(groups, (left, right)[side])
    if found is None:
        return left, right, weight
    _, sizes, _, at, hit = found
    return left, right, weight * np.where(hit, sizes[at], 1)


def task_within_count(part: ExactPart) -> int:
    """Pairs within the part's groups of copies: ``k (k - 1) / 2`` per group of ``k``."""
    if len(part.left) == 0:
        return 0
    _, _, sizes, _ = _groups(part.left, part.right)
    return int((sizes * (sizes - 1) // 2).sum())
