"""A CSV/TSV source's dialect (``csv: {delimiter, quote, encoding}`` of a source) and its text decoded in a stream.

:class:`CsvDialect` is what the readers are given (``SourceSpec.read_options()["dialect"]``); its defaults
read what the file's extension says (``,`` for ``.csv``, a tab for ``.tsv``, ``"`` quotes, UTF-8).

A file in another encoding than UTF-8 (latin-1, cp1252, UTF-16 with its byte order mark …) is transcoded
as it is read (:func:`decoded_chunks`: an incremental decoder fed 1 MB at a time, so memory holds one
chunk and one line, as for UTF-8); UTF-8 files keep the readers' own fast path
(:func:`~er_framework.io.data_file.text_chunks`), byte for byte. A byte that does not decode is an
:class:`~er_framework.errors.InputError` naming the line and the byte offset, with the ``csv: {encoding: …}``
to try.

This module imports only the standard library (``er validate`` reads headers with it).
"""

from __future__ import annotations

import codecs
import gzip
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from er_framework.errors import InputError, Problem
from er_framework.io.formats import RECORD_FIX, mb_text

__all__ = ["DEFAULT_DIALECT", "CsvDialect", "codec_name", "decoded_chunks", "is_utf8", "separator_name"]

#: bytes read at a time (before decoding)
_CHUNK = 1 << 20


def codec_name(encoding: str) -> str:
    """Python's name of the codec ``encoding`` (``"latin1"`` -> ``"iso8859-1"``); ValueError naming the
    setting for a name Python does not know."""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(
            f"unknown encoding {encoding!r}: csv: {{encoding: …}} takes a Python codec name, e.g. utf-8, latin-1, cp1252 or utf-16"
        ) from None


def is_utf8(encoding: str) -> bool:
    """Whether text in ``encoding`` is read as UTF-8 (``utf-8``, ``utf8``, ``utf-8-sig``: the readers drop a
    UTF-8 byte order mark anyway)."""
    return codec_name(encoding) in ("utf-8", "utf-8-sig")


def separator_name(delimiter: str) -> str:
    """How messages name a separator: ``tab`` or its ``repr``."""
    return "tab" if delimiter == "\t" else repr(delimiter)


@dataclass(frozen=True)
class CsvDialect:
    """How a CSV/TSV file is written: ``delimiter`` (``None``: ``,`` for CSV, a tab for TSV), ``quote``
    and ``encoding`` (a Python codec name)."""

    delimiter: str | None = None
    quote: str = '"'
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        if self.delimiter is not None and len(self.delimiter) != 1:
            raise ValueError(f"csv: delimiter must be one character, got {self.delimiter!r}")
        if len(self.quote) != 1:
            raise ValueError(f"csv: quote must be one character, got {self.quote!r}")
        if self.delimiter is not None and self.delimiter == self.quote:
            raise ValueError(f"csv: delimiter and quote are both {self.quote!r}: they must differ")
        if self.delimiter in ("\n", "\r") or self.quote in ("\n", "\r"):
            raise ValueError("csv: a line end cannot be the delimiter or the quote")
        codec_name(self.encoding)

    def delimiter_for(self, fmt: str) -> str:
        """The separator of a file of format ``fmt`` (``"csv"`` or ``"tsv"``)."""
        if self.delimiter is not None:
            return self.delimiter
        return "\t" if fmt == "tsv" else ","

    @property
    def utf8(self) -> bool:
        """Whether the file is read as UTF-8 (the readers' fast path)."""
        return is_utf8(self.encoding)


#: the dialect of a source without ``csv:``
DEFAULT_DIALECT = CsvDialect()


def _decode_problem(file: str, line: int, offset: int, bad: bytes, encoding: str, reason: str, compressed: bool, hint: str) -> Problem:
    of = " of the decompressed data" if compressed else ""
    others = [e for e in ("utf-8", "cp1252", "latin-1", "utf-16") if codec_name(e) != codec_name(encoding)][:3]
    return Problem(
        where=f"{file}:{line}",
        message=f"the file is not valid {encoding}: byte {bad!r} at byte offset {offset}{of} (line {line}) "
        f"cannot be decoded ({reason}){hint}",
        fix="name the file's encoding on the source: " + " or ".join(f"csv: {{encoding: {e}}}" for e in others) + ", or re-encode the file",
    )


