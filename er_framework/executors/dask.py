"""Run a job on a Dask cluster (``executor: {type: dask, ...}``) with the local executor's answer.

    executor: {type: dask, address: tcp://scheduler:8786}
    executor: {type: dask, local_cluster: {n_workers: 2}, partition_mb: 64}

Install with ``pip install "er-framework[dask]"``. The plan (every task is a
pure function of the input files and the job, so Dask may run it again on
another worker when one dies):

1. **read** — each source file is split into partitions of ``partition_mb``
   (uncompressed JSONL/CSV/TSV by byte range, on line starts; gzip and Parquet
   files are one partition each). A task reads and normalizes its partition
   and returns only ids and exact-text hashes; the client numbers the records
   (global index = position in source order, as the local executor does),
   checks ids for duplicates across partitions and finds exact duplicates.
2. **block** — per partition: shingles, signatures and the blockers'
   :meth:`~er_framework.capabilities.Keyed.lookup_keys` (bucket ids) of the
   active records, split by bucket id into ``P`` shuffle parts; for a
   blocker with :meth:`~er_framework.capabilities.Windowed.window_keys`
   (sorted neighbourhood) each pass's records sorted by ``(sort key, global
   index)`` with a sample of the keys; the shingler's partition report; the
   partition's bad values (every partition's are reported together).
3. **buckets** — shuffle part ``j`` holds every entry of its buckets, so each
   bucket is processed once: its size first (a blocker's limit on the pairs,
   :meth:`~er_framework.capabilities.LimitedKeys.check_lookup_pairs`, is checked on
   all of them before any pair is made), then pairs of its members (buckets
   over the cap skipped, cross-source only in link mode), split by pair hash
   into ``P``. **windows** — a distributed sort per pass: ``P - 1``
   boundaries from the sampled keys, each partition's sorted run cut into
   ``P`` ranges, one task per range merging its pieces; the pairs of every
   record of a range with the ``window - 1`` records before it in the global
   order (the last ``window - 1`` records of the earlier ranges are carried
   in by a chain of small tasks), split by pair hash as the buckets' pairs.
4. **dedup** — pairs of all bands and blockers meet in one part: unique,
   minus the exact-duplicate pairs; each part lists the records it needs per
   input partition.
5. **verify** — each input partition is read again and serves the records
   each pair part needs (the join by id); the pair part is scored with the
   job's verifier. A verifier fitted on all candidates
   (:meth:`~er_framework.components.Verifier.pair_codes`, fellegi_sunter)
   codes each part's pairs, the client sums the code counts (and those of the
   verifier's sample pairs, drawn over the active records as locally, served
   from the partitions), fits once (``fit_counts``), and the parts look their
   scores up by code.
6. **cluster** — the verified pairs are gathered and clustered on the client
   with the job's clusterer; outputs are written by the client, atomically,
   with the same writer as the local executor (same bytes).

Peak memory of a worker is one partition's records, token sets and keys
plus one shuffle part, not the data size. The client holds ids, one hash
and a few bytes per record, and the verified pairs.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import threading
import time
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import numpy.typing as npt
from numpy.dtypes import StringDType

from er_framework.capabilities import (
    CodeFitted, GroupedKeys, Keyed, LimitedKeys, Partitionable, Reporting, Windowed, ability, has,
)
from er_framework.config.resolve import Job, resolve_job
from er_framework.config.executor_params import ADDRESS_RE, DaskParams, address_problem
from er_framework.config.yaml_load import load_yaml
from er_framework.data import Batch, Pairs, Records
from er_framework.engine import stages
from er_framework.engine.engine import Engine
from er_framework.engine.log import StageLog
from er_framework.engine.model import Model
from er_framework.engine.report import RunFacts, finish_run
from er_framework.engine.result import Result
from er_framework.io.outputs import OutputDir
from er_framework.errors import ErError, InputError, PluginError, Problem
from er_framework.io.source_files import partition_ranges, read_source
from er_framework.kernels.df import DocFreq
from er_framework.kernels.graph import canonical_labels, connected_component_labels
from er_framework.kernels.groups import pack_pairs, pairs_in_groups, unpack_pairs
from er_framework.kernels.hashing import mix64

Int64Array = npt.NDArray[np.int64]

#: test hook: seconds each verify task sleeps (the worker-kill test needs time to kill)
SLOW_ENV = "ER_DASK_TEST_TASK_SECONDS"


@dataclass(frozen=True)
class Part:
    """One input partition: a source file, or a byte range of it."""

    source: int
    path: str
    byte_range: tuple[int, int] | None


@dataclass(frozen=True)
class JobRef:
    """What a worker needs to rebuild the job: the YAML text and where it came from."""

    text: str
    filename: str
    base_dir: str
    digest: str


_JOBS: dict[str, Engine] = {}


def _tune_malloc() -> None:
    """Let glibc serve large numpy temporaries from the heap again on Dask workers.

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``; setting
    any malloc threshold turns off glibc's dynamic mmap threshold, so every
    array above 128 KB is mmapped and unmapped, page-faulting on each use:
    the shingling and signing tasks ran 2.3x slower (measured), and the
    65 KB trim threshold gives pages back after every task. Fixed 64 MB
    thresholds restore the speed; free memory above 64 MB is still returned.
    """
    if sys.platform != "linux":
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 * 2**20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 * 2**20)  # M_TRIM_THRESHOLD: free heap above 64 MB still goes back
    except (OSError, AttributeError):  # not glibc
        pass


def _engine(ref: JobRef) -> Engine:
    """The job's components on this worker (built once per process)."""
    got = _JOBS.get(ref.digest)
    if got is None:
        if os.environ.get("MALLOC_TRIM_THRESHOLD_"):
            _tune_malloc()

        data, lines, problems = load_yaml(ref.text, ref.filename)
        job = resolve_job(data, lines, ref.filename, Path(ref.base_dir), problems, check_files=False,
                          config_path=Path(ref.filename))
        job.context.workers = 1
        got = _JOBS[ref.digest] = Engine(job)
    return got


def _model_engine(ref: JobRef, model: Model | None) -> Engine:
    """The job's engine on this worker applying ``model`` (the client's: the shingles its ``prune`` stage
    dropped, a saved model's fitted state): one engine per model object this worker holds (a new value, the
    job's engine is not changed, so the tasks of its threads need no lock)."""
    eng = _engine(ref)
    if model is None:
        return eng
    key = (ref.digest, id(model))
    got = _MODEL_ENGINES.get(key)
    if got is None or got[0] is not model:
        while len(_MODEL_ENGINES) >= 4:  # models of earlier runs on this worker
            _MODEL_ENGINES.pop(next(iter(_MODEL_ENGINES)))
        got = _MODEL_ENGINES[key] = (model, eng.with_model(model))
    return got[1]


#: (job digest, id of the model) -> (the model, kept alive so that its id stays its own; its engine)
_MODEL_ENGINES: dict[tuple[str, int], tuple[Model, Engine]] = {}


def _read(ref: JobRef, part: Part) -> Records:
    """The partition's records, read and normalized by the engine's stages (as the local executor does)."""
    eng = _engine(ref)
    spec = eng.job.spec.sources[part.source]
    recs = read_source(part.path, where=f"sources[{part.source}]", byte_range=part.byte_range, **spec.read_options())
    stages.html_to_text(eng.job, part.source, recs)
    recs = stages.normalize(eng.job, recs)[0]
    recs.source[:] = part.source
    return recs


# ---------------------------------------------------------------- tasks (run on workers)


