"""The plots of report.html (:mod:`er_framework.report.page`): inline SVG written directly
(:mod:`er_framework.report.charts`, no plotting library), each drawn from aggregates (a histogram from its
counts, cluster sizes from the count per size), so that their size and the time to draw them do not grow
with the records or pairs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from er_framework.report.charts import PALETTE, Chart, Scale, Shape, log_ticks, nice_ticks
from er_framework.report.review import fmt_value as _fmt
from er_framework.report.review import histogram_svg

__all__ = [
    "SIZE_BARS",
    "S_CURVE_POINTS",
    "plot_cluster_sizes",
    "plot_points",
    "plot_s_curve",
    "plot_scores",
    "plot_threshold",
    "s_curve",
    "score_bins",
    "size_counts",
    "wilson_interval",
]


# --------------------------------------------------------------------------
# the S-curve and its measured rates
# --------------------------------------------------------------------------


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate k/n (``(0, 1)`` when n = 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def s_curve(s: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """P(candidate | s) = 1 − (1 − s^r)^b."""
    return 1.0 - (1.0 - np.power(s, rows)) ** bands


# --------------------------------------------------------------------------
# plots (inline SVG, er_framework.report.charts; each drawn from aggregates)
# --------------------------------------------------------------------------

#: points of the theoretical S-curve drawn (a smooth curve: more would not show)
S_CURVE_POINTS = 201
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def plot_s_curve(bands: int, rows: int, threshold: float | None, diag: dict[str, Any] | None) -> str:
    """The S-curve of (b, r), the threshold, and measured rates with 95% intervals (inline SVG)."""
    chart = Chart(Scale(0.0, 1.0), Scale(-0.03, 1.05), height=330, label="LSH S-curve")
    chart.title("LSH banding: probability of becoming a candidate pair")
    ticks = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    chart.y_axis(ticks, "P(candidate pair)")
    chart.x_axis(ticks, "similarity s (exact Jaccard)")
    s = np.linspace(0.0, 1.0, S_CURVE_POINTS)
    chart.line(s.tolist(), s_curve(s, bands, rows).tolist(), PALETTE[0], width=2.0)
    formula = f"1 − (1 − s{str(rows).translate(_SUPERSCRIPT)}){str(bands).translate(_SUPERSCRIPT)}"
    chart.legend(f"{formula}  (b = {bands}, r = {rows})", PALETTE[0])
    if threshold is not None:
        p_t = float(s_curve(np.array([threshold]), bands, rows)[0])
        chart.vline(threshold, PALETTE[3], width=1.2)
        chart.markers([threshold], [p_t], PALETTE[3], size=3.5, tips=[f"threshold {threshold:g}: P = {p_t:.3f}"])
        chart.legend(f"threshold {threshold:g}: P(candidate) = {p_t:.3f}", PALETTE[3], dash="5 3")
    if diag:
        xs, ys, lo, hi, pred, tips = [], [], [], [], [], []
        for (a, b), n, k, m, p in zip(diag["bins"], diag["pairs"], diag["candidates"], diag["measured_rate"], diag["predicted_rate"]):
            if not n or m is None:
                continue
            low, high = wilson_interval(int(k), int(n))
            xs.append((a + b) / 2)
            ys.append(m)
            lo.append(min(m, low))
            hi.append(max(m, high))
            pred.append(p)
            tips.append(
                f"similarity {a:.1f}–{b:.1f}: {int(k):,} of {int(n):,} sampled pairs became candidates "
                f"({m:.3f}, 95% interval {low:.3f}–{high:.3f}); predicted {_fmt(p)}"
            )
        if xs:
            chart.errorbars(xs, lo, hi, PALETTE[2])
            chart.markers(xs, ys, PALETTE[2], size=3.5, tips=tips)
            known = [(x, p) for x, p in zip(xs, pred) if p is not None]
            chart.markers([x for x, _ in known], [p for _, p in known], "#555555", "x", size=3.5)
            chart.legend("measured candidate rate per bin (95% interval)", PALETTE[2], "errorbar")
            chart.legend("predicted for the sampled pairs (mean P(s) per bin)", "#555555", "marker", shape="x")
    return chart.svg()


def score_bins(scores: np.ndarray, threshold: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The histogram of the written pair scores: bins of ~0.025 from a 0.05 step at or below the lowest
    score (and the threshold) up to 1 (or the highest score above 1), 5 to 40 of them: ``(edges, counts)``."""
    low = float(scores.min()) if len(scores) else 0.0
    if threshold is not None:
        low = min(low, float(threshold))
    low = max(0.0, math.floor(low * 20) / 20)  # start on a 0.05 step
    high = 1.0 if len(scores) == 0 or float(scores.max()) <= 1.0 else float(scores.max())
    if high <= low:
        high = low + 1.0
    bins = max(5, min(40, round((high - low) / 0.025)))
    counts, edges = np.histogram(scores, bins=bins, range=(low, high))
    return edges, counts