def decoded_chunks(
    f: BinaryIO,
    file: str,
    compressed: bool,
    hint: str,
    limit: int | None,
    encoding: str,
    *,
    too_big: Callable[[int, int, str], Problem] | None = None,
    chunk: int = _CHUNK,
) -> Iterator[tuple[str, int]]:
    """The text of ``f`` in ``encoding`` in pieces of about 1 MB, each ending on a line end (the last one
    may not): ``(text, number of its first line)``, as :func:`~er_framework.io.data_file.text_chunks`
    yields UTF-8 text.

    Decoded by an incremental decoder (a character split between two reads is completed by the next),
    so memory holds one chunk and one line; a byte order mark at the start is dropped (UTF-16 and UTF-32
    need theirs to tell the byte order). A line under way longer than ``limit`` bytes (of UTF-8)
    raises InputError at once (``too_big(line, size, text)`` makes its problem); a byte that does not
    decode raises InputError naming the line and the byte offset.
    """
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    carry = ""
    line = 1  # the number of carry's first line
    consumed = 0  # bytes fed to the decoder
    first = True
    while True:
        raw = _read(f, chunk, file, hint)
        final = not raw
        try:
            text = decoder.decode(raw, final)
        except UnicodeError as e:
            raise InputError(_undecodable(e, raw, consumed, line + carry.count("\n"), encoding, file, compressed, hint)) from None
        consumed += len(raw)
        if first and text:
            first = False
            text = text[1:] if text[0] == "\ufeff" else text
        if final:
            if carry + text:
                yield carry + text, line
            return
        nl = text.rfind("\n")
        if nl < 0:
            carry += text
        else:
            piece = carry + text[: nl + 1]
            carry = text[nl + 1 :]
            yield piece, line
            line += piece.count("\n")
        if limit is not None and len(carry) > limit // 4:
            _check_size(carry, line, limit, too_big, file, hint)


def _read(f: BinaryIO, chunk: int, file: str, hint: str) -> bytes:
    """The next ``chunk`` bytes of ``f``; InputError for a broken gzip stream or a read that fails."""
    try:
        return f.read(chunk)
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise InputError(
            Problem(
                where=file,
                message=f"not a valid gzip file ({e}){hint}",
                fix="re-compress the file with gzip, or remove the .gz extension if it is not compressed",
            )
        ) from None
    except OSError as e:
        raise InputError(
            Problem(where=file, message=f"cannot read the file: {e.strerror or e}{hint}", fix="check the file's permissions")
        ) from None


def _undecodable(e: UnicodeError, raw: bytes, consumed: int, line: int, encoding: str, file: str, compressed: bool, hint: str) -> Problem:
    """The problem of bytes that do not decode (``raw``: the bytes just read, ``consumed``: the bytes fed to the
    decoder before them, ``line``: the line the decoder's text had reached)."""
    if isinstance(e, UnicodeDecodeError):
        pending = len(e.object) - len(raw)  # bytes the decoder held from the previous read
        offset = consumed - pending + e.start
        line_at = line + _lines_before(e.object[: e.start], encoding)
        return _decode_problem(file, line_at, offset, bytes(e.object[e.start : e.start + 1]), encoding, e.reason, compressed, hint)
    return Problem(  # e.g. UTF-16 without its byte order mark
        where=f"{file}:{line}",
        message=f"the file cannot be read as {encoding}: {e}{hint}",
        fix="name the file's encoding on the source with its byte order, e.g. csv: {encoding: utf-16-le} "
        "(or utf-16-be), or csv: {encoding: utf-8}",
    )


def _check_size(carry: str, line: int, limit: int, too_big: Callable[[int, int, str], Problem] | None, file: str, hint: str) -> None:
    """InputError when the line under way (``carry``, from line ``line``) is larger than ``limit`` bytes of UTF-8."""
    size = len(carry.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return
    if too_big is not None:
        raise InputError(too_big(line, size, carry[:4096]))
    raise InputError(
        Problem(
            where=f"{file}:{line}",
            message=f"the record on line {line} is larger than the limit of {mb_text(limit)} (max_record_mb){hint}",
            fix=RECORD_FIX,
        )
    )


def _lines_before(data: bytes, encoding: str) -> int:
    """Line ends in ``data`` (the bytes before a byte that does not decode)."""
    return codecs.decode(data, encoding, "replace").count("\n")
