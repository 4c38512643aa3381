"""report.json's cluster and answer sections from per-part summaries (the score sections are in
:mod:`er_framework.engine.report_parts`; same rules: a pure function per part -> a small summary, an associative
merge -> the section, the same JSON as on the whole arrays).

What the executor routes to the parts, and the summaries' sizes:

* ``clusters`` (``cluster_stats``): record parts give :func:`cluster_counts_part`, a ``(cluster id, records)``
  table of the part's labels: O(distinct labels in the part), or O(records of multi-record clusters in the part)
  when ``multi`` marks the records that may share a cluster (every other record alone in its cluster, e.g. the
  records that are no end of a clustered pair). The client may merge the tables (:func:`merge_cluster_counts`,
  :func:`cluster_sums`), or the tables are split by id (:func:`split_cluster_counts`), each hash part merged on a
  worker into a :class:`ClusterSums` (five ints) and the client adds those (:func:`merge_cluster_sums`,
  :func:`cluster_stats_of`).
* ``link.matched``: the same with ``(cluster id, source, records)`` tables (:func:`cluster_sources_part`,
  :func:`split_cluster_sources`, :func:`matched_counts` per hash part, summed).
* ``link`` over the candidates: each pair part knows its pairs' two sources. Pass 1 :func:`cross_scores_part`
  (O(1)) -> :func:`merge_cross_scores` -> the grid (:func:`link_grid`) and histogram range
  (:func:`link_histogram_range`); pass 2 :func:`link_pairs_part` (pairs at or above each threshold, histogram
  counts, O(grid + 20)). ``by_threshold``'s records per source need each record's best score: the executor routes
  :func:`link_ends` (both ends of every cross-source pair scoring at least the grid's lowest threshold, with the
  end's source and the score) by **record** (hash of the record index), so that every pair of a record meets in
  one part, and each such part gives :func:`link_reach_part` (O(grid x sources)). ``by_source_pair``:
  :func:`source_pair_counts_part` of the candidate, verified and final pair parts (O(sources^2)).
  :func:`link_answer_of` assembles the section.
* ``pairs`` (the answer's stats of :func:`~er_framework.engine.stages.clustering.answer`): parts of the exact
  groups and of the verified pairs (with each end's group size joined) give :func:`copies_part`; parts of the
  listed pairs (each pair in one part: routed by pair, after the union that removes duplicates), with each
  end's cluster label joined, give :func:`listed_part`; :func:`answer_stats_of`.
* ``chains``: parts that each hold **whole** clusters (records routed by cluster label, with their ids and
  sources; the pairs inside each cluster routed by the same label) give :func:`chains_part` (the part's stats and
  its :data:`CHAINS_LISTED` most severe flags, their bridge records named); :func:`merge_chains`,
  :func:`chains_section`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.kernels.chains import ChainFlag, chain_flags

__all__ = [
    "CHAINS_LISTED",
    "LINK_BINS",
    "SOURCE_PAIR_ROWS",
    "ChainsPart",
    "ClusterCounts",
    "ClusterSources",
    "ClusterSums",
    "CrossScores",
    "LinkPairs",
    "ListedPairs",
    "answer_stats_of",
    "chains_part",
    "chains_section",
    "cluster_counts_part",
    "cluster_sources_part",
    "cluster_stats_of",
    "cluster_sums",
    "copies_part",
    "cross_scores_part",
    "link_answer_dict",
    "link_answer_of",
    "link_ends",
    "link_grid",
    "link_histogram_range",
    "link_pairs_part",
    "link_reach_part",
    "listed_part",
    "matched_counts",
    "merge_chains",
    "merge_cluster_counts",
    "merge_cluster_sources",
    "merge_cluster_sums",
    "merge_cross_scores",
    "merge_link_pairs",
    "merge_listed",
    "source_pair_counts_part",
    "source_pair_rows",
    "split_cluster_counts",
    "split_cluster_sources",
    "threshold_grid",
]

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: flagged clusters listed in report.json (the count says how many there were)
CHAINS_LISTED = 20
#: with at most this many sources, report.json's ``link.by_source_pair`` lists every pair of sources
SOURCE_PAIR_ROWS = 10
#: bins of ``link.score_histogram``
LINK_BINS = 20


def _i64(a: npt.ArrayLike) -> Int64Array:
    return np.asarray(a, dtype=np.int64).ravel()


def _sum_by_key(keys: Sequence[Int64Array], counts: Sequence[Int64Array]) -> tuple[Int64Array, Int64Array]:
    """Unique keys (sorted) and the summed counts of each."""
    k = np.concatenate([np.zeros(0, dtype=np.int64), *keys])
    c = np.concatenate([np.zeros(0, dtype=np.int64), *counts])
    uniq, inverse = np.unique(k, return_inverse=True)
    return uniq.astype(np.int64), np.bincount(inverse.ravel(), weights=c, minlength=len(uniq)).astype(np.int64)


# ---------------------------------------------------------------- clusters


@dataclass(frozen=True)
class ClusterCounts:
    """A ``(cluster id, records)`` table (ids sorted unique), the records left out of it (each alone in its
    cluster) and the highest label seen (``-1``: none)."""

    ids: Int64Array
    counts: Int64Array
    alone: int
    max_id: int


def cluster_counts_part(labels: npt.ArrayLike, multi: npt.ArrayLike | None = None) -> ClusterCounts:
    """One record part's table. ``multi``: records that may share their cluster; the others must each be alone
    in theirs (they are counted, not listed)."""
    lab = _i64(labels)
    max_id = int(lab.max()) if len(lab) else -1
    listed = lab if multi is None else lab[np.asarray(multi, dtype=bool).ravel()]
    ids, counts = np.unique(listed, return_counts=True)
    return ClusterCounts(ids.astype(np.int64), counts.astype(np.int64), int(len(lab) - len(listed)), max_id)


def merge_cluster_counts(parts: Iterable[ClusterCounts]) -> ClusterCounts:
    """One table of many (counts summed by id)."""
    items = list(parts)
    ids, counts = _sum_by_key([p.ids for p in items], [p.counts for p in items])
    return ClusterCounts(ids, counts, sum(p.alone for p in items), max((p.max_id for p in items), default=-1))


def split_cluster_counts(table: ClusterCounts, n_hash: int) -> list[ClusterCounts]:
    """The table cut by ``id % n_hash`` (every id of a hash part meets there); the records left out and the
    highest label go with piece 0."""
    pieces = []
    for h in range(n_hash):
        sel = table.ids % n_hash == h
        first = h == 0
        pieces.append(ClusterCounts(table.ids[sel], table.counts[sel], table.alone if first else 0, table.max_id if first else -1))
    return pieces


@dataclass(frozen=True)
class ClusterSums:
    """The sums ``cluster_stats`` is made of (of one hash part's clusters, or of all)."""

    max_id: int
    singletons: int
    largest: int
    multi_records: int
    pairs: int


def cluster_sums(table: ClusterCounts) -> ClusterSums:
    """The sums of a table holding every record of each of its ids (a hash part's merged table, or all)."""
    c = table.counts
    return ClusterSums(
        max_id=table.max_id,
        singletons=int((c == 1).sum()) + table.alone,
        largest=max(int(c.max()) if len(c) else 0, 1 if table.alone else 0),
        multi_records=int(c[c > 1].sum()),
        pairs=int((c * (c - 1) // 2).sum()),
    )


def merge_cluster_sums(parts: Iterable[ClusterSums]) -> ClusterSums:
    """The sums of many hash parts."""
    items = list(parts)
    return ClusterSums(
        max_id=max((p.max_id for p in items), default=-1),
        singletons=sum(p.singletons for p in items),
        largest=max((p.largest for p in items), default=0),
        multi_records=sum(p.multi_records for p in items),
        pairs=sum(p.pairs for p in items),
    )


def cluster_stats_of(sums: ClusterSums) -> dict[str, int]:
    """The report's ``clusters`` (``cluster_stats``: ``count`` is the highest label + 1)."""
    return {
        "count": sums.max_id + 1,
        "singletons": sums.singletons,
        "largest": sums.largest,
        "records_in_multi_record_clusters": sums.multi_records,
        "pairs": sums.pairs,
    }


# ---------------------------------------------------------------- link: records matched per source


@dataclass(frozen=True)
class ClusterSources:
    """A ``(cluster id, source, records)`` table, sorted by ``(id, source)``, unique."""

    ids: Int64Array
    source: Int64Array
    counts: Int64Array


def _pack(ids: Int64Array, source: Int64Array) -> Int64Array:
    out: Int64Array = ids * np.int64(1 << 16) + source
    return out


def cluster_sources_part(labels: npt.ArrayLike, source: npt.ArrayLike, multi: npt.ArrayLike | None = None) -> ClusterSources:
    """One record part's table (``multi`` as for :func:`cluster_counts_part`: a record alone in its cluster is
    never matched, so it is left out)."""
    lab, src = _i64(labels), _i64(source)
    if multi is not None:
        sel = np.asarray(multi, dtype=bool).ravel()
        lab, src = lab[sel], src[sel]
    if len(src) and (int(src.max()) >= 1 << 16 or int(src.min()) < 0):
        raise ValueError("source indices must lie in [0, 65536)")
    return _sources_of(*_sum_by_key([_pack(lab, src)], [np.ones(len(lab), dtype=np.int64)]))


def _sources_of(packed: Int64Array, counts: Int64Array) -> ClusterSources:
    return ClusterSources(packed >> 16, packed & np.int64((1 << 16) - 1), counts)


def merge_cluster_sources(parts: Iterable[ClusterSources]) -> ClusterSources:
    """One table of many (counts summed by ``(id, source)``)."""
    items = list(parts)
    return _sources_of(*_sum_by_key([_pack(p.ids, p.source) for p in items], [p.counts for p in items]))


def split_cluster_sources(table: ClusterSources, n_hash: int) -> list[ClusterSources]:
    """The table cut by ``id % n_hash``."""
    out = []
    for h in range(n_hash):
        sel = table.ids % n_hash == h
        out.append(ClusterSources(table.ids[sel], table.source[sel], table.counts[sel]))
    return out


def matched_counts(table: ClusterSources, n_src: int) -> Int64Array:
    """Per source, the records of clusters holding records of more than one source (a table holding every
    record of each of its ids: a hash part's merged table, or all); summed over hash parts."""
    if not len(table.ids):
        return np.zeros(n_src, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], table.ids[1:] != table.ids[:-1]]))
    sources_per = np.diff(np.concatenate([starts, [len(table.ids)]]))
    mixed = np.repeat(sources_per > 1, sources_per)
    return np.bincount(table.source[mixed], weights=table.counts[mixed], minlength=n_src).astype(np.int64)