def plot_scores(scores: np.ndarray, threshold: float | None) -> str:
    """Histogram of the written pair scores with the threshold (inline SVG, from the bins' counts)."""
    edges, counts = score_bins(scores, threshold)
    return f"<h3>Scores of the {len(scores):,} written pairs</h3>" + histogram_svg(
        edges.tolist(), counts.astype(np.float64).tolist(), threshold, x_label="score of the pair (verifier)", label="score histogram"
    )


def plot_threshold(fit: dict[str, Any]) -> str | None:
    """``threshold: auto``: every candidate's score (histogram), the fitted density, the range and the chosen
    threshold (inline SVG; None without a usable histogram)."""
    edges = np.asarray(fit.get("hist_edges") or [], dtype=np.float64)
    counts = np.asarray(fit.get("hist_counts") or [], dtype=np.float64)
    if len(edges) < 2 or len(counts) != len(edges) - 1:
        return None
    x = np.asarray(fit.get("curve_x") or [], dtype=np.float64)
    curves = []
    for key, colour, label in (
        ("curve_y", PALETTE[0], "fitted density" if fit.get("method") != "mixture" else "mixture"),
        ("curve_low", PALETTE[7], "non-matches"),
        ("curve_high", PALETTE[2], "matches"),
    ):
        y = np.asarray([np.nan if v is None else v for v in fit.get(key) or []], dtype=np.float64)
        if len(y) == len(x) and np.isfinite(y).any():
            curves.append((y, colour, label))
    top = max([float(counts.max()) if len(counts) else 1.0] + [float(np.nanmax(y)) for y, _, _ in curves if np.isfinite(y).any()] + [1.0])
    chart = Chart(Scale(0.0, 1.0), Scale(0.0, top * 1.15, "symlog"), height=330, label="candidate scores and the chosen threshold")
    chart.title("threshold: auto — every candidate's score and the chosen threshold")
    chart.y_axis([0.0] + [10.0**k for k in range(0, int(math.floor(math.log10(top * 1.15))) + 1)], "pairs (symmetric log scale)")
    low, high = fit.get("low"), fit.get("high")
    if low is not None and high is not None:
        chart.vspan(float(low), float(high), "#fdd0a2", 0.45)
    tips = [f"{a:.4g} – {b:.4g}: {int(c):,} pairs" for a, b, c in zip(edges[:-1], edges[1:], counts)]
    chart.bars(edges[:-1].tolist(), edges[1:].tolist(), counts.tolist(), "#9ecae1", tips, gap=0.3, base=0.0)
    chart.legend(f"candidate pairs by score ({int(fit.get('n_scores') or 0):,})", "#9ecae1", "patch")
    for y, colour, label in curves:
        chart.line(x.tolist(), y.tolist(), colour, width=1.4)
        chart.legend(label, colour)
    if low is not None and high is not None:
        chart.legend(f"allowed range {low:g}–{high:g}", "#fdd0a2", "patch", opacity=0.6)
    t = fit.get("threshold")
    if t is not None:
        chart.vline(float(t), PALETTE[3])
        chart.legend(f"chosen threshold {float(t):.3f} ({fit.get('method')})", PALETTE[3], dash="5 3")
    chart.x_axis(nice_ticks(0.0, 1.0, 10), "score of the candidate pair (verifier)", grid=False)
    return chart.svg()


