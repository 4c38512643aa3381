"""One reader of a user's table file: a truth file (``er evaluate``), a labels file (``er review``).

The format comes from the file's extension, as for a source: CSV, TSV, JSON Lines, Parquet, and the
gzip-compressed text formats (:data:`~er_framework.io.formats.SUPPORTED_EXTENSIONS`); or, for a file
that a command writes in one format whatever its name, from the caller (``fmt=``).

:func:`open_table` checks the path and reads the header: the first row of a CSV/TSV file, the keys of
the first 1,000 objects of a JSON Lines file, the schema of a Parquet file. :meth:`TableFile.read`
then reads the columns wanted, by name, with the readers of the sources
(:func:`~er_framework.io.source_files.read_raw_columns`: the same streaming, the same input rules):
every problem names the file and the line (CSV/TSV, JSON Lines) or the row (Parquet), says what is
wrong and how to fix it, and all of them come at once in one :class:`~er_framework.errors.InputError`.
Values are raw (CSV/TSV cells are text, ``""`` when empty; JSON and Parquet values are Python values);
:meth:`TableFile.texts` turns a column into text the way a source's fields are.
"""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from er_framework.errors import InputError, Problem, did_you_mean
from er_framework.io.csv_dialect import CsvDialect, decoded_chunks
from er_framework.io.data_file import Locator, as_texts, detect_format, open_data_file, text_chunks
from er_framework.io.formats import SUPPORTED_EXTENSIONS
from er_framework.io.source_files import read_raw_columns
from er_framework.io.source_header import HEADER_OBJECTS, csv_header, jsonl_keys, parquet_names

__all__ = ["HEADER_OBJECTS", "FileRole", "TableFile", "no_such_path_problem", "open_table"]


@dataclass(frozen=True)
class FileRole:
    """What a table file is to the command reading it: how its messages name it and what they advise."""

    #: the file, as messages name it ("no such truth file", "expected a truth file")
    what: str = "table file"
    #: the fix of a path that does not exist (after a "did you mean")
    path_fix: str = "check the path"
    #: the fix of a path that is a directory
    dir_fix: str = "point the path to a file inside it"
    #: the fix of an extension that names no supported format
    type_fix: str = "convert the file to CSV, TSV, JSON Lines or Parquet"
    #: the fix of a file without a header (or, JSON Lines, without an object)
    header_fix: str = "write a header row naming the columns"
    #: added to the messages of the readers (``None``: ``" (<what>)"``)
    hint: str | None = None

    @property
    def suffix(self) -> str:
        """What the readers' messages end with."""
        return f" ({self.what})" if self.hint is None else self.hint


@dataclass
class TableFile:
    """A table file opened for reading (:func:`open_table`): its format and its header."""

    path: Path
    #: the path as given, as messages name the file
    file: str
    #: ``"csv"``, ``"tsv"``, ``"jsonl"`` or ``"parquet"``
    fmt: str
    compressed: bool
    #: the column names (JSON Lines: the keys of the first :data:`HEADER_OBJECTS` objects); ``[]`` for an
    #: empty file opened with ``allow_empty``
    header: list[str]
    role: FileRole
    #: a file without rows (or without a header) is a table of no rows, not a problem
    allow_empty: bool = False
    #: a CSV/TSV file's separator, quote and encoding (``None``: the extension's, UTF-8)
    dialect: CsvDialect | None = None

    def read(self, columns: Sequence[str], id_column: str = "") -> tuple[dict[str, list[Any]], Locator]:
        """The raw values of ``columns`` (by name) and where each row is; InputError with every problem:
        columns missing (with a suggestion) or named twice, rows that cannot be parsed or have too many or
        too few cells, lines that are not JSON objects, bytes that are not UTF-8, a file without rows
        (unless ``allow_empty``). ``id_column`` is named as the id column in messages."""
        if not self.header:  # an empty file, opened with allow_empty: every column, no row
            return {c: [] for c in columns}, Locator(self.file, [], "line" if self.fmt == "jsonl" else "row")
        read = read_raw_columns(
            self.path,
            self.file,
            self.fmt,
            self.compressed,
            list(columns),
            id_column,
            self.role.suffix,
            None,
            whole=not self.allow_empty,
            dialect=self.dialect,
        )
        assert read is not None  # (None only for a byte range)
        values, loc, problems = read
        if problems:
            raise InputError(problems)
        return values, loc

    def texts(self, raw: list[Any]) -> list[str | None]:
        """A column of :meth:`read` as text, ``None`` for a missing value (an empty CSV/TSV cell, a JSON or
        Parquet null), as in a source's fields."""
        if self.fmt in ("csv", "tsv"):
            return [v or None for v in raw]
        return as_texts(raw)


