"""Charts of report.html as inline SVG, written directly: no plotting library, no script, no image file.

A :class:`Chart` is a plot area with a linear, logarithmic or symmetric-log scale on each axis; its
methods add grid lines and ticks, bars, lines, markers, error bars, spans and a legend, and
:meth:`Chart.svg` returns the markup. What is drawn is what is shown: callers aggregate first (a
histogram from counts, a curve from a few hundred points), so a chart's size never grows with the
number of records or pairs. Every text is HTML-escaped (ids and field values can hold markup).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any, Literal

__all__ = ["CHART_CSS", "PALETTE", "Chart", "Scale", "esc", "nice_ticks", "log_ticks", "tick_label"]

#: colours of series, in order (matplotlib's "tab10", which the page used before)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")

CHART_CSS = """
svg.chart{display:block;max-width:100%;height:auto;margin:6px 0;font:11px system-ui,sans-serif}
svg.chart text{fill:#333}svg.chart text.title{font-size:12.5px;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:2px 18px;font-size:12px;color:#333;margin:0 0 8px 8px;max-width:760px}
.legend span{white-space:nowrap}.legend svg{vertical-align:middle;margin-right:5px}
"""

Kind = Literal["linear", "log", "symlog"]
#: marker shapes: circle, cross (x), plus, square, triangle up and down, diamond
Shape = Literal["o", "x", "+", "s", "^", "v", "D"]


def esc(value: Any) -> str:
    """HTML-escaped text of ``value`` (quotes included; None -> empty)."""
    return html.escape("" if value is None else str(value), quote=True)


def nice_ticks(low: float, high: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [low, high] (steps of 1, 2 or 5 times a power of ten)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / max(1, n)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    k = 0
    while first + k * step <= high + step * 1e-9:
        ticks.append(round(first + k * step, 12))
        k += 1
    return ticks


def log_ticks(low: float, high: float) -> list[float]:
    """The powers of ten in [low, high] (``low`` > 0); with fewer than three, 2× and 5× them too."""
    if not (low > 0 and high >= low):
        return []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    powers = [10.0**k for k in range(first, last + 1)]
    ticks = [p for p in powers if low * (1 - 1e-9) <= p <= high * (1 + 1e-9)]
    if len(ticks) < 3:
        ticks = sorted(m * p for p in powers for m in (1, 2, 5) if low * (1 - 1e-9) <= m * p <= high * (1 + 1e-9))
    return ticks


def tick_label(x: float) -> str:
    """A tick value as text: whole numbers with thousands separators, others in the shortest form."""
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:g}"


class Scale:
    """Where a value falls on an axis, as a share of its length (0 at ``low``, 1 at ``high``).

    ``log``: log10 (values <= 0 fall at the axis's start); ``symlog``: sign(v)·log10(1 + |v|), linear
    near zero and logarithmic above about 1 (counts that run from 0 to millions).
    """

    def __init__(self, low: float, high: float, kind: Kind = "linear") -> None:
        if kind == "log" and not low > 0:
            raise ValueError(f"a log scale starts above 0, got {low}")
        self.low, self.high, self.kind = low, high, kind
        a, b = self.t(low), self.t(high)
        self._a, self._span = a, (b - a) or 1.0

    def t(self, v: float) -> float:
        if self.kind == "log":
            return math.log10(v) if v > 0 else -math.inf
        if self.kind == "symlog":
            return math.copysign(math.log10(1.0 + abs(v)), v)
        return v

    def share(self, v: float) -> float:
        t = self.t(v)
        if t == -math.inf:
            return 0.0
        return (t - self._a) / self._span


def _n(v: float) -> str:
    """A coordinate with one decimal (SVG text stays short)."""
    return f"{v:.1f}"


class Chart:
    """One SVG chart: a plot area of ``width`` × ``height`` pixels less the margins, scales ``x`` and ``y``."""

    def __init__(
        self,
        x: Scale,
        y: Scale,
        *,
        width: int = 760,
        height: int = 300,
        left: int = 62,
        right: int = 16,
        top: int = 26,
        bottom: int = 44,
        label: str = "chart",
    ) -> None:
        self.xs, self.ys = x, y
        self.width, self.height = width, height
        self.left, self.top = left, top
        self.pw, self.ph = width - left - right, height - top - bottom
        self.label = label
        self.parts: list[str] = []
        self.legend_items: list[str] = []

    # ------------------------------------------------------------ coordinates

    def px(self, v: float) -> float:
        """The x pixel of value ``v`` (clamped to the plot area)."""
        return self.left + self.pw * min(1.0, max(0.0, self.xs.share(v)))

    def py(self, v: float) -> float:
        """The y pixel of value ``v`` (clamped to the plot area)."""
        return self.top + self.ph * (1.0 - min(1.0, max(0.0, self.ys.share(v))))

    @property
    def bottom_y(self) -> float:
        return self.top + self.ph

    # ------------------------------------------------------------ frame

    def title(self, text: str) -> None:
        self.parts.append(f'<text class="title" x="{_n(self.left + self.pw / 2)}" y="14" text-anchor="middle">{esc(text)}</text>')

    def x_axis(self, ticks: Sequence[float], label: str, *, grid: bool = True, names: Sequence[str] | None = None) -> None:
        """The x axis line, its ticks (``names`` as their labels, else the values) and ``label`` below."""
        y0 = self.bottom_y
        for i, v in enumerate(ticks):
            x = _n(self.px(v))
            if grid:
                self.parts.append(f'<line x1="{x}" x2="{x}" y1="{self.top}" y2="{_n(y0)}" stroke="#ececec"/>')
            name = names[i] if names is not None else tick_label(v)
            self.parts.append(
                f'<line x1="{x}" x2="{x}" y1="{_n(y0)}" y2="{_n(y0 + 4)}" stroke="#555"/>'
                f'<text x="{x}" y="{_n(y0 + 16)}" text-anchor="middle">{esc(name)}</text>'
            )
        self.parts.append(f'<line x1="{self.left}" x2="{self.left + self.pw}" y1="{_n(y0)}" y2="{_n(y0)}" stroke="#555"/>')
        self.parts.append(f'<text x="{_n(self.left + self.pw / 2)}" y="{self.height - 6}" text-anchor="middle">{esc(label)}</text>')

    def y_axis(self, ticks: Sequence[float], label: str, *, grid: bool = True) -> None:
        """Horizontal grid lines at ``ticks`` with their values at the left, and ``label`` turned upright."""
        for v in ticks:
            y = _n(self.py(v))
            stroke = "#e5e5e5" if grid else "none"
            self.parts.append(
                f'<line x1="{self.left}" x2="{self.left + self.pw}" y1="{y}" y2="{y}" stroke="{stroke}"/>'
                f'<text x="{self.left - 6}" y="{_n(self.py(v) + 4)}" text-anchor="end">'
                f"{esc(tick_label(v))}</text>"
            )
        self.parts.append(
            f'<text transform="translate(14 {_n(self.top + self.ph / 2)}) rotate(-90)" text-anchor="middle">{esc(label)}</text>'
        )

    # ------------------------------------------------------------ marks

    def bars(
        self,
        lefts: Sequence[float],
        rights: Sequence[float],
        heights: Sequence[float],
        fills: str | Sequence[str],
        tips: Sequence[str] | None = None,
        *,
        gap: float = 0.6,
        base: float | None = None,
    ) -> None:
        """One rectangle per bar from ``base`` (default: the axis's low end) up to its height, with its tip
        (shown on hover) when given; a bar of height 0 is drawn flat (the bins stay countable)."""
        y0 = self.py(self.ys.low if base is None else base)
        for i, (a, b, h) in enumerate(zip(lefts, rights, heights)):
            x0, x1 = self.px(a), self.px(b)
            top = self.py(h) if h > 0 or self.ys.kind != "log" else y0
            fill = fills if isinstance(fills, str) else fills[i]
            tip = f"<title>{esc(tips[i])}</title>" if tips is not None else ""
            self.parts.append(
                f'<rect x="{x0 + gap / 2:.2f}" y="{min(top, y0):.2f}" width="{max(0.6, x1 - x0 - gap):.2f}" '
                f'height="{abs(y0 - top):.2f}" fill="{fill}">{tip}</rect>'
            )

    def line(self, xs: Sequence[float], ys: Sequence[float], colour: str, *, width: float = 1.6, dash: str | None = None) -> None:
        """A polyline through the points; a None or non-finite y breaks it."""
        runs: list[list[str]] = [[]]
        for x, y in zip(xs, ys):
            if y is None or not math.isfinite(y):
                runs.append([])
                continue
            runs[-1].append(f"{_n(self.px(x))},{_n(self.py(y))}")
        style = f' stroke-dasharray="{dash}"' if dash else ""
        for run in runs:
            if len(run) > 1:
                self.parts.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" stroke-width="{width}"{style}/>')

    def vline(
        self, x: float, colour: str, *, width: float = 1.4, dash: str | None = "5 3", tip: str | None = None, cls: str | None = None
    ) -> None:
        """A vertical line across the plot area at ``x``."""
        xx = _n(self.px(x))
        cls_attr = f' class="{cls}"' if cls else ""
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        title = f"<title>{esc(tip)}</title>" if tip else ""
        self.parts.append(
            f'<line{cls_attr} x1="{xx}" x2="{xx}" y1="{self.top - 4}" y2="{_n(self.bottom_y)}" '
            f'stroke="{colour}" stroke-width="{width}"{dash_attr}>{title}</line>'
        )

    def vspan(self, x0: float, x1: float, colour: str, opacity: float = 0.25) -> None:
        """A shaded band over the plot area from ``x0`` to ``x1``."""
        a, b = self.px(x0), self.px(x1)
        self.parts.append(f'<path d="M{_n(a)} {self.top}H{_n(b)}V{_n(self.bottom_y)}H{_n(a)}Z" fill="{colour}" fill-opacity="{opacity}"/>')

    def markers(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        colour: str,
        shape: Shape = "o",
        *,
        size: float = 4.0,
        filled: bool = True,
        tips: Sequence[str] | None = None,
    ) -> None:
        """A marker at each point (``size``: half its width in pixels)."""
        for i, (x, y) in enumerate(zip(xs, ys)):
            tip = f"<title>{esc(tips[i])}</title>" if tips is not None else ""
            self.parts.append(marker(self.px(x), self.py(y), colour, shape, size, filled, tip))

    def errorbars(self, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float], colour: str, *, cap: float = 3.0) -> None:
        """A vertical bar from low to high at each x, with caps."""
        for x, lo, hi in zip(xs, lows, highs):
            xx, y0, y1 = self.px(x), self.py(lo), self.py(hi)
            self.parts.append(
                f'<path d="M{_n(xx)} {_n(y0)}V{_n(y1)}M{_n(xx - cap)} {_n(y0)}H{_n(xx + cap)}'
                f'M{_n(xx - cap)} {_n(y1)}H{_n(xx + cap)}" stroke="{colour}" stroke-width="1.2" '
                'fill="none"/>'
            )

    def text(self, x: float, y: float, text: str, *, anchor: str = "middle", dy: float = 0.0, colour: str | None = None) -> None:
        """``text`` at the point (x, y), shifted ``dy`` pixels down."""
        fill = f' style="fill:{colour}"' if colour else ""
        self.parts.append(f'<text x="{_n(self.px(x))}" y="{_n(self.py(y) + dy)}" text-anchor="{anchor}"{fill}>{esc(text)}</text>')

    def raw(self, markup: str) -> None:
        """SVG markup added as it is (the caller escapes its text)."""
        self.parts.append(markup)

    # ------------------------------------------------------------ legend and output

    def legend(
        self,
        label: str,
        colour: str,
        kind: str = "line",
        *,
        dash: str | None = None,
        shape: Shape = "o",
        filled: bool = True,
        opacity: float = 1.0,
    ) -> None:
        """An entry of the legend drawn under the chart: ``kind`` "line", "marker", "errorbar" or "patch"."""
        if kind == "line":
            swatch = (
                f'<line x1="1" x2="23" y1="6" y2="6" stroke="{colour}" stroke-width="2"'
                + (f' stroke-dasharray="{dash}"' if dash else "")
                + "/>"
            )
        elif kind == "marker":
            swatch = marker(12, 6, colour, shape, 4.0, filled, "")
        elif kind == "errorbar":
            swatch = f'<path d="M12 1V11M9 1H15M9 11H15" stroke="{colour}" stroke-width="1.2" fill="none"/>' + marker(
                12, 6, colour, "o", 3.5, True, ""
            )
        else:
            swatch = f'<path d="M2 1H22V11H2Z" fill="{colour}" fill-opacity="{opacity}"/>'
        self.legend_items.append(f'<span><svg width="24" height="12" aria-hidden="true">{swatch}</svg>{esc(label)}</span>')

    def svg(self) -> str:
        """The chart's markup (and its legend, an HTML line under it)."""
        head = (
            f'<svg class="chart" viewBox="0 0 {self.width} {self.height}" width="{self.width}" '
            f'height="{self.height}" role="img" aria-label="{esc(self.label)}">'
        )
        legend = f'<div class="legend">{"".join(self.legend_items)}</div>' if self.legend_items else ""
        return head + "".join(self.parts) + "</svg>" + legend


def marker(x: float, y: float, colour: str, shape: Shape, size: float, filled: bool, tip: str) -> str:
    """One marker centred at pixel (x, y)."""
    s = size
    fill = colour if filled else "none"
    if shape == "o":
        return f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{s:g}" fill="{fill}" stroke="{colour}" stroke-width="1.2">{tip}</circle>'
    if shape in ("x", "+"):
        d = (
            f"M{_n(x - s)} {_n(y - s)}L{_n(x + s)} {_n(y + s)}M{_n(x - s)} {_n(y + s)}L{_n(x + s)} {_n(y - s)}"
            if shape == "x"
            else f"M{_n(x - s)} {_n(y)}H{_n(x + s)}M{_n(x)} {_n(y - s)}V{_n(y + s)}"
        )
        return f'<path d="{d}" stroke="{colour}" stroke-width="1.5" fill="none">{tip}</path>'
    if shape == "s":
        d = f"M{_n(x - s)} {_n(y - s)}H{_n(x + s)}V{_n(y + s)}H{_n(x - s)}Z"
    elif shape == "^":
        d = f"M{_n(x)} {_n(y - s)}L{_n(x + s)} {_n(y + s)}H{_n(x - s)}Z"
    elif shape == "v":
        d = f"M{_n(x)} {_n(y + s)}L{_n(x + s)} {_n(y - s)}H{_n(x - s)}Z"
    else:  # "D"
        d = f"M{_n(x)} {_n(y - s)}L{_n(x + s)} {_n(y)}L{_n(x)} {_n(y + s)}L{_n(x - s)} {_n(y)}Z"
    return f'<path d="{d}" fill="{fill}" stroke="{colour}" stroke-width="1.2">{tip}</path>'
