"""The one report builder: ``report.json``'s sections, the same for every executor and the index.

report.html is drawn from these sections and the written outputs by
:mod:`er_framework.report.page` (called from the write stage).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.config.resolve import ComponentSpec, Job
from er_framework.data import Pairs, Records
from er_framework.engine.engine import Engine
from er_framework.engine.explain import BORDERLINE, input_fingerprints, row_of_terms
from er_framework.engine.log import StageLog
from er_framework.engine.plausibility import NEAR_IDENTICAL_JACCARD, warnings_of
from er_framework.engine.report_cluster_parts import (
    CHAINS_LISTED,
    LINK_BINS,
    SOURCE_PAIR_ROWS,
    chains_part,
    chains_section,
    link_answer_dict,
    merge_chains,
    source_pair_rows,
    threshold_grid,
)
from er_framework.engine.report_parts import (
    BORDERLINE_STEP,
    NEAR_IDENTICAL_SAMPLE,
    SCORE_BINS,
    LabelledValues,
    borderline_part,
    labelled_pair_values,
    merge_labelled_values,
    merge_top_scores,
    near_identical_choice,
    near_identical_section,
    pair_keys,
    scores_section_parts,
    top_scores_part,
    weights_section_parts,
)
from er_framework.engine.result import Result
from er_framework.engine.score_scale import Weights, is_weight_scored, match_weights, weight_of_threshold
from er_framework.engine.stages.clustering import Answer, answer, cluster_stats
from er_framework.engine.stages.exact import Exact
from er_framework.engine.stages.golden import golden_plan, golden_section, golden_table
from er_framework.engine.stages.training import ReadLabels, read_labels
from er_framework.engine.stages.writing import comparisons_table, output_tables, write
from er_framework.engine.threshold_curve import threshold_curve
from er_framework.errors import ErError, Problem
from er_framework.kernels.groups import sorted_unique

__all__ = [
    "BORDERLINE_STEP",
    "CHAINS_LISTED",
    "NEAR_IDENTICAL_SAMPLE",
    "SCORE_BINS",
    "borderline",
    "borderline_reference",
    "review_entries",
    "review_section",
    "scores_section",
    "RunFacts",
    "RunSections",
    "report_document",
    "build_report",
    "chained_clusters",
    "labels_curve",
    "labelled_curve",
    "weights_section",
    "er_version",
    "finish_report",
    "finish_run",
    "golden_of_run",
    "link_answer",
    "model_section",
    "link_answer_reference",
    "SOURCE_PAIR_ROWS",
    "near_identical_found",
    "near_identical_rejected",
    "near_identical_rejected_reference",
    "record_grams",
    "versions",
]

Int64Array = npt.NDArray[np.int64]


def er_version() -> str:
    try:
        return metadata.version("er-framework")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def versions(job: Job) -> dict[str, Any]:
    """Versions of the framework, Python, numpy and the plugin of every component the job uses."""
    used: dict[str, Any] = {}
    specs: list[ComponentSpec | None] = [job.shingler, job.signature, *job.blockers, job.verifier, job.clusterer]
    specs += [step for chain in job.normalizers.values() for step in chain]
    for spec in specs:
        if spec is None:
            continue
        info = job.registry.components[spec.family][spec.cls.name]
        used[f"{spec.family}:{spec.cls.name}"] = {
            "plugin": info.plugin.name,
            "distribution": info.plugin.distribution,
            "version": info.plugin.version,
        }
    return {"er_framework": er_version(), "python": platform.python_version(), "numpy": np.__version__, "components": used}


def link_answer(
    source: npt.NDArray[Any],
    names: list[str],
    candidates: Pairs,
    scores: npt.NDArray[np.float64],
    labels: Int64Array,
    threshold: float,
    verified: Pairs | None = None,
    final: Pairs | None = None,
) -> dict[str, Any]:
    """Link modes: how many records of each source matched another source.

    ``matched`` counts, after clustering, the records of each source whose
    cluster holds a record of another source (with ``one_to_one`` that is the
    number of matched pairs). ``by_threshold`` counts, from the scored
    candidates before clustering, the records of each source having at least
    one cross-source pair at or above each threshold (the chosen one and a
    few around it); ``score_histogram`` is the distribution of the
    cross-source candidate scores.

    How: a cluster's sources are marked in a (cluster, source) table; only
    the cross-source pairs scoring at least the grid's lowest threshold are
    looked at for ``by_threshold`` (each record's best such score, counted
    per threshold). :func:`link_answer_reference` is the plain twin.

    ``by_source_pair`` counts per pair of sources (A–B, A–C, B–C, …) the
    candidate pairs, the ``verified`` pairs (at or above the threshold) and
    the ``final`` pairs (the answer: ``pairs.csv``), each pair of records
    counted under its two records' sources (a pair within one source, of
    link_and_dedup, under that source twice). Every pair of two different
    sources is listed when there are at most :data:`SOURCE_PAIR_ROWS`
    sources; pairs within a source, and with more sources every pair of
    sources, only when one of their counts is not zero.
    """
    src = source
    n_src = len(names)
    # clusters holding records of more than one source
    if len(labels):
        present = np.zeros((int(labels.max()) + 1, max(n_src, 1)), dtype=bool)
        present[labels, src] = True
        mixed = present.sum(axis=1)[labels] > 1
    else:
        mixed = np.zeros(0, dtype=bool)
    matched = {names[i]: int(np.count_nonzero(mixed & (src == i))) for i in range(n_src)}

    cross = np.empty(len(candidates), dtype=bool)
    for a in range(0, len(candidates), 1 << 22):  # in steps: no gathered source column of every pair
        b = a + (1 << 22)
        np.not_equal(src[candidates.left[a:b]], src[candidates.right[a:b]], out=cross[a:b])
    every = bool(cross.all())  # (link mode's blockers pair across sources only: no copies then)
    sc = scores if every else scores[cross]
    ok = np.isfinite(sc)
    finite = sc if ok.all() else sc[ok]
    hi = float(finite.max()) if len(finite) else threshold
    grid = threshold_grid(threshold, hi)
    by_threshold = []
    if grid:
        # the pairs that count for some threshold of the grid, and each record's best score among them
        keep = np.flatnonzero(sc >= grid[0])
        if not every:
            keep = np.flatnonzero(cross)[keep]
        ks = scores[keep]
        ends = np.concatenate([candidates.left[keep], candidates.right[keep]])
        best = np.full(len(src), -np.inf)
        np.maximum.at(best, ends, np.concatenate([ks, ks]))
        for t in grid:
            row: dict[str, Any] = {"threshold": t, "pairs": int(np.count_nonzero(ks >= t))}
            reached = best >= t
            for i in range(n_src):
                row[names[i]] = int(np.count_nonzero(reached & (src == i)))
            by_threshold.append(row)
    per_pair = {
        "candidate_pairs": _source_pair_counts(src, n_src, candidates),
        "verified_pairs": _source_pair_counts(src, n_src, verified),
        "pairs": _source_pair_counts(src, n_src, final),
    }
    return _link_answer_of(names, threshold, matched, by_threshold, finite, hi, source_pair_rows(names, per_pair))


def _source_pair_counts(src: npt.NDArray[Any], n_src: int, pairs: Pairs | None) -> dict[tuple[int, int], int] | None:
    """How many of ``pairs`` join records of sources ``(s, t)``, ``s <= t`` (a bincount over ``s * k + t``, in steps)."""
    if pairs is None:
        return None
    k = max(n_src, 1)
    counts = np.zeros(k * k, dtype=np.int64)
    for a in range(0, len(pairs), 1 << 22):
        b = a + (1 << 22)
        sl, sr = src[pairs.left[a:b]].astype(np.int64), src[pairs.right[a:b]].astype(np.int64)
        counts += np.bincount(np.minimum(sl, sr) * k + np.maximum(sl, sr), minlength=k * k)
    return {(int(i // k), int(i % k)): int(counts[i]) for i in np.flatnonzero(counts).tolist()}


def _link_answer_of(
    names: list[str],
    threshold: float,
    matched: dict[str, int],
    by_threshold: list[dict[str, Any]],
    finite: npt.NDArray[np.float64],
    hi: float,
    by_source_pair: list[dict[str, Any]],
) -> dict[str, Any]:
    """The link answer's dict, with the histogram of the cross-source scores ``finite`` (at most ``hi``)."""
    lo = float(finite.min()) if len(finite) else 0.0
    if len(finite):
        counts, edges = np.histogram(finite, bins=LINK_BINS, range=(min(lo, threshold), max(hi, threshold)))
    else:
        counts, edges = np.zeros(0), np.zeros(0)
    histogram = {"edges": [round(float(e), 6) for e in edges], "counts": [int(c) for c in counts]}
    return link_answer_dict(names, threshold, matched, by_threshold, histogram, by_source_pair)


