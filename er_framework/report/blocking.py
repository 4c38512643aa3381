"""The blocking statistics of report.html as tables: per key of a blocker (``per_key`` of field_hash,
sorted_neighbourhood and other keyed blockers) its counts, the largest block and the pairs it made, and the
blocks purged by a cap (``max_block_size``: the largest ten with their value and size) with the pairs they cost;
for bucket blockers (LSH bands, grid bits) the oversized buckets skipped and their pairs.

Drawn from report.json's ``blockers`` only; every text from the data is escaped (:func:`er_framework.report.review.esc`).
"""

from __future__ import annotations

from typing import Any

from er_framework.report.review import esc, fmt_value

__all__ = ["KEY_COLUMNS", "blocker_tables"]

#: the columns of a blocker's per-key table: (report key, heading), those present in some key shown
KEY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("records_keyed", "records keyed"),
    ("records_sorted", "records sorted"),
    ("records_missing", "records without the key"),
    ("distinct_values", "distinct values"),
    ("distinct_keys", "distinct keys"),
    ("buckets", "blocks of 2+ records"),
    ("largest_bucket", "largest block (records)"),
    ("pairs_generated", "pairs made"),
)


def _cell(value: Any, num: bool = True) -> str:
    return f'<td class="num">{esc(fmt_value(value))}</td>' if num else f"<td>{esc(fmt_value(value))}</td>"


def _table(head: list[str], rows: list[str], cls: str = "blk") -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _key_name(key: dict[str, Any]) -> str:
    name = key.get("key")
    if name is None and isinstance(key.get("fields"), list):
        name = "+".join(str(f) for f in key["fields"])
    return str(name if name is not None else "?")


def _per_key_table(keys: list[dict[str, Any]]) -> str:
    """One row per key: the counts the report gives, then the purged blocks and the pairs they cost."""
    cols = [(k, h) for k, h in KEY_COLUMNS if any(k in key for key in keys)]
    has_purged = any(isinstance(key.get("purged"), dict) for key in keys)
    head = ["key", *(h for _, h in cols)] + (["blocks purged", "records in them", "pairs they cost"] if has_purged else [])
    rows = []
    for key in keys:
        cells = [f"<td><code>{esc(_key_name(key))}</code></td>"] + [_cell(key.get(k)) for k, _ in cols]
        if has_purged:
            p: dict[str, Any] = key["purged"] if isinstance(key.get("purged"), dict) else {}
            cls = ' class="num warn"' if (p.get("buckets") or 0) else ' class="num"'
            cells += [f"<td{cls}>{esc(fmt_value(p.get(k)))}</td>" for k in ("buckets", "records", "pairs_cost")]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return _table(head, rows)


def _purged_table(keys: list[dict[str, Any]], mode: str | None) -> str:
    """The largest purged blocks of every key (value, records, the pairs each would have made in dedup mode)."""
    rows = []
    for key in keys:
        p: dict[str, Any] = key["purged"] if isinstance(key.get("purged"), dict) else {}
        for block in p.get("largest") or []:
            if not isinstance(block, dict):
                continue
            size = block.get("size")
            pairs = block.get("pairs")
            if pairs is None and mode == "dedup" and isinstance(size, int):
                pairs = size * (size - 1) // 2
            rows.append(
                f"<tr><td><code>{esc(_key_name(key))}</code></td><td>{esc(fmt_value(block.get('value')))}</td>"
                f"{_cell(size)}{_cell(pairs)}</tr>"
            )
    if not rows:
        return ""
    note = "" if mode == "dedup" else " (the pairs of one block depend on its records' sources: the key's total is above)"
    return (
        f"<h4>Purged blocks, largest first{esc(note)}</h4>"
        + _table(["key", "value", "records", "pairs it would have made"], rows)
        + '<p class="note">'
        + esc(
            "A purged block is not paired at all: its records can still meet through another key or blocker. "
            "Raise max_block_size to pair them, or make the key more selective (add a field)."
        )
        + "</p>"
    )


def blocker_tables(blk: dict[str, Any], mode: str | None) -> str:
    """A blocker's blocking statistics as tables (empty when its report has none)."""
    keys = [k for k in blk.get("per_key") or [] if isinstance(k, dict)]
    if not keys:
        return ""  # (a bucket blocker's counts are scalars: its table of counts shows them)
    return _per_key_table(keys) + _purged_table(keys, mode)
