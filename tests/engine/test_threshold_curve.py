"""Precision, recall and F1 by threshold (engine/threshold_curve.py): the vectorized counts against a loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from er_framework.engine.threshold_curve import CURVE_POINTS, best_cut, curve_at, threshold_curve, threshold_curve_reference


def _case(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray, int]:
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.3
    values = np.round(np.where(truth, rng.normal(8, 6, n), rng.normal(-10, 8, n)), 1)  # rounded: many ties
    values[rng.random(n) < 0.02] = np.nan
    return values, truth, int(truth.sum()) + 7  # 7 true pairs no blocker produced


@pytest.mark.parametrize("seed", range(5))
def test_curve_at_every_distinct_value_matches_the_loop(seed: int) -> None:
    values, truth, n_true = _case(seed)
    ref = threshold_curve_reference(values, truth, n_true)
    got = curve_at(values, truth, n_true, np.array([r[0] for r in ref]))
    for i, (_, p, r, f, kept) in enumerate(ref):
        assert got["kept"][i] == kept
        assert got["precision"][i] == pytest.approx(p)
        assert got["recall"][i] == pytest.approx(r)
        assert got["f1"][i] == pytest.approx(f)


@pytest.mark.parametrize("seed", range(5))
def test_best_cut_is_the_loops_highest_f1(seed: int) -> None:
    values, truth, n_true = _case(seed)
    ref = threshold_curve_reference(values, truth, n_true)
    best = max(ref, key=lambda r: (r[3], r[0]))  # the highest F1; ties: the highest threshold
    t, p, r, f, kept = best_cut(values, truth, n_true)  # type: ignore[misc]
    assert (p, r, f, kept) == pytest.approx(best[1:])
    lower = [x[0] for x in ref if x[0] < best[0]]
    assert t == pytest.approx((best[0] + lower[0]) / 2 if lower else best[0])  # midway to the next value below
    kept_at_t = int(np.sum(values[np.isfinite(values)] >= t))
    assert kept_at_t == kept  # the stated threshold keeps the same pairs


def test_threshold_curve_section_shape() -> None:
    values, truth, n_true = _case(9)
    out = threshold_curve(values, truth, n_true, 0.0, scale="bits", over="test pairs")
    assert out["scale"] == "bits" and out["over"] == "test pairs" and out["true_pairs"] == n_true
    assert out["true_among_pairs"] == int(truth.sum())
    assert len(out["curve"]["threshold"]) == CURVE_POINTS == len(out["curve"]["f1"])
    ref = {r[0]: r for r in threshold_curve_reference(values, truth, n_true)}
    kept_now = int(np.sum(values[np.isfinite(values)] >= 0.0))
    assert out["at_threshold"]["kept"] == kept_now
    assert 0.0 < out["best"]["probability"] < 1.0
    assert out["best"]["f1"] == pytest.approx(max(r[3] for r in ref.values()), abs=1e-6)


def test_no_finite_value_no_best() -> None:
    out = threshold_curve(np.array([np.nan, np.nan]), np.array([True, False]), 1, 0.5, scale="score", over="x")
    assert out["best"] is None
    assert out["at_threshold"]["kept"] == 0 and out["at_threshold"]["recall"] == 0.0
    assert math.isclose(out["curve"]["threshold"][0], 0.5)
