"""Reading sources and writing outputs.

Readers turn one data file into :class:`~er_framework.data.Records` of one
source; writers put the job's tables and JSON reports into an output
directory atomically.

Input rules (the same for every format):

* Every value becomes a ``str`` or ``None`` (missing). CSV/TSV: an empty cell
  is ``None``. JSON Lines: ``null`` or an absent key is ``None``; strings are
  kept as they are (``""`` stays ``""``); integers become ``str(v)``
  (``7 -> "7"``); floats become their shortest round-trip text
  (``json.dumps``: ``0.8 -> "0.8"``, ``7.0 -> "7.0"``); booleans become
  ``"true"``/``"false"``; lists and objects become their ``json.dumps`` text
  (non-ASCII kept). Parquet values are converted the same way (dates and
  timestamps as ISO 8601 text, decimals as ``str``). A float NaN is missing
  (``None``) in every format: pandas writes missing values as NaN.
* Ids must be non-empty strings or integers (integers become text); they are
  kept exactly (no stripping) and must be unique within a source.
* Nothing is dropped: every row becomes a record or a :class:`Problem`. The
  only lines skipped are blank lines (CSV, TSV and JSON Lines), which hold no
  data.
* Locations: CSV/TSV problems name ``file:LINE`` where ``LINE`` is the
  physical line on which the record starts (the header is line 1, so the
  first data row is row 2; a quoted value with embedded newlines spans
  several lines). JSON Lines problems name ``file:LINE``. Parquet rows are
  numbered from 1.
* Bad input never raises anything but :class:`~er_framework.errors.InputError`,
  which carries every problem found in one pass (row-level problems of one
  kind are capped at :data:`MAX_ROW_PROBLEMS`, followed by a count of the
  rest).

Formats are chosen by extension: ``.csv``, ``.tsv`` (the csv module's
``excel-tab`` dialect: tab separated, double quotes honoured), ``.jsonl`` /
``.ndjson``, the gzip-compressed ``.csv.gz``, ``.tsv.gz``, ``.jsonl.gz``,
``.ndjson.gz``, and ``.parquet``. A table given as an object (a pandas or
polars DataFrame, an Arrow table) is read by :mod:`er_framework.io.frames`
through the Parquet reader's code (:func:`read_arrow_columns`), with the
same rules and messages.

Hostile files (issue 18): data files are read in a stream, 1 MB at a time
(gzip decompressed as it is read), so memory holds the records kept, not the
file; a record larger than the source's ``max_record_mb`` (a JSON Lines line,
a CSV/TSV row with its quoted newlines, a Parquet row's text) is refused as
soon as it is met, naming file:line, its id when it can be told, the size and
the limit. Only regular files are read: a FIFO, a device or a socket is
refused before it is opened (and checked again on the open descriptor). A
JSON object naming a key twice and a lone UTF-16 surrogate escape
(``"\ud800"``, not a character) are problems, and a source without any record
(a CSV header without rows, an empty Parquet file) is an error.

Note: reading CSV raises the csv module's process-wide field size limit to
``2**31 - 1`` characters so that long documents can be read (the record size
guard is this module's own, per source).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import gc
import json
import json.scanner
import math
import os
import re
import shutil
import stat
import tempfile
import zlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import itemgetter
from pathlib import Path
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np

from er_framework.kernels.arrow import array_of
from er_framework.io.outputs import fsync_dir, sync_files
from er_framework.data import Records
from er_framework.errors import InputError, Problem, choices_text, did_you_mean
from er_framework.io.formats import (
    DEFAULT_MAX_RECORD_MB,
    FORMATS,
    MAX_ROW_PROBLEMS,
    RECORD_FIX,
    SUPPORTED_EXTENSIONS,
    mb_text,
    not_regular_problem,
    open_regular,
    record_limit,
)
from er_framework.io.html import read_html_dir
from er_framework.io.filetext import SpanCollector

__all__ = [
    "DEFAULT_MAX_RECORD_MB",
    "MAX_ROW_PROBLEMS",
    "SUPPORTED_EXTENSIONS",
    "Locator",
    "TableWords",
    "arrow_columns_to_read",
    "as_texts",
    "check_ids",
    "check_ids_reference",
    "decode_utf8",
    "detect_format",
    "merge_files",
    "partition_ranges",
    "read_bytes",
    "read_clusters_csv",
    "read_csv_columns",
    "read_jsonl_columns",
    "read_output_table",
    "read_pairs_csv",
    "read_arrow_columns",
    "read_parquet_columns",
    "read_source",
    "read_source_with_stats",
    "records_from_columns",
    "split_lines",
    "write_outputs",
    "write_files",
]

_JSONL_CHUNK = 65536
#: Bytes read from a data file at a time (after decompression).
_READ_CHUNK = 1 << 20
_SNIPPET = 80
_TMP_PREFIX = ".er-tmp-"


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


def _snippet(text: str, limit: int = _SNIPPET) -> str:
    """``repr`` of ``text``, shortened to about ``limit`` characters."""
    if len(text) > limit:
        return repr(text[:limit]) + "…"
    return repr(text)


def _text(value: Any) -> str | None:
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
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return str(value)
    iso = getattr(value, "isoformat", None)
    if callable(iso):
        return str(iso())
    return str(value)


def as_texts(values: list[Any]) -> list[str | None]:
    """:func:`_text` over a column, with a fast path for strings."""
    return [v if v.__class__ is str else _text(v) for v in values]


def _json_default(value: Any) -> Any:
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
def _gc_paused() -> Iterator[None]:
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


class _Capped:
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


def _and_list(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --------------------------------------------------------------------------
# reading sources
# --------------------------------------------------------------------------


def detect_format(path: Path) -> tuple[str, bool] | None:
    """``(format, gzip-compressed)`` chosen by the file name's extension, or ``None``."""
    name = path.name.lower()
    for ext, fmt in FORMATS.items():
        if name.endswith(ext) and len(name) > len(ext):
            return fmt
    return None


def _check_path(path: Path, file: str, hint: str, yaml_where: str | None) -> list[Problem]:
    """Problems with the file itself: extension, existence, type."""
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
                    message=f"unsupported file type {suffix!r}{hint}; "
                    f"supported extensions: {supported}",
                    fix="convert the file to CSV, TSV, JSON Lines or Parquet and name it "
                    "with one of the supported extensions",
                )
            )
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
                fix=f"{suggestion}check the path{where_fix}; relative paths are resolved "
                "against the job file's directory",
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
    return Problem(where=file, message=f"cannot read the file: {e.strerror or e}{hint}",
                   fix="check the file's permissions")