def task_scan(ref: JobRef, part: Part) -> tuple[list[str], npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """Ids and exact-duplicate hashes of a partition."""
    recs = _read(ref, part)
    eng = _engine(ref)
    keys, nonempty = stages.exact_keys(recs, eng.job.exact.normalize)
    return recs.ids, keys, nonempty


def task_frequencies(ref: JobRef, part: Part, active_local: Int64Array
                     ) -> tuple[npt.NDArray[np.uint64], Int64Array, int, Int64Array]:
    """``prune_shingles:`` pass 1 on a partition's active records: its shingles' document frequencies
    ``(tokens, df, records)`` and each record's distinct shingles (:func:`stages.shingle_frequencies`)."""
    eng = _engine(ref)
    recs = _read(ref, part).take(active_local)
    freq, sizes, _, _ = stages.shingle_frequencies(eng, recs)
    tokens, df = freq.table()
    return tokens, df, freq.records, sizes


@dataclass
class Blocked:
    """What blocking one input partition gives (a task result; the client picks its pieces)."""

    #: bucket entries ``(keys, global index, source, blocker)`` split into the shuffle parts
    pieces: list[tuple[Int64Array, ...]]
    #: per window pass: the partition's records sorted by ``(key, global index)``: ``(keys, index, source)``
    runs: list[tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]]
    #: per window pass: evenly spaced ``(keys, index)`` of the run, to choose the range boundaries
    samples: list[tuple[npt.NDArray[Any], Int64Array]]
    #: the shingler's report of the partition (:meth:`~er_framework.capabilities.Partitionable.shingle_reported`)
    report: dict[str, Any]
    #: the input problems found in this partition (bad values), reported with every other partition's
    problems: list[Problem]
    #: each blocker's :meth:`~er_framework.capabilities.Keyed.partition_report` (``{}`` for window blockers)
    blocker_reports: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: the partition's token counts, as the local executor counts them: ``(records, empty sets, tokens)``
    tokens: tuple[int, int, int] = (0, 0, 0)
    #: with ``prune_shingles:``, the distinct shingles each active record lost
    lost: Int64Array | None = None


#: sort keys per partition and window pass sent to choose the range boundaries
SAMPLE_KEYS = 64


def task_block(ref: JobRef, part: Part, offset: int, active_local: Int64Array, n_parts: int,
               model: Model | None = None) -> Blocked:
    """Blocking of a partition's active records: bucket ids split into ``n_parts`` shuffle parts, and
    each window pass's records sorted by ``(sort key, global index)`` with a sample of their keys.
    ``model``: the client's model (the shingles ``prune_shingles:`` removes, from its ``prune`` stage)."""
    eng = _model_engine(ref, model)
    try:
        recs = _read(ref, part).take(active_local)
        signed = eng.signed_batch(recs)  # the shingler's report and the lost tokens are values: no lock
        batch, sizes, lost, report = signed.batch, signed.sizes, signed.lost, signed.report or {}
        rows, keys, which = eng.keys(recs, batch)
        group = _lookup_groups(eng, batch, which)
        windows = eng.window_keys(batch)
        blocker_reports = [keyed.partition_report(batch) if (keyed := ability(b, Keyed)) is not None else {}
                           for b in eng.blockers]
    except InputError as exc:  # reported with the other partitions' problems
        return Blocked([], [], [], {}, list(exc.problems))
    gidx = active_local[rows] + offset
    src = np.full(len(rows), part.source, dtype=np.int64)
    dest = (keys.view(np.uint64) % np.uint64(n_parts)).astype(np.int64)
    pieces: list[tuple[Int64Array, ...]] = []
    for j in range(n_parts):
        m = dest == j
        pieces.append((keys[m], gidx[m], src[m], which[m], group[m]))
    runs: list[tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]] = []
    samples: list[tuple[npt.NDArray[Any], Int64Array]] = []
    for _, w_rows, w_keys in windows:
        g = active_local[w_rows] + offset
        order = np.lexsort((g, w_keys))
        k, g = w_keys[order], g[order]
        runs.append((k, g, np.full(len(g), part.source, dtype=np.int32)))
        pick = np.unique(np.linspace(0, len(g) - 1, min(SAMPLE_KEYS, len(g))).astype(np.int64))
        samples.append((k[pick], g[pick]))
    tokens = (int(len(sizes)), int(np.count_nonzero(sizes == 0)), int(sizes.sum()))
    return Blocked(pieces, runs, samples, report, [], blocker_reports, tokens, lost)


def _lookup_groups(eng: Engine, batch: Batch, which: Int64Array) -> Int64Array:
    """The group of every entry of :meth:`Engine.keys` (``which``: their blockers, each blocker's entries
    together): the blocker's :meth:`~er_framework.capabilities.GroupedKeys.lookup_groups`, 0 without groups."""
    groups = np.zeros(len(which), np.int64)
    for i, b in enumerate(eng.blockers):
        grouped = ability(b, GroupedKeys)
        if grouped is None:
            continue
        at = np.flatnonzero(which == i)
        g: Any = grouped.lookup_groups(batch)
        if g is None or len(g) != len(at):
            raise PluginError(Problem(where="blocker", message=f"blocker {eng.distribution(b)}: lookup_groups gave "
                                      f"{'no' if g is None else len(g)} groups for {len(at)} lookup keys"))
        groups[at] = np.asarray(g, dtype=np.int64)
    return groups


