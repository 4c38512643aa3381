"""An index file is decided to be an index by reading it, before anything can write to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from er_framework.errors import ErError
from er_framework.index.build import open_index


@pytest.mark.parametrize("content", [b"", b"hello, not a database\n", None])
def test_not_an_index_is_refused_before_any_write(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "x.erx"
    if content is None:  # another application's SQLite database, rollback-journal mode
        conn = sqlite3.connect(str(path))
        conn.execute("CREATE TABLE t(x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        conn.close()
    else:
        path.write_bytes(content)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    for readonly in (True, False):
        with pytest.raises(ErError, match="not an er-framework index"):
            open_index(path, readonly=readonly)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.erx"]  # no -wal, -shm or journal either
