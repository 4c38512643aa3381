"""Golden records on Dask (``output: {golden: …}``): the local run's ``golden`` table, built on the workers.

Golden part ``k`` holds the golden records of the clusters *rooted* in input partition ``k`` (the cluster
ids ``base[k] .. base[k+1]-1`` of :class:`~er_framework.executors.dask_graph.ClusterLabels`: canonical ids
are numbered in order of each cluster's first record), so the parts in order are the local table's rows
(by ``cluster_id``). A cluster's members may lie in any partition:

1. **split** — one task per input partition reads its records *as read* (before ``normalize:``, HTML
   columns as text, as the local run keeps them) and sends each record (its cluster id, id, source and the
   fields the golden records use) to the golden part that roots its cluster;
2. **part** — golden part ``k`` joins the pieces of every input partition in partition order (so each
   cluster's members are in global-index order, as locally: the rules' ties go to the same record) and
   runs :func:`~er_framework.engine.stages.golden.golden_table` on them.

The client holds the futures and, for report.json's ``golden`` section, one small summary per part
(:func:`~er_framework.engine.stages.golden.golden_section` of each part, summed: :func:`golden_report`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from er_framework.config.resolve import Job
from er_framework.data import Records
from er_framework.engine.stages.golden import GOLDEN_TABLE, golden_plan, golden_section, golden_table, job_fields
from er_framework.executors.dask_output import TableParts
from er_framework.executors.dask_tasks import Int64Array, JobRef, Part, engine, read_as_read

__all__ = [
    "GoldenPiece",
    "golden_columns",
    "golden_fields",
    "golden_parts",
    "golden_report",
    "merge_golden_sections",
    "task_golden_part",
    "task_golden_section",
    "task_golden_split",
]


@dataclass
class GoldenPiece:
    """The records of one input partition (of source ``source``) whose clusters one golden part roots, in the
    partition's order: their cluster ids, ids and the values as read of the fields the golden records use."""

    source: int
    labels: Int64Array
    ids: list[Any]
    fields: dict[str, list[Any]]


def golden_fields(job: Job) -> list[str]:
    """The fields a golden record is made of: the job's fields, then any ``by:`` field that is not one."""
    out = job_fields(job)
    return out + list(dict.fromkeys(p.by for p in golden_plan(job) if p.by is not None and p.by not in out))


def golden_columns(job: Job) -> list[str]:
    """The golden table's columns, as the local run writes them: ``cluster_id``, ``size``, then per field of the
    job its value, ``<field>_source`` and ``<field>_id``."""
    return ["cluster_id", "size", *[c for f in job_fields(job) for c in (f, f"{f}_source", f"{f}_id")]]


def _take(column: Any, rows: Int64Array) -> list[Any]:
    take = getattr(column, "take", None) if not isinstance(column, list) else None
    if callable(take):  # a file-backed column: read the rows asked for only
        return list(take(rows))
    return [column[i] for i in rows.tolist()]


def task_golden_split(ref: JobRef, part: Part, labels: Int64Array, base: Int64Array) -> list[GoldenPiece]:
    """Input partition ``part`` read as read (``labels``: its records' cluster ids) and split into one
    :class:`GoldenPiece` per golden part (``base``: the first cluster id of each part, and the count)."""
    job = engine(ref).job
    recs = read_as_read(ref, part)
    lab = np.asarray(labels, dtype=np.int64)
    if len(lab) != len(recs):
        raise ValueError(f"{part.path}: {len(recs)} records read but {len(lab)} cluster labels (the input changed during the run?)")
    fields = [f for f in golden_fields(job) if f in recs.fields]
    dest = np.searchsorted(base, lab, side="right") - 1
    order = np.argsort(dest, kind="stable").astype(np.int64)  # each part's rows in the partition's order
    bounds = np.searchsorted(dest[order], np.arange(len(base)), side="left")
    pieces = []
    for k in range(len(base) - 1):
        rows = order[bounds[k] : bounds[k + 1]]
        pieces.append(GoldenPiece(part.source, lab[rows], _take(recs.ids, rows), {f: _take(recs.fields[f], rows) for f in fields}))
    return pieces


def _joined(job: Job, pieces: tuple[GoldenPiece, ...]) -> tuple[Records, Int64Array]:
    """The pieces' records one after the other, with their cluster ids (a field a piece lacks: missing)."""
    names = [s.name for s in job.spec.sources]
    fields: dict[str, list[Any]] = {f: [] for f in golden_fields(job)}
    for p in pieces:
        n = len(p.labels)
        for f, values in fields.items():
            values.extend(p.fields.get(f, [None] * n))
    source = np.concatenate([np.full(len(p.labels), p.source, dtype=np.int32) for p in pieces]) if pieces else np.zeros(0, np.int32)
    labels = np.concatenate([p.labels for p in pieces]).astype(np.int64) if pieces else np.zeros(0, np.int64)
    ids = [i for p in pieces for i in p.ids]
    return Records(ids=ids, source=source, source_names=names, fields=dict(fields)), labels


def task_golden_part(ref: JobRef, *pieces: GoldenPiece) -> dict[str, Any]:
    """One golden part: the golden records of the clusters whose members ``pieces`` hold (one piece per input
    partition, in partition order), as :func:`~er_framework.engine.stages.golden.golden_table` gives them."""
    job = engine(ref).job
    spec = job.spec.output.golden
    assert spec is not None, "golden parts are built for a job with output.golden"
    records, labels = _joined(job, pieces)
    return golden_table(records, labels, golden_plan(job), singletons=spec.singletons)


def task_golden_section(ref: JobRef, table: dict[str, Any]) -> dict[str, Any]:
    """report.json's ``golden`` section of one part's rows (:func:`merge_golden_sections` sums the parts')."""
    return golden_section(engine(ref).job, table)


def merge_golden_sections(sections: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``golden`` section of the whole table from its parts' sections: the rows and each field's filled
    values summed (what the parts' sections count is per row, so the sums are the whole table's)."""
    if not sections:
        raise ValueError("no golden sections to merge: a run has at least one part")
    out = copy.deepcopy(sections[0])
    out["rows"] = int(sum(s["rows"] for s in sections))
    for name, entry in out["fields"].items():
        entry["filled"] = int(sum(s["fields"][name]["filled"] for s in sections))
    return out


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


def golden_parts(run: Any, scanned: Any, clusters: Any) -> TableParts | None:
    """The golden table as parts (one per input partition; None when the job has no ``output.golden``): each
    input partition read once on the workers and split by cluster root, each part built from its pieces."""
    if run.job.spec.output.golden is None:
        return None
    base = np.asarray(clusters.base, dtype=np.int64)
    split = [run.submit(task_golden_split, run.ref, p, clusters.labels[i], base) for i, p in enumerate(run.parts)]
    parts = [run.submit(task_golden_part, run.ref, *[run.submit(_pick, s, k, retries=0) for s in split]) for k in range(len(run.parts))]
    return TableParts(GOLDEN_TABLE, parts, golden_columns(run.job))


def golden_report(run: Any, golden: TableParts) -> dict[str, Any]:
    """report.json's ``golden`` section, from a small summary of each part computed on the workers."""
    sections: list[dict[str, Any]] = run.client.gather([run.submit(task_golden_section, run.ref, t, retries=0) for t in golden.parts])
    return merge_golden_sections(sections)
