"""The charts of report.html (er_framework.report.charts): inline SVG scales, ticks and marks, checked by hand."""

from __future__ import annotations

import re

import pytest

from er_framework.report.charts import Chart, Scale, log_ticks, nice_ticks, tick_label

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
    chart = Chart(Scale(0.0, 1.0), Scale(0.0, 10.0), width=200, height=100, left=20, right=10, top=10, bottom=20, label="<b>x</b>")
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