def task_bounds(samples: list[tuple[npt.NDArray[Any], Int64Array]], n_ranges: int) -> tuple[npt.NDArray[Any], Int64Array]:
    """``n_ranges - 1`` boundaries ``(key, global index)`` of a window pass, evenly spaced among the sampled keys."""
    if not samples:
        return np.zeros(0, dtype=StringDType()), np.zeros(0, np.int64)
    keys = np.concatenate([s[0] for s in samples])
    gidx = np.concatenate([s[1] for s in samples])
    order = np.lexsort((gidx, keys))
    m = len(order)
    at = np.array([m * r // n_ranges for r in range(1, n_ranges)], dtype=np.int64) if m else np.zeros(0, np.int64)
    return keys[order[at]], gidx[order[at]]


def _lower_bound(keys: npt.NDArray[Any], gidx: Int64Array, key: str, g: int) -> int:
    """First position of a run sorted by ``(key, index)`` holding ``(key, g)`` or more.

    A binary search with Python comparisons of the keys (code-point order, as
    numpy sorts them): numpy's ``searchsorted`` fails on ``StringDType``
    arrays holding strings longer than 15 bytes (numpy 2.4).
    """
    lo, hi = 0, len(keys)
    while lo < hi:  # O(log n) steps per boundary
        mid = (lo + hi) // 2
        k = keys[mid]
        if k < key or (k == key and int(gidx[mid]) < g):
            lo = mid + 1
        else:
            hi = mid
    return lo


def task_split(run: tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]],
               bounds: tuple[npt.NDArray[Any], Int64Array], n_ranges: int,
               ) -> list[tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]]:
    """A partition's sorted run cut at the pass's boundaries: one piece per range of the global order
    (the last ranges empty when the pass has fewer boundaries: no record has its keys)."""
    keys, gidx, src = run
    cuts = [0] + [_lower_bound(keys, gidx, k, int(g)) for k, g in zip(bounds[0].tolist(), bounds[1].tolist())]
    cuts += [len(gidx)] * (n_ranges + 1 - len(cuts))
    return [(keys[a:b], gidx[a:b], src[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def task_range(*pieces: tuple[npt.NDArray[Any], Int64Array, npt.NDArray[np.int32]]) -> tuple[Int64Array, npt.NDArray[np.int32]]:
    """One range of a pass's global order: ``(global index, source)`` of its records sorted by ``(key, index)``."""
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    keys = np.concatenate([p[0] for p in pieces])
    gidx = np.concatenate([p[1] for p in pieces])
    src = np.concatenate([p[2] for p in pieces])
    order = np.lexsort((gidx, keys))
    return gidx[order], src[order]


def task_carry(carry: tuple[Int64Array, npt.NDArray[np.int32]], rng: tuple[Int64Array, npt.NDArray[np.int32]],
               keep: int) -> tuple[Int64Array, npt.NDArray[np.int32]]:
    """The last ``keep`` records of the global order up to the end of ``rng`` (``carry``: those before it)."""
    g = np.concatenate([carry[0], rng[0]])
    s = np.concatenate([carry[1], rng[1]])
    return g[len(g) - min(keep, len(g)) :], s[len(s) - min(keep, len(s)) :]


def task_windows(rng: tuple[Int64Array, npt.NDArray[np.int32]], carry: tuple[Int64Array, npt.NDArray[np.int32]],
                 window: int, link: bool, blocker: int, n_parts: int) -> list[tuple[npt.NDArray[np.uint64], Int64Array]]:
    """Pairs of every record of a range with the ``window - 1`` records before it in the global order
    (``carry`` holds those of earlier ranges), unique, split by pair hash into ``n_parts``."""
    g = np.concatenate([carry[0], rng[0]])
    s = np.concatenate([carry[1], rng[1]])
    c = len(carry[0])
    packed: list[npt.NDArray[np.uint64]] = []
    for d in range(1, window):  # one whole-array step per offset: the later record is in this range
        b0 = max(c, d)
        if b0 >= len(g):  # no record of this range has a record d places before it
            break
        a, b = g[b0 - d : len(g) - d], g[b0:]
        if link:
            cross = s[b0 - d : len(s) - d] != s[b0:]
            a, b = a[cross], b[cross]
        if len(a):
            packed.append(pack_pairs(np.minimum(a, b), np.maximum(a, b)))
    keys = np.unique(np.concatenate(packed)) if packed else np.zeros(0, np.uint64)
    dest = (mix64(keys) % np.uint64(n_parts)).astype(np.int64)
    tag = np.full(len(keys), blocker, dtype=np.int64)
    return [(keys[dest == j], tag[dest == j]) for j in range(n_parts)]


#: per group of a blocker with :meth:`~er_framework.capabilities.GroupedKeys.lookup_groups`: its buckets, those
#: with 2 or more members, the largest, the pairs of the kept ones (cross-source only in link mode), the
#: oversized ones, their members and their pairs (cross-source only in link mode); all sums but the largest
GROUP_STATS = ("distinct", "buckets", "largest_bucket", "pairs", "oversized_buckets", "oversized_records",
               "oversized_pairs")


@dataclass
class Buckets:
    """The buckets of one shuffle part: entries sorted by (bucket id, global index), the runs kept
    (2 or more members, within their blocker's cap), and per blocker the statistics of
    :data:`BUCKET_STATS` (summed over the parts, the largest bucket the maximum)."""

    keys: Int64Array
    gidx: Int64Array
    src: Int64Array
    which: Int64Array
    starts: Int64Array
    sizes: Int64Array
    use: npt.NDArray[np.bool_]
    stats: Int64Array  # (blockers, len(BUCKET_STATS))
    #: of the blockers with groups: ``(blocker, group, *GROUP_STATS)`` per group present in this part
    group_stats: Int64Array = dataclasses.field(default_factory=lambda: np.zeros((0, 2 + len(GROUP_STATS)), dtype=np.int64))
    #: of the blockers with groups: ``(blocker, group, size, first member's global index)`` per oversized bucket
    oversized: Int64Array = dataclasses.field(default_factory=lambda: np.zeros((0, 4), dtype=np.int64))


#: per blocker: buckets with 2 or more members, the largest, those over the cap and their pairs, the kept pairs
BUCKET_STATS = ("buckets", "largest_bucket", "oversized_buckets", "pairs_skipped", "raw_pairs")


def task_bucket_sort(ref: JobRef, pieces: list[tuple[Int64Array, ...]]) -> Buckets:
    """Every bucket of one shuffle part (each bucket lies in one part), sized before any pair is made."""
    eng = _engine(ref)
    caps = eng.caps()
    keys = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.int64)
    gidx = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    src = np.concatenate([p[2] for p in pieces]) if pieces else np.zeros(0, np.int64)
    which = np.concatenate([p[3] for p in pieces]) if pieces else np.zeros(0, np.int64)
    group = np.concatenate([p[4] for p in pieces]) if pieces else np.zeros(0, np.int64)
    order = np.lexsort((gidx, keys))
    keys, gidx, src, which, group = keys[order], gidx[order], src[order], which[order], group[order]
    n = len(keys)
    new = np.ones(n, dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(new).astype(np.int64)
    sizes = np.diff(np.append(starts, np.int64(n))).astype(np.int64)
    cap = np.array([c if c is not None else np.iinfo(np.int64).max for c in caps], dtype=np.int64)
    use = sizes >= 2
    use[use] &= sizes[use] <= cap[which[starts[use]]]
    owner = which[starts]
    nb = len(caps)
    pairs = sizes * (sizes - 1) // 2
    over = sizes > cap[owner]
    stats = np.zeros((nb, len(BUCKET_STATS)), dtype=np.int64)
    stats[:, 0] = np.bincount(owner[sizes >= 2], minlength=nb)
    np.maximum.at(stats[:, 1], owner, sizes)
    stats[:, 2] = np.bincount(owner[over], minlength=nb)
    stats[:, 3] = np.bincount(owner[over], weights=pairs[over], minlength=nb).astype(np.int64)
    stats[:, 4] = np.bincount(owner[use], weights=pairs[use], minlength=nb).astype(np.int64)
    grouped = np.array([has(b, GroupedKeys) for b in eng.blockers], dtype=bool)
    if not grouped.any():
        return Buckets(keys, gidx, src, which, starts, sizes, use, stats)
    # pairs each bucket makes: all of them, or in link mode those of members of different sources
    # (entries sorted by global index within a bucket, so each source's members are one run)
    made = pairs
    if eng.link and n:
        sub = new.copy()
        sub[1:] |= src[1:] != src[:-1]
        sub_starts = np.flatnonzero(sub)
        sub_sizes = np.diff(np.append(sub_starts, np.int64(n))).astype(np.int64)
        same = np.bincount(np.cumsum(new)[sub_starts] - 1, weights=sub_sizes * (sub_sizes - 1) // 2,
                           minlength=len(starts)).astype(np.int64)
        made = pairs - same
    sel = np.flatnonzero(grouped[owner])
    b_own, b_grp = owner[sel], group[starts[sel]]
    cells, inv = np.unique(np.stack([b_own, b_grp], axis=1), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    s_sel, o_sel, u_sel = sizes[sel], over[sel], use[sel]
    g_stats = np.zeros((len(cells), len(GROUP_STATS)), dtype=np.int64)
    k = len(cells)
    g_stats[:, 0] = np.bincount(inv, minlength=k)
    g_stats[:, 1] = np.bincount(inv[s_sel >= 2], minlength=k)
    np.maximum.at(g_stats[:, 2], inv, s_sel)
    g_stats[:, 3] = np.bincount(inv[u_sel], weights=made[sel][u_sel], minlength=k).astype(np.int64)
    g_stats[:, 4] = np.bincount(inv[o_sel], minlength=k)
    g_stats[:, 5] = np.bincount(inv[o_sel], weights=s_sel[o_sel], minlength=k).astype(np.int64)
    g_stats[:, 6] = np.bincount(inv[o_sel], weights=made[sel][o_sel], minlength=k).astype(np.int64)
    ov = sel[o_sel]
    oversized = np.stack([owner[ov], group[starts[ov]], sizes[ov], gidx[starts[ov]]], axis=1).astype(np.int64).reshape(-1, 4)
    return Buckets(keys, gidx, src, which, starts, sizes, use, stats,
                   np.concatenate([cells.astype(np.int64).reshape(-1, 2), g_stats], axis=1), oversized)


def _bucket_stats(buckets: Buckets) -> Int64Array:
    return buckets.stats


def _group_parts(buckets: Buckets) -> tuple[Int64Array, Int64Array]:
    return buckets.group_stats, buckets.oversized


def _merge_bucket_stats(parts: list[Int64Array], n_blockers: int) -> Int64Array:
    """Every part's bucket statistics combined: sums, the largest bucket the maximum."""
    if not parts:
        return np.zeros((n_blockers, len(BUCKET_STATS)), dtype=np.int64)
    out: Int64Array = np.sum(np.stack(parts), axis=0).astype(np.int64)
    out[:, 1] = np.stack([p[:, 1] for p in parts]).max(axis=0)
    return out


def task_buckets(ref: JobRef, buckets: Buckets, n_parts: int) -> list[tuple[npt.NDArray[np.uint64], Int64Array]]:
    """Pairs of every bucket of one shuffle part, unique per blocker, with their blocker, split by pair hash into ``n_parts``."""
    eng = _engine(ref)
    gidx, src, which, starts, sizes, use = buckets.gidx, buckets.src, buckets.which, buckets.starts, buckets.sizes, buckets.use
    left, right = pairs_in_groups(gidx, starts[use], sizes[use])
    group_size = sizes[use]
    blocker = np.repeat(which[starts[use]], group_size * (group_size - 1) // 2)
    keep = left != right
    if eng.link:  # cross-source pairs only
        u, first = np.unique(gidx, return_index=True)
        src_u = src[first]
        keep &= src_u[np.searchsorted(u, left)] != src_u[np.searchsorted(u, right)]
    left, right, blocker = left[keep], right[keep], blocker[keep]
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    packed = pack_pairs(lo, hi)
    both = np.unique(np.stack([packed, blocker.astype(np.uint64)], axis=1), axis=0) if len(packed) else np.zeros((0, 2), np.uint64)
    packed, blocker = both[:, 0], both[:, 1].astype(np.int64)
    dest = (mix64(packed) % np.uint64(n_parts)).astype(np.int64)
    return [(packed[dest == j], blocker[dest == j]) for j in range(n_parts)]


def task_dedup(pieces: list[tuple[npt.NDArray[np.uint64], Int64Array]], exact: npt.NDArray[np.uint64], offsets: Int64Array,
               n_blockers: int) -> tuple[npt.NDArray[np.uint64], list[Int64Array], Int64Array]:
    """Unique candidate pairs of one part (exact pairs removed), the records needed per input partition,
    and each blocker's count of distinct pairs in this part (before the exact pairs are removed, as locally)."""
    packed = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.uint64)
    blocker = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    per_blocker = np.array([len(np.unique(packed[blocker == b])) for b in range(n_blockers)], dtype=np.int64)
    packed = np.unique(packed)
    if len(exact):
        packed = packed[~np.isin(packed, exact)]
    left, right = unpack_pairs(packed)
    need = np.unique(np.concatenate([left, right]))
    owner = np.searchsorted(offsets, need, side="right") - 1
    return packed, [need[owner == i] for i in range(len(offsets) - 1)], per_blocker


def task_serve(ref: JobRef, part: Part, offset: int, wanted: list[Int64Array]) -> list[Records]:
    """The records of this partition that each pair part needs (the join by id)."""
    recs = _read(ref, part)
    return [recs.take(w - offset) for w in wanted]


def task_verify(ref: JobRef, packed: npt.NDArray[np.uint64], served: list[Records], needed: list[Int64Array],
                model: Model | None = None,
                ) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64], int, npt.NDArray[np.float64]]:
    """Scores of one part's candidate pairs: the pairs at or above the threshold, the candidate count,
    and (link modes, for the report's link answer) every candidate's score in ``packed`` order."""
    slow = os.environ.get(SLOW_ENV)
    if slow:
        time.sleep(float(slow))
    eng = _model_engine(ref, model)
    recs, left, right, li, ri = _join(packed, served, needed)
    scores = eng.score(recs, Pairs(li, ri))
    keep = eng.keep(scores)
    all_scores = scores if eng.mode != "dedup" or eng.auto else np.zeros(0)
    return left[keep], right[keep], scores[keep], int(len(packed)), all_scores


def _join(packed_or_pairs: Any, served: list[Records], needed: list[Int64Array],
          ) -> tuple[Records, Int64Array, Int64Array, Int64Array, Int64Array]:
    """The records served for a part, and each pair's two rows among them: ``(records, left, right, li, ri)``."""
    if isinstance(packed_or_pairs, tuple):
        left, right = packed_or_pairs
    else:
        left, right = unpack_pairs(packed_or_pairs)
    gids = np.concatenate(needed) if needed else np.zeros(0, np.int64)
    recs = Records.stack(served)
    order = np.argsort(gids, kind="stable")
    g_sorted = gids[order]
    return recs, left, right, order[np.searchsorted(g_sorted, left)], order[np.searchsorted(g_sorted, right)]


def task_codes(ref: JobRef, pairs: Any, served: list[Records], needed: list[Int64Array],
               model: Model | None = None) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64]]:
    """A fitted verifier's code of every pair of one part (packed pairs, or ``(left, right)`` in their
    orientation), and the part's distinct codes with their counts (summed over the parts by the client)."""
    eng = _model_engine(ref, model)
    recs, left, _, li, ri = _join(pairs, served, needed)
    codes = eng.codes(recs, Pairs(li, ri)) if len(left) else np.zeros(0, np.int64)
    uniq, counts = np.unique(codes, return_counts=True)
    return codes, uniq.astype(np.int64), counts.astype(np.float64)


