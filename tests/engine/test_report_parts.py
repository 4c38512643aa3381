"""report_parts: each score section merged from random parts (empty parts included) equals the section of the whole
arrays (json.dumps equality), against plain twins of the whole report's code."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from er_framework.data import Pairs, Records
from er_framework.engine import report_parts as rp
from er_framework.engine.report import (
    borderline_reference,
    near_identical_rejected,
    review_entries,
    review_section,
    scores_section,
    weights_section,
)
from er_framework.engine.score_scale import Weights, match_weights, weight_of_threshold


def split(n: int, rng: np.random.Generator, parts: int | None = None) -> list[slice]:
    """Contiguous slices covering ``0..n`` in order, some empty."""
    k = int(rng.integers(1, 8)) if parts is None else parts
    cuts = np.sort(rng.integers(0, n + 1, k - 1)) if k > 1 else np.zeros(0, dtype=np.int64)
    bounds = [0, *cuts.tolist(), n]
    out = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    if rng.random() < 0.5:
        out.insert(int(rng.integers(0, len(out) + 1)), slice(0, 0))
    return out


def histogram_reference(values: np.ndarray, threshold: float, floor: float = -np.inf) -> dict[str, Any]:
    """The whole report's histogram as it was written before the parts (the twin)."""
    finite = values[np.isfinite(values)]
    body = finite[finite > floor]
    lo = min(float(body.min()), threshold) if len(body) else min(0.0, threshold)
    hi = max(float(body.max()), threshold) if len(body) else max(1.0, threshold)
    if hi - lo < 1e-9 * max(1.0, abs(lo)):  # before the parts: hi <= lo only (a range of a few float steps failed)
        hi = lo + 1e-9 * max(1.0, abs(lo))
    if not len(finite):
        return {"edges": [], "counts": []}
    counts, edges = np.histogram(np.clip(finite, lo, hi), bins=rp.SCORE_BINS, range=(lo, hi))
    return {"edges": [round(float(e), 6) for e in edges], "counts": [int(c) for c in counts]}


def scores_reference(scores: np.ndarray, threshold: float, score: dict[str, Any]) -> dict[str, Any]:
    finite = scores[np.isfinite(scores)]
    return {
        "threshold": threshold,
        "candidates": int(len(scores)),
        "above": int((finite >= threshold).sum()),
        "below": int((finite < threshold).sum()),
        "nan": int(len(scores) - len(finite)),
        "histogram": histogram_reference(scores, threshold),
        "score": "; ".join(str(v) for k, v in score.items() if k != "verifier"),
    }


def adversarial(rng: np.random.Generator, case: int) -> np.ndarray:
    """Scores with ties at bin edges, infinities, NaN, all equal, huge and tiny spreads."""
    n = int(rng.integers(0, 400))
    if case == 0:  # values exactly on the edges of the range the whole histogram uses
        edges = np.linspace(0.0, 1.0, rp.SCORE_BINS + 1)
        return rng.choice(edges, n)
    if case == 1:
        v = np.round(rng.random(n), 2)
        v[rng.random(n) < 0.1] = np.nan
        v[rng.random(n) < 0.05] = np.inf
        v[rng.random(n) < 0.05] = -np.inf
        return v
    if case == 2:
        return np.full(n, 0.7)
    if case == 3:
        return rng.normal(0, 1e6, n)
    if case == 4:
        return 0.5 + rng.integers(0, 3, n) * 1e-12
    if case == 5:
        return np.full(n, np.nan)
    return rng.choice(np.array([0.1, 1 / 3, 2 / 3, 0.9, 1e300, -1e300]), n)


@pytest.mark.parametrize("seed", range(30))
def test_scores_section_from_parts_equals_the_whole(seed: int) -> None:
    rng = np.random.default_rng(seed)
    score_def = {"verifier": "x", "scale": "jaccard"}
    for case in range(7):
        scores = adversarial(rng, case)
        for t in (0.5, 0.7, 0.0, 1.0, 2.0, -3.0, float(np.nanmedian(scores)) if np.isfinite(scores).any() else 0.4):
            whole = json.dumps(scores_reference(scores, t, score_def))
            parts = [scores[s] for s in split(len(scores), rng)]
            assert json.dumps(rp.scores_section_parts(parts, t, score_def)) == whole
            assert json.dumps(scores_section(scores, t, score_def)) == whole  # the report's own: one part


def test_a_range_of_a_few_float_steps_is_widened_not_refused() -> None:
    above = float(np.nextafter(0.7, 1.0))  # one step above the threshold: 50 bins of it are not distinct
    for scores, t in ((np.array([above]), 0.7), (np.array([1e6, 1e6]), 1e6), (np.array([-5e7]), -5e7)):
        got = scores_section(scores, t, {})["histogram"]
        assert sum(got["counts"]) == len(scores) and len(got["edges"]) == rp.SCORE_BINS + 1


