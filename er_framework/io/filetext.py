"""Text columns that stay in their file: a large JSON Lines source read once, its texts read again on demand.

The texts of 1,000,000 documents of ~3,800 characters are ~3.8 GB as Python
strings: more than the memory a job should take. When a source is read
*file-backed* (:func:`er_framework.io.source_files.read_source` with
``file_backed=True``), the reader still parses every line (every problem of
the file is found and reported in this first pass, with line numbers, as
usual) but keeps, for each record and text field, only where the value lies
in the file: :class:`SpanCollector` records it while the reader goes, and
:class:`FileTexts` is the column a :class:`~er_framework.data.Records` then
holds. The stages read their texts a slice of records at a time
(``records.text(rows=…)``, ``records.take(rows)``), so the texts of one slice
are in memory at once, not the corpus.

Where a value lies:

* a plain JSON string (no escape: no backslash, no quote) is stored as the
  byte span of its characters between the quotes; reading it back is one
  ``os.pread`` and a UTF-8 decode, no JSON parsing;
* any other value (escapes, numbers, lists, a key the quick search did not
  find) as the span of its whole line, parsed again with :mod:`json` and
  turned into text by the reader's own conversion;
* a missing key or ``null``: nothing (``None``).

The file is read with plain reads (``os.pread``), not mapped: pages of a
mapping that were touched count in the resident memory of the process. A
file that changed after it was read (size or modification time) is an
InputError, never texts of another file.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from er_framework.errors import InputError, Problem

__all__ = ["FileTexts", "SpanCollector", "PLAIN", "LINE", "NONE", "READ_GAP_BYTES", "READ_RUN_BYTES"]

#: kinds of stored value: none (missing or null), plain string span, whole line to parse again
NONE, PLAIN, LINE = 0, 1, 2
#: two values at most this many bytes apart in the file are read by one ``pread`` (the rest of a line between them)
READ_GAP_BYTES = 1 << 12
#: one ``pread`` reads at most about this many bytes (a slice of records in file order is a few reads)
READ_RUN_BYTES = 1 << 23
#: the characters JSON allows between a key, its colon and its value
_JSON_SPACE = " \t\r\n"


def _pread(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` of ``fd`` (``os.pread``; seek and read where there is none: Windows)."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


def _utf8_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


class SpanCollector:
    """Where the values of ``fields`` lie in a JSON Lines file, collected line by line by the reader.

    The reader hands over its pieces of text (:meth:`pieces`: the byte offset
    of each is tracked) and, for every line that becomes a record, the parsed
    object with the line and the line's byte offset (:meth:`add`); the values
    of ``fields`` are then dropped from the object (set to ``None``), so that
    the reader keeps no text. :meth:`column` gives a field's column.
    ``convert`` turns a parsed JSON value into the column's text (the reader's
    own conversion), used for values that are not plain strings.
    """

    def __init__(self, path: str | os.PathLike[str], fields: Sequence[str], convert: Callable[[list[Any]], list[str | None]]) -> None:
        self.path = os.fspath(path)
        st = os.stat(self.path)
        self.stamp = (int(st.st_size), int(st.st_mtime_ns))
        with open(self.path, "rb") as f:
            self.start = 3 if f.read(3) == b"\xef\xbb\xbf" else 0  # the reader drops a UTF-8 byte order mark
        self.fields = list(dict.fromkeys(fields))
        self.convert = convert
        self.offset = self.start  # byte offset of the current piece
        self.ascii = True  # whether the current piece is ASCII (bytes = characters)
        self._keys = {f: '"' + f + '"' for f in self.fields}
        self._kind = {f: array("B") for f in self.fields}
        self._at = {f: array("q") for f in self.fields}
        self._len = {f: array("q") for f in self.fields}
        self._chars = {f: array("q") for f in self.fields}

    def pieces(self, pieces: Iterable[tuple[str, int]]) -> Iterator[tuple[str, int]]:
        """``pieces`` (text ending on line ends, first line number) as they come, with :attr:`offset`
        and :attr:`ascii` set to each one's byte offset in the file and whether it is ASCII."""
        at = self.start
        for text, line in pieces:
            self.offset = at
            self.ascii = text.isascii()
            yield text, line
            at += len(text) if self.ascii else len(text.encode("utf-8"))

    def add(self, obj: dict[str, Any], line: str, line_at: int, ascii_line: bool) -> None:
        """Record where ``obj``'s values of the fields lie (``line`` starts at byte ``line_at``) and drop them."""
        for f in self.fields:
            v = obj.get(f)
            kind, at, size, chars = NONE, 0, 0, 0
            if v is not None:
                start = self._plain_start(line, f, v) if v.__class__ is str else -1
                if start >= 0:
                    kind, chars = PLAIN, len(v)
                    if ascii_line:
                        at, size = line_at + start, chars
                    else:
                        at, size = line_at + _utf8_bytes(line[:start]), _utf8_bytes(v)
                else:
                    text = self.convert([v])[0]
                    kind, at, size = LINE, line_at, (len(line) if ascii_line else _utf8_bytes(line))
                    chars = len(text) if text is not None else 0
                    if text is None:
                        kind, at, size = NONE, 0, 0
                obj[f] = None
            self._kind[f].append(kind)
            self._at[f].append(at)
            self._len[f].append(size)
            self._chars[f].append(chars)

    def _plain_start(self, line: str, field: str, value: str) -> int:
        """Character index in ``line`` of ``value``'s first character when it is written there as a plain
        JSON string (quotes around it, no escape inside), else -1. The first occurrence of the key is
        tried: whatever it is, the span found holds exactly ``value`` or is not used."""
        if "\\" in value or '"' in value:
            return -1
        p = line.find(self._keys[field])
        if p < 0:
            return -1
        q = p + len(field) + 2
        n = len(line)
        while q < n and line[q] in _JSON_SPACE:
            q += 1
        if q >= n or line[q] != ":":
            return -1
        q += 1
        while q < n and line[q] in _JSON_SPACE:
            q += 1
        if not line.startswith('"', q) or not line.startswith(value, q + 1) or not line.startswith('"', q + 1 + len(value)):
            return -1
        return q + 1

    def column(self, field: str) -> FileTexts:
        """The column of ``field``, one value per record added."""
        return FileTexts(
            self.path,
            self.stamp,
            np.frombuffer(self._kind[field], dtype=np.uint8).copy(),
            np.frombuffer(self._at[field], dtype=np.int64).copy(),
            np.frombuffer(self._len[field], dtype=np.int64).copy(),
            np.frombuffer(self._chars[field], dtype=np.int64).copy(),
            field,
            self.convert,
        )