def task_score_codes(ref: JobRef, packed: npt.NDArray[np.uint64], coded: tuple[Int64Array, ...], table_codes: Int64Array,
                     table: npt.NDArray[np.float64],
                     ) -> tuple[Int64Array, Int64Array, npt.NDArray[np.float64], int, npt.NDArray[np.float64]]:
    """Scores of one part's pairs from the fitted table (score of each distinct code); as :func:`task_verify`."""
    slow = os.environ.get(SLOW_ENV)
    if slow:
        time.sleep(float(slow))
    eng = _engine(ref)
    left, right = unpack_pairs(packed)
    scores = np.asarray(table, dtype=np.float64)[np.searchsorted(table_codes, coded[0])] if len(packed) else np.zeros(0)
    keep = eng.keep(scores)
    all_scores = scores if eng.mode != "dedup" or eng.auto else np.zeros(0)
    return left[keep], right[keep], scores[keep], int(len(packed)), all_scores


def _sum_counts(parts: list[tuple[Int64Array, npt.NDArray[np.float64]]]) -> tuple[Int64Array, npt.NDArray[np.float64]]:
    """Distinct codes (sorted) and their counts summed over the parts (whole numbers: exact in any order)."""
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0)
    codes = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    uniq, inv = np.unique(codes, return_inverse=True)
    return uniq.astype(np.int64), np.bincount(inv.reshape(-1), weights=counts, minlength=len(uniq)).astype(np.float64)


def task_forest(*parts: Any) -> tuple[Int64Array, Int64Array]:
    """A spanning forest of the union of some verified-pair parts: one edge (smallest node, node) per
    other node of each connected component. Same components, at most one edge per node, so a tree
    of these reductions brings the client a graph no larger than the records it links."""
    left = np.concatenate([p[0] for p in parts])
    right = np.concatenate([p[1] for p in parts])
    nodes, inv = np.unique(np.concatenate([left, right]), return_inverse=True)
    m = len(left)
    smallest = connected_component_labels(len(nodes), inv[:m], inv[m:])
    other = np.flatnonzero(smallest != np.arange(len(nodes)))
    return nodes[smallest[other]], nodes[other]


# ---------------------------------------------------------------- the client side


def plan_parts(job: Job, partition_mb: float) -> list[Part]:
    """The input partitions: each source file, split by byte ranges where its format allows."""
    parts: list[Part] = []
    for i, src in enumerate(job.spec.sources):
        for file in job.source_paths(i):  # a glob pattern: every file, in name order
            path = str(file)
            ranges = partition_ranges(path, int(partition_mb * 2**20)) if src.layout == "wide" else None
            if ranges is None:
                parts.append(Part(i, path, None))
            else:
                parts.extend(Part(i, path, r) for r in ranges)
    return parts


def _options(job: Job) -> DaskParams:
    """The job's ``executor:`` options, validated by :class:`DaskParams` when the job was read."""
    if not isinstance(job.executor_params, DaskParams):
        raise ErError(Problem(where=str(job.config_path), path="executor.type",
                              message=f"the dask executor was given a job for executor {job.spec.executor.type!r}",
                              fix="write executor: {type: dask, address: tcp://HOST:8786} (or local_cluster: {n_workers: 2})"))
    return job.executor_params


def _client(job: Job) -> tuple[Any, Callable[[], None]]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ErError(Problem(where=str(job.config_path), path="executor",
                              message="executor type dask needs Dask: it is not installed",
                              fix='pip install "er-framework[dask]"')) from None
    ex = _options(job)
    if ex.local_cluster is not None:
        lc = ex.local_cluster
        cluster = LocalCluster(n_workers=lc.n_workers, threads_per_worker=lc.threads_per_worker, processes=True,
                               memory_limit=lc.memory_limit or "auto", dashboard_address=None)
        client = Client(cluster)

        def close() -> None:
            client.close()
            cluster.close()

        return client, close
    client = connect(Client, str(ex.address), str(job.config_path))
    return client, client.close


