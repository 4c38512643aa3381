"""er_framework.index.lock: one writer lock per index (build, add, remove, refit) and the debris of dead writers."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from index_docs import small_index

from er_framework.errors import ErError
from er_framework.index.build import build_index, open_index, records_from_texts
from er_framework.index.lock import clear_debris, file_identity, index_lock, lock_path


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_lock_file_is_beside_the_index_and_kept(tmp_path: Path) -> None:
    index = tmp_path / "docs.erx"
    assert lock_path(index) == tmp_path / ".docs.erx.lock"
    with index_lock(index, "add"):
        assert lock_path(index).read_text() == f"{os.getpid()} add\n"
    assert lock_path(index).exists()  # never deleted: a waiter may hold it open
    with pytest.raises(ValueError, match="unknown index writer"), index_lock(index, "query"):
        pass


def test_a_writer_finding_a_build_fails_at_once_naming_its_process(tmp_path: Path) -> None:
    index = tmp_path / "docs.erx"
    held, release = threading.Event(), threading.Event()

    def build() -> None:
        with index_lock(index, "build"):
            held.set()
            release.wait(60)

    t = threading.Thread(target=build)
    t.start()
    try:
        assert held.wait(60)
        for command in ("add", "remove", "refit", "build"):
            with pytest.raises(ErError, match=f"being rebuilt by process {os.getpid()}"), index_lock(index, command):
                pass
    finally:
        release.set()
        t.join()
    with index_lock(index, "add"):  # free again
        pass


def test_a_writer_waits_for_another_add_then_goes_on(tmp_path: Path) -> None:
    index = tmp_path / "docs.erx"
    order: list[str] = []
    held = threading.Event()

    def first() -> None:
        with index_lock(index, "add"):
            held.set()
            time.sleep(0.3)
            order.append("first done")

    t = threading.Thread(target=first)
    t.start()
    assert held.wait(60)
    with index_lock(index, "remove"):
        order.append("second in")
    t.join()
    assert order == ["first done", "second in"]


def test_a_lock_file_that_is_a_symlink_or_a_folder_is_refused_and_not_followed(tmp_path: Path) -> None:
    index = tmp_path / "docs.erx"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n", encoding="utf-8")
    lock_path(index).symlink_to(victim)
    with pytest.raises(ErError, match="is a symbolic link"), index_lock(index, "add"):
        pass
    assert victim.read_text(encoding="utf-8") == "keep\n"
    lock_path(index).unlink()
    lock_path(index).mkdir()
    with pytest.raises(ErError, match="not a regular file|lock the index"), index_lock(index, "add"):
        pass


def test_a_foreign_lock_file_is_locked_but_not_written(tmp_path: Path) -> None:
    index = tmp_path / "docs.erx"
    lock_path(index).write_text("the user's own notes\n", encoding="utf-8")
    with index_lock(index, "add"):
        pass
    assert lock_path(index).read_text(encoding="utf-8") == "the user's own notes\n"


def test_debris_of_dead_writers_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    index = tmp_path / "docs.erx"
    dead = _dead_pid()
    names = [f".docs.erx.building-{dead}", f".docs.erx.building-{dead}-wal", f".docs.erx.building-{dead}-shm", f".docs.erx.probe-{dead}"]
    live = [f".docs.erx.building-{os.getpid()}", ".docs.erx.building-notapid", ".other.erx.building-" + str(dead), "docs.erx"]
    for name in names + live:
        (tmp_path / name).write_bytes(b"x")
    assert clear_debris(index) == len(names)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(live)
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    with index_lock(index, "add"):  # every writer clears them under the lock
        pass
    assert not [n for n in names if (tmp_path / n).exists()]


def test_a_writer_whose_index_was_rebuilt_since_it_opened_it_writes_nothing(tmp_path: Path, texts: list[str]) -> None:
    path, _ = small_index(tmp_path, texts)
    stale = open_index(path)
    assert stale.identity == file_identity(path)
    fresh = open_index(path)
    job = fresh.job
    fresh.close()
    build_index(job, path, force=True)[0].close()  # a build --force replaced the file
    with pytest.raises(ErError, match="rebuilt .* after this er index add opened it; nothing was written"):
        stale.add(records_from_texts(["a new text"], "text", ["new1"]))
    stale.close()
    with open_index(path) as index:
        assert ("docs", "new1") not in index.clusters()
        index.add(records_from_texts(["a new text"], "text", ["new1"]))  # opened after the build: written
        assert ("docs", "new1") in index.clusters()
