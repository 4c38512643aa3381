"""What a notebook shows of a run's values: one-line ``repr`` texts and small, self-contained HTML
(``_repr_html_``) for :class:`~er_framework.engine.result.Result`, :class:`~er_framework.engine.explain.Explanation`
and :class:`~er_framework.engine.model.Model`.

The HTML is escaped (a record value ``<script>`` is shown as text), has no script, no external file and no
style sheet beyond inline attributes, and stays small whatever the size of the run: at most
:data:`ROWS_SHOWN` rows of a table, :data:`CELL_CHARS` characters of a cell, :data:`WARNINGS_SHOWN` warnings,
:data:`LEVELS_SHOWN` rows of weights and :data:`TERMS_SHOWN` terms of a waterfall (the tests hold it under
:data:`HTML_LIMIT` bytes). The functions here take plain values (dicts, lists, columns), so that the modules of
the values import this one and not the other way round.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from er_framework.report.review import waterfall_svg

__all__ = [
    "CELL_CHARS",
    "HTML_LIMIT",
    "LEVELS_SHOWN",
    "NAME_CHARS",
    "ROWS_SHOWN",
    "STYLE",
    "TERMS_SHOWN",
    "WARNINGS_SHOWN",
    "box",
    "clip",
    "kv_table",
    "level_weight",
    "rows_table",
    "table_html",
    "text_block",
    "waterfall_html",
    "weights_html",
    "weights_rows",
]

#: rows shown of each table of a result
ROWS_SHOWN = 10
#: characters shown of one cell (a longer value ends with "…")
CELL_CHARS = 80
#: warnings shown of a run's report
WARNINGS_SHOWN = 20
#: rows (field × level) shown of a model's weights
LEVELS_SHOWN = 120
#: terms (fields) shown of one pair's explanation
TERMS_SHOWN = 60
#: the bound the tests hold every ``_repr_html_`` to, in bytes, whatever the data
HTML_LIMIT = 50_000

#: the one style sheet of a view, inside it and scoped to its class ``er-repr`` (no file, no script)
STYLE = (
    "<style>.er-repr{font-family:sans-serif;font-size:13px}.er-repr table{border-collapse:collapse;font-size:12px;margin:4px 0}"
    ".er-repr td,.er-repr th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}</style>"
)
#: characters shown of a field's or a level's name in the weights table
NAME_CHARS = 40


def clip(value: Any, n: int = CELL_CHARS) -> str:
    """``value`` as one line of at most ``n`` characters (whitespace runs folded; ``…`` where cut)."""
    if value is None:
        return "(missing)"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    text = " ".join(str(value).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def esc(value: Any, n: int = CELL_CHARS) -> str:
    """:func:`clip`, HTML-escaped (quotes too)."""
    return html.escape(clip(value, n), quote=True)


def box(title: str, body: str) -> str:
    """One self-contained block: a bold title line, then ``body`` (HTML)."""
    return f'<div class="er-repr">{STYLE}<b>{html.escape(title)}</b>{body}</div>'


def text_block(text: str, max_lines: int = 40) -> str:
    """Plain text (a summary, a waterfall) as an escaped ``<pre>``, at most ``max_lines`` lines of :data:`CELL_CHARS`
    × 2 characters."""
    lines = text.splitlines()
    shown = [clip(line, 2 * CELL_CHARS) for line in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"… {len(lines) - max_lines} more lines")
    return '<pre style="font-size:12px;margin:4px 0">' + html.escape("\n".join(shown)) + "</pre>"


def kv_table(rows: Sequence[tuple[str, Any]]) -> str:
    """A two-column table of names and values."""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def rows_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A table of ``rows`` under ``header`` (every cell clipped and escaped)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def column_head(column: Any, n: int) -> list[Any]:
    """The first ``n`` values of a column (an array, a list or a file-backed sequence), as Python values."""
    head = column[:n]
    return [v.item() if hasattr(v, "item") else v for v in head]


def table_html(caption: str, columns: Mapping[str, Any], rows: int = ROWS_SHOWN) -> str:
    """The first ``rows`` rows of a table given as columns, with its size in the caption."""
    names = list(columns)
    total = len(columns[names[0]]) if names else 0
    shown = min(rows, total)
    heads = {name: column_head(columns[name], shown) for name in names}
    head = "".join(f"<th>{esc(name)}</th>" for name in names)
    body = "".join("<tr>" + "".join(f"<td>{esc(heads[name][i])}</td>" for name in names) + "</tr>" for i in range(shown))
    more = f", the first {shown} shown" if shown < total else ""
    cap = f'<caption style="text-align:left">{html.escape(caption)} ({total:,} row{"s" if total != 1 else ""}{more})</caption>'
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def level_weight(m: float, u: float) -> float:
    """A level's weight in bits, log2(m / u) (±inf where one of them is 0)."""
    if m <= 0:
        return -math.inf
    if u <= 0:
        return math.inf
    return math.log2(m / u)