#: seconds to connect to a scheduler and register with it (a silent or black-holed address fails after this);
#: the environment variable ER_DASK_CONNECT_TIMEOUT overrides it
CONNECT_TIMEOUT_S = 30.0
def connect_timeout() -> float:
    """:data:`CONNECT_TIMEOUT_S`, or the seconds in ``ER_DASK_CONNECT_TIMEOUT`` (a positive number)."""
    text = os.environ.get("ER_DASK_CONNECT_TIMEOUT", "")
    try:
        value = float(text)
    except ValueError:
        return CONNECT_TIMEOUT_S
    return value if 0 < value < 86400 else CONNECT_TIMEOUT_S


def _probe(address: str, seconds: float) -> str | None:
    """A plain TCP connection to a tcp:// (or tls, ws, wss) address: why it fails (refused, unknown host, silent).

    Dask's own connect retries a refused port until its timeout; this says at
    once what the operating system says.
    """
    m = ADDRESS_RE.fullmatch(address)
    if m is None or m.group(1) == "ucx":
        return None
    host = m.group(2).strip("[]")
    try:
        socket.create_connection((host, int(m.group(3))), timeout=seconds).close()
    except socket.gaierror as exc:
        return f"unknown host {host!r} ({exc.strerror or exc})"
    except TimeoutError:
        return f"no answer within {seconds:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


class _Silent(Exception):
    """The call given to :func:`_within` did not return in time."""


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()`` in a daemon thread: its result or its exception, or :class:`_Silent` after ``seconds``.

    distributed's ``Client(address, timeout=…)`` bounds the TCP connect but
    not the handshake read that follows (distributed 2026.8: ``comm.core.connect``
    awaits ``comm.read()`` with no timeout), so a server that accepts and
    stays silent would hang the run forever. The thread left waiting is a
    daemon: it does not keep the process alive.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, name="er-dask-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise _Silent()
    if "error" in box:
        raise box["error"]
    return box["value"]


def connect(client_class: Any, address: str, config_path: str) -> Any:
    """A ``Client`` connected to the scheduler at ``address`` within :data:`CONNECT_TIMEOUT_S`, or a message.

    Whatever goes wrong while connecting is the address's fault as far as
    the user can tell: a malformed address, a refused or silent port, or a
    service that does not speak Dask's protocol (an HTTP server's reply read
    as a frame length asks for exabytes: a ``MemoryError``). So every
    exception of this step becomes one message naming the address and the
    ``executor.address`` setting; nothing is run before it.
    """
    fix = ("check executor.address (tcp://HOST:8786, the address the scheduler prints when it starts); "
           "start the scheduler (dask scheduler) and its workers (dask worker ADDRESS), "
           "or run on this machine with executor: {type: dask, local_cluster: {n_workers: 2}}")

    def refuse(reason: str) -> ErError:
        return ErError(Problem(where=config_path, path="executor.address",
                               message=f"could not connect to the Dask scheduler at {address}: {reason}", fix=fix))

    seconds = connect_timeout()
    why = address_problem(address) or _probe(address, seconds)
    if why is not None:
        raise refuse(why)
    try:
        return _within(seconds + 5, lambda: client_class(address, timeout=f"{seconds}s"))
    except _Silent:
        raise refuse(f"a connection was accepted but no Dask handshake came within {seconds:g} s "
                     "(is a Dask scheduler listening there?)") from None
    except MemoryError:
        raise refuse("the service there does not speak the Dask protocol (its answer was read as a message "
                     "of an impossible size)") from None
    except (TimeoutError, OSError) as exc:  # refused, unreachable, silent, closed (CommClosedError is an OSError)
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, TimeoutError) or "Timed out" in reason:
            reason = f"no answer within {seconds:g} s ({reason})"
        raise refuse(reason) from None
    except Exception as exc:  # noqa: BLE001 - any other failure of the handshake: a service that is not Dask
        raise refuse(f"the service there does not speak the Dask protocol ({type(exc).__name__}: {exc})") from None


def run_dask(job: Job, out_dir: str | Path | OutputDir | None = None, *, progress: Callable[[str], None] | None = None,
             write: bool = True, model: Model | None = None) -> Result:
    """Run ``job`` on Dask with the local executor's answer: the same pairs, clusters and outputs
    (``model``: a saved model applied instead of fitting, as locally)."""
    t_start = time.perf_counter()
    out_path = stages.require_out_dir(job, out_dir, write)
    engine = Engine(job, model)
    _check_job(job, engine)
    text = Path(job.config_path).read_text(encoding="utf-8")
    ref = JobRef(text, str(Path(job.config_path).resolve()), str(job.base_dir),
                 hashlib.sha256((text + str(job.base_dir)).encode()).hexdigest())
    log = StageLog(progress=progress)
    client, close = _client(job)
    try:
        run = DaskRun(job, engine, ref, client, plan_parts(job, _options(job).partition_mb))
        scanned = run.scan(log)
        run.prune(scanned, log)
        run.send_model()
        with log.stage("block") as info:
            blocked = run.block(scanned, info)
        with log.stage("verify") as info:
            found = run.verify(scanned, blocked, info)
        # the blocking stage's time is spent inside verify's gather (lazy futures); both are reported
    finally:
        close()
    engine = run.engine  # the model as the run left it (pruned shingles, fitted state, chosen threshold)
    with log.stage("cluster") as info:
        ver = Pairs(found.left, found.right, found.scores).normalized()
        pairs = stages.with_exact(ver, scanned.exact.pairs)
        if found.forest is not None:  # the workers' forest + the exact-duplicate pairs: the same components
            fl = np.concatenate([found.forest[0], scanned.exact.pairs.left])
            fr = np.concatenate([found.forest[1], scanned.exact.pairs.right])
            labels = canonical_labels(connected_component_labels(len(scanned.ids), fl, fr))
        else:
            labels = stages.cluster(engine, len(scanned.ids), pairs)
        info.update(stages.cluster_stats(labels))
    records = Records(ids=scanned.ids, source=scanned.source, source_names=[s.name for s in job.spec.sources], fields={})
    engine = engine.with_model(engine.run_model(records, found.n_candidates, {}))
    blocker_reports = [{**b.describe(), **rep, "candidate_pairs": int(c)}
                       for b, rep, c in zip(engine.blockers, found.blocker_reports, found.per_blocker)]
    ex = _options(job)
    facts = RunFacts(
        records=records, exact=scanned.exact, candidates=found.candidates, candidate_count=found.n_candidates,
        scores=found.candidate_scores, verified=ver, pairs=pairs, labels=labels, blockers=blocker_reports,
        tokens=blocked.tokens, shingler=blocked.shingler,
        executor={"partitions": len(run.parts), "workers": scanned.n_workers, "partition_mb": ex.partition_mb,
                  "cluster_on": ex.cluster_on},
        verifier_report=run.verifier_report,
    )
    return finish_run(job, engine, facts, log, t_start, out_path if write else None, None)


def _check_job(job: Job, engine: Engine) -> None:
    """Refuse, before a cluster starts, what cannot run partition by partition (each component named)."""
    engine.require_lookup(str(job.config_path), "the dask executor blocks and verifies partition by partition",
                          scope="partition")
    for what, path, why, fix in (
        (job.frames, "sources", "sources given as DataFrames live in this process, where the workers cannot read them",
         "write the DataFrames to Parquet files and name them as the sources' path, or use executor: {type: local}"),
        (job.spec.training, "training", "the workers fit the verifier from pattern counts, without the labelled pairs",
         "remove training: or use executor: {type: local}"),
        (job.spec.output.comparisons, "output.comparisons", "the client does not hold the records' fields to break "
         "the scores into terms", "remove comparisons: true or use executor: {type: local}"),
    ):
        if what:
            raise ErError(Problem(where=str(job.config_path), path=path, message=f"the dask executor cannot run it: {why}",
                                  fix=fix))
    if _options(job).cluster_on == "workers" and engine.auto and engine.model.threshold is None:
        raise ErError(Problem(where=str(job.config_path), path="executor.cluster_on",
                              message="cluster_on: workers reduces the verified pairs to a spanning forest before the "
                              "client has chosen the threshold of threshold: auto",
                              fix="use cluster_on: client, or a fixed threshold"))
    if _options(job).cluster_on == "workers" and (
        job.clusterer.cls.name != "connected_components" or getattr(job.clusterer.params, "split", None) is not None
    ):
        raise ErError(Problem(where=str(job.config_path), path="executor.cluster_on",
                              message=f"cluster_on: workers reduces the graph to a spanning forest, which keeps "
                              f"connected components only; the job clusters with {job.clusterer.cls.name!r}",
                              fix="use cluster: {type: connected_components} or cluster_on: client"))


