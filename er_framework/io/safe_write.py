"""The one writer of a single file outside an output folder (a model file, a labels file …).

:func:`write_text_file` never writes over something that is not a regular
file (a device such as ``/dev/null``, a FIFO, a socket, a folder), never over
one of the job's inputs (its data, its YAML, its labels), and replaces the
file atomically: the text goes to a temporary file beside the target, is
flushed to disk, and is renamed over the target, so a reader sees the old
file or the new one, never a part. A symbolic link is followed: the file it
points to is replaced, the link stays. Every failure is an
:class:`~er_framework.errors.InputError` saying what, where and how to fix it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from er_framework.errors import InputError, Problem
from er_framework.io.formats import file_kind

__all__ = ["write_text_file"]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def write_text_file(path: str | Path, text: str, *, what: str, inputs: list[Path] | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path written (symbolic links resolved).

    ``what`` names the file in messages ("model file"); ``inputs`` are files the
    caller reads (a job's sources, YAML, labels): ``path`` must be none of them.
    """
    raw = str(path)
    if not raw.strip():
        raise InputError(
            Problem(where="(empty path)", message=f"the {what}'s path is empty", fix=f"give the {what} a file name, e.g. model.json")
        )
    target = Path(path)
    with contextlib.suppress(OSError):
        target = target.resolve()
    for inp in inputs or []:
        if _same_file(target, inp):
            raise InputError(
                Problem(
                    where=raw, message=f"the {what} would overwrite {inp}, an input of the job", fix=f"write the {what} to another file"
                )
            )
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(
            Problem(where=raw, message=f"cannot write the {what}: {exc.strerror or exc}", fix="check the path and its permissions")
        ) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(
            Problem(
                where=raw,
                message=f"{raw!r} is {file_kind(st.st_mode)}, not a regular file: the {what} is not written over it",
                fix=f"give the {what} the name of a new or existing regular file",
            )
        )
    folder = target.parent
    if not folder.is_dir():
        raise InputError(
            Problem(where=raw, message=f"the folder {str(folder)!r} does not exist", fix=f"create it first, or write the {what} elsewhere")
        )
    tmp = folder / f".{target.name}.er-tmp-{os.getpid()}"
    data = text.encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if st is not None:
                with contextlib.suppress(OSError):
                    os.chmod(tmp, stat.S_IMODE(st.st_mode))  # the replaced file's permissions
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        with contextlib.suppress(OSError):
            dfd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    except OSError as exc:
        raise InputError(
            Problem(
                where=raw, message=f"cannot write the {what}: {exc.strerror or exc}", fix="check the folder's permissions and free space"
            )
        ) from None
    return target
