"""Rows of a labels file by pair: add pairs, set their ``match``, and put back what was there before.

The rules are those of ``er review`` (:func:`er_framework.cli.review.merge_labels`): the header gains the
columns of :data:`~er_framework.io.labels_file.LABELS_HEADER` and of the rows it lacks, short rows are padded,
and a pair is found in either orientation (``A x ~ B y`` is the row ``B y ~ A x`` too). These functions
change a :class:`~er_framework.io.labels_file.LabelsFile` in memory; the file is written by the one writer,
:func:`~er_framework.io.labels_file.update_labels_file` (atomically, never over an input of the job).

``er review OUT --serve`` sets one pair's ``match`` per key press and a cluster split's pairs at once
(:func:`set_label_rows`), and its undo puts back the previous state (:func:`restore_label_rows`): the
previous ``match`` of a row that was there, no row for a pair that was not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from er_framework.io.labels_file import LABELS_HEADER, LabelsFile

__all__ = ["PAIR_COLUMNS", "PairKey", "Previous", "pair_key", "restore_label_rows", "set_label_rows", "widen_header"]

#: the columns that name a pair, in order
PAIR_COLUMNS = ("left_source", "left_id", "right_source", "right_id")

#: ``(left_source, left_id, right_source, right_id)``
PairKey = tuple[str, str, str, str]


@dataclass(frozen=True)
class Previous:
    """What a pair's rows held before a change: ``matches`` the ``match`` of each of its rows in file order
    (empty: the pair had no row, the change added one)."""

    key: PairKey
    matches: tuple[str, ...]


def pair_key(row: Mapping[str, object]) -> PairKey:
    """The pair a row (a dict by column name) names."""
    return (str(row["left_source"]), str(row["left_id"]), str(row["right_source"]), str(row["right_id"]))


def widen_header(labels: LabelsFile, rows: Sequence[Mapping[str, object]] = ()) -> None:
    """Add the columns of :data:`LABELS_HEADER` and of ``rows`` (dicts by column name) the header lacks (a file
    with only the columns training needs gets ``score``, ``side`` and the rows' ``reason`` and ``round``), and
    pad every row to the header's width. A new file (no rows, the default header) gets the columns in the
    order of the first of ``rows``, as ``er review`` writes them."""
    if not labels.rows and rows and labels.header == list(LABELS_HEADER):
        labels.header[:] = list(dict.fromkeys([*rows[0], "match"]))
    for name in [*LABELS_HEADER, *(str(k) for r in rows for k in r)]:
        if name not in labels.header:
            labels.header.append(name)
    width = len(labels.header)
    labels.rows = [(r + [""] * width)[:width] for r in labels.rows]


def _rows_by_pair(labels: LabelsFile) -> dict[PairKey, list[int]]:
    """The positions of each pair's rows, under the pair as written and reversed."""
    at = [labels.header.index(c) for c in PAIR_COLUMNS]
    found: dict[PairKey, list[int]] = {}
    for n, row in enumerate(labels.rows):
        ls, li, rs, ri = (row[i] for i in at)
        found.setdefault((ls, li, rs, ri), []).append(n)
        if (rs, ri, ls, li) != (ls, li, rs, ri):
            found.setdefault((rs, ri, ls, li), []).append(n)
    return found


def set_label_rows(labels: LabelsFile, rows: Sequence[Mapping[str, object]]) -> list[Previous]:
    """Set the ``match`` of each of ``rows`` (dicts by column name: the pair, ``match``, and optionally
    ``score`` and ``side``) in ``labels``: on every row of the pair when it has some (other columns kept),
    else on a new row holding the given values. Returns what each pair held before, for
    :func:`restore_label_rows`."""
    widen_header(labels, rows)
    header = labels.header
    m = header.index("match")
    where = _rows_by_pair(labels)
    before: list[Previous] = []
    for r in rows:
        key = pair_key(r)
        found = where.get(key, [])
        before.append(Previous(key, tuple(labels.rows[n][m] for n in found)))
        if found:
            for n in found:
                labels.rows[n][m] = str(r.get("match", ""))
            continue
        labels.rows.append([str(r.get(name, "")) for name in header])
        n = len(labels.rows) - 1
        where[key] = [n]
        where[(key[2], key[3], key[0], key[1])] = [n]
    return before


def restore_label_rows(labels: LabelsFile, previous: Sequence[Previous]) -> None:
    """Put back what :func:`set_label_rows` changed: each pair's rows get their previous ``match`` again; a
    pair that had no row loses the row that was added. Later changes are undone first (``previous`` is
    applied in reverse), so a list that names one pair twice ends as it was before its first change."""
    widen_header(labels)
    m = labels.header.index("match")
    where = _rows_by_pair(labels)
    drop: set[int] = set()
    for prev in reversed(previous):
        found = [n for n in where.get(prev.key, []) if n not in drop]
        if not prev.matches:
            drop.update(found)
            continue
        for n, value in zip(found, prev.matches):
            labels.rows[n][m] = value
    if drop:
        labels.rows = [r for n, r in enumerate(labels.rows) if n not in drop]