@dataclass
class Scanned:
    """What the client knows after reading: ids, sources, partition offsets, exact duplicates."""

    ids: list[str]
    source: npt.NDArray[np.int32]
    offsets: Int64Array
    exact: stages.Exact
    n_workers: int


@dataclass
class BlockedFutures:
    """The blocking phase's futures, and the bucket statistics gathered so far."""

    block: list[Any]
    dedup: list[Any]
    stats: list[Any]
    blocker_parts: list[list[dict[str, Any]]]
    bucket_stats: Int64Array | None
    #: the report's ``tokens`` section (:func:`tokens_report`)
    tokens: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: per shuffle part: the statistics of the groups of the blockers with groups, and their oversized buckets
    groups: list[Any] = dataclasses.field(default_factory=list)
    #: the shingler's report of the run, merged from the partitions' (a partitionable shingler's)
    shingler: dict[str, Any] | None = None


@dataclass
class Found:
    """The verified pairs (and, in link modes, every candidate's score) gathered on the client."""

    left: Int64Array
    right: Int64Array
    scores: npt.NDArray[np.float64]
    n_candidates: int
    per_blocker: Int64Array
    candidates: Pairs | None  # not gathered in dedup mode: the report needs their count only
    candidate_scores: npt.NDArray[np.float64]
    forest: tuple[Int64Array, Int64Array] | None
    #: each blocker's report of the run, as its ``block`` gives it locally (``{}``: none merged)
    blocker_reports: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclass
class DaskRun:
    """One job on one Dask client: the phases submit tasks; the client keeps ids and small arrays."""

    job: Job
    engine: Engine
    ref: JobRef
    client: Any
    parts: list[Part]
    #: a future of the model as the tasks need it (the pruned shingles, a saved model's state), sent with every
    #: task that shingles or scores; and the prune stage's numbers
    model: Any = None
    pruning: stages.Pruning | None = None
    #: what the verifier's fit on the client said (None: nothing fitted in this run)
    verifier_report: dict[str, Any] | None = None

    @property
    def n_parts(self) -> int:
        return max(1, len(self.parts))

    def submit(self, fn: Callable[..., Any], *args: Any, retries: int = 3) -> Any:
        return self.client.submit(fn, *args, pure=False, retries=retries)

    def scan(self, log: StageLog) -> Scanned:
        """read + exact_duplicates: ids and exact-text hashes of every partition, numbered as locally."""
        client, job = self.client, self.job
        with log.stage("read") as info:
            scans = client.gather([self.submit(task_scan, self.ref, p) for p in self.parts])
            counts = np.array([len(s[0]) for s in scans], dtype=np.int64)
            offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            ids = [i for s in scans for i in s[0]]
            source = (np.concatenate([np.full(c, p.source, dtype=np.int32) for c, p in zip(counts, self.parts)])
                      if self.parts else np.zeros(0, np.int32))
            _check_unique_ids(job, ids, source)
            n_workers = len(client.scheduler_info()["workers"])
            info.update({"records": len(ids), "partitions": len(self.parts), "workers": n_workers})
        with log.stage("exact_duplicates") as info:
            keys = np.concatenate([s[1] for s in scans]) if scans else np.zeros(0, np.uint64)
            nonempty = np.concatenate([s[2] for s in scans]) if scans else np.zeros(0, bool)
            exact = stages.exact_from_keys(job, keys, nonempty, source)
            info.update(exact.stats)
        return Scanned(ids, source, offsets, exact, n_workers)

    def prune(self, scanned: Scanned, log: StageLog) -> None:
        """``prune_shingles:``: the partitions' shingle counts merged on the client, the dropped shingles
        chosen there as locally (:func:`stages.pruned_by_frequency`), then sent with every task that shingles."""
        job, engine = self.job, self.engine
        if job.spec.prune_shingles is None or engine.base_shingler is None or engine.model.pruned is not None:
            return
        with log.stage("prune") as info:
            futs = [self.submit(task_frequencies, self.ref, p, self._active_of(scanned, i)) for i, p in enumerate(self.parts)]
            got = self.client.gather(futs)
            freq = DocFreq()
            for g in got:  # the partitions' tables merged here, within the memory this process has
                freq.add_table(g[0], g[1], g[2])
                stages.check_frequency_memory(freq)
            dropped, report = stages.pruned_by_frequency(job, freq)
            self.engine = engine.with_model(engine.model.learned(pruned=dropped, prune_report=dict(report)))
            info.update(report)
        self.pruning = stages.Pruning(np.concatenate([g[3] for g in got]) if got else np.zeros(0, np.int64), None, info,
                                      dropped)

    def send_model(self) -> None:
        """The model as the tasks need it, as a future (a task, not scattered data: the scheduler can compute
        it again if its worker dies); none when the job learned nothing before verification."""
        m = self.engine.model
        if m.pruned is not None or m.verifier is not None:
            self.model = self.submit(_same, m, retries=0)

    def _active_of(self, scanned: Scanned, i: int) -> Int64Array:
        """The active records of partition ``i``, numbered within it."""
        a, b = scanned.offsets[i], scanned.offsets[i + 1]
        active = scanned.exact.active
        local: Int64Array = active[(active >= a) & (active < b)] - a
        return local

    def block(self, scanned: Scanned, info: dict[str, Any]) -> BlockedFutures:
        """Bucket keys and sort windows per partition, shuffled; candidate pairs deduplicated per pair part."""
        engine, offsets = self.engine, scanned.offsets
        block_futs = [self.submit(task_block, self.ref, p, int(offsets[i]), self._active_of(scanned, i), self.n_parts,
                                  self.model) for i, p in enumerate(self.parts)]
        reports, blocker_parts, token_counts, lost = _partition_problems(self.job, self.client, block_futs)
        if self.pruning is not None:  # how much of each record went, as the local shingle stage reports it
            self.pruning.info.update(stages.pruned_share(
                self.pruning.sizes, np.concatenate(lost) if lost else np.zeros(0, np.int64)))
        partitionable = ability(engine.shingler, Partitionable)
        # the shingler's report over every record, from the partitions'
        shingler_report = partitionable.merge_reports(reports) if partitionable is not None else None
        sorted_futs = []
        for j in range(self.n_parts if any(engine.has_keys(b) for b in engine.blockers) else 0):
            pieces = [self.submit(_pick_attr, f, "pieces", j, retries=0) for f in block_futs]
            sorted_futs.append(self.submit(task_bucket_sort, self.ref, pieces))
        stats_futs = [self.submit(_bucket_stats, f, retries=0) for f in sorted_futs]
        grouped = any(has(b, GroupedKeys) for b in engine.blockers)
        group_futs = [self.submit(_group_parts, f, retries=0) for f in sorted_futs] if grouped else []
        bucket_stats = None
        if any(has(b, LimitedKeys) for b in engine.blockers):
            # a limit on the pairs of the buckets (e.g. grid_bits' max_pairs): checked on the sizes of
            # every bucket before any pair is made, with the blocker's own error, as locally
            bucket_stats = _merge_bucket_stats(self.client.gather(stats_futs), len(engine.blockers))
            for i, b in enumerate(engine.blockers):
                if (limited := ability(b, LimitedKeys)) is not None:
                    limited.check_lookup_pairs(int(bucket_stats[i, 4]), int(bucket_stats[i, 1]))
        bucket_futs = [self.submit(task_buckets, self.ref, f, self.n_parts) for f in sorted_futs]
        window_futs = _submit_windows(self.client, engine, self.job, block_futs, self.n_parts)
        info["window_passes"] = len(window_futs)
        ep = scanned.exact.pairs
        exact_packed = pack_pairs(ep.left, ep.right) if len(ep) else np.zeros(0, np.uint64)
        # small arrays every dedup task reads: tasks, not scattered data, so that the
        # scheduler can compute them again if the worker holding them dies
        exact_f = self.submit(_same, exact_packed, retries=0)
        off_f = self.submit(_same, offsets, retries=0)
        dedup_futs = []
        for j in range(self.n_parts):
            pieces = [self.submit(_pick, f, j, retries=0) for f in bucket_futs + window_futs]
            dedup_futs.append(self.submit(task_dedup, pieces, exact_f, off_f, len(engine.blockers)))
        return BlockedFutures(block_futs, dedup_futs, stats_futs, blocker_parts, bucket_stats,
                              tokens_report(engine, token_counts), group_futs, shingler_report)

    def verify(self, scanned: Scanned, blocked: BlockedFutures, info: dict[str, Any]) -> Found:
        """The candidates joined with their records and scored (pairwise, or by a verifier fitted on code counts)."""
        engine, n_parts = self.engine, self.n_parts
        fitted = engine.learns() and engine.verifier_state() is None
        needs = [self.submit(_pick, f, 1, retries=0) for f in blocked.dedup]
        sample, sample_need = self._sample(scanned) if fitted else (Pairs.empty(), [])
        serve_futs = []
        for i, p in enumerate(self.parts):
            wanted = [self.submit(_pick, nd, i, retries=0) for nd in needs]
            if fitted:
                wanted.append(self.submit(_same, sample_need[i], retries=0))
            serve_futs.append(self.submit(task_serve, self.ref, p, int(scanned.offsets[i]), wanted))
        packed_futs = [self.submit(_pick, blocked.dedup[j], 0, retries=0) for j in range(n_parts)]

        def served_and_wanted(j: int) -> tuple[list[Any], list[Any]]:
            served = [self.submit(_pick, s, j, retries=0) for s in serve_futs]
            return served, [self.submit(_pick, needs[j], i, retries=0) for i in range(len(self.parts))]

        if fitted:
            ver_futs = self._fit_and_score(packed_futs, served_and_wanted, serve_futs, sample, sample_need, info)
        else:
            ver_futs = [self.submit(task_verify, self.ref, packed_futs[j], *served_and_wanted(j), self.model)
                        for j in range(n_parts)]
        forest = self._forest(ver_futs, info) if _options(self.job).cluster_on == "workers" else None
        verified = self.client.gather(ver_futs)
        per_blocker = (np.sum(self.client.gather([self.submit(_pick, f, 2, retries=0) for f in blocked.dedup]), axis=0)
                       if blocked.dedup else np.zeros(len(engine.blockers), np.int64))
        candidates: Pairs | None = None
        cand_scores = np.zeros(0)
        if self.job.spec.mode != "dedup":  # every candidate's score, for the link answer
            cand_packed = self.client.gather(packed_futs)
            cl, cr = unpack_pairs(np.concatenate(cand_packed)) if cand_packed else (np.zeros(0, np.int64),) * 2
            sc = np.concatenate([v[4] for v in verified]) if verified else np.zeros(0)
            order = np.lexsort((cr, cl))
            candidates, cand_scores = Pairs(cl[order], cr[order]), sc[order]
        n_cand = int(sum(v[3] for v in verified))
        found = Found(
            left=np.concatenate([v[0] for v in verified]) if verified else np.zeros(0, np.int64),
            right=np.concatenate([v[1] for v in verified]) if verified else np.zeros(0, np.int64),
            scores=np.concatenate([v[2] for v in verified]) if verified else np.zeros(0),
            n_candidates=n_cand, per_blocker=per_blocker, candidates=candidates, candidate_scores=cand_scores,
            forest=forest,
        )
        engine = self.engine  # with the verifier's fitted state when fitted here
        if engine.auto and engine.model.threshold is None:  # threshold: auto, chosen on the client, as locally
            choice = engine.choose_threshold(np.concatenate([v[4] for v in verified]) if verified else np.zeros(0))
            engine = self.engine = engine.with_model(engine.model.learned(threshold=choice))
            auto = choice.auto or {}
            info["threshold_chosen"] = {"method": auto.get("method"), "ok": bool(auto.get("ok")),
                                        "reason": auto.get("reason"), "n_scores": int(auto.get("n_scores", 0))}
            keep = engine.keep(found.scores)  # the workers kept the pairs at or above the lowest it may choose
            found.left, found.right, found.scores = found.left[keep], found.right[keep], found.scores[keep]
        info.update({"candidate_pairs": n_cand, "verified_pairs": int(len(found.left)), "threshold": engine.threshold,
                     "rejected_pairs": n_cand - int(len(found.left))})
        found.blocker_reports = self._merge_blocker_reports(blocked, scanned, per_blocker)
        return found

    def _sample(self, scanned: Scanned) -> tuple[Pairs, list[Int64Array]]:
        """The verifier's sample pairs (random pairs), drawn as locally over the active records, and who serves them."""
        active, offsets = scanned.exact.active, scanned.offsets
        verifier = self.engine.verifier
        assert isinstance(verifier, CodeFitted)
        local_sample = verifier.sample_pairs(scanned.source[active], self.engine.link)
        sample = Pairs(active[local_sample.left], active[local_sample.right])
        need = np.unique(np.concatenate([sample.left, sample.right]))
        owner = np.searchsorted(offsets, need, side="right") - 1
        return sample, [need[owner == i] for i in range(len(self.parts))]

    def _fit_and_score(self, packed_futs: list[Any], served_and_wanted: Callable[[int], tuple[list[Any], list[Any]]],
                       serve_futs: list[Any], sample: Pairs, sample_need: list[Int64Array],
                       info: dict[str, Any]) -> list[Any]:
        """A fitted verifier: pair codes on the workers, counts summed, one fit on the client, scores by code."""
        code_futs = [self.submit(task_codes, self.ref, packed_futs[j], *served_and_wanted(j), self.model)
                     for j in range(self.n_parts)]
        served = [self.submit(_pick, s, self.n_parts, retries=0) for s in serve_futs]
        sample_fut = self.submit(task_codes, self.ref, (sample.left, sample.right), served, sample_need, self.model)
        counted = self.client.gather([self.submit(_pick_many, f, (1, 2), retries=0) for f in code_futs])
        s_counted = self.client.gather(self.submit(_pick_many, sample_fut, (1, 2), retries=0))
        pat_codes, pat_counts = _sum_counts(counted)
        s_codes, s_counts = _sum_counts([s_counted]) if len(sample) else (np.zeros(0, np.int64), np.zeros(0))
        verifier = self.engine.verifier
        assert isinstance(verifier, CodeFitted)
        table, fitted = verifier.fit_counts(pat_codes, pat_counts, s_codes, s_counts, None)  # on the client, as locally
        self.engine = self.engine.with_model(self.engine.model.learned(
            verifier={"type": verifier.name, "state": fitted.state}))
        self.verifier_report = dict(fitted.report)
        info["patterns"] = int(len(pat_codes))
        return [self.submit(task_score_codes, self.ref, packed_futs[j], code_futs[j], pat_codes, table)
                for j in range(self.n_parts)]

    def _forest(self, ver_futs: list[Any], info: dict[str, Any]) -> tuple[Int64Array, Int64Array] | None:
        """cluster_on: workers — a tree of spanning-forest reductions of the verified pairs."""
        level = ver_futs
        while len(level) > 1:
            level = [self.submit(task_forest, *level[k : k + 2]) for k in range(0, len(level), 2)]
        forest: tuple[Int64Array, Int64Array] | None = self.submit(task_forest, level[0]).result() if level else None
        info["forest_edges"] = int(len(forest[0])) if forest is not None else 0
        return forest

    def _merge_blocker_reports(self, blocked: BlockedFutures, scanned: Scanned, per_blocker: Int64Array
                               ) -> list[dict[str, Any]]:
        """The blockers' reports, as their ``block`` gives them locally, from the partitions' and the buckets'
        (with the statistics per group and the oversized buckets of blockers with groups); ``{}`` for a
        blocker without keys or without a report."""
        engine = self.engine
        out: list[dict[str, Any]] = [{} for _ in engine.blockers]
        if not any(has(b, Keyed) and has(b, Reporting) for b in engine.blockers):
            return out
        stats = blocked.bucket_stats
        if stats is None:
            stats = _merge_bucket_stats(self.client.gather(blocked.stats), len(engine.blockers))
        groups, oversized = self._groups(blocked, scanned)
        for i, b in enumerate(engine.blockers):
            keyed = ability(b, Keyed)
            if keyed is not None and has(b, Reporting):
                buckets: dict[str, Any] = {**dict(zip(BUCKET_STATS, (int(x) for x in stats[i]))),
                                           "distinct_pairs": int(per_blocker[i])}
                if has(b, GroupedKeys):
                    buckets["groups"] = groups.get(i, {})
                    buckets["oversized"] = oversized.get(i, [])
                out[i] = keyed.merge_reports([parts_i[i] for parts_i in blocked.blocker_parts if parts_i], buckets)
        return out

    def _groups(self, blocked: BlockedFutures, scanned: Scanned
                ) -> tuple[dict[int, dict[int, dict[str, int]]], dict[int, list[dict[str, Any]]]]:
        """Per blocker with groups: each group's :data:`GROUP_STATS` over every shuffle part, and its
        oversized buckets with their first member's record (read from its partition)."""
        if not blocked.groups:
            return {}, {}
        got = self.client.gather(blocked.groups)
        rows = np.concatenate([g[0] for g in got])
        over = np.concatenate([g[1] for g in got])
        groups: dict[int, dict[int, dict[str, int]]] = {}
        for row in rows.tolist():  # one row per (blocker, group, part): few
            cell = groups.setdefault(row[0], {}).setdefault(row[1], dict.fromkeys(GROUP_STATS, 0))
            for name, x in zip(GROUP_STATS, row[2:]):
                cell[name] = max(cell[name], x) if name == "largest_bucket" else cell[name] + x
        oversized: dict[int, list[dict[str, Any]]] = {}
        if len(over):
            need = np.unique(over[:, 3])
            owner = np.searchsorted(scanned.offsets, need, side="right") - 1
            futs = {i: self.submit(task_serve, self.ref, self.parts[i], int(scanned.offsets[i]), [need[owner == i]])
                    for i in np.unique(owner).tolist()}
            served = {i: f[0] for i, f in zip(futs, self.client.gather(list(futs.values())))}
            for blocker, group, size, g in over.tolist():
                i = int(np.searchsorted(scanned.offsets, g, side="right") - 1)
                row = int(np.searchsorted(need[owner == i], g))
                oversized.setdefault(blocker, []).append(
                    {"group": group, "size": size, "record": served[i].take(np.array([row], dtype=np.int64))})
        return groups, oversized


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