def link_answer_reference(
    source: npt.NDArray[Any],
    names: list[str],
    candidates: Pairs,
    scores: npt.NDArray[np.float64],
    labels: Int64Array,
    threshold: float,
    verified: Pairs | None = None,
    final: Pairs | None = None,
) -> dict[str, Any]:
    """Plain twin of :func:`link_answer` (clusters' sources by a sort, every threshold's records by a
    distinct count of the pairs above it): the tests' oracle."""
    src = source
    n_src = len(names)
    order = np.lexsort((src, labels))
    lab, s_sorted = labels[order], src[order]
    first = np.ones(len(lab), dtype=bool)
    first[1:] = (lab[1:] != lab[:-1]) | (s_sorted[1:] != s_sorted[:-1])
    sources_per_cluster = np.bincount(lab[first], minlength=int(labels.max()) + 1 if len(labels) else 0)
    mixed = sources_per_cluster[labels] > 1 if len(labels) else np.zeros(0, dtype=bool)
    matched = {names[i]: int((mixed & (src == i)).sum()) for i in range(n_src)}
    cross = src[candidates.left] != src[candidates.right]
    left, right, sc = candidates.left[cross], candidates.right[cross], scores[cross]
    finite = sc[np.isfinite(sc)]
    hi = float(finite.max()) if len(finite) else threshold
    by_threshold = []
    for t in threshold_grid(threshold, hi):
        keep = sc >= t
        lk, rk = left[keep], right[keep]
        row: dict[str, Any] = {"threshold": t, "pairs": int(keep.sum())}
        for i in range(n_src):
            row[names[i]] = int(len(sorted_unique(np.concatenate([lk[src[lk] == i], rk[src[rk] == i]]))))
        by_threshold.append(row)
    rows = []
    for s in range(n_src):
        for t in range(s, n_src):
            row = {"sources": [names[s], names[t]]}
            for what, pairs in (("candidate_pairs", candidates), ("verified_pairs", verified), ("pairs", final)):
                if pairs is None:
                    row[what] = None
                    continue
                row[what] = sum(1 for a, b in zip(src[pairs.left].tolist(), src[pairs.right].tolist()) if {a, b} == {s, t})
            if (s < t and n_src <= SOURCE_PAIR_ROWS) or any(row[w] for w in ("candidate_pairs", "verified_pairs", "pairs")):
                rows.append(row)
    return _link_answer_of(names, threshold, matched, by_threshold, finite, hi, rows)


