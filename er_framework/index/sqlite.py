"""The SQLite file of an index: its schema, connections, transactions, and the messages for its errors.

Storage: one SQLite database in WAL mode (stdlib ``sqlite3``). Every write
(``add``, ``remove``) is one transaction, so an interrupted writer leaves
the old index or the new one, never a mix, and readers keep querying the
last committed state while a writer works (WAL: readers never block on the
writer). ``build`` writes a new file next to the target and renames it.

Tables: ``meta`` (format version, the job's YAML, its resolved hash, the
versions of the components), ``records`` (row id = the record's position,
source, id, normalized fields as JSON, cluster id, exact-text hash and the
representative it was collapsed onto), ``buckets`` (bucket id, record: the
blockers' :meth:`~er_framework.capabilities.Keyed.lookup_keys`, a clustered
B-tree), ``pairs`` (verified pairs and scores: the graph that clustering
re-reads), ``events`` and ``cluster_changes`` (what each write did).

Signatures are not stored: the bucket ids are the banded signatures, and a
record's signature is recomputed from its stored fields when it is needed
(removing the record, promoting an exact copy). At 1M documents that saves
K * 4 bytes per record (512 MB at K = 128).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from er_framework.errors import ErError, Problem

#: on-disk layout version; an index of another version is refused with a message (2: the exact-text hash is
#: BLAKE2b-64 of the normalized text's UTF-8 bytes, :mod:`er_framework.kernels.digests`; 1 hashed code points)
FORMAT_VERSION = 2
#: SQLite's limit on host parameters is 32766; stay well below
CHUNK = 900
#: ``add`` and ``remove`` run SQLite's quick_check before writing into an index up to this size (it reads
#: every page, ~0.2 s for 160 MB when cached); a larger index is checked on request (``er index info --check``)
QUICK_CHECK_MAX_BYTES = 256 << 20
#: test hook: seconds to sleep inside a write transaction, after the data is written
PAUSE_ENV = "ER_INDEX_PAUSE_BEFORE_COMMIT"

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records(
    rid INTEGER PRIMARY KEY,      -- position of the record (never reused)
    source INTEGER NOT NULL,      -- index into meta.sources
    id TEXT NOT NULL,
    fields TEXT NOT NULL,         -- JSON list of the normalized field values (meta.fields order)
    cluster INTEGER NOT NULL,
    exact INTEGER,                -- hash of the exact-duplicate text (NULL: empty or disabled)
    rep INTEGER                   -- dedup modes: the record this exact copy was collapsed onto
);
CREATE UNIQUE INDEX records_source_id ON records(source, id);
CREATE INDEX records_cluster ON records(cluster);
CREATE INDEX records_exact ON records(exact) WHERE exact IS NOT NULL;
CREATE INDEX records_rep ON records(rep) WHERE rep IS NOT NULL;
CREATE TABLE buckets(key INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY(key, rid)) WITHOUT ROWID;
CREATE TABLE pairs(a INTEGER NOT NULL, b INTEGER NOT NULL, score REAL NOT NULL, PRIMARY KEY(a, b)) WITHOUT ROWID;
CREATE INDEX pairs_b ON pairs(b);
CREATE TABLE events(seq INTEGER PRIMARY KEY, at TEXT NOT NULL, command TEXT NOT NULL, summary TEXT NOT NULL);
CREATE TABLE cluster_changes(
    seq INTEGER NOT NULL,         -- events.seq
    kind TEXT NOT NULL,           -- merged | split | retired | created
    cluster INTEGER NOT NULL,     -- the id concerned
    survivor INTEGER,             -- merged: the id its records now carry
    records INTEGER NOT NULL      -- records whose id changed (merged, split) or records concerned
);
"""


def problem(path: str | Path, message: str, fix: str = "") -> ErError:
    return ErError(Problem(where=str(path), message=message, fix=fix))


