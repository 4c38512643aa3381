"""The one single-file writer: atomic, never over a non-regular file or an input, clear errors."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from er_framework.errors import InputError
from er_framework.io.safe_write import write_text_file


def test_writes_and_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "m.json"
    assert write_text_file(target, "one\n", what="model file") == target.resolve()
    assert target.read_text() == "one\n"
    os.chmod(target, 0o600)
    write_text_file(target, "two\n", what="model file")
    assert target.read_text() == "two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # the replaced file's permissions are kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary file left


def test_follows_a_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text_file(link, "new", what="model file")
    assert link.is_symlink() and real.read_text() == "new"


def test_refuses_an_input_of_the_job(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("id,name\n1,a\n")
    with pytest.raises(InputError, match="an input of the job"):
        write_text_file(tmp_path / "." / "data.csv", "x", what="model file", inputs=[data])
    assert data.read_text() == "id,name\n1,a\n"


def test_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO|not a regular file"):
        write_text_file(fifo, "x", what="model file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(InputError, match="not a regular file"):
        write_text_file(tmp_path, "x", what="model file")
    with pytest.raises(InputError, match="not a regular file"):
        write_text_file("/dev/null", "x", what="model file")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_missing_folder_and_empty_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        write_text_file(tmp_path / "no" / "m.json", "x", what="model file")
    with pytest.raises(InputError, match="path is empty"):
        write_text_file("", "x", what="model file")