def chained_clusters(records: Records, pairs: Pairs, labels: Int64Array) -> dict[str, Any]:
    """The report's ``chains`` section: clusters whose written pairs look like a chain of two entities
    (a low-score bridge between dense parts, :func:`er_framework.kernels.chains.chain_flags`), the most
    severe first, each with the two records of its strongest pair across the cut."""
    part = chains_part(labels, pairs.left, pairs.right, pairs.score, records.ids, records.source, records.source_names)
    return chains_section(merge_chains([part]))  # one part: :mod:`er_framework.engine.report_cluster_parts`


def scores_section(scores: npt.NDArray[np.float64], threshold: float, score: dict[str, Any]) -> dict[str, Any]:
    """The report's ``scores``: every candidate's score, below and above the threshold, as a histogram
    (:data:`SCORE_BINS` bins; one part of :func:`~er_framework.engine.report_parts.scores_section_parts`)."""
    return scores_section_parts([scores], threshold, score)


def weights_section(weights: Weights, threshold: float) -> dict[str, Any]:
    """The report's ``scores.weights`` (a verifier whose score is a match probability): every candidate's match
    weight in bits as a histogram, the threshold in bits, and how the weights were obtained."""
    return weights_section_parts([weights], weight_of_threshold(threshold))


def borderline(scores: npt.NDArray[np.float64], threshold: float, k: int = BORDERLINE) -> tuple[Int64Array, Int64Array]:
    """Positions of the ``k`` scores nearest the threshold at or above it, and the ``k`` nearest below it
    (nearest first; ties by position).

    Only the scores at least as near as the ``k``-th nearest (found by a partition, not a sort of
    millions of candidates) are sorted; :func:`borderline_reference` sorts them all. One part of
    :func:`~er_framework.engine.report_parts.borderline_part` (in steps of :data:`BORDERLINE_STEP`)."""
    found = borderline_part(scores, threshold, k, step=BORDERLINE_STEP)
    return found.above.pos, found.below.pos