def test_summaries_merge_in_any_grouping() -> None:
    rng = np.random.default_rng(1)
    scores = rng.random(500)
    sums = [rp.value_summary(scores[s], 0.5) for s in split(500, rng, 6)]
    merged = rp.merge_value_summaries(sums)
    assert rp.merge_value_summaries([rp.merge_value_summaries(sums[:3]), rp.merge_value_summaries(sums[3:])]) == merged
    assert rp.value_summary(scores, 0.5) == rp.merge_value_summaries(sums)
    assert rp.histogram_range(rp.merge_value_summaries([]), 0.5) is None
    assert rp.merge_histogram_parts([]).tolist() == [0] * rp.SCORE_BINS


def test_negative_zero_is_reported_as_zero_whatever_the_order() -> None:
    for values in (np.array([0.0, -0.0, 0.5]), np.array([-0.0, 0.0, 0.5]), np.array([-0.0, 0.5])):
        got = rp.scores_section_parts([values[:1], values[1:]], 0.5, {})
        assert got == rp.scores_section_parts([values], 0.5, {})
        assert json.dumps(got["histogram"]["edges"][0]) == "0.0"


def weights_reference(weights: Weights, threshold: float) -> dict[str, Any]:
    tw = weight_of_threshold(threshold)
    w = weights.weights
    finite = w[np.isfinite(w)]
    return {
        **weights.describe(),
        "threshold": round(tw, 6),
        "above": int((finite >= tw).sum()),
        "below": int((finite < tw).sum()),
        "histogram": histogram_reference(w, tw, floor=-1000.0),
    }


def fake_explain(pairs: Pairs) -> dict[str, np.ndarray]:
    """The verifier's terms of a pair: a match weight made of its records' indices."""
    return {"match_weight": 41.0 + (pairs.left + pairs.right) % 17}


@pytest.mark.parametrize("seed", range(20))
def test_weights_section_from_parts_equals_the_whole(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    scores = rng.choice(np.array([0.0, 1.0, 1 - 1e-14, 0.5, 0.9, 1e-300, np.nan]), n) if seed % 2 else rng.random(n)
    cands = Pairs(rng.integers(0, 50, n), rng.integers(0, 50, n))
    threshold = float(rng.choice([0.5, 0.9, 0.999]))
    for explain in (fake_explain, None, lambda p: {"other": np.zeros(len(p))}):
        whole = match_weights(scores, cands, explain)
        pieces = split(n, rng)
        refine = rp.refine_weights(sum(rp.near_one_count(scores[s]) for s in pieces))
        parts = [rp.part_weights(scores[s], Pairs(cands.left[s], cands.right[s]), explain, refine) for s in pieces]
        np.testing.assert_array_equal(np.concatenate([p.weights for p in parts]) if parts else np.zeros(0), whole.weights)
        tw = weight_of_threshold(threshold)
        want = json.dumps(weights_reference(whole, threshold))
        assert json.dumps(rp.weights_section_parts(parts, tw)) == want
        assert json.dumps(weights_section(whole, threshold)) == want


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("k", [0, 1, 3, 10, 500])
def test_borderline_merged_from_parts_is_the_whole_choice(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 1500))
    scores = np.round(rng.random(n), 1 + seed % 3)
    scores[rng.random(n) < 0.05] = np.nan
    scores[rng.random(n) < 0.02] = np.inf
    scores[: min(n, 7)] = 0.5  # ties at the threshold itself, across parts
    pieces = split(n, rng)
    offsets = np.array([s.start for s in pieces], dtype=np.int64)
    for t in (0.5, 0.0, 1.0, 2.0):
        step = int(rng.choice([5, 64, 1 << 22]))
        found = [rp.borderline_part(scores[s], t, k, part=i, step=step) for i, s in enumerate(pieces)]
        got = rp.merge_borderline([rp.merge_borderline(found[:2], k), *found[2:]], k)
        up, down = borderline_reference(scores, t, k)
        np.testing.assert_array_equal(offsets[got.above.part] + got.above.pos, up)
        np.testing.assert_array_equal(offsets[got.below.part] + got.below.pos, down)
        plan = rp.fetch_plan(np.concatenate([got.above.part, got.below.part]), np.concatenate([got.above.pos, got.below.pos]))
        fetched = np.sort(np.concatenate([offsets[p] + pos for p, pos in plan.items()] or [np.zeros(0, dtype=np.int64)]))
        np.testing.assert_array_equal(fetched, np.sort(np.concatenate([up, down])))


def choice_reference(scores: np.ndarray, sample: int) -> np.ndarray:
    """The sample's positions by a full sort: the best ``sample`` (ties: the first), and ``sample`` spread evenly."""
    n = len(scores)
    if n <= sample:
        return np.arange(n)
    finite = np.where(np.isfinite(scores), scores, -np.inf)
    best = np.lexsort((np.arange(n), -finite))[:sample]
    return np.unique(np.concatenate([best, np.linspace(0, n - 1, num=sample).astype(np.int64)]))


