"""Reading CSV and TSV text into raw columns (:func:`read_csv_columns`), the reader of every CSV/TSV file.

The input rules (cells as text, problems naming ``file:LINE``, nothing dropped but blank lines) are
those of :mod:`er_framework.io.source_files`. TSV is the csv module's ``excel-tab`` dialect: tab
separated, double quotes honoured.

Note: reading CSV raises the csv module's process-wide field size limit to
``2**31 - 1`` characters so that long documents can be read (the record size
guard is this module's own, per source).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, compress, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from er_framework.errors import InputError, Problem
from er_framework.io.data_file import (
    Capped,
    Locator,
    RecordIds,
    gc_paused,
    missing_columns,
    pieces_of,
    repeated_columns,
    snippet,
    too_big_problem,
)
from er_framework.io.source_header import MALFORMED_FIX, other_separator_fix

__all__ = ["MALFORMED_FIX", "read_csv_columns"]


class _TooBig(Exception):
    """Raised by :func:`_guarded_lines` when the record being read exceeds the limit."""


class _RowGuard:
    """The size of the CSV record being read (reset by the reader after every row)."""

    __slots__ = ("first", "limit", "lines", "size", "start")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.lines = 0  # lines read so far
        self.start = 1  # the number of the record's first line
        self.first = ""  # the record's first line (for its id in a message)


def _guarded_lines(pieces: Iterable[tuple[str, int]], guard: _RowGuard | None) -> Iterator[str]:
    """The lines of the pieces (line ends kept) for ``csv.reader``; raises :class:`_TooBig` when
    the lines of one record add up to more than ``guard.limit`` bytes."""
    if guard is None:
        yield from chain.from_iterable(io.StringIO(piece, newline="") for piece, _ in pieces)
        return
    limit = guard.limit
    for piece, _ in pieces:
        for line in io.StringIO(piece, newline=""):
            guard.lines += 1
            if not guard.size:
                guard.first = line
                guard.start = guard.lines
            guard.size += len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))
            if guard.size > limit:
                raise _TooBig
            yield line


def read_csv_columns(
    text: str | Iterable[tuple[str, int]],
    file: str,
    delimiter: str,
    wanted: list[str],
    id_column: str,
    hint: str,
    *,
    max_record_bytes: int | None = None,
    whole: bool = True,
    ids: RecordIds | None = None,
    split_whole: bool = True,
    quote: str = '"',
    dialect_option: bool = False,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw string columns of a CSV/TSV text (empty cells still ``""``).

    ``text``: the whole text, or pieces ``(text, first line)`` ending on line ends (as
    :func:`~er_framework.io.data_file.text_chunks` yields them; read one at a time). A record (row) larger than
    ``max_record_bytes`` raises InputError. ``whole``: the text is a whole file, so a header
    without any row is a problem (not for one partition of a file).

    The header is read by ``csv.reader``. The pieces after it are split whole
    (:func:`_simple_piece`: lines, then cells, by C-level string methods) while
    they hold no quote, carriage return or NUL and every line has the header's
    number of cells: then ``csv.reader`` would read each line as its cells. From
    the first piece where that does not hold, ``csv.reader`` reads the rest (and
    reports its problems); the results are the same either way (``split_whole=False``:
    ``csv.reader`` reads everything, the tests' reference).
    """
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    guard = _RowGuard(max_record_bytes) if max_record_bytes is not None else None
    source = _Pieces(pieces_of(text))
    reader = csv.reader(_guarded_lines(source, guard), delimiter=delimiter, quotechar=quote, strict=True)
    too_big = _TooBigRow(file, hint, guard, ids)
    with too_big.caught():
        header, header_line, problems = _csv_header(reader, file, delimiter, wanted, id_column, hint)
    if header is None:
        return {}, Locator(file, [], "row"), problems
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(header):
        positions.setdefault(name, []).append(i)
    if ids is not None and id_column in positions:
        ids.position = positions[id_column][0]
    problems += _csv_header_problems(header, header_line, positions, file, delimiter, wanted, id_column, hint, dialect_option)
    keep = [positions[c][0] for c in wanted if c in positions]
    cells: list[list[Any]] = [[] for _ in keep]
    lines: list[int] = []
    row_problems: list[Problem] = []
    first = source.last[0] if source.last is not None else ""
    if split_whole and source.count == 1 and _plain(first, delimiter, quote):  # the header ended in the first piece
        done = header_line  # lines read so far
        rest = first.split("\n", done)[done] if first.count("\n") >= done else ""
        with gc_paused():
            for piece in chain([rest], (p for p, _ in source)):
                got = _simple_piece(piece, delimiter, len(header), keep, max_record_bytes) if _plain(piece, delimiter, quote) else None
                if got is None:  # csv.reader from this piece on
                    if guard is not None:
                        guard.lines = done
                    reader = csv.reader(
                        _guarded_lines(chain([(piece, 0)], source), guard), delimiter=delimiter, quotechar=quote, strict=True
                    )
                    with too_big.caught():
                        rows, row_lines, row_problems = _csv_rows(reader, file, delimiter, header, keep, guard, done)
                    _add_rows(cells, rows, len(keep))
                    lines.extend(row_lines)
                    break
                got_cells, got_lines, n_lines = got
                for k, col in enumerate(got_cells):
                    cells[k].extend(col)
                lines.extend([done + x for x in got_lines] if done else got_lines)
                done += n_lines
    else:
        with too_big.caught():
            rows, lines, row_problems = _csv_rows(reader, file, delimiter, header, keep, guard)
        _add_rows(cells, rows, len(keep))
    problems += row_problems
    if whole and not lines and not problems:
        problems.append(
            Problem(
                where=file,
                message=f"the file has a header but no rows{hint}: a source without any record",
                fix="add the data rows below the header, or point the path to the file that holds them",
            )
        )

    columns: dict[str, list[Any]] = {}
    taken: set[int] = set()
    for c in wanted:
        if c in positions:
            j = keep.index(positions[c][0])
            columns[c] = cells[j] if j not in taken else list(cells[j])  # a column wanted twice: two lists
            taken.add(j)
    return columns, Locator(file, lines, "row"), problems


