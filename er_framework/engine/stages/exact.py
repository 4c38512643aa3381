"""The exact-duplicate stage: records whose (normalized) texts are equal, collapsed onto one representative
in the dedup modes (the later stages then see only the *active* records), and the groups of copies it found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.config.resolve import Job
from er_framework.data import Pairs, Records
from er_framework.kernels import group_sorted, pairs_in_groups
from er_framework.kernels.digests import normalized_digests, text_digests
from er_framework.kernels.parallel import map_ordered, split_sizes

__all__ = [
    "EXACT_CHUNK_CHARS",
    "Exact",
    "exact_duplicates",
    "exact_from_keys",
    "exact_groups",
    "exact_groups_from_keys",
    "exact_keys",
]

Int64Array = npt.NDArray[np.int64]


#: characters of text normalized and digested per step of the exact-duplicate stage: the stage's
#: memory is a few bytes per character of one step (~5-20 MB), not of the corpus. Steps of 1M characters
#: keep the temporaries small enough for the allocator to reuse them (20,000 documents of ~4,000
#: characters, in-process: 0.17-0.18 s wall, 0.24-0.26 s CPU, against 0.32-0.66 s with steps of 16M
#: characters, whose temporaries were memory new to the process at every step)
EXACT_CHUNK_CHARS = 1 << 20


def exact_keys(
    records: Records, normalize: bool, *, workers: int = 1, chunk_chars: int = EXACT_CHUNK_CHARS
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """``(keys, nonempty)``: the stable 64-bit digest of each record's (normalized) text.

    The key is BLAKE2b-64 of the UTF-8 bytes of :func:`~er_framework.kernels.digests.normalize_text` of the
    text (``normalize``) or of the text as read
    (:mod:`er_framework.kernels.digests`). Records with equal keys are exact
    duplicates; an empty text is nobody's duplicate (``nonempty`` false).
    The corpus goes through in chunks of about ``chunk_chars`` characters
    (texts joined, normalized, digested and dropped one chunk at a time), on
    ``workers`` threads (the kernels release the GIL in their array work and
    while hashing); the keys do not depend on either.
    """
    n = len(records)
    ranges = split_sizes(records.text_sizes() + 1, max(1, chunk_chars)) if n else []

    def chunk(ab: tuple[int, int]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        texts = records.text(rows=slice(*ab))
        if normalize:
            return normalized_digests(texts)
        return text_digests(texts), np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) > 0

    parts = map_ordered(chunk, ranges, workers)
    if not parts:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([k for k, _ in parts]), np.concatenate([e for _, e in parts])


@dataclass
class Exact:
    """What the exact-duplicate stage found."""

    pairs: Pairs  # scored 1.0, global indices, normalized
    active: Int64Array  # records that take part in the later stages
    stats: dict[str, Any]


def exact_groups_from_keys(
    keys: npt.NDArray[np.uint64], nonempty: npt.NDArray[np.bool_], source: npt.NDArray[Any], collapse: bool
) -> Exact:
    """Exact copies from the records' :func:`exact_keys` and sources.

    With ``collapse`` (dedup modes) each group of identical records is linked
    as a star to its first record with score 1.0 and only that
    representative stays active for the later stages. Without ``collapse``
    (link mode) all cross-source pairs inside a group are returned and every
    record stays active (within-source copies are not pairs in link mode, but
    each must still find its near-duplicates in the other source). Empty
    texts are never exact duplicates of each other.
    """
    n = len(keys)
    idx = np.flatnonzero(nonempty).astype(np.int64)
    order, starts, sizes = group_sorted(keys[idx])
    members = idx[order]  # stable sort: ascending record index within each group
    group_of = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    in_group = sizes[group_of] >= 2
    multi = sizes >= 2
    active = np.arange(n, dtype=np.int64)
    stats: dict[str, Any] = {"groups": int(multi.sum()), "records_in_groups": int(sizes[multi].sum())}
    if collapse:
        rep_of = members[starts[group_of]]  # representative = smallest index of the group
        dup = in_group & (members != rep_of)
        pairs = Pairs(rep_of[dup], members[dup], np.ones(int(dup.sum()))).normalized()
        collapsed = np.zeros(n, dtype=bool)
        collapsed[members[dup]] = True
        active = np.flatnonzero(~collapsed).astype(np.int64)
        stats["records_collapsed"] = int(collapsed.sum())
    else:
        left, right = pairs_in_groups(members, starts[multi], sizes[multi])
        cross = source[left] != source[right]
        pairs = Pairs(left[cross], right[cross], np.ones(int(cross.sum()))).normalized()
        stats["records_collapsed"] = 0
    stats["pairs"] = int(len(pairs))
    return Exact(pairs, active, stats)


def exact_duplicates(job: Job, records: Records) -> Exact:
    """The exact-duplicate stage (or its no-op when the job turns it off)."""
    if not job.exact.enabled:
        return exact_from_keys(job, None, None, records.source)
    keys, nonempty = exact_keys(records, job.exact.normalize, workers=job.context.workers)
    return exact_from_keys(job, keys, nonempty, records.source)


def exact_from_keys(
    job: Job, keys: npt.NDArray[np.uint64] | None, nonempty: npt.NDArray[np.bool_] | None, source: npt.NDArray[Any]
) -> Exact:
    """The exact-duplicate stage from the records' :func:`exact_keys` (computed wherever the records were read)."""
    if job.exact.enabled and keys is not None and nonempty is not None:
        found = exact_groups_from_keys(keys, nonempty, source, collapse=job.spec.mode != "link")
    else:
        found = Exact(
            Pairs.empty(scored=True),
            np.arange(len(source), dtype=np.int64),
            {"groups": 0, "records_in_groups": 0, "records_collapsed": 0, "pairs": 0},
        )
    found.stats["enabled"] = job.exact.enabled
    return found


def exact_groups(exact: Exact, n: int) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array]:
    """The groups of exact copies that the exact-duplicate stage collapsed, every record in one group
    (a record without copies alone): ``(group_of, starts, sizes, members)``; group ``g`` is
    ``members[starts[g] : starts[g] + sizes[g]]`` in record order, its representative first."""
    rep_of = np.arange(n, dtype=np.int64)
    if exact.stats.get("records_collapsed", 0):
        # collapsed copies are linked as a star to their representative, the group's smallest index
        rep_of[exact.pairs.right] = exact.pairs.left
    members, starts, sizes = group_sorted(rep_of)
    group_of = np.empty(n, dtype=np.int64)
    group_of[rep_of[members[starts]]] = np.arange(len(starts), dtype=np.int64)
    return group_of[rep_of], starts, sizes, members
