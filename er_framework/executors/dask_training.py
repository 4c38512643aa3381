"""``training: {labels: FILE}`` on Dask: the labels read on the client, their records found on the workers.

The labels file is small (people label pairs); the records are not. The client reads the file, asks each
partition which of the named ids it holds (:func:`~er_framework.executors.dask_scan.task_find_ids`: the
ids never leave the workers), and maps each labelled record to its exact-copy representative as the local
run does (:func:`~er_framework.executors.dask_scan.task_representatives`). The labelled pairs' codes are
computed where their records are served (:func:`~er_framework.executors.dask_tasks.task_labelled_codes`)
and the fit on the client takes them with the summed counts of the candidates' codes, as locally.

The report's ``threshold_curve`` over the labelled pairs is merged from each pair part's labelled
candidates (:func:`~er_framework.engine.report_parts.labelled_values_part`, O(labels) per part).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from er_framework.capabilities import LabelledCodes
from er_framework.data import LabelledPairs
from er_framework.engine.log import StageLog
from er_framework.engine.report import labelled_curve
from er_framework.engine.report_parts import labelled_values_part, merge_labelled_values, pair_keys
from er_framework.engine.score_scale import weight_of_threshold
from er_framework.engine.stages.training import ReadLabels, labelled_representatives, learns_from_one_kind, read_labels_found
from er_framework.executors.dask_scan import task_find_ids, task_representatives
from er_framework.executors.dask_tasks import Int64Array, task_labelled_codes

__all__ = ["Training", "labelled_codes", "read_training", "training_curve"]


@dataclass
class Training:
    """The labels of a run on Dask: as read (global indices, for the report's curve), the stats, and when the
    run fits its verifier the labelled pairs between representatives with the records each partition serves."""

    labels: ReadLabels
    stats: dict[str, Any]
    #: the labelled pairs the fit learns from (global indices of representatives); None: nothing is fitted
    labelled: LabelledPairs | None = None
    #: per input partition: the global indices of the labelled pairs' records it serves (sorted)
    need: list[Int64Array] | None = None


def _finder(run: Any, scanned: Any) -> Any:
    """``(source name, id)`` -> global index of the wanted records, looked up by the partitions holding them."""
    names = [s.name for s in run.job.spec.sources]

    def find(wanted: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
        by_source: dict[str, list[str]] = {}
        for source, rid in wanted:
            by_source.setdefault(source, []).append(rid)
        asked = [(i, names[p.source]) for i, p in enumerate(run.parts) if by_source.get(names[p.source])]
        futs = [run.submit(task_find_ids, scanned.ids[i], int(scanned.offsets[i]), by_source[name], retries=1) for i, name in asked]
        found: dict[tuple[str, str], int] = {}
        for (_, name), (ids, gidx) in zip(asked, run.client.gather(futs)):
            found.update({(name, rid): int(g) for rid, g in zip(ids, gidx.tolist())})
        return found

    return find


def _representatives(run: Any, scanned: Any, records: Int64Array) -> Int64Array:
    """Each record's exact-copy representative (itself when the exact stage collapsed nothing of it)."""
    rep = np.asarray(records, dtype=np.int64).copy()
    if not scanned.exact_stats.get("records_collapsed", 0) or len(rep) == 0:
        return rep
    wanted = np.unique(rep)
    got = run.client.gather([run.submit(task_representatives, e, wanted, retries=1) for e in scanned.exact_parts])
    copies = np.concatenate([g[0] for g in got]) if got else np.zeros(0, np.int64)
    reps = np.concatenate([g[1] for g in got]) if got else np.zeros(0, np.int64)
    order = np.argsort(copies)
    copies, reps = copies[order], reps[order]
    at = np.searchsorted(copies, rep)
    hit = at < len(copies)
    hit[hit] = copies[at[hit]] == rep[hit]
    rep[hit] = reps[at[hit]]
    return rep


def read_training(run: Any, scanned: Any, log: StageLog) -> Training | None:
    """The run's labels (None without ``training:``), read before any expensive stage as locally, so that a bad
    labels file fails first; when the run fits its verifier, the labelled pairs it learns from."""
    job, engine = run.job, run.engine
    if job.spec.training is None:
        return None
    names = [s.name for s in job.spec.sources]
    fitting = engine.verifier_state() is None  # a saved model was trained already: the labels draw the curve only
    if not fitting:  # as the local report reads them: any labelled pairs
        labels = read_labels_found(job, _finder(run, scanned), names, one_kind=True)
        return Training(labels, {})
    with log.stage("training") as info:
        labels = read_labels_found(job, _finder(run, scanned), names, one_kind=learns_from_one_kind(engine.verifier))
        info.update(labels.stats)
        rep = _representatives(run, scanned, np.concatenate([labels.left, labels.right]))
        k = len(labels.left)
        labelled, stats = labelled_representatives(job, labels, rep[:k], rep[k:])
        info.update(stats)
    ends = np.unique(np.concatenate([labelled.pairs.left, labelled.pairs.right]))
    owner = np.searchsorted(scanned.offsets, ends, side="right") - 1
    return Training(labels, stats, labelled, [ends[owner == i] for i in range(len(run.parts))])


def labelled_codes(run: Any, training: Training, served: list[Any]) -> LabelledCodes | None:
    """The labelled pairs' codes, computed on the records the partitions serve (``served``: per partition a
    future of the records of ``training.need``); None without labelled pairs to learn from."""
    if training.labelled is None or training.need is None:
        return None
    fut = run.submit(task_labelled_codes, run.ref, training.labelled, served, training.need, run.model)
    got: LabelledCodes = run.client.gather(fut)
    return got


def _labelled_part(part: Any, values: Any, lab_keys: Int64Array, n: int, j: int) -> Any:
    left, right = part[0], part[1]
    return labelled_values_part(left, right, values, lab_keys, n, part=j)


def training_curve(
    run: Any, scanned: Any, training: Training | None, candidates: list[Any], values: list[Any], weighted: bool
) -> dict[str, Any] | None:
    """report.json's ``threshold_curve`` over the labelled pairs: their candidates' values found on the workers
    (per pair part: a future of its candidates ``(left, right, score)`` and one of the values the review
    chooses by: scores, or match weights in bits)."""
    if training is None:
        return None
    labels, n = training.labels, scanned.n
    lab_keys = pair_keys(labels.left, labels.right, n)
    parts = run.client.gather([run.submit(_labelled_part, candidates[j], values[j], lab_keys, n, j, retries=0) for j in range(len(values))])
    threshold = run.engine.threshold
    if weighted:
        return labelled_curve(labels, merge_labelled_values(parts), n, weight_of_threshold(threshold), "bits")
    return labelled_curve(labels, merge_labelled_values(parts), n, threshold, "score")