class _Pieces:
    """An iterator over the pieces of a text that remembers the last one handed out and how many."""

    def __init__(self, pieces: Iterable[tuple[str, int]]) -> None:
        self._it = iter(pieces)
        self.last: tuple[str, int] | None = None
        self.count = 0

    def __iter__(self) -> _Pieces:
        return self

    def __next__(self) -> tuple[str, int]:
        self.last = next(self._it)
        self.count += 1
        return self.last


def _plain(text: str, delimiter: str, quote: str = '"') -> bool:
    """Whether ``text`` holds no quote, carriage return or NUL: ``csv.reader`` reads each of its lines as
    the line split at the delimiter (a blank line as no row)."""
    return quote not in text and "\r" not in text and "\x00" not in text and delimiter not in quote + "\r\n\x00"


def _simple_piece(
    text: str, delimiter: str, ncols: int, keep: list[int], limit: int | None
) -> tuple[list[list[str]], list[int], int] | None:
    """A :func:`_plain` piece split whole: ``(cells at each position of keep, the 1-based line of each row in the
    piece, the piece's lines)``; ``None`` when a line has another number of cells than ``ncols`` or more
    than ``limit`` bytes (``csv.reader`` then reads the piece, and reports it)."""
    if not text:
        return [[] for _ in keep], [], 0
    rows = text.split("\n")
    if text.endswith("\n"):
        rows.pop()
    n = len(rows)
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=n)
    filled = lengths > 0  # a blank line is no row
    seps = np.fromiter(map(str.count, rows, repeat(delimiter)), dtype=np.int64, count=n)
    if bool(np.any(seps[filled] != ncols - 1)):
        return None
    if limit is not None:
        sizes = lengths + 1  # the line end counts (not after the last line when the text does not end on one)
        if not text.endswith("\n"):
            sizes[-1] -= 1
        if not text.isascii():
            for i in np.flatnonzero(sizes * 4 > limit).tolist():
                sizes[i] = len(rows[i].encode("utf-8", "surrogatepass")) + (sizes[i] - lengths[i])
        if bool(np.any(sizes > limit)):
            return None
    at = np.flatnonzero(filled)
    if len(at) == 0:
        return [[] for _ in keep], [], n
    if len(at) != n:
        rows = list(compress(rows, filled.tolist()))
    flat = rows if ncols == 1 else delimiter.join(rows).split(delimiter)
    return [flat[j::ncols] for j in keep], (at + 1).tolist(), n


def _add_rows(cells: list[list[Any]], rows: list[Any], kept: int) -> None:
    """The rows of :func:`_csv_rows` (a tuple of the kept cells, or the cell itself when one is kept) added
    to the kept columns ``cells``."""
    if kept == 1:
        cells[0].extend(rows)
    elif kept:
        for k, col in enumerate(zip(*rows) if rows else [()] * kept):
            cells[k].extend(col)


class _TooBigRow:
    """Turns :class:`_TooBig` from the line guard into the InputError naming the record."""

    def __init__(self, file: str, hint: str, guard: _RowGuard | None, ids: RecordIds | None) -> None:
        self.file, self.hint, self.guard, self.ids = file, hint, guard, ids

    @contextmanager
    def caught(self) -> Iterator[None]:
        try:
            yield
        except _TooBig:
            guard = self.guard
            assert guard is not None
            line = guard.start
            record_id = self.ids(guard.first) if self.ids is not None else None
            raise InputError(
                too_big_problem(self.file, line, guard.size, guard.limit, self.hint, "line", record_id, partial=True)
            ) from None


