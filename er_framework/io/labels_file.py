"""The one reader and writer of labels files (``er review OUT --labels FILE``, ``training: {labels: FILE}``).

A labels file is a CSV whose header names at least :data:`LABEL_COLUMNS`
(``left_source,left_id,right_source,right_id,match``, in any order, any case);
``er review`` writes :data:`LABELS_HEADER` (adding ``score`` and ``side``).
Other columns are the user's and are kept.

Reading accepts what a spreadsheet saves: a UTF-8 byte-order mark, ``,``,
``;`` or tab as the separator (the one that makes the first line a labels
header), CRLF or LF line ends, quoted values, a quoted value holding a line
end (an id with ``\\r``), rows shorter than the header (padded with empty
values). A file whose first line is not a labels header is refused as "not a
labels file" and nothing of it is quoted: a job pointing ``training.labels``
at ``/proc/self/environ`` learns that it is not a labels file, not what it holds.

Writing (:func:`write_labels_file`) goes through
:func:`er_framework.io.safe_write.open_for_write` (never over a device, an
input of the job, an output of a run, or an existing file that is not a labels
file) and keeps the file's separator, byte-order mark and line ends. Every
value a spreadsheet would run as a formula (OWASP's CSV-injection rule: a
value starting with ``=``, ``+``, ``-``, ``@``, tab or CR) is written quoted
with a ``'`` before it, and the reader removes that one ``'`` again, so ids
such as ``-12`` or ``=A1`` come back exactly as they were
(:func:`escape_formula`, :func:`unescape_formula`).
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from er_framework.errors import InputError, Problem, os_problem
from er_framework.io.formats import file_kind
from er_framework.io.safe_write import FileKind, open_for_write

__all__ = [
    "FORMULA_START",
    "LABELS_HEADER",
    "LABELS_KIND",
    "LABEL_COLUMNS",
    "MAX_LABELS_BYTES",
    "SEPARATORS",
    "LabelsFile",
    "escape_formula",
    "labels_header",
    "read_labels_file",
    "unescape_formula",
    "update_labels_file",
    "write_labels_file",
]

#: the columns ``er review`` writes, in its order
LABELS_HEADER = ("left_source", "left_id", "right_source", "right_id", "score", "side", "match")
#: the columns training needs (any order): a file whose header lacks one is not a labels file
LABEL_COLUMNS = ("left_source", "left_id", "right_source", "right_id", "match")
#: the separators a labels file may use (a spreadsheet in a locale with a decimal comma saves ``;``)
SEPARATORS = (",", ";", "\t")
#: what starts a value a spreadsheet runs as a formula (OWASP: CSV injection)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: a labels file larger than this is refused before it is read (hand-made labels are kilobytes; a file
#: of all the pairs of a truth file with millions of pairs is a few hundred megabytes)
MAX_LABELS_BYTES = 1 << 30

_ESCAPED = re.compile("^'+[=+\\-@\t\r]")


def escape_formula(value: str) -> str:
    """``value`` as written: a ``'`` before a value a spreadsheet would run as a formula (and before a value
    that already looks escaped, so that :func:`unescape_formula` gives it back unchanged)."""
    if value.startswith(FORMULA_START) or _ESCAPED.match(value):
        return "'" + value
    return value


def unescape_formula(value: str) -> str:
    """The value :func:`escape_formula` was given: one leading ``'`` removed when what follows is a formula
    start (or another escaped value); any other value unchanged."""
    return value[1:] if _ESCAPED.match(value) else value


def _cells(line: str, sep: str) -> list[str]:
    """The header line's cells: split at ``sep``, surrounding spaces and quotes removed, lower case."""
    return [c.strip().strip('"').strip().lower() for c in line.split(sep)]


