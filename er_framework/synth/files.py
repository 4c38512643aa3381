"""How ``er synth`` writes its files: every one through :mod:`er_framework.io.safe_write`, every target
checked before any is written.

A file of the name synth writes may already be in the folder: it is written over only when it is one synth
wrote (its :class:`~er_framework.io.safe_write.FileKind`: the header synth writes for a CSV, the keys of
the first line for JSONL, the columns for Parquet, the page structure for a news page), so re-running a
synth command into the same folder works and a user's own ``truth.csv`` is never replaced. When one target
is refused, nothing is written: every problem is reported at once.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from er_framework.errors import InputError, Problem
from er_framework.io.safe_write import FileKind, check_target, csv_header_kind, open_for_write

__all__ = ["check_targets", "csv_kind", "jsonl_kind", "parquet_kind", "table_targets", "text_kind", "write_csv", "write_text"]


def csv_kind(what: str, header: Sequence[str]) -> FileKind:
    """A CSV file that synth writes with ``header``."""
    return csv_header_kind(f"the {what} er synth writes", header)


def jsonl_kind(what: str, keys: Sequence[str]) -> FileKind:
    """A JSON-lines file whose first line is an object with exactly ``keys``."""
    want = set(keys)

    def recognizes(head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        try:
            doc = json.loads(first.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return False
        return isinstance(doc, dict) and set(doc) == want

    description = f"the {what} er synth writes (its first line is not a JSON object of {', '.join(keys)})"
    return FileKind(description=description, recognizes=recognizes)


def text_kind(what: str, starts: bytes, holds: bytes) -> FileKind:
    """A text file that starts with ``starts`` and holds ``holds`` in its first bytes (a page synth wrote)."""
    return FileKind(
        description=f"a {what} er synth wrote",
        recognizes=lambda head: head.startswith(starts) and holds in head,
    )


def parquet_kind(what: str, path: Path, columns: Sequence[str]) -> FileKind:
    """A Parquet file at ``path`` with exactly ``columns`` (its schema is read from its footer)."""

    def recognizes(head: bytes) -> bool:
        if not head.startswith(b"PAR1"):
            return False
        try:
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
        except (OSError, ValueError, ImportError):  # not a Parquet file after all (pyarrow's errors derive from these)
            return False
        return list(names) == list(columns)

    return FileKind(description=f"the {what} er synth writes (a Parquet file of its columns)", recognizes=recognizes)


def check_targets(targets: Iterable[tuple[Path, str, FileKind]]) -> None:
    """Check every ``(path, what, kind)`` as :func:`~er_framework.io.safe_write.open_for_write` would; raise one
    :class:`InputError` listing every refusal (nothing has been written). A target in a folder that does not
    exist yet is new."""
    problems: list[Problem] = []
    for path, what, kind in targets:
        if not path.parent.is_dir():
            continue
        try:
            check_target(path, what=what, kind=kind)
        except InputError as exc:  # er synth's file names are fixed: the way out is another folder
            problems.extend(replace(p, fix="choose another --out folder (new or empty), or move that file away") for p in exc.problems)
    if problems:
        raise InputError(problems)


def write_csv(
    path: Path, what: str, kind: FileKind, header: Sequence[str], rows: Iterable[Sequence[Any]], lineterminator: str = "\r\n"
) -> None:
    """``header`` then ``rows`` as CSV (UTF-8, ``lineterminator``), replacing ``path`` atomically."""
    with open_for_write(path, what=what, kind=kind, newline="") as fh:
        w = csv.writer(fh, lineterminator=lineterminator)
        w.writerow(header)
        w.writerows(rows)


def write_text(path: Path, what: str, kind: FileKind, text: str) -> None:
    """``text`` (UTF-8, written as given), replacing ``path`` atomically."""
    with open_for_write(path, what=what, kind=kind, newline="") as fh:
        fh.write(text)


def table_targets(out: Path, name: str, what: str, columns: Sequence[str], fmt: str) -> list[tuple[Path, str, FileKind]]:
    """The files of a synth command that writes ``name.csv`` (or ``name.parquet``) with ``columns`` and
    ``truth.csv`` (``id,entity``) into ``out``: (path, what, the kind an existing file must be)."""
    table = out / f"{name}.{fmt}"
    kind = parquet_kind(what, table, columns) if fmt == "parquet" else csv_kind(what, columns)
    truth_what = "truth file (id,entity)"
    return [(table, what, kind), (out / "truth.csv", truth_what, csv_kind(truth_what, ("id", "entity")))]
