"""The threshold review on report.html: every candidate's score, the pairs nearest the threshold,
and for Fellegi–Sunter the match weights per field and a waterfall per borderline pair.

Drawn from report.json's ``scores`` and ``review`` sections (and ``verifier.per_field``) with the
records' values as read, as inline SVG (:mod:`er_framework.report.charts`) and HTML/CSS: no plotting
library, no script, nothing loaded from elsewhere. Every text taken from the data or the report is escaped,
inside SVG too (ids and field values can hold markup).

``report["scores"]``: ``threshold``, ``candidates``, ``above``, ``below``, ``nan``,
``histogram: {edges, counts}`` (every candidate's score) and ``score`` (what the score is).
``report["review"]``: ``threshold``, ``above`` and ``below``: up to 10 entries each, nearest the
threshold first, ``{left: {source, id, row}, right: {source, id, row}, score, terms}`` (``row``: the
record's position in the run's input); ``terms`` is the
pair's row of :meth:`er_framework.components.Verifier.comparisons` (or null).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from er_framework.report.charts import CHART_CSS, Chart, Scale, esc, nice_ticks, tick_label

__all__ = [
    "REVIEW_CSS",
    "Values",
    "candidate_scores",
    "diff_markup",
    "esc",
    "fmt_value",
    "histogram_svg",
    "match_weights",
    "nice_ticks",
    "review_pairs",
    "review_records",
    "review_rows",
    "probability_ticks",
    "secondary_axis",
    "weight_histogram",
    "waterfall_svg",
    "waterfalls",
]

#: A record's key ``(source, id)`` -> its values by field (as read; None = missing).
Values = dict[tuple[str, str], dict[str, str | None]]

#: Waterfalls drawn openly per side of the threshold (the others of the review are in a fold).
WATERFALLS_SHOWN = 3
#: Characters of a value shown (each side) before the rest is cut, in a review pair's table.
VALUE_CHARS = 2_000
#: Texts up to this many characters are compared character by character; longer ones word by word.
CHAR_DIFF_MAX = 40
#: Shared words kept on each side of a differing passage; longer shared runs are elided with a count.
CONTEXT_WORDS = 8
#: Words of a text compared at most (difflib is quadratic in the worst case).
MAX_DIFF_WORDS = 20_000

#: the style of the review sections and of the charts (:data:`er_framework.report.charts.CHART_CSS`)
REVIEW_CSS = (
    CHART_CSS
    + """
