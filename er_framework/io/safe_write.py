"""The one writer of every file er writes outside an output folder (a model, a labels file, generated data …).

:func:`open_for_write` (a text handle) and :func:`write_text_file` (a whole
text) never write over:

- something that is not a regular file (a device such as ``/dev/null``, a
  FIFO, a socket, a folder): refused even where er runs as root;
- one of the job's inputs (its data, its YAML, its labels, its model): the
  caller names them;
- an output of a run: a file of er's output names in a folder whose
  ``report.json`` is er's, anything inside a run's temporary stage, the
  commit journal;
- an existing file that is not the kind being written (:class:`FileKind`:
  a labels file must start with the labels header, a model file must be an
  er model). Only the file's first bytes are read for that, and they are
  never quoted in a message.

The text goes to a temporary file beside the target (created with the
umask's permissions, or given the replaced file's mode), is flushed to disk
and renamed over the target, so a reader sees the old file or the new one,
never a part; on any failure the temporary file is removed. Temporary files
of writers that were killed (``kill -9``) are removed by the next write
beside them. A symbolic link is followed: the file it points to is replaced,
the link stays. Every failure is an :class:`~er_framework.errors.InputError`
saying what, where and how to fix it (a full disk, a read-only folder, too
many open files: :func:`~er_framework.errors.os_problem`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from er_framework.errors import InputError, Problem, os_problem
from er_framework.io.formats import file_kind
from er_framework.io.output_names import JOURNAL, STAGE_PREFIX, is_er_output

__all__ = [
    "TEMP_MARK",
    "FileKind",
    "check_target",
    "clear_dead_temps",
    "csv_header_kind",
    "open_for_write",
    "pid_alive",
    "write_text_file",
]

#: the mark of this writer's temporary files: ``.NAME.er-tmp-PID-RANDOM``
TEMP_MARK = ".er-tmp-"
#: how many leading bytes of an existing file :class:`FileKind` looks at
HEAD_BYTES = 65536


@dataclass(frozen=True)
class FileKind:
    """What an existing file must be for er to write over it.

    ``recognizes(head)`` is given the file's first bytes (at most
    :data:`HEAD_BYTES`); ``description`` completes "… is not {description}"
    in the refusal (say what is expected, never what the file holds). An
    empty file is always accepted.
    """

    description: str
    recognizes: Callable[[bytes], bool]


def csv_header_kind(description: str, columns: Sequence[str]) -> FileKind:
    """A CSV file whose header starts with ``columns`` (a byte-order mark, ``;`` or ``,`` separators, quotes
    and surrounding spaces allowed: what a spreadsheet saves)."""
    want = [c.lower() for c in columns]

    def recognizes(head: bytes) -> bool:
        text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
        first = text.splitlines()[0] if text else ""
        for sep in (",", ";", "\t"):
            cells = [c.strip().strip('"').strip().lower() for c in first.split(sep)]
            if cells[: len(want)] == want:
                return True
        return False

    return FileKind(description=f"{description} (its first line is not the header {','.join(columns)})", recognizes=recognizes)


def pid_alive(pid: int) -> bool:
    """Process ``pid`` exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by another user
        return True
    return True


def clear_dead_temps(folder: Path, prefix: str) -> int:
    """Remove the files ``folder/{prefix}{PID}…`` whose process is dead (debris of a writer killed by
    ``kill -9``); returns how many. A file whose PID part is not a number is left alone."""
    removed = 0
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix)]
    except OSError:
        return 0
    for name in names:
        digits = name[len(prefix) :].split("-", 1)[0].split(".", 1)[0]
        if not digits.isdigit() or pid_alive(int(digits)):
            continue
        path = folder / name
        with contextlib.suppress(OSError):
            if path.is_symlink() or not path.is_dir():
                path.unlink()
                removed += 1
    return removed


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _refuse(raw: str, message: str, fix: str) -> InputError:
    return InputError(Problem(where=raw, message=message, fix=fix))


def _run_output(target: Path) -> str:
    """Why ``target`` belongs to a run's output folder ('' when it does not)."""
    folder = target.parent
    if any(part.startswith(STAGE_PREFIX) for part in folder.parts):
        return "it is inside a run's temporary folder"
    if target.name == JOURNAL:
        return "it is the commit journal of an output folder"
    if target.name in is_er_output(folder):
        return "it is an output of the er run in that folder (its report.json lists it)"
    return ""