def borderline_reference(scores: npt.NDArray[np.float64], threshold: float, k: int = BORDERLINE) -> tuple[Int64Array, Int64Array]:
    """Plain twin of :func:`borderline` (every score sorted): the tests' oracle."""
    idx = np.arange(len(scores), dtype=np.int64)
    ok = np.isfinite(scores)
    up = idx[ok & (scores >= threshold)]
    down = idx[ok & (scores < threshold)]
    up = up[np.lexsort((up, scores[up]))][:k]
    down = down[np.lexsort((down, -scores[down]))][:k]
    return up, down


def _side(records: Records, row: int, compared: dict[int, dict[str, str | None]] | None) -> dict[str, Any]:
    side: dict[str, Any] = {"source": records.source_names[int(records.source[row])], "id": str(records.ids[row]), "row": row}
    if compared is not None:
        side["compared"] = compared[row]
    return side


def compared_values(records: Records, rows: Int64Array, fields: list[str]) -> dict[int, dict[str, str | None]] | None:
    """The values the verifier compared (after the job's ``normalize:`` steps) of the ``fields`` of the records at
    ``rows``, by row; None when the records hold no values (an executor that keeps none in this process)."""
    fields = [f for f in fields if f in records.fields]
    if not fields:
        return None
    uniq = np.unique(rows)
    taken = records.take(uniq)
    out: dict[int, dict[str, str | None]] = {}
    for i, r in enumerate(uniq.tolist()):
        out[int(r)] = {f: None if taken.fields[f][i] is None else str(taken.fields[f][i]) for f in fields}
    return out


def review_section(
    records: Records,
    candidates: Pairs | None,
    scores: npt.NDArray[np.float64],
    threshold: float,
    explain: Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None,
    weights: npt.NDArray[np.float64] | None = None,
    normalized: list[str] | None = None,
) -> dict[str, Any]:
    """The report's ``review``: the candidate pairs nearest the threshold on both sides, with their score's terms
    (``terms``: one row of the verifier's comparisons; None when the executor cannot compute them) and each
    record's ``row``, its position in the run's input (report.html finds its values there without a search).

    ``weights``: every candidate's match weight in bits (a verifier scoring match probabilities): the pairs are
    then the nearest by weight to the threshold's weight, and each entry gives its ``weight``. ``normalized``: the
    fields the job normalizes; each side then gives the values the verifier compared (``compared``), which
    report.html shows beside the values as read."""
    if candidates is None or len(candidates) == 0:
        return review_entries(records, Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64)), 0, threshold, explain, None)
    if weights is not None:
        up, down = borderline(weights, weight_of_threshold(threshold))
    else:
        up, down = borderline(scores, threshold)
    chosen = np.concatenate([up, down])
    pairs = Pairs(candidates.left[chosen], candidates.right[chosen], scores[chosen])
    return review_entries(records, pairs, len(up), threshold, explain, None if weights is None else weights[chosen], normalized)


def review_entries(
    records: Records,
    pairs: Pairs,
    above: int,
    threshold: float,
    explain: Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None,
    weights: npt.NDArray[np.float64] | None,
    normalized: list[str] | None = None,
) -> dict[str, Any]:
    """The report's ``review`` of the chosen pairs (global record indices, with their scores): the first ``above``
    are the ones at or above the threshold, nearest first, then the ones below (an executor that holds the
    candidates in parts fetches them by :func:`~er_framework.engine.report_parts.fetch_plan` of the merged
    :func:`~er_framework.engine.report_parts.borderline_part`); ``weights``: theirs, when chosen by weight.
    ``records``: the run's records (ids and sources; values when ``normalized`` fields are shown)."""
    out: dict[str, Any] = {"threshold": threshold, "above": [], "below": []}
    if weights is not None:
        out["weight_threshold"] = round(weight_of_threshold(threshold), 6)
    if not len(pairs):
        return out
    terms = explain(Pairs(pairs.left, pairs.right)) if explain is not None else {}
    compared = compared_values(records, np.concatenate([pairs.left, pairs.right]).astype(np.int64), normalized or [])
    scores = pairs.score if pairs.score is not None else np.ones(len(pairs))
    for j in range(len(pairs)):
        entry = {
            "left": _side(records, int(pairs.left[j]), compared),
            "right": _side(records, int(pairs.right[j]), compared),
            "score": float(scores[j]),
            **({"weight": float(weights[j])} if weights is not None else {}),
            "terms": row_of_terms(terms, j) if terms else None,
        }
        out["above" if j < above else "below"].append(entry)
    return out


