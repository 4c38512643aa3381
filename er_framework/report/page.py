"""A visual report of a finished job: one self-contained HTML page.

    er report OUT_DIR        -> OUT_DIR/report.html

The page is built from the outputs of ``er run`` (``report.json``, the pairs
and clusters tables, CSV or Parquet) and, for example records, from the job's
sources, re-read through the job file named in ``report.json``; ``er run``
draws it from the run's results in memory (:class:`RunData`). It is one
file: the charts are inline SVG written directly (:mod:`er_framework.report.charts`,
no plotting library), each drawn from aggregates (a histogram from its
counts, cluster sizes from the count per size), so the page's size and the
time to draw it do not grow with the records or pairs; the style sheet is
inline, there is no script and no reference to anything outside the file, so
it opens from disk without a server. Every text taken from the data or the
report is HTML-escaped.

What it shows: the job (name, mode, config, seed, config hash, versions, run
date), summary counts, the LSH S-curve of the chosen (b, r) with the measured
candidate rate per similarity bin (``report.json`` ``diagnostics.s_curve``)
when the run recorded it, the score histogram of the written pairs, the
cluster-size distribution, the largest clusters with example records, the
stages with seconds and peak memory, and the blocker and component details.
"""

from __future__ import annotations

import heapq
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import compress
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.config.resolve import parse_job
from er_framework.data import Pairs, Records
from er_framework.errors import ErError, InputError, Problem
from er_framework.io.html import extract_text
from er_framework.io.outputs import find_job_file, publish, recover
from er_framework.io.output_read import read_clusters_csv, read_pairs_csv
from er_framework.io.source_files import merge_files, read_source
from er_framework.report.charts import PALETTE, Chart, Scale, Shape, log_ticks, nice_ticks
from er_framework.report.review import (
    REVIEW_CSS,
    histogram_svg,
    Values,
    candidate_scores,
    match_weights,
    review_pairs,
    review_records,
    review_rows,
    waterfalls,
)
from er_framework.report.review import esc as _e
from er_framework.report.review import fmt_value as _fmt

__all__ = ["render_report", "write_report"]

#: Characters of each field shown for an example record.
SNIPPET_CHARS = 200
#: largest multi-record clusters shown with example records
TOP_CLUSTERS = 5
#: Keys of report.json that may hold the date of the run (first found wins).
_DATE_KEYS = ("finished_at", "started_at", "finished", "started", "date", "run_at", "timestamp")


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


#: Numbers shown without thousands separators (identifiers, not counts).
_PLAIN_KEYS = {"seed", "prime"}


def _kv_table(rows: Iterable[tuple[str, Any]], cls: str = "kv") -> str:
    body = "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(str(v) if k in _PLAIN_KEYS and isinstance(v, int) else _fmt(v))}</td></tr>"
        for k, v in rows
    )
    return f'<table class="{cls}">{body}</table>'


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]], num: Sequence[bool] | None = None) -> str:
    """A table; cells are formatted with :func:`_fmt` unless given as ``("html", markup)``."""
    num = num or [False] * len(head)
    out = ["<table><thead><tr>"]
    out += [f'<th class="{"num" if n else ""}">{_e(h)}</th>' for h, n in zip(head, num)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        for cell, n in zip(row, num):
            markup = cell[1] if isinstance(cell, tuple) and len(cell) == 2 and cell[0] == "html" else _e(_fmt(cell))
            out.append(f'<td class="{"num" if n else ""}">{markup}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


def _snippet(value: str | None, limit: int = SNIPPET_CHARS) -> str:
    if value is None:
        return "(missing)"
    text = " ".join(value.split())
    if len(text) > limit:
        return f"{text[:limit]}… ({len(text):,} characters)"
    return text if text else "(empty)"


def _id_markup(rid: str) -> str:
    """A record id in code style: short ids never wrap, long ones may wrap after a '/'."""
    if len(rid) <= 30:
        return f'<code class="id">{_e(rid)}</code>'
    return f'<code class="longid">{_e(rid).replace("/", "/<wbr>")}</code>'


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
# reading the outputs
# --------------------------------------------------------------------------


def _load_report(out: Path) -> dict[str, Any]:
    path = out / "report.json"
    fix = "run `er run CONFIG --out DIR` first, then `er report DIR` on that folder"
    if not out.is_dir():
        raise InputError(Problem(where=str(out), message="no such output folder", fix=fix))
    if not path.is_file():
        raise InputError(Problem(where=str(path), message=f"no report.json in {str(out)!r}", fix=fix))
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(
            Problem(where=str(path), message=f"cannot read report.json: {exc}", fix=fix + " (it rewrites the file)")
        ) from None
    if not isinstance(report, dict):
        raise InputError(
            Problem(where=str(path), message="report.json is not a JSON object", fix=fix + " (it rewrites the file)")
        )
    return report


def _table_file(out: Path, name: str) -> Path | None:
    """``name.csv`` or ``name.parquet`` in ``out`` (the newer if both exist)."""
    found = [p for p in (out / f"{name}.csv", out / f"{name}.parquet") if p.is_file()]
    if not found:
        return None
    return max(found, key=lambda p: p.stat().st_mtime_ns)


def _run_date(report: dict[str, Any], out: Path) -> str:
    for key in _DATE_KEYS:
        if report.get(key):
            return str(report[key])
    try:
        mtime = (out / "report.json").stat().st_mtime
    except OSError:
        return "—"
    stamp = datetime.fromtimestamp(mtime, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{stamp} (time report.json was written)"


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
        for (a, b), n, k, m, p in zip(diag["bins"], diag["pairs"], diag["candidates"],
                                      diag["measured_rate"], diag["predicted_rate"]):
            if not n or m is None:
                continue
            low, high = wilson_interval(int(k), int(n))
            xs.append((a + b) / 2)
            ys.append(m)
            lo.append(min(m, low))
            hi.append(max(m, high))
            pred.append(p)
            tips.append(f"similarity {a:.1f}–{b:.1f}: {int(k):,} of {int(n):,} sampled pairs became candidates "
                        f"({m:.3f}, 95% interval {low:.3f}–{high:.3f}); predicted {_fmt(p)}")
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
    return (f'<h3>Scores of the {len(scores):,} written pairs</h3>'
            + histogram_svg(edges.tolist(), counts.astype(np.float64).tolist(), threshold,
                            x_label="score of the pair (verifier)", label="score histogram"))


def plot_threshold(fit: dict[str, Any]) -> str | None:
    """``threshold: auto``: every candidate's score (histogram), the fitted density, the range and the chosen
    threshold (inline SVG; None without a usable histogram)."""
    edges = np.asarray(fit.get("hist_edges") or [], dtype=np.float64)
    counts = np.asarray(fit.get("hist_counts") or [], dtype=np.float64)
    if len(edges) < 2 or len(counts) != len(edges) - 1:
        return None
    x = np.asarray(fit.get("curve_x") or [], dtype=np.float64)
    curves = []
    for key, colour, label in (("curve_y", PALETTE[0], "fitted density" if fit.get("method") != "mixture"
                                else "mixture"), ("curve_low", PALETTE[7], "non-matches"),
                               ("curve_high", PALETTE[2], "matches")):
        y = np.asarray([np.nan if v is None else v for v in fit.get(key) or []], dtype=np.float64)
        if len(y) == len(x) and np.isfinite(y).any():
            curves.append((y, colour, label))
    top = max([float(counts.max()) if len(counts) else 1.0]
              + [float(np.nanmax(y)) for y, _, _ in curves if np.isfinite(y).any()] + [1.0])
    chart = Chart(Scale(0.0, 1.0), Scale(0.0, top * 1.15, "symlog"), height=330,
                  label="candidate scores and the chosen threshold")
    chart.title("threshold: auto — every candidate's score and the chosen threshold")
    chart.y_axis([0.0] + [10.0**k for k in range(0, int(math.floor(math.log10(top * 1.15))) + 1)],
                 "pairs (symmetric log scale)")
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


def plot_cluster_sizes(sizes: np.ndarray) -> str:
    """Number of clusters of each size, counts on a log scale (inline SVG, from the counts per size)."""
    distinct, counts = size_counts(sizes)
    ymax = int(counts.max()) if len(counts) else 1
    title = f"Cluster sizes ({len(sizes):,} clusters)"
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
    chart = Chart(Scale(float(edges[0]), float(edges[-1]), "log"), Scale(0.7, int(binned.max()) * 3, "log"),
                  label="cluster sizes")
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
    chart = Chart(Scale(x0, x0 + span), Scale(y0, y0 + span), width=side + 50, height=side + 44, left=44, right=6,
                  top=8, bottom=36, label="points of the records")
    chart.y_axis(nice_ticks(y0, y0 + span, 4), "")
    gx, gy = shingler.get("grid_x"), shingler.get("grid_y")
    if known and isinstance(gx, int) and isinstance(gy, int) and 0 < gx <= 100 and 0 < gy <= 100:
        grid = "".join(f'<line x1="{chart.px(v):.1f}" x2="{chart.px(v):.1f}" y1="{chart.py(y1):.1f}" '
                       f'y2="{chart.py(y0):.1f}" stroke="#e3e3e3" stroke-width="0.6"/>'
                       for v in np.linspace(x0, x1, gx + 1).tolist())
        grid += "".join(f'<line x1="{chart.px(x0):.1f}" x2="{chart.px(x1):.1f}" y1="{chart.py(v):.1f}" '
                        f'y2="{chart.py(v):.1f}" stroke="#e3e3e3" stroke-width="0.6"/>'
                        for v in np.linspace(y0, y1, gy + 1).tolist())
        chart.raw(grid)
    for i, (rid, pts) in enumerate(records):
        shape, colour = _SHAPES[i % len(_SHAPES)], PALETTE[i % len(PALETTE)]
        chart.markers(pts[:, 0].tolist(), pts[:, 1].tolist(), colour, shape, size=3.0, filled=False)
        chart.legend(_fmt(rid, 24), colour, "marker", shape=shape, filled=False)
    chart.x_axis(nice_ticks(x0, x0 + span, 4), "", grid=False)
    return chart.svg()


# --------------------------------------------------------------------------
# example records
# --------------------------------------------------------------------------


def _html_title(page: str | None) -> str | None:
    """The ``<title>`` (else the first ``<h1>``) of an HTML page, or None."""
    if not page:
        return None
    try:
        from selectolax.lexbor import LexborHTMLParser

        tree = LexborHTMLParser(page)
        for selector in ("title", "h1"):
            node = tree.css_first(selector)
            if node is not None:
                text = " ".join((node.text() or "").split())
                if text:
                    return text
    except Exception:  # noqa: BLE001 - a title is a nicety: never fail the report for it
        return None
    return None


def _points(value: str | None) -> np.ndarray | None:
    """``[[x, y, ...], ...]`` (e.g. minutiae) as an (n, 2) float array, else None."""
    if not value or not value.lstrip().startswith("[["):
        return None
    try:
        data = json.loads(value)
        pts = np.array([[float(p[0]), float(p[1])] for p in data], dtype=np.float64)
    except (ValueError, TypeError, IndexError, KeyError):
        return None
    return pts if pts.ndim == 2 and len(pts) and np.isfinite(pts).all() else None


Points = dict[tuple[str, str], np.ndarray]
#: The values of some records as read, their field names, and a problem reading them (or None).
Fetched = tuple[Values, list[str], str | None]


def _example_records(
    report: dict[str, Any], out: Path, config_path: str | Path | None, wanted: set[tuple[str, str]]
) -> Fetched:
    """The values ``(source, id) -> {column: text or None}`` of the wanted records (HTML columns as their
    page title and visible text), re-read from the job's sources; the column names, and a problem (or None)."""
    if not wanted:
        return {}, [], None
    path, tried = find_job_file(report, out, config_path)
    if path is None:
        where = ", ".join(str(p) for p in tried) or "(report.json names no config)"
        return {}, [], (f"the job file was not found (looked at {where}), so the example records cannot be "
                        "shown; run er report from the folder the job was run in, or pass the job file "
                        "(er report DIR --config JOB.yaml)")
    try:
        job = parse_job(path)
        note = None
        if report.get("config_hash") and job.config_hash() != report.get("config_hash"):
            note = (f"the config hash of {path} now differs from report.json's: the job file (or the "
                    "framework) changed since the run; the records below are read with the current job file")
        found: Values = {}
        field_names: list[str] = []
        for i, src in enumerate(job.spec.sources):
            ids_wanted = {rid for s, rid in wanted if s == src.name}
            if not ids_wanted:
                continue
            files = [read_source(f, where=f"{path}: sources[{i}]", **src.read_options()) for f in job.source_paths(i)]
            recs = files[0] if len(files) == 1 else merge_files(files, f"{path}: sources[{i}]")
            rows = [j for j, rid in enumerate(recs.ids) if rid in ids_wanted]
            html_cols = set((src.html.fields or src.fields) if src.html is not None else [])
            for col in src.fields:
                values = [recs.fields[col][j] for j in rows]
                columns: list[tuple[str, list[str | None]]] = []
                if col in html_cols:
                    titles = [_html_title(v) for v in values]
                    if any(titles):
                        columns.append((f"{col}: page title", titles))
                    texts, _ = extract_text(values, boilerplate=src.html.boilerplate,  # type: ignore[union-attr]
                                            language=src.html.language)  # type: ignore[union-attr]
                    columns.append((f"{col} (visible text)", texts))
                else:
                    columns.append((col, values))
                for label, vals in columns:
                    if label not in field_names:
                        field_names.append(label)
                    for j, value in zip(rows, vals):
                        found.setdefault((src.name, recs.ids[j]), {})[label] = value
        return found, field_names, note
    except ErError as exc:
        return {}, [], f"the sources could not be read again, so no example records are shown: {exc}"
    except Exception as exc:  # noqa: BLE001 - the report must not fail because a source moved or broke
        return {}, [], (f"the sources could not be read again, so no example records are shown: "
                            f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#222;
margin:0;background:#f6f7f9}
main{max-width:1080px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:18px;margin:0 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
section{background:#fff;border:1px solid #e2e4e8;border-radius:6px;padding:14px 18px;margin:14px 0}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border-bottom:1px solid #eceef1;padding:3px 10px 3px 0;text-align:left;vertical-align:top}
thead th{border-bottom:2px solid #ccd;font-weight:600}
table.kv th{font-weight:600;color:#444;white-space:nowrap;padding-right:18px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;padding-left:10px}
td.rec{max-width:640px;overflow-wrap:anywhere}
code.id{overflow-wrap:normal;white-space:nowrap}code.longid{overflow-wrap:normal;word-break:normal}
td:has(code.longid){min-width:200px;max-width:280px}
.pair{display:flex;gap:16px;align-items:flex-start}.pair table{flex:1}.pair .pts{width:330px;flex:none}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:0 24px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(120px,1fr));gap:10px;margin:4px 0 8px}
.card{border:1px solid #e2e4e8;border-radius:6px;padding:8px 12px;background:#fafbfc}
.card b{display:block;font-size:20px;font-variant-numeric:tabular-nums}.card span{color:#555;font-size:12px}
.note{color:#555;font-size:13px;margin:4px 0 8px}.warn{color:#8a4b00}
img{max-width:100%;height:auto;display:block;margin:6px 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;overflow-wrap:anywhere}
.bar{display:inline-block;height:9px;background:#8fb3d9;vertical-align:middle}
details pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;background:#f6f7f9;padding:8px;max-height:480px;overflow:auto}
nav a{margin-right:12px;color:#1f5fa8;text-decoration:none}
"""


def _section(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}"><h2>{_e(title)}</h2>{body}</section>'


def _header(report: dict[str, Any], out: Path) -> str:
    versions = report.get("versions") or {}
    comps = versions.get("components") or {}
    comp_text = ", ".join(
        f"{name} ({info.get('distribution', '?')} {info.get('version', '?')})" for name, info in comps.items()
    )
    rows: list[tuple[str, Any]] = [
        ("mode", report.get("mode")),
        ("config", report.get("config")),
        ("seed", report.get("seed")),
        ("config hash", report.get("config_hash")),
        ("run date", _run_date(report, out)),
        ("run time", f"{_fmt(report.get('seconds_total'))} s, peak memory {_fmt(report.get('peak_rss_mb'))} MB"
         if report.get("seconds_total") is not None else None),
        ("versions", f"er-framework {versions.get('er_framework', '?')}, Python {versions.get('python', '?')}, "
                     f"numpy {versions.get('numpy', '?')}" if versions else None),
        ("components", comp_text or None),
        ("output folder", str(out)),
    ]
    return _kv_table(rows)


def _summary(report: dict[str, Any]) -> str:
    recs = report.get("records") or {}
    exact = report.get("exact_duplicates") or {}
    clusters = report.get("clusters") or {}
    cards = [
        ("records read", recs.get("total")),
        ("exact duplicates", "off" if exact.get("enabled") is False
         else exact.get("records_collapsed") or exact.get("pairs") or 0),
        ("candidate pairs", report.get("candidate_pairs")),
        ("verified pairs", report.get("verified_pairs")),
        ("clusters", clusters.get("count")),
        ("singletons", clusters.get("singletons")),
        ("largest cluster", clusters.get("largest")),
    ]
    body = '<div class="cards">' + "".join(
        f"<div class=\"card\"><b>{_e(_fmt(v))}</b><span>{_e(k)}</span></div>" for k, v in cards
    ) + "</div>"
    per_source = recs.get("per_source") or {}
    rows: list[tuple[str, Any]] = [(f"records in source {name!r}", n) for name, n in per_source.items()]
    if exact:
        if not exact.get("enabled", True):
            rows.append(("exact duplicates", "stage off"))
        else:
            rows.append(("exact-duplicate groups", exact.get("groups")))
            rows.append(("records in those groups", exact.get("records_in_groups")))
            rows.append(("records collapsed onto a representative", exact.get("records_collapsed")))
            rows.append(("exact-duplicate pairs (score 1.0)", exact.get("pairs")))
    tokens = report.get("tokens") or {}
    if tokens:
        rows.append(("mean tokens per record", tokens.get("mean_tokens")))
        rows.append(("records with no tokens", tokens.get("empty_token_sets")))
    rows.append(("candidate pairs (blocking, exact duplicates excluded)", report.get("candidate_pairs")))
    rows.append(("verified pairs (score ≥ threshold)", report.get("verified_pairs")))
    rows.append(("pairs in pairs.csv (after the last step; exact copies with every copy)", report.get("pairs_written")))
    if isinstance(report.get("pairs"), dict) and "verified_pairs_listed" in report["pairs"]:
        rows.append(("verified pairs before the clusterer selected pairs (verified_pairs.csv)",
                     report["pairs"]["verified_pairs_listed"]))
    rows.append(("records in clusters of 2 or more", clusters.get("records_in_multi_record_clusters")))
    return body + _kv_table(rows) + _link_answer(report)


def _link_answer(report: dict[str, Any]) -> str:
    """Link modes: records of each source matched to another source, at the threshold and around it."""
    link = report.get("link")
    if not link:
        return ""
    names = list(link.get("sources") or [])
    per_source = (report.get("records") or {}).get("per_source") or {}
    matched = link.get("matched") or {}
    lines = [
        f"{_e(n)}: {_e(_fmt(matched.get(n)))} of {_e(_fmt(per_source.get(n)))} records matched to another source"
        for n in names
    ]
    head = ["score ≥", "cross-source pairs", *[f"{n} records with a pair" for n in names]]
    rows = [[_fmt(r.get("threshold")), _fmt(r.get("pairs")), *[_fmt(r.get(n)) for n in names]]
            for r in link.get("by_threshold") or []]
    return (
        f"<h3>Link answer (score ≥ {_e(_fmt(link.get('threshold')))}, after clustering)</h3>"
        + "".join(f"<p>{line}</p>" for line in lines)
        + _note("Per threshold: records having at least one cross-source candidate pair at or above it "
                "(before clustering).")
        + _table(head, rows)
    )


def _blocking(report: dict[str, Any]) -> str:
    blockers = report.get("blockers") or []
    diag = ((report.get("diagnostics") or {}).get("s_curve")) or None
    if not blockers:
        return _note("report.json lists no blockers.")
    parts: list[str] = []
    for i, blk in enumerate(blockers):
        kind = str(blk.get("type", "?"))
        title = f"blocker {i + 1}: {kind}" if len(blockers) > 1 else f"blocker: {kind}"
        parts.append(f"<h3>{_e(title)}</h3>")
        bands, rows = blk.get("bands"), blk.get("rows")
        if kind == "lsh_bands" or (isinstance(bands, int) and isinstance(rows, int)):
            mine = diag if diag and diag.get("bands") == bands and diag.get("rows") == rows else None
            threshold = blk.get("threshold")
            parts.append(plot_s_curve(int(bands), int(rows), threshold, mine))
            if mine:
                parts.append(_note(
                    f"Green points: share of sampled pairs that the banding made candidates, by exact "
                    f"similarity (bins of width 0.1; error bars: 95% Wilson interval). "
                    f"{_fmt(mine.get('pairs_sampled'))} pairs sampled around {_fmt(mine.get('records_probed'))} "
                    f"records, independently of the banding's hash functions."))
                capped = mine.get("capped")
                if isinstance(capped, dict):
                    parts.append(_note(
                        f"The probe was bounded: {_fmt(capped.get('records_skipped_long_text'))} records longer than "
                        f"{_fmt(capped.get('max_record_chars'))} characters and "
                        f"{_fmt(capped.get('records_skipped_many_tokens'))} with more than "
                        f"{_fmt(capped.get('max_record_tokens'))} tokens were not probed; "
                        f"{_fmt(capped.get('tokens_compared'))} tokens compared (budget "
                        f"{_fmt(capped.get('token_budget'))}, {_fmt(capped.get('pairs_before_token_budget'))} pairs "
                        "sampled before it). The counts and intervals are those of the pairs measured."))
                rows_t = []
                for (a, b), n, k, m, p in zip(mine["bins"], mine["pairs"], mine["candidates"],
                                              mine["measured_rate"], mine["predicted_rate"]):
                    rows_t.append([f"{a:.1f}–{b:.1f}", n, k, m, p])
                parts.append("<details><summary>measured rate per similarity bin</summary>" + _table(
                    ["similarity", "pairs sampled", "candidates", "measured rate", "predicted rate"],
                    rows_t, [False, True, True, True, True]) + "</details>")
            else:
                parts.append(_note(
                    "Only the theoretical curve is shown: this report.json has no measured candidate "
                    "rates (diagnostics.s_curve), e.g. because it was written by an older version "
                    "or diagnostics were turned off."))
            shown = [
                ("bands b", bands), ("rows r", rows), ("signature length used (b·r)", bands * rows),
                ("num_perm", blk.get("num_perm")),
                ("threshold", threshold), ("target recall", blk.get("target_recall")),
                ("P(candidate) at the threshold", blk.get("p_candidate_at_threshold")),
                ("S-curve midpoint (1/b)^(1/r)", blk.get("s_curve_midpoint")),
            ]
        elif kind == "grid_bits":
            parts.append(_note(
                f"Grid-bit blocking: {_fmt(blk.get('sets'))} random sets of {_fmt(blk.get('cells'))} grid cells; "
                "two prints become a candidate pair when they have all cells of some set occupied. "
                "P(candidate | same finger) = 1 − (1 − (pq)^c)^M and P(candidate | different) = "
                "1 − (1 − p^2c)^M for occupancy p and agreement q (the finite-grid values are measured). "
                "The LSH S-curve does not apply."))
            shown = [
                ("sets M", blk.get("sets")), ("cells per set c", blk.get("cells")),
                ("grid cells (bits)", blk.get("n_bits")), ("occupancy p", blk.get("occupancy")),
                ("agreement q assumed", blk.get("agreement_assumed", blk.get("agreement"))),
                ("P(candidate | same)", blk.get("p_candidate_same")),
                ("P(candidate | different)", blk.get("p_candidate_different")),
                ("P(candidate | same), finite grid", blk.get("p_candidate_same_finite_grid")),
                ("P(candidate | different), finite grid", blk.get("p_candidate_different_finite_grid")),
            ]
        else:
            parts.append(_note(f"The {kind} blocker is not LSH banding: no S-curve. Its report follows."))
            shown = []
        stats = [
            ("records bucketed", blk.get("records_bucketed")),
            ("records skipped (no tokens)", blk.get("records_skipped_empty")),
            ("buckets", blk.get("buckets")), ("largest bucket", blk.get("largest_bucket")),
            ("max bucket size", blk.get("max_bucket_size")),
            ("oversized buckets skipped", blk.get("oversized_buckets")),
            ("pairs skipped in them", blk.get("pairs_skipped")),
            ("raw pairs (with repeats)", blk.get("raw_pairs")),
            ("candidate pairs of this blocker", blk.get("candidate_pairs")),
        ]
        used = {"type", "bands", "rows", "num_perm", "threshold", "target_recall", "p_candidate_at_threshold",
                "s_curve_midpoint", "sets", "cells", "n_bits", "occupancy", "agreement_assumed",
                "p_candidate_same", "p_candidate_different", "p_candidate_same_finite_grid",
                "p_candidate_different_finite_grid", "records_bucketed", "records_skipped_empty", "buckets",
                "largest_bucket", "max_bucket_size", "oversized_buckets", "pairs_skipped", "raw_pairs",
                "candidate_pairs"}
        if kind != "grid_bits":
            used.discard("agreement")
        else:
            used.add("agreement")
        rest = [(k, v) for k, v in blk.items() if k not in used]
        model = [(k, v) for k, v in shown if v is not None]
        counts = [(k, v) for k, v in stats if v is not None] + rest
        parts.append('<div class="grid">' + "".join(f"<div>{_kv_table(t)}</div>" for t in (model, counts) if t)
                     + "</div>")
    return "".join(parts)


def _scores(report: dict[str, Any], scores: np.ndarray | None, pairs_file: Path | None) -> str:
    if scores is None:
        return _note("No pairs table (pairs.csv or pairs.parquet) in the output folder: no score histogram.")
    threshold = (report.get("verifier") or {}).get("threshold")
    verify: dict[str, Any] = next((s for s in report.get("stages") or [] if s.get("stage") == "verify"), {})
    parts = []
    if len(scores) == 0:
        parts.append(_note(f"{pairs_file.name if pairs_file else 'the pairs table'} is empty: no pair reached the threshold."))
    else:
        parts.append(plot_scores(scores, threshold))
    exact = (report.get("exact_duplicates") or {}).get("pairs") or 0
    text = (f"Only verified pairs are written, so the histogram starts at the verifier's threshold "
            f"({_fmt(threshold)}): the {_fmt(verify.get('rejected_pairs'))} candidate pairs scored below it "
            f"were dropped and are not in {pairs_file.name if pairs_file else 'the pairs table'}.")
    if exact:
        text += f" It includes the {_fmt(exact)} exact-duplicate pairs, written with score 1.0."
    parts.append(_note(text))
    parts.append(_quartiles(scores))
    return "".join(parts)


def _quartiles(scores: np.ndarray | None) -> str:
    """The written pairs' count and score quartiles (empty without pairs)."""
    if scores is None or not len(scores):
        return ""
    q = np.quantile(scores, [0.0, 0.25, 0.5, 0.75, 1.0])
    return _kv_table([("pairs", len(scores)), ("min / median / max", f"{q[0]:.4f} / {q[2]:.4f} / {q[4]:.4f}"),
                      ("quartiles", f"{q[1]:.4f}, {q[3]:.4f}")])


def _all_scores(section: dict[str, Any], scores: np.ndarray | None) -> str:
    """Every candidate's score (report.json ``scores``), then the written pairs' quartiles."""
    body = candidate_scores(section)
    if scores is not None and len(scores):
        body += "<h3>The pairs written</h3>" + _quartiles(scores)
    return body


def _guarded(title: str, draw: Callable[[], str | None]) -> str | None:
    """A section's body, or a note when report.json's data for it is malformed (the page is still drawn)."""
    try:
        return draw()
    except Exception as exc:  # noqa: BLE001 - one odd section must not cost the whole page
        return _note(f"{title}: this section could not be drawn from report.json ({type(exc).__name__}: {exc}).")


def _threshold(report: dict[str, Any]) -> str:
    """``threshold: auto``: how the threshold was chosen, with the evidence."""
    section = report.get("threshold") or {}
    fit = section.get("auto") or {}
    parts = [plot_threshold(fit) or _note("report.json holds no usable histogram of the candidate scores.")]
    verdict = "chosen from the scores" if fit.get("ok") else "fallback: no two groups of scores showed"
    parts.append(_note(f"Threshold {_fmt(section.get('value'))} ({verdict}): {fit.get('reason', '')} "
                       "A fixed number (threshold: 0.4) replaces the choice; auto_threshold: {low, high, method, "
                       "fallback} bounds it."))
    evidence = fit.get("evidence") or {}
    parts.append(_kv_table([("method asked", fit.get("requested")), ("method used", fit.get("method")),
                            ("candidate scores", fit.get("n_scores")), ("range", f"{fit.get('low')} – {fit.get('high')}")]
                           + [(k, v) for k, v in evidence.items() if not isinstance(v, (list, dict))]))
    return "".join(parts)


def _pruning(report: dict[str, Any]) -> str:
    """``prune_shingles:``: which shingles were dropped for being in too many (or too few) records, and how much of each record."""
    st: dict[str, Any] = next((s for s in report.get("stages") or [] if s.get("stage") == "prune"), {})
    share = st.get("record_share_pruned") or {}
    text = (f"{_fmt(st.get('shingles_pruned'))} of {_fmt(st.get('vocabulary'))} distinct shingles were dropped from every "
            f"record's set before signing and verification: {_fmt(st.get('above_max_df'))} held by more than "
            f"{_fmt(st.get('max_records'))} of the {_fmt(st.get('records_counted'))} records (max_df {_fmt(st.get('max_df'))}), "
            f"{_fmt(st.get('below_min_df'))} by fewer than {_fmt(st.get('min_records'))} (min_df {_fmt(st.get('min_df'))}). "
            f"They were {_fmt(st.get('token_share_pruned'))} of all the records' shingles; per record the share pruned "
            f"has median {_fmt(share.get('median'))}, 90th percentile {_fmt(share.get('p90'))} and maximum "
            f"{_fmt(share.get('max'))}; {_fmt(st.get('records_emptied'))} records were left without shingles.")
    rows = [("records holding each of the 10 most frequent shingles", st.get("most_frequent_df")),
            ("records that lost shingles", st.get("records_pruned"))]
    return _note(text) + _kv_table(rows)


def _chains(report: dict[str, Any]) -> str:
    """Clusters whose pairs look like a chain of two entities: a low-score bridge between dense parts."""
    ch = report.get("chains") or {}
    listed = ch.get("listed") or []
    text = (f"{_fmt(ch.get('flagged'))} of the {_fmt(ch.get('checked'))} clusters checked (of {_fmt(ch.get('clusters'))}; "
            f"{_fmt(ch.get('too_small'))} too small to split, {_fmt(ch.get('skipped_too_large'))} too large to check) "
            "can be cut into two dense parts joined by few, weaker pairs: two entities chained together, "
            "often by text they share (boilerplate). A non-chaining clusterer (louvain, label_propagation), "
            "cluster.split, prune_shingles or a higher threshold separates them.")
    if not listed:
        return _note(text)
    rows = []
    for f in listed:
        a, b = f.get("sides") or (None, None)
        da, db = f.get("side_density") or (None, None)
        ma, mb = f.get("side_median_score") or (None, None)
        bridge = f.get("bridge") or []
        shown = " ~ ".join(f"{s}:{i}" for s, i in bridge)
        rows.append([f.get("cluster"), f.get("size"), f"{a} + {b}", f.get("cut_edges"), f.get("cut_max_score"),
                     f"{_fmt(da)} / {_fmt(db)}", f"{_fmt(ma)} / {_fmt(mb)}", shown])
    return _note(text) + _table(["cluster", "records", "parts", "pairs across", "strongest across", "density of parts",
                                 "median score of parts", "strongest pair across"], rows,
                                [True, True, False, True, True, False, False, False])


@dataclass
class ClusterView:
    """What the cluster sections show: every cluster's size, the ``top`` largest
    multi-record clusters with their members, and the written pair scores inside
    each of them."""

    sizes: np.ndarray
    largest: list[tuple[str, list[tuple[str, str]]]]
    inside: dict[str, list[float]]
    #: the members' positions in the run's records, when drawn from memory
    rows: dict[tuple[str, str], int] = field(default_factory=dict)


def _view_from_files(
    members: dict[str, list[tuple[str, str]]], pairs: list[tuple[str, str, str, str, float]] | None, top: int,
) -> ClusterView:
    """The view of a finished run's output files (``er report``)."""
    sizes = np.array([len(m) for m in members.values()], dtype=np.int64)

    def key(item: tuple[str, list[tuple[str, str]]]) -> tuple[int, int, str]:
        cid = item[0]
        return (-len(item[1]), int(cid) if cid.lstrip("-").isdigit() else 0, cid)

    # what sorting every cluster by key would give, without the sort (heapq.nsmallest: the same order, ties too)
    largest = heapq.nsmallest(top, (item for item in members.items() if len(item[1]) > 1), key=key)
    cluster_of = {rec: cid for cid, m in largest for rec in m}
    inside: dict[str, list[float]] = defaultdict(list)
    for ls, li, rs, ri, score in pairs or []:
        a, b = cluster_of.get((ls, li)), cluster_of.get((rs, ri))
        if a is not None and a == b:
            inside[a].append(score)
    return ClusterView(sizes, largest, inside)


@dataclass
class RunData:
    """A run's results in memory (``er run``): the report is drawn from these
    instead of reading the outputs and the sources back. ``records`` hold the
    values as read (before any ``normalize:`` step); ``labels`` are the
    canonical cluster ids written to the clusters table."""

    records: Records
    pairs: Pairs
    labels: npt.NDArray[np.int64]


def largest_clusters(sizes: npt.NDArray[np.int64], top: int) -> list[int]:
    """The ids of the ``top`` largest clusters of more than one record, largest first, ties by smaller id:
    what sorting every cluster by (−size, id) would give, in linear time (only the few chosen are sorted)."""
    n = len(sizes)
    if top <= 0 or n == 0:
        return []
    if n > top:
        kth = np.partition(sizes, n - top)[n - top]  # the top-th largest size
        above = np.flatnonzero(sizes > kth)
        ties = np.flatnonzero(sizes == kth)[: top - len(above)]
        pool = np.concatenate([above, ties])
    else:
        pool = np.arange(n)
    order = pool[np.lexsort((pool, -sizes[pool]))]
    return [int(c) for c in order[:top] if sizes[c] > 1]


def _view_from_run(run: RunData, top: int) -> ClusterView:
    """The same view from memory: numpy over the labels, no per-record Python objects."""
    labels = run.labels
    sizes = np.bincount(labels) if len(labels) else np.zeros(0, dtype=np.int64)
    chosen = largest_clusters(sizes, top)
    recs = run.records
    names = recs.source_names
    largest = []
    where: dict[tuple[str, str], int] = {}
    for c in chosen:
        rows = np.flatnonzero(labels == c).tolist()
        members = [(names[recs.source[i]], recs.ids[i]) for i in rows]
        where.update(zip(members, rows))
        largest.append((str(c), members))
    inside: dict[str, list[float]] = defaultdict(list)
    if chosen and len(run.pairs):
        lab_l, lab_r = labels[run.pairs.left], labels[run.pairs.right]
        score = run.pairs.score if run.pairs.score is not None else np.ones(len(run.pairs))
        for c in chosen:
            inside[str(c)] = score[(lab_l == c) & (lab_r == c)].tolist()
    return ClusterView(sizes, largest, inside, where)


def values_from_run(run: RunData, wanted: set[tuple[str, str]], hints: dict[tuple[str, str], int] | None = None) -> Fetched:
    """The values of the wanted records from the records as read. A record is taken at its hinted row
    (``hints``: ``(source, id)`` -> position, checked: the record there must have that source and id); the
    others are looked for in one pass over the ids in C (``map`` of the wanted ids' set membership,
    ``compress``) — ~0.1 s for 2 M records, which the hints of a run's page avoid."""
    recs = run.records
    fields = list(recs.fields)
    if not wanted:
        return {}, fields, None
    names = recs.source_names
    found: Values = {}

    def take(i: int) -> None:
        rec = (names[recs.source[i]], recs.ids[i])
        if rec in wanted:
            found[rec] = {f: recs.fields[f][i] for f in fields}

    n = len(recs.ids)
    for key, i in (hints or {}).items():
        if key in wanted and 0 <= i < n and recs.ids[i] == key[1] and names[recs.source[i]] == key[0]:
            take(i)
    rest = {rid for key in wanted if key not in found for rid in (key[1],)}
    if rest:
        for i in compress(range(n), map(rest.__contains__, recs.ids)):
            take(i)
    return found, fields, None


def _cluster_examples(view: ClusterView | None, max_examples: int) -> set[tuple[str, str]]:
    if view is None:
        return set()
    return {rec for _, m in view.largest for rec in m[:max_examples]}


def _clusters(report: dict[str, Any], view: ClusterView | None, max_examples: int, fetched: Fetched) -> tuple[str, str]:
    """(cluster-size section body, largest-clusters section body)."""
    if view is None:
        msg = _note("No clusters table (clusters.csv or clusters.parquet) in the output folder.")
        return msg, msg
    sizes = view.sizes
    dist = [plot_cluster_sizes(sizes)] if len(sizes) else [_note("No records.")]
    dist.append(_note(
        f"{_fmt(len(sizes))} clusters of {_fmt(int(sizes.sum()) if len(sizes) else 0)} records: "
        f"{_fmt(int((sizes == 1).sum()))} singletons, largest {_fmt(int(sizes.max()) if len(sizes) else 0)}"
        f" (clusterer: {(report.get('clusterer') or {}).get('type', '?')})."))
    largest = view.largest
    if not largest:
        return "".join(dist), _note("Every cluster is a singleton: no matches to show.")
    shown_members = {cid: m[:max_examples] for cid, m in largest}
    values, fields, problem = fetched
    points: Points = {}
    for m in shown_members.values():
        for rec in m:
            for f in fields:
                pts = _points((values.get(rec) or {}).get(f))
                if pts is not None:
                    points[rec] = pts
                    break
    parts = []
    if problem:
        parts.append(f'<p class="note warn">{_e(problem)}</p>')
    inside = view.inside
    for cid, m in largest:
        sc = inside.get(cid)
        score_text = ""
        if sc:
            plural = "pair" if len(sc) == 1 else "pairs"
            span = f"score {sc[0]:.3f}" if len(sc) == 1 else f"scores {min(sc):.3f}–{max(sc):.3f}"
            score_text = f"; {len(sc):,} written {plural} inside, {span}"
        parts.append(f"<h3>cluster {_e(cid)}: {len(m):,} records{_e(score_text)}</h3>")
        head = ["source", "id"] + (fields or ["record"])
        rows: list[list[Any]] = []
        for rec in shown_members[cid]:
            found = values.get(rec)
            if found is None:
                why = "(not shown)" if problem and not values else "(not found in the source any more)"
                cells: list[Any] = [("html", f'<span class="note">{why}</span>')] + [""] * (len(head) - 3)
            else:
                cells = [("html", f'<span class="rec">{_e(_snippet(found.get(f)))}</span>') for f in fields]
            rows.append([rec[0], ("html", _id_markup(rec[1])), *cells])
        table = _table(head, rows)
        cluster_points = [(rec[1], points[rec]) for rec in shown_members[cid] if rec in points]
        if cluster_points:
            plot = plot_points(cluster_points, report.get("shingler") or {})
            table = f'<div class="pair">{table}<div class="pts">{plot}</div></div>'
        parts.append(table)
        if len(m) > len(shown_members[cid]):
            parts.append(_note(f"… and {len(m) - len(shown_members[cid]):,} more records."))
    text = (f"Each field is shown up to its first {SNIPPET_CHARS} characters (whitespace folded); "
            "HTML columns as their page title and visible text.")
    if points:
        text += " Fields holding [x, y] points (minutiae) are also drawn, one colour per record, on the shingler's grid."
    parts.append(_note(text))
    return "".join(dist), "".join(parts)


def _stages(report: dict[str, Any]) -> str:
    stages = report.get("stages") or []
    if not stages:
        return _note("report.json lists no stages.")
    longest = max((float(s.get("seconds") or 0.0) for s in stages), default=0.0) or 1.0
    skip = {"stage", "seconds", "peak_rss_mb", "peak_rss_scope"}
    rows = []
    for s in stages:
        sec = float(s.get("seconds") or 0.0)
        width = max(1, round(120 * sec / longest)) if sec > 0 else 0
        details = ", ".join(f"{k} {_fmt(v, 80)}" for k, v in s.items() if k not in skip)
        rows.append([s.get("stage"), ("html", f'{_e(f"{sec:.4f}")}'),
                     ("html", f'<span class="bar" style="width:{width}px"></span>'),
                     s.get("peak_rss_mb"), s.get("peak_rss_scope"), details])
    total = report.get("seconds_total")
    out = _table(["stage", "seconds", "", "peak memory (MB)", "memory measured over", "details"], rows,
                 [False, True, False, True, False, False])
    if total is not None:
        out += _note(f"Total {_fmt(total)} s, peak memory {_fmt(report.get('peak_rss_mb'))} MB "
                     "(the write stage is not in report.json: it is written during that stage).")
    return out


def _components(report: dict[str, Any]) -> str:
    parts = []
    for key, title in (("shingler", "shingler"), ("signature", "signature"), ("verifier", "verifier"),
                       ("clusterer", "clusterer")):
        comp = report.get(key)
        if not comp:
            continue
        shown = {k: v for k, v in comp.items() if k != "type"}
        if key == "verifier" and isinstance(shown.get("per_field"), dict) and match_weights(report) is not None:
            shown["per_field"] = "m, u and weights: see Match weights per field"
        parts.append(f"<div><h3>{_e(title)}: {_e(comp.get('type', '?'))}</h3>" + _kv_table(shown.items()) + "</div>")
    sources = report.get("sources") or {}
    for name, stats in sources.items():
        if stats:
            parts.append(f"<div><h3>source {_e(name)}: reading</h3>"
                         + _kv_table(stats.items() if isinstance(stats, dict) else [("stats", stats)]) + "</div>")
    return f'<div class="grid">{"".join(parts)}</div>' if parts else _note("report.json describes no components.")


# --------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------


def render_report(
    out_dir: str | Path, *, config_path: str | Path | None = None, max_examples: int = 5, run: RunData | None = None,
    shown_dir: str | Path | None = None,
) -> str:
    """The report page of ``out_dir`` as HTML text (see :func:`write_report`); ``shown_dir`` is the folder the
    page names (default ``out_dir``; a run draws the page in its stage before the outputs move in)."""
    out = Path(out_dir)
    report = _load_report(out)
    notes: list[str] = []

    pairs_file = _table_file(out, "pairs")
    pairs: list[tuple[str, str, str, str, float]] | None = None
    scores: np.ndarray | None = None
    view: ClusterView | None = None
    if run is not None:
        scores = run.pairs.score if run.pairs.score is not None else np.ones(len(run.pairs))
        view = _view_from_run(run, TOP_CLUSTERS)
    elif pairs_file is not None:
        try:
            pairs = read_pairs_csv(pairs_file)
            scores = np.array([p[4] for p in pairs], dtype=np.float64)
        except ErError as exc:
            notes.append(f"{pairs_file.name} could not be read: {exc}")
    clusters_file = _table_file(out, "clusters")
    members: dict[str, list[tuple[str, str]]] | None = None
    if run is None and clusters_file is not None:
        try:
            members = {}
            for source, rid, cid in read_clusters_csv(clusters_file):
                members.setdefault(cid, []).append((source, rid))
        except ErError as exc:
            members = None
            notes.append(f"{clusters_file.name} could not be read: {exc}")

    name = report.get("job") or out.name
    if run is None and members is not None:
        view = _view_from_files(members, pairs, TOP_CLUSTERS)
    wanted = _cluster_examples(view, max_examples) | review_records(report)
    fetched = (values_from_run(run, wanted, {**review_rows(report), **(view.rows if view is not None else {})})
               if run is not None
               else _example_records(report, out, config_path, wanted))
    size_body, examples_body = _clusters(report, view, max_examples, fetched)
    all_scores = report.get("scores")
    has_review = isinstance(report.get("review"), dict)
    weights = _guarded("Match weights per field", lambda: match_weights(report))
    falls = _guarded("Waterfalls", lambda: waterfalls(report, fetched[0], fetched[1])) if has_review else None
    sections = [
        ("summary", "Summary", _summary(report)),
        ("blocking", "Blocking", _blocking(report)),
        *([("threshold", "Threshold chosen from the data", _threshold(report))]
          if (report.get("threshold") or {}).get("auto") else []),
        (("scores", "Every candidate's score", _guarded("Every candidate's score",
                                                         lambda: _all_scores(all_scores, scores)) or "")
         if isinstance(all_scores, dict) else ("scores", "Verified pair scores", _scores(report, scores, pairs_file))),
        *([("review", "Pairs nearest the threshold",
            _guarded("Pairs nearest the threshold", lambda: review_pairs(report, *fetched)) or "")]
          if has_review else []),
        *([("weights", "Match weights per field", weights)] if weights is not None else []),
        *([("waterfalls", "Waterfalls", falls)] if falls is not None else []),
        *([("pruning", "Shingles pruned by frequency", _pruning(report))]
          if any(s.get("stage") == "prune" for s in report.get("stages") or []) else []),
        ("cluster-sizes", "Cluster sizes", size_body),
        *([("chains", "Clusters that look chained", _chains(report))] if report.get("chains") else []),
        ("largest-clusters", "Largest clusters", examples_body),
        ("stages", "Stages", _stages(report)),
        ("components", "Components", _components(report)),
    ]
    raw = json.dumps(report, indent=2, ensure_ascii=False, default=str)
    nav = "".join(f'<a href="#{sid}">{_e(title)}</a>' for sid, title, _ in sections)
    body = "".join(_section(sid, title, content) for sid, title, content in sections)
    warn = "".join(f'<p class="note warn">{_e(n)}</p>' for n in notes)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(f'er report: {name}')}</title><style>{_CSS}{REVIEW_CSS}</style></head><body><main>"
        f"<h1>Entity-resolution report: {_e(name)}</h1>"
        f'<section id="job">{_header(report, out if shown_dir is None else Path(shown_dir))}</section>'
        f"<nav>{nav}</nav>{warn}{body}"
        f'<section id="raw"><details><summary>report.json</summary><pre>{_e(raw)}</pre></details></section>'
        "</main></body></html>\n"
    )


def write_report(
    out_dir: str | Path, *, config_path: str | Path | None = None, max_examples: int = 5, run: RunData | None = None
) -> Path:
    """Write ``out_dir/report.html`` from the outputs of a run (swapped in under the folder's lock,
    :func:`er_framework.io.outputs.publish`); return its path.

    Reads ``report.json``, the pairs and the clusters table (CSV or Parquet)
    of ``out_dir``; example records of the largest clusters are read from
    the job's sources through the job file named in ``report.json`` (or
    ``config_path``). ``max_examples`` records are shown per cluster.
    Raises :class:`InputError` when ``report.json`` is missing or unreadable
    or the page cannot be written; problems with the other files are noted
    on the page instead.
    """
    out = Path(out_dir)
    recover(out)
    text = render_report(out, config_path=config_path, max_examples=max_examples, run=run)
    return publish(out, {"report.html": text})["report.html"]