def _csv_header(
    reader: Any, file: str, delimiter: str, wanted: list[str], id_column: str, hint: str
) -> tuple[list[str] | None, int, list[Problem]]:
    """The first non-blank row of a ``csv.reader`` and its line, or ``None`` and the problem
    (an empty file, a header that cannot be parsed)."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return (
                None,
                0,
                [
                    Problem(
                        where=file,
                        message=f"the file is empty: no header row{hint}",
                        fix=f"the first line must name the columns, e.g. {id_column}"
                        + "".join(f"{delimiter}{c}" for c in wanted if c != id_column),
                    )
                ],
            )
        except csv.Error as e:
            return (
                None,
                0,
                [
                    Problem(
                        where=f"{file}:{reader.line_num}",
                        message=f"the header row cannot be parsed: {e}",
                        fix=MALFORMED_FIX,
                    )
                ],
            )
        if row:
            return row, reader.line_num, []


def _csv_header_problems(
    header: list[str],
    header_line: int,
    positions: dict[str, list[int]],
    file: str,
    delimiter: str,
    wanted: list[str],
    id_column: str,
    hint: str,
    dialect_option: bool = False,
) -> list[Problem]:
    """Wanted columns missing from the header (with a hint at another separator) or in it twice."""
    missing = [c for c in wanted if c not in positions]
    extra_fix = other_separator_fix(header, delimiter, dialect_option) if missing else ""
    problems = missing_columns(missing, header, f"{file}:{header_line}", id_column, hint, extra_fix)
    return problems + repeated_columns(positions, wanted, f"{file}:{header_line}", " in the header")


def _csv_rows(
    reader: Any,
    file: str,
    delimiter: str,
    header: list[str],
    keep: list[int],
    guard: _RowGuard | None,
    line_offset: int = 0,
) -> tuple[list[Any], list[int], list[Problem]]:
    """The data rows after the header (each with the line it starts on) and the row problems:
    rows that cannot be parsed, rows with too many and with too few cells; blank lines skipped.

    Only the cells at the positions ``keep`` are kept: a tuple of them per row (the cell itself
    when ``keep`` has one position), so memory holds the data the job reads, not every column.
    ``guard`` (the record size) is reset after every row. ``line_offset``: lines of the file
    before the reader's first line (the reader starts after rows read without it)."""
    pick: Any = itemgetter(*keep) if keep else (lambda row: ())
    sep_name = "tab" if delimiter == "\t" else repr(delimiter)
    ncols = len(header)
    rows: list[Any] = []
    lines: list[int] = []
    broken = Capped(file, "malformed rows", MALFORMED_FIX)
    too_long = Capped(
        file,
        "rows with too many cells",
        f"every row must have at most {ncols} cells ({sep_name}-separated); enclose values "
        "that contain the separator in double quotes, or add the missing column names to "
        "the header",
    )
    too_short = Capped(
        file,
        "rows with too few cells",
        f"every row must have {ncols} cells ({sep_name}-separated), one per header column; write a "
        f"missing value as an empty cell (nothing between two separators), so the cells keep their columns",
    )
    if guard is not None:
        guard.size = 0
    prev = reader.line_num + line_offset
    append_row = rows.append
    append_line = lines.append
    with gc_paused():
        while True:
            start = prev + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                if guard is not None:
                    guard.size = 0
                msg = str(e)
                if "unexpected end of data" in msg:
                    msg = "a quoted value is never closed (the quote runs to the end of the file)"
                broken.add(f"{file}:{start}", f"row starting at line {start} cannot be parsed: {msg}")
                prev = reader.line_num + line_offset
                continue
            prev = reader.line_num + line_offset
            if guard is not None:
                guard.size = 0
            n = len(row)
            if n == ncols:
                append_row(pick(row))
                append_line(start)
            elif n == 0:
                continue  # blank line: no data
            elif n < ncols:
                # never guess which columns are missing: the values may belong to other columns
                too_short.add(
                    f"{file}:{start}",
                    f"row {start} has {n} cell{'s' if n != 1 else ''} but the header has {ncols} columns "
                    f"({', '.join(header[n:][:5])}{', …' if ncols - n > 5 else ''} missing)",
                )
            else:
                extra = row[ncols:]
                too_long.add(
                    f"{file}:{start}",
                    f"row {start} has {n} cells but the header has {ncols} columns; extra values: {snippet(delimiter.join(extra))}",
                )
    return rows, lines, broken.problems() + too_long.problems() + too_short.problems()