class FileTexts(Sequence[str | None]):
    """A text column read from its JSON Lines file on demand (see the module's docstring).

    A sequence of ``str | None`` like the list a reader returns: ``col[i]``,
    ``col[a:b]`` (a list), iteration (a slice of records at a time),
    :meth:`read` (any rows), :meth:`take` (a column of some rows, nothing
    read) and :meth:`text_sizes` (characters of each value, known without
    reading). Values are read with ``os.pread``; rows close together in the
    file share one read.
    """

    def __init__(
        self,
        path: str,
        stamp: tuple[int, int],
        kind: npt.NDArray[np.uint8],
        at: npt.NDArray[np.int64],
        size: npt.NDArray[np.int64],
        chars: npt.NDArray[np.int64],
        key: str,
        convert: Callable[[list[Any]], list[str | None]],
    ) -> None:
        self.path, self.stamp, self.key, self.convert = path, stamp, key, convert
        self.kind, self.at, self.size, self.chars = kind, at, size, chars

    def __len__(self) -> int:
        return int(len(self.kind))

    @classmethod
    def concat(cls, parts: Sequence[FileTexts]) -> FileTexts:
        """One column of several columns of one field of one file (e.g. its byte ranges), in order."""
        first = parts[0]
        if any((p.path, p.stamp, p.key) != (first.path, first.stamp, first.key) for p in parts):
            raise ValueError("FileTexts.concat: the columns are not of one field of one file as it was")
        return cls(
            first.path,
            first.stamp,
            np.concatenate([p.kind for p in parts]),
            np.concatenate([p.at for p in parts]),
            np.concatenate([p.size for p in parts]),
            np.concatenate([p.chars for p in parts]),
            first.key,
            first.convert,
        )

    def __repr__(self) -> str:
        return f"FileTexts({self.path!r}, {self.key!r}, {len(self)} values)"

    @overload
    def __getitem__(self, i: int) -> str | None: ...

    @overload
    def __getitem__(self, i: slice) -> list[str | None]: ...

    def __getitem__(self, i: int | slice) -> str | None | list[str | None]:
        if isinstance(i, slice):
            return self.read(np.arange(*i.indices(len(self)), dtype=np.int64))
        n = len(self)
        j = int(i)
        if not -n <= j < n:
            raise IndexError("FileTexts index out of range")
        return self.read(np.asarray([j % n], dtype=np.int64))[0]

    def __iter__(self) -> Iterator[str | None]:
        n = len(self)
        step = 4096
        for a in range(0, n, step):
            yield from self.read(np.arange(a, min(n, a + step), dtype=np.int64))

    def text_sizes(self) -> npt.NDArray[np.int64]:
        """Characters of each value (0 for ``None``), without reading the file."""
        return self.chars

    def take(self, rows: npt.ArrayLike) -> FileTexts:
        """The column of ``rows`` (in that order); nothing is read."""
        idx = np.asarray(rows, dtype=np.int64)
        return FileTexts(self.path, self.stamp, self.kind[idx], self.at[idx], self.size[idx], self.chars[idx], self.key, self.convert)

    def read(self, rows: npt.ArrayLike) -> list[str | None]:
        """The values of ``rows`` (in that order), read from the file."""
        idx = np.asarray(rows, dtype=np.int64)
        out: list[str | None] = [None] * len(idx)
        if len(idx) == 0:
            return out
        kind, at, size = self.kind[idx], self.at[idx], self.size[idx]
        want = np.flatnonzero(kind != NONE)
        if len(want) == 0:
            return out
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))  # one descriptor per call: threads
        try:
            st = os.fstat(fd)
            if (int(st.st_size), int(st.st_mtime_ns)) != self.stamp:
                raise InputError(
                    Problem(
                        where=self.path,
                        message="the file changed after the job read it (its texts are read again from the file while the job runs)",
                        fix="do not write to a source while a job reads it; run the job again",
                    )
                )
            # Python lists, not numpy scalars, in the loop over values (it holds the GIL: other threads wait)
            at_of, size_of, kind_of, rows_of = at.tolist(), size.tolist(), kind.tolist(), want.tolist()
            for a, b in self._runs(at[want], size[want]):
                lo = at_of[rows_of[a]]
                hi = at_of[rows_of[b - 1]] + size_of[rows_of[b - 1]]
                buf = _pread(fd, hi - lo, lo)
                if len(buf) != hi - lo:
                    raise InputError(
                        Problem(
                            where=self.path,
                            message="the file is shorter than when the job read it",
                            fix="do not write to a source while a job reads it; run the job again",
                        )
                    )
                for r in rows_of[a:b]:
                    x = at_of[r] - lo
                    raw = buf if b - a == 1 else buf[x : x + size_of[r]]  # a run of one value: the whole read
                    if kind_of[r] == PLAIN:
                        out[r] = raw.decode("utf-8")
                    else:
                        value = json.loads(raw)
                        out[r] = self.convert([value.get(self.key) if isinstance(value, dict) else None])[0]
        finally:
            os.close(fd)
        return out

    def prefetch(self, rows: npt.ArrayLike) -> None:
        """Ask the operating system to bring the values of ``rows`` into its page cache, without waiting
        (``posix_fadvise(WILLNEED)``, one advice per group of values at most :data:`READ_GAP_BYTES`
        apart in the file; nothing where the call does not exist). A hint only: nothing is read or
        checked here, and a failing advice is ignored (:meth:`read` reads and checks as always).

        Verification reads the candidates' texts in an order of its own, scattered over the file; once
        the file has left the page cache, each value read is a wait for the disk (measured on 200,000
        documents: 8.0 s against 4.5-5.6 s for a verification whose file was cached). Advising the next
        chunk's values while the current one is scored overlaps those waits with the work.
        """
        advise = getattr(os, "posix_fadvise", None)
        if advise is None:  # pragma: no cover - Windows, macOS
            return
        idx = np.asarray(rows, dtype=np.int64)
        want = idx[(self.kind[idx] != NONE) & (self.size[idx] > 0)]  # an advice of length 0 means "to the end"
        if len(want) == 0:
            return
        spans = self._advice_spans(self.at[want], self.size[want])
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            for lo, hi in spans:
                advise(fd, lo, hi - lo, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)

    @staticmethod
    def _advice_spans(at: npt.NDArray[np.int64], size: npt.NDArray[np.int64]) -> list[tuple[int, int]]:
        """Byte ranges ``[lo, hi)`` in file order, disjoint, that cover the values at ``at`` (``size``
        bytes each, any order): values at most :data:`READ_GAP_BYTES` apart share one range."""
        if len(at) == 0:
            return []
        order = np.argsort(at, kind="stable")
        lo = at[order]
        end = np.maximum.accumulate(lo + size[order])
        first = np.concatenate([[0], np.flatnonzero(lo[1:] - end[:-1] > READ_GAP_BYTES) + 1])
        last = np.concatenate([first[1:], [len(lo)]]) - 1
        return list(zip(lo[first].tolist(), end[last].tolist()))

    @staticmethod
    def _runs(at: npt.NDArray[np.int64], size: npt.NDArray[np.int64]) -> list[tuple[int, int]]:
        """Groups ``[a, b)`` of consecutive values that one read covers: each starts at most
        :data:`READ_GAP_BYTES` after the last one ended, and a group spans at most about :data:`READ_RUN_BYTES`."""
        n = len(at)
        if n == 0:
            return []
        end = at + size
        gap = at[1:] - end[:-1]
        cut = np.flatnonzero((gap < 0) | (gap > READ_GAP_BYTES)) + 1
        firsts, stops = np.concatenate([[0], cut]).astype(np.int64), np.concatenate([cut, [n]]).astype(np.int64)
        if bool((end[stops - 1] - at[firsts] <= READ_RUN_BYTES).all()):  # no run to split (the usual)
            return list(zip(firsts.tolist(), stops.tolist()))
        runs: list[tuple[int, int]] = []
        for a, b in zip(firsts.tolist(), stops.tolist()):
            s = a
            while s < b:  # split a long run into reads of about READ_RUN_BYTES
                limit = int(at[s]) + READ_RUN_BYTES
                e = s + 1 + int(np.searchsorted(end[s + 1 : b], limit, side="right"))
                runs.append((s, min(e, b)))
                s = min(e, b)
        return runs