# ---------------------------------------------------------------- link: candidates


@dataclass(frozen=True)
class CrossScores:
    """Pass 1 over candidates: the cross-source pairs' finite scores' count and range."""

    finite: int
    lo: float  #: ``inf`` without one
    hi: float  #: ``-inf`` without one


def _cross_finite(src_left: npt.ArrayLike, src_right: npt.ArrayLike, scores: npt.ArrayLike) -> Float64Array:
    sc = np.asarray(scores, dtype=np.float64).ravel()
    cross = np.not_equal(np.asarray(src_left).ravel(), np.asarray(src_right).ravel())
    out: Float64Array = sc[cross & np.isfinite(sc)]
    return out


def cross_scores_part(src_left: npt.ArrayLike, src_right: npt.ArrayLike, scores: npt.ArrayLike) -> CrossScores:
    """One pair part's pass 1 (``src_left``, ``src_right``: each pair's records' sources)."""
    f = _cross_finite(src_left, src_right, scores)
    return CrossScores(int(len(f)), float(f.min()) + 0.0 if len(f) else np.inf, float(f.max()) + 0.0 if len(f) else -np.inf)


def merge_cross_scores(parts: Iterable[CrossScores]) -> CrossScores:
    items = list(parts)
    return CrossScores(
        sum(p.finite for p in items), min((p.lo for p in items), default=np.inf), max((p.hi for p in items), default=-np.inf)
    )