def labels_curve(
    job: Job, records: Records, candidates: Pairs | None, values: npt.NDArray[np.float64], threshold: float, scale: str
) -> dict[str, Any] | None:
    """The ``threshold_curve`` of a job trained on labels (``training: {labels: FILE}``), over the labelled pairs
    only: each labelled pair's value is its candidate's (a labelled pair no blocker produced is never kept);
    recall is over the labelled matches. None without labels or candidates."""
    if job.spec.training is None or candidates is None:
        return None
    labels = read_labels(job, records, one_kind=True)  # the report's curve: any labelled pairs (the run checked them for training)
    n = len(records)
    marked = np.zeros(n, dtype=bool)
    marked[labels.left] = marked[labels.right] = True
    found_keys: list[Int64Array] = []
    found_vals: list[npt.NDArray[np.float64]] = []
    found_pos: list[Int64Array] = []
    for a in range(0, len(candidates), BORDERLINE_STEP):  # in steps: only the candidates of labelled records are kept
        lt, rt = candidates.left[a : a + BORDERLINE_STEP], candidates.right[a : a + BORDERLINE_STEP]
        hit = np.flatnonzero(marked[lt] & marked[rt])
        found_keys.append(np.minimum(lt[hit], rt[hit]).astype(np.int64) * np.int64(n) + np.maximum(lt[hit], rt[hit]))
        found_vals.append(values[a + hit])
        found_pos.append((a + hit).astype(np.int64))
    keys, positions = np.concatenate(found_keys), np.concatenate(found_pos)
    part = LabelledValues(keys, np.concatenate(found_vals), np.zeros(len(keys), dtype=np.int64), positions)
    # one part of report_parts.labelled_values_part (there by a search among the labelled keys, here by the marks)
    return labelled_curve(labels, merge_labelled_values([part]), n, threshold, scale)


def labelled_curve(labels: ReadLabels, merged: LabelledValues, n: int, threshold: float, scale: str) -> dict[str, Any]:
    """The ``threshold_curve`` over the labelled pairs from their candidates' values (``merged``: the parts'
    :func:`~er_framework.engine.report_parts.labelled_values_part` of ``n`` records, merged)."""
    lab_keys = pair_keys(labels.left, labels.right, n)
    lab_vals, inside = labelled_pair_values(merged, lab_keys)
    over = (
        f"the {len(lab_keys):,} labelled pairs of {labels.stats['file']} only (their candidates' values; "
        f"{int((~inside).sum()):,} labelled pairs are no candidate and never kept): precision and recall among labelled pairs"
    )
    return threshold_curve(lab_vals, labels.match, int(labels.match.sum()), threshold, scale=scale, over=over)


def record_grams(records: Records, row: int) -> set[tuple[str, str]]:
    """Record ``row``'s character 3-grams, each with its field's name (a value shorter than 3 characters is one gram)."""
    grams: set[tuple[str, str]] = set()
    for name, col in records.fields.items():
        v = col[row]
        if v is None or v == "":
            continue
        text = str(v)
        grams.update((name, text[i : i + 3]) for i in range(max(1, len(text) - 2)))
    return grams


