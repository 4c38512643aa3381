"""The one single-file writer: atomic, never over a non-regular file or an input, clear errors."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from er_framework.errors import InputError, os_problem
from er_framework.io.safe_write import TEMP_MARK, csv_header_kind, open_for_write, pid_alive, write_text_file


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


def er_output_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "report.json").write_text('{"config_hash": "x", "versions": {}, "outputs": ["pairs.csv", "report.json"]}')
    (folder / "pairs.csv").write_text("left_id,right_id\n")
    return folder


def test_outputs_of_a_run_are_refused(tmp_path: Path) -> None:
    out = er_output_folder(tmp_path / "out")
    for name in ("pairs.csv", "report.json", "clusters.csv", ".er-commit.json"):
        with pytest.raises(InputError, match="output"):
            write_text_file(out / name, "x", what="labels file")
    stage = out / ".er-tmp-123"
    stage.mkdir()
    with pytest.raises(InputError, match="temporary folder"):
        write_text_file(stage / "labels.csv", "x", what="labels file")
    assert (out / "pairs.csv").read_text() == "left_id,right_id\n"
    write_text_file(out / "labels.csv", "a\n", what="labels file")  # another name beside the outputs is fine


def test_an_existing_file_of_another_kind_is_refused_without_quoting_it(tmp_path: Path) -> None:
    kind = csv_header_kind("a labels file", ["left_source", "left_id"])
    secret = tmp_path / "data.csv"
    secret.write_text("name,password\nann,hunter2\n")
    with pytest.raises(InputError) as info:
        write_text_file(secret, "x", what="labels file", kind=kind)
    assert "hunter2" not in info.value.render() and "password" not in info.value.render()
    assert secret.read_text() == "name,password\nann,hunter2\n"
    ok = tmp_path / "labels.csv"
    ok.write_bytes('\ufeff"left_source";"LEFT_ID";x\r\n'.encode())  # as a spreadsheet saves it
    write_text_file(ok, "left_source,left_id\n", what="labels file", kind=kind)
    empty = tmp_path / "empty.csv"
    empty.touch()
    write_text_file(empty, "left_source,left_id\n", what="labels file", kind=kind)


def test_mode_is_kept_and_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        new = write_text_file(tmp_path / "new.txt", "x", what="file")
        assert stat.S_IMODE(new.stat().st_mode) == 0o640
        kept = tmp_path / "kept.txt"
        kept.write_text("x")
        kept.chmod(0o604)
        write_text_file(kept, "y", what="file")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o604
    finally:
        os.umask(old)


def test_a_failure_inside_the_block_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), open_for_write(target, what="file") as fh:
        fh.write("half")
        raise RuntimeError("stop")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


def test_temporary_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    debris = tmp_path / f".t.txt{TEMP_MARK}{pid}-abc"
    debris.write_text("half")
    live = tmp_path / f".t.txt{TEMP_MARK}{os.getpid()}-abc"
    live.write_text("mine")
    write_text_file(tmp_path / "t.txt", "x", what="file")
    assert not debris.exists() and live.exists()
    assert pid_alive(os.getpid()) and not pid_alive(pid)


def test_os_errors_say_what_to_do(tmp_path: Path) -> None:
    problem = os_problem(OSError(errno.ENOSPC, "No space left on device", "/x/y"), "labels.csv", "write the labels file")
    assert "No space left on device" in problem.message and "free space" in problem.fix
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):  # root writes anyway
            pytest.skip("running as root: permissions do not stop writes")
        with pytest.raises(InputError, match="Permission denied"):
            write_text_file(ro / "t.txt", "x", what="file")
    finally:
        ro.chmod(0o700)


def test_check_target_checks_without_writing(tmp_path: Path) -> None:
    from er_framework.io.safe_write import check_target

    kind = csv_header_kind("labels file", ["left_source", "left_id"])
    new = tmp_path / "new.csv"
    assert check_target(new, what="labels file", kind=kind) == new.resolve()
    assert not new.exists()
    (tmp_path / "mine.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(InputError, match="did not write"):
        check_target(tmp_path / "mine.csv", what="labels file", kind=kind)
    with pytest.raises(InputError, match="an input of the job"):
        check_target(tmp_path / "mine.csv", what="labels file", inputs=[tmp_path / "mine.csv"])