def no_such_path_problem(p: Path, what: str, fix: str) -> Problem:
    """The problem for a path that does not exist: its absolute path, a file of that folder with a name
    close to it (``did you mean``) or a word that the folder does not exist either."""
    absolute = p.absolute()
    parent = absolute.parent
    suggestion = ""
    detail = ""
    if parent.is_dir():
        with contextlib.suppress(OSError):
            suggestion = did_you_mean(p.name, [q.name for q in parent.iterdir()])
    else:
        detail = f" (the directory {str(parent)!r} does not exist either)"
    return Problem(where=str(p), message=f"no such {what}: {str(absolute)!r}{detail}", fix=f"{suggestion}{fix}")


def open_table(
    path: str | Path, role: FileRole = FileRole(), *, fmt: str | None = None, allow_empty: bool = False, dialect: CsvDialect | None = None
) -> TableFile:
    """Check ``path`` and read its header; InputError for an extension of no supported format, a path
    that does not exist or is a directory (or not a regular file), a Parquet file that cannot be read,
    bytes that are not UTF-8 before the header's end, a header row that cannot be parsed, and a file
    without a header (unless ``allow_empty``).

    ``fmt``: read the file in this format (``"csv"``, ``"tsv"``, ``"jsonl"``, ``"parquet"``) whatever its
    extension (gzip-compressed when its name ends with ``.gz``), for a file a command writes in one format.
    ``dialect``: a CSV/TSV file's separator, quote and encoding (default: the extension's, UTF-8).
    """
    p = Path(path)
    file = str(path)
    detected = detect_format(p) if fmt is None else (fmt, p.name.lower().endswith(".gz"))
    problems: list[Problem] = []
    if detected is None:
        suffix = "".join(p.suffixes[-2:]) or "(none)"
        problems.append(
            Problem(
                where=file,
                message=f"unsupported file type {suffix!r} for a {role.what}; supported extensions: {', '.join(SUPPORTED_EXTENSIONS)}",
                fix=role.type_fix,
            )
        )
    if not p.exists():
        problems.append(no_such_path_problem(p, role.what, role.path_fix))
    elif p.is_dir():
        problems.append(Problem(where=file, message=f"{str(p.absolute())!r} is a directory, expected a {role.what}", fix=role.dir_fix))
    if problems:
        raise InputError(problems)
    assert detected is not None
    kind, compressed = detected
    hint = role.suffix
    if kind == "parquet":
        header = parquet_names(p, file, hint)
    else:
        with open_data_file(p, file, hint) as raw:
            f: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw  # type: ignore[assignment]
            if dialect is not None and not dialect.utf8 and kind != "jsonl":
                pieces = decoded_chunks(f, file, compressed, hint, None, dialect.encoding)
            else:
                pieces = text_chunks(f, file, compressed, hint, None)
            if kind == "jsonl":
                header = jsonl_keys(pieces)[0]
            else:
                d = dialect or CsvDialect()
                header = csv_header(pieces, d.delimiter_for(kind), file, hint, d.quote)
    if not header and not allow_empty:
        raise InputError(
            Problem(where=file, message=f"the {role.what} is empty (no header row or no JSON object){hint}", fix=role.header_fix)
        )
    return TableFile(p, file, kind, compressed, header, role, allow_empty, dialect)
