"""A lock file: the one place er creates and writes one (an index's ``.NAME.lock``).

:func:`open_lock_file` opens (creating when missing, with the umask's
permissions) a file meant only to be ``flock``-ed: never through a symbolic
link, never anything but a regular file, read-only where the folder cannot be
written (``flock`` works on a read-only descriptor). :func:`write_holder`
records ``PID COMMAND`` in it for the messages of processes that wait, only
into a file that is er's own (empty or holding such a line, one link); the
content is never needed for the lock itself, so a failed write is ignored.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from er_framework.errors import ErError, Problem, os_problem

__all__ = ["HOLDER", "open_lock_file", "read_holder", "write_holder"]

#: what a lock file holds: ``PID COMMAND``
HOLDER = re.compile(rb"\A(\d{1,10}) (\w{1,16})\n?\Z")


def open_lock_file(lock: Path, *, where: str, what: str, doing: str) -> int:
    """The descriptor of the lock file ``lock`` (created when missing). ``where`` names what is locked in
    messages, ``what`` the lock file ("the index's lock file"), ``doing`` the action ("lock the index for
    writing"). :class:`ErError` for a symbolic link, a file that is not regular, or an OS error."""
    flags = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fix = f"remove {lock}: er creates its own lock file"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ErError(Problem(where=where, message=f"{lock} ({what}) is a symbolic link", fix=fix)) from None
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise ErError(os_problem(exc, where, doing)) from None
        try:
            fd = os.open(lock, os.O_RDONLY | flags)
        except OSError:
            raise ErError(os_problem(exc, where, f"{doing} ({what} beside it)")) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ErError(Problem(where=where, message=f"{lock} ({what}) is not a regular file", fix=fix))
    return fd


def read_holder(fd: int) -> tuple[int, str] | None:
    """``(pid, command)`` written by the lock's holder (None: not written yet, or not er's)."""
    try:
        m = HOLDER.match(os.pread(fd, 64, 0))
    except OSError:
        return None
    return (int(m.group(1)), m.group(2).decode()) if m else None


def write_holder(fd: int, command: str) -> None:
    """Write ``PID COMMAND`` into the lock file: only into er's own (empty, or holding such a line, one link)."""
    try:
        st = os.fstat(fd)
        if st.st_nlink != 1 or (st.st_size and HOLDER.match(os.pread(fd, 64, 0)) is None):
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {command}\n".encode(), 0)
    except OSError:
        pass  # a read-only descriptor: the lock holds, the waiters' messages name no process
