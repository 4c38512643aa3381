"""One writer at a time for an index: ``er index build`` (also with ``--force``), ``add``, ``remove``, ``refit``.

SQLite already serializes the transactions of ``add``, ``remove`` and
``refit``, but ``build`` does not write into the index: it writes a new file
beside it (``.NAME.building-PID``) and renames it over the index. An ``add``
that committed into the old file while a build ran would be lost by that
rename (and would still report its records as added). So every writer takes
one lock first:

- the lock is an exclusive ``flock`` on ``.NAME.lock`` beside the index
  (``NAME`` the index's file name). That file is created on first use and
  never deleted (deleting a lock file that another process has open and is
  waiting on would let two writers in), and it is not the index file itself:
  a build replaces the index file, so a lock on the index's inode would not
  protect the file that replaces it. The kernel releases the lock when its
  holder dies (``kill -9`` included): there is no stale lock to clean up;
- the holder writes ``PID COMMAND`` into the lock file, only for the messages
  of the processes that wait;
- ``build`` holds the lock from before its job runs until the new file is
  renamed into place. Any writer that finds a build holding it fails at once
  with "the index is being rebuilt by process N" (exit 2: nothing was
  written) - waiting would only make it write into the file being replaced.
  A writer that finds another ``add``/``remove``/``refit`` holding it waits
  for it, as SQLite would;
- a writer opened the index before it got the lock: it then checks that the
  file at the path is still the one it opened (device and inode); if a build
  replaced it meanwhile, it stops with a message before writing anything.

Readers (``er query``, ``er index info``) take no lock: SQLite gives them
the last committed state, and a build's new file is only renamed into place
when it is complete, so no reader sees a half-built index.

Holding the lock, a writer removes the debris of writers that were killed:
``.NAME.building-PID`` (and its ``-wal``, ``-shm``) and ``.NAME.probe-PID``
files whose process is gone (:func:`er_framework.io.safe_write.clear_dead_temps`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from er_framework.errors import ErError, Problem
from er_framework.io.lock_file import open_lock_file, read_holder, write_holder
from er_framework.io.safe_write import clear_dead_temps

try:  # POSIX; elsewhere one writer at a time is the user's care
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["BUILDING", "PROBE", "WRITERS", "clear_debris", "file_identity", "index_lock", "lock_path"]

#: the commands that write an index (and take its lock)
WRITERS = ("build", "add", "remove", "refit")
#: the temporary names of an index's writers beside it: ``.NAME{BUILDING}PID`` (+ -wal, -shm), ``.NAME{PROBE}PID``
BUILDING = ".building-"
PROBE = ".probe-"


def lock_path(index: str | Path) -> Path:
    """The lock file of the index at ``index``: ``.NAME.lock`` beside it."""
    p = Path(index)
    return Path(os.path.realpath(p.absolute().parent)) / f".{p.name}.lock"  # one lock whichever folder link names it


def file_identity(path: str | Path) -> tuple[int, int] | None:
    """``(device, inode)`` of the file at ``path`` (None when there is none): which file a path names now."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def clear_debris(index: str | Path) -> int:
    """Remove the temporary files beside ``index`` of its writers that died (returns how many)."""
    p = Path(index)
    folder = p.absolute().parent
    return clear_dead_temps(folder, f".{p.name}{BUILDING}") + clear_dead_temps(folder, f".{p.name}{PROBE}")


def _problem(index: Path, message: str, fix: str) -> ErError:
    return ErError(Problem(where=str(index), message=message, fix=fix))


def _open(index: Path) -> int:
    """The lock file's descriptor (created when missing; a read-only one where the folder cannot be written)."""
    return open_lock_file(lock_path(index), where=str(index), what="the index's lock file", doing="lock the index for writing")


def _rebuilt(index: Path, pid: int) -> ErError:
    return _problem(
        index,
        f"the index is being rebuilt by process {pid} (er index build); nothing was written",
        "wait for the build to finish, then run the command again: it then writes into the rebuilt index",
    )


@contextlib.contextmanager
def index_lock(index: str | Path, command: str) -> Iterator[None]:
    """Hold the writer lock of the index at ``index`` for ``command`` (one of :data:`WRITERS`); see the module
    docstring. Raises :class:`~er_framework.errors.ErError` at once when a build holds it."""
    if command not in WRITERS:
        raise ValueError(f"unknown index writer {command!r}")
    path = Path(index)
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = _open(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(fd)
            if holder is not None and holder[1] == "build":
                raise _rebuilt(path, holder[0]) from None
            fcntl.flock(fd, fcntl.LOCK_EX)  # another add/remove/refit (or a build not yet recorded): wait for it
        write_holder(fd, command)
        clear_debris(path)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays
