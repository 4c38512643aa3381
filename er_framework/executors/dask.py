"""Run a job on a Dask cluster (``executor: {type: dask, ...}``) with the local executor's answer.

    executor: {type: dask, address: tcp://scheduler:8786}
    executor: {type: dask, local_cluster: {n_workers: 2}, partition_mb: 64}

Install with ``pip install "er-framework[dask]"``. The plan (every task is a
pure function of the input files and the job, so Dask may run it again on
another worker when one dies):

1. **read** — each source file is split into partitions of ``partition_mb``
   (uncompressed JSONL/CSV/TSV by byte range, on line starts; gzip and Parquet
   files, and files at a URL, are one partition each; a Parquet dataset folder
   is one partition per file; a Dask DataFrame given in memory one per Dask
   partition, computed on the worker that reads it; any other table given in
   memory is cut into row slices of ``partition_mb``: :func:`plan_parts`). A task reads and normalizes its partition
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

import contextlib
import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.config.resolve import Job
from er_framework.data import Pairs, Records
from er_framework.engine import stages
from er_framework.engine.engine import Engine
from er_framework.engine.log import ProgressCallback, StageLog
from er_framework.engine.model import Model
from er_framework.engine.report import finish_report, report_document
from er_framework.engine.result import Result
from er_framework.errors import ErError, Problem
from er_framework.executors.dask_connect import connect
from er_framework.executors.dask_finish import answer_parts, edge_parts
from er_framework.executors.dask_golden import golden_parts
from er_framework.executors.dask_graph import cluster_labels, cluster_sizes
from er_framework.executors.dask_output import write_run
from er_framework.executors.dask_run import DaskRun, options
from er_framework.executors.dask_sections import html_summary, output_tables, run_sections
from er_framework.executors.dask_tasks import JobRef, Part, task_database_pieces
from er_framework.executors.dask_training import read_training
from er_framework.io.database_parts import PIECE_BYTES, group_pieces, scratch_folder
from er_framework.io.frame_parts import frame_chunks
from er_framework.io.outputs import OutputDir
from er_framework.io.parquet_dataset import dataset_files, is_parquet_dataset
from er_framework.io.remote import is_url
from er_framework.io.source_files import partition_ranges


def plan_parts(job: Job, partition_mb: float, database: dict[int, list[Part]] | None = None) -> list[Part]:
    """The input partitions, in source order: each source file (a local path or a URL), split by byte ranges
    where its format allows (local uncompressed JSONL/CSV/TSV); each Parquet file of a dataset folder; each
    partition of a Dask DataFrame given in memory, and row slices of about ``partition_mb`` of any other table
    given in memory (:func:`~er_framework.io.frame_parts.frame_chunks`); a database source's partitions are
    ``database[i]`` (:func:`database_parts`)."""
    parts: list[Part] = []
    for i, src in enumerate(job.spec.sources):
        if src.database is not None:
            parts += (database or {})[i]
            continue
        if src.name in job.frames:
            where = f"sources[{i}] {src.name!r} (given in memory)"
            parts += [Part(i, w, None, data=chunk) for w, chunk in frame_chunks(job.frames[src.name], where, int(partition_mb * 2**20))]
            continue
        for file in job.source_inputs(i):  # a glob pattern: every file, in name order
            parts += _file_parts(job, i, file, partition_mb)
    return parts


#: partitions per worker the default partition size aims at (a worker with one partition more than another waits less)
PARTS_PER_WORKER = 4


def partition_size(job: Job, workers: int, other_bytes: int = 0) -> float:
    """MB per partition: the job's ``partition_mb`` when it sets one; otherwise the default (64 MB), made smaller
    for a small input so that each of the ``workers`` gets :data:`PARTS_PER_WORKER` partitions (at least 1 MB).
    ``other_bytes``: the input besides the files (a database source's text, read already)."""
    params = options(job)
    if "partition_mb" in params.model_fields_set:
        return params.partition_mb
    total = other_bytes
    for i, src in enumerate(job.spec.sources):
        if src.name in job.frames or src.database is not None:
            continue
        for path in job.source_inputs(i):
            if not is_url(path) and Path(path).is_file():
                total += Path(path).stat().st_size
    return min(params.partition_mb, max(1.0, total / 2**20 / (PARTS_PER_WORKER * max(1, workers))))


def _file_parts(job: Job, i: int, path: str, partition_mb: float) -> list[Part]:
    """The partitions of one input of source ``i``: a dataset's files, a local file's byte ranges, or the file."""
    src = job.spec.sources[i]
    if is_parquet_dataset(path):
        return [Part(i, f.location, None, hive=f.partitions) for f in dataset_files(path, f"{job.config_path}: sources[{i}].path")]
    ranges = None
    if src.layout == "wide" and not is_url(path):
        ranges = partition_ranges(path, int(partition_mb * 2**20), src.read_options()["dialect"])
    if ranges is None:
        return [Part(i, path, None)]
    return [Part(i, path, r) for r in ranges]


def _client(job: Job) -> tuple[Any, Callable[[], None]]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ErError(
            Problem(
                where=str(job.config_path),
                path="executor",
                message="executor type dask needs Dask: it is not installed",
                fix='pip install "er-framework[dask]"',
            )
        ) from None
    ex = options(job)
    if ex.local_cluster is not None:
        lc = ex.local_cluster
        cluster = LocalCluster(
            n_workers=lc.n_workers,
            threads_per_worker=lc.threads_per_worker,
            processes=True,
            memory_limit=lc.memory_limit or "auto",
            dashboard_address=None,
        )
        client = Client(cluster)

        def close() -> None:
            client.close()
            cluster.close()

        return client, close
    client = connect(Client, str(ex.address), str(job.config_path))
    return client, client.close


def run_dask(
    job: Job,
    out_dir: str | Path | OutputDir | None = None,
    *,
    progress: ProgressCallback | None = None,
    write: bool = True,
    model: Model | None = None,
) -> Result:
    """Run ``job`` on Dask with the local executor's answer: the same pairs, clusters and report sections, the
    tables written by the workers (``model``: a saved model applied instead of fitting, as locally). The
    client holds O(partitions): the result's tables are the written outputs (:attr:`Result.outputs`)."""
    t_start = time.perf_counter()
    engine = Engine(job, model)
    _check_job(job, engine)  # what cannot run on Dask is said first
    if not write:
        raise ErError(
            Problem(
                where=str(job.config_path),
                path="executor",
                message="the dask executor writes its outputs on the workers and returns none in memory: it needs an output folder",
                fix="give an output folder (er run --out DIR, or er_framework.run(job, out=DIR)), or use executor: {type: local}",
            )
        )
    out_path = stages.require_out_dir(job, out_dir, write, model)
    assert out_path is not None
    text = Path(job.config_path).read_text(encoding="utf-8")
    ref = JobRef(
        text,
        str(Path(job.config_path).resolve()),
        str(job.base_dir),
        hashlib.sha256((text + str(job.base_dir)).encode()).hexdigest(),
        tuple(job.frames),
    )
    log = StageLog(progress=progress)
    client, close = _client(job)
    try:
        with contextlib.ExitStack() as scratch:
            report, outputs, engine = _run(job, engine, ref, client, out_path, log, t_start, scratch)
    finally:
        close()
    finish_report(report, log, t_start)
    names = [s.name for s in job.spec.sources]
    empty = Records(ids=[], source=np.zeros(0, np.int32), source_names=names, fields={})
    return Result(
        records=empty, pairs=Pairs.empty(scored=True), labels=np.zeros(0, np.int64), report=report, outputs=outputs, model=engine.model
    )


def read_databases(client: Any, job: Job, ref: JobRef, scratch: contextlib.ExitStack, out_path: Path) -> dict[int, Any]:
    """Each database source read once on a worker into pieces in a scratch folder inside the output folder
    (which the workers share; removed when the run ends): ``{source: (what was read, pieces, seconds)}``."""
    indices = [i for i, s in enumerate(job.spec.sources) if s.database is not None]
    if not indices:
        return {}
    folder = scratch.enter_context(scratch_folder(out_path))
    params = options(job)
    piece = PIECE_BYTES
    if "partition_mb" in params.model_fields_set:  # pieces small enough to make partitions of that size
        piece = max(1, min(PIECE_BYTES, int(params.partition_mb * 2**20 / 4)))
    futs = [client.submit(task_database_pieces, ref, i, str(folder), piece, pure=False) for i in indices]
    return dict(zip(indices, client.gather(futs)))


def database_parts(job: Job, read: dict[int, Any], partition_mb: float) -> dict[int, list[Part]]:
    """The partitions of each database source: its consecutive pieces grouped to about ``partition_mb``
    (one partition of every piece for ``layout: long``, whose records span rows)."""
    out: dict[int, list[Part]] = {}
    for i, (rows, pieces, _) in read.items():
        groups = group_pieces(pieces, partition_mb * 2**20, whole=job.spec.sources[i].layout == "long")
        out[i] = [Part(i, g[0].path, None, database=rows, pieces=tuple(g)) for g in groups]
    return out


def _run(
    job: Job, engine: Engine, ref: JobRef, client: Any, out_path: Path, log: StageLog, t_start: float, scratch: contextlib.ExitStack
) -> tuple[dict[str, Any], dict[str, Path], Engine]:
    """The run's phases on the client (:func:`run_dask`): its report, its outputs and the engine it ends with."""
    db = read_databases(client, job, ref, scratch, out_path)
    db_bytes = sum(p.bytes for _, pieces, _ in db.values() for p in pieces)
    mb = partition_size(job, len(client.scheduler_info()["workers"]), db_bytes)
    run = DaskRun(job, engine, ref, client, plan_parts(job, mb, database_parts(job, db, mb)), partition_mb=mb)
    run.database_stats = {job.spec.sources[i].name: {**rows.stats, "seconds": round(sec, 4)} for i, (rows, _, sec) in db.items()}
    scanned = run.scan(log)
    run.training = read_training(run, scanned, log)  # a bad labels file fails before the expensive stages
    run.prune(scanned, log)
    run.send_model()
    with log.stage("block") as info:
        blocked = run.block(scanned, info)
    with log.stage("verify") as info:
        found = run.verify(scanned, blocked, info, log)
    # the blocking stage's time is spent inside verify (lazy futures); both are reported
    engine = run.engine  # the model as the run left it (pruned shingles, fitted state, chosen threshold)
    with log.stage("cluster") as info:
        edges = edge_parts(run, scanned, found.verified)
        clusters = cluster_labels(
            client, edges, scanned.offsets, engine.clusterer, link=engine.link, source_of_partition=scanned.source_of_part
        )
        sizes = cluster_sizes(client, clusters)
        info.update(sizes.summary.stats)
    with log.stage("write"):
        answer = answer_parts(run, scanned, found.verified, clusters.labels, engine.clusterer.selects_pairs)
        per_source = dict(zip((s.name for s in job.spec.sources), (int(c) for c in scanned.per_source(len(job.spec.sources)))))
        engine = run.engine = engine.with_model(
            engine.model_of_counts(per_source, found.n_candidates, run.training.stats if run.training else {})
        )
        golden = golden_parts(run, scanned, clusters)  # built once: reported and written
        report = report_document(job, engine, run_sections(run, scanned, blocked, found, edges, clusters, sizes, answer, golden), log)
        finish_report(report, log, t_start)
        summary = (lambda: html_summary(run, scanned, clusters, sizes, answer, report)) if job.spec.output.report else None
        outputs = write_run(run, out_path, output_tables(run, scanned, found, clusters, answer, golden), report, engine.model, summary)
    return report, outputs, engine


def _check_job(job: Job, engine: Engine) -> None:
    """Refuse, before a cluster starts, what cannot run partition by partition (each component named)."""
    engine.require_lookup(str(job.config_path), "the dask executor blocks and verifies partition by partition", scope="partition")
