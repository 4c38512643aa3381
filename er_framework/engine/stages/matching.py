"""The stages from the normalized records to the clusters, in order: what the local executor runs after
reading, and what the index runs again when it refits (one sequence, two callers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Batch, Pairs, Records
from er_framework.engine.engine import Engine
from er_framework.engine.log import StageLog
from er_framework.engine.stages.blocking import block, diagnostics
from er_framework.engine.stages.clustering import cluster, cluster_stats
from er_framework.engine.stages.exact import Exact, exact_duplicates
from er_framework.engine.stages.shingling import Shingled, prune_shingles, shingle_and_sign
from er_framework.engine.stages.training import ReadLabels, learns_from_one_kind, read_labels, training_labels
from er_framework.engine.stages.verification import Verified, verify

__all__ = ["Matched", "match_records"]


@dataclass
class Matched:
    """What the stages from exact duplicates to clustering found (global record indices)."""

    #: the engine applying the model the run ended with (fitted here, or the saved one)
    engine: Engine
    exact: Exact
    batch: Batch
    shingled: Shingled
    candidates: Pairs
    blocker_reports: list[dict[str, Any]]
    diagnostics: dict[str, Any]
    training: dict[str, Any]
    verified: Verified
    labels: npt.NDArray[np.int64]


def match_records(engine: Engine, records: Records, log: StageLog) -> Matched:
    """[training labels] -> exact duplicates -> [prune] -> shingle + sign -> block -> diagnostics -> [fit] ->
    verify -> cluster, on normalized ``records``; what the job learns goes into the returned engine's model.
    The labels are read first, so that a labels file with a problem fails before the expensive stages."""
    job = engine.job
    n = len(records)
    read: ReadLabels | None = None
    training_info: dict[str, Any] = {}
    if job.spec.training is not None and engine.verifier_state() is None:  # a saved model was trained already
        with log.stage("training") as training_info:
            read = read_labels(job, records, one_kind=learns_from_one_kind(engine.verifier))
            training_info.update(read.stats)
    with log.stage("exact_duplicates") as info:
        exact = exact_duplicates(job, records)
        info.update(exact.stats)
    active = exact.active
    sub = records.take(active) if len(active) != n else records
    batch = Batch(records=sub, active=active, cross_source_only=engine.link, seed=job.context.seed)
    engine, pruning = prune_shingles(engine, sub, log)
    shingled = shingle_and_sign(engine, sub, batch, log, pruning)
    with log.stage("block") as info:
        candidates, blocker_reports = block(engine, batch, exact)
        info["candidate_pairs"] = int(len(candidates))
    found: dict[str, Any] = {}
    if job.spec.diagnostics > 0:
        with log.stage("diagnostics") as info:
            found = diagnostics(engine, batch, job.spec.diagnostics)
            info["entries"] = sorted(found)
    training: dict[str, Any] = {}
    labelled = None
    if read is not None:
        labelled, training = training_labels(job, records, exact, read)
        training_info.update(training)
    ver = verify(engine, batch, candidates, exact, shingled, n, log, labelled)
    engine = ver.engine.with_model(ver.engine.run_model(records, len(candidates), training))
    with log.stage("cluster") as info:
        labels = cluster(engine, n, ver.pairs, records.source)
        info.update(cluster_stats(labels))
    return Matched(engine, exact, batch, shingled, candidates, blocker_reports, found, training, ver, labels)