def threshold_grid(threshold: float, hi: float) -> list[float]:
    """The thresholds of ``by_threshold``: the chosen one and a few around it, up to the best score."""
    grid = sorted({round(threshold * f, 6) for f in (0.8, 0.9, 1.0, 1.05, 1.1)} | {round(threshold, 6)})
    return [t for t in grid if t <= max(hi, threshold)]


def link_grid(merged: CrossScores, threshold: float) -> list[float]:
    """``by_threshold``'s thresholds from the merged pass 1."""
    return threshold_grid(threshold, merged.hi if merged.finite else threshold)


def link_histogram_range(merged: CrossScores, threshold: float) -> tuple[float, float] | None:
    """``score_histogram``'s range from the merged pass 1 (None: no finite cross-source score)."""
    if not merged.finite:
        return None
    return min(merged.lo, threshold), max(merged.hi, threshold)


@dataclass(frozen=True)
class LinkPairs:
    """Pass 2 over candidates: cross-source pairs at or above each threshold of the grid, histogram counts."""

    at_least: Int64Array
    histogram: Int64Array


def link_pairs_part(
    src_left: npt.ArrayLike, src_right: npt.ArrayLike, scores: npt.ArrayLike, grid: Sequence[float], rng: tuple[float, float] | None
) -> LinkPairs:
    """One pair part's pass 2."""
    sc = np.asarray(scores, dtype=np.float64).ravel()
    cross_sc = sc[np.not_equal(np.asarray(src_left).ravel(), np.asarray(src_right).ravel())]
    at_least = np.array([np.count_nonzero(cross_sc >= t) for t in grid], dtype=np.int64)
    hist = np.zeros(LINK_BINS, dtype=np.int64)
    if rng is not None:
        hist = np.histogram(cross_sc[np.isfinite(cross_sc)], bins=LINK_BINS, range=rng)[0].astype(np.int64)
    return LinkPairs(at_least, hist)


