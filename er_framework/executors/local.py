"""The local executor: every stage in this process, one after the other."""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable

from er_framework.config.job import Job
from er_framework.data import Batch
from er_framework.engine import stages
from er_framework.engine.shared import is_large, read_shared, start_worker
from er_framework.engine.engine import Engine
from er_framework.engine.log import StageLog
from er_framework.engine.report import RunFacts, finish_run
from er_framework.engine.result import Result
from er_framework.io.outputs import OutputDir

__all__ = ["run_local"]


def run_local(
    job: Job, out_dir: str | Path | OutputDir | None = None, *, progress: Callable[[str], None] | None = None, write: bool = True
) -> Result:
    """Run a validated job in this process; write outputs atomically to ``out_dir``."""
    t_start = time.perf_counter()
    out_path = stages.require_out_dir(job, out_dir, write)
    engine = Engine(job)
    log = StageLog(progress=progress)

    large = is_large(job)
    with start_worker(job) or nullcontext() as worker:  # forked before the read: it holds none of the data
        with log.stage("read") as info:
            # a large job: the normalized columns as Arrow arrays (~their bytes); the last source read by the worker
            read, source_stats = read_shared(job, worker, compact=large)
            n = info["records"] = len(read)
        with log.stage("normalize") as info:
            records, normalize_stats, kept = stages.normalize_keeping_input(job, read, job.context.workers, worker)
            as_read = kept if large else read  # the columns as read (report.html's examples): compact when large
            del read, kept
            info["fields"] = sorted(normalize_stats)
    with log.stage("exact_duplicates") as info:
        exact = stages.exact_duplicates(job, records)
        info.update(exact.stats)

    active = exact.active
    sub = records.take(active) if len(active) != n else records
    batch = Batch(records=sub, active=active, cross_source_only=engine.link, seed=job.context.seed)
    pruning = stages.prune_shingles(engine, sub, log)
    shingled = stages.shingle_and_sign(engine, sub, batch, log, pruning)
    with log.stage("block") as info:
        candidates, blocker_reports = stages.block(engine, batch, exact)
        info["candidate_pairs"] = int(len(candidates))
    diagnostics = {}
    if job.spec.diagnostics > 0:
        with log.stage("diagnostics") as info:
            diagnostics = stages.diagnostics(engine, batch, job.spec.diagnostics)
            info["entries"] = sorted(diagnostics)
    training: dict[str, Any] = {}
    if job.spec.training is not None:
        with log.stage("training") as info:
            engine.verifier.labelled, training = stages.training_labels(job, records, exact)
            info.update(training)
    with log.stage("verify") as info:
        ver = stages.verify(engine, batch, candidates, exact, shingled, n)
        info.update(ver.info)
    with log.stage("cluster") as info:
        labels = stages.cluster(engine, n, ver.pairs)
        info.update(stages.cluster_stats(labels))

    facts = RunFacts(
        records=records, exact=exact, candidates=candidates, candidate_count=len(candidates), scores=ver.scores, verified=ver.verified,
        pairs=ver.pairs, labels=labels, blockers=blocker_reports, source_stats=source_stats,
        normalize_stats=normalize_stats, tokens=shingled.report, shingler=shingled.shingler_report,
        diagnostics=diagnostics,
        explain=stages.explainer(engine, batch, exact, n), training=training,
    )
    return finish_run(job, engine, facts, log, t_start, out_path if write else None, as_read)
