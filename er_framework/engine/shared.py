"""Reading and normalizing on two processes (``er run`` with ``workers`` >= 2 on a large job).

:func:`start_worker` forks one worker before anything is read, so that it
shares none of the data's pages (a process forked late counts its parent's
pages again in the process tree's memory). It then

* reads the last source while this process reads the others
  (:func:`read_shared`): each process turns the columns it read into Arrow
  arrays (:func:`~er_framework.engine.columns.compact_read`), and the worker's
  come back as a few buffers; the records, statistics and problems are those
  of :func:`~er_framework.engine.stages.reading.read`, in the same order;
* builds the normalizers' tables, and takes whole fields to normalize
  (:func:`~er_framework.engine.columns.normalize_fields_shared`).

The worker knows the job because it was forked with it (a job holds modules
and cannot be pickled): :func:`start_worker` leaves it where the worker's
tasks find it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from er_framework.config.resolve import Job
from er_framework.data import Records
from er_framework.engine.columns import compact_read, concat_compact
from er_framework.engine.stages.reading import read, read_sources
from er_framework.errors import InputError
from er_framework.kernels import parallel
from er_framework.kernels.arrow import string_array
from er_framework.kernels.parallel import ForkedWorker
from er_framework.normalize import normalize_column

__all__ = ["WORKER_MIN_BYTES", "is_large", "read_shared", "start_worker"]

#: bytes of source files from which a job with ``workers`` >= 2 has a worker (:func:`start_worker`). Measured
#: (whole `er run configs/customers.yaml` processes, 2 cores): 0.46 MB (Febrl3) 0.41 s without, 0.46 s with;
#: 2.2 MB equal; 5.3 MB 0.90 s without, 0.77 s with; 21 MB (100k x 100k) 2.6 s without, 1.95 s with
WORKER_MIN_BYTES = 4 << 20

#: the job of the worker forked last (set in the parent just before the fork and cleared after it: the
#: worker keeps its copy)
forked_job: Job | None = None


def is_large(job: Job) -> bool:
    """Whether ``job`` reads at least :data:`WORKER_MIN_BYTES` of source files (none given in memory): a job
    whose columns as read are worth holding as Arrow arrays (a smaller one spends more time letting its
    lists go than it saves) and that may have a worker."""
    if job.frames:
        return False
    size = 0
    for i in range(len(job.spec.sources)):
        try:
            size += sum(p.stat().st_size for p in job.source_paths(i))
        except (OSError, ValueError):  # the read reports it
            return False
    return size >= WORKER_MIN_BYTES


def start_worker(job: Job) -> ForkedWorker | None:
    """A worker process for ``job``, forked now (call it before reading), or ``None``: one worker, when
    the job has ``workers`` >= 2, at least two normalized fields or two sources, and :func:`is_large`, on a
    system that forks safely (not Windows, not macOS)."""
    import multiprocessing

    global forked_job
    chains = job.normalizer_chains()
    if job.context.workers < 2 or (len(chains) < 2 and len(job.spec.sources) < 2) or not is_large(job):
        return None
    if not parallel.FORK_SAFE or "fork" not in multiprocessing.get_all_start_methods():  # Windows, macOS: one process
        return None
    forked_job = job
    try:
        return ForkedWorker()
    finally:
        forked_job = None


def read_shared(job: Job, worker: ForkedWorker | None, compact: bool = True) -> tuple[Records, dict[str, Any]]:
    """:func:`~er_framework.engine.stages.reading.read` and (``compact``) :func:`~er_framework.engine.columns.compact_read`
    of the normalized fields: the same records (their normalized fields as Arrow arrays where they convert),
    the same statistics, the same problems (all sources', in source order). With a worker (and two sources
    or more) the last source is read by the worker, compacted; then the worker builds the normalizers'
    tables."""
    fields = list(job.normalizer_chains())
    n = len(job.spec.sources)
    if worker is None or n < 2:
        if worker is not None:
            worker.submit(warm_in_worker)  # while this process reads
        records, stats = read(job)
        return (compact_read(records, fields) if compact else records), stats
    theirs = worker.submit(read_in_worker, [n - 1], fields)
    worker.submit(warm_in_worker)
    parts, stats, problems = read_sources(job, range(n - 1))
    for part in parts:
        compact_read(part, fields)
    their_parts, their_stats, their_problems = ForkedWorker.result(theirs)
    problems += their_problems
    if problems:
        raise InputError(problems)
    parts += [unpack_records(p) for p in their_parts]
    stats.update(their_stats)
    order = [s.name for s in job.spec.sources]
    return concat_compact(parts), {name: stats[name] for name in order if name in stats}


def read_in_worker(indices: list[int], fields: list[str]) -> tuple[list[Any], dict[str, Any], list[Any]]:
    """In the worker: :func:`~er_framework.engine.stages.reading.read_sources` of the forked job's sources
    ``indices``, each compacted, its ids as an Arrow array where they convert (:func:`unpack_records`)."""
    job = forked_job
    assert job is not None, "read_in_worker runs in a worker of start_worker"
    import pyarrow as pa

    parts, stats, problems = read_sources(job, indices)
    packed = []
    for part in parts:
        compact_read(part, fields)
        ids: Any = part.ids
        with contextlib.suppress(pa.ArrowException, TypeError, ValueError, UnicodeError, OverflowError):
            ids = string_array(part.ids, large=None)
        packed.append((ids, part.source, part.source_names, part.fields))
    return packed, stats, problems


def unpack_records(packed: tuple[Any, Any, list[str], dict[str, Any]]) -> Records:
    """The records of one source that :func:`read_in_worker` sent."""
    ids, source, names, fields = packed
    return Records(ids=ids if isinstance(ids, list) else ids.to_pylist(), source=source, source_names=names, fields=fields)


def warm_in_worker() -> None:
    """In the worker: build the forked job's normalizers and their tables (phone regions, address words...)."""
    job = forked_job
    assert job is not None, "warm_in_worker runs in a worker of start_worker"
    for steps in job.normalizer_chains().values():
        normalize_column([], steps)