.rv{border:1px solid #e2e4e8;border-radius:6px;padding:6px 10px;margin:8px 0;background:#fcfcfd}
.rv h4{margin:2px 0 4px;font-size:13.5px;font-weight:600}
.rv table{width:100%;table-layout:fixed}.rv td{overflow-wrap:anywhere}
.rv col.f{width:13%}.rv col.t{width:9%}.rv col.w{width:8%}
mark.l{background:#fcd9d2;padding:0 1px}
.cmp{color:#555;font-size:12px}.never{color:#888;font-style:italic}mark.r{background:#cfe8cf;padding:0 1px}
.elide{color:#777;font-style:italic;font-size:12px}.miss{color:#999;font-style:italic}
.same{color:#555}.pos{color:#1a7f1a}.neg{color:#b3261e}
tr.tot td{border-top:2px solid #ccd;font-weight:600}
.wtrack{position:relative;display:inline-block;width:110px;height:10px;background:#f1f2f4;vertical-align:middle}
.wtrack span{position:absolute;top:0;height:10px}.wtrack i{position:absolute;left:50%;top:-2px;height:14px;
border-left:1px solid #666}
.wp{background:#4c9a4c}.wn{background:#d0584e}
.mbar{display:inline-block;height:9px;background:#6a9fd4;vertical-align:middle;margin-right:4px}
.ubar{display:inline-block;height:9px;background:#b8a3d6;vertical-align:middle;margin-right:4px}
.wgrid td{white-space:nowrap}.wgrid{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:0 24px}
"""
)


# --------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------


def fmt_value(value: Any, limit: int = 300) -> str:
    """A report value as short plain text (not escaped): counts with thousands separators,
    floats to 6 significant digits, lists and dicts as JSON, cut at ``limit`` characters."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}" if abs(value) >= 1000 else f"{value:g}"
        return f"{value:.6g}"
    if isinstance(value, (list, tuple, dict)):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _num(value: Any) -> float | None:
    """``value`` as a finite float, else None (JSON may hold null, strings, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def _score_text(value: Any) -> str:
    x = _num(value)
    if x is None:
        return "—" if value is None else str(value)
    return f"{x:.4f}" if abs(x) < 10 else f"{x:,.2f}"


def _bits(value: Any) -> str:
    x = _num(value)
    return "—" if x is None else f"{x:+.2f}"


def _logit2(p: float) -> float | None:
    return math.log2(p / (1 - p)) if 0 < p < 1 else None


def _sigmoid2(w: float) -> float:
    return 1.0 / (1.0 + 2.0 ** (-w)) if w > -1000 else 0.0


# --------------------------------------------------------------------------
# 1. every candidate's score
# --------------------------------------------------------------------------


def candidate_scores(section: dict[str, Any]) -> str:
    """The body of "Every candidate's score": the histogram of every candidate pair's score (inline SVG,
    the bins at or above the threshold darker, the threshold marked) and the counts in words."""
    t = _num(section.get("threshold"))
    hist = section.get("histogram") or {}
    edges = [_num(x) for x in _list(hist.get("edges"))]
    counts = [_num(x) for x in _list(hist.get("counts"))]
    parts = []
    total = section.get("candidates")
    above, below, nan = section.get("above"), section.get("below"), section.get("nan")
    words = f"{fmt_value(total)} candidate pairs scored: {fmt_value(above)} at or above the threshold {fmt_value(t)}"
    n_total, n_above = _num(total), _num(above)
    if n_total and n_above is not None:
        words += f" ({100.0 * n_above / n_total:.1f}%)"
    words += f", {fmt_value(below)} below it"
    if nan:
        words += f", {fmt_value(nan)} without a score (NaN)"
    words += "."
    parts.append(f"<p>{esc(words)}</p>")
    ok = (
        len(edges) >= 2
        and len(counts) == len(edges) - 1
        and all(e is not None for e in edges)
        and all(c is not None and c >= 0 for c in counts)
    )
    bits = weight_histogram(section.get("weights"))
    if bits is not None:
        parts.append(bits)
    elif ok:
        parts.append(histogram_svg([float(e) for e in edges], [float(c) for c in counts], t))  # type: ignore[arg-type]
    else:
        parts.append('<p class="note">report.json holds no usable histogram of the scores.</p>')
    note = (
        "Every candidate pair the blocking produced, scored by the verifier, below the threshold as well as "
        "above it: the pairs in the light bars were dropped, those in the dark bars kept. Bins that hold the "
        "threshold are drawn in a middle shade. Hover a bar for its count."
    )
    if section.get("score"):
        note += f" The score: {section['score']}."
    parts.append(f'<p class="note">{esc(note)}</p>')
    return "".join(parts)


#: probabilities named above a match-weight axis, the most telling first (a tick too near one placed is left out)
PROBABILITY_TICKS = (0.5, 0.001, 0.999, 1e-6, 1 - 1e-6, 0.1, 0.9, 0.01, 0.99, 1e-9, 1 - 1e-9, 1e-12, 1 - 1e-12)
#: pixels kept between two probability ticks
_TICK_GAP = 64.0


def _prob_label(p: float) -> str:
    if p >= 0.9999:
        return f"1 − {1 - p:.0e}".replace("e-0", "e-")
    return f"{p:g}"


def probability_ticks(lo: float, hi: float, width: float = 682.0) -> list[tuple[float, str]]:
    """Ticks of the probability ``2^w / (1 + 2^w)`` on a match-weight axis from ``lo`` to ``hi`` bits drawn
    ``width`` pixels wide: :data:`PROBABILITY_TICKS` in order, each kept when it is in range and at least
    :data:`_TICK_GAP` pixels from those kept before it."""
    if hi <= lo:
        return []
    placed: list[tuple[float, str]] = []
    for p in PROBABILITY_TICKS:
        w = _logit2(p)
        if w is None or not lo <= w <= hi:
            continue
        if all(abs(w - x) * width / (hi - lo) >= _TICK_GAP for x, _ in placed):
            placed.append((w, _prob_label(p)))
    return sorted(placed)


def weight_histogram(section: Any) -> str | None:
    """report.json's ``scores.weights`` (a verifier scoring match probabilities) drawn: every candidate's match
    weight in bits, the threshold in bits marked, the probability named above the axis, and how the weights were
    read; None when the section is absent or malformed."""
    if not isinstance(section, dict):
        return None
    hist = section.get("histogram") or {}
    edges = [_num(x) for x in _list(hist.get("edges"))]
    counts = [_num(x) for x in _list(hist.get("counts"))]
    if len(edges) < 2 or len(counts) != len(edges) - 1 or any(e is None for e in edges) or any(c is None or c < 0 for c in counts):
        return None
    tw = _num(section.get("threshold"))
    e = [float(x) for x in edges if x is not None]
    c = [float(x) for x in counts if x is not None]
    lo, hi = min(e[0], tw if tw is not None else e[0]), max(e[-1], tw if tw is not None else e[-1])
    svg = histogram_svg(
        e,
        c,
        tw,
        x_label="match weight of the candidate pair (bits: log2 of the Bayes factor, prior included)",
        label="histogram of every candidate's match weight",
        secondary=probability_ticks(lo, hi),
        secondary_label="match probability 2^w / (1 + 2^w)",
        t_label=None if tw is None else f"threshold {tw:+.2f} bits (p = {_sigmoid2(tw):.4g})",
    )
    words = (
        f"{fmt_value(section.get('above'))} candidate pairs weigh at least the threshold's {_bits(tw)} bits, "
        f"{fmt_value(section.get('below'))} less. The weights: {section.get('how', '')}."
    )
    if section.get("from_terms"):
        words += f" {fmt_value(section.get('from_terms'))} weights were read from the verifier's terms."
    return svg + f'<p class="note">{esc(words)}</p>'


def histogram_svg(
    edges: Sequence[float],
    counts: Sequence[float],
    t: float | None,
    *,
    x_label: str = "score of the candidate pair",
    label: str = "histogram of every candidate score",
    unit: str = "pairs",
    secondary: Sequence[tuple[float, str]] = (),
    secondary_label: str = "",
    t_label: str | None = None,
) -> str:
    """A histogram drawn from its bins (``edges``, one more than ``counts``) as inline SVG: one bar per bin,
    the bins at or above the threshold ``t`` darker (those holding it in a middle shade, all one colour
    without a threshold), the threshold dashed; counts on a log scale when they span more than 50×.
    Hovering a bar shows its bin and count. ``secondary``: ``(x, label)`` ticks drawn above the plot (another
    unit of the same axis, e.g. the probability of a match weight), named ``secondary_label``."""
    lo, hi = float(edges[0]), float(edges[-1])
    if t is not None and math.isfinite(t):
        lo, hi = min(lo, t), max(hi, t)
    if hi <= lo:
        hi = lo + 1.0
    positive = [c for c in counts if c > 0]
    cmax = max(counts) if len(counts) else 0.0
    log = bool(positive) and cmax / min(positive) > 50
    top = 52 if secondary else 22
    ys = Scale(0.0, cmax if cmax > 0 else 1.0, "symlog" if log else "linear")
    chart = Chart(Scale(lo, hi), ys, height=270 + top - 22, top=top, label=label)
    secondary_axis(chart, secondary, secondary_label)
    if log and cmax > 0:
        yt = [0.0] + [10.0**k for k in range(0, int(math.floor(math.log10(cmax))) + 1)]
    else:
        yt = [y for y in nice_ticks(0.0, cmax or 1.0, 4) if y == int(y)]
    chart.y_axis(yt, f"{unit} (log scale)" if log else unit)
    colours = []
    for a, b in zip(edges, edges[1:]):
        if t is None or b <= t:
            colours.append("#b9d3ea" if t is not None else "#6a9fd4")
        elif a >= t:
            colours.append("#2f6fad")
        else:
            colours.append("#7aa6d1")
    tips = [f"{a:.4g} – {b:.4g}: {int(c):,} {unit}" for a, b, c in zip(edges, edges[1:], counts)]
    chart.bars(edges[:-1], edges[1:], [c if cmax > 0 else 0.0 for c in counts], colours, tips, base=0.0)
    chart.x_axis(nice_ticks(lo, hi, 8), x_label, grid=False)
    if t is not None:
        chart.vline(t, "#d62728", width=1.6, cls="threshold")
        xt = chart.px(t)
        anchor = "end" if xt > chart.left + chart.pw * 0.8 else "start"
        dx = -4 if anchor == "end" else 4
        chart.raw(
            f'<text x="{xt + dx:.1f}" y="{chart.top + 12}" text-anchor="{anchor}" fill="#d62728" '
            f'style="fill:#d62728">{esc(t_label or f"threshold {fmt_value(t)}")}</text>'
        )
    return chart.svg()


def secondary_axis(chart: Chart, ticks: Sequence[tuple[float, str]], label: str) -> None:
    """Tick labels of a second unit above the plot area (``class="axis2"``), with their name."""
    if not ticks:
        return
    y0 = chart.top
    for x, name in ticks:
        if not chart.xs.low <= x <= chart.xs.high:
            continue
        xx = chart.px(x)
        chart.raw(
            f'<g class="axis2"><line x1="{xx:.1f}" x2="{xx:.1f}" y1="{y0 - 4}" y2="{y0}" stroke="#555"/>'
            f'<text x="{xx:.1f}" y="{y0 - 7}" text-anchor="middle">{esc(name)}</text></g>'
        )
    chart.raw(f'<line x1="{chart.left}" x2="{chart.left + chart.pw}" y1="{y0}" y2="{y0}" stroke="#bbb"/>')
    chart.raw(f'<text x="{chart.left + chart.pw / 2:.1f}" y="{y0 - 24}" text-anchor="middle">{esc(label)}</text>')


# --------------------------------------------------------------------------
# differing passages
# --------------------------------------------------------------------------


_WORD = re.compile(r"\S+")


def _elide(words: Sequence[str], first: bool, last: bool, context: int) -> str:
    """A run of shared words, shortened to ``context`` words at each end that touches a difference."""
    keep_head = 0 if first else context
    keep_tail = 0 if last else context
    if len(words) <= keep_head + keep_tail + 3:
        return esc(" ".join(words))
    head, tail = words[:keep_head], words[len(words) - keep_tail :] if keep_tail else []
    hidden = len(words) - len(head) - len(tail)
    mid = f'<span class="elide">[… {hidden:,} shared words …]</span>'
    return " ".join(x for x in (esc(" ".join(head)), mid, esc(" ".join(tail))) if x)


def diff_markup(a: str | None, b: str | None, *, limit: int = VALUE_CHARS) -> tuple[str, str]:
    """Two values as HTML, side by side: what is only on one side is marked (``<mark class="l">`` on the
    left, ``<mark class="r">`` on the right), compared ignoring case and spacing; short values character by
    character, longer ones word by word with long shared runs elided (a count of the words left out). Each
    side is cut after about ``limit`` characters of shown text, saying how many differing passages were not
    shown. A missing side is ``(missing)``; equal values are shown once per side, plain."""
    if a is None or b is None:
        miss = '<span class="miss">(missing)</span>'
        return (miss if a is None else _plain(a, limit)), (miss if b is None else _plain(b, limit))
    if " ".join(a.split()).casefold() == " ".join(b.split()).casefold():
        same = _plain(a, limit)
        return f'<span class="same">{same}</span>', f'<span class="same">{_plain(b, limit)}</span>'
    if max(len(a), len(b)) <= CHAR_DIFF_MAX:
        return _char_diff(a, b)
    return _word_diff(a, b, limit)


def _plain(value: str, limit: int) -> str:
    text = " ".join(value.split())
    if not text:
        return '<span class="miss">(empty)</span>'
    if len(text) > limit:
        return f'{esc(text[:limit])}<span class="elide">… ({len(text):,} characters)</span>'
    return esc(text)


#: Short values sharing less than this share of their characters are marked whole (no scattered letters).
CHAR_DIFF_MIN_RATIO = 0.5


def _char_diff(a: str, b: str) -> tuple[str, str]:
    sm = difflib.SequenceMatcher(None, a.casefold(), b.casefold(), autojunk=False)
    if sm.ratio() < CHAR_DIFF_MIN_RATIO:
        return f'<mark class="l">{esc(a)}</mark>', f'<mark class="r">{esc(b)}</mark>'
    left, right = [], []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            left.append(esc(a[i1:i2]))
            right.append(esc(b[j1:j2]))
            continue
        if i2 > i1:
            left.append(f'<mark class="l">{esc(a[i1:i2])}</mark>')
        if j2 > j1:
            right.append(f'<mark class="r">{esc(b[j1:j2])}</mark>')
    return "".join(left), "".join(right)


def _word_diff(a: str, b: str, limit: int) -> tuple[str, str]:
    wa, wb = _WORD.findall(a), _WORD.findall(b)
    cut_a, cut_b = max(0, len(wa) - MAX_DIFF_WORDS), max(0, len(wb) - MAX_DIFF_WORDS)
    wa, wb = wa[:MAX_DIFF_WORDS], wb[:MAX_DIFF_WORDS]
    sm = difflib.SequenceMatcher(None, [w.casefold() for w in wa], [w.casefold() for w in wb])
    ops = sm.get_opcodes()
    left: list[str] = []
    right: list[str] = []
    shown_l = shown_r = 0
    untold = 0
    for k, (op, i1, i2, j1, j2) in enumerate(ops):
        if shown_l > limit or shown_r > limit:
            untold += op != "equal"
            continue
        if op == "equal":
            first, last = k == 0, k == len(ops) - 1
            ml = _elide(wa[i1:i2], first, last, CONTEXT_WORDS)
            mr = _elide(wb[j1:j2], first, last, CONTEXT_WORDS)
            left.append(ml)
            right.append(mr)
            shown_l += min(len(ml), 20 * CONTEXT_WORDS)
            shown_r += min(len(mr), 20 * CONTEXT_WORDS)
            continue
        if i2 > i1:
            text = " ".join(wa[i1:i2])
            left.append(f'<mark class="l">{_cut(text, limit)}</mark>')
            shown_l += min(len(text), limit)
        if j2 > j1:
            text = " ".join(wb[j1:j2])
            right.append(f'<mark class="r">{_cut(text, limit)}</mark>')
            shown_r += min(len(text), limit)
    tail = ""
    if untold:
        tail = f' <span class="elide">[… {untold:,} more differing passages not shown]</span>'
    for side, cut in ((left, cut_a), (right, cut_b)):
        if cut:
            side.append(f'<span class="elide">[… {cut:,} more words not compared]</span>')
    return " ".join(x for x in left if x) + tail, " ".join(x for x in right if x) + tail


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return esc(text)
    return f'{esc(text[:limit])}<span class="elide">… ({len(text) - limit:,} more characters)</span>'


# --------------------------------------------------------------------------
# 2. the pairs nearest the threshold
# --------------------------------------------------------------------------


def _entries(review: dict[str, Any], side: str) -> list[dict[str, Any]]:
    out = []
    for e in review.get(side) or []:
        if isinstance(e, dict) and isinstance(e.get("left"), dict) and isinstance(e.get("right"), dict):
            out.append(e)
    return out


def _key(side: dict[str, Any]) -> tuple[str, str]:
    return str(side.get("source", "")), str(side.get("id", ""))


def review_records(report: dict[str, Any]) -> set[tuple[str, str]]:
    """The ``(source, id)`` of every record of report.json's review pairs (whose values the page shows)."""
    review = report.get("review") or {}
    if not isinstance(review, dict):
        return set()
    return {_key(e[s]) for side in ("above", "below") for e in _entries(review, side) for s in ("left", "right")}


def review_rows(report: dict[str, Any]) -> dict[tuple[str, str], int]:
    """Where the review pairs' records were in the run's input (``row`` of each side: the record's position,
    sources in order, records in file order), by ``(source, id)``: hints to find their values without
    searching every id (whoever uses one checks the record there has that source and id)."""
    review = report.get("review") or {}
    if not isinstance(review, dict):
        return {}
    out: dict[tuple[str, str], int] = {}
    for side in ("above", "below"):
        for e in _entries(review, side):
            for s in ("left", "right"):
                row = e[s].get("row")
                if isinstance(row, int) and not isinstance(row, bool) and row >= 0:
                    out[_key(e[s])] = row
    return out


def _labels(terms: dict[str, Any]) -> list[str]:
    """The field labels of a pair's terms, in display order."""
    seen: list[str] = []
    for k in terms:
        for prefix in ("level_", "weight_", "similarity_", "points_"):
            if k.startswith(prefix) and k[len(prefix) :] not in seen:
                seen.append(k[len(prefix) :])
    return seen


def _per_field(report: dict[str, Any]) -> dict[str, Any]:
    pf = (report.get("verifier") or {}).get("per_field")
    return pf if isinstance(pf, dict) else {}


def _columns_of(label: str, per_field: dict[str, Any], fields: Sequence[str]) -> list[str]:
    cols = (per_field.get(label) or {}).get("columns") if isinstance(per_field.get(label), dict) else None
    if isinstance(cols, list) and cols:
        return [str(c) for c in cols]
    return [label] if label in fields else []


def _level_name(report_pf: dict[str, Any], label: str, level: Any) -> str:
    lv = _num(level)
    if lv is None:
        return "—"
    if lv < 0:
        return "missing"
    names = (report_pf.get(label) or {}).get("levels") if isinstance(report_pf.get(label), dict) else None
    if isinstance(names, list) and 0 <= int(lv) < len(names):
        return str(names[int(lv)])
    return f"level {int(lv)}"


def _cells(
    cols: Sequence[str],
    lv: dict[str, str | None] | None,
    rv: dict[str, str | None] | None,
    compared: tuple[dict[str, Any], dict[str, Any]] = ({}, {}),
) -> tuple[str, str]:
    """Left and right cells of one or more columns, with the differences marked; a value the verifier compared
    differently (after the job's ``normalize:``, ``compared``: each side's values by field) is shown under it,
    ``→ compared``, with the differences of the compared values marked."""
    left, right = [], []
    for c in cols:
        a = lv.get(c) if lv is not None else None
        b = rv.get(c) if rv is not None else None
        ma, mb = diff_markup(a, b)
        ca, cb = compared[0].get(c, a), compared[1].get(c, b)
        if (c in compared[0] or c in compared[1]) and not (_same_text(ca, a) and _same_text(cb, b)):
            xa, xb = diff_markup(ca, cb)
            ma += f'<br><span class="cmp">→ compared: {xa}</span>'
            mb += f'<br><span class="cmp">→ compared: {xb}</span>'
        if len(cols) > 1:
            ma, mb = f'<span class="note">{esc(c)}:</span> {ma}', f'<span class="note">{esc(c)}:</span> {mb}'
        left.append(ma)
        right.append(mb)
    return "<br>".join(left), "<br>".join(right)


def _same_text(a: str | None, b: str | None) -> bool:
    """Equal ignoring case and spacing (how the cards compare values), both missing included."""
    if a is None or b is None:
        return a is b
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _compared(e: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The values each side's verifier compared (report.json's ``compared``; empty when not recorded)."""
    out = []
    for s in ("left", "right"):
        c = e[s].get("compared")
        out.append({str(k): (None if v is None else str(v)) for k, v in c.items()} if isinstance(c, dict) else {})
    return out[0], out[1]


def _card_title(e: dict[str, Any], rank: int, threshold: float | None, weight_threshold: float | None) -> str:
    """A review pair's heading: its match weight in bits and the probability (a weight-scored verifier), else its score."""
    w = _num(e.get("weight"))
    if w is not None:
        delta = f" ({w - weight_threshold:+.2f} bits from the threshold)" if weight_threshold is not None else ""
        return f"{rank}. match weight {_bits(w)} bits{delta} · probability {_score_text(e.get('score'))}"
    score = _num(e.get("score"))
    delta = f" ({score - threshold:+.4f} from the threshold)" if score is not None and threshold is not None else ""
    return f"{rank}. score {_score_text(e.get('score'))}{delta}"


def _rec_head(side: dict[str, Any]) -> str:
    return f"{esc(side.get('source', ''))}: <code>{esc(side.get('id', ''))}</code>"


def _pair_card(report: dict[str, Any], e: dict[str, Any], rank: int, threshold: float | None, values: Values, fields: Sequence[str]) -> str:
    lk, rk = _key(e["left"]), _key(e["right"])
    lv, rv = values.get(lk), values.get(rk)
    cmp = _compared(e)
    raw_terms = e.get("terms")
    terms: dict[str, Any] = raw_terms if isinstance(raw_terms, dict) else {}
    pf = _per_field(report)
    head = f"<h4>{esc(_card_title(e, rank, threshold, _num((report.get('review') or {}).get('weight_threshold'))))}</h4>"
    rows: list[str] = []
    kind = "none"
    labels = _labels(terms)
    if terms:
        if any(f"level_{x}" in terms or f"weight_{x}" in terms for x in labels):
            kind = "fs"
        elif any(f"points_{x}" in terms or f"similarity_{x}" in terms for x in labels):
            kind = "points"
        elif "shared" in terms:
            kind = "set"
    used: set[str] = set()
    extra = ""
    if kind == "fs":
        hcols = '<col class="f"><col><col><col class="t"><col class="w">'
        thead = (
            f"<tr><th>field</th><th>{_rec_head(e['left'])}</th><th>{_rec_head(e['right'])}</th>"
            '<th>level</th><th class="num">weight (bits)</th></tr>'
        )
        lam = _num((report.get("verifier") or {}).get("lambda"))
        prior_label = f"prior (λ = {lam:.4g})" if lam is not None else "prior"
        rows.append(
            f'<tr><td>{esc(prior_label)}</td><td></td><td></td><td></td><td class="num">{esc(_bits(terms.get("prior_weight")))}</td></tr>'
        )
        for label in labels:
            cols = _columns_of(label, pf, fields)
            used.update(cols)
            lc, rc = _cells(cols, lv, rv, cmp) if cols else ('<span class="miss">—</span>',) * 2
            w = _num(terms.get(f"weight_{label}"))
            cls = "pos" if w is not None and w > 0 else "neg" if w is not None and w < 0 else ""
            rows.append(
                f"<tr><td>{esc(label)}</td><td>{lc}</td><td>{rc}</td>"
                f"<td>{esc(_level_name(pf, label, terms.get(f'level_{label}')))}</td>"
                f'<td class="num {cls}">{esc(_bits(w))}</td></tr>'
            )
        mw = _num(terms.get("match_weight"))
        prob = f" → probability {_sigmoid2(mw):.4f}" if mw is not None else ""
        rows.append(f'<tr class="tot"><td>total</td><td colspan="3">match weight{esc(prob)}</td><td class="num">{esc(_bits(mw))}</td></tr>')
    elif kind == "points":
        hcols = '<col class="f"><col><col><col class="t"><col class="w">'
        thead = (
            f"<tr><th>field</th><th>{_rec_head(e['left'])}</th><th>{_rec_head(e['right'])}</th>"
            '<th class="num">similarity</th><th class="num">points</th></tr>'
        )
        for label in labels:
            cols = _columns_of(label, pf, fields)
            used.update(cols)
            lc, rc = _cells(cols, lv, rv, cmp) if cols else ('<span class="miss">—</span>',) * 2
            sim = _num(terms.get(f"similarity_{label}"))
            rows.append(
                f"<tr><td>{esc(label)}</td><td>{lc}</td><td>{rc}</td>"
                f'<td class="num">{esc("missing" if sim is None else f"{sim:.1f}")}</td>'
                f'<td class="num">{esc(_score_text(terms.get(f"points_{label}")))}</td></tr>'
            )
        rows.append(
            f'<tr class="tot"><td>total</td><td colspan="3">score</td>'
            f'<td class="num">{esc(_score_text(terms.get("score", e.get("score"))))}</td></tr>'
        )
    else:
        hcols = '<col class="f"><col><col>'
        thead = f"<tr><th>field</th><th>{_rec_head(e['left'])}</th><th>{_rec_head(e['right'])}</th></tr>"
        if kind == "set":
            extra = _set_line(terms)
    for f in fields:
        if f in used:
            continue
        lc, rc = _cells([f], lv, rv, cmp)
        pad = "<td></td><td></td>" if kind in ("fs", "points") else ""
        rows.append(f"<tr><td>{esc(f)}</td><td>{lc}</td><td>{rc}</td>{pad}</tr>")
    missing = [k for k, v in ((lk, lv), (rk, rv)) if v is None]
    if missing and fields:
        extra += '<p class="note warn">not found among the records read: ' + esc(", ".join(f"{s}: {i}" for s, i in missing)) + "</p>"
    table = f"<table><colgroup>{hcols}</colgroup><thead>{thead}</thead><tbody>{''.join(rows)}</tbody></table>"
    return f'<div class="rv">{head}{extra}{table}</div>'


def _set_line(terms: dict[str, Any]) -> str:
    s, lo, ro = _num(terms.get("shared")), _num(terms.get("left_only")), _num(terms.get("right_only"))
    if s is None or lo is None or ro is None:
        return ""
    union = s + lo + ro
    frac = f" → {int(s):,} / {int(union):,} = {s / union:.4f}" if union > 0 else ""
    return f"<p>{esc(f'tokens (shingles) shared {int(s):,} · only on the left {int(lo):,} · only on the right {int(ro):,}')}{esc(frac)}</p>"


def review_pairs(report: dict[str, Any], values: Values, fields: Sequence[str], problem: str | None = None) -> str:
    """The body of "Pairs nearest the threshold": report.json's review pairs just above and just below the
    threshold, each with both records' fields side by side (differences marked) and the verifier's terms
    (level and weight per field, points per field, or shared and own tokens)."""
    review = report.get("review") or {}
    t = _num(review.get("threshold"))
    parts = []
    if problem:
        parts.append(f'<p class="note warn">{esc(problem)}</p>')
    parts.append(
        '<p class="note">'
        + esc(
            "The candidate pairs scored nearest the threshold, on both sides: where a reviewer decides whether the "
            "threshold is right. Marked: text only on one side (left red, right green), compared ignoring case and "
            "spacing; short values character by character, longer ones word by word, long shared passages elided "
            "with their length in words."
        )
        + "</p>"
    )
    for side, title in (("above", "Just above the threshold (kept)"), ("below", "Just below the threshold (dropped)")):
        entries = _entries(review, side)
        parts.append(f"<h3>{esc(title)}: {len(entries)} pair{'' if len(entries) == 1 else 's'}</h3>")
        if not entries:
            parts.append(f'<p class="note">{esc("No candidate pair scored " + side + " the threshold.")}</p>')
        for k, e in enumerate(entries):
            parts.append(_pair_card(report, e, k + 1, t, values, fields))
    return "".join(parts)


# --------------------------------------------------------------------------
# 3. Fellegi–Sunter: match weights per field, waterfalls
# --------------------------------------------------------------------------


def _is_fs(report: dict[str, Any]) -> bool:
    pf = _per_field(report)
    return bool(pf) and all(isinstance(v, dict) and "weight_log2" in v for v in pf.values())


def _list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, list) else []


def _prob(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{v:.3g}"


def _wbar(w: float | None, scale: float) -> str:
    """A weight as a bar from the middle of a track: right and green when positive, left and red when negative."""
    if w is None or scale <= 0:
        return '<span class="wtrack"><i></i></span>'
    frac = min(1.0, abs(w) / scale) * 50
    cls, left = ("wp", 50.0) if w >= 0 else ("wn", 50.0 - frac)
    return f'<span class="wtrack"><span class="{cls}" style="left:{left:.1f}%;width:{frac:.1f}%"></span><i></i></span>'


def match_weights(report: dict[str, Any]) -> str | None:
    """The body of "Match weights per field" for a Fellegi–Sunter verifier (None for other verifiers):
    per field, m and u of every level and its weight log2(m/u) in bits as bars on one scale, weights that
    grow away from the closest level flagged."""
    if not _is_fs(report):
        return None
    v = report.get("verifier") or {}
    pf = _per_field(report)
    scale = max((abs(w) for f in pf.values() for w in (_num(x) for x in _list(f.get("weight_log2"))) if w is not None), default=1.0)
    lam = _num(v.get("lambda"))
    intro = []
    origin = (report.get("model") or {}).get("origin")
    if origin:
        intro.append(
            "These weights were fitted by this run (saved in model.json)."
            if origin == "fitted by this run"
            else f"These weights come from the saved model {origin}, applied without fitting."
        )
    if lam is not None:
        pw = _logit2(lam)
        over = (v.get("sessions") or {}).get("lambda_over") == "population"
        what = "the chance that two records match (over every record pair)" if over else "the share of candidate pairs that match"
        intro.append(f"λ, {what}, is {lam:.4g}: prior weight log2(λ / (1 − λ)) = {_bits(pw)} bits.")
    if v.get("u_mode"):
        intro.append(f"u: {v['u_mode']}.")
    intro.append(
        "A pair's match weight is the prior plus one weight per field, the weight of the level the pair's "
        "values reach (log2 m/u: m = P(level | match), u = P(level | non-match)); its score is "
        "2^w / (1 + 2^w). A missing value weighs 0. Hover a u for its value on random pairs."
    )
    cards = []
    flagged: list[str] = []
    unseen: list[str] = []
    for label, f in pf.items():
        levels, w = _list(f.get("levels")), _list(f.get("weight_log2"))
        n = max(len(levels), len(w))
        ws = [_num(w[i]) if i < len(w) else None for i in range(n)]
        nums = [x for x in ws if x is not None]
        if any(b > a + 1e-9 for a, b in zip(nums, nums[1:])):
            flagged.append(str(label))
        seen = [_num(x) for x in _list(f.get("candidate_pairs"))]
        never = [i for i in range(n) if i < len(seen) and seen[i] == 0]
        if never:
            unseen.append(f"{label}: {', '.join(str(levels[i]) if i < len(levels) else f'level {i}' for i in never)}")
        rows = [_weight_row(f, i, ws[i], scale, seen[i] if i < len(seen) else None) for i in range(n)]
        cols = f.get("columns")
        sub = ", ".join(str(c) for c in cols) if isinstance(cols, list) else ""
        what = " · ".join(x for x in (str(f.get("comparison") or ""), f"columns {sub}" if sub and sub != label else "") if x)
        miss = f.get("missing_pairs")
        head = '<tr><th>level</th><th class="num">pairs</th><th>m</th><th>u</th><th>weight</th><th class="num">bits</th></tr>'

        cards.append(
            f"<div><h3>{esc(label)}</h3>"
            + (f'<p class="note">{esc(what)}</p>' if what else "")
            + f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
            + (f'<p class="note">{esc(f"{fmt_value(miss)} candidate pairs with the value missing (weight 0)")}</p>' if miss else "")
            + "</div>"
        )
    out = f'<p class="note">{esc(" ".join(intro))}</p>'
    if flagged:
        out += (
            '<p class="note warn">'
            + esc(
                f"Not monotone: in {', '.join(flagged)}, a farther level weighs more than a closer one "
                "(EM re-estimated m and u freely); monotone: true, u fixed from random pairs (fix_u) or "
                "training from labelled pairs gives weights that fall with the similarity."
            )
            + "</p>"
        )
    if unseen:
        out += (
            '<p class="note warn">'
            + esc(
                "Never seen among the candidates (no candidate pair reached the level, so its weight was not learned "
                f"from any; it comes from the smoothing and the monotone constraint): {'; '.join(unseen)}."
            )
            + "</p>"
        )
    out += f'<p class="note">{esc(f"Bars on one scale: ±{scale:.2f} bits at the ends.")}</p><div class="wgrid">{"".join(cards)}</div>'
    return out


def _weight_row(f: dict[str, Any], i: int, w: float | None, scale: float, seen: float | None) -> str:
    """One level's row of the match-weights table: its name, the candidate pairs at it, m, u and the weight;
    a level no candidate reached (``seen`` 0) shows "never seen" instead of a weight."""
    levels, m, u, ur = _list(f.get("levels")), _list(f.get("m")), _list(f.get("u")), _list(f.get("u_random_pairs"))
    mi = _num(m[i]) if i < len(m) else None
    ui = _num(u[i]) if i < len(u) else None
    rand = f' title="{esc("u on random pairs: " + _prob(ur[i]))}"' if i < len(ur) else ""
    if seen == 0:
        weight = (
            f'<td><span class="never">never seen</span></td><td class="num never" title="{esc(f"weight {_bits(w)} bits, not learned")}">'
            "—</td>"
        )
    else:
        weight = f'<td>{_wbar(w, scale)}</td><td class="num {"pos" if (w or 0) > 0 else "neg"}">{esc(_bits(w))}</td>'
    return (
        f"<tr><td>{esc(levels[i] if i < len(levels) else f'level {i}')}</td>"
        f'<td class="num">{esc("—" if seen is None else fmt_value(int(seen)))}</td>'
        f'<td><span class="mbar" style="width:{40 * (mi or 0):.1f}px"></span>{esc(_prob(mi))}</td>'
        f'<td{rand}><span class="ubar" style="width:{40 * (ui or 0):.1f}px"></span>{esc(_prob(ui))}</td>'
        f"{weight}</tr>"
    )


def _step_tip(cols: Sequence[str], left: dict[str, Any], right: dict[str, Any], compared: tuple[dict[str, Any], dict[str, Any]]) -> str:
    """A waterfall step's tip: each column's two values, and the compared ones where they differ."""
    vals = []
    for c in cols:
        va, vb = left.get(c), right.get(c)
        text = f"{c}: {_short(va)} | {_short(vb)}"
        ca, cb = compared[0].get(c, va), compared[1].get(c, vb)
        if not (_same_text(ca, va) and _same_text(cb, vb)):
            text += f" (compared: {_short(ca)} | {_short(cb)})"
        vals.append(text)
    return "; ".join(vals)


def waterfall_svg(
    terms: dict[str, Any],
    report: dict[str, Any],
    left: dict[str, str | None] | None = None,
    right: dict[str, str | None] | None = None,
    fields: Sequence[str] = (),
    compared: tuple[dict[str, Any], dict[str, Any]] = ({}, {}),
) -> str:
    """One pair's waterfall (inline SVG): the prior, then each field's weight (its level named) stacked
    from the running total, then the total match weight and its probability; the threshold's weight
    (log2 t / (1 − t)) dashed. Hovering a step shows both values."""
    pf = _per_field(report)
    labels = [x for x in _labels(terms) if f"weight_{x}" in terms]
    steps: list[tuple[str, str, float, str]] = []
    prior = _num(terms.get("prior_weight")) or 0.0
    steps.append(("prior", "", prior, "prior weight log2(λ / (1 − λ))"))
    for label in labels:
        w = _num(terms.get(f"weight_{label}")) or 0.0
        level = _level_name(pf, label, terms.get(f"level_{label}"))
        steps.append((label, level, w, _step_tip(_columns_of(label, pf, fields), left or {}, right or {}, compared)))
    total = _num(terms.get("match_weight"))
    if total is None:
        total = sum(s[2] for s in steps)
    cums = [0.0]
    for s in steps:
        cums.append(cums[-1] + s[2])
    t = _num((report.get("review") or {}).get("threshold"))
    tw = _logit2(t) if t is not None else None
    xs = cums + [total] + ([tw] if tw is not None else [])
    lo, hi = min(xs + [0.0]), max(xs + [0.0])
    pad = 0.05 * (hi - lo or 1.0)
    lo, hi = lo - pad, hi + pad
    row, width = 21, 760
    lx, px0, px1 = 8, 250, 670
    top = 18
    height = top + row * (len(steps) + 1) + 30

    def fx(x: float) -> float:
        return px0 + (px1 - px0) * (x - lo) / (hi - lo)

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        'aria-label="waterfall of the match weight">'
    ]
    for x in nice_ticks(lo, hi, 8):
        xx = fx(x)
        out.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top - 4}" y2="{height - 26}" stroke="#eee"/>'
            f'<text x="{xx:.1f}" y="{height - 12}" text-anchor="middle">{esc(tick_label(x))}</text>'
        )
    out.append(f'<text x="{(px0 + px1) / 2}" y="{top - 6}" text-anchor="middle">match weight (bits)</text>')
    z = fx(0.0)
    out.append(f'<line x1="{z:.1f}" x2="{z:.1f}" y1="{top - 4}" y2="{height - 26}" stroke="#888"/>')
    for k, (label, level, w, tip) in enumerate(steps):
        y = top + k * row
        a, b = fx(cums[k]), fx(cums[k + 1])
        colour = "#4c9a4c" if w > 0 else "#d0584e" if w < 0 else "#999"
        if k == 0:
            colour = "#8c8c8c"
        name = f"{label}: {level}" if level else label
        out.append(
            f"<g><title>{esc(f'{name}: {w:+.2f} bits' + (f' — {tip}' if tip else ''))}</title>"
            f'<text x="{lx}" y="{y + 14}">{esc(_clip(name, 38))}</text>'
            f'<rect x="{min(a, b):.1f}" y="{y + 4}" width="{max(1.0, abs(b - a)):.1f}" height="{row - 8}" '
            f'fill="{colour}"/>'
            f'<text x="{px1 + 8}" y="{y + 14}">{esc(f"{w:+.2f}")}</text></g>'
        )
        if k + 1 < len(steps):
            out.append(f'<line x1="{b:.1f}" x2="{b:.1f}" y1="{y + row - 4}" y2="{y + row + 4}" stroke="#666"/>')
    y = top + len(steps) * row
    p = _sigmoid2(total)
    out.append(
        f"<g><title>{esc(f'total {total:+.2f} bits, probability {p:.4f}')}</title>"
        f'<text x="{lx}" y="{y + 14}" font-weight="600">total → probability {esc(f"{p:.4f}")}</text>'
        f'<rect x="{min(z, fx(total)):.1f}" y="{y + 3}" width="{max(1.0, abs(fx(total) - z)):.1f}" '
        f'height="{row - 6}" fill="#2f6fad"/>'
        f'<text x="{px1 + 8}" y="{y + 14}" font-weight="600">{esc(f"{total:+.2f}")}</text></g>'
    )
    if tw is not None:
        xt = fx(tw)
        out.append(
            f'<line x1="{xt:.1f}" x2="{xt:.1f}" y1="{top - 2}" y2="{y + row}" stroke="#d62728" '
            f'stroke-dasharray="4 3" stroke-width="1.4"><title>{esc(f"threshold {t:g} = {tw:+.2f} bits")}'
            "</title></line>"
        )
    out.append("</svg>")
    return "".join(out)


def _short(value: str | None, n: int = 40) -> str:
    if value is None:
        return "(missing)"
    return _clip(" ".join(value.split()), n)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def waterfalls(report: dict[str, Any], values: Values, fields: Sequence[str], shown: int = WATERFALLS_SHOWN) -> str | None:
    """The body of "Waterfalls": for a Fellegi–Sunter job, the waterfall of the ``shown`` review pairs nearest
    the threshold on each side, the other review pairs' in a fold; None when no review pair has weights."""
    review = report.get("review") or {}
    t = _num(review.get("threshold"))
    tw = _logit2(t) if t is not None else None
    open_parts: list[str] = []
    folded: list[str] = []
    for side, word in (("above", "above"), ("below", "below")):
        for k, e in enumerate(_entries(review, side)):
            terms = e.get("terms")
            if not isinstance(terms, dict) or "match_weight" not in terms and "prior_weight" not in terms:
                continue
            lk, rk = _key(e["left"]), _key(e["right"])
            w = _num(e.get("weight"))
            what = f"match weight {_bits(w)} bits, probability" if w is not None else "score"
            pair = f"{_rec_head(e['left'])} ~ {_rec_head(e['right'])}"
            head = f"<h4>{esc(word)} #{k + 1}: {pair}, {esc(what)} {esc(_score_text(e.get('score')))}</h4>"
            svg = waterfall_svg(terms, report, values.get(lk), values.get(rk), fields, _compared(e))
            block = f'<div class="rv">{head}{svg}</div>'
            (open_parts if k < shown else folded).append(block)
    if not open_parts and not folded:
        return None
    note = (
        "Each bar adds one field's weight (green for, red against a match) to the running total, starting "
        "from the prior; the blue bar is the total match weight w, the probability 2^w / (1 + 2^w)"
    )
    if tw is not None:
        note += f"; the dashed red line is the threshold {t:g} in bits ({tw:+.2f})"
    note += ". Hover a bar for the two values compared."
    out = f'<p class="note">{esc(note)}</p>' + "".join(open_parts)
    if folded:
        out += f"<details><summary>the other {len(folded)} review pairs' waterfalls</summary>" + "".join(folded) + "</details>"
    return out
