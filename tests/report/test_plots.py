"""The plots of report.html (er_framework.report.plots): inline SVG drawn from aggregates, checked against naive
references (a Counter, numpy's histogram, a loop)."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

from er_framework.report.plots import (
    SIZE_BARS,
    plot_cluster_sizes,
    plot_points,
    plot_s_curve,
    plot_scores,
    plot_threshold,
    s_curve,
    score_bins,
    size_counts,
    wilson_interval,
)

TIP = re.compile(r"<title>([^<]*)</title>")


def tips(svg: str) -> list[str]:
    return TIP.findall(svg)


# -------------------------------------------------------------------------- cluster sizes


def bar_counts(svg: str) -> dict[str, int]:
    """``{size text: clusters}`` from the bars' tips."""
    out = {}
    for tip in tips(svg):
        m = re.fullmatch(r"([\d,]+) clusters of ([\d,–]+) records", tip)
        assert m, tip
        out[m.group(2)] = int(m.group(1).replace(",", ""))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_cluster_sizes_few_distinct_match_a_counter(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, int(rng.integers(1, 5000))).astype(np.int64)
    svg = plot_cluster_sizes(sizes)
    assert bar_counts(svg) == {f"{v:,}": c for v, c in Counter(sizes.tolist()).items()}
    assert svg.count("<rect ") == len(set(sizes.tolist())) <= SIZE_BARS
    assert f"Cluster sizes ({len(sizes):,} clusters)" in svg


@pytest.mark.parametrize("seed", range(5))
def test_cluster_sizes_binned_match_numpys_histogram(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([rng.zipf(1.6, 20_000), [1, 2, 3] + list(range(4, 60))]).astype(np.int64)
    sizes = sizes[sizes < 10**6]
    svg = plot_cluster_sizes(sizes)
    top = int(sizes.max())
    edges = np.unique(np.round(np.logspace(0, math.log10(top + 1), 30)).astype(np.int64))
    edges = np.append(edges, top + 1) if edges[-1] <= top else edges
    ref, _ = np.histogram(sizes, bins=edges)
    got = bar_counts(svg)
    assert list(got.values()) == ref.tolist()
    assert list(got) == [f"{a:,}–{b - 1:,}" for a, b in zip(edges[:-1], edges[1:])]
    assert svg.count("<rect ") == len(edges) - 1 <= SIZE_BARS
    assert "log scale" in svg


def test_cluster_sizes_are_aggregated_before_drawing() -> None:
    """A million clusters draw the same handful of bars as a thousand: the chart does not grow with them."""
    rng = np.random.default_rng(1)
    small, big = (rng.integers(1, 4, n).astype(np.int64) for n in (1_000, 1_000_000))
    a, b = plot_cluster_sizes(small), plot_cluster_sizes(big)
    assert a.count("<rect ") == b.count("<rect ") == 3
    assert abs(len(a) - len(b)) < 1000  # more tick labels on the count axis, nothing per cluster
    distinct, counts = size_counts(big)
    assert distinct.tolist() == [1, 2, 3] and counts.sum() == 1_000_000


# -------------------------------------------------------------------------- scores, S-curve, threshold, points


@pytest.mark.parametrize("seed", range(4))
def test_written_scores_histogram_matches_a_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = np.clip(rng.normal(0.9, 0.05, int(rng.integers(1, 3000))), 0.6, 1.0)
    edges, counts = score_bins(scores, 0.7)
    assert edges[0] <= min(scores.min(), 0.7) and edges[-1] == 1.0 and 5 <= len(counts) <= 40
    ref = [0] * len(counts)
    for v in scores.tolist():  # numpy's rule: [a, b) and the last bin closed
        ref[min(int(np.searchsorted(edges, v, side="right")) - 1, len(counts) - 1)] += 1
    assert counts.tolist() == ref
    svg = plot_scores(scores, 0.7)
    assert f"Scores of the {len(scores):,} written pairs" in svg and svg.count("<rect ") == len(counts)
    assert 'class="threshold"' in svg


def test_s_curve_with_measured_rates() -> None:
    diag = {
        "bins": [[0.0, 0.5], [0.5, 1.0], [0.9, 1.0]],
        "pairs": [10, 20, 0],
        "candidates": [1, 19, 0],
        "measured_rate": [0.1, 0.95, None],
        "predicted_rate": [0.05, None, None],
    }
    svg = plot_s_curve(13, 7, 0.8, diag)
    assert svg.count("<polyline") == 1 and "1 − (1 − s⁷)¹³  (b = 13, r = 7)" in svg
    assert f"P(candidate) = {float(s_curve(np.array([0.8]), 13, 7)[0]):.3f}" in svg
    assert len([t for t in tips(svg) if "sampled pairs became candidates" in t]) == 2  # the empty bin is not drawn
    assert "1 of 10 sampled pairs" in svg and "predicted —" in svg
    assert "measured candidate rate per bin" in svg
    bare = plot_s_curve(13, 7, None, None)
    assert "threshold" not in bare and "measured" not in bare


def test_threshold_plot() -> None:
    fit = {
        "hist_edges": [0.0, 0.5, 1.0],
        "hist_counts": [1000, 3],
        "n_scores": 1003,
        "curve_x": [0.1, 0.9],
        "curve_y": [10.0, 2.0],
        "curve_low": [None, None],
        "curve_high": [0.0, 1.0],
        "low": 0.2,
        "high": 0.9,
        "threshold": 0.6,
        "method": "valley",
    }
    svg = plot_threshold(fit)
    assert svg is not None and svg.count("<rect ") == 2 and svg.count("<polyline") == 2  # no curve of nothing
    assert "chosen threshold 0.600 (valley)" in svg and "allowed range 0.2–0.9" in svg
    assert "non-matches" not in svg and "candidate scores and the chosen threshold" in svg
    assert plot_threshold({"hist_edges": [0.0], "hist_counts": []}) is None


def test_points_plot() -> None:
    pts = [("a<1>", np.array([[1.0, 2.0], [3.0, 4.0]])), ("b", np.array([[5.0, 5.0]]))]
    svg = plot_points(pts, {"width": 10, "height": 10, "grid_x": 2, "grid_y": 2})
    assert svg.count("<circle") == 2 + 1  # the first record's points and its legend swatch
    assert "a&lt;1&gt;" in svg and "points of the records" in svg
    assert svg.count('stroke="#e3e3e3"') == 6  # the 2 x 2 grid: 3 + 3 lines
    assert "<circle" in plot_points(pts, {})  # no grid known: the points' own range


def test_wilson_interval() -> None:
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and 0.25 < hi < 0.35
    lo, hi = wilson_interval(10, 10)
    assert 0.65 < lo < 0.75 and hi == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
