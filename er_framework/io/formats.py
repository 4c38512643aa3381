"""File formats the readers understand, and limits shared by the readers of :mod:`er_framework.io`."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from er_framework.errors import Problem

__all__ = [
    "DEFAULT_MAX_RECORD_MB",
    "FORMATS",
    "MAX_ROW_PROBLEMS",
    "MB",
    "RECORD_FIX",
    "SUPPORTED_EXTENSIONS",
    "file_kind",
    "mb_text",
    "not_regular_problem",
    "open_regular",
    "record_limit",
]

#: How many problems of one kind (e.g. "empty id") are listed one by one
#: before the rest are summarized as a count.
MAX_ROW_PROBLEMS = 10

#: Extension -> (format, gzip-compressed). Longest extensions first.
FORMATS: dict[str, tuple[str, bool]] = {
    ".csv.gz": ("csv", True),
    ".tsv.gz": ("tsv", True),
    ".jsonl.gz": ("jsonl", True),
    ".ndjson.gz": ("jsonl", True),
    ".csv": ("csv", False),
    ".tsv": ("tsv", False),
    ".jsonl": ("jsonl", False),
    ".ndjson": ("jsonl", False),
    ".parquet": ("parquet", False),
}

#: The extensions :func:`read_source` understands.
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(FORMATS)


# --------------------------------------------------------------------------
# guards shared by the readers: record size, regular files only
# --------------------------------------------------------------------------

#: The default of a source's ``max_record_mb``: the largest record a reader accepts.
DEFAULT_MAX_RECORD_MB = 16.0

#: One "MB" of ``max_record_mb``.
MB = 1 << 20

#: What to tell the user when a record is too large.
RECORD_FIX = "raise sources[i].max_record_mb or split the record"


def record_limit(max_record_mb: float | None) -> int | None:
    """``max_record_mb`` in bytes (``None``: no limit)."""
    if max_record_mb is None:
        return None
    return max(1, int(max_record_mb * MB))


def mb_text(size: int) -> str:
    """A size in bytes as MB text (``"16 MB"``, ``"0.5 MB"``, ``"20.3 MB"``)."""
    mb = size / MB
    text = f"{mb:.1f}" if mb >= 0.1 else f"{mb:.3g}"
    return (text[:-2] if text.endswith(".0") else text) + " MB"


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (from ``os.stat(...).st_mode``)."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def not_regular_problem(path: str | Path, mode: int, hint: str) -> Problem:
    """The problem for a source path that is a FIFO, a device, a socket, …"""
    return Problem(
        where=str(path),
        message=f"{str(path)!r} is {file_kind(mode)}, not a regular file{hint}: only regular files "
        "are read (a pipe or a device could block or never end)",
        fix="save the data to a regular file first and point the path to it",
    )


def open_regular(path: str | Path, *, follow_symlinks: bool = True) -> tuple[BinaryIO | None, int]:
    """Open ``path`` for reading if it is a regular file: ``(file, st_mode)``.

    Returns ``(None, st_mode)`` when it is something else (a FIFO, a device,
    a socket, a directory, or - with ``follow_symlinks=False`` - a symbolic
    link). The file is opened with ``O_NONBLOCK`` (and ``O_NOFOLLOW``) and
    checked with ``fstat`` on the open descriptor, so a file swapped for a
    FIFO after an earlier check can neither block the open nor be read.
    Raises ``OSError`` when the file cannot be opened.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return None, st.st_mode
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            return None, mode
        if flags & getattr(os, "O_NONBLOCK", 0):  # back to ordinary reads (no effect on regular files anyway)
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), mode
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