def chunks(values: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def marks(k: int) -> str:
    return ",".join("?" * k)


#: the first 16 bytes of every SQLite database file
SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")
_ACCESS = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PERM", "SQLITE_NOMEM", "SQLITE_AUTH")


def rebuild_fix(path: str | Path, config: str | None = None) -> str:
    if config:
        return f"rebuild it with: er index build {config} --index {path} --force"
    return f"rebuild it with: er index build CONFIG --index {path} --force (CONFIG: the job it was built from)"


def damaged(path: str | Path, detail: str, config: str | None = None) -> ErError:
    """The error for an index whose file SQLite (or its integrity check) finds damaged; ``config``: its job's file."""
    return problem(path, f"the index file {path} is damaged (sqlite: {detail})", rebuild_fix(path, config))


def sqlite_error(path: str | Path, exc: sqlite3.Error, doing: str = "use", config: str | None = None) -> ErError:
    """An SQLite error met while using the index at ``path``, as a message for the user.

    A busy or locked database, a file that cannot be opened, read or written
    (permissions, a full disk, an I/O error) and anything else, which is a
    damaged file (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, a malformed schema, …).
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith(_BUSY) or "locked" in text:
        return problem(
            path,
            f"the index is busy: another process holds it (sqlite: {text})",
            "wait for the other er index add/remove to finish, then try again",
        )
    if name.startswith(_ACCESS) or "readonly" in text or "unable to open" in text:
        return problem(
            path,
            f"cannot {doing} the index file {path} (sqlite: {text})",
            "check the file's and its folder's permissions and the free disk space (SQLite writes PATH-wal and PATH-shm beside the index)",
        )
    return damaged(path, text, config)


class Txn:
    """A transaction: committed on success, rolled back on any exception."""

    def __init__(self, conn: sqlite3.Connection, begin: str) -> None:
        self.conn, self.begin = conn, begin

    def __enter__(self) -> None:
        self.conn.execute(self.begin)

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:  # some errors (I/O, a full disk, corruption) roll back by themselves
            with contextlib.suppress(sqlite3.Error):  # the error being raised says more than a failed rollback
                self.conn.execute("ROLLBACK")


def pause() -> None:
    """Test hook (crash-safety test): sleep inside the write transaction when asked."""
    pause = os.environ.get(PAUSE_ENV)
    if pause:
        print("paused before commit", file=sys.stderr, flush=True)
        time.sleep(float(pause))


def files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def connect_db(path: Path) -> sqlite3.Connection:
    """A read-write connection (WAL mode); only for a file known to be an index, or a new one."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=60.0, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("PRAGMA cache_size=-262144")  # 256 MB page cache
    return conn


def connect_ro(path: Path) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``): no statement on it can change the file.

    On a WAL database SQLite still maps the shared-memory file ``PATH-shm`` (and
    opens ``PATH-wal``), creating them if no other connection has: that is how
    a reader sees a writer's committed transactions and how a writer knows not
    to checkpoint pages a reader is reading. The database file itself is never
    written.
    """
    conn = sqlite3.connect(
        Path(path).resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None, timeout=60.0, check_same_thread=False
    )
    conn.execute("PRAGMA cache_size=-262144")  # connection-local, nothing written
    return conn


def sniff(path: Path) -> None:
    """Refuse a path that is missing, a folder, or not an SQLite database, without opening it with SQLite.

    (SQLite turns an empty file into a database on its first write, and a
    ``journal_mode`` pragma is such a write: the file is only read here.)
    """
    fix = f"build one with: er index build CONFIG --index {path}"
    if not path.exists():
        raise problem(path, "no such index", fix)
    if path.is_dir():
        raise problem(path, "is a folder, not an index file", "give the path of the .erx file")
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise problem(path, f"cannot read the index file: {exc.strerror or exc}", "check the file's permissions") from None
    if head != SQLITE_MAGIC:
        what = "an empty file" if not head else "not an SQLite database"
        raise problem(path, f"not an er-framework index ({what}); the file was not changed", fix)


def read_meta(conn: sqlite3.Connection, path: Path) -> dict[str, str]:
    """The ``meta`` table of an er-framework index; "not an index" for any other SQLite database."""
    fix = f"build one with: er index build CONFIG --index {path}"
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "read") from None
    if "meta" not in tables:
        raise problem(path, "not an er-framework index (an SQLite database without index metadata); the file was not changed", fix)
    try:
        rows = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "read") from None
    if rows.get("kind") != "er-framework-index":
        raise problem(path, "not an er-framework index (no index metadata); the file was not changed", fix)
    return rows


def _is_index(path: Path) -> bool:
    """An SQLite file with index metadata (any format version); read only."""
    try:
        sniff(path)
        conn = connect_ro(path)
    except (ErError, sqlite3.Error):
        return False
    try:
        read_meta(conn, path)
    except ErError:
        return False
    finally:
        conn.close()
    return True


def meta_get(conn: sqlite3.Connection, key: str) -> str:
    """The value of ``key`` in the ``meta`` table (``""`` when there is none)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else ""


def meta_set(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set ``key`` in the ``meta`` table."""
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def check_target(path: str | Path, *, force: bool = False) -> None:
    """Refuse, before any work, an ``--index`` path that ``build_index`` could not write or must not replace.

    The folder must exist and take a new file (a probe file is created and
    removed); the path must not be a folder; an existing file is replaced only
    with ``force`` and only when it is an index.
    """
    path = Path(path)
    other = "choose another --index"
    if path.is_dir():
        raise problem(path, "is a folder; --index names the index file to write", f"e.g. --index {path / 'index.erx'}")
    parent = path.absolute().parent
    if parent.exists() and not parent.is_dir():
        raise problem(path, f"{parent} is a file, not a folder", other)
    if not parent.is_dir():
        raise problem(path, f"the folder {parent} does not exist", f"create it first (mkdir -p {parent}), or {other}")
    if path.exists() or path.is_symlink():
        if not force:
            raise problem(path, "an index (or file) already exists here", f"pass --force to replace it, or {other}")
        if not _is_index(path):  # refuse to overwrite something that is not an index
            raise problem(path, "exists and is not an er-framework index; not replaced", other)
    probe = parent / f".{path.name}.probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as exc:
        raise problem(
            path,
            f"cannot write in the folder {parent}: {exc.strerror or exc}",
            f"check the folder's permissions and free space, or {other}",
        ) from None
    os.close(fd)
    os.unlink(probe)


__all__ = [
    "CHUNK",
    "FORMAT_VERSION",
    "PAUSE_ENV",
    "QUICK_CHECK_MAX_BYTES",
    "SCHEMA",
    "SQLITE_MAGIC",
    "Txn",
    "check_target",
    "chunks",
    "connect_db",
    "connect_ro",
    "damaged",
    "files",
    "marks",
    "meta_get",
    "meta_set",
    "pause",
    "problem",
    "read_meta",
    "rebuild_fix",
    "sniff",
    "sqlite_error",
]