def weights_rows(state: Mapping[str, Any]) -> list[tuple[str, str, float, float, float]]:
    """``(field, level, m, u, weight in bits)`` of every level of every field of a fitted state that has them
    (``fields: {name: {levels, m, u}}``, as Fellegi-Sunter's); empty when the state has none."""
    fields = state.get("fields")
    if not isinstance(fields, Mapping):
        return []
    rows: list[tuple[str, str, float, float, float]] = []
    for name, entry in fields.items():
        if not isinstance(entry, Mapping):
            continue
        m, u = entry.get("m"), entry.get("u")
        if not isinstance(m, Sequence) or not isinstance(u, Sequence) or len(m) != len(u):
            continue
        levels = entry.get("levels")
        named = isinstance(levels, Sequence) and len(levels) == len(m)
        names = [str(x) for x in levels] if named and levels is not None else [f"level {k}" for k in range(len(m))]
        rows += [(str(name), names[k], float(m[k]), float(u[k]), level_weight(float(m[k]), float(u[k]))) for k in range(len(m))]
    return rows


def weights_html(state: Mapping[str, Any]) -> str:
    """The weights table of a fitted state (:func:`weights_rows`), at most :data:`LEVELS_SHOWN` rows; the state's
    other entries (lambda, …) named above it; a note when the state has no per-level weights."""
    scalars = [(k, v) for k, v in state.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
    out = kv_table(scalars) if scalars else ""
    rows = weights_rows(state)
    if not rows:
        kinds = ", ".join(sorted(str(k) for k in state)) or "nothing"
        return out + f"<p>fitted state: {esc(kinds, 4 * CELL_CHARS)} (no per-level weights to show)</p>"
    head = "".join(f"<th>{h}</th>" for h in ("field", "level", "m", "u", "weight (bits)"))
    body = "".join(
        f"<tr><td>{esc(f, NAME_CHARS)}</td><td>{esc(lv, NAME_CHARS)}</td><td>{m:.4g}</td><td>{u:.4g}</td><td>{w:+.2f}</td></tr>"
        for f, lv, m, u, w in rows[:LEVELS_SHOWN]
    )
    more = f"<p>… {len(rows) - LEVELS_SHOWN} more levels</p>" if len(rows) > LEVELS_SHOWN else ""
    return out + f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" + more


def waterfall_html(fields: Sequence[Any], prior: float, match_weight: float | None, threshold: float) -> str:
    """The waterfall of a Fellegi-Sunter pair (the report's SVG, :func:`~er_framework.report.review.waterfall_svg`)
    from its field terms (``name``, ``left``, ``right``, ``level`` (a name), ``weight``): at most
    :data:`TERMS_SHOWN` fields, the values cut to :data:`CELL_CHARS` characters."""
    shown = list(fields)[:TERMS_SHOWN]
    terms: dict[str, Any] = {"prior_weight": prior}
    per_field: dict[str, Any] = {}
    left: dict[str, str | None] = {}
    right: dict[str, str | None] = {}
    for f in shown:
        terms[f"weight_{f.name}"] = f.weight or 0.0
        terms[f"level_{f.name}"] = -1 if f.level in (None, "missing") else 0
        per_field[f.name] = {"levels": [clip(f.level)], "columns": [f.name]}
        left[f.name] = None if f.left is None else clip(f.left)
        right[f.name] = None if f.right is None else clip(f.right)
    if match_weight is not None and len(shown) == len(fields):
        terms["match_weight"] = match_weight
    report = {"verifier": {"per_field": per_field}, "review": {"threshold": threshold}}
    svg = waterfall_svg(terms, report, left, right, [f.name for f in shown])
    more = f"<p>… {len(fields) - len(shown)} more fields (str() shows every one)</p>" if len(fields) > len(shown) else ""
    return svg + more