def labels_header(head: bytes) -> str | None:
    """The separator with which the first line of ``head`` (a file's first bytes) is a labels header (it names
    every column of :data:`LABEL_COLUMNS`), or None: not a labels file."""
    text = head.decode("utf-8", errors="replace")
    text = text.removeprefix("\ufeff")
    end = min((i for i in (text.find("\n"), text.find("\r")) if i >= 0), default=len(text))
    first = text[:end]
    for sep in SEPARATORS:
        if set(LABEL_COLUMNS) <= set(_cells(first, sep)):
            return sep
    return None


#: what an existing file must be for ``er review`` to write over it
LABELS_KIND = FileKind(
    description=f"a labels file (its first line is not a header naming {','.join(LABEL_COLUMNS)})",
    recognizes=lambda head: labels_header(head) is not None,
)


@dataclass
class LabelsFile:
    """A labels file as read: its header (the known columns by their canonical names, the others as the file
    spells them), its rows (each as long as the header, formula escapes removed), the line each row starts
    on, and how it was written (separator, byte-order mark, line end), which the writer keeps."""

    header: list[str] = field(default_factory=lambda: list(LABELS_HEADER))
    rows: list[list[str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    separator: str = ","
    bom: bool = False
    newline: str = "\n"

    def column(self, name: str) -> int:
        """The position of column ``name`` (-1: absent)."""
        return self.header.index(name) if name in self.header else -1

    def records(self) -> list[dict[str, str]]:
        """The rows as dicts by column name."""
        return [dict(zip(self.header, row)) for row in self.rows]


def _not_labels(where: str, what: str, fix: str) -> InputError:
    return InputError(
        Problem(
            where=where,
            message=f"{what} is not a labels file (its first line is not a header naming {','.join(LABEL_COLUMNS)})",
            fix=fix,
        )
    )


def _read_bytes(path: Path, fix: str) -> bytes:
    where = str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(os_problem(exc, where, "read the labels file")) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(Problem(where=where, message=f"the labels file is {file_kind(st.st_mode)}, not a regular file", fix=fix))
    if st.st_size > MAX_LABELS_BYTES:
        raise InputError(
            Problem(
                where=where,
                message=f"the labels file holds {st.st_size:,} bytes, more than the {MAX_LABELS_BYTES:,} a labels file may",
                fix=fix,
            )
        )
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_LABELS_BYTES + 1)  # a file of /proc says size 0 and may hold anything
    except OSError as exc:
        raise InputError(os_problem(exc, where, "read the labels file")) from None
    if len(data) > MAX_LABELS_BYTES:
        raise InputError(Problem(where=where, message=f"the labels file holds more than {MAX_LABELS_BYTES:,} bytes", fix=fix))
    return data


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            Problem(
                where=f"{where}:{_line_of(data, exc.start)}",
                message=f"the labels file is not UTF-8 text (byte {exc.start + 1:,})",
                fix="save it as UTF-8 (a spreadsheet's 'CSV UTF-8'), or fix that line",
            )
        ) from None


def _header(raw_header: list[str], where: str, fix: str) -> list[str]:
    """The header's column names (er's in their canonical case); refused when it is not a labels header
    (not quoted) or names a column twice."""
    names = [unescape_formula(c.strip()) for c in raw_header]
    canonical = {c.lower(): c for c in LABELS_HEADER}
    header = [canonical.get(n.lower(), n) for n in names]
    if not set(LABEL_COLUMNS) <= set(header):
        raise _not_labels(where, where, fix)
    seen: dict[str, int] = {}
    for i, name in enumerate(header):
        if name in seen:
            raise InputError(
                Problem(
                    where=f"{where}:1",
                    message=f"the header names column {name!r} twice (columns {seen[name] + 1} and {i + 1})",
                    fix="give every column its own name",
                )
            )
        seen[name] = i
    return header


