"""The Dask executor's end of a run on the client: report.json's :class:`~er_framework.engine.report.RunSections`
from the workers' summaries (:mod:`er_framework.executors.dask_report`), the output tables as parts
(:mod:`er_framework.executors.dask_output`) and report.html's :class:`~er_framework.report.page.RunSummary`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from er_framework.data import Records
from er_framework.engine.report import RunSections
from er_framework.engine.report_parts import near_one_count, refine_weights
from er_framework.engine.score_scale import is_weight_scored
from er_framework.executors.dask_finish import AnswerParts, pair_tables
from er_framework.executors.dask_golden import golden_report
from er_framework.executors.dask_graph import ClusterLabels, ClusterSizes, members_of
from er_framework.executors.dask_output import PAIR_COLUMNS, TableParts, cluster_view, clusters_part, quantiles_of_parts, task_as_read
from er_framework.executors.dask_report import (
    PartScores,
    chains_of_parts,
    link_of_parts,
    review_of_parts,
    scores_of_parts,
    weights_of_parts,
)
from er_framework.executors.dask_stats import diagnostics_of_parts, window_reports
from er_framework.executors.dask_tasks import Int64Array, task_comparisons, task_serve, task_weights
from er_framework.executors.dask_training import training_curve
from er_framework.report.page import TOP_CLUSTERS, RunSummary
from er_framework.report.review import review_rows

__all__ = ["html_summary", "output_tables", "run_sections"]

#: members of each largest cluster whose values report.html shows
EXAMPLES = 5


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


def _scores(part: Any) -> Any:
    return np.asarray(part[2], dtype=np.float64)


def _owners(run: Any, scanned: Any, gidx: Int64Array) -> dict[int, Int64Array]:
    """The sorted global indices ``gidx`` by the partition holding them."""
    owner = np.searchsorted(scanned.offsets, gidx, side="right") - 1
    return {int(i): gidx[owner == i] for i in np.unique(owner).tolist()}


def fetch_records(run: Any, scanned: Any, gidx: Int64Array) -> Records:
    """The normalized records at the sorted global indices ``gidx`` (a few: the review's), read by their partitions."""
    by_part = _owners(run, scanned, gidx)
    futs = [run.submit(task_serve, run.ref, run.parts[i], int(scanned.offsets[i]), [g]) for i, g in by_part.items()]
    got = [r[0] for r in run.client.gather(futs)]
    names = [s.name for s in run.job.spec.sources]
    if not got:
        return Records(ids=[], source=np.zeros(0, np.int32), source_names=names, fields={})
    stacked = Records.stack(got)  # each partition's records carry the global source number
    return Records(ids=stacked.ids, source=stacked.source, source_names=names, fields=stacked.fields)


def run_sections(
    run: Any,
    scanned: Any,
    blocked: Any,
    found: Any,
    edges: list[Any],
    clusters: ClusterLabels,
    sizes: ClusterSizes,
    answer: AnswerParts,
    golden: TableParts | None = None,
) -> RunSections:
    """report.json's sections of the run's data, merged from the workers' summaries."""
    job, engine = run.job, run.engine
    names = [s.name for s in job.spec.sources]
    described = engine.describe(run.verifier_report)
    weights_section = None
    if is_weight_scored(described["verifier"]):
        near = sum(run.client.gather([run.submit(near_one_count, run.submit(_scores, c, retries=0), retries=0) for c in found.candidates]))
        refine = refine_weights(int(near))
        weights = [
            run.submit(task_weights, run.ref, found.packed[j], *found.served[j], found.candidates[j], refine, run.model)
            for j in range(len(found.candidates))
        ]
        weights_section, chosen_by = weights_of_parts(run, weights, engine)
    else:
        chosen_by = PartScores([run.submit(_scores, c, retries=0) for c in found.candidates], engine.threshold)
    review = review_of_parts(
        run, found.candidates, chosen_by, engine, lambda g: fetch_records(run, scanned, g), weights_section is not None
    )
    curve = training_curve(run, scanned, run.training, found.candidates, chosen_by.values, weights_section is not None)
    link = None
    if job.spec.mode != "dedup":
        link = link_of_parts(run, scanned, found.candidates, found.verified, answer.pairs, clusters.labels)
    per_source = scanned.per_source(len(names))
    windows = window_reports(run, blocked.windows, int(scanned.active_counts.sum()), found.per_blocker)
    return RunSections(
        executor={"partitions": len(run.parts), "workers": scanned.n_workers, "partition_mb": run.partition_mb},
        records={"total": scanned.n, "per_source": dict(zip(names, (int(c) for c in per_source)))},
        # a database source's reading statistics, read on a worker into pieces, with its HTML columns' as read
        sources={n: {**run.database_stats.get(n, {}), **scanned.source_stats.get(n, {})} for n in names},
        normalize=scanned.normalize_stats,
        exact_duplicates=scanned.exact_stats,
        shingler=blocked.shingler,
        tokens=blocked.tokens,
        blockers=[
            {**b.describe(), **rep, **windows.get(i, {}), "candidate_pairs": int(c)}
            for i, (b, rep, c) in enumerate(zip(engine.blockers, found.blocker_reports, found.per_blocker))
        ],
        candidate_pairs=found.n_candidates,
        verified_pairs=found.n_verified,
        pairs=answer.stats,
        scores=scores_of_parts(run, found.candidates, engine),
        review=review,
        clusters=sizes.summary.stats,
        chains=chains_of_parts(run, scanned, edges, clusters, sizes.summary.stats["singletons"]),
        link=link,
        diagnostics=diagnostics_of_parts(run, scanned),
        verifier_report=run.verifier_report,
        weights=weights_section,
        training=run.training.stats if run.training is not None else {},
        threshold_curve=curve,
        golden=golden_report(run, golden) if golden is not None else None,
    )


def _columns(table: dict[str, Any]) -> list[str]:
    return list(table)


def output_tables(
    run: Any, scanned: Any, found: Any, clusters: ClusterLabels, answer: AnswerParts, golden: TableParts | None = None
) -> list[TableParts]:
    """The run's output tables as parts: pairs, clusters, and as the job asks verified_pairs, candidates, comparisons,
    golden."""
    out = run.job.spec.output
    names = [run.job.spec.sources[p.source].name for p in run.parts]
    tables = [
        TableParts("pairs", answer.pairs, list(PAIR_COLUMNS)),
        TableParts(
            "clusters",
            [run.submit(clusters_part, scanned.ids[i], clusters.labels[i], names[i], retries=0) for i in range(len(run.parts))],
            ["source", "id", "cluster_id"],
        ),
    ]
    if answer.verified is not None:
        tables.append(TableParts("verified_pairs", answer.verified, list(PAIR_COLUMNS)))
    if out.candidates:
        tables.append(TableParts("candidates", pair_tables(run, scanned, found.candidates, None), list(PAIR_COLUMNS)))
    if out.comparisons:
        compared = [
            run.submit(task_comparisons, run.ref, found.packed[j], *found.served[j], found.candidates[j], run.model)
            for j in range(len(found.packed))
        ]
        parts = pair_tables(run, scanned, compared, None)
        terms = [c for cols in run.client.gather([run.submit(_columns, p, retries=0) for p in parts]) for c in cols]
        order = list(dict.fromkeys(c for c in terms if c not in PAIR_COLUMNS))
        tables.append(TableParts("comparisons", parts, [*PAIR_COLUMNS[:4], *order, "score"]))
    if golden is not None:  # golden_parts
        tables.append(golden)
    return tables


def _inside(table: dict[str, Any], chosen: list[int]) -> dict[int, list[float]]:
    """The scores of a part's written pairs inside each chosen cluster."""
    same = table["left_cluster"] == table["right_cluster"]
    return {c: table["score"][same & (table["left_cluster"] == c)].tolist() for c in chosen}


def html_summary(
    run: Any, scanned: Any, clusters: ClusterLabels, sizes: ClusterSizes, answer: AnswerParts, report: dict[str, Any]
) -> RunSummary:
    """What report.html shows of the run: the largest clusters with the values of a few members, the review's
    records' values, the written pairs' score quartiles."""
    chosen = [cid for cid, _ in sizes.summary.largest[:TOP_CLUSTERS]]
    members = members_of(run.client, clusters, scanned.offsets, chosen) if chosen else {}
    shown = {cid: np.asarray(sorted(members.get(cid, [])), dtype=np.int64) for cid in chosen}
    rows = {int(r) for m in shown.values() for r in m[:EXAMPLES].tolist()} | set(review_rows(report).values())
    wanted = np.asarray(sorted(rows), dtype=np.int64)
    fields: list[str] = []
    values: dict[tuple[str, str], dict[str, Any]] = {}
    key_of: dict[int, tuple[str, str]] = {}
    by_part = _owners(run, scanned, wanted)
    futs = {i: run.submit(task_as_read, run.ref, run.parts[i], g - scanned.offsets[i]) for i, g in by_part.items()}
    for i, (f, got) in zip(futs, run.client.gather(list(futs.values()))):
        fields = fields or f
        values.update(got)
        key_of.update(zip(by_part[i].tolist(), got))
    largest = []
    for cid in chosen:
        m = shown[cid]
        named = [key_of[int(r)] for r in m[:EXAMPLES].tolist()]
        largest.append((str(cid), named + [("", "")] * (len(m) - len(named))))  # only the first are shown; the count is all
    inside: dict[str, list[float]] = {str(c): [] for c in chosen}
    if chosen:
        for part in run.client.gather([run.submit(_inside, t, chosen, retries=0) for t in answer.pairs]):
            for c, sc in part.items():
                inside[str(c)].extend(sc)
    view = cluster_view(sizes.summary.histogram, largest, {k: v for k, v in inside.items() if v})
    return RunSummary(view, (values, fields, None), quantiles_of_parts(run, answer.pairs))