def size_counts(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct cluster sizes and how many clusters have each (one pass: a bincount of the sizes)."""
    per_size = np.bincount(sizes) if len(sizes) else np.zeros(0, dtype=np.int64)
    distinct = np.flatnonzero(per_size)
    return distinct, per_size[distinct]


#: at most this many distinct cluster sizes get a bar each; more are put in logarithmic size bins
SIZE_BARS = 30


def plot_cluster_sizes(sizes: np.ndarray, counts: np.ndarray | None = None) -> str:
    """Number of clusters of each size, counts on a log scale (inline SVG, from the counts per size): ``sizes``
    every cluster's size, or with ``counts`` the distinct sizes (ascending) and how many clusters have each."""
    distinct, counts = size_counts(sizes) if counts is None else (np.asarray(sizes), np.asarray(counts))
    ymax = int(counts.max()) if len(counts) else 1
    title = f"Cluster sizes ({int(counts.sum()):,} clusters)"
    if len(distinct) <= SIZE_BARS:
        pad = max(0.8, (4 - len(distinct)) / 2)  # a lone bar is not stretched over the whole plot
        chart = Chart(Scale(-pad, len(distinct) - 1 + pad), Scale(0.7, ymax * 3, "log"), label="cluster sizes")
        chart.title(title)
        chart.y_axis(log_ticks(1, ymax * 3), "clusters (log scale)")
        xs = np.arange(len(distinct), dtype=np.float64)
        tips = [f"{int(c):,} clusters of {int(v):,} records" for v, c in zip(distinct, counts)]
        chart.bars((xs - 0.3).tolist(), (xs + 0.3).tolist(), counts.tolist(), PALETTE[0], tips, gap=0.0)
        for x, c in zip(xs.tolist(), counts.tolist()):
            chart.text(x, c, f"{int(c):,}", dy=-4)
        chart.x_axis(xs.tolist(), "cluster size (records)", grid=False, names=[f"{int(v):,}" for v in distinct])
        return chart.svg()
    top = int(distinct[-1])
    edges = np.unique(np.round(np.logspace(0, math.log10(top + 1), 30)).astype(np.int64))
    edges = np.append(edges, top + 1) if edges[-1] <= top else edges
    per_size = np.zeros(top + 2, dtype=np.int64)
    per_size[distinct] = counts
    below = np.concatenate([[0], np.cumsum(per_size)])  # below[v]: clusters smaller than v
    binned = below[edges[1:]] - below[edges[:-1]]
    chart = Chart(Scale(float(edges[0]), float(edges[-1]), "log"), Scale(0.7, int(binned.max()) * 3, "log"), label="cluster sizes")
    chart.title(title)
    chart.y_axis(log_ticks(1, int(binned.max()) * 3), "clusters (log scale)")
    tips = [f"{int(c):,} clusters of {int(a):,}–{int(b) - 1:,} records" for a, b, c in zip(edges[:-1], edges[1:], binned)]
    chart.bars(edges[:-1].tolist(), edges[1:].tolist(), binned.tolist(), PALETTE[0], tips, gap=0.6)
    chart.x_axis(log_ticks(float(edges[0]), float(edges[-1])), "cluster size (records, log scale)", grid=False)
    return chart.svg()


#: marker shapes of the records of a points plot, in turn
_SHAPES: tuple[Shape, ...] = ("o", "x", "s", "+", "^", "v", "D")


def plot_points(records: list[tuple[str, np.ndarray]], shingler: dict[str, Any]) -> str:
    """The [x, y] points (minutiae) of a cluster's records overlaid, on the shingler's grid if known
    (inline SVG; one marker per point of the few records shown)."""
    width, height = shingler.get("width"), shingler.get("height")
    if shingler.get("normalized"):
        width, height = 1.0, 1.0
    known = isinstance(width, (int, float)) and isinstance(height, (int, float)) and width > 0 and height > 0
    if known:
        x0, x1, y0, y1 = 0.0, float(width), 0.0, float(height)  # type: ignore[arg-type]
    else:
        every = np.concatenate([pts for _, pts in records])
        x0, y0 = float(every[:, 0].min()), float(every[:, 1].min())
        x1, y1 = max(float(every[:, 0].max()), x0 + 1e-9), max(float(every[:, 1].max()), y0 + 1e-9)
    side = 300  # the plot area is square, the axes to the same scale
    span = max(x1 - x0, y1 - y0)
    chart = Chart(
        Scale(x0, x0 + span),
        Scale(y0, y0 + span),
        width=side + 50,
        height=side + 44,
        left=44,
        right=6,
        top=8,
        bottom=36,
        label="points of the records",
    )
    chart.y_axis(nice_ticks(y0, y0 + span, 4), "")
    gx, gy = shingler.get("grid_x"), shingler.get("grid_y")
    if known and isinstance(gx, int) and isinstance(gy, int) and 0 < gx <= 100 and 0 < gy <= 100:
        grid = "".join(
            f'<line x1="{chart.px(v):.1f}" x2="{chart.px(v):.1f}" y1="{chart.py(y1):.1f}" '
            f'y2="{chart.py(y0):.1f}" stroke="#e3e3e3" stroke-width="0.6"/>'
            for v in np.linspace(x0, x1, gx + 1).tolist()
        )
        grid += "".join(
            f'<line x1="{chart.px(x0):.1f}" x2="{chart.px(x1):.1f}" y1="{chart.py(v):.1f}" '
            f'y2="{chart.py(v):.1f}" stroke="#e3e3e3" stroke-width="0.6"/>'
            for v in np.linspace(y0, y1, gy + 1).tolist()
        )
        chart.raw(grid)
    for i, (rid, pts) in enumerate(records):
        shape, colour = _SHAPES[i % len(_SHAPES)], PALETTE[i % len(PALETTE)]
        chart.markers(pts[:, 0].tolist(), pts[:, 1].tolist(), colour, shape, size=3.0, filled=False)
        chart.legend(_fmt(rid, 24), colour, "marker", shape=shape, filled=False)
    chart.x_axis(nice_ticks(x0, x0 + span, 4), "", grid=False)
    return chart.svg()
