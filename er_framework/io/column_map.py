"""A source's column mapping (``columns: {field: source_column}``): the job's field names onto the source's
own columns.

Every reader reads the source's columns (:attr:`ColumnMap.read`) and returns records keyed by them; the
readers' common entries (:func:`~er_framework.io.source_files.read_source`,
:func:`~er_framework.io.source_files.read_source_with_stats`,
:func:`~er_framework.io.frames.records_from_frame`) then give them the job's names
(:meth:`ColumnMap.records`) and name the job's field in every message about a mapped column
(:meth:`ColumnMap.named`). ``er validate`` names missing columns the same way (:meth:`ColumnMap.label`).

Two fields may read the same column (each gets its own list of the values); the id column is the
source's ``id:`` and is not mapped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

from er_framework.data import Records
from er_framework.errors import InputError, Problem

__all__ = ["ColumnMap"]


class ColumnMap:
    """The columns a source's ``fields`` are read from (``columns``: field -> the source's column; a field
    not listed reads the column of its own name)."""

    def __init__(self, fields: Sequence[str], columns: Mapping[str, str] | None = None) -> None:
        columns = columns or {}
        #: the job's fields, in order (each once)
        self.fields = list(dict.fromkeys(fields))
        #: field -> the source's column
        self.of = {f: columns.get(f, f) for f in self.fields}
        #: the source's columns to read, in the fields' order (each once)
        self.read = list(dict.fromkeys(self.of.values()))
        #: whether every field reads the column of its own name
        self.identity = all(f == c for f, c in self.of.items())
        by_column: dict[str, list[str]] = {}
        for f, c in self.of.items():
            if f != c:
                by_column.setdefault(c, []).append(f)
        self._mapped = by_column

    def label(self, column: str) -> str:
        """``'given' (field first_name, via columns:)`` for a mapped column; ``'given'`` otherwise."""
        fields = self._mapped.get(column)
        if not fields:
            return repr(column)
        names = " and ".join(fields)
        return f"{column!r} (field{'s' if len(fields) > 1 else ''} {names}, via columns:)"

    def records(self, recs: Records) -> Records:
        """``recs`` (keyed by the source's columns) keyed by the job's fields; a column read for two fields
        is copied, so that no two fields share one list."""
        if self.identity and list(recs.fields) == self.fields:
            return recs
        fields: dict[str, Sequence[str | None]] = {}
        used: set[str] = set()
        for f, c in self.of.items():
            col = recs.fields[c]
            fields[f] = list(col) if c in used and isinstance(col, list) else col
            used.add(c)
        return Records(ids=recs.ids, source=recs.source, source_names=recs.source_names, fields=fields)

    def problems(self, problems: Sequence[Problem]) -> list[Problem]:
        """``problems`` with every mapped column they name labelled with its field (:meth:`label`)."""
        if not self._mapped:
            return list(problems)
        named = {f"column {c!r}": c for c in self._mapped}
        pattern = re.compile("|".join(re.escape(t) for t in sorted(named, key=len, reverse=True)))

        def sub(text: str) -> str:
            return pattern.sub(lambda m: "column " + self.label(named[m.group(0)]), text, count=1)

        out = []
        for p in problems:
            message = sub(p.message)
            out.append(replace(p, message=message) if message != p.message else p)
        return out

    @contextmanager
    def named(self) -> Iterator[None]:
        """Raise an InputError from the block again with :meth:`problems` of its problems."""
        try:
            yield
        except InputError as exc:
            if not self._mapped:
                raise
            raise InputError(self.problems(exc.problems)) from None