@pytest.mark.parametrize("seed", range(20))
def test_near_identical_choice_from_parts_is_the_whole_choice(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 700))
    scores = rng.choice(np.array([0.1, 0.2, 0.2, 0.3, np.nan, np.inf, -np.inf]), n)  # many ties at the cut
    for sample in (1, 5, 50, 1000):
        pieces = split(n, rng)
        offsets = np.array([s.start for s in pieces], dtype=np.int64)
        parts = [rp.top_scores_part(scores[s], sample, part=i) for i, s in enumerate(pieces)]
        merged = rp.merge_top_scores(parts, sample)
        part, pos = rp.near_identical_choice(merged, [s.stop - s.start for s in pieces], sample)
        np.testing.assert_array_equal(offsets[part] + pos, choice_reference(scores, sample))
        whole = rp.top_scores_part(scores, sample)
        assert merged.best == whole.best and merged.count == n
        with pytest.raises(ValueError, match="counts add up"):
            rp.near_identical_choice(merged, [n + 1], sample)


def test_near_identical_rejected_takes_the_first_of_tied_scores() -> None:
    n = 8
    records = Records(
        ids=[str(i) for i in range(n)],
        source=np.zeros(n, dtype=np.int32),
        source_names=["a"],
        fields={"name": ["anna"] * 4 + ["bob", "carl", "dora", "emil"]},
    )
    cands = Pairs(np.array([4, 0, 2, 5]), np.array([5, 1, 3, 6]))
    got = near_identical_rejected(records, cands, np.array([0.2, 0.2, 0.2, 0.2]), 0.9, sample=2)
    assert got["sampled"] == 3  # the 2 first of the ties and 2 spread (positions 0 and 3): 0, 1, 3
    assert got["near_identical"] == 1 and got["best_score"] == 0.2


def labelled_reference(
    left: np.ndarray, right: np.ndarray, values: np.ndarray, lab_keys: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The whole report's lookup: every candidate's key, a stable sort, the first of each labelled key."""
    keys = np.minimum(left, right) * n + np.maximum(left, right)
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], values[order]
    at = np.searchsorted(keys, lab_keys)
    inside = at < len(keys)
    inside[inside] = keys[at[inside]] == lab_keys[inside]
    out = np.full(len(lab_keys), -np.inf)
    out[inside] = vals[at[inside]]
    return out, inside


@pytest.mark.parametrize("seed", range(20))
def test_labelled_values_from_parts_equal_the_whole(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 30
    m = int(rng.integers(0, 400))
    left, right = rng.integers(0, n, m), rng.integers(0, n, m)  # duplicates and swapped pairs: the first counts
    values = rng.random(m)
    lab_l, lab_r = rng.integers(0, n, 40), rng.integers(0, n, 40)
    lab_keys = rp.pair_keys(lab_l, lab_r, n)
    pieces = split(m, rng)
    parts = [rp.labelled_values_part(left[s], right[s], values[s], lab_keys, n, part=i) for i, s in enumerate(pieces)]
    got_vals, got_in = rp.labelled_pair_values(rp.merge_labelled_values(parts), lab_keys)
    want_vals, want_in = labelled_reference(left, right, values, lab_keys, n)
    np.testing.assert_array_equal(got_vals, want_vals)
    np.testing.assert_array_equal(got_in, want_in)
    assert len(rp.labelled_pair_values(rp.merge_labelled_values([]), lab_keys)[0]) == 40


def test_review_of_fetched_pairs_equals_the_review_of_the_whole() -> None:
    """The review's entries from the merged choice, the pairs fetched from the parts by the fetch plan."""
    rng = np.random.default_rng(5)
    n, m = 40, 600
    records = Records(ids=[f"r{i}" for i in range(n)], source=np.zeros(n, dtype=np.int32), source_names=["a"], fields={})
    cands = Pairs(rng.integers(0, n, m), rng.integers(0, n, m))
    scores = np.round(rng.random(m), 2)
    pieces = split(m, rng)
    merged = rp.merge_borderline(rp.borderline_part(scores[s], 0.5, part=i) for i, s in enumerate(pieces))
    chosen = [(merged.above.part, merged.above.pos), (merged.below.part, merged.below.pos)]
    plan = rp.fetch_plan(np.concatenate([c[0] for c in chosen]), np.concatenate([c[1] for c in chosen]))
    fetched = {(p, int(q)): pieces[p].start + int(q) for p, pos in plan.items() for q in pos}  # a part serves its pairs
    rows = np.array([fetched[(int(p), int(q))] for part, pos in chosen for p, q in zip(part, pos)], dtype=np.int64)
    pairs = Pairs(cands.left[rows], cands.right[rows], scores[rows])
    got = review_entries(records, pairs, len(merged.above.pos), 0.5, None, None)
    assert json.dumps(got) == json.dumps(review_section(records, cands, scores, 0.5, None))