def _check_kind(target: Path, raw: str, what: str, kind: FileKind) -> None:
    """Refuse the existing file ``target`` unless ``kind`` recognizes its first bytes (never quoted)."""
    try:
        with open(target, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise InputError(os_problem(exc, raw, f"check the existing {what}")) from None
    if not kind.recognizes(head):
        raise _refuse(
            raw,
            f"{raw!r} exists and is not {kind.description}: er does not write over a file it did not write",
            f"give a new file name for the {what}, or move the existing file away",
        )


def _checked_target(path: str | Path, what: str, inputs: Sequence[Path], kind: FileKind | None) -> tuple[Path, os.stat_result | None]:
    """The resolved target and its stat (``None``: a new file), or the refusal."""
    raw = str(path)
    if not raw.strip():
        raise _refuse("(empty path)", f"the {what}'s path is empty", f"give the {what} a file name")
    target = Path(path)
    with contextlib.suppress(OSError, RuntimeError):
        target = target.resolve()
    inp = next((Path(p) for p in inputs if _same_file(target, Path(p))), None)
    if inp is not None:
        raise _refuse(raw, f"the {what} would overwrite {inp}, an input of the job", f"write the {what} to another file")
    why = _run_output(target)
    if why:
        raise _refuse(raw, f"the {what} is not written over {raw!r}: {why}", f"write the {what} to a file outside the output folder")
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(os_problem(exc, raw, f"write the {what}")) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _refuse(
            raw,
            f"{raw!r} is {file_kind(st.st_mode)}, not a regular file: the {what} is not written over it",
            f"give the {what} the name of a new or existing regular file",
        )
    if st is not None and st.st_size and kind is not None:
        _check_kind(target, raw, what, kind)
    folder = target.parent
    if not folder.is_dir():
        raise _refuse(raw, f"the folder {str(folder)!r} does not exist", f"create it first, or write the {what} elsewhere")
    return target, st


@contextlib.contextmanager
def open_for_write(
    path: str | Path, *, what: str, inputs: Sequence[Path] = (), kind: FileKind | None = None, newline: str = ""
) -> Iterator[TextIO]:
    """A UTF-8 text handle whose content replaces ``path`` atomically when the ``with`` block ends without
    an exception (nothing changes otherwise). ``what`` names the file in messages ("labels file");
    ``inputs`` are files the job reads: ``path`` must be none of them; ``kind``: what an existing file at
    ``path`` must be. ``newline`` as for :func:`open` ("": written as given)."""
    raw = str(path)
    target, st = _checked_target(path, what, inputs, kind)
    folder = target.parent
    clear_dead_temps(folder, f".{target.name}{TEMP_MARK}")
    tmp = folder / f".{target.name}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:12]}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise InputError(os_problem(exc, raw, f"write the {what}")) from None
    try:
        try:
            fh = os.fdopen(fd, "w", encoding="utf-8", newline=newline)
        except BaseException:
            os.close(fd)
            raise
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            with contextlib.suppress(OSError):
                os.chmod(tmp, stat.S_IMODE(st.st_mode))  # the replaced file's permissions
        os.replace(tmp, target)
        with contextlib.suppress(OSError):
            dfd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    except OSError as exc:
        raise InputError(os_problem(exc, raw, f"write the {what}")) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_text_file(path: str | Path, text: str, *, what: str, inputs: Sequence[Path] | None = None, kind: FileKind | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`open_for_write`; returns the path written (symbolic
    links resolved)."""
    with open_for_write(path, what=what, inputs=inputs or (), kind=kind) as fh:
        fh.write(text)
    target = Path(path)
    with contextlib.suppress(OSError, RuntimeError):
        target = target.resolve()
    return target


def check_target(path: str | Path, *, what: str, inputs: Sequence[Path] = (), kind: FileKind | None = None) -> Path:
    """The checks of :func:`open_for_write` without writing: the resolved target, or the refusal (an
    :class:`~er_framework.errors.InputError`). A writer of several files checks them all before it writes any."""
    return _checked_target(path, what, inputs, kind)[0]
