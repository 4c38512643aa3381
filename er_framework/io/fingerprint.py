"""Fingerprints of a run's input files: report.json records them, ``er explain`` (and ``er review``) compare.

A command that reads a run's sources again (``er explain`` reads the two records it explains) would explain
different data if a source changed after the run. The run records each input's fingerprint in report.json
(``inputs``), and :func:`changed_inputs` says which of them changed since.

* A **file**: its size, ``mtime_ns`` and the SHA-256 of its bytes: of the whole file up to
  :data:`WHOLE_HASH_MAX` bytes, else of its first and last :data:`EDGE_BYTES` (with the size: a file of
  gigabytes is fingerprinted in milliseconds). A file whose content hash covers every byte and still matches
  is unchanged even when its modification time moved (a ``touch``, a copy); a larger one whose modification
  time moved is changed (the middle is not hashed).
* A **folder of pages**: the number of pages, their total size, and the SHA-256 of the sorted listing of
  every page's relative path, size and ``mtime_ns`` (the pages are not read again: a corpus of a million
  pages is fingerprinted by one walk).
* A **Parquet dataset** (a folder of Parquet files, local or at a URL): the number of files, their total size and
  the SHA-256 of the listing of every file's path, size and modification time (or version).
* A **URL** read through fsspec (``s3://``, ``gs://``, ``memory://``): its size and version as its file system
  tells them (``etag``, else the modification or creation time; :func:`~er_framework.io.remote.url_info`): the
  bytes are not read again.
* A **database source** (a query or table, :mod:`er_framework.io.database_read`): the number of rows and a
  digest of the rows as read (:class:`RowsDigest`, computed while the reader fetches them, no second query),
  with the URL (password masked) and the table or query (:func:`database_fingerprint`). A command that reads
  the source again computes the digest of what it reads and compares (:func:`database_difference`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.errors import ErError
from er_framework.io.page_folder import list_pages
from er_framework.io.parquet_dataset import dataset_files, is_parquet_dataset
from er_framework.io.remote import is_url, local_path, url_info

__all__ = [
    "EDGE_BYTES",
    "ROWS_DIGEST_VERSION",
    "WHOLE_HASH_MAX",
    "RowsDigest",
    "changed_inputs",
    "database_difference",
    "database_fingerprint",
    "fingerprint",
]

#: bytes hashed at each end of a large file
EDGE_BYTES = 1 << 20
#: files up to this size are hashed whole
WHOLE_HASH_MAX = 2 * EDGE_BYTES


def _file_fingerprint(path: Path) -> dict[str, Any]:
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        h = hashlib.sha256()
        if st.st_size <= WHOLE_HASH_MAX:
            h.update(f.read(WHOLE_HASH_MAX + 1))
            hashed = "whole"
        else:
            h.update(f.read(EDGE_BYTES))
            f.seek(st.st_size - EDGE_BYTES)
            h.update(f.read(EDGE_BYTES))
            hashed = "first and last MB"
    return {"kind": "file", "size": int(st.st_size), "mtime_ns": int(st.st_mtime_ns), "sha256": h.hexdigest(), "hashed": hashed}


def _folder_fingerprint(path: Path) -> dict[str, Any]:
    listing = list_pages(path)
    h = hashlib.sha256()
    total = 0
    newest = 0
    for rel, _ in listing.pages:
        try:
            st = os.lstat(path / rel)
        except OSError:
            h.update(f"{rel}\0missing\n".encode("utf-8", "surrogateescape"))
            continue
        total += st.st_size
        newest = max(newest, st.st_mtime_ns)
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return {"kind": "folder", "pages": len(listing.pages), "size": total, "mtime_ns": newest, "sha256": h.hexdigest(), "hashed": "listing"}


def _dataset_fingerprint(path: str) -> dict[str, Any]:
    """A Parquet dataset (local or at a URL): the SHA-256 of the listing of its files with their sizes and versions."""
    h = hashlib.sha256()
    total = 0
    files = dataset_files(path)
    for f in files:
        info = _one_file(f.location)
        total += int(info.get("size") or 0)
        h.update(f"{f.location}\0{info.get('size')}\0{info.get('mtime_ns', info.get('version'))}\n".encode("utf-8", "surrogateescape"))
    return {"kind": "dataset", "files": len(files), "size": total, "sha256": h.hexdigest(), "hashed": "listing"}


def _one_file(location: str) -> dict[str, Any]:
    local = local_path(location)
    if local is None:
        return url_info(location)
    st = os.stat(local)
    return {"size": int(st.st_size), "mtime_ns": int(st.st_mtime_ns)}


def fingerprint(path: str | Path) -> dict[str, Any]:
    """The fingerprint of an input file, page folder or Parquet dataset ``path`` (see the module), with its ``path``;
    an ``error`` (the OS's message) instead when it cannot be read. A URL read through fsspec
    (:mod:`~er_framework.io.remote`): its size and version (etag, modification time) as its file system tells."""
    if is_url(path) and local_path(path) is None:
        url = str(path)
        try:
            found = _dataset_fingerprint(url) if is_parquet_dataset(url) else url_info(url)
        except ErError as exc:
            return {"path": url, "error": exc.problems[0].message[:200] if exc.problems else "refused"}
        return {"path": url, **found}
    p = Path(os.path.abspath(local_path(path) or path))
    try:
        if is_parquet_dataset(p):
            found = _dataset_fingerprint(str(p))
        else:
            found = _folder_fingerprint(p) if p.is_dir() else _file_fingerprint(p)
    except OSError as exc:
        return {"path": str(p), "error": str(exc.strerror or exc)[:200]}
    except ErError as exc:  # a page folder the walk refuses (too many entries, a system folder)
        return {"path": str(p), "error": exc.problems[0].message[:200] if exc.problems else "refused"}
    return {"path": str(p), **found}


def _count(value: Any) -> str:
    """A number of report.json as text (a tampered report may hold anything: never a crash)."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"


def _difference(then: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """What differs between two fingerprints of one path (None: unchanged)."""
    if now.get("error"):
        return f"it cannot be read now ({now['error']})"
    if then.get("error"):
        return None  # it could not be fingerprinted at the run: nothing to compare
    if then.get("kind") != now.get("kind"):
        return f"it was a {'folder' if then.get('kind') == 'folder' else 'file'} and is now a {now.get('kind')}"
    if then.get("kind") == "dataset" and then.get("files") != now.get("files"):
        return f"it held {_count(then.get('files'))} Parquet files and now holds {_count(now.get('files'))}"
    if then.get("size") != now.get("size"):
        return f"its size was {_count(then.get('size'))} bytes and is now {_count(now.get('size'))}"
    if then.get("kind") == "url" and then.get("version") != now.get("version"):
        return f"its version changed ({then.get('version')} at the run, {now.get('version')} now)"
    if then.get("kind") == "folder" and then.get("pages") != now.get("pages"):
        return f"it held {_count(then.get('pages'))} pages and now holds {_count(now.get('pages'))}"
    if then.get("sha256") != now.get("sha256"):
        return "its content differs" if then.get("kind") == "file" else "its pages were changed, renamed or touched"
    if then.get("hashed") != "whole" and then.get("mtime_ns") != now.get("mtime_ns"):
        return "it was modified after the run (its modification time moved; the middle of a large file is not hashed)"
    return None


def changed_inputs(recorded: Sequence[Mapping[str, Any]], paths: Sequence[str | Path]) -> list[tuple[str, str]]:
    """``(path, what changed)`` for each of ``paths`` (the job's inputs now) that differs from its fingerprint in
    ``recorded`` (report.json ``inputs``), or that the run did not read; unchanged inputs give nothing."""
    by_path = {str(r.get("path")): r for r in recorded if isinstance(r, Mapping)}
    out: list[tuple[str, str]] = []
    for path in paths:
        path = str(path) if is_url(path) and local_path(path) is None else os.path.abspath(local_path(path) or path)
        then = by_path.get(path)
        if then is None:
            out.append((str(path), "the run did not read it (the job's sources changed since the run)"))
            continue
        diff = _difference(then, fingerprint(path))
        if diff is not None:
            out.append((str(path), diff))
    return out


# ------------------------------------------------------------------ database sources

#: the version of :class:`RowsDigest`'s definition, hashed into every digest (a changed definition never
#: compares equal to an old digest by accident)
ROWS_DIGEST_VERSION = "er-rows-v1"


def _escaped(col: Sequence[str | None]) -> Sequence[str]:
    """A column's values as :class:`RowsDigest` hashes them: ``None`` is ``"\\x01"``, a text has each ``\\x01``
    doubled and each ``\\x00`` written ``\\x01\\x02``; a column holding neither (nearly all) is only checked."""
    present = "".join(filter(None, col))
    if "\x00" in present or "\x01" in present:
        return ["\x01" if v is None else v.replace("\x01", "\x01\x01").replace("\x00", "\x01\x02") for v in col]
    if None in col:
        return ["\x01" if v is None else v for v in col]
    return col  # type: ignore[return-value]  # no None in it


class RowsDigest:
    """An order-free SHA-256 digest of a source's rows as read, fed a batch at a time (:meth:`update`).

    Each row (its id and the fields' values, each text or ``None``) is hashed on its own: SHA-256 of the
    values joined by ``\\x00``, each escaped so that the joining cannot be ambiguous (``None`` is ``\\x01``, a
    ``\\x01`` in a text ``\\x01\\x01``, a ``\\x00`` ``\\x01\\x02``). The row hashes are **added**: read as four
    64-bit words each, summed word by word modulo 2**64 (numpy, a batch at a time). The digest is the SHA-256 of
    :data:`ROWS_DIGEST_VERSION`, the column names, the number of rows and the four sums.

    Why a sum: a query without ``ORDER BY`` may return its rows in another order the next time (PostgreSQL after
    a ``VACUUM``, a parallel plan), and that is not a change of the data: a sum does not depend on the order of
    the rows, nor on how they were split into batches. Sorting by id would do the same, but needs every row's
    hash held and sorted at the end; the sum streams in constant memory. A sum rather than an XOR: an XOR
    cancels two equal rows (a row read twice would look like no row), a sum counts them. A changed value, an
    added or a removed row changes the digest (and the count) but for a chance of about 2**-256 per change.
    This is a check against accidents, not against forgery: rows built on purpose could collide.
    """

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.rows = 0
        self._sums = np.zeros(4, dtype=np.uint64)

    def update(self, values: Sequence[Sequence[str | None]]) -> None:
        """Add a batch: ``values`` holds one list per column (in :attr:`columns`' order), of equal lengths."""
        if len(values) != len(self.columns):
            raise ValueError(f"RowsDigest.update: {len(values)} columns given, {len(self.columns)} expected")
        n = len(values[0]) if values else 0
        if n == 0:
            return
        sha, join = hashlib.sha256, "\x00".join
        hashes = b"".join([sha(join(row).encode("utf-8", "surrogatepass")).digest() for row in zip(*map(_escaped, values))])
        words = np.frombuffer(hashes, dtype="<u8").reshape(-1, 4)
        self._sums += words.sum(axis=0, dtype=np.uint64)  # uint64 sums wrap around: modulo 2**64
        self.rows += n

    def hexdigest(self) -> str:
        """The digest of the rows added so far (hexadecimal SHA-256)."""
        h = hashlib.sha256(ROWS_DIGEST_VERSION.encode())
        for name in self.columns:
            h.update(b"\x00" + name.encode("utf-8", "surrogatepass"))
        h.update(b"\x00\x00" + str(self.rows).encode() + b"\x00" + self._sums.astype("<u8").tobytes())
        return h.hexdigest()


def database_fingerprint(source: str, stats: Mapping[str, Any], *, table: str | None = None, query: str | None = None) -> dict[str, Any]:
    """report.json's ``inputs`` entry of database source ``source``, from its reading statistics ``stats``
    (:func:`~er_framework.io.database_read.read_database`'s: ``database``, the URL masked, ``rows``, ``sha256``)
    and its ``table`` or ``query``."""
    what = {"table": table} if table is not None else {"query": query}
    rows, sha256 = stats.get("rows"), stats.get("sha256")
    return {"source": source, "kind": "database", "database": stats.get("database"), **what, "rows": rows, "sha256": sha256}


def database_difference(then: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """What differs between two :func:`database_fingerprint` of one source (None: unchanged): the database, the
    table or query read, the number of rows, the rows' values (never the values themselves)."""
    if then.get("database") != now.get("database"):
        return f"the run read the database {then.get('database')!r}, the job now names {now.get('database')!r}"
    for key in ("table", "query"):
        if then.get(key) != now.get(key):
            was = f"{key} {then[key]!r}" if then.get(key) is not None else f"another {'query' if key == 'table' else 'table'}"
            return f"the run read {was}, the job now reads {'table' if now.get('table') is not None else 'a query'} instead"
    if then.get("rows") != now.get("rows"):
        return f"it held {_count(then.get('rows'))} rows and now holds {_count(now.get('rows'))}"
    if then.get("sha256") != now.get("sha256"):
        return "the values of its rows differ (their digest differs; the order of the rows is not compared)"
    return None