def merge_link_pairs(parts: Iterable[LinkPairs], n_grid: int) -> LinkPairs:
    at_least = np.zeros(n_grid, dtype=np.int64)
    hist = np.zeros(LINK_BINS, dtype=np.int64)
    for p in parts:
        at_least += p.at_least
        hist += p.histogram
    return LinkPairs(at_least, hist)


def link_ends(
    left: npt.ArrayLike, right: npt.ArrayLike, src_left: npt.ArrayLike, src_right: npt.ArrayLike, scores: npt.ArrayLike, lowest: float
) -> tuple[Int64Array, Int64Array, Float64Array]:
    """``(record, source, score)`` of both ends of the part's cross-source pairs scoring at least ``lowest`` (the
    grid's lowest threshold): what the executor routes by record to :func:`link_reach_part`."""
    sc = np.asarray(scores, dtype=np.float64).ravel()
    sl, sr = _i64(src_left), _i64(src_right)
    keep = np.flatnonzero((sl != sr) & (sc >= lowest))
    ks = sc[keep]
    records = np.concatenate([_i64(left)[keep], _i64(right)[keep]])
    return records, np.concatenate([sl[keep], sr[keep]]), np.concatenate([ks, ks])


def link_reach_part(record: npt.ArrayLike, source: npt.ArrayLike, score: npt.ArrayLike, grid: Sequence[float], n_src: int) -> Int64Array:
    """Per threshold of the grid and source, the records whose best cross-source score reaches it; every entry
    of a record (:func:`link_ends`) must be in this part. Shape ``(len(grid), n_src)``; summed over parts."""
    rec, src, sc = _i64(record), _i64(source), np.asarray(score, dtype=np.float64).ravel()
    uniq, inverse = np.unique(rec, return_inverse=True)
    best = np.full(len(uniq), -np.inf)
    np.maximum.at(best, inverse.ravel(), sc)
    rec_src = np.zeros(len(uniq), dtype=np.int64)
    rec_src[inverse.ravel()] = src
    out = np.zeros((len(grid), n_src), dtype=np.int64)
    for i, t in enumerate(grid):
        out[i] = np.bincount(rec_src[best >= t], minlength=n_src)[:n_src]
    return out


def source_pair_counts_part(src_left: npt.ArrayLike, src_right: npt.ArrayLike, n_src: int) -> Int64Array:
    """How many of the part's pairs join records of sources ``(s, t)``, ``s <= t``, at ``s * k + t``
    (``k = max(n_src, 1)``); summed over parts."""
    k = max(n_src, 1)
    sl, sr = _i64(src_left), _i64(src_right)
    return np.bincount(np.minimum(sl, sr) * k + np.maximum(sl, sr), minlength=k * k).astype(np.int64)


