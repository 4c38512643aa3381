"""The charts of report.html (er_framework.report.charts and the plots of er_framework.report.page): inline SVG
drawn from aggregates, checked against naive references (a Counter, numpy's histogram, a full sort)."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

from er_framework.data import Pairs, Records
from er_framework.report.charts import Chart, Scale, log_ticks, nice_ticks, tick_label
from er_framework.report.page import (
    SIZE_BARS,
    RunData,
    largest_clusters,
    plot_cluster_sizes,
    plot_points,
    plot_s_curve,
    plot_scores,
    plot_threshold,
    s_curve,
    score_bins,
    size_counts,
    values_from_run,
)

TIP = re.compile(r"<title>([^<]*)</title>")


def tips(svg: str) -> list[str]:
    return TIP.findall(svg)


# -------------------------------------------------------------------------- scales and ticks


def test_scales() -> None:
    assert Scale(0.0, 2.0).share(0.5) == 0.25
    log = Scale(1.0, 1000.0, "log")
    assert log.share(10.0) == pytest.approx(1 / 3) and log.share(0.0) == 0.0
    sym = Scale(0.0, 99.0, "symlog")
    assert sym.share(0.0) == 0.0 and sym.share(9.0) == pytest.approx(0.5) and sym.share(99.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="log scale starts above 0"):
        Scale(0.0, 1.0, "log")


def test_ticks() -> None:
    assert nice_ticks(0.0, 1.0, 5) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert log_ticks(0.7, 3000.0) == [1.0, 10.0, 100.0, 1000.0]
    assert log_ticks(1.0, 30.0) == [1.0, 2.0, 5.0, 10.0, 20.0]
    assert log_ticks(0.0, 10.0) == []
    assert tick_label(12000.0) == "12,000" and tick_label(0.25) == "0.25"


def test_chart_places_values_and_escapes_text() -> None:
    chart = Chart(Scale(0.0, 1.0), Scale(0.0, 10.0), width=200, height=100, left=20, right=10, top=10, bottom=20,
                  label="<b>x</b>")
    assert chart.px(0.0) == 20 and chart.px(1.0) == 190 and chart.px(2.0) == 190  # clamped to the plot area
    assert chart.py(0.0) == 80 and chart.py(10.0) == 10
    chart.title("<script>")
    chart.line([0.0, 0.5, 1.0], [1.0, float("nan"), 3.0], "#000")  # a gap: no line of one point
    chart.bars([0.0], [0.5], [5.0], "#111", ["a & b"])
    chart.legend("<i>legend</i>", "#222")
    svg = chart.svg()
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
    assert "<polyline" not in svg  # each run of the line has one point
    assert tips(svg) == ["a &amp; b"] and "&lt;i&gt;legend&lt;/i&gt;" in svg
    rect = re.search(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    assert rect is not None
    assert [float(v) for v in rect.groups()] == pytest.approx([20.3, 45.0, 84.4, 35.0])


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
    diag = {"bins": [[0.0, 0.5], [0.5, 1.0], [0.9, 1.0]], "pairs": [10, 20, 0], "candidates": [1, 19, 0],
            "measured_rate": [0.1, 0.95, None], "predicted_rate": [0.05, None, None]}
    svg = plot_s_curve(13, 7, 0.8, diag)
    assert svg.count("<polyline") == 1 and "1 − (1 − s⁷)¹³  (b = 13, r = 7)" in svg
    assert f"P(candidate) = {float(s_curve(np.array([0.8]), 13, 7)[0]):.3f}" in svg
    assert len([t for t in tips(svg) if "sampled pairs became candidates" in t]) == 2  # the empty bin is not drawn
    assert "1 of 10 sampled pairs" in svg and "predicted —" in svg
    assert "measured candidate rate per bin" in svg
    bare = plot_s_curve(13, 7, None, None)
    assert "threshold" not in bare and "measured" not in bare


def test_threshold_plot() -> None:
    fit = {"hist_edges": [0.0, 0.5, 1.0], "hist_counts": [1000, 3], "n_scores": 1003, "curve_x": [0.1, 0.9],
           "curve_y": [10.0, 2.0], "curve_low": [None, None], "curve_high": [0.0, 1.0], "low": 0.2, "high": 0.9,
           "threshold": 0.6, "method": "valley"}
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


# -------------------------------------------------------------------------- the largest clusters, in linear time


@pytest.mark.parametrize("seed", range(40))
def test_largest_clusters_equal_a_full_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 6, int(rng.integers(0, 60))).astype(np.int64)
    top = int(rng.integers(0, 9))
    order = np.lexsort((np.arange(len(sizes)), -sizes))
    assert largest_clusters(sizes, top) == [int(c) for c in order[:top] if sizes[c] > 1]


def test_run_data_values_are_those_of_the_wanted_records() -> None:
    recs = Records(ids=["1", "2", "1", "3"], source=np.array([0, 0, 1, 1]), source_names=["A", "B"],
                   fields={"name": ["ann", "bob", None, "cy"]})
    run = RunData(recs, Pairs(np.array([0]), np.array([2]), np.array([0.9])), np.array([0, 1, 0, 3]))
    wanted = {("B", "1"), ("A", "2"), ("A", "9")}  # an id of the other source, one of none
    values, fields, problem = values_from_run(run, wanted)
    assert fields == ["name"] and problem is None
    assert values == {("B", "1"): {"name": None}, ("A", "2"): {"name": "bob"}}


class CountingList(list):  # type: ignore[type-arg]
    """A list that counts the passes over it (a search of every id is one)."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountingList.passes += 1
        return super().__iter__()


def test_hinted_rows_are_checked_and_spare_the_search() -> None:
    ids = CountingList(["1", "2", "1", "3"])
    recs = Records(ids=ids, source=np.array([0, 0, 1, 1]), source_names=["A", "B"],
                   fields={"name": ["ann", "bob", None, "cy"]})
    run = RunData(recs, Pairs(np.array([0]), np.array([2]), np.array([0.9])), np.array([0, 1, 0, 3]))
    wanted = {("B", "1"), ("A", "2")}
    CountingList.passes = 0
    values, _, _ = values_from_run(run, wanted, {("B", "1"): 2, ("A", "2"): 1})
    assert values == {("B", "1"): {"name": None}, ("A", "2"): {"name": "bob"}} and CountingList.passes == 0
    # a wrong hint (another record there, or out of range) is not trusted: the record is searched for
    values, _, _ = values_from_run(run, wanted, {("B", "1"): 0, ("A", "2"): 99})
    assert values == {("B", "1"): {"name": None}, ("A", "2"): {"name": "bob"}} and CountingList.passes == 1


def test_the_review_rows_of_a_run_point_at_its_records() -> None:
    from pathlib import Path

    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job
    from er_framework.report.review import review_rows

    res = run_job(parse_job(Path(__file__).resolve().parents[2] / "configs" / "customers.yaml"), write=False)
    rows = review_rows(res.report)
    assert len(rows) >= 10
    names = res.records.source_names
    for (source, rid), row in rows.items():
        assert (names[res.records.source[row]], res.records.ids[row]) == (source, rid)
    assert review_rows({"review": {"above": [{"left": {"source": "A", "id": "1", "row": True},
                                              "right": {"source": "B", "id": "2", "row": -1}}]}}) == {}
