"""The threshold-selection chart (report/threshold_chart.py), drawn from report.json's ``threshold_curve``."""

from __future__ import annotations

import numpy as np

from er_framework.engine.threshold_curve import threshold_curve
from er_framework.report.threshold_chart import curve_words, threshold_curve_chart, threshold_curve_section


def _curve(scale: str) -> dict:
    rng = np.random.default_rng(1)
    truth = rng.random(500) < 0.4
    values = np.where(truth, rng.normal(10, 4, 500), rng.normal(-10, 4, 500))
    t = 0.0 if scale == "bits" else 0.5
    return threshold_curve(values, truth, int(truth.sum()), t, scale=scale, over="the <labelled> pairs")


def test_the_chart_marks_both_thresholds_and_names_the_best_in_words() -> None:
    curve = _curve("bits")
    html = threshold_curve_section(curve)
    assert html is not None
    assert 'class="threshold"' in html and 'class="best-threshold"' in html
    assert html.count("<polyline") >= 3  # precision, recall, F1
    assert 'class="axis2"' in html  # the probability above the bits
    best = curve["best"]
    assert f"The highest F1, {best['f1']:.4f}, is reached at the threshold {best['threshold']:+.2f} bits" in html
    assert "the &lt;labelled&gt; pairs" in html  # escaped


def test_score_scale_has_no_probability_axis_and_malformed_points_give_a_note() -> None:
    curve = _curve("score")
    assert 'class="axis2"' not in (threshold_curve_chart(curve) or "")
    assert "threshold 0.5:" in curve_words(curve)
    broken = {**curve, "curve": {"threshold": ["x"]}}
    assert "no usable points" in (threshold_curve_section(broken) or "")
    assert threshold_curve_section(None) is None and threshold_curve_section([1]) is None