def read_labels_file(path: str | Path, *, fix: str, allow_empty: bool = False) -> LabelsFile:
    """Read the labels file ``path``. ``fix``: what the user can do about a file that is not a labels file
    (it names the setting that gave the path). An empty file is an error unless ``allow_empty`` (then an
    empty :class:`LabelsFile` with :data:`LABELS_HEADER`). InputError for anything else wrong, naming the
    line; nothing of a file that is not a labels file is ever quoted."""
    path = Path(path)
    where = str(path)
    data = _read_bytes(path, fix)
    if not data.strip(b"\xef\xbb\xbf \t\r\n"):
        if allow_empty:
            return LabelsFile()
        raise InputError(Problem(where=where, message="the labels file is empty", fix=f"write the header {','.join(LABELS_HEADER)}"))
    sep = labels_header(data)
    if sep is None:
        raise _not_labels(where, where, fix)
    text = _utf8(data, where)
    bom = text.startswith("\ufeff")
    text = text.removeprefix("\ufeff")
    first_end = min((i for i in (text.find("\n"), text.find("\r")) if i >= 0), default=len(text))
    newline = "\r\n" if text[first_end : first_end + 2] == "\r\n" else "\n"
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quotechar='"', doublequote=True, strict=False)
    out = LabelsFile(separator=sep, bom=bom, newline=newline)
    try:
        header = _header(next(reader), where, fix)
        out.header = header
        width = len(header)
        start = reader.line_num + 1
        for row in reader:
            line, start = start, reader.line_num + 1
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # a blank line
            if len(row) > width:
                if any(c.strip() for c in row[width:]):
                    raise InputError(
                        Problem(
                            where=f"{where}:{line}",
                            message=f"line {line} has {len(row)} values, the header {width} columns",
                            fix="remove the extra values, or name their column in the header",
                        )
                    )
                row = row[:width]
            out.rows.append([unescape_formula(c) for c in row] + [""] * (width - len(row)))
            out.lines.append(line)
    except csv.Error as exc:
        raise InputError(
            Problem(where=f"{where}:{reader.line_num}", message=f"the labels file is not valid CSV ({exc})", fix="fix that line")
        ) from None
    return out


def _cell(value: str, sep: str) -> str:
    text = escape_formula(value)
    if text != value or any(ch in text for ch in (sep, '"', "\r", "\n")) or text != text.strip(" ") or text.startswith("\ufeff"):
        return '"' + text.replace('"', '""') + '"'
    return text


def _write(fh: TextIO, labels: LabelsFile) -> None:
    sep, end = labels.separator, labels.newline
    width = len(labels.header)
    if labels.bom:
        fh.write("\ufeff")
    fh.write(sep.join(_cell(c, sep) for c in labels.header) + end)
    for row in labels.rows:
        cells = (list(row) + [""] * width)[:width]
        fh.write(sep.join(_cell(c, sep) for c in cells) + end)


def write_labels_file(path: str | Path, labels: LabelsFile, *, inputs: Sequence[Path] = ()) -> None:
    """Write ``labels`` to ``path`` (atomically, through :func:`~er_framework.io.safe_write.open_for_write`:
    never over one of ``inputs``, an output of a run, a device, or an existing file that is not a labels
    file), in the file's own separator, byte-order mark and line ends, formula-like values escaped."""
    with open_for_write(path, what="labels file", inputs=inputs, kind=LABELS_KIND, newline="") as fh:
        _write(fh, labels)


def update_labels_file(
    path: str | Path,
    update: Callable[[LabelsFile], LabelsFile],
    *,
    inputs: Sequence[Path] = (),
    read: Callable[[Path], LabelsFile] | None = None,
) -> LabelsFile:
    """Read the labels file ``path`` (an empty :class:`LabelsFile` when there is none), pass it to ``update``
    and write what it returns, as :func:`write_labels_file` does. The target is checked before anything is
    read (an input of the job or an output of a run is refused as such, not read as a labels file), and
    nothing changes when reading or ``update`` fails. ``read``: the reader (default
    :func:`read_labels_file`, an empty file allowed). Returns what was written."""
    target = Path(path)
    with open_for_write(target, what="labels file", inputs=inputs, kind=LABELS_KIND, newline="") as fh:
        current = LabelsFile()
        if target.is_file():
            current = read(target) if read is not None else read_labels_file(target, fix="give another labels file", allow_empty=True)
        written = update(current)
        _write(fh, written)
    return written