def source_pair_rows(names: list[str], per_pair: dict[str, dict[tuple[int, int], int] | None]) -> list[dict[str, Any]]:
    """``by_source_pair``: one row per pair of sources (see ``report.link_answer``)."""
    keys = {key for counts in per_pair.values() if counts for key in counts}
    if len(names) <= SOURCE_PAIR_ROWS:
        keys |= {(s, t) for s in range(len(names)) for t in range(s + 1, len(names))}
    rows = []
    for s, t in sorted(keys):
        row: dict[str, Any] = {"sources": [names[s], names[t]]}
        for what, counts in per_pair.items():
            row[what] = None if counts is None else counts.get((s, t), 0)
        rows.append(row)
    return rows


def _pair_dict(counts: Int64Array | None, n_src: int) -> dict[tuple[int, int], int] | None:
    if counts is None:
        return None
    k = max(n_src, 1)
    return {(int(i // k), int(i % k)): int(counts[i]) for i in np.flatnonzero(counts).tolist()}


def link_answer_dict(
    names: list[str],
    threshold: float,
    matched: dict[str, int],
    by_threshold: list[dict[str, Any]],
    histogram: dict[str, Any],
    by_source_pair: list[dict[str, Any]],
) -> dict[str, Any]:
    """The report's ``link`` from its parts."""
    return {
        "sources": names,
        "threshold": threshold,
        "matched": matched,
        "by_threshold": by_threshold,
        "score_histogram": histogram,
        "by_source_pair": by_source_pair,
    }


def link_answer_of(
    names: list[str],
    threshold: float,
    matched: Int64Array,
    cross: CrossScores,
    pairs: LinkPairs,
    reach: Int64Array,
    per_pair: dict[str, Int64Array | None],
) -> dict[str, Any]:
    """The report's ``link`` from the merged summaries: ``matched`` (:func:`matched_counts` summed), ``cross``
    (:func:`merge_cross_scores`), ``pairs`` (:func:`merge_link_pairs`), ``reach`` (:func:`link_reach_part`
    summed), ``per_pair`` (``candidate_pairs``, ``verified_pairs``, ``pairs``: :func:`source_pair_counts_part`
    summed, None where not counted)."""
    n_src = len(names)
    grid = link_grid(cross, threshold)
    by_threshold = []
    for i, t in enumerate(grid):
        row: dict[str, Any] = {"threshold": t, "pairs": int(pairs.at_least[i])}
        row.update({names[s]: int(reach[i, s]) for s in range(n_src)})
        by_threshold.append(row)
    rng = link_histogram_range(cross, threshold)
    histogram: dict[str, Any] = {"edges": [], "counts": []}
    if rng is not None:
        edges = np.histogram(np.zeros(0, dtype=np.float64), bins=LINK_BINS, range=rng)[1]
        histogram = {"edges": [round(float(e), 6) for e in edges], "counts": [int(c) for c in pairs.histogram]}
    rows = source_pair_rows(names, {what: _pair_dict(c, n_src) for what, c in per_pair.items()})
    return link_answer_dict(names, threshold, {names[s]: int(matched[s]) for s in range(n_src)}, by_threshold, histogram, rows)


# ---------------------------------------------------------------- the answer's stats


def copies_part(group_sizes: npt.ArrayLike, size_left: npt.ArrayLike, size_right: npt.ArrayLike) -> int:
    """One part's share of ``pairs_with_every_copy``: the pairs inside its exact groups (``group_sizes``: records
    of each group the part holds, every group in one part) and the pairs its verified pairs stand for
    (``size_left``, ``size_right``: the group size of each pair's two records, 1 for a record without copies)."""
    g = _i64(group_sizes)
    return int((g * (g - 1) // 2).sum()) + int((_i64(size_left) * _i64(size_right)).sum())


@dataclass(frozen=True)
class ListedPairs:
    """The listed pairs of a part (or merged) and those whose two records are in one cluster."""

    listed: int
    same: int


def listed_part(label_left: npt.ArrayLike, label_right: npt.ArrayLike) -> ListedPairs:
    """One part of the listed pairs (each pair in one part), with each end's cluster label."""
    ll, lr = _i64(label_left), _i64(label_right)
    return ListedPairs(int(len(ll)), int(np.count_nonzero(ll == lr)))


def merge_listed(parts: Iterable[ListedPairs]) -> ListedPairs:
    items = list(parts)
    return ListedPairs(sum(p.listed for p in items), sum(p.same for p in items))


def answer_stats_of(exact_pairs: str, implied: int, listed: ListedPairs, selects_pairs: bool) -> dict[str, Any]:
    """The answer's stats (report.json's ``pairs``) from the summed :func:`copies_part` and merged listed pairs;
    with a clusterer that selects pairs only the pairs inside clusters are kept."""
    stats: dict[str, Any] = {"exact_pairs": exact_pairs, "pairs_with_every_copy": int(implied)}
    if selects_pairs:
        stats["verified_pairs_listed"] = listed.listed
        stats["pairs_listed"] = listed.same
        stats["pairs_across_clusters"] = 0
    else:
        stats["pairs_listed"] = listed.listed
        stats["pairs_across_clusters"] = listed.listed - listed.same
    return stats


# ---------------------------------------------------------------- chains


@dataclass(frozen=True)
class ChainsPart:
    """One part's (or merged) ``chains``: the counts and the most severe flags, each with its report entry."""

    stats: dict[str, int]
    flags: list[tuple[tuple[float, int, int], dict[str, Any]]]


def _named(flag: ChainFlag, ids: Sequence[Any] | npt.NDArray[Any], source: npt.ArrayLike, names: list[str]) -> dict[str, Any]:
    """The flag's report entry, its bridge records (positions in the part) named by source and id."""
    item = flag.to_json()
    src = np.asarray(source)
    item["bridge"] = [[names[int(src[r])], str(ids[r])] for r in flag.bridge]
    return item


def chains_part(
    labels: npt.ArrayLike,
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    score: npt.ArrayLike | None,
    ids: Sequence[Any] | npt.NDArray[Any],
    source: npt.ArrayLike,
    names: list[str],
    rows: npt.ArrayLike | None = None,
) -> ChainsPart:
    """One part's chains: ``rows`` the global indices of the part's records (sorted; None: the records are
    ``0 .. len(labels) - 1``, all of them), ``labels``, ``ids``, ``source`` theirs; ``left``, ``right``,
    ``score`` the clustered pairs among them (global indices; pairs with an end outside ``rows`` are ignored:
    across clusters). Each of the part's clusters must be whole in it."""
    lt, rt = _i64(left), _i64(right)
    sc = np.ones(len(lt)) if score is None else np.asarray(score, dtype=np.float64).ravel()
    if rows is not None:
        rw = _i64(rows)
        li = np.searchsorted(rw, lt).clip(0, max(len(rw) - 1, 0))
        ri = np.searchsorted(rw, rt).clip(0, max(len(rw) - 1, 0))
        keep = (rw[li] == lt) & (rw[ri] == rt) if len(rw) else np.zeros(len(lt), dtype=bool)
        lt, rt, sc = li[keep], ri[keep], sc[keep]
    flags, stats = chain_flags(labels, lt, rt, sc)
    listed = [((-f.gap, -f.size, f.cluster), _named(f, ids, source, names)) for f in flags[:CHAINS_LISTED]]
    return ChainsPart({k: int(v) for k, v in stats.items()}, listed)


def merge_chains(parts: Iterable[ChainsPart]) -> ChainsPart:
    """The chains of many parts (counts summed; the most severe flags of all)."""
    items = list(parts)
    if not items:
        items = [chains_part(np.zeros(0, dtype=np.int64), [], [], [], np.zeros(0), np.zeros(0), [])]
    stats = {k: sum(p.stats[k] for p in items) for k in items[0].stats}
    flags = sorted((f for p in items for f in p.flags), key=lambda f: f[0])
    return ChainsPart(stats, flags[:CHAINS_LISTED])


def chains_section(merged: ChainsPart) -> dict[str, Any]:
    """The report's ``chains``."""
    return {**merged.stats, "listed": [item for _, item in merged.flags]}
