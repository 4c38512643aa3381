"""report.json's score sections from per-part summaries: what an executor that never holds every candidate
(Dask: the client holds O(partitions)) computes on each part, and the merge that gives the section.

Each section is: a pure function on one part's arrays -> a small summary; a merge of summaries (associative:
summaries of summaries merge too) -> the section, the same JSON as :mod:`er_framework.engine.report` gives on the
whole arrays. Where a section needs two passes (a histogram over the global range), pass 1's summaries are merged
into what pass 2 is given. The local executor calls the same functions with one part (report.py), so there is one
engine. Summaries are plain frozen dataclasses of ints, floats and small numpy arrays (picklable; no Dask here).

Positions: a candidate is ``(part, position in its part)``. Ties that the whole report breaks by position are
broken by ``(part, position)``: the same choice as on the whole array when the whole array is the parts
concatenated in part order (the tests' split); an executor numbers its pair parts 0, 1, … and keeps that order.

Sections and their summaries (sizes per part):

* ``scores`` (:func:`scores_section_parts`): pass 1 :func:`value_summary` (O(1)), merged by
  :func:`merge_value_summaries`, :func:`histogram_range`; pass 2 :func:`histogram_part` (:data:`SCORE_BINS`
  counts), summed by :func:`merge_histogram_parts`; :func:`scores_section_of`.
* ``scores.weights`` (:func:`weights_section_parts`): each part's weights by :func:`part_weights` (refined from
  the verifier's terms only when :func:`refine_weights` says so for the sum of every part's
  :func:`near_one_count`); then the same two passes with the weight floor; :func:`weights_section_of`.
* ``review`` (:func:`borderline_part` -> :class:`Borderline` of 2k entries, :func:`merge_borderline`;
  :func:`fetch_plan` says which pairs each part serves; ``report.review_entries`` writes the entries of the
  fetched pairs, the above ones first).
* ``scores.near_identical_rejected`` (:func:`top_scores_part` -> ``sample`` entries, :func:`merge_top_scores`,
  :func:`near_identical_choice` from the parts' candidate counts, :func:`fetch_plan`; the fetched pairs' records
  are compared by :func:`er_framework.engine.report.near_identical_found`).
* ``threshold_curve`` of labels (:func:`pair_keys` of the labelled pairs; :func:`labelled_values_part` -> O(labels),
  :func:`merge_labelled_values`, :func:`labelled_pair_values`; then ``threshold_curve`` as ``report.labels_curve``).

A histogram's range is at least ``1e-9`` wide (relative beyond 1): numpy refuses 50 bins of a range of a few
float steps (one score a step above the threshold), which made the whole report fail before.

Zeros: a minimum or maximum that is ``-0.0`` is reported as ``0.0`` (which of ``0.0`` and ``-0.0`` numpy's
``min`` returns depends on the order of the values; the report must not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Pairs
from er_framework.engine.explain import BORDERLINE
from er_framework.engine.score_scale import EXACT_WEIGHT_MAX, REFINED_MAX, Weights, logit2, match_weights

__all__ = [
    "BORDERLINE_STEP",
    "NEAR_IDENTICAL_SAMPLE",
    "SCORE_BINS",
    "WEIGHT_FLOOR",
    "Borderline",
    "LabelledValues",
    "Nearest",
    "TopScores",
    "ValueSummary",
    "borderline_part",
    "fetch_plan",
    "histogram_of",
    "histogram_part",
    "histogram_range",
    "labelled_pair_values",
    "labelled_values_part",
    "merge_borderline",
    "merge_histogram_parts",
    "merge_labelled_values",
    "merge_nearest",
    "merge_top_scores",
    "merge_value_summaries",
    "near_identical_choice",
    "near_identical_section",
    "near_one_count",
    "pair_keys",
    "nearest",
    "nearest_part",
    "part_weights",
    "refine_weights",
    "scores_section_of",
    "scores_section_parts",
    "top_scores_part",
    "value_summary",
    "weights_section_of",
    "weights_section_parts",
]

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]

#: bins of the report's histogram of every candidate's score
SCORE_BINS = 50
#: weights (bits) at or below this are counted in the lowest bin of ``scores.weights``' histogram
WEIGHT_FLOOR = -1000.0
#: scores looked at per step by :func:`borderline_part` (its memory: a few arrays of this length)
BORDERLINE_STEP = 1 << 22
#: candidates looked at by ``near_identical_rejected``: the best-scored ones, and as many spread evenly
NEAR_IDENTICAL_SAMPLE = 1000


def _zero(x: float) -> float:
    """``x`` with ``-0.0`` as ``0.0``."""
    return x + 0.0


def _f64(values: npt.ArrayLike) -> Float64Array:
    return np.asarray(values, dtype=np.float64).ravel()


# ---------------------------------------------------------------- histograms (scores, weights)


@dataclass(frozen=True)
class ValueSummary:
    """Pass 1 over values (one part's, or merged): counts and the range of the histogram's body."""

    count: int  #: values, NaN and infinities included
    finite: int  #: finite values
    above: int  #: finite values at or above the threshold
    below: int  #: finite values below the threshold
    body: int  #: finite values above the floor (the ones that set the histogram's range)
    body_min: float  #: smallest of them (``inf`` without one)
    body_max: float  #: largest of them (``-inf`` without one)


def value_summary(values: npt.ArrayLike, threshold: float, floor: float = -np.inf) -> ValueSummary:
    """Pass 1 of a histogram section over one part's ``values``."""
    v = _f64(values)
    finite = v[np.isfinite(v)]
    body = finite[finite > floor]
    return ValueSummary(
        count=int(len(v)),
        finite=int(len(finite)),
        above=int((finite >= threshold).sum()),
        below=int((finite < threshold).sum()),
        body=int(len(body)),
        body_min=_zero(float(body.min())) if len(body) else np.inf,
        body_max=_zero(float(body.max())) if len(body) else -np.inf,
    )


def merge_value_summaries(parts: Iterable[ValueSummary]) -> ValueSummary:
    """One summary of many parts (sums; the body's range of all)."""
    items = list(parts)
    return ValueSummary(
        count=sum(p.count for p in items),
        finite=sum(p.finite for p in items),
        above=sum(p.above for p in items),
        below=sum(p.below for p in items),
        body=sum(p.body for p in items),
        body_min=min((p.body_min for p in items), default=np.inf),
        body_max=max((p.body_max for p in items), default=-np.inf),
    )


def histogram_range(summary: ValueSummary, threshold: float) -> tuple[float, float] | None:
    """The histogram's ``(lo, hi)`` from the merged pass 1: the body's range with the threshold inside (``0..1``
    without a body; at least ``1e-9`` wide, relative beyond 1); None without a finite value (the histogram is then
    empty)."""
    if not summary.finite:
        return None
    lo = min(summary.body_min, threshold) if summary.body else min(0.0, threshold)
    hi = max(summary.body_max, threshold) if summary.body else max(1.0, threshold)
    return lo, _wide_enough(lo, hi)


def _wide_enough(lo: float, hi: float) -> float:
    """``hi``, or ``lo + 1e-9`` (relative beyond 1) when the range is narrower: :data:`SCORE_BINS` bins of a range
    of a few float steps (a score a step above the threshold) would not be distinct, which numpy refuses."""
    width = 1e-9 * max(1.0, abs(lo))
    return hi if hi - lo >= width else lo + width


def histogram_part(values: npt.ArrayLike, rng: tuple[float, float] | None) -> Int64Array:
    """Pass 2: the :data:`SCORE_BINS` counts of one part's finite ``values`` over the global ``rng`` (values
    outside it, those at or below a floor, counted in the end bins). Each value's bin depends on the value and
    ``rng`` only, so the parts' counts add up to the whole's."""
    if rng is None:
        return np.zeros(SCORE_BINS, dtype=np.int64)
    v = _f64(values)
    finite = v[np.isfinite(v)]
    counts, _ = np.histogram(np.clip(finite, rng[0], rng[1]), bins=SCORE_BINS, range=rng)
    return counts.astype(np.int64)


def merge_histogram_parts(parts: Iterable[Int64Array]) -> Int64Array:
    """The counts of many parts (summed)."""
    total = np.zeros(SCORE_BINS, dtype=np.int64)
    for p in parts:
        total += p
    return total


def histogram_of(rng: tuple[float, float] | None, counts: Int64Array) -> dict[str, Any]:
    """The section's ``histogram``: edges (rounded to 6 places) and counts; empty without a finite value."""
    if rng is None:
        return {"edges": [], "counts": []}
    edges = np.histogram(np.zeros(0, dtype=np.float64), bins=SCORE_BINS, range=rng)[1]
    return {"edges": [round(float(e), 6) for e in edges], "counts": [int(c) for c in counts]}


def _two_passes(parts: Sequence[npt.ArrayLike], threshold: float, floor: float) -> tuple[ValueSummary, dict[str, Any]]:
    summary = merge_value_summaries(value_summary(p, threshold, floor) for p in parts)
    rng = histogram_range(summary, threshold)
    return summary, histogram_of(rng, merge_histogram_parts(histogram_part(p, rng) for p in parts))


def scores_section_of(summary: ValueSummary, histogram: dict[str, Any], threshold: float, score: dict[str, Any]) -> dict[str, Any]:
    """The report's ``scores`` from the merged pass 1 and the histogram (:func:`histogram_of`)."""
    return {
        "threshold": threshold,
        "candidates": summary.count,
        "above": summary.above,
        "below": summary.below,
        "nan": summary.count - summary.finite,
        "histogram": histogram,
        "score": "; ".join(str(v) for k, v in score.items() if k != "verifier"),
    }


def scores_section_parts(parts: Sequence[npt.ArrayLike], threshold: float, score: dict[str, Any]) -> dict[str, Any]:
    """The report's ``scores`` of the candidates' scores in ``parts`` (both passes here; an executor runs
    :func:`value_summary` and :func:`histogram_part` where the parts live)."""
    summary, histogram = _two_passes(parts, threshold, -np.inf)
    return scores_section_of(summary, histogram, threshold, score)


def near_one_count(scores: npt.ArrayLike) -> int:
    """Pass 0 of the weights: the part's scores whose weight is above ``EXACT_WEIGHT_MAX`` bits."""
    s = _f64(scores)
    return int(np.count_nonzero(np.isfinite(s) & (logit2(s) > EXACT_WEIGHT_MAX)))


def refine_weights(near_one: int) -> bool:
    """Whether the parts read their near-one weights from the verifier's terms (the sum of every part's
    :func:`near_one_count`; the whole run's rule of :func:`~er_framework.engine.score_scale.match_weights`)."""
    return 0 < near_one <= REFINED_MAX


def part_weights(
    scores: npt.ArrayLike,
    candidates: Pairs | None,
    explain: Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None,
    refine: bool,
) -> Weights:
    """One part's weights (``candidates``: the part's pairs, ``explain``: the verifier's terms of pairs of it);
    ``refine`` from :func:`refine_weights`. The parts' ``from_terms`` and ``clipped`` add up to the whole's when
    ``explain`` gives the same terms' names for every part."""
    s = _f64(scores)
    if refine:
        return match_weights(s, candidates, explain)
    return match_weights(s, None, None)


def weights_section_of(
    summary: ValueSummary, histogram: dict[str, Any], weight_threshold: float, from_terms: int, clipped: int
) -> dict[str, Any]:
    """The report's ``scores.weights`` from the merged pass 1 over the weights (floor :data:`WEIGHT_FLOOR`,
    threshold ``weight_threshold``), the histogram, and the parts' summed ``from_terms`` and ``clipped``."""
    return {
        **Weights(np.zeros(0, dtype=np.float64), from_terms, clipped).describe(),
        "threshold": round(weight_threshold, 6),
        "above": summary.above,
        "below": summary.below,
        "histogram": histogram,
    }


def weights_section_parts(parts: Sequence[Weights], weight_threshold: float) -> dict[str, Any]:
    """The report's ``scores.weights`` of the parts' weights (both passes here)."""
    summary, histogram = _two_passes([p.weights for p in parts], weight_threshold, WEIGHT_FLOOR)
    return weights_section_of(summary, histogram, weight_threshold, sum(p.from_terms for p in parts), sum(p.clipped for p in parts))


# ---------------------------------------------------------------- the k nearest (review, near-identical sample)


@dataclass(frozen=True)
class Nearest:
    """The entries of smallest ``key`` (ties by ``(part, pos)``), smallest first."""

    key: Float64Array
    part: Int64Array
    pos: Int64Array


def nearest(idx: Int64Array, key: Float64Array, k: int, keep_ties: bool = False) -> tuple[Int64Array, Float64Array]:
    """The ``k`` positions ``idx`` of the smallest ``key`` and their keys, smallest first, ties by position
    (``keep_ties``: also every other position whose key equals the ``k``-th, in no order)."""
    if k <= 0:
        return idx[:0].astype(np.int64), key[:0]
    if len(idx) > k:
        cut = np.partition(key, k - 1)[k - 1]  # the k-th smallest key: every one of the k is at most it
        near = key <= cut
        idx, key = idx[near], key[near]
    if keep_ties:
        return idx.astype(np.int64), key
    order = np.lexsort((idx, key))[:k]
    return idx[order].astype(np.int64), key[order]


def nearest_part(
    values: npt.ArrayLike,
    k: int,
    chunk_keys: Callable[[Float64Array], list[tuple[Int64Array, Float64Array]]],
    part: int = 0,
    step: int = BORDERLINE_STEP,
) -> list[Nearest]:
    """The ``k`` entries of smallest key of one part, for each of a few sides: ``chunk_keys`` gives, for a slice
    of ``values``, per side the positions (in the slice) that take part and their keys; the values are looked at
    in slices of ``step`` (no index or key array of every position)."""
    v = _f64(values)
    found: list[list[tuple[Int64Array, Float64Array]]] = []
    for a in range(0, len(v), step):
        sides = chunk_keys(v[a : a + step])
        # a step's k nearest and their ties: a superset of what it gives to the part's k
        found.append([nearest(idx.astype(np.int64) + a, key, k, keep_ties=True) for idx, key in sides])
    if not found:
        return [_nearest_of(np.zeros(0), np.zeros(0, dtype=np.int64), part) for _ in chunk_keys(v[:0])]
    out = []
    for side in zip(*found):
        pos, kk = nearest(np.concatenate([i for i, _ in side]), np.concatenate([key for _, key in side]), k)
        out.append(_nearest_of(kk, pos, part))
    return out


def _nearest_of(key: Float64Array, pos: Int64Array, part: int) -> Nearest:
    return Nearest(key.astype(np.float64), np.full(len(pos), part, dtype=np.int64), pos.astype(np.int64))


def merge_nearest(parts: Iterable[Nearest], k: int) -> Nearest:
    """The ``k`` entries of smallest ``(key, part, pos)`` of many parts' (or merged) entries."""
    items = list(parts)
    if not items or k <= 0:
        return _nearest_of(np.zeros(0), np.zeros(0, dtype=np.int64), 0)
    key = np.concatenate([p.key for p in items])
    part = np.concatenate([p.part for p in items])
    pos = np.concatenate([p.pos for p in items])
    order = np.lexsort((pos, part, key))[:k]
    return Nearest(key[order], part[order], pos[order])


@dataclass(frozen=True)
class Borderline:
    """The ``k`` candidates nearest the threshold at or above it (key: the value) and below it (key: minus
    the value), of one part or merged."""

    above: Nearest
    below: Nearest


def borderline_part(values: npt.ArrayLike, threshold: float, k: int = BORDERLINE, part: int = 0, step: int = BORDERLINE_STEP) -> Borderline:
    """The review's choice in one part: its ``k`` finite values nearest ``threshold`` on each side (nearest first,
    ties by position); a part's k are a superset of what it gives to the merged k."""

    def sides(s: Float64Array) -> list[tuple[Int64Array, Float64Array]]:
        ok = np.isfinite(s)
        up = np.flatnonzero(ok & (s >= threshold))
        down = np.flatnonzero(ok & (s < threshold))
        return [(up, s[up]), (down, -s[down])]

    above, below = nearest_part(values, k, sides, part, step)
    return Borderline(above=above, below=below)


def merge_borderline(parts: Iterable[Borderline], k: int = BORDERLINE) -> Borderline:
    """The review's choice over many parts: the whole's (ties by ``(part, pos)``)."""
    items = list(parts)
    return Borderline(merge_nearest((p.above for p in items), k), merge_nearest((p.below for p in items), k))


def fetch_plan(part: Int64Array, pos: Int64Array) -> dict[int, Int64Array]:
    """Which pairs to fetch: per part, the sorted unique positions among ``(part, pos)`` (e.g. a
    :class:`Borderline`'s ``above`` and ``below`` concatenated: the review lists the above ones, then the below)."""
    part = np.asarray(part, dtype=np.int64)
    pos = np.asarray(pos, dtype=np.int64)
    return {int(p): np.unique(pos[part == p]) for p in np.unique(part).tolist()}


# ---------------------------------------------------------------- near-identical sample


@dataclass(frozen=True)
class TopScores:
    """The ``sample`` best-scored candidates (key: minus the score, non-finite scores last; ties by position),
    the candidates counted and the best finite score, of one part or merged."""

    count: int
    best: float  #: the highest finite score (``-inf`` without one)
    top: Nearest


def top_scores_part(scores: npt.ArrayLike, sample: int = NEAR_IDENTICAL_SAMPLE, part: int = 0) -> TopScores:
    """One part's best-scored ``sample`` candidates."""
    s = _f64(scores)
    finite = np.where(np.isfinite(s), s, -np.inf)
    best = _zero(float(finite.max())) if len(s) else -np.inf

    def key(c: Float64Array) -> list[tuple[Int64Array, Float64Array]]:
        return [(np.arange(len(c), dtype=np.int64), -np.where(np.isfinite(c), c, -np.inf))]

    return TopScores(int(len(s)), best, nearest_part(s, sample, key, part)[0])


def merge_top_scores(parts: Iterable[TopScores], sample: int = NEAR_IDENTICAL_SAMPLE) -> TopScores:
    """The best-scored ``sample`` of many parts."""
    items = list(parts)
    return TopScores(
        sum(p.count for p in items), max((p.best for p in items), default=-np.inf), merge_nearest((p.top for p in items), sample)
    )


def near_identical_choice(merged: TopScores, counts: Sequence[int], sample: int = NEAR_IDENTICAL_SAMPLE) -> tuple[Int64Array, Int64Array]:
    """The candidates ``near_identical_rejected`` compares, as sorted unique ``(part, pos)``: every candidate when
    there are at most ``sample``; else the ``sample`` best-scored and ``sample`` spread evenly over the
    candidates in ``(part, pos)`` order (``counts``: each part's candidates, parts 0, 1, …)."""
    sizes = np.asarray(counts, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    if n != merged.count:
        raise ValueError(f"counts add up to {n} candidates, the merged summary counted {merged.count}")
    if n > sample:
        spread = np.linspace(0, n - 1, num=sample).astype(np.int64)
        best = offsets[merged.top.part] + merged.top.pos
        chosen = np.unique(np.concatenate([best, spread]))
    else:
        chosen = np.arange(n, dtype=np.int64)
    part = np.searchsorted(offsets, chosen, side="right") - 1
    return part.astype(np.int64), (chosen - offsets[part]).astype(np.int64)


def near_identical_section(sampled: int, found: int, best: float, threshold: float, similarity: float) -> dict[str, Any]:
    """``scores.near_identical_rejected`` from the pairs compared (``sampled``), the near-identical ones among them
    (``found``) and the merged best score."""
    return {
        "sampled": int(sampled),
        "near_identical": int(found),
        "similarity": similarity,
        "best_score": best if np.isfinite(best) else None,
        "threshold": threshold,
    }


# ---------------------------------------------------------------- labelled pairs' values (threshold_curve)


@dataclass(frozen=True)
class LabelledValues:
    """The candidates that are labelled pairs: key ``min * n + max`` of their records, value, and
    ``(part, pos)``; merged: one per key, the first by ``(part, pos)``, sorted by key."""

    key: Int64Array
    value: Float64Array
    part: Int64Array
    pos: Int64Array


def pair_keys(left: npt.ArrayLike, right: npt.ArrayLike, n: int) -> Int64Array:
    """``min * n + max`` of each pair of record indices (``n``: the records)."""
    lt = np.asarray(left, dtype=np.int64)
    rt = np.asarray(right, dtype=np.int64)
    out: Int64Array = np.minimum(lt, rt) * np.int64(n) + np.maximum(lt, rt)
    return out


def labelled_values_part(
    left: npt.ArrayLike, right: npt.ArrayLike, values: npt.ArrayLike, lab_keys: npt.ArrayLike, n: int, part: int = 0
) -> LabelledValues:
    """One part's candidates (``left``, ``right``: global record indices; ``values``: scores or weights) whose
    key is among ``lab_keys`` (:func:`pair_keys` of the labelled pairs): O(labels) per part."""
    wanted = np.unique(np.asarray(lab_keys, dtype=np.int64))
    keys = pair_keys(left, right, n)
    at = np.searchsorted(wanted, keys)
    hit = at < len(wanted)
    hit[hit] = wanted[at[hit]] == keys[hit]
    pos = np.flatnonzero(hit).astype(np.int64)
    return LabelledValues(keys[pos], _f64(values)[pos], np.full(len(pos), part, dtype=np.int64), pos)


def merge_labelled_values(parts: Iterable[LabelledValues]) -> LabelledValues:
    """Many parts' labelled candidates: one per key (the first by ``(part, pos)``), sorted by key."""
    items = list(parts)
    if not items:
        z = np.zeros(0, dtype=np.int64)
        return LabelledValues(z, np.zeros(0), z, z)
    key = np.concatenate([p.key for p in items])
    value = np.concatenate([p.value for p in items])
    part = np.concatenate([p.part for p in items])
    pos = np.concatenate([p.pos for p in items])
    order = np.lexsort((pos, part, key))
    key, value, part, pos = key[order], value[order], part[order], pos[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return LabelledValues(key[first], value[first], part[first], pos[first])


def labelled_pair_values(merged: LabelledValues, lab_keys: npt.ArrayLike) -> tuple[Float64Array, npt.NDArray[np.bool_]]:
    """Each labelled pair's value (``-inf``: no candidate) and whether it is a candidate."""
    lk = np.asarray(lab_keys, dtype=np.int64)
    at = np.searchsorted(merged.key, lk)
    inside = at < len(merged.key)
    inside[inside] = merged.key[at[inside]] == lk[inside]
    vals = np.full(len(lk), -np.inf)
    vals[inside] = merged.value[at[inside]]
    return vals, inside
