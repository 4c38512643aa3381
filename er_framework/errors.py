"""User-facing errors: every problem says where, what, what was expected and a fix.

The CLI catches :class:`ErError`, prints every problem and exits with code 2;
a user never sees a traceback for bad configuration or bad input.
"""

from __future__ import annotations

import contextlib
import difflib
import errno as errno_names
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config or an input.

    ``where`` is a file (optionally ``file:line``), ``path`` the YAML path or
    the row/column, ``message`` what is wrong (with the bad value and what was
    expected) and ``fix`` how to fix it.
    """

    where: str
    message: str
    path: str = ""
    fix: str = ""

    def __str__(self) -> str:
        loc = self.where
        if self.path:
            loc = f"{loc}: {self.path}" if loc else self.path
        text = f"{loc}: {self.message}" if loc else self.message
        if self.fix:
            text += f"\n    fix: {self.fix}"
        return text


class ErError(Exception):
    """Base of the errors reported to users (exit code 2, no traceback)."""

    exit_code = 2
    kind = "error"

    def __init__(self, problems: Problem | Sequence[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem(where="", message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        n = len(self.problems)
        head = f"{self.kind}: {n} problem{'s' if n != 1 else ''} found"
        return head + "\n" + "\n".join(f"  - {p}".replace("\n", "\n  ") for p in self.problems)


class ConfigError(ErError):
    kind = "invalid config"


class InputError(ErError):
    kind = "invalid input"


class PluginError(ErError):
    kind = "plugin error"


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(str(value), list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def choices_text(choices: Iterable[str]) -> str:
    items = sorted(choices)
    return ", ".join(items) if items else "(none)"


#: what to do about an operating-system error, by errno name (the others: "check the path and its permissions")
OS_FIXES = {
    "ENOSPC": "free space on that disk (or write elsewhere), then run the command again",
    "EDQUOT": "your disk quota is used up: free space (or write elsewhere), then run the command again",
    "EROFS": "the file system is read-only: write to a folder on a writable disk",
    "EACCES": "you may not do that there: fix the permissions, or use a folder you can write",
    "EPERM": "the operation is not permitted there (an immutable file, a mount point?): use another path",
    "EMFILE": "too many open files: raise the limit (ulimit -n) or lower workers, then run the command again",
    "ENFILE": "the system has too many open files: close other programs or raise the limit, then try again",
    "ENAMETOOLONG": "use a shorter path",
    "ENOENT": "check that the path exists",
    "ENOTDIR": "a part of the path is a file, not a folder: check the path",
    "EISDIR": "the path is a folder: give a file name",
    "EBUSY": "the file is in use (a mount point?): use another path",
    "EIO": "the disk reported an input/output error: check the disk",
    "EXDEV": "the file and its folder are on different file systems: use another path",
    "EFBIG": "the file grew past the largest size allowed here (ulimit -f, or the file system's limit): "
    "raise the limit or write elsewhere, then run the command again",
    "ELOOP": "the path holds a loop of symbolic links: check the path",
    "ENXIO": "the path is a device or a FIFO with nothing on the other side: give a regular file",
    "ENODEV": "the path is a device that cannot be used that way: give a regular file",
    "ETXTBSY": "the file is a running program: use another path",
    "ESTALE": "the network file system lost the file: check the mount, then run the command again",
}

#: the errno names :func:`os_problem` treats as the environment's, not er's (the CLI's exit 2)
ENVIRONMENT_ERRNOS = frozenset(OS_FIXES)


def os_problem(exc: OSError, where: str, doing: str) -> Problem:
    """The problem for an :class:`OSError` met while ``doing`` something ("write the labels file"): what
    the system said, the file it named, and a fix that fits the error (a full disk, a read-only folder,
    too many open files …)."""
    name = errno_names.errorcode.get(exc.errno or 0, "")
    reason = exc.strerror or str(exc) or type(exc).__name__
    file = exc.filename if exc.filename is not None else ""
    at = f" ({file})" if file and str(file) != where else ""
    return Problem(where=where, message=f"cannot {doing}: {reason}{at}", fix=OS_FIXES.get(name, "check the path and its permissions"))


#: a column name as a message may quote it: printable, short, none of the characters of ``key=value`` or
#: ``user:hash:…`` lines. A header that fails is not quoted (it may be the first line of a file that is no
#: table at all: /etc/shadow, /proc/self/environ, a .env file)
COLUMN_NAME_CHARS = re.compile(r"[^\x00-\x1f\x7f-\x9f=:*$\\|<>`{}]{1,64}")


def looks_like_column_names(names: Sequence[str]) -> bool:
    """Every name is printable, at most 64 characters and free of ``= : * $ \\ | < > ` { }``."""
    return bool(names) and all(isinstance(n, str) and COLUMN_NAME_CHARS.fullmatch(n) is not None for n in names)


def columns_text(names: Sequence[str]) -> str:
    """The columns of a file's header for a message ("a, b, c"), or, when the header does not look like
    column names (:func:`looks_like_column_names`), words saying so without quoting it: er never echoes
    the content of a file that is not the kind it expected."""
    if not names:
        return "(none)"
    if not looks_like_column_names(names):
        return f"{len(names)} (not shown: the first line does not look like a header of column names)"
    return ", ".join(sorted(names))


def closest_column(value: str, names: Sequence[str]) -> str:
    """:func:`did_you_mean` among ``names`` when they may be quoted (:func:`looks_like_column_names`), else ""."""
    return did_you_mean(value, names) if looks_like_column_names(names) else ""


@contextlib.contextmanager
def naming_file(path: object) -> Iterator[None]:
    """Inside, an :class:`OSError` that names no file (``write()`` on a full disk: ENOSPC carries no file
    name) is given ``path``, so that the message built from it (:func:`os_problem`) says which file."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise
