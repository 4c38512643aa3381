"""The threshold-selection chart of report.html: precision, recall and F1 of the pairs kept at every threshold,
the current threshold and the one of highest F1 marked, from report.json's ``threshold_curve`` (written by a
run trained on labels, or by ``er report OUT --truth FILE``: :mod:`er_framework.engine.threshold_curve`).
Inline SVG (:mod:`er_framework.report.charts`), every text escaped."""

from __future__ import annotations

import math
from typing import Any

from er_framework.report.charts import Chart, Scale, esc, nice_ticks
from er_framework.report.review import fmt_value, probability_ticks, secondary_axis

__all__ = ["curve_words", "threshold_curve_chart", "threshold_curve_section"]

_COLOURS = {"precision": "#1f77b4", "recall": "#ff7f0e", "f1": "#2ca02c"}


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def _pct(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{v:.4f}"


def _at(t: float | None, bits: bool) -> str:
    if t is None:
        return "—"
    if not bits:
        return f"{t:.6g}"
    p = 1.0 / (1.0 + 2.0 ** (-t)) if t > -1000 else 0.0
    return f"{t:+.2f} bits (probability {p:.6g})"


def threshold_curve_chart(curve: dict[str, Any]) -> str | None:
    """The chart (None when the curve's points are missing or malformed)."""
    pts: dict[str, Any] = curve["curve"] if isinstance(curve.get("curve"), dict) else {}
    xs = [_num(x) for x in pts.get("threshold") or []]
    if len(xs) < 2 or any(x is None for x in xs):
        return None
    xv = [float(x) for x in xs if x is not None]
    bits = curve.get("scale") == "bits"
    lo, hi = xv[0], xv[-1]
    t, best = _num(curve.get("threshold")), _num((curve.get("best") or {}).get("threshold"))
    for v in (t, best):
        if v is not None:
            lo, hi = min(lo, v), max(hi, v)
    chart = Chart(
        Scale(lo, hi if hi > lo else lo + 1.0), Scale(0.0, 1.0), height=330, top=56, label="precision, recall and F1 by threshold"
    )
    if bits:
        secondary_axis(chart, probability_ticks(lo, hi), "match probability 2^w / (1 + 2^w)")
    chart.y_axis([0.0, 0.25, 0.5, 0.75, 1.0], "share")
    chart.x_axis(nice_ticks(lo, hi, 8), "threshold (match weight, bits)" if bits else "threshold (score)", grid=False)
    for key, name in (("precision", "precision"), ("recall", "recall"), ("f1", "F1")):
        ys = [_num(y) for y in pts.get(key) or []]
        if len(ys) == len(xv):
            chart.line(xv, [math.nan if y is None else y for y in ys], _COLOURS[key], width=2.0 if key == "f1" else 1.5)
            chart.legend(name, _COLOURS[key])
    if t is not None:
        chart.vline(t, "#d62728", width=1.6, cls="threshold", tip=f"current threshold {_at(t, bits)}")
        chart.legend("current threshold", "#d62728", dash="5 3")
    if best is not None:
        chart.vline(best, "#2ca02c", width=1.6, dash=None, cls="best-threshold", tip=f"highest F1 at {_at(best, bits)}")
        chart.legend("threshold of highest F1", "#2ca02c")
    return chart.svg()


def curve_words(curve: dict[str, Any]) -> str:
    """The curve in words: the metrics at the current threshold and the threshold of highest F1."""
    bits = curve.get("scale") == "bits"
    now: dict[str, Any] = curve["at_threshold"] if isinstance(curve.get("at_threshold"), dict) else {}
    words = (
        f"At the current threshold {_at(_num(curve.get('threshold')), bits)}: precision {_pct(now.get('precision'))}, "
        f"recall {_pct(now.get('recall'))}, F1 {_pct(now.get('f1'))} ({fmt_value(now.get('kept'))} pairs kept)."
    )
    best = curve.get("best") if isinstance(curve.get("best"), dict) else None
    if best:
        words += (
            f" The highest F1, {_pct(best.get('f1'))}, is reached at the threshold {_at(_num(best.get('threshold')), bits)}: "
            f"precision {_pct(best.get('precision'))}, recall {_pct(best.get('recall'))}, {fmt_value(best.get('kept'))} pairs kept."
        )
    return words


def threshold_curve_section(curve: Any) -> str | None:
    """The body of "Choosing the threshold" (None without a curve in report.json)."""
    if not isinstance(curve, dict):
        return None
    parts = [f'<p class="best">{esc(curve_words(curve))}</p>']
    svg = threshold_curve_chart(curve)
    parts.append(svg if svg is not None else '<p class="note">report.json holds no usable points of the curve.</p>')
    over = curve.get("over")
    note = (
        f"Each threshold keeps the candidate pairs whose {'match weight' if curve.get('scale') == 'bits' else 'score'} is at "
        "least it (before clustering). Precision: the share of kept pairs that are true; recall: the share of the "
        f"{fmt_value(curve.get('true_pairs'))} true pairs kept ({fmt_value(curve.get('true_among_pairs'))} of them among "
        "the candidates: a true pair no blocker produced is lost at every threshold)."
    )
    if over:
        note += f" Over: {over}."
    parts.append(f'<p class="note">{esc(note)}</p>')
    return "".join(parts)