def _open_data_file(path: Path, file: str, hint: str) -> BinaryIO:
    """``path`` opened for reading; InputError if it cannot be opened or is not a regular file
    (checked on the open descriptor: a file swapped for a FIFO after the first check can
    neither block nor be read)."""
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
    (see :func:`read_source`)."""
    try:
        with _open_data_file(path, file, hint) as raw:
            if compressed:
                with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                    return f.read()
            return raw.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise InputError(_gzip_problem(e, file, hint)) from None
    except OSError as e:
        raise InputError(_read_problem(e, file, hint)) from None


def partition_ranges(path: str | Path, partition_bytes: int) -> list[tuple[int, int]] | None:
    """Byte ranges splitting an uncompressed JSONL/CSV/TSV file into partitions of about
    ``partition_bytes``; ``None`` for files that cannot be split (gzip, Parquet, page folders).

    :func:`read_source` with ``byte_range`` reads the lines *starting* in a
    range, so JSON Lines ranges need not fall on line ends and the partitions
    hold every line exactly once. CSV/TSV ranges are cut only where a record
    starts: after a newline that is outside every quoted value (RFC 4180
    escapes a quote by doubling it, so a newline is inside a quoted value iff
    an odd number of ``"`` precede it; found with one streaming count over the
    file). A file with a ``"`` inside an unquoted value (``5"6``, which the
    csv module accepts but which breaks the parity rule) is cut by parsing it
    with the csv module instead (slower, same cuts for valid files).
    """
    p = Path(path)
    detected = detect_format(p)
    if detected is None or detected[1] or detected[0] == "parquet" or not p.is_file():
        return None
    size = p.stat().st_size
    step = max(1, int(partition_bytes))
    if detected[0] == "jsonl":
        bounds = list(range(0, size, step)) + [size]
    else:
        delimiter = b"\t" if detected[0] == "tsv" else b","
        cuts = _csv_cuts_by_parity(p, step, delimiter)
        if cuts is None:
            cuts = _csv_cuts_by_parsing(p, step, delimiter.decode())
        bounds = [0] + [c for c in cuts if 0 < c < size] + [size]
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:])] or [(0, 0)]


def _next_target(cut: int, step: int) -> int:
    return (cut // step + 1) * step


def _csv_cuts_by_parity(p: Path, step: int, delimiter: bytes) -> list[int] | None:
    """Record starts at or after every multiple of ``step`` (quote parity); ``None`` if a quote
    stands inside an unquoted value (neither neighbour a quote, the separator or a line end)."""
    others = b'[^"\r\n' + re.escape(delimiter) + b"]"
    stray = re.compile(others + b'"' + others)
    cuts: list[int] = []
    target = step
    parity = 0  # number of quotes before the chunk, mod 2
    offset = 0  # file offset of the chunk
    tail = b""
    with open(p, "rb") as f:
        while True:
            chunk = f.read(_READ_CHUNK)
            if not chunk:
                return cuts
            if b'"' in chunk and stray.search(tail + chunk if tail else chunk):
                return None
            counted = 0  # quotes counted up to this position of the chunk
            k = max(target - offset - 1, 0)
            while k < len(chunk):
                nl = chunk.find(b"\n", k)
                if nl < 0:
                    break
                parity ^= chunk.count(b'"', counted, nl) & 1
                counted = nl
                if parity == 0:  # a record ends here
                    cut = offset + nl + 1
                    cuts.append(cut)
                    target = _next_target(cut, step)
                    k = max(target - offset - 1, nl + 1)
                else:
                    k = nl + 1
            parity ^= chunk.count(b'"', counted) & 1
            offset += len(chunk)
            tail = chunk[-1:]


def _csv_cuts_by_parsing(p: Path, step: int, delimiter: str) -> list[int]:
    """Record starts at or after every multiple of ``step``, found by the csv module."""
    cuts: list[int] = []
    target = step
    pos = [0]

    def lines() -> Iterator[str]:
        with open(p, "rb") as f:
            for raw in f:
                pos[0] += len(raw)
                yield raw.decode("utf-8", "replace")

    reader = csv.reader(lines(), delimiter=delimiter)
    while True:
        try:
            next(reader)
        except StopIteration:
            return cuts
        except csv.Error:
            pass  # the reader reports it; cut after it as after any row
        if pos[0] >= target:
            cuts.append(pos[0])
            target = _next_target(pos[0], step)


def _range_start(f: BinaryIO, start: int, header: bool, limit: int | None, file: str, hint: str) -> bytes:
    """Move ``f`` to the first line starting at or after ``start``; return the file's header
    record (its first line, and the next ones while a quoted value is open) when ``header``
    and ``start > 0``, else ``b""``."""
    head = b""
    if header and start > 0:
        cap = -1 if limit is None else limit + 1
        head = f.readline(cap)
        while head.count(b'"') % 2:
            more = f.readline(cap)
            if not more:
                break
            head += more
            if limit is not None and len(head) > limit:
                break
        if limit is not None and len(head) > limit:
            raise InputError(_too_big_problem(file, 1, len(head), limit, hint, "line", None, partial=True))
    if start > 0:
        f.seek(start - 1)
        if f.read(1) != b"\n":
            while True:  # the line under way belongs to the previous range
                rest = f.readline(_READ_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
    return head


def _utf8_problem(raw: bytes | bytearray, bad_at: int, line: int, offset: int, file: str, compressed: bool,
                  hint: str, utf16: bool = False) -> Problem:
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
        message=f"the file is not valid UTF-8: byte {bad!r} at byte offset {offset + bad_at}{of} "
        f"(line {line}){note}{hint}",
        fix=fix,
    )


def _too_big_problem(file: str, line: int, size: int, limit: int, hint: str, unit: str,
                     record_id: str | None, partial: bool = False) -> Problem:
    """The problem for a record larger than ``max_record_mb`` (``partial``: reading stopped
    at ``size`` bytes, the record is larger still)."""
    of = f" (id {_snippet(record_id, 40)})" if record_id else ""
    if partial:
        what = (f"is larger than the limit of {mb_text(limit)} (max_record_mb): reading stopped after "
                f"{mb_text(size)} of it")
    else:
        what = f"is {mb_text(size)}, larger than the limit of {mb_text(limit)} (max_record_mb)"
    return Problem(where=f"{file}:{line}", message=f"the record on {unit} {line}{of} {what}{hint}", fix=RECORD_FIX)


class _RecordIds:
    """Guesses a record's id from its first characters, for the message about a record too
    large to be parsed (``None`` when it cannot be told)."""

    def __init__(self, fmt: str, id_column: str) -> None:
        self.fmt = fmt
        self.delimiter = "\t" if fmt == "tsv" else ","
        #: CSV/TSV: the id column's position, once the header is read
        self.position: int | None = None
        self.pattern = re.compile(
            re.escape(json.dumps(id_column)) + r'\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,40})'
        )

    def __call__(self, prefix: bytes | str) -> str | None:
        text = prefix.decode("utf-8", "replace") if isinstance(prefix, bytes) else prefix
        text = text[:4096]
        try:
            if self.fmt == "jsonl":
                m = self.pattern.search(text)
                return _text(json.loads(m.group(1))) if m else None
            if self.position is None:
                return None
            cells = next(csv.reader([text.split("\n", 1)[0]], delimiter=self.delimiter), [])
            # the last cell may be cut short
            return cells[self.position] if self.position < len(cells) - 1 else None
        except (ValueError, csv.Error):
            return None


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _text_chunks(
    f: BinaryIO, file: str, compressed: bool, hint: str, limit: int | None,
    *, stop: int | None = None, first_line: int = 1, offset: int = 0, ids: _RecordIds | None = None,
) -> Iterator[tuple[str, int]]:
    """The UTF-8 text of ``f`` in pieces of about :data:`_READ_CHUNK` bytes, each ending on a line
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
            raw = f.read(_READ_CHUNK)
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
                raise InputError(_utf8_problem(piece, e.start, line, pos, file, compressed, hint, utf16)) from None
            yield text, line
            if done:
                return
            line += piece.count(b"\n")
            pos += end
        if limit is not None and len(carry) > limit:
            raise InputError(_too_big_problem(file, line, len(carry), limit, hint, "line",
                                              ids(bytes(carry[:4096])) if ids else None, partial=True))
    if carry and (stop is None or pos < stop):
        try:
            text = bytes(carry).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(_utf8_problem(carry, e.start, line, pos, file, compressed, hint, utf16)) from None
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
                message=f"the file is not valid UTF-8: byte {bad!r} at byte offset {offset}{of} "
                f"(line {line}){note}{hint}",
                fix=fix,
            )
        ) from None


def _missing_columns(
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
                message=f"{role} {col!r} not found{hint}; "
                f"columns present: {choices_text(present)}",
                fix=f"{did_you_mean(col, present)}use one of the columns present, or add the "
                f"column to {container}{extra_fix}",
            )
        )
    return problems


#: How to fix a row the csv module cannot parse.
_MALFORMED_FIX = (
    'enclose values that contain the separator, a quote or a newline in double quotes, '
    'and double the quotes inside them ("say ""hi""")'
)


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


