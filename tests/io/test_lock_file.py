"""The lock file (io/lock_file): created once, never through a link, never a non-regular file; the holder line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from er_framework.errors import ErError
from er_framework.io.lock_file import open_lock_file, read_holder, write_holder

KW = {"where": "idx", "what": "the index's lock file", "doing": "lock the index for writing"}


def test_created_then_reused_with_the_holder_line(tmp_path: Path) -> None:
    lock = tmp_path / ".idx.lock"
    fd = open_lock_file(lock, **KW)
    try:
        assert read_holder(fd) is None
        write_holder(fd, "build")
        assert read_holder(fd) == (os.getpid(), "build")
        write_holder(fd, "add")  # replaces er's own line
        assert read_holder(fd) == (os.getpid(), "add")
    finally:
        os.close(fd)
    fd = open_lock_file(lock, **KW)
    os.close(fd)
    assert lock.read_text() == f"{os.getpid()} add\n"


def test_a_foreign_file_is_locked_but_never_written(tmp_path: Path) -> None:
    lock = tmp_path / ".idx.lock"
    lock.write_text("someone else's notes\n")
    fd = open_lock_file(lock, **KW)
    try:
        write_holder(fd, "build")
        assert read_holder(fd) is None
    finally:
        os.close(fd)
    assert lock.read_text() == "someone else's notes\n"


def test_links_and_non_regular_files_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    link = tmp_path / ".idx.lock"
    link.symlink_to(target)
    with pytest.raises(ErError, match="symbolic link"):
        open_lock_file(link, **KW)
    assert target.read_text() == "keep"
    fifo = tmp_path / ".fifo.lock"
    os.mkfifo(fifo)
    with pytest.raises(ErError, match="not a regular file"):
        open_lock_file(fifo, **KW)