def _jaccard(a: set[tuple[str, str]], b: set[tuple[str, str]]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def near_identical_rejected(
    records: Records, candidates: Pairs, scores: npt.NDArray[np.float64], threshold: float, sample: int = NEAR_IDENTICAL_SAMPLE
) -> dict[str, Any]:
    """The evidence that a run which verified nothing rejected matches: among the ``sample`` best-scored
    candidates and ``sample`` more spread evenly over the rest, how many are near-identical records (a
    Jaccard similarity of at least :data:`~er_framework.engine.plausibility.NEAR_IDENTICAL_JACCARD` of their
    per-field character 3-grams, :func:`record_grams`). Only the chosen pairs' records are read (a
    file-backed column reads those values alone). :func:`near_identical_rejected_reference` checks every pair.
    Of tied scores, the first candidates are taken; the choice is one part's of
    :func:`~er_framework.engine.report_parts.near_identical_choice`."""
    top = merge_top_scores([top_scores_part(scores, sample)], sample)
    _, chosen = near_identical_choice(top, [len(candidates)], sample)
    found = near_identical_found(records, candidates.left[chosen], candidates.right[chosen])
    return near_identical_section(len(chosen), found, top.best, threshold, NEAR_IDENTICAL_JACCARD)


def near_identical_found(records: Records, left: npt.ArrayLike, right: npt.ArrayLike) -> int:
    """How many of the pairs ``(left, right)`` (record indices of ``records``) are near-identical records (a
    Jaccard similarity of their :func:`record_grams` of at least
    :data:`~er_framework.engine.plausibility.NEAR_IDENTICAL_JACCARD`); only their records are read."""
    lt, rt = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    rows = np.unique(np.concatenate([lt, rt]))
    taken = records.take(rows)
    where = {int(r): i for i, r in enumerate(rows)}
    grams = [record_grams(taken, i) for i in range(len(rows))]
    return sum(_jaccard(grams[where[int(a)]], grams[where[int(b)]]) >= NEAR_IDENTICAL_JACCARD for a, b in zip(lt.tolist(), rt.tolist()))


def near_identical_rejected_reference(records: Records, candidates: Pairs) -> int:
    """Plain twin of :func:`near_identical_rejected` for a job of at most its sample: every pair's Jaccard (the tests' oracle)."""
    return sum(
        _jaccard(record_grams(records, int(a)), record_grams(records, int(b))) >= NEAR_IDENTICAL_JACCARD
        for a, b in zip(candidates.left, candidates.right)
    )


@dataclass
class RunFacts:
    """What a run found, in the form every executor can give it (the report's input)."""

    records: Records  # ids and sources (fields may be empty)
    exact: Exact
    candidates: Pairs | None  # global indices, normalized (None: not gathered; link modes need them)
    candidate_count: int
    scores: npt.NDArray[np.float64]  # one per candidate
    verified: Pairs
    pairs: Pairs  # verified + exact: clustered and written
    labels: Int64Array
    blockers: list[dict[str, Any]]
    source_stats: dict[str, Any] = field(default_factory=dict)
    normalize_stats: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)
    #: the shingler's report of the run (a :class:`~er_framework.capabilities.Partitionable` shingler's
    #: ``merge_reports``), added to its ``describe()``
    shingler: dict[str, Any] | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    executor: dict[str, Any] = field(default_factory=dict)
    #: the verifier's comparisons of given pairs (global indices), where the executor holds the records
    explain: Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None = None
    training: dict[str, Any] = field(default_factory=dict)
    #: what the verifier's fit said (None: it fitted nothing in this run, or applied a saved model)
    verifier_report: dict[str, Any] | None = None


@dataclass
class RunSections:
    """The sections of report.json computed from a run's data (whole arrays locally, per-part summaries merged
    on Dask); :func:`report_document` puts them with the job's and the engine's sections in the one order."""

    executor: dict[str, Any]
    records: dict[str, Any]
    sources: dict[str, Any]
    normalize: dict[str, Any]
    exact_duplicates: dict[str, Any]
    shingler: dict[str, Any] | None
    tokens: dict[str, Any]
    blockers: list[dict[str, Any]]
    candidate_pairs: int
    verified_pairs: int
    pairs: dict[str, Any]
    scores: dict[str, Any]
    review: dict[str, Any]
    clusters: dict[str, Any]
    chains: dict[str, Any]
    link: dict[str, Any] | None
    diagnostics: dict[str, Any]
    training: dict[str, Any] = field(default_factory=dict)
    verifier_report: dict[str, Any] | None = None
    #: ``scores.weights`` of a verifier scoring match probabilities
    weights: dict[str, Any] | None = None
    threshold_curve: dict[str, Any] | None = None
    #: ``scores.near_identical_rejected`` (nothing verified among candidates)
    near_identical_rejected: dict[str, Any] | None = None
    #: the ``golden`` section (``output.golden``; :func:`~er_framework.engine.stages.golden.golden_section`), last
    golden: dict[str, Any] | None = None


