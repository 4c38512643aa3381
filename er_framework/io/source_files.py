"""Reading sources: one data file (or a byte range of one, or a folder of web pages) into the
:class:`~er_framework.data.Records` of one source.

The format readers are :mod:`~er_framework.io.csv_read`, :mod:`~er_framework.io.jsonl_read` and
:mod:`~er_framework.io.parquet_read`; :func:`read_raw_columns` picks one by the file's extension and
streams the file to it, and :func:`records_from_columns` checks the ids and makes the records.

Input rules (the same for every format):

* Every value becomes a ``str`` or ``None`` (missing). CSV/TSV: an empty cell
  is ``None``. JSON Lines: ``null`` or an absent key is ``None``; strings are
  kept as they are (``""`` stays ``""``); integers become ``str(v)``
  (``7 -> "7"``); floats become their shortest round-trip text
  (``json.dumps``: ``0.8 -> "0.8"``, ``7.0 -> "7.0"``); booleans become
  ``"true"``/``"false"``; lists and objects become their ``json.dumps`` text
  (non-ASCII kept). Parquet values are converted the same way (dates and
  timestamps as ISO 8601 text, decimals as ``str``), but a float column whose
  present values are all whole numbers is read as integers (``1999.0 ->
  "1999"``: a pandas integer column with a missing value). A float NaN is missing
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
through the Parquet reader's code
(:func:`~er_framework.io.parquet_read.read_arrow_columns`), with the
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

The CSV reader raises the csv module's process-wide field size limit (see
:mod:`er_framework.io.csv_read`).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from er_framework.data import Records
from er_framework.errors import InputError, Problem
from er_framework.io.column_map import ColumnMap
from er_framework.io.csv_dialect import DEFAULT_DIALECT, CsvDialect, decoded_chunks
from er_framework.io.csv_read import read_csv_columns
from er_framework.io.data_file import (
    READ_CHUNK,
    Capped,
    Locator,
    RecordIds,
    and_list,
    as_texts,
    check_extension,
    check_path,
    detect_format,
    open_data_file,
    snippet,
    text_chunks,
    too_big_problem,
    utf8_problem,
)
from er_framework.io.filetext import SpanCollector
from er_framework.io.formats import DEFAULT_MAX_RECORD_MB, MAX_ROW_PROBLEMS, record_limit
from er_framework.io.html import read_html_dir
from er_framework.io.jsonl_read import read_jsonl_columns
from er_framework.io.parquet_dataset import DatasetFile, bad_parquet, dataset_files, is_parquet_dataset
from er_framework.io.parquet_read import arrow_columns_to_read, read_arrow_columns, read_parquet_columns
from er_framework.io.remote import is_url, local_path

__all__ = [
    "check_ids",
    "check_ids_reference",
    "dialect_problem",
    "merge_files",
    "partition_ranges",
    "read_raw_columns",
    "read_source",
    "read_source_with_stats",
    "records_from_columns",
]


def partition_ranges(path: str | Path, partition_bytes: int, dialect: CsvDialect | None = None) -> list[tuple[int, int]] | None:
    """Byte ranges splitting an uncompressed JSONL/CSV/TSV file into partitions of about
    ``partition_bytes``; ``None`` for files that cannot be split (gzip, Parquet, page folders).

    :func:`read_source` with ``byte_range`` reads the lines *starting* in a
    range, so JSON Lines ranges need not fall on line ends and the partitions
    hold every line exactly once. CSV/TSV ranges are cut only where a record
    starts: after a newline that is outside every quoted value (RFC 4180
    escapes a quote by doubling it, so a newline is inside a quoted value iff
    an odd number of quotes precede it; found with one streaming count over the
    file). A file with a quote inside an unquoted value (``5"6``, which the
    csv module accepts but which breaks the parity rule) is cut by parsing it
    with the csv module instead (slower, same cuts for valid files).

    ``dialect``: a CSV/TSV file's separator and quote (``csv:`` of the source) are those cut by. A file
    in another encoding than UTF-8, or whose separator or quote is not ASCII, is not split (``None``:
    one partition): the byte-range reader finds line and quote bytes in UTF-8 text only, and a
    multi-byte character of another encoding may hold a byte that looks like one.
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
        d = dialect or DEFAULT_DIALECT
        sep, quote = d.delimiter_for(detected[0]), d.quote
        if not d.utf8 or not (sep.isascii() and quote.isascii()):
            return None
        cuts = _csv_cuts_by_parity(p, step, sep.encode(), quote.encode())
        if cuts is None:
            cuts = _csv_cuts_by_parsing(p, step, sep, quote)
        bounds = [0] + [c for c in cuts if 0 < c < size] + [size]
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:])] or [(0, 0)]


