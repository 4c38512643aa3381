"""The column names of a data file, read without its data rows: what ``er validate`` checks a job's
columns against, and the header of a user's table file (:mod:`~er_framework.io.table_file`).

* CSV/TSV: the first row that is not blank, parsed with the file's dialect (separator, quote,
  encoding: :class:`~er_framework.io.csv_dialect.CsvDialect`); reading stops at its end.
* JSON Lines: the keys of the first :data:`HEADER_OBJECTS` objects, in order of first appearance
  (a key may be absent on some lines: the keys of a longer file's later lines are not known).
* Parquet: the schema's column names (pyarrow reads the footer, not the rows).
* A folder of web pages: its columns are the id column and ``html``.

Only the standard library is imported at the top (``er validate`` stays light); pyarrow only for a
Parquet file.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO

from er_framework.errors import InputError, Problem
from er_framework.io.csv_dialect import DEFAULT_DIALECT, CsvDialect, decoded_chunks
from er_framework.io.formats import FORMATS, not_regular_problem, open_regular

__all__ = [
    "HEADER_BYTES",
    "HEADER_OBJECTS",
    "MALFORMED_FIX",
    "Header",
    "csv_header",
    "file_format",
    "jsonl_keys",
    "other_separator_fix",
    "parquet_names",
    "read_header",
]

#: How many objects of a JSON Lines file name its columns (the union of their keys).
HEADER_OBJECTS = 1000

#: How to fix a row the csv module cannot parse.
MALFORMED_FIX = (
    'enclose values that contain the separator, a quote or a newline in double quotes, and double the quotes inside them ("say ""hi""")'
)

#: bytes read at a time for a header
_HEADER_CHUNK = 1 << 16
#: the most bytes (decompressed) read for a header: a file whose header (CSV/TSV: with the blank lines
#: before it; JSON Lines: its first objects) is not found in them is not known (``Header.complete`` false)
HEADER_BYTES = 8 << 20


class _Budget:
    """A binary stream that ends after ``budget`` bytes; ``cut`` tells whether there was more."""

    def __init__(self, f: BinaryIO | gzip.GzipFile, budget: int) -> None:
        self.f = f
        self.left = budget
        self.cut = False

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            self.cut = self.cut or bool(self.f.read(1))
            return b""
        data = self.f.read(min(n, self.left) if n >= 0 else self.left)
        self.left -= len(data)
        return data


@dataclass(frozen=True)
class Header:
    """The columns of a data file (:func:`read_header`)."""

    columns: list[str]
    #: ``"csv"``, ``"tsv"``, ``"jsonl"``, ``"parquet"`` or ``"pages"``
    fmt: str
    #: the columns are all there are (false: a JSON Lines file longer than its first objects, or a header
    #: not found within :data:`HEADER_BYTES`; ``columns`` are then those seen)
    complete: bool = True


def file_format(path: Path) -> tuple[str, bool] | None:
    """``(format, gzip-compressed)`` by the file name's extension (as the readers choose), or ``None``."""
    name = path.name.lower()
    for ext, fmt in FORMATS.items():
        if name.endswith(ext) and len(name) > len(ext):
            return fmt
    return None