def report_document(job: Job, engine: Engine, run: RunSections, log: StageLog) -> dict[str, Any]:
    """``report.json`` from the job, the engine and a run's :class:`RunSections`: the same document whichever
    executor computed the sections; the plausibility warnings last."""
    described = engine.describe(run.verifier_report)
    report: dict[str, Any] = {
        "job": job.spec.name,
        "config": str(job.config_path),
        "config_resolved": str(Path(job.config_path).resolve()),
        "config_hash": job.config_hash(),
        "mode": job.spec.mode,
        "seed": job.context.seed,
        "workers": job.context.workers,
        "executor": {"type": job.spec.executor.type, **run.executor},
        "records": run.records,
        "sources": run.sources,
        # each input's fingerprint: er explain / er review refuse to read the sources again once one changed
        "inputs": input_fingerprints(job, run.sources),
        "normalize": run.normalize,
        "exact_duplicates": run.exact_duplicates,
        "shingler": {**described["shingler"], **(run.shingler or {})} if described["shingler"] is not None else None,
        "tokens": run.tokens,
        "signature": described["signature"],
        "blockers": run.blockers,
        "candidate_pairs": int(run.candidate_pairs),
        "verified_pairs": int(run.verified_pairs),
        "pairs_written": run.pairs["pairs_listed"],
        "pairs": run.pairs,
        "verifier": described["verifier"],
        "model": model_section(engine),
        "score": engine.score_definition(),
        "threshold": engine.threshold_report(),
        "scores": run.scores,
        "review": run.review,
        **({"training": run.training} if run.training else {}),
        "clusterer": described["clusterer"],
        "clusters": run.clusters,
        "chains": run.chains,
        "link": run.link,
        "diagnostics": run.diagnostics,
        "stages": log.stages,
        "versions": versions(job),
    }
    if run.weights is not None:
        report["scores"]["weights"] = run.weights
    if run.threshold_curve is not None:
        report["threshold_curve"] = run.threshold_curve
    if run.near_identical_rejected is not None:
        report["scores"]["near_identical_rejected"] = run.near_identical_rejected
    # the plausibility check of the finished answer (clusters known): printed by the summary, atop report.html
    report["warnings"] = warnings_of(report)
    if run.golden is not None:
        report["golden"] = run.golden  # after the warnings, as the local run adds it
    return report


def build_report(job: Job, engine: Engine, facts: RunFacts, log: StageLog, found: Answer) -> dict[str, Any]:
    """``report.json`` from a run's whole arrays (:func:`report_document`); ``found`` is the answer
    (:func:`er_framework.engine.stages.clustering.answer`), the pairs the run lists."""
    records = facts.records
    mode = job.spec.mode
    described = engine.describe(facts.verifier_report)
    per_source = {name: int((records.source == i).sum()) for i, name in enumerate(records.source_names)}
    link = None
    if mode != "dedup":
        assert facts.candidates is not None, "link modes report every candidate's score"
        link = link_answer(
            records.source,
            records.source_names,
            facts.candidates,
            facts.scores,
            facts.labels,
            engine.threshold,
            facts.verified,
            found.pairs,
        )
    scaled = match_weights(facts.scores, facts.candidates, facts.explain) if is_weight_scored(described["verifier"]) else None
    weights = scaled.weights if scaled is not None else None
    curve = (
        labels_curve(job, records, facts.candidates, facts.scores, engine.threshold, "score")
        if scaled is None
        else labels_curve(job, records, facts.candidates, scaled.weights, weight_of_threshold(engine.threshold), "bits")
    )
    near = None
    if len(facts.verified) == 0 and facts.candidates is not None and len(facts.candidates) and records.fields:
        # nothing verified among candidates: are matches among the rejected? (plausibility: nothing_verified)
        near = near_identical_rejected(records, facts.candidates, facts.scores, engine.threshold)
    run = RunSections(
        executor=facts.executor,
        records={"total": len(records), "per_source": per_source},
        sources=facts.source_stats,
        normalize=facts.normalize_stats,
        exact_duplicates=facts.exact.stats,
        shingler=facts.shingler,
        tokens=facts.tokens,
        blockers=facts.blockers,
        candidate_pairs=int(facts.candidate_count),
        verified_pairs=int(len(facts.verified)),
        pairs=found.stats,
        scores=scores_section(facts.scores, engine.threshold, engine.score_definition()),
        review=review_section(
            records,
            facts.candidates,
            facts.scores,
            engine.threshold,
            facts.explain,
            weights,
            sorted(job.normalizers) if job.normalizers else None,
        ),
        clusters=cluster_stats(facts.labels),
        chains=chained_clusters(records, facts.pairs, facts.labels),
        link=link,
        diagnostics=facts.diagnostics,
        training=facts.training,
        verifier_report=facts.verifier_report,
        weights=weights_section(scaled, engine.threshold) if scaled is not None else None,
        threshold_curve=curve,
        near_identical_rejected=near,
    )
    return report_document(job, engine, run, log)


