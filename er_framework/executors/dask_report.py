"""The Dask executor's report.json sections from per-part summaries (:mod:`er_framework.engine.report_parts`,
:mod:`er_framework.engine.report_cluster_parts`): each pair part or input partition summarizes on its worker,
the client merges the small summaries into the section the local executor computes on whole arrays. Only the
few records a section names (the review's pairs, the chains' bridges) come to the client.

Pair parts are numbered ``0 .. P-1`` in the order of the verify tasks, and positions are positions in a part:
the review's ties are broken by ``(part, position)``, as :mod:`~er_framework.engine.report_parts` says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Pairs, Records
from er_framework.engine import report_cluster_parts as rc
from er_framework.engine import report_parts as rp
from er_framework.engine.engine import Engine
from er_framework.engine.explain import BORDERLINE
from er_framework.engine.report import review_entries
from er_framework.engine.score_scale import Weights, weight_of_threshold
from er_framework.executors.dask_tasks import Int64Array
from er_framework.kernels.hashing import mix64

__all__ = [
    "PartScores",
    "chains_of_parts",
    "link_of_parts",
    "review_of_parts",
    "scores_of_parts",
    "source_of",
    "weights_of_parts",
]

Float64Array = npt.NDArray[np.float64]


def source_of(gidx: Int64Array, offsets: Int64Array, source_of_part: Int64Array) -> Int64Array:
    """The source of records given by global index (every record of a partition has its partition's source)."""
    out: Int64Array = source_of_part[np.searchsorted(offsets, gidx, side="right") - 1]
    return out


def _pick(obj: Any, i: int) -> Any:
    return obj[i]


def _column(run: Any, split: list[Any], j: int) -> list[Any]:
    return [run.submit(_pick, s, j, retries=0) for s in split]


# ---------------------------------------------------------------- scores and weights: two passes


def _values(part: Any) -> Float64Array:
    return np.asarray(part[2], dtype=np.float64)


def _weights_values(w: Weights) -> Float64Array:
    return w.weights


def _two_passes(run: Any, values: list[Any], threshold: float, floor: float) -> tuple[rp.ValueSummary, dict[str, Any]]:
    """The merged pass-1 summary and the histogram of the values of every part."""
    summary = rp.merge_value_summaries(run.client.gather([run.submit(rp.value_summary, v, threshold, floor, retries=0) for v in values]))
    rng = rp.histogram_range(summary, threshold)
    counts = rp.merge_histogram_parts(run.client.gather([run.submit(rp.histogram_part, v, rng, retries=0) for v in values]))
    return summary, rp.histogram_of(rng, counts)


def scores_of_parts(run: Any, candidates: list[Any], engine: Engine) -> dict[str, Any]:
    """``scores``: every candidate's score."""
    values = [run.submit(_values, c, retries=0) for c in candidates]
    summary, histogram = _two_passes(run, values, engine.threshold, -np.inf)
    return rp.scores_section_of(summary, histogram, engine.threshold, engine.score_definition())


@dataclass
class PartScores:
    """What the review chooses by: per pair part a future of its values (scores, or match weights in bits)."""

    values: list[Any]
    threshold: float
    #: per pair part a future of its :class:`Weights` (a verifier scoring match probabilities), else None
    weights: list[Any] | None = None


def weights_of_parts(run: Any, weights: list[Any], engine: Engine) -> tuple[dict[str, Any], PartScores]:
    """``scores.weights`` from the parts' :class:`Weights` futures, and the review's values (the weights)."""
    tw = weight_of_threshold(engine.threshold)
    values = [run.submit(_weights_values, w, retries=0) for w in weights]
    summary, histogram = _two_passes(run, values, tw, rp.WEIGHT_FLOOR)
    counted = run.client.gather([run.submit(_weights_counts, w, retries=0) for w in weights])
    section = rp.weights_section_of(summary, histogram, tw, sum(c[0] for c in counted), sum(c[1] for c in counted))
    return section, PartScores(values, tw, weights)


def _weights_counts(w: Weights) -> tuple[int, int]:
    return int(w.from_terms), int(w.clipped)


# ---------------------------------------------------------------- review


def _rows_at(part: Any, at: Int64Array, values: Float64Array) -> tuple[Int64Array, Int64Array, Float64Array, Float64Array]:
    return part[0][at], part[1][at], np.asarray(part[2], dtype=np.float64)[at], values[at]


def review_of_parts(
    run: Any,
    candidates: list[Any],
    chosen_by: PartScores,
    engine: Engine,
    fetch_records: Any,
    weighted: bool,
) -> dict[str, Any]:
    """``review``: the pairs nearest the threshold over every part (``fetch_records(gidx)``: the normalized
    records at sorted global indices, as a :class:`Records` with their ids and sources)."""
    got = run.client.gather(
        [run.submit(rp.borderline_part, v, chosen_by.threshold, BORDERLINE, j, retries=0) for j, v in enumerate(chosen_by.values)]
    )
    # each part's k nearest, ties by position (a part's candidates are sorted by pair); the whole run's k nearest,
    # ties by pair as the local run's candidates are ordered: every part's entries fetched, then chosen here
    sides = [
        rp.merge_nearest([g.above for g in got], len(got) * BORDERLINE),
        rp.merge_nearest([g.below for g in got], len(got) * BORDERLINE),
    ]
    plan = rp.fetch_plan(np.concatenate([x.part for x in sides]), np.concatenate([x.pos for x in sides]))
    fetched = {p: run.submit(_rows_at, candidates[p], at, chosen_by.values[p], retries=0) for p, at in plan.items()}
    rows = {p: r for p, r in zip(fetched, run.client.gather(list(fetched.values())))}
    left: list[int] = []
    right: list[int] = []
    score: list[float] = []
    value: list[float] = []
    n_above = 0
    for i, side in enumerate(sides):
        at = [(p, int(np.searchsorted(plan[p], q))) for p, q in zip(side.part.tolist(), side.pos.tolist())]
        ends = np.array([[rows[p][0][k], rows[p][1][k]] for p, k in at], dtype=np.int64).reshape(-1, 2)
        chosen = np.lexsort((ends[:, 1], ends[:, 0], side.key))[:BORDERLINE]
        for c in chosen.tolist():
            p, k = at[c]
            left.append(int(rows[p][0][k]))
            right.append(int(rows[p][1][k]))
            score.append(float(rows[p][2][k]))
            value.append(float(rows[p][3][k]))
        if i == 0:
            n_above = len(chosen)
    gidx = np.unique(np.asarray(left + right, dtype=np.int64))
    records: Records = fetch_records(gidx)
    mini = Pairs(np.searchsorted(gidx, left), np.searchsorted(gidx, right), np.asarray(score, dtype=np.float64))
    needs = engine.verifier.needs
    batch = engine.batch(records, tokens="tokens" in needs, signatures="signatures" in needs) if len(records) else None

    def explain(pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
        return engine.comparisons(batch, pairs) if batch is not None else {}

    normalized = sorted(engine.job.normalizers) if engine.job.normalizers else None
    out = review_entries(records, mini, n_above, engine.threshold, explain, np.asarray(value) if weighted else None, normalized)
    for entry in out["above"] + out["below"]:  # the rows are the run's global indices (report.html finds values there)
        for end in ("left", "right"):
            entry[end]["row"] = int(gidx[entry[end]["row"]])
    return out


# ---------------------------------------------------------------- chains


def _edge_labels(edges: Any, labels: Int64Array, offset: int, base: Int64Array) -> list[Any]:
    """A partition's edges (routed to the owner of their left end) with their left end's cluster, sent to the
    partition rooting that cluster (cluster ids ``base[j] .. base[j+1]-1`` are rooted in partition ``j``)."""
    left, right, score = edges
    lab = labels[left - offset]
    dest = np.searchsorted(base, lab, side="right") - 1
    return [(left[dest == j], right[dest == j], score[dest == j]) for j in range(len(base) - 1)]


def _by_left_owner(edges: Any, offsets: Int64Array) -> list[Any]:
    owner = np.searchsorted(offsets, edges[0], side="right") - 1
    return [(edges[0][owner == i], edges[1][owner == i], np.asarray(edges[2])[owner == i]) for i in range(len(offsets) - 1)]


def _concat_edges(*pieces: Any) -> Any:
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return tuple(np.concatenate([p[k] for p in pieces]) for k in range(3))


def _cluster_records(members: Any, labels: Int64Array, offset: int) -> tuple[Int64Array, Int64Array]:
    """The records of the clusters a partition roots (the roots and their members, sorted) and their cluster ids."""
    roots = np.unique(members.root)
    rec = np.concatenate([roots, members.member])
    root_of = np.concatenate([roots, members.root])
    order = np.argsort(rec, kind="stable")
    return rec[order], labels[root_of[order] - offset]


def _requests(records: tuple[Int64Array, Int64Array], offsets: Int64Array) -> list[Int64Array]:
    rec = records[0]
    owner = np.searchsorted(offsets, rec, side="right") - 1
    return [rec[owner == k] for k in range(len(offsets) - 1)]


def _ids_for(ids: npt.NDArray[Any], offset: int, *requests: Int64Array) -> list[npt.NDArray[Any]]:
    return [ids[r - offset] for r in requests]


def _chains_part(
    records: tuple[Int64Array, Int64Array],
    edges: Any,
    offsets: Int64Array,
    source_of_part: Int64Array,
    names: list[str],
    *answers: npt.NDArray[Any],
) -> rc.ChainsPart:
    rec, lab = records
    ids = np.concatenate(answers) if answers else np.zeros(0, dtype=object)  # requests in owner order: rec order
    return rc.chains_part(lab, edges[0], edges[1], edges[2], ids, source_of(rec, offsets, source_of_part), names, rows=rec)


def chains_of_parts(run: Any, scanned: Any, edges: list[Any], clusters: Any, singletons: int) -> dict[str, Any]:
    """``chains``: each partition checks the clusters it roots, with their records and their clustered pairs;
    the ``singletons`` (clusters of one record, which no partition lists) are counted as too small."""
    off_f = run.submit(_same, scanned.offsets, retries=0)
    base = clusters.base
    n_in = len(run.parts)
    names = [s.name for s in run.job.spec.sources]
    by_owner = [run.submit(_by_left_owner, e, off_f) for e in edges]
    owned = [run.submit(_concat_edges, *_column(run, by_owner, i)) for i in range(n_in)]
    labelled = [run.submit(_edge_labels, owned[i], clusters.labels[i], int(scanned.offsets[i]), base) for i in range(n_in)]
    recs = [run.submit(_cluster_records, clusters.members[j], clusters.labels[j], int(scanned.offsets[j])) for j in range(n_in)]
    reqs = [run.submit(_requests, r, off_f) for r in recs]
    answers = [run.submit(_ids_for, scanned.ids[k], int(scanned.offsets[k]), *_column(run, reqs, k)) for k in range(n_in)]
    src_f = run.submit(_same, scanned.source_of_part, retries=0)
    parts = [
        run.submit(
            _chains_part,
            recs[j],
            run.submit(_concat_edges, *_column(run, labelled, j)),
            off_f,
            src_f,
            names,
            *[run.submit(_pick, answers[k], j, retries=0) for k in range(n_in)],
        )
        for j in range(n_in)
    ]
    merged = rc.merge_chains(run.client.gather(parts))
    merged.stats["clusters"] += singletons
    merged.stats["too_small"] += singletons
    return rc.chains_section(merged)


def _same(obj: Any) -> Any:
    return obj


# ---------------------------------------------------------------- link modes


def _sources(part: Any, offsets: Int64Array, source_of_part: Int64Array) -> tuple[Int64Array, Int64Array]:
    return source_of(part[0], offsets, source_of_part), source_of(part[1], offsets, source_of_part)


def _cross(part: Any, offsets: Int64Array, source_of_part: Int64Array) -> rc.CrossScores:
    sl, sr = _sources(part, offsets, source_of_part)
    return rc.cross_scores_part(sl, sr, part[2])


def _link_pairs(part: Any, offsets: Int64Array, source_of_part: Int64Array, grid: list[float], rng: Any) -> rc.LinkPairs:
    sl, sr = _sources(part, offsets, source_of_part)
    return rc.link_pairs_part(sl, sr, part[2], grid, rng)


def _ends_split(part: Any, offsets: Int64Array, source_of_part: Int64Array, lowest: float, n_out: int) -> list[Any]:
    sl, sr = _sources(part, offsets, source_of_part)
    rec, src, sc = rc.link_ends(part[0], part[1], sl, sr, part[2], lowest)
    dest = (mix64(rec.astype(np.uint64)) % np.uint64(max(1, n_out))).astype(np.int64)
    return [(rec[dest == j], src[dest == j], sc[dest == j]) for j in range(n_out)]


def _reach(grid: list[float], n_src: int, *pieces: Any) -> Int64Array:
    joined = _concat_edges(*pieces)
    return rc.link_reach_part(joined[0], joined[1], joined[2], grid, n_src)


def _pair_counts(part: Any, offsets: Int64Array, source_of_part: Int64Array, n_src: int) -> Int64Array:
    sl, sr = _sources(part, offsets, source_of_part)
    return rc.source_pair_counts_part(sl, sr, n_src)


def _table_pair_counts(table: dict[str, Any], names: list[str]) -> Int64Array:
    index = {n: i for i, n in enumerate(names)}
    sl = np.array([index[s] for s in table["left_source"]], dtype=np.int64)
    sr = np.array([index[s] for s in table["right_source"]], dtype=np.int64)
    return rc.source_pair_counts_part(sl, sr, len(names))


def _matched(labels: Int64Array, source: int, n_hash: int) -> list[rc.ClusterSources]:
    return rc.split_cluster_sources(rc.cluster_sources_part(labels, np.full(len(labels), source, dtype=np.int64)), n_hash)


def _matched_part(n_src: int, *tables: rc.ClusterSources) -> Int64Array:
    return rc.matched_counts(rc.merge_cluster_sources(tables), n_src)


def link_of_parts(
    run: Any, scanned: Any, candidates: list[Any], verified: list[Any], final_tables: list[Any], labels: list[Any]
) -> dict[str, Any]:
    """``link``: matched records per source, the candidates' scores by threshold, the pairs per pair of sources."""
    names = [s.name for s in run.job.spec.sources]
    n_src, n_out = len(names), run.n_parts
    off_f = run.submit(_same, scanned.offsets, retries=0)
    src_f = run.submit(_same, scanned.source_of_part, retries=0)
    threshold = float(run.engine.threshold)
    split = [run.submit(_matched, lab, int(scanned.source_of_part[i]), n_out) for i, lab in enumerate(labels)]
    matched = np.sum(run.client.gather([run.submit(_matched_part, n_src, *_column(run, split, j)) for j in range(n_out)]), axis=0)
    cross = rc.merge_cross_scores(run.client.gather([run.submit(_cross, c, off_f, src_f, retries=0) for c in candidates]))
    grid = rc.link_grid(cross, threshold)
    rng = rc.link_histogram_range(cross, threshold)
    pairs = rc.merge_link_pairs(run.client.gather([run.submit(_link_pairs, c, off_f, src_f, grid, rng) for c in candidates]), len(grid))
    reach = np.zeros((len(grid), n_src), dtype=np.int64)
    if grid:
        ends = [run.submit(_ends_split, c, off_f, src_f, grid[0], n_out) for c in candidates]
        reach = np.sum(run.client.gather([run.submit(_reach, grid, n_src, *_column(run, ends, j)) for j in range(n_out)]), axis=0)
    per_pair: dict[str, Int64Array | None] = {
        "candidate_pairs": _summed(run, [run.submit(_pair_counts, c, off_f, src_f, n_src) for c in candidates], n_src),
        "verified_pairs": _summed(run, [run.submit(_pair_counts, v, off_f, src_f, n_src) for v in verified], n_src),
        "pairs": _summed(run, [run.submit(_table_pair_counts, t, names) for t in final_tables], n_src),
    }
    return rc.link_answer_of(names, threshold, np.asarray(matched, dtype=np.int64).reshape(-1)[:n_src], cross, pairs, reach, per_pair)


def _summed(run: Any, futures: list[Any], n_src: int) -> Int64Array:
    got = run.client.gather(futures)
    k = max(n_src, 1)
    return np.sum(got, axis=0).astype(np.int64) if got else np.zeros(k * k, dtype=np.int64)