def _pick_attr(obj: Any, name: str, i: int) -> Any:
    return getattr(obj, name)[i]


def _run_length(blocked: Blocked, k: int) -> int:
    """Records of a partition sorted by window pass ``k``."""
    return len(blocked.runs[k][1]) if k < len(blocked.runs) else 0


def _pick_many(obj: Any, idx: tuple[int, ...]) -> tuple[Any, ...]:
    return tuple(obj[i] for i in idx)


def _report_and_problems(blocked: Blocked) -> tuple[dict[str, Any], list[Problem], list[dict[str, Any]],
                                                     tuple[int, int, int], Int64Array | None]:
    return blocked.report, blocked.problems, blocked.blocker_reports, blocked.tokens, blocked.lost


def _partition_problems(job: Job, client: Any, block_futs: list[Any]
                        ) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]], list[tuple[int, int, int]],
                                   list[Int64Array]]:
    """The shingler's and the blockers' per-partition reports, token counts and (pruning) the shingles each
    record lost; every partition's input problems raised together."""
    got = client.gather([client.submit(_report_and_problems, f, pure=False) for f in block_futs])
    problems = [pr for g in got for pr in g[1]]
    if problems:
        raise InputError(problems)
    return [g[0] for g in got], [g[2] for g in got], [g[3] for g in got], [g[4] for g in got if g[4] is not None]


def tokens_report(engine: Engine, counts: list[tuple[int, int, int]]) -> dict[str, Any]:
    """The report's ``tokens`` section from the partitions' ``(records, empty sets, tokens)``, with the
    local executor's definitions (:func:`stages.shingle_and_sign`): the same counts, ``mean_tokens``
    rounded as locally, and ``tokens_counted`` as the local run of this job says. Two keys say what is
    true on Dask and differ from a local run: ``token_sets_kept`` is false (each task drops its token
    sets once its records are signed and keyed; a local run may keep them), and ``chunks`` is the number
    of partitions shingled (locally: the chunks of ``chunk_records``). Empty without a shingler, as locally."""
    if engine.shingler is None:
        return {}
    n = sum(c[0] for c in counts)
    total = sum(c[2] for c in counts)
    return {
        "records_shingled": n,
        "empty_token_sets": sum(c[1] for c in counts),
        # sizes.mean() locally: a sum of whole numbers below 2**53 is exact, so the same float
        "mean_tokens": round(total / n, 2) if n else 0.0,
        "total_tokens": total,
        "tokens_counted": "with repeats" if engine.token_keep() == "none" else "distinct",
        "token_sets_kept": False,
        "chunks": len(counts),
    }


def _submit_windows(client: Any, engine: Engine, job: Job, block_futs: list[Any], n_parts: int) -> list[Any]:
    """The tasks of the blockers that pair records within windows of a sort order: per pass, a distributed
    sort (sampled boundaries, each partition's sorted run cut into ranges, one task per range) and each
    range's window pairs, with the last ``window - 1`` records of the ranges before it carried in.
    Returns one task per range and pass, giving pairs split by pair hash as :func:`task_buckets` does."""
    passes = _window_passes(engine, job)
    # the pairs each blocker's passes will make, checked on every partition's count before any pair is made
    counts = client.gather([client.submit(_run_length, f, k, pure=False) for k in range(len(passes)) for f in block_futs])
    per_blocker: dict[int, list[int]] = {}
    for k, (blocker_no, _) in enumerate(passes):
        per_blocker.setdefault(blocker_no, []).append(sum(counts[k * len(block_futs):(k + 1) * len(block_futs)]))
    for blocker_no, rows in per_blocker.items():
        windowed = ability(engine.blockers[blocker_no], Windowed)
        assert windowed is not None  # a pass of Engine.window_keys
        windowed.check_window_pairs(rows)
    out = []
    for k, (blocker_no, window) in enumerate(passes):
        samples = [client.submit(_pick_attr, f, "samples", k, pure=False) for f in block_futs]
        bounds = client.submit(task_bounds, samples, n_parts, pure=False, retries=3)
        runs = [client.submit(_pick_attr, f, "runs", k, pure=False) for f in block_futs]
        split = [client.submit(task_split, r, bounds, n_parts, pure=False, retries=3) for r in runs]
        ranges = [client.submit(task_range, *[client.submit(_pick, sp, r, pure=False) for sp in split],
                                pure=False, retries=3) for r in range(n_parts)]
        carry: Any = (np.zeros(0, np.int64), np.zeros(0, np.int32))
        for r in range(n_parts):
            out.append(client.submit(task_windows, ranges[r], carry, window, engine.link, blocker_no, n_parts,
                                     pure=False, retries=3))
            carry = client.submit(task_carry, carry, ranges[r], window - 1, pure=False, retries=3)
    return out


def _window_passes(engine: Engine, job: Job) -> list[tuple[int, int]]:
    """``(blocker number, window)`` of every window pass, in the order of :meth:`Engine.window_keys`
    (the passes are counted on an empty batch: their number does not depend on the records)."""
    if not any(engine.has_windows(b) and not engine.has_keys(b) for b in engine.blockers):
        return []
    fields = sorted({f for src in job.spec.sources for f in src.fields})
    empty = Records(ids=[], source=np.zeros(0, np.int32), source_names=[s.name for s in job.spec.sources],
                    fields={f: [] for f in fields})
    sizes = [w.window_size() if (w := ability(b, Windowed)) is not None else 0 for b in engine.blockers]
    return [(i, sizes[i]) for i, _, _ in engine.window_keys(engine.block_batch(empty))]


def _same(obj: Any) -> Any:
    return obj


def _check_unique_ids(job: Job, ids: list[str], source: npt.NDArray[np.int32]) -> None:
    """Ids must be unique within a source across partitions (each partition checked its own)."""
    from collections import Counter

    keys = list(zip(source.tolist(), ids))
    if len(set(keys)) == len(keys):
        return
    bad = sorted(f"{job.spec.sources[s].name}/{i}" for (s, i), c in Counter(keys).items() if c > 1)
    raise InputError(Problem(where=str(job.config_path), path="sources",
                             message=f"{len(bad)} id(s) appear more than once in a source (in different partitions or files): "
                             f"{', '.join(bad[:5])}", fix="ids must be unique within a source"))