def _pieces(text: str | Iterable[tuple[str, int]]) -> Iterable[tuple[str, int]]:
    return [(text, 1)] if isinstance(text, str) else text


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
    text: str | Iterable[tuple[str, int]], file: str, delimiter: str, wanted: list[str], id_column: str, hint: str,
    *, max_record_bytes: int | None = None, whole: bool = True, ids: _RecordIds | None = None,
    split_whole: bool = True,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw string columns of a CSV/TSV text (empty cells still ``""``).

    ``text``: the whole text, or pieces ``(text, first line)`` ending on line ends (as
    :func:`_text_chunks` yields them; read one at a time). A record (row) larger than
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
    source = _Pieces(_pieces(text))
    reader = csv.reader(_guarded_lines(source, guard), delimiter=delimiter, strict=True)
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
    problems += _csv_header_problems(header, header_line, positions, file, delimiter, wanted, id_column, hint)
    keep = [positions[c][0] for c in wanted if c in positions]
    cells: list[list[Any]] = [[] for _ in keep]
    lines: list[int] = []
    row_problems: list[Problem] = []
    first = source.last[0] if source.last is not None else ""
    if split_whole and source.count == 1 and _plain(first, delimiter):  # the header ended in the first piece
        done = header_line  # lines read so far
        rest = first.split("\n", done)[done] if first.count("\n") >= done else ""
        with _gc_paused():
            for piece in chain([rest], (p for p, _ in source)):
                got = _simple_piece(piece, delimiter, len(header), keep, max_record_bytes) if _plain(
                    piece, delimiter) else None
                if got is None:  # csv.reader from this piece on
                    if guard is not None:
                        guard.lines = done
                    reader = csv.reader(_guarded_lines(chain([(piece, 0)], source), guard), delimiter=delimiter,
                                        strict=True)
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

    def __iter__(self) -> "_Pieces":
        return self

    def __next__(self) -> tuple[str, int]:
        self.last = next(self._it)
        self.count += 1
        return self.last


def _plain(text: str, delimiter: str) -> bool:
    """Whether ``text`` holds no quote, carriage return or NUL: ``csv.reader`` reads each of its lines as
    the line split at the delimiter (a blank line as no row)."""
    return '"' not in text and "\r" not in text and "\x00" not in text and delimiter not in '"\r\n\x00'


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

    def __init__(self, file: str, hint: str, guard: _RowGuard | None, ids: _RecordIds | None) -> None:
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
                _too_big_problem(self.file, line, guard.size, guard.limit, self.hint, "line", record_id, partial=True)
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
            return None, 0, [
                Problem(
                    where=file,
                    message=f"the file is empty: no header row{hint}",
                    fix=f"the first line must name the columns, e.g. {id_column}"
                    + "".join(f"{delimiter}{c}" for c in wanted if c != id_column),
                )
            ]
        except csv.Error as e:
            return None, 0, [
                Problem(
                    where=f"{file}:{reader.line_num}",
                    message=f"the header row cannot be parsed: {e}",
                    fix=_MALFORMED_FIX,
                )
            ]
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
) -> list[Problem]:
    """Wanted columns missing from the header (with a hint at another separator) or in it twice."""
    extra_fix = ""
    if len(header) == 1 and delimiter == ",":
        for other, label in ((";", "';'"), ("\t", "tab"), ("|", "'|'")):
            if other in header[0]:
                extra_fix = (
                    f"; the header {header[0]!r} looks {label}-separated: a CSV must be "
                    "comma-separated (or name the file .tsv if tab-separated)"
                )
                break
    missing = [c for c in wanted if c not in positions]
    problems = _missing_columns(missing, header, f"{file}:{header_line}", id_column, hint, extra_fix)
    return problems + _repeated_columns(positions, wanted, f"{file}:{header_line}", " in the header")


def _repeated_columns(positions: dict[str, list[int]], wanted: Sequence[str], where: str, detail: str) -> list[Problem]:
    """A problem for every ``wanted`` column named more than once (``positions``: the 0-based
    positions of each name)."""
    problems = []
    for c in wanted:
        if len(positions.get(c, ())) > 1:
            cols = _and_list([str(p + 1) for p in positions[c]])
            problems.append(
                Problem(
                    where=where,
                    path=f"column {c!r}",
                    message=f"column {c!r} appears more than once{detail} (columns {cols})",
                    fix="rename the columns so that every name is unique",
                )
            )
    return problems