def _next_target(cut: int, step: int) -> int:
    return (cut // step + 1) * step


def _csv_cuts_by_parity(p: Path, step: int, delimiter: bytes, quote: bytes = b'"') -> list[int] | None:
    """Record starts at or after every multiple of ``step`` (quote parity); ``None`` if a quote
    stands inside an unquoted value (neither neighbour a quote, the separator or a line end)."""
    others = b"[^" + re.escape(quote) + b"\r\n" + re.escape(delimiter) + b"]"
    stray = re.compile(others + re.escape(quote) + others)
    cuts: list[int] = []
    target = step
    parity = 0  # number of quotes before the chunk, mod 2
    offset = 0  # file offset of the chunk
    tail = b""
    with open(p, "rb") as f:
        while True:
            chunk = f.read(READ_CHUNK)
            if not chunk:
                return cuts
            if quote in chunk and stray.search(tail + chunk if tail else chunk):
                return None
            counted = 0  # quotes counted up to this position of the chunk
            k = max(target - offset - 1, 0)
            while k < len(chunk):
                nl = chunk.find(b"\n", k)
                if nl < 0:
                    break
                parity ^= chunk.count(quote, counted, nl) & 1
                counted = nl
                if parity == 0:  # a record ends here
                    cut = offset + nl + 1
                    cuts.append(cut)
                    target = _next_target(cut, step)
                    k = max(target - offset - 1, nl + 1)
                else:
                    k = nl + 1
            parity ^= chunk.count(quote, counted) & 1
            offset += len(chunk)
            tail = chunk[-1:]


def _csv_cuts_by_parsing(p: Path, step: int, delimiter: str, quote: str = '"') -> list[int]:
    """Record starts at or after every multiple of ``step``, found by the csv module."""
    cuts: list[int] = []
    target = step
    pos = [0]

    def lines() -> Iterator[str]:
        with open(p, "rb") as f:
            for raw in f:
                pos[0] += len(raw)
                yield raw.decode("utf-8", "replace")

    reader = csv.reader(lines(), delimiter=delimiter, quotechar=quote)
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


def _range_start(f: BinaryIO, start: int, header: bool, limit: int | None, file: str, hint: str, quote: bytes = b'"') -> bytes:
    """Move ``f`` to the first line starting at or after ``start``; return the file's header
    record (its first line, and the next ones while a quoted value is open) when ``header``
    and ``start > 0``, else ``b""``."""
    head = b""
    if header and start > 0:
        cap = -1 if limit is None else limit + 1
        head = f.readline(cap)
        while head.count(quote) % 2:
            more = f.readline(cap)
            if not more:
                break
            head += more
            if limit is not None and len(head) > limit:
                break
        if limit is not None and len(head) > limit:
            raise InputError(too_big_problem(file, 1, len(head), limit, hint, "line", None, partial=True))
    if start > 0:
        f.seek(start - 1)
        if f.read(1) != b"\n":
            while True:  # the line under way belongs to the previous range
                rest = f.readline(READ_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
    return head


def check_ids(raw: list[Any], loc: Locator, file: str, id_column: str, unique: bool = True) -> tuple[list[str], list[bool], list[Problem]]:
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
    empty = Capped(
        file,
        "rows with a missing id",
        f"every record needs a non-empty id in column {id_column!r}",
    )
    bad_type = Capped(
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
                f"{loc.unit} {loc.number(i)}: the id {snippet(shown)} is a {type(v).__name__}, expected a string or an integer",
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
            parts.append(f"id {value!r} appears on {loc.unit}s {and_list(listed)}")
        rest = len(items) - MAX_ROW_PROBLEMS
        extra_rows = sum(len(n) for _, n in items[MAX_ROW_PROBLEMS:])
        tail = f"; and {rest} further duplicated ids ({extra_rows} {loc.unit}s)" if rest > 0 else ""
        problems.append(
            Problem(
                where=file,
                path=f"column {id_column!r}",
                message=f"{len(items)} duplicated id{'s' if len(items) != 1 else ''}: " + "; ".join(parts) + tail,
                fix="ids must be unique within a source: give every record its own id, or remove the repeated rows",
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
    columns: Mapping[str, str] | None = None,
    dialect: CsvDialect | None = None,
    hive: tuple[tuple[str, str | None], ...] | None = None,
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
    columns:
        The source's own column for a field (``columns:`` of the source, see
        :class:`~er_framework.io.column_map.ColumnMap`): that column is read, and
        the records name it by the field; messages about it name both.
    dialect:
        A CSV/TSV file's separator, quote and encoding (``csv:`` of the source;
        default: what the extension says, UTF-8). A file in another encoding is
        transcoded as it is read; it is not read by byte range.
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
    hive:
        ``path`` is one Parquet file of a dataset (a partition of the Dask executor), with these hive
        partition columns (:class:`~er_framework.io.parquet_dataset.DatasetFile`); a file without rows is
        then no error.
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
    if hive is not None or is_parquet_dataset(path):
        if dialect is not None:
            raise InputError(dialect_problem(str(path), "parquet", f" (source {name!r})"))
        mapping = ColumnMap(fields, columns)
        with mapping.named():
            files = [DatasetFile(str(path), hive)] if hive is not None else dataset_files(path, where or "")
            return mapping.records(_read_dataset(files, str(path), id_column, mapping.read, name, layout, max_record_mb, hive is None))
    if is_url(path) and local_path(path) is None:
        mapping = ColumnMap(fields, columns)
        with mapping.named():
            url = str(path)
            return mapping.records(_read_file(url, url, id_column, mapping.read, name, where, layout, None, max_record_mb, False, dialect))
    p = local_path(path) or Path(path)
    if _is_page_folder(p):
        return read_source_with_stats(
            p,
            id_column=id_column,
            fields=fields,
            name=name,
            where=where,
            max_record_mb=max_record_mb,
            follow_symlinks=follow_symlinks,
            columns=columns,
        )[0]
    mapping = ColumnMap(fields, columns)
    with mapping.named():
        return mapping.records(
            _read_file(p, str(path), id_column, mapping.read, name, where, layout, byte_range, max_record_mb, file_backed, dialect)
        )


def _read_dataset(
    files: list[DatasetFile], root: str, id_column: str, fields: list[str], name: str, layout: str, max_record_mb: float | None, whole: bool
) -> Records:
    """The records of the Parquet files ``files`` of the dataset ``root``, file after file (ids unique across them);
    ``whole``: a dataset without any row is an error."""
    wanted = list(dict.fromkeys([id_column, *fields]))
    parts: list[Records] = []
    for k, f in enumerate(files):
        hint = f" (source {name!r}, file {k + 1} of the {len(files)} of the Parquet dataset {root!r})" if whole else f" (source {name!r})"
        limit = record_limit(max_record_mb)
        raw, loc, problems = read_dataset_file_columns(f, f.location, wanted, id_column, hint, max_record_bytes=limit)
        recs = records_from_columns(
            raw, loc, problems, file=f.location, id_column=id_column, fields=fields, name=name, fmt="parquet", layout=layout
        )
        parts.append(recs)
    if whole and not any(len(r) for r in parts):
        raise InputError(
            Problem(
                where=root,
                message=f"the Parquet dataset {root!r} has no rows (source {name!r}, {len(files)} files): a source without any record",
                fix="point the path to the data that holds the records",
            )
        )
    return parts[0] if len(parts) == 1 else merge_files(parts, root)


def _read_file(
    p: Path | str,
    file: str,
    id_column: str,
    fields: list[str],
    name: str,
    where: str | None,
    layout: str,
    byte_range: tuple[int, int] | None,
    max_record_mb: float | None,
    file_backed: bool,
    dialect: CsvDialect | None,
) -> Records:
    """:func:`read_source` of a data file, with ``fields`` the file's own columns."""
    hint = f" (source {name!r}, {where})" if where else f" (source {name!r})"
    problems = check_path(p, file, hint, where) if isinstance(p, Path) else check_extension(Path(p), file, hint)
    if problems:
        raise InputError(problems)
    detected = detect_format(Path(p))
    assert detected is not None  # checked by check_path
    fmt, compressed = detected
    if dialect is not None and fmt not in ("csv", "tsv"):
        raise InputError(dialect_problem(file, fmt, hint))
    wanted = list(dict.fromkeys([id_column, *fields]))
    if byte_range is not None and fmt != "parquet":
        if compressed:
            raise ValueError("a compressed file cannot be read by byte range")
        if dialect is not None and not dialect.utf8 and fmt != "jsonl":
            raise ValueError(f"a file in {dialect.encoding} cannot be read by byte range (partition_ranges does not split it)")
        file = f"{file} (bytes {byte_range[0]}-{byte_range[1]})"
    else:
        byte_range = None
    spans = None
    if file_backed and fmt == "jsonl" and not compressed and layout == "wide" and isinstance(p, Path):
        spans = SpanCollector(p, [f for f in fields if f != id_column], as_texts)
    read = read_raw_columns(
        p,
        file,
        fmt,
        compressed,
        wanted,
        id_column,
        hint,
        byte_range,
        record_limit(max_record_mb),
        spans,
        dialect=dialect or DEFAULT_DIALECT,
    )
    if read is None or not read[0] and not read[2]:  # no line starts in this byte range
        return Records(ids=[], source=np.zeros(0, dtype=np.int32), source_names=[name], fields={f: [] for f in fields})
    raw_columns, loc, problems = read
    recs = records_from_columns(
        raw_columns, loc, problems, file=file, id_column=id_column, fields=fields, name=name, fmt=fmt, layout=layout
    )
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
    empty cell is ``None``; any other format: :func:`~er_framework.io.data_file.as_texts`); ``layout="long"`` groups the
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


def read_raw_columns(
    p: Path | str,
    file: str,
    fmt: str,
    compressed: bool,
    wanted: list[str],
    id_column: str,
    hint: str,
    byte_range: tuple[int, int] | None,
    limit: int | None = None,
    spans: SpanCollector | None = None,
    whole: bool = True,
    dialect: CsvDialect | None = None,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]] | None:
    """The raw columns of a data file of format ``fmt`` (of the lines starting in ``byte_range``
    of an uncompressed text file); ``None`` when no line starts in that range. Text files are
    read in a stream (see :func:`~er_framework.io.data_file.text_chunks`); ``limit``: the largest record, in bytes.
    ``whole=False``: a file without rows is no problem (a byte range never is one).

    ``dialect``: a source's CSV/TSV dialect (its messages then name the ``csv:`` setting to try); a
    file in another encoding than UTF-8 is transcoded as it is read
    (:func:`~er_framework.io.csv_dialect.decoded_chunks`), a UTF-8 file keeps the fast path. ``None``:
    the extension's dialect, UTF-8 (a user's table file). ``p``: a local path, or a URL read through fsspec
    (:mod:`~er_framework.io.remote`)."""
    if fmt == "parquet":
        return read_parquet_columns(p, file, wanted, id_column, hint, max_record_bytes=limit, whole=whole)
    ids = RecordIds(fmt, id_column)
    d = dialect or DEFAULT_DIALECT
    text_csv = fmt in ("csv", "tsv")
    if text_csv:
        ids.delimiter = d.delimiter_for(fmt)
    with open_data_file(p, file, hint) as raw:
        pieces: Iterable[tuple[str, int]]
        if byte_range is not None:
            if text_csv and not d.utf8:
                raise ValueError(f"a file in {d.encoding} cannot be read by byte range")
            got = _range_pieces(raw, byte_range, text_csv, limit, file, hint, d.quote.encode(), ids, spans)
            if got is None:
                return None
            pieces = got
        else:
            pieces = _file_pieces(raw, compressed, text_csv and not d.utf8, d.encoding, limit, file, hint, ids)
        whole = whole and byte_range is None
        if fmt == "jsonl":
            if spans is not None:
                pieces = spans.pieces(pieces)
            return read_jsonl_columns(pieces, file, wanted, id_column, hint, max_record_bytes=limit, whole=whole, ids=ids, spans=spans)
        try:
            return read_csv_columns(
                pieces,
                file,
                d.delimiter_for(fmt),
                wanted,
                id_column,
                hint,
                max_record_bytes=limit,
                whole=whole,
                ids=ids,
                quote=d.quote,
                dialect_option=dialect is not None,
            )
        except InputError as exc:
            if dialect is None:
                raise
            raise InputError([_encoding_hint(q) for q in exc.problems]) from None


def _range_pieces(
    f: BinaryIO,
    byte_range: tuple[int, int],
    header: bool,
    limit: int | None,
    file: str,
    hint: str,
    quote: bytes,
    ids: RecordIds,
    spans: SpanCollector | None,
) -> Iterable[tuple[str, int]] | None:
    """The text of the lines starting in ``byte_range`` of the UTF-8 file ``f`` (after the file's header record
    when ``header``); ``None`` when no line starts there."""
    start, end = byte_range
    head = _range_start(f, start, header, limit, file, hint, quote)
    pos = f.tell()
    if pos >= end:
        return None
    if spans is not None and pos > 0:
        spans.start = pos  # the range's first line (a byte order mark is only at 0)
    body = text_chunks(f, file, False, hint, limit, stop=end, offset=pos, first_line=2 if head else 1, ids=ids)
    return chain([(_decode_head(head, file, hint), 1)], body) if head else body


def _file_pieces(
    raw: BinaryIO, compressed: bool, transcoded: bool, encoding: str, limit: int | None, file: str, hint: str, ids: RecordIds
) -> Iterable[tuple[str, int]]:
    """The text of the whole file ``raw`` (gzip decompressed; ``transcoded``: decoded from ``encoding``)."""
    f: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw  # type: ignore[assignment]
    if not transcoded:
        return text_chunks(f, file, compressed, hint, limit, ids=ids)

    def too_big(line: int, size: int, text: str) -> Problem:
        assert limit is not None
        return too_big_problem(file, line, size, limit, hint, "line", ids(text), partial=True)

    return decoded_chunks(f, file, compressed, hint, limit, encoding, too_big=too_big)


def dialect_problem(file: str, fmt: str, hint: str) -> Problem:
    """The problem of ``csv:`` on a source that is not a CSV/TSV file (``fmt``: its format, ``"pages"`` for a
    folder of web pages)."""
    what = {"jsonl": "a JSON Lines file (always UTF-8)", "parquet": "a Parquet file", "pages": "a folder of web pages"}.get(fmt, fmt)
    return Problem(
        where=file,
        message=f"csv: describes a CSV or TSV file, and this source is {what}{hint}",
        fix="remove csv: from the source (it applies to .csv and .tsv files only)",
    )


def _encoding_hint(problem: Problem) -> Problem:
    """A source's problem of bytes that are not UTF-8, with the ``csv: {encoding: …}`` to try."""
    if not problem.message.startswith("the file is not valid UTF-8"):
        return problem
    if "UTF-16" in problem.message:
        return replace(problem, fix=f"name the file's encoding on the source, csv: {{encoding: utf-16}}, or {problem.fix}")
    return replace(
        problem,
        fix=f"name the file's encoding on the source, e.g. csv: {{encoding: cp1252}} or csv: {{encoding: latin-1}}; or {problem.fix}",
    )


def _decode_head(head: bytes, file: str, hint: str) -> str:
    """The header record of a CSV file read for a byte range (a UTF-8 BOM dropped)."""
    body = head[3:] if head.startswith(codecs.BOM_UTF8) else head
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(utf8_problem(body, e.start, 1, len(head) - len(body), file, False, hint)) from None


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


def _group_long(ids: list[str], columns: dict[str, list[str | None]]) -> tuple[list[str], dict[str, list[str | None]]]:
    """Rows sharing an id -> one record; each field becomes the JSON list of its values."""
    first: dict[str, int] = {}
    rows: list[list[int]] = []
    for i, x in enumerate(ids):  # one dict step per row
        g = first.setdefault(x, len(rows))
        if g == len(rows):
            rows.append([])
        rows[g].append(i)
    out: dict[str, list[str | None]] = {
        f: [json.dumps([col[i] for i in members], ensure_ascii=False) for members in rows] for f, col in columns.items()
    }
    return list(first), out


def _is_page_folder(path: Path) -> bool:
    """Whether ``path`` is a folder of web pages.

    A folder named like a data file (``out.parquet/``, as Spark writes them)
    is not, nor a folder of Parquet files (a dataset: :mod:`~er_framework.io.parquet_dataset`).
    """
    return path.is_dir() and detect_format(path) is None and not is_parquet_dataset(path)


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
    columns: Mapping[str, str] | None = None,
    dialect: CsvDialect | None = None,
) -> tuple[Records, dict[str, Any]]:
    """:func:`read_source`, plus the reader's stats for ``report.json``.

    The stats are those of :func:`er_framework.io.html.read_html_dir` for a
    folder of web pages (files read, pages not in UTF-8, empty files, …) and
    ``{}`` for a data file. Raises what :func:`read_source` raises.
    """
    p = local_path(path) or Path("-")  # (a URL is never a page folder)
    if _is_page_folder(p):
        if dialect is not None:
            raise InputError(dialect_problem(str(path), "pages", f" (source {name!r})"))
        mapping = ColumnMap(fields, columns)
        with mapping.named():
            recs, stats = read_html_dir(
                p,
                id_column=id_column,
                fields=mapping.read,
                name=name,
                where=where,
                max_record_mb=max_record_mb,
                follow_symlinks=follow_symlinks,
            )
        return mapping.records(recs), stats
    return read_source(
        path,
        id_column=id_column,
        fields=fields,
        name=name,
        where=where,
        layout=layout,
        max_record_mb=max_record_mb,
        file_backed=file_backed,
        columns=columns,
        dialect=dialect,
    ), {}