def model_section(engine: Engine) -> dict[str, Any]:
    """The report's ``model`` section: where the model of the run came from and what it holds (model.json)."""
    m = engine.model
    return {
        "origin": "fitted by this run" if m.origin == "fitted" else m.origin,
        "file": "model.json",
        "job_hash": m.job_hash,
        "verifier_fitted": m.verifier is not None,
        "pruned_shingles": None if m.pruned is None else int(len(m.pruned)),
        "threshold": None if m.threshold is None else m.threshold.to_json(),
        "trained_on_labels": m.training,
    }


def finish_report(report: dict[str, Any], log: StageLog, t_start: float) -> None:
    """Total seconds and peak memory, set just before writing and again at the end."""
    report["seconds_total"] = round(time.perf_counter() - t_start, 4)
    report["peak_rss_mb"] = log.peak_mb()


def golden_of_run(job: Job, as_read: Records | None, labels: Int64Array, log: StageLog) -> dict[str, Any] | None:
    """The golden table of a job that asks for one (``output.golden``), from the records as read."""
    spec = job.spec.output.golden
    if spec is None:
        return None
    if as_read is None:
        raise ErError(
            Problem(
                where=f"{job.config_path}: output.golden",
                message=f"the {job.spec.executor.type} executor does not hold the records' values the golden records are made of",
                fix="run the job on the local executor, or drop output.golden",
            )
        )
    with log.stage("golden") as info:
        table = golden_table(as_read, labels, golden_plan(job), singletons=spec.singletons)
        info["rows"] = int(len(table["cluster_id"]))
    return table


def finish_run(
    job: Job,
    engine: Engine,
    facts: RunFacts,
    log: StageLog,
    t_start: float,
    out_path: Path | None,
    as_read: Records | None,
) -> Result:
    """Build the report, write the outputs (when ``out_path``; report.html unless ``output: {report: false}``)
    and return the result: every executor ends here."""
    found = answer(job, facts.exact, facts.verified, facts.labels, engine.clusterer.selects_pairs)
    report = build_report(job, engine, facts, log, found)
    candidates = None if facts.candidates is None else Pairs(facts.candidates.left, facts.candidates.right, facts.scores)
    comparisons = None
    if job.spec.output.comparisons and candidates is not None and facts.explain is not None:
        comparisons = comparisons_table(facts.records, candidates, facts.explain)
    golden = golden_of_run(job, as_read, facts.labels, log)
    if golden is not None:
        report["golden"] = golden_section(job, golden)
    tables = output_tables(
        facts.records,
        found,
        facts.labels,
        candidates=candidates if job.spec.output.candidates else None,
        comparisons=comparisons,
        golden=golden,
    )
    result = Result(
        records=facts.records,
        pairs=facts.pairs,
        labels=facts.labels,
        report=report,
        candidates=candidates,
        answer=found,
        tables=tables,
        explain_terms=facts.explain,
        exact=facts.exact,
        as_read=as_read,
        model=engine.model,
    )
    if out_path is not None:
        with log.stage("write"):
            finish_report(report, log, t_start)
            result.outputs = write(
                job,
                out_path,
                facts.records,
                found.pairs,
                facts.labels,
                report,
                tables=tables,
                as_read=as_read,
                html=job.spec.output.report,
                model=engine.model,
            )
    finish_report(report, log, t_start)
    return result