def _csv_rows(
    reader: Any, file: str, delimiter: str, header: list[str], keep: list[int], guard: _RowGuard | None,
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
    broken = _Capped(file, "malformed rows", _MALFORMED_FIX)
    too_long = _Capped(
        file,
        "rows with too many cells",
        f"every row must have at most {ncols} cells ({sep_name}-separated); enclose values "
        "that contain the separator in double quotes, or add the missing column names to "
        "the header",
    )
    too_short = _Capped(
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
    with _gc_paused():
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
                    f"row {start} has {n} cells but the header has {ncols} columns; "
                    f"extra values: {_snippet(delimiter.join(extra))}",
                )
    return rows, lines, broken.problems() + too_long.problems() + too_short.problems()


def split_lines(text: str) -> Iterator[str]:
    """``text.split("\n")`` one line at a time: no list of every line beside the text
    (a 4 GB file would need 4 GB more)."""
    start = 0
    find = text.find
    while True:
        end = find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


class _DuplicateKey(Exception):
    """Raised by :func:`_unique_keys` for a JSON object that names a key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of the JSON Lines reader: a dict, or :class:`_DuplicateKey`."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


#: A ``\uD800``-``\uDFFF`` escape (high surrogates: ``D800``-``DBFF``).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate_escape(line: str) -> str:
    """The first surrogate escape of ``line`` that is not half of a pair (for the message)."""
    pending = ""
    end = -1
    for m in _SURROGATE_ESCAPE.finditer(line):
        text = m.group()
        high = text[3].lower() in "89ab"
        if pending:
            if not high and m.start() == end:
                pending = ""
                continue
            return pending
        if not high:
            return text
        pending, end = text, m.end()
    return pending


def _has_lone_surrogate(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_jsonl_columns(
    text: str | Iterable[tuple[str, int]], file: str, wanted: list[str], id_column: str, hint: str,
    *, max_record_bytes: int | None = None, whole: bool = True, ids: _RecordIds | None = None,
    spans: SpanCollector | None = None,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw value columns of a JSON Lines text (absent keys are ``None``).

    ``spans``: the pieces come through :meth:`SpanCollector.pieces` of this collector, which records
    where each record's values of its fields lie in the file and drops them (their columns hold
    ``None``; :func:`read_source` with ``file_backed``).

    ``text``: the whole text, or pieces ``(text, first line)`` ending on line ends (as
    :func:`_text_chunks` yields them; read one at a time). A line larger than
    ``max_record_bytes`` raises InputError. ``whole``: the text is a whole file, so a file
    without any JSON line is a problem (not one partition of a file). Besides lines that are
    not JSON objects, an object naming a key twice (JSON readers keep one of the values, at
    random for the user) and a lone UTF-16 surrogate escape (``"\\ud800"``: not a character,
    it cannot be written as UTF-8) are problems.
    """
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    decode = decoder.decode
    scan = json.scanner.make_scanner(decoder)  # type: ignore[arg-type]  # the C scanner
    decode_error = json.JSONDecodeError
    example = "{" + ", ".join(f'"{c}": "…"' for c in wanted) + "}"
    one_object = f"each line must hold one JSON object, e.g. {example}"
    bad_json = _Capped(file, "lines that are not valid JSON", one_object)
    not_object = _Capped(file, "lines that are not JSON objects", one_object)
    duplicated = _Capped(file, "lines with a key given twice",
                         "name every key once per object: rename or merge the repeated key")
    surrogates = _Capped(
        file, "lines with a lone surrogate",
        "a \\ud800-\\udfff escape must be half of a surrogate pair (e.g. \\ud83d\\ude00 for 😀); "
        "write the character itself in UTF-8, or replace the lone escape with \\ufffd",
    )
    columns: dict[str, list[Any]] = {c: [] for c in wanted}
    keys: set[str] = set()
    lines: list[int] = []
    chunk: list[dict[str, Any]] = []
    nonblank = 0
    limit = max_record_bytes
    quarter = -1 if limit is None else limit // 4  # a line of fewer characters fits in any case

    def flush() -> None:
        if not chunk:
            return
        keys.update(*chunk)
        for c in wanted:
            columns[c].extend([o.get(c) for o in chunk])
        chunk.clear()

    kinds = {list: "an array", str: "a string", int: "a number", float: "a number",
             bool: "a boolean", type(None): "null"}
    with _gc_paused():
        for piece, first in _pieces(text):
            if piece.isspace():
                continue  # blank lines only: no data
            at = spans.offset if spans is not None else 0  # byte offset of the next line (file-backed)
            ascii_piece = spans.ascii if spans is not None else True
            for number, line in enumerate(split_lines(piece), first):
                line_at = at
                if spans is not None:
                    at += (len(line) if ascii_piece else _utf8_len(line)) + 1
                if quarter >= 0 and len(line) > quarter and limit is not None:
                    size = _utf8_len(line)
                    if size > limit:
                        raise InputError(_too_big_problem(file, number, size, limit, hint, "line",
                                                          ids(line) if ids else None))
                # Fast path: the C scanner on a line without leading whitespace;
                # anything unusual goes through the full decoder for its message.
                try:
                    try:
                        obj, end = scan(line, 0)
                        if end != len(line) and not line[end:].isspace():
                            raise StopIteration
                    except (StopIteration, decode_error):
                        if not line or line.isspace():
                            continue  # blank line: no data
                        obj = decode(line)
                except decode_error as e:
                    nonblank += 1
                    bad_json.add(
                        f"{file}:{number}",
                        f"line {number} is not valid JSON: {e.msg} (column {e.colno}): "
                        f"{_snippet(line.strip())}",
                    )
                    continue
                except RecursionError:
                    nonblank += 1
                    bad_json.add(f"{file}:{number}", f"line {number} is nested too deeply to parse")
                    continue
                except _DuplicateKey as e:
                    nonblank += 1
                    duplicated.add(f"{file}:{number}", _duplicate_message(number, e, line))
                    continue
                nonblank += 1
                if obj.__class__ is not dict:
                    kind = kinds.get(type(obj), type(obj).__name__)
                    not_object.add(
                        f"{file}:{number}",
                        f"line {number} holds {kind}, expected a JSON object: {_snippet(line.strip())}",
                    )
                    continue
                if ("\\ud" in line or "\\uD" in line) and _has_lone_surrogate(obj):
                    escape = _lone_surrogate_escape(line)
                    escape = f" {escape}" if escape else ""
                    surrogates.add(
                        f"{file}:{number}",
                        f"line {number} holds a lone UTF-16 surrogate{escape} (half of an escaped pair, "
                        f"not a character; it cannot be written as UTF-8): {_snippet(line.strip())}",
                    )
                    continue
                chunk.append(obj)
                lines.append(number)
                if spans is not None:
                    spans.add(obj, line, line_at, ascii_piece)
                if len(chunk) >= _JSONL_CHUNK:
                    flush()
    flush()

    problems: list[Problem] = []
    if nonblank == 0:
        if not whole:
            return {c: [] for c in wanted}, Locator(file, [], "line"), problems
        problems.append(
            Problem(
                where=file,
                message=f"the file is empty: no JSON lines{hint}",
                fix=f"write one JSON object per line, e.g. {example}",
            )
        )
        return {}, Locator(file, [], "line"), problems
    problems += bad_json.problems() + not_object.problems() + duplicated.problems() + surrogates.problems()
    if lines:
        missing = [c for c in wanted if c not in keys]
        problems += _missing_columns(
            missing, sorted(keys), file, id_column, hint, " (the key is absent on every line)"
        )
        for c in missing:
            del columns[c]
    else:
        columns = {}
    return columns, Locator(file, lines, "line"), problems


def _duplicate_message(number: int, e: _DuplicateKey, line: str) -> str:
    return (f"line {number}: the key {e.args[0]!r} appears twice in one object (a JSON reader keeps "
            f"only one of its values): {_snippet(line.strip())}")


def read_parquet_columns(
    path: Path, file: str, wanted: list[str], id_column: str, hint: str,
    *, max_record_bytes: int | None = None, whole: bool = True,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw value columns of a Parquet file (Python objects from pyarrow).

    Only the ``wanted`` columns are read; the rest is :func:`read_arrow_columns`: a row whose
    text and binary values add up to more than ``max_record_bytes`` raises InputError, a file
    without rows is a problem when ``whole``, and so is a string value that is not valid UTF-8.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with _open_data_file(path, file, hint) as f:
            present = list(pq.read_schema(f).names)
            f.seek(0)
            table = pq.read_table(f, columns=arrow_columns_to_read(present, wanted))
    except (pa.ArrowException, OSError) as e:
        raise InputError(
            Problem(
                where=file,
                message=f"cannot read the Parquet file: {e}{hint}",
                fix="check that the file is a complete, valid Parquet file "
                "(e.g. pyarrow.parquet.read_table or parquet-tools can open it)",
            )
        ) from None
    return read_arrow_columns(table, present, file, wanted, id_column, hint,
                              max_record_bytes=max_record_bytes, whole=whole)


@dataclass(frozen=True)
class TableWords:
    """How the messages of :func:`read_arrow_columns` name the table read: a Parquet file (the
    default) or a table given as an object (a DataFrame)."""

    #: the table, as the subject of "… has no rows"
    table: str = "the Parquet file"
    #: where a missing column is to be added
    container: str = "the file"
    #: how to give a table that holds records
    fill: str = "point the path to the file that holds the data"


def arrow_columns_to_read(present: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The ``wanted`` columns that a table whose columns are ``present`` names exactly once
    (the others are problems of :func:`read_arrow_columns`)."""
    return [c for c in wanted if present.count(c) == 1]


def read_arrow_columns(
    table: Any, present: Sequence[str], file: str, wanted: list[str], id_column: str, hint: str,
    *, max_record_bytes: int | None = None, whole: bool = True, words: TableWords = TableWords(),
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw value columns (Python objects) of an Arrow table: the reader of Parquet files and of
    tables given as objects.

    ``present``: the names of every column of the source (a name may repeat); ``table`` holds
    at least the columns :func:`arrow_columns_to_read` names. Problems: ``wanted`` columns
    missing (with a suggestion) or present more than once, a table without rows when
    ``whole``, binary values that are not UTF-8 text, string values that are not valid UTF-8
    (naming the row). Dictionary columns are read as their values, string and binary views as
    plain strings and binaries. A row whose text and binary values add up to more than
    ``max_record_bytes`` raises InputError. Rows are numbered from 1.
    """
    import pyarrow as pa

    missing = [c for c in wanted if c not in present]
    problems = _missing_columns(missing, present, file, id_column, hint, container=words.container)
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(present):
        positions.setdefault(name, []).append(i)
    problems += _repeated_columns(positions, wanted, file, hint)
    read = arrow_columns_to_read(present, wanted)
    if whole and table.num_rows == 0 and not problems:
        problems.append(Problem(where=file, message=f"{words.table} has no rows{hint}: a source without any record",
                                fix=words.fill))
    arrow: dict[str, Any] = {}
    for c in read:
        col = _plain_column(table.column(c))
        t = col.type
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            try:
                col = col.cast(pa.large_string())
            except pa.ArrowInvalid:
                problems.append(
                    Problem(
                        where=file,
                        path=f"column {c!r}",
                        message=f"column {c!r} holds binary values that are not valid UTF-8 text",
                        fix="store text columns as UTF-8 strings",
                    )
                )
                continue
        arrow[c] = col
    if max_record_bytes is not None:
        _arrow_row_sizes(arrow, file, hint, max_record_bytes)
    columns: dict[str, list[Any]] = {}
    for c, col in arrow.items():
        try:
            columns[c] = col.to_pylist()
        except UnicodeDecodeError:  # a string column written without UTF-8 validation
            row = _first_bad_utf8(col)
            problems.append(
                Problem(
                    where=file,
                    path=f"row {row}, column {c!r}",
                    message=f"column {c!r} holds a string that is not valid UTF-8 (row {row}){hint}",
                    fix="store text columns as valid UTF-8 strings",
                )
            )
    return columns, Locator(file, None, "row"), problems


def _plain_column(col: Any) -> Any:
    """An Arrow column with dictionaries decoded and string/binary views made plain (large)
    strings/binaries: the types the size check and the UTF-8 check know."""
    import pyarrow as pa

    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    view = str(t)  # pa.types.is_string_view needs pyarrow >= 16
    if view == "string_view":
        col = col.cast(pa.large_string())
    elif view == "binary_view":
        col = col.cast(pa.large_binary())
    return col


def _arrow_row_sizes(arrow: dict[str, Any], file: str, hint: str, limit: int) -> None:
    """InputError if a row's text/binary values add up to more than ``limit`` bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total: Any = None
    for col in arrow.values():
        t = col.type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t)):
            continue
        sizes = pc.fill_null(pc.cast(pc.binary_length(col), pa.int64()), 0)
        total = sizes if total is None else pc.add(total, sizes)
    if total is None or len(total) == 0:
        return
    biggest = pc.max(total).as_py()
    if biggest is not None and biggest > limit:
        row = int(pc.index(total, biggest).as_py())
        raise InputError(_too_big_problem(file, row + 1, int(biggest), limit, hint, "row", None))


def _first_bad_utf8(col: Any) -> int:
    """The 1-based row of the first value of a string column that is not valid UTF-8."""
    import pyarrow as pa

    for i, value in enumerate(col.cast(pa.large_binary()).to_pylist()):
        if value is not None:
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                return i + 1
    return 0


def check_ids(
    raw: list[Any], loc: Locator, file: str, id_column: str, unique: bool = True
) -> tuple[list[str], list[bool], list[Problem]]:
    """Ids as text, a per-row ``ok`` flag, and the id problems (duplicates only when ``unique``).

    Ids that are all non-blank strings (every CSV with its ids, most JSON) are checked by whole-list
    passes; any other column goes value by value (:func:`check_ids_reference`, the same answer)."""
    if raw.__class__ is list and set(map(type, raw)) == {str} and all(raw) and not any(map(str.isspace, raw)):
        ids = list(raw)
        if not unique or len(set(ids)) == len(ids):
            return ids, [True] * len(ids), []
    return check_ids_reference(raw, loc, file, id_column, unique)


def check_ids_reference(
    raw: list[Any], loc: Locator, file: str, id_column: str, unique: bool = True
) -> tuple[list[str], list[bool], list[Problem]]:
    """:func:`check_ids` value by value: the tests' oracle, and the path of columns with missing, blank or
    non-string ids (and of duplicated ids, whose problem it writes)."""
    ids: list[str] = []
    ok: list[bool] = []
    empty = _Capped(
        file,
        "rows with a missing id",
        f"every record needs a non-empty id in column {id_column!r}",
    )
    bad_type = _Capped(
        file,
        "rows with an id that is not a string or integer",
        "write ids as strings or integers",
    )
    for i, v in enumerate(raw):
        cls = v.__class__
        if cls is str:
            if v and not v.isspace():
                ids.append(v)
                ok.append(True)
                continue
            what = "empty" if not v else f"blank ({v!r})"
            empty.add(loc.where(i), f"{loc.unit} {loc.number(i)}: the id is {what}", loc.path(i, id_column))
        elif cls is int:
            ids.append(str(v))
            ok.append(True)
            continue
        elif v is None:
            empty.add(loc.where(i), f"{loc.unit} {loc.number(i)}: the id is missing", loc.path(i, id_column))
        elif isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            ids.append(str(int(v)))
            ok.append(True)
            continue
        else:
            shown = repr(v) if isinstance(v, float) else json.dumps(v, default=str, ensure_ascii=False)
            bad_type.add(
                loc.where(i),
                f"{loc.unit} {loc.number(i)}: the id {_snippet(shown)} is a "
                f"{type(v).__name__}, expected a string or an integer",
                loc.path(i, id_column),
            )
        ids.append("")
        ok.append(False)
    problems = empty.problems() + bad_type.problems()

    valid = [x for x, good in zip(ids, ok) if good]
    if unique and len(set(valid)) != len(valid):
        counts = Counter(valid)
        dup_rows: dict[str, list[int]] = {}
        for i, (x, good) in enumerate(zip(ids, ok)):
            if good and counts[x] > 1:
                dup_rows.setdefault(x, []).append(loc.number(i))
        items = list(dup_rows.items())
        parts = []
        for value, numbers in items[:MAX_ROW_PROBLEMS]:
            listed = [str(n) for n in numbers[:5]]
            if len(numbers) > 5:
                listed.append(f"{len(numbers) - 5} more")
            parts.append(f"id {value!r} appears on {loc.unit}s {_and_list(listed)}")
        rest = len(items) - MAX_ROW_PROBLEMS
        extra_rows = sum(len(n) for _, n in items[MAX_ROW_PROBLEMS:])
        tail = f"; and {rest} further duplicated ids ({extra_rows} {loc.unit}s)" if rest > 0 else ""
        problems.append(
            Problem(
                where=file,
                path=f"column {id_column!r}",
                message=f"{len(items)} duplicated id{'s' if len(items) != 1 else ''}: "
                + "; ".join(parts)
                + tail,
                fix="ids must be unique within a source: give every record its own id, "
                "or remove the repeated rows",
            )
        )
    return ids, ok, problems


def read_source(
    path: str | Path,
    *,
    id_column: str,
    fields: Sequence[str],
    name: str,
    where: str | None = None,
    layout: str = "wide",
    byte_range: tuple[int, int] | None = None,
    max_record_mb: float | None = DEFAULT_MAX_RECORD_MB,
    follow_symlinks: bool = False,
    file_backed: bool = False,
) -> Records:
    """Read one source file into :class:`Records` of a single source.

    ``byte_range=(start, end)`` reads one partition of an uncompressed
    JSONL/CSV/TSV file (see :func:`partition_ranges`): the lines whose
    first byte lies in ``[start, end)`` (CSV partitions get the header row
    of the file); line numbers in messages are counted from ``start``.

    ``layout="long"``: rows sharing an id form ONE record (e.g. minutiae as
    CSV rows ``id,x,y``); each field then holds the JSON list of its values on
    those rows, in file order (missing values as ``null``), and records come in
    order of each id's first row. ``"wide"`` (default): one row, one record,
    ids unique.

    Parameters
    ----------
    path:
        The data file; its format comes from the extension (see
        :data:`SUPPORTED_EXTENSIONS`). A folder (whose name has none of
        those extensions) is a folder of web pages: one record per
        ``.html``/``.htm`` file, with the columns ``id_column`` and ``html``
        (see :func:`er_framework.io.html.read_html_dir`).
    id_column:
        The column holding each record's id (unique, non-empty; strings or
        integers, returned as ``str``).
    fields:
        The columns to keep, in this order; values are ``str`` or ``None``.
    name:
        The source's name (``source_names == [name]``).
    where:
        Optional location of the source in the job file (e.g.
        ``"job.yaml: sources[0].path"``), mentioned in file-level messages.
    max_record_mb:
        The largest record accepted (a source's ``max_record_mb``; ``None``:
        no limit), in MB (2**20 bytes) of its UTF-8 text as it is in the
        file: a JSON Lines line, a CSV/TSV row (all its cells and
        separators, quoted newlines included), the text and binary values of
        a Parquet row, a page file of a folder. A larger record raises
        InputError naming it (file:line, its id when it can be told, its
        size and the limit) as soon as it is met: data files are read in a
        stream (1 MB at a time, gzip decompressed as it is read), so a
        decompression bomb of one giant line is refused after reading
        ``max_record_mb``, and memory holds the records kept, not the file.
    follow_symlinks:
        Page folders only (see :func:`er_framework.io.html.read_html_dir`).
    file_backed:
        An uncompressed JSON Lines file (or a ``byte_range`` of one) with ``layout="wide"``: the
        ``fields`` (not the id column) stay in the file; they are
        :class:`~er_framework.io.filetext.FileTexts` columns that read their values again on demand
        (the texts of a large corpus are never all in memory). Every line is parsed as usual, so the
        same problems are found and reported. Ignored for any other file.

    Only regular files are read: a path that is a FIFO, a device or a socket
    is refused (InputError) before it is opened.

    Returns
    -------
    Records
        ``ids`` (str), ``source`` (all 0, int32), ``source_names == [name]``
        and ``fields`` holding exactly ``fields``.

    Raises
    ------
    InputError
        With every problem found: missing file, unsupported extension,
        non-UTF-8 bytes, empty file, missing columns (with suggestions),
        malformed rows or lines, missing/invalid/duplicate ids.
    """
    p = Path(path)
    if _is_page_folder(p):
        return read_source_with_stats(p, id_column=id_column, fields=fields, name=name, where=where,
                                      max_record_mb=max_record_mb, follow_symlinks=follow_symlinks)[0]
    file = str(path)
    hint = f" (source {name!r}, {where})" if where else f" (source {name!r})"
    problems = _check_path(p, file, hint, where)
    if problems:
        raise InputError(problems)
    detected = detect_format(p)
    assert detected is not None  # checked by _check_path
    fmt, compressed = detected
    wanted = list(dict.fromkeys([id_column, *fields]))
    if byte_range is not None and fmt != "parquet":
        if compressed:
            raise ValueError("a compressed file cannot be read by byte range")
        file = f"{file} (bytes {byte_range[0]}-{byte_range[1]})"
    else:
        byte_range = None
    spans = None
    if file_backed and fmt == "jsonl" and not compressed and layout == "wide":
        spans = SpanCollector(p, [f for f in fields if f != id_column], as_texts)
    read = _read_raw_columns(p, file, fmt, compressed, wanted, id_column, hint, byte_range,
                             record_limit(max_record_mb), spans)
    if read is None or not read[0] and not read[2]:  # no line starts in this byte range
        return Records(ids=[], source=np.zeros(0, dtype=np.int32), source_names=[name],
                       fields={f: [] for f in fields})
    columns, loc, problems = read
    recs = records_from_columns(columns, loc, problems, file=file, id_column=id_column, fields=fields, name=name,
                                fmt=fmt, layout=layout)
    if spans is not None:
        for f in spans.fields:
            recs.fields[f] = spans.column(f)
    return recs


def records_from_columns(
    columns: dict[str, list[Any]],
    loc: Locator,
    problems: list[Problem],
    *,
    file: str,
    id_column: str,
    fields: Sequence[str],
    name: str,
    fmt: str,
    layout: str = "wide",
) -> Records:
    """The :class:`Records` of one source from the raw columns a reader returned (with its
    locator and its problems): the last step of every reader.

    The ids are checked (:func:`check_ids`; unique unless ``layout="long"``) and InputError
    raised with every problem; the ``fields`` become text (``fmt`` ``"csv"``/``"tsv"``: an
    empty cell is ``None``; any other format: :func:`as_texts`); ``layout="long"`` groups the
    rows sharing an id into one record (see :func:`read_source`).
    """
    ids: list[str] = []
    if id_column in columns:
        ids, ok, id_problems = check_ids(columns[id_column], loc, file, id_column, unique=(layout != "long"))
        problems = problems + id_problems
    if problems:
        raise InputError(problems)

    out = _field_texts(columns, fields, fmt)
    if layout == "long":
        ids, out = _group_long(ids, out)
    n = len(ids)
    return Records(
        ids=ids,
        source=np.zeros(n, dtype=np.int32),
        source_names=[name],
        fields={k: v for k, v in out.items()},
    )


def _read_raw_columns(
    p: Path,
    file: str,
    fmt: str,
    compressed: bool,
    wanted: list[str],
    id_column: str,
    hint: str,
    byte_range: tuple[int, int] | None,
    limit: int | None = None,
    spans: SpanCollector | None = None,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]] | None:
    """The raw columns of a data file of format ``fmt`` (of the lines starting in ``byte_range``
    of an uncompressed text file); ``None`` when no line starts in that range. Text files are
    read in a stream (see :func:`_text_chunks`); ``limit``: the largest record, in bytes."""
    if fmt == "parquet":
        return read_parquet_columns(p, file, wanted, id_column, hint, max_record_bytes=limit)
    ids = _RecordIds(fmt, id_column)
    with _open_data_file(p, file, hint) as raw:
        f: BinaryIO = raw
        pieces: Iterable[tuple[str, int]]
        if byte_range is not None:
            start, end = byte_range
            head = _range_start(f, start, fmt in ("csv", "tsv"), limit, file, hint)
            pos = f.tell()
            if pos >= end:
                return None
            if spans is not None and pos > 0:
                spans.start = pos  # the range's first line (a byte order mark is only at 0)
            body = _text_chunks(f, file, False, hint, limit, stop=end, offset=pos,
                                first_line=2 if head else 1, ids=ids)
            if head:
                pieces = chain([(_decode_head(head, file, hint), 1)], body)
            else:
                pieces = body
        else:
            if compressed:
                f = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
            pieces = _text_chunks(f, file, compressed, hint, limit, ids=ids)
        whole = byte_range is None
        if fmt == "jsonl":
            if spans is not None:
                pieces = spans.pieces(pieces)
            return read_jsonl_columns(pieces, file, wanted, id_column, hint, max_record_bytes=limit, whole=whole,
                                      ids=ids, spans=spans)
        delimiter = "\t" if fmt == "tsv" else ","
        return read_csv_columns(pieces, file, delimiter, wanted, id_column, hint, max_record_bytes=limit,
                                whole=whole, ids=ids)


def _decode_head(head: bytes, file: str, hint: str) -> str:
    """The header record of a CSV file read for a byte range (a UTF-8 BOM dropped)."""
    body = head[3:] if head.startswith(codecs.BOM_UTF8) else head
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(_utf8_problem(body, e.start, 1, len(head) - len(body), file, False, hint)) from None


def _field_texts(columns: dict[str, list[Any]], fields: Sequence[str], fmt: str) -> dict[str, list[str | None]]:
    """The raw ``fields`` columns as text: an empty CSV/TSV cell and a JSON/Parquet null are ``None``."""
    out: dict[str, list[str | None]] = {}
    for f in fields:
        col = columns[f]
        if fmt in ("csv", "tsv"):  # (a column without an empty cell is taken as it is)
            out[f] = [v or None for v in col] if "" in col else col
        else:
            out[f] = as_texts(col)
    return out


def _group_long(
    ids: list[str], columns: dict[str, list[str | None]]
) -> tuple[list[str], dict[str, list[str | None]]]:
    """Rows sharing an id -> one record; each field becomes the JSON list of its values."""
    first: dict[str, int] = {}
    rows: list[list[int]] = []
    for i, x in enumerate(ids):  # one dict step per row
        g = first.setdefault(x, len(rows))
        if g == len(rows):
            rows.append([])
        rows[g].append(i)
    out: dict[str, list[str | None]] = {
        f: [json.dumps([col[i] for i in members], ensure_ascii=False) for members in rows]
        for f, col in columns.items()
    }
    return list(first), out


def _is_page_folder(path: Path) -> bool:
    """Whether ``path`` is a folder of web pages.

    A folder named like a data file (``out.parquet/``, as Spark writes them)
    is not: it keeps the "is a directory, expected a data file" error.
    """
    return path.is_dir() and detect_format(path) is None


def read_source_with_stats(
    path: str | Path,
    *,
    id_column: str,
    fields: Sequence[str],
    name: str,
    where: str | None = None,
    layout: str = "wide",
    max_record_mb: float | None = DEFAULT_MAX_RECORD_MB,
    follow_symlinks: bool = False,
    file_backed: bool = False,
) -> tuple[Records, dict[str, Any]]:
    """:func:`read_source`, plus the reader's stats for ``report.json``.

    The stats are those of :func:`er_framework.io.html.read_html_dir` for a
    folder of web pages (files read, pages not in UTF-8, empty files, …) and
    ``{}`` for a data file. Raises what :func:`read_source` raises.
    """
    p = Path(path)
    if _is_page_folder(p):

        return read_html_dir(p, id_column=id_column, fields=fields, name=name, where=where,
                             max_record_mb=max_record_mb, follow_symlinks=follow_symlinks)
    return read_source(path, id_column=id_column, fields=fields, name=name, where=where, layout=layout,
                       max_record_mb=max_record_mb, file_backed=file_backed), {}


# --------------------------------------------------------------------------
# writing outputs
# --------------------------------------------------------------------------


def _check_name(name: str, kind: str) -> None:
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or name.startswith(_TMP_PREFIX)
    ):
        raise ValueError(f"invalid {kind} name {name!r}: use a plain file name without extension")


def _column_length(col: Any) -> int:
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            raise ValueError(f"columns must be 1-D, got shape {col.shape}")
        return int(col.shape[0])
    return len(col)


def _csv_column(col: Sequence[Any] | np.ndarray) -> list[Any]:
    """A column as Python values whose ``str`` is the text to write.

    float64 values go through Python's shortest round-trip ``repr``; other
    float dtypes (float32, float16) are formatted with numpy's shortest
    representation *for that dtype* (``0.8``, not ``0.800000011920929``).
    """
    if isinstance(col, np.ndarray):
        if col.dtype.kind == "f" and col.dtype != np.float64:
            return list(col.astype(str).tolist())
        return list(col.tolist())
    return list(col)


def _write_csv(target: Path, columns: Mapping[str, Sequence[Any] | np.ndarray], sync: bool = True) -> None:
    names = list(columns)
    with open(target, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\r\n")
        if names:
            writer.writerow(names)
            cells = [_csv_column(columns[c]) for c in names]
            texts = csv_texts(cells)
            if texts is None:
                writer.writerows(zip(*cells))
            else:  # no cell needs quoting: the rows are the cells joined (what csv.writer writes)
                del cells
                for lo in range(0, len(texts[0]), CSV_ROWS_PER_WRITE):
                    part = [t[lo:lo + CSV_ROWS_PER_WRITE] for t in texts]
                    f.write("\r\n".join(map(",".join, zip(*part))))
                    f.write("\r\n")
        f.flush()
        if sync:
            os.fsync(f.fileno())


#: rows joined and written per step by :func:`_write_csv` (the text of one step is held in memory)
CSV_ROWS_PER_WRITE = 1 << 18
#: characters that make ``csv.writer`` (QUOTE_MINIMAL, ``,`` and ``"``, CRLF) quote a cell
_CSV_SPECIAL = (",", '"', "\r", "\n", "\x00")


def csv_texts(cells: list[list[Any]]) -> list[list[str]] | None:
    """The text ``csv.writer`` (comma, QUOTE_MINIMAL, CRLF) writes for every cell of these columns, when no
    cell of them needs quoting; ``None`` when one does (or holds another type than str, int, float, bool
    or None), and the caller lets ``csv.writer`` write the rows.

    ``str`` cells are themselves, ``None`` is empty, ``float`` its ``repr``, ``int`` and ``bool`` their
    ``str``. A cell needs quoting when it holds a comma, a quote, CR or LF, and a row of one column whose
    cell is empty is written ``""``: such columns take ``None`` (and so does a NUL character). One pass over each column converts it
    and one search of its joined text finds the special characters."""
    out: list[list[str]] = []
    for col in cells:
        kinds = set(map(type, col))
        if kinds <= {str, type(None)}:
            texts: list[str] = col if type(None) not in kinds else [c or "" for c in col]
        elif kinds <= {int, bool}:
            texts = list(map(str, col))
        elif kinds == {float}:
            texts = list(map(float.__repr__, col))
        else:
            return None
        joined = "".join(texts)
        if any(c in joined for c in _CSV_SPECIAL):
            return None
        out.append(texts)
    if len(out) == 1 and any(not t for t in out[0]):
        return None  # csv.writer writes a row of one empty cell as "" (else it would be an empty line)
    return out


def write_outputs(
    out_dir: str | Path,
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    json_files: dict[str, dict[str, Any]],
    fmt: str = "csv",
) -> dict[str, Path]:
    """Write tables and JSON reports into ``out_dir``, all or nothing.

    Every table ``name -> {column: values}`` becomes ``<name>.csv`` (UTF-8,
    header row, CRLF line ends as in RFC 4180, floats at round-trip precision)
    or ``<name>.parquet``; every JSON document becomes ``<name>.json``
    (``indent=2``, keys in the given order, NaN/Infinity refused; numpy
    scalars and arrays are converted).

    Atomicity: everything is first validated and serialized in memory (bad
    names, columns of different lengths, unserializable JSON raise
    ``ValueError`` before anything is written), then written and fsynced into
    a temporary directory ``out_dir/.er-tmp-*``, then moved into place with
    ``os.replace``. Existing outputs are hard-linked (or copied) aside first,
    so if a move fails every output already moved is rolled back: a failed
    call leaves ``out_dir`` as it was (an ``out_dir`` created by this call is
    removed again). The temporary directory is always removed.

    Returns ``name -> final path``. Raises :class:`InputError` when the
    directory cannot be written (a file in the way, no permission, disk
    full, …).
    """
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown output format {fmt!r}: expected 'csv' or 'parquet'")
    out = Path(out_dir)
    plan, arrow_tables, json_text = _serialize_outputs(tables, json_files, fmt)
    created = not out.exists()
    tmp: Path | None = None
    moved: list[Path] = []
    backups: list[tuple[Path, Path]] = []
    try:
        try:
            out.mkdir(parents=True, exist_ok=True)
            if not out.is_dir():
                raise NotADirectoryError(20, "Not a directory", str(out))
            tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=out))
            _write_files(tmp, tables, arrow_tables, json_text, fmt)
            _move_into_place(out, tmp, plan, moved, backups)
        except BaseException:
            _rollback(moved, backups)
            raise
    except OSError as e:
        problem = _write_problem(out, e)
        if created:
            _remove_created(out, tmp)
        raise InputError(problem) from None
    except BaseException:
        if created:
            _remove_created(out, tmp)
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return {name: out / filename for name, filename in plan}


def _serialize_outputs(
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    json_files: dict[str, dict[str, Any]],
    fmt: str,
) -> tuple[list[tuple[str, str]], dict[str, Any], dict[str, str]]:
    """Step 1 of :func:`write_outputs`: validate and serialize in memory (``ValueError`` before
    anything is written). Returns the plan ``[(name, file name)]``, the Arrow tables (Parquet)
    and the JSON texts."""
    plan: list[tuple[str, str]] = []  # (name, file name)
    for name, columns in tables.items():
        _check_name(name, "table")
        lengths = {c: _column_length(v) for c, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"table {name!r}: columns have different lengths: {lengths}")
        plan.append((name, f"{name}.{fmt}"))
    arrow_tables: dict[str, Any] = {}
    if fmt == "parquet":
        import pyarrow as pa

        for name, columns in tables.items():
            try:
                arrow_tables[name] = pa.Table.from_arrays([array_of(v) for v in columns.values()], names=list(columns))
            except (pa.ArrowException, TypeError, ValueError) as e:
                raise ValueError(f"table {name!r} cannot be converted to Parquet: {e}") from e
    json_text: dict[str, str] = {}
    for name, doc in json_files.items():
        _check_name(name, "json file")
        if name in tables:
            raise ValueError(f"{name!r} is both a table and a json file")
        try:
            json_text[name] = (
                json.dumps(
                    doc, indent=2, sort_keys=False, allow_nan=False,
                    ensure_ascii=False, default=_json_default,
                )
                + "\n"
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name}.json cannot be written as JSON: {e}") from e
        plan.append((name, f"{name}.json"))
    return plan, arrow_tables, json_text


def write_files(
    directory: str | Path,
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    json_files: dict[str, dict[str, Any]],
    fmt: str = "csv",
) -> dict[str, Path]:
    """The files of :func:`write_outputs` written straight into ``directory``, not fsynced: for a folder
    that is itself committed as one unit, which makes them durable then (an
    :class:`~er_framework.io.outputs.OutputStage`). Validated and serialized in memory first, as there
    (``ValueError`` before anything is written). Returns ``name -> path``."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown output format {fmt!r}: expected 'csv' or 'parquet'")
    folder = Path(directory)
    plan, arrow_tables, json_text = _serialize_outputs(tables, json_files, fmt)
    _write_files(folder, tables, arrow_tables, json_text, fmt, sync=False)
    return {name: folder / filename for name, filename in plan}


def _write_files(
    tmp: Path,
    tables: dict[str, dict[str, Sequence[Any] | np.ndarray]],
    arrow_tables: dict[str, Any],
    json_text: dict[str, str],
    fmt: str,
    sync: bool = True,
) -> None:
    """Step 2 of :func:`write_outputs`: write (and with ``sync`` fsync) every file into the temporary directory."""
    for name, columns in tables.items():
        target = tmp / f"{name}.{fmt}"
        if fmt == "csv":
            _write_csv(target, columns, sync)
        else:
            import pyarrow.parquet as pq

            pq.write_table(arrow_tables[name], target)
            if sync:
                sync_files([target])
    for name, text in json_text.items():
        target = tmp / f"{name}.json"
        with open(target, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            if sync:
                os.fsync(f.fileno())
    if sync:
        fsync_dir(tmp)


def _move_into_place(
    out: Path, tmp: Path, plan: list[tuple[str, str]], moved: list[Path], backups: list[tuple[Path, Path]]
) -> None:
    """Step 3 of :func:`write_outputs`: move the files into ``out``, keeping the old files aside
    in ``tmp`` for a rollback; ``moved`` and ``backups`` record what was done so far."""
    for _, filename in plan:
        if (out / filename).is_dir():
            raise IsADirectoryError(21, "Is a directory", str(out / filename))
    for i, (_, filename) in enumerate(plan):
        final = out / filename
        if final.exists() or final.is_symlink():
            backup = tmp / f".old-{i}-{filename}"
            try:
                os.link(final, backup, follow_symlinks=False)
            except OSError:
                shutil.copy2(final, backup, follow_symlinks=False)
            backups.append((final, backup))
        os.replace(tmp / filename, final)
        moved.append(final)
    fsync_dir(out)


def _rollback(moved: list[Path], backups: list[tuple[Path, Path]]) -> None:
    """Undo the moves of a failed :func:`write_outputs` (best effort)."""
    restored = {final for final, _ in backups}
    for final in moved:
        if final not in restored:
            try:
                os.unlink(final)
            except OSError:
                pass
    for final, backup in backups:
        try:
            os.replace(backup, final)
        except OSError:
            pass


def _remove_created(out: Path, tmp: Path | None) -> None:
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        out.rmdir()  # only if empty
    except OSError:
        pass


def _write_problem(out: Path, e: OSError) -> Problem:
    target = e.filename or str(out)
    reason = e.strerror or str(e)
    if isinstance(e, (FileExistsError, NotADirectoryError)) or (out.exists() and not out.is_dir()):
        return Problem(
            where=str(out),
            message=f"cannot write outputs: {str(target)!r} is not a directory ({reason})",
            fix="choose an output directory that is not an existing file, or move the file away",
        )
    if isinstance(e, PermissionError):
        return Problem(
            where=str(out),
            message=f"cannot write outputs: permission denied for {str(target)!r}",
            fix="choose an output directory you can write to, or fix its permissions",
        )
    return Problem(
        where=str(out),
        message=f"cannot write outputs: {reason} ({str(target)!r})",
        fix="check the output directory (free space, permissions, no directory in the way "
        "of an output file); existing outputs were left as they were",
    )


# --------------------------------------------------------------------------
# reading our own outputs back
# --------------------------------------------------------------------------


def read_output_table(path: str | Path, required: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
    """Yield ``(where, [values of required columns])`` per row of a CSV or Parquet output."""
    p = Path(path)
    file = str(path)
    if not p.is_file():
        raise InputError(
            Problem(
                where=file,
                message=f"no such file: {str(p.absolute())!r}",
                fix="check the path (run the job first to create its outputs)",
            )
        )
    if p.name.lower().endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            present = list(pq.read_schema(p).names)
            missing = [c for c in required if c not in present]
            if missing:
                raise InputError(_missing_columns(missing, present, file, "", ""))
            table = pq.read_table(p, columns=list(required))
        except (pa.ArrowException, OSError) as e:
            raise InputError(Problem(where=file, message=f"cannot read the Parquet file: {e}")) from None
        cols = [table.column(c).to_pylist() for c in required]
        for i, values in enumerate(zip(*cols)):
            yield f"{file} row {i + 1}", list(values)
        return
    text = decode_utf8(read_bytes(p, p.name.lower().endswith(".gz"), file, ""), file, False, "")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(
                Problem(where=file, message="the file is empty: no header row",
                        fix=f"expected the header {','.join(required)}")
            )
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(_missing_columns(missing, header, f"{file}:1", "", ""))
        index = [header.index(c) for c in required]
        prev = reader.line_num
        for row in reader:
            start, prev = prev + 1, reader.line_num
            if not row:
                continue
            if len(row) < len(header):
                row = row + [""] * (len(header) - len(row))
            yield f"{file}:{start}", [row[k] for k in index]
    except csv.Error as e:
        raise InputError(
            Problem(where=f"{file}:{reader.line_num}", message=f"cannot parse the CSV file: {e}")
        ) from None


def read_pairs_csv(path: str | Path) -> list[tuple[str, str, str, str, float]]:
    """Read a pairs output (``left_source,left_id,right_source,right_id,score``).

    Accepts the CSV written by :func:`write_outputs` (or a ``.parquet``
    table with the same columns). Returns one tuple per row, in file order;
    raises :class:`InputError` on a missing file, missing columns or a score
    that is not a number (every bad score is reported).
    """
    cols = ("left_source", "left_id", "right_source", "right_id", "score")
    out: list[tuple[str, str, str, str, float]] = []
    bad = _Capped(str(path), "rows with a bad score", "scores must be numbers such as 0.85")
    for where, (ls, li, rs, ri, score) in read_output_table(path, cols):
        try:
            value = float(score)
        except (TypeError, ValueError):
            bad.add(where, f"score {score!r} is not a number", "column 'score'")
            continue
        out.append((str(ls), str(li), str(rs), str(ri), value))
    problems = bad.problems()
    if problems:
        raise InputError(problems)
    return out


def read_clusters_csv(path: str | Path) -> list[tuple[str, str, str]]:
    """Read a clusters output (``source,id,cluster_id``) as ``(source, id, cluster_id)`` strings.

    Accepts the CSV written by :func:`write_outputs` (or a ``.parquet``
    table with the same columns); raises :class:`InputError` on a missing
    file or missing columns.
    """
    cols = ("source", "id", "cluster_id")
    return [
        (_text(s) or "", _text(i) or "", _text(c) or "")
        for _, (s, i, c) in read_output_table(path, cols)
    ]


def merge_files(files: list[Records], where: str) -> Records:
    """The records of one source read from several files, in file order; ids unique across the files."""
    ids = [i for f in files for i in f.ids]
    dup = sorted(i for i, c in Counter(ids).items() if c > 1)
    if dup:
        raise InputError(Problem(where=where, message=f"{len(dup)} id(s) appear in more than one file of the source: "
                                 f"{', '.join(dup[:5])}" + (" …" if len(dup) > 5 else ""),
                                 fix="ids must be unique within a source, across all its files"))
    return Records(
        ids=ids,
        source=np.zeros(len(ids), dtype=np.int32),
        source_names=list(files[0].source_names),
        fields={k: [v for f in files for v in f.fields[k]] for k in files[0].fields},
    )