def read_header(path: Path, id_column: str, dialect: CsvDialect | None = None, hint: str = "") -> Header:
    """The columns of the data file (or page folder) ``path``, reading no data row (JSON Lines: the first
    :data:`HEADER_OBJECTS` objects), and at most :data:`HEADER_BYTES`. InputError for a file that cannot be
    opened, is not a regular file, or whose header cannot be parsed or decoded; ValueError for a path of no
    supported format."""
    detected = file_format(path)
    if detected is None:
        if path.is_dir():
            return Header([id_column, "html"], "pages")
        raise ValueError(f"{path}: not a data file of a supported format")
    fmt, compressed = detected
    file = str(path)
    if fmt == "parquet":
        return Header(parquet_names(path, file, hint), fmt)
    try:
        f, mode = open_regular(path)
    except OSError as e:
        raise InputError(
            Problem(where=file, message=f"cannot read the file: {e.strerror or e}{hint}", fix="check the file's permissions")
        ) from None
    if f is None:
        raise InputError(not_regular_problem(file, mode, hint))
    with f:
        stream = _Budget(gzip.GzipFile(fileobj=f, mode="rb") if compressed else f, HEADER_BYTES)
        d = dialect or DEFAULT_DIALECT
        pieces = decoded_chunks(stream, file, compressed, hint, None, d.encoding, chunk=_HEADER_CHUNK)  # type: ignore[arg-type]
        if fmt == "jsonl":
            keys, complete = jsonl_keys(pieces)
            return Header(keys, fmt, complete and not stream.cut)
        columns = csv_header(pieces, d.delimiter_for(fmt), file, hint, d.quote)
        return Header(columns, fmt, not stream.cut or bool(columns))


def parquet_names(p: Path, file: str, hint: str) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        f, mode = open_regular(p)
        if f is None:
            raise InputError(not_regular_problem(file, mode, hint))
        with f:
            return list(pq.read_schema(f).names)
    except (pa.ArrowException, OSError) as e:
        raise InputError(
            Problem(
                where=file, message=f"cannot read the Parquet file: {e}{hint}", fix="check that the file is a complete, valid Parquet file"
            )
        ) from None


def csv_header(pieces: Iterable[tuple[str, int]], delimiter: str, file: str, hint: str, quote: str = '"') -> list[str]:
    """The first row that is not blank (``[]``: none), read as the CSV reader reads it."""
    lines = chain.from_iterable(io.StringIO(piece, newline="") for piece, _ in pieces)
    reader = csv.reader(lines, delimiter=delimiter, quotechar=quote, strict=True)
    try:
        for row in reader:
            if row:
                return row
    except csv.Error as e:
        raise InputError(
            Problem(where=f"{file}:{reader.line_num}", message=f"the header row cannot be parsed: {e}{hint}", fix=MALFORMED_FIX)
        ) from None
    return []


def jsonl_keys(pieces: Iterable[tuple[str, int]]) -> tuple[list[str], bool]:
    """The keys of the objects among the first :data:`HEADER_OBJECTS` JSON values, in order of first appearance,
    and whether those were every value of the file (lines that are not JSON are skipped here: the reader
    reports them)."""
    keys: dict[str, None] = {}
    seen = 0
    for piece, _ in pieces:
        for line in piece.split("\n"):
            if not line.strip():
                continue
            if seen >= HEADER_OBJECTS:
                return list(keys), False
            try:
                obj: Any = json.loads(line)
            except (ValueError, RecursionError):
                continue  # reported when the file is read
            if isinstance(obj, dict):
                keys.update(dict.fromkeys(obj))
            seen += 1
    return list(keys), True


#: the separators a header of one cell may be split by instead: (the separator, its name, as YAML writes it)
_SEPARATORS = ((";", "';'", '";"'), ("\t", "tab", '"\\t"'), ("|", "'|'", '"|"'), (",", "','", '","'))


def other_separator_fix(header: list[str], delimiter: str, dialect_option: bool) -> str:
    """A header of one cell that holds another separator: the fix naming it (``dialect_option``: a source's,
    whose ``csv: {delimiter: …}`` is named)."""
    if len(header) != 1:
        return ""
    for other, label, yaml in _SEPARATORS:
        if other != delimiter and other in header[0]:
            if dialect_option:
                return f"; the header {header[0]!r} looks {label}-separated: set csv: {{delimiter: {yaml}}} on the source"
            if delimiter == ",":
                return (
                    f"; the header {header[0]!r} looks {label}-separated: a CSV must be "
                    "comma-separated (or name the file .tsv if tab-separated)"
                )
            return f"; the header {header[0]!r} looks {label}-separated"
    return ""
