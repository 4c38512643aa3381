"""What the readers of data files share: values as text, problems capped per kind, where a record
is in its file, the checks of a path, and a data file opened and read as UTF-8 text in a stream.

The readers of each format (:mod:`~er_framework.io.csv_read`, :mod:`~er_framework.io.jsonl_read`,
:mod:`~er_framework.io.parquet_read`) and of a source (:mod:`~er_framework.io.source_files`) or a
user's table file (:mod:`~er_framework.io.table_file`) build on these; the input rules they follow
are in :mod:`er_framework.io.source_files`.
"""

from __future__ import annotations

import codecs
import csv
import gc
import gzip
import json
import math
import re
import stat
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from er_framework.errors import InputError, Problem, closest_column, columns_text, did_you_mean
from er_framework.io.formats import (
    FORMATS,
    MAX_ROW_PROBLEMS,
    RECORD_FIX,
    SUPPORTED_EXTENSIONS,
    mb_text,
    not_regular_problem,
    open_regular,
)
from er_framework.io.remote import local_path, open_url

__all__ = [
    "READ_CHUNK",
    "Capped",
    "Locator",
    "RecordIds",
    "and_list",
    "as_texts",
    "check_extension",
    "check_path",
    "decode_utf8",
    "detect_format",
    "gc_paused",
    "json_default",
    "missing_columns",
    "open_data_file",
    "pieces_of",
    "read_bytes",
    "repeated_columns",
    "snippet",
    "text_chunks",
    "too_big_problem",
    "utf8_problem",
    "value_text",
]


#: Bytes read from a data file at a time (after decompression).
READ_CHUNK = 1 << 20
_SNIPPET = 80


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


def snippet(text: str, limit: int = _SNIPPET) -> str:
    """``repr`` of ``text``, shortened to about ``limit`` characters."""
    if len(text) > limit:
        return repr(text[:limit]) + "…"
    return repr(text)


def value_text(value: Any) -> str | None:
    """A JSON/Parquet value as ``str`` (or ``None`` when missing).

    ``None`` and NaN -> ``None``; ``str`` unchanged; ``bool`` -> ``"true"`` /
    ``"false"``; ``int`` -> ``str``; ``float`` -> its shortest round-trip text,
    as ``json.dumps`` writes it (``0.8``, ``7.0``, ``1e+20``, ``Infinity``);
    ``list``/``dict`` -> ``json.dumps`` (non-ASCII kept); ``bytes`` -> UTF-8
    text (invalid bytes replaced); objects with ``isoformat`` (dates, times)
    -> ISO 8601; anything else -> ``str``.
    """
    if value is None:
        return None
    cls = value.__class__
    if cls is str:
        return str(value)
    if cls is float or isinstance(value, (float, np.floating)):
        f = float(value)
        if f != f:
            return None
        if f in (math.inf, -math.inf):
            return "Infinity" if f > 0 else "-Infinity"
        return float.__repr__(f)
    if cls is bool or isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=json_default)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return str(value)
    iso = getattr(value, "isoformat", None)
    if callable(iso):
        return str(iso())
    return str(value)


def as_texts(values: list[Any]) -> list[str | None]:
    """:func:`value_text` over a column, with a fast path for strings."""
    return [v if v.__class__ is str else value_text(v) for v in values]


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback: numpy scalars/arrays, paths, dates, bytes."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    iso = getattr(value, "isoformat", None)
    if callable(iso):
        return iso()
    raise TypeError(f"object of type {type(value).__name__} is not JSON serializable")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    Parsing creates millions of dicts/lists without reference cycles; the
    collector would otherwise rescan them again and again (about 2x slower).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Capped:
    """Collects row problems of one kind: the first few, then a count."""

    def __init__(self, file: str, what: str, fix: str) -> None:
        self.file = file
        self.what = what
        self.fix = fix
        self.shown: list[Problem] = []
        self.hidden = 0

    def add(self, where: str, message: str, path: str = "") -> None:
        if len(self.shown) < MAX_ROW_PROBLEMS:
            self.shown.append(Problem(where=where, path=path, message=message, fix=self.fix))
        else:
            self.hidden += 1

    def problems(self) -> list[Problem]:
        out = list(self.shown)
        if self.hidden:
            out.append(
                Problem(
                    where=self.file,
                    message=f"… and {self.hidden} more {self.what} not listed",
                    fix=self.fix,
                )
            )
        return out