def merge_files(files: list[Records], where: str) -> Records:
    """The records of one source read from several files, in file order; ids unique across the files."""
    ids = [i for f in files for i in f.ids]
    dup = sorted(i for i, c in Counter(ids).items() if c > 1)
    if dup:
        raise InputError(
            Problem(
                where=where,
                message=f"{len(dup)} id(s) appear in more than one file of the source: "
                f"{', '.join(dup[:5])}" + (" …" if len(dup) > 5 else ""),
                fix="ids must be unique within a source, across all its files",
            )
        )
    return Records(
        ids=ids,
        source=np.zeros(len(ids), dtype=np.int32),
        source_names=list(files[0].source_names),
        fields={k: [v for f in files for v in f.fields[k]] for k in files[0].fields},
    )


def read_dataset_file_columns(
    part: DatasetFile,
    file: str,
    wanted: list[str],
    id_column: str,
    hint: str,
    *,
    max_record_bytes: int | None = None,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw value columns of one file of a dataset, its hive partition columns added (text; ``None`` for a missing
    value), as :func:`~er_framework.io.parquet_read.read_parquet_columns` reads a Parquet file: only the ``wanted``
    columns, the same problems (a missing column names the file, with the columns it has). A file without rows is
    no problem (another file of the dataset holds records)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = [k for k, _ in part.partitions]
    try:
        with open_data_file(part.location, file, hint) as f:
            names = list(pq.read_schema(f).names)
            f.seek(0)
            present = names + keys
            table = pq.read_table(f, columns=[c for c in arrow_columns_to_read(present, wanted) if c in names])
    except (pa.ArrowException, OSError) as e:
        raise InputError(bad_parquet(file, e, hint)) from None
    for key, value in part.partitions:
        if key in wanted and present.count(key) == 1:
            table = table.append_column(key, pa.array([value] * table.num_rows, pa.string()))
    return read_arrow_columns(table, present, file, wanted, id_column, hint, max_record_bytes=max_record_bytes, whole=False)
