"""er_framework.engine.reprs: the pieces of the notebook views (clipped, escaped, bounded)."""

from __future__ import annotations

import math

import numpy as np

from er_framework.engine.explain import FieldTerm
from er_framework.engine.reprs import (
    CELL_CHARS,
    ROWS_SHOWN,
    box,
    clip,
    esc,
    kv_table,
    level_weight,
    rows_table,
    table_html,
    text_block,
    waterfall_html,
    weights_rows,
)


def test_clip_folds_cuts_and_names_missing_values() -> None:
    assert clip("a \n b\tc") == "a b c"
    assert clip(None) == "(missing)" and clip(float("nan")) == "nan" and clip(0.1 + 0.2) == "0.3"
    long = clip("x" * 500)
    assert len(long) == CELL_CHARS and long.endswith("…")
    assert esc('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"


def test_tables_show_the_first_rows_of_any_column_kind() -> None:
    cols = {"id": [f"r{i}" for i in range(25)], "score": np.linspace(0, 1, 25), "n": np.arange(25)}
    html = table_html("pairs", cols)
    assert "pairs (25 rows, the first 10 shown)" in html
    assert html.count("<tr>") == ROWS_SHOWN + 1 and ">r9<" in html and ">r10<" not in html
    assert ">0.0416667<" in html and ">9<" in html  # numpy values as Python numbers
    assert "the first" not in table_html("one", {"id": ["a"]}) and "(1 row)" in table_html("one", {"id": ["a"]})
    assert "(0 rows)" in table_html("none", {})


def test_small_pieces_escape_what_they_show() -> None:
    assert "&lt;b&gt;" in kv_table([("<b>", "<b>")]) and "<b>" not in kv_table([("<b>", "<b>")])
    assert rows_table(["h<"], [["<i>"]]).count("&lt;") == 2
    block = text_block("\n".join(f"line {i} <x>" for i in range(50)), max_lines=5)
    assert block.count("\n") == 5 and "… 45 more lines" in block and "<x>" not in block
    assert box("<t>", "<p>b</p>").count("&lt;t&gt;") == 1 and "<style>.er-repr" in box("t", "")


def test_weights_are_log2_m_over_u() -> None:
    assert level_weight(0.5, 0.125) == 2.0
    assert level_weight(0.0, 0.5) == -math.inf and level_weight(0.5, 0.0) == math.inf
    state = {"lambda": 0.1, "fields": {"name": {"levels": ["=100", "<100"], "m": [0.9, 0.1], "u": [0.1, 0.9]}, "bad": {"m": [1.0]}}}
    rows = weights_rows(state)
    assert [r[:2] for r in rows] == [("name", "=100"), ("name", "<100")]
    assert rows[0][4] == math.log2(9) and rows[1][4] == -math.log2(9)
    unnamed = weights_rows({"fields": {"f": {"m": [0.5, 0.5], "u": [0.25, 0.75], "levels": ["only one"]}}})
    assert [r[1] for r in unnamed] == ["level 0", "level 1"]
    assert weights_rows({}) == [] and weights_rows({"fields": [1, 2]}) == []


def test_the_waterfall_names_levels_and_marks_missing_values() -> None:
    fields = [FieldTerm("name", "ann", "anne", level=">=92", weight=3.0), FieldTerm("dob", None, "2001", level="missing", weight=0.0)]
    svg = waterfall_html(fields, -5.0, -2.0, 0.5)
    assert "name: &gt;=92" in svg and "dob: missing" in svg and "(missing)" in svg
    assert svg.count("<rect") == 4 and "-2.00" in svg
