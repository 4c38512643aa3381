"""The local executor: every stage in this process, one after the other."""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path

from er_framework.config.resolve import Job
from er_framework.engine import stages
from er_framework.engine.engine import Engine
from er_framework.engine.log import ProgressCallback, StageLog
from er_framework.engine.model import Model
from er_framework.engine.report import RunFacts, finish_run
from er_framework.engine.result import Result
from er_framework.engine.shared import is_large, read_shared, start_worker
from er_framework.io.outputs import OutputDir

__all__ = ["run_local"]


def run_local(
    job: Job,
    out_dir: str | Path | OutputDir | None = None,
    *,
    progress: ProgressCallback | None = None,
    write: bool = True,
    model: Model | None = None,
) -> Result:
    """Run a validated job in this process; write outputs atomically to ``out_dir``.

    ``model``: a saved model to apply (checked against the job by the caller); without one, what the job
    learns is fitted here. The result's :attr:`~er_framework.engine.result.Result.model` is the model used.
    """
    t_start = time.perf_counter()
    out_path = stages.require_out_dir(job, out_dir, write, model)
    engine = Engine(job, model)
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
    m = stages.match_records(engine, records, log)
    ver = m.verified
    facts = RunFacts(
        records=records,
        exact=m.exact,
        candidates=m.candidates,
        candidate_count=len(m.candidates),
        scores=ver.scores,
        verified=ver.verified,
        pairs=ver.pairs,
        labels=m.labels,
        blockers=m.blocker_reports,
        source_stats=source_stats,
        normalize_stats=normalize_stats,
        tokens=m.shingled.report,
        shingler=m.shingled.shingler_report,
        diagnostics=m.diagnostics,
        explain=stages.explainer(m.engine, m.batch, m.exact, n),
        training=m.training,
        verifier_report=ver.verifier_report,
    )
    return finish_run(job, m.engine, facts, log, t_start, out_path if write else None, as_read)