class Locator:
    """Maps a record's position to where it is in the file."""

    def __init__(self, file: str, numbers: Sequence[int] | None, unit: str) -> None:
        self.file = file
        self.numbers = numbers  # line numbers (CSV/JSONL) or None (Parquet: i + 1)
        self.unit = unit  # "row" or "line"

    def number(self, i: int) -> int:
        return self.numbers[i] if self.numbers is not None else i + 1

    def where(self, i: int) -> str:
        return f"{self.file}:{self.number(i)}" if self.numbers is not None else self.file

    def path(self, i: int, column: str) -> str:
        if self.numbers is not None:
            return f"column {column!r}"
        return f"row {i + 1}, column {column!r}"


def and_list(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --------------------------------------------------------------------------
# the data file: path, opening, UTF-8 text in a stream
# --------------------------------------------------------------------------


def detect_format(path: Path) -> tuple[str, bool] | None:
    """``(format, gzip-compressed)`` chosen by the file name's extension, or ``None``."""
    name = path.name.lower()
    for ext, fmt in FORMATS.items():
        if name.endswith(ext) and len(name) > len(ext):
            return fmt
    return None


def check_path(path: Path, file: str, hint: str, yaml_where: str | None) -> list[Problem]:
    """Problems with the file itself: extension, existence, type."""
    problems = check_extension(path, file, hint)
    problems += _existence_problems(path, file, hint, yaml_where)
    return problems


def check_extension(path: Path, file: str, hint: str) -> list[Problem]:
    """The problem of a file name without a supported extension (a URL's too: its name is checked)."""
    problems: list[Problem] = []
    if detect_format(path) is None:
        suffix = "".join(path.suffixes[-2:]) or "(none)"
        supported = ", ".join(SUPPORTED_EXTENSIONS)
        if path.name.lower().endswith((".json", ".json.gz")):
            problems.append(
                Problem(
                    where=file,
                    message=f"unsupported file type {suffix!r}{hint}: a .json file holds one "
                    f"JSON document; sources must be JSON Lines (one object per line). "
                    f"Supported extensions: {supported}",
                    fix="convert a JSON array to JSON Lines, e.g. jq -c '.[]' in.json > out.jsonl",
                )
            )
        else:
            problems.append(
                Problem(
                    where=file,
                    message=f"unsupported file type {suffix!r}{hint}; supported extensions: {supported}",
                    fix="convert the file to CSV, TSV, JSON Lines or Parquet and name it with one of the supported extensions",
                )
            )
    return problems


def _existence_problems(path: Path, file: str, hint: str, yaml_where: str | None) -> list[Problem]:
    problems: list[Problem] = []
    where_fix = f" at {yaml_where}" if yaml_where else ""
    if not path.exists():
        absolute = path.absolute()
        parent = absolute.parent
        if parent.is_dir():
            try:
                siblings = [p.name for p in parent.iterdir()]
            except OSError:
                siblings = []
            suggestion = did_you_mean(path.name, siblings)
            detail = ""
        else:
            suggestion = ""
            detail = f" (the directory {str(parent)!r} does not exist either)"
        problems.append(
            Problem(
                where=file,
                message=f"no such file: {str(absolute)!r}{detail}{hint}",
                fix=f"{suggestion}check the path{where_fix}; relative paths are resolved against the job file's directory",
            )
        )
    elif path.is_dir():
        problems.append(
            Problem(
                where=file,
                message=f"{str(path.absolute())!r} is a directory, expected a data file{hint}",
                fix=f"point the path{where_fix} to a file inside it",
            )
        )
    else:
        try:
            mode = path.stat().st_mode
        except OSError:
            mode = stat.S_IFREG  # reported when the file is opened
        if not stat.S_ISREG(mode):  # a FIFO would block, a device never ends: refused before opening
            problems.append(not_regular_problem(file, mode, hint))
    return problems


def _gzip_problem(e: BaseException, file: str, hint: str) -> Problem:
    return Problem(
        where=file,
        message=f"not a valid gzip file ({e}){hint}",
        fix="re-compress the file with gzip, or remove the .gz extension if it is not compressed",
    )


def _read_problem(e: OSError, file: str, hint: str) -> Problem:
    return Problem(where=file, message=f"cannot read the file: {e.strerror or e}{hint}", fix="check the file's permissions")


def open_data_file(path: Path | str, file: str, hint: str) -> BinaryIO:
    """``path`` opened for reading; InputError if it cannot be opened or is not a regular file
    (checked on the open descriptor: a file swapped for a FIFO after the first check can
    neither block nor be read). A URL (``s3://…``, ``memory://…``: :mod:`~er_framework.io.remote`) is opened
    through fsspec; a ``file://`` URL is the local file it names."""
    local = local_path(path)
    if local is None:
        return open_url(str(path), file, hint)
    path = local
    try:
        f, mode = open_regular(path)
    except OSError as e:
        raise InputError(_read_problem(e, file, hint)) from None
    if f is None:
        raise InputError(not_regular_problem(file, mode, hint))
    return f


def read_bytes(path: Path, compressed: bool, file: str, hint: str) -> bytes:
    """The file's bytes (decompressed); raises InputError on I/O errors and for a path that is
    not a regular file. Reads the whole file: the sources are read in a stream instead
    (see :func:`~er_framework.io.source_files.read_source`)."""
    try:
        with open_data_file(path, file, hint) as raw:
            if compressed:
                with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                    return f.read()
            return raw.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise InputError(_gzip_problem(e, file, hint)) from None
    except OSError as e:
        raise InputError(_read_problem(e, file, hint)) from None


def utf8_problem(
    raw: bytes | bytearray, bad_at: int, line: int, offset: int, file: str, compressed: bool, hint: str, utf16: bool = False
) -> Problem:
    """The problem for invalid UTF-8 at ``raw[bad_at]``; ``raw`` starts on line ``line`` at
    byte ``offset`` of the (decompressed) file."""
    line += raw.count(b"\n", 0, bad_at)
    bad = bytes(raw[bad_at : bad_at + 1])
    note = "; the file starts with a UTF-16 byte order mark" if utf16 else ""
    of = " of the decompressed data" if compressed else ""
    fix = "re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 in.csv > out.csv)"
    if utf16:
        fix = "re-encode the file as UTF-8 (e.g. iconv -f utf-16 -t utf-8 in.csv > out.csv)"
    return Problem(
        where=f"{file}:{line}",
        message=f"the file is not valid UTF-8: byte {bad!r} at byte offset {offset + bad_at}{of} (line {line}){note}{hint}",
        fix=fix,
    )


def too_big_problem(
    file: str, line: int, size: int, limit: int, hint: str, unit: str, record_id: str | None, partial: bool = False
) -> Problem:
    """The problem for a record larger than ``max_record_mb`` (``partial``: reading stopped
    at ``size`` bytes, the record is larger still)."""
    of = f" (id {snippet(record_id, 40)})" if record_id else ""
    if partial:
        what = f"is larger than the limit of {mb_text(limit)} (max_record_mb): reading stopped after {mb_text(size)} of it"
    else:
        what = f"is {mb_text(size)}, larger than the limit of {mb_text(limit)} (max_record_mb)"
    return Problem(where=f"{file}:{line}", message=f"the record on {unit} {line}{of} {what}{hint}", fix=RECORD_FIX)


class RecordIds:
    """Guesses a record's id from its first characters, for the message about a record too
    large to be parsed (``None`` when it cannot be told)."""

    def __init__(self, fmt: str, id_column: str) -> None:
        self.fmt = fmt
        self.delimiter = "\t" if fmt == "tsv" else ","
        #: CSV/TSV: the id column's position, once the header is read
        self.position: int | None = None
        self.pattern = re.compile(re.escape(json.dumps(id_column)) + r'\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,40})')

    def __call__(self, prefix: bytes | str) -> str | None:
        text = prefix.decode("utf-8", "replace") if isinstance(prefix, bytes) else prefix
        text = text[:4096]
        try:
            if self.fmt == "jsonl":
                m = self.pattern.search(text)
                return value_text(json.loads(m.group(1))) if m else None
            if self.position is None:
                return None
            cells = next(csv.reader([text.split("\n", 1)[0]], delimiter=self.delimiter), [])
            # the last cell may be cut short
            return cells[self.position] if self.position < len(cells) - 1 else None
        except (ValueError, csv.Error):
            return None


def text_chunks(
    f: BinaryIO,
    file: str,
    compressed: bool,
    hint: str,
    limit: int | None,
    *,
    stop: int | None = None,
    first_line: int = 1,
    offset: int = 0,
    ids: RecordIds | None = None,
) -> Iterator[tuple[str, int]]:
    """The UTF-8 text of ``f`` in pieces of about :data:`READ_CHUNK` bytes, each ending on a line
    end (the last one may not): ``(text, number of its first line)``.

    Memory stays bounded by the chunk size plus one line: a line (the part not yet ended) longer
    than ``limit`` bytes raises InputError at once (a decompression bomb of one giant line never
    gets read whole). ``stop``: stop before the first line starting at or after that offset
    (``offset`` is the file offset of ``f``'s position). A UTF-8 byte order mark at the start of
    the file is dropped; invalid UTF-8 raises InputError naming the line and the byte offset.
    """
    carry = bytearray()
    line = first_line  # the number of carry's first line
    pos = offset  # the file offset of carry's first byte
    first = offset == 0
    utf16 = False
    while True:
        try:
            raw = f.read(READ_CHUNK)
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise InputError(_gzip_problem(e, file, hint)) from None
        except OSError as e:
            raise InputError(_read_problem(e, file, hint)) from None
        if first:
            first = False
            utf16 = raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
            if raw.startswith(codecs.BOM_UTF8):
                raw = raw[3:]
                pos += 3
        if not raw:
            break
        searched = len(carry)
        carry += raw
        nl = carry.rfind(b"\n", searched)
        if nl >= 0:
            end = nl + 1
            done = False
            if stop is not None and pos + end > stop:
                end = carry.find(b"\n", max(stop - pos - 1, 0)) + 1  # the line under way at stop
                done = True
            piece = bytes(carry[:end])
            del carry[:end]
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(utf8_problem(piece, e.start, line, pos, file, compressed, hint, utf16)) from None
            yield text, line
            if done:
                return
            line += piece.count(b"\n")
            pos += end
        if limit is not None and len(carry) > limit:
            raise InputError(
                too_big_problem(file, line, len(carry), limit, hint, "line", ids(bytes(carry[:4096])) if ids else None, partial=True)
            )
    if carry and (stop is None or pos < stop):
        try:
            text = bytes(carry).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(utf8_problem(carry, e.start, line, pos, file, compressed, hint, utf16)) from None
        yield text, line


def decode_utf8(raw: bytes, file: str, compressed: bool, hint: str) -> str:
    """UTF-8 text of ``raw`` (a leading BOM is dropped); InputError if invalid."""
    start = 3 if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[start:].decode("utf-8") if start else raw.decode("utf-8")
    except UnicodeDecodeError as e:
        offset = e.start + start
        line = raw.count(b"\n", 0, offset) + 1
        bad = raw[offset : offset + 1]
        note = ""
        if raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
            note = "; the file starts with a UTF-16 byte order mark"
        of = " of the decompressed data" if compressed else ""
        fix = "re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 in.csv > out.csv)"
        if note:
            fix = "re-encode the file as UTF-8 (e.g. iconv -f utf-16 -t utf-8 in.csv > out.csv)"
        raise InputError(
            Problem(
                where=f"{file}:{line}",
                message=f"the file is not valid UTF-8: byte {bad!r} at byte offset {offset}{of} (line {line}){note}{hint}",
                fix=fix,
            )
        ) from None


# --------------------------------------------------------------------------
# columns
# --------------------------------------------------------------------------


def missing_columns(
    missing: Iterable[str],
    present: Sequence[str],
    file: str,
    id_column: str,
    hint: str,
    extra_fix: str = "",
    container: str = "the file",
) -> list[Problem]:
    problems = []
    for col in missing:
        role = "id column" if col == id_column else "column"
        problems.append(
            Problem(
                where=file,
                path=f"column {col!r}",
                message=f"{role} {col!r} not found{hint}; columns present: {columns_text(present)}",
                fix=f"{closest_column(col, present)}use one of the columns present, or add the column to {container}{extra_fix}",
            )
        )
    return problems


def repeated_columns(positions: dict[str, list[int]], wanted: Sequence[str], where: str, detail: str) -> list[Problem]:
    """A problem for every ``wanted`` column named more than once (``positions``: the 0-based
    positions of each name)."""
    problems = []
    for c in wanted:
        if len(positions.get(c, ())) > 1:
            cols = and_list([str(p + 1) for p in positions[c]])
            problems.append(
                Problem(
                    where=where,
                    path=f"column {c!r}",
                    message=f"column {c!r} appears more than once{detail} (columns {cols})",
                    fix="rename the columns so that every name is unique",
                )
            )
    return problems


def pieces_of(text: str | Iterable[tuple[str, int]]) -> Iterable[tuple[str, int]]:
    return [(text, 1)] if isinstance(text, str) else text
