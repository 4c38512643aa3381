"""The walk of a folder of web pages (a page-folder source): which files are pages, bounded before any is read.

:func:`list_pages` lists the ``.html`` / ``.htm`` files below a folder (:func:`er_framework.io.html.read_html_dir`
reads them) and the other files, and leaves out what is never a page of the corpus:

* **er's own output folders.** A run writing ``--out`` inside its page folder would read its report.html back as a
  page on the next run. A sub-folder holding an er ``report.json`` (:func:`er_framework.io.outputs.is_er_output`),
  the commit journal (``.er-commit.json``) or an unfinished run's stage (``.er-tmp-*``) is skipped, not walked, and
  counted in the stats (``skipped_er_outputs``, with examples).
* **Pseudo file systems.** ``/proc``, ``/sys``, ``/dev`` and the other kernel file systems (the mount points of
  :data:`PSEUDO_FILESYSTEMS` in ``/proc/self/mounts``) hold no pages, and walking them (a process's every file
  descriptor, ``/proc/kcore``) is slow and endless: skipped and counted (``skipped_pseudo_filesystems``).
* Symbolic links to folders are not followed (listed among the other files, as before).

The root of the file system and the operating system's folders (:data:`SYSTEM_FOLDERS`) are refused before the
walk. The walk is bounded: it stops and refuses past :data:`MAX_FOLDER_ENTRIES` files and folders (a page folder set to
``/`` or a home folder), before any page is read; :func:`check_pages_fit` refuses pages whose total size is more
than the memory could hold (:data:`PAGE_MEMORY_SHARE` of the memory available: the pages are held while read).
Both messages give the count and the fix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from er_framework.errors import InputError, Problem
from er_framework.io.output_names import JOURNAL, STAGE_PREFIX, is_er_output
from er_framework.memory import available_memory, size_text

__all__ = [
    "MAX_FOLDER_ENTRIES",
    "SYSTEM_FOLDERS",
    "PAGE_MEMORY_SHARE",
    "PSEUDO_FILESYSTEMS",
    "PageListing",
    "check_pages_fit",
    "html_stem",
    "list_pages",
    "pseudo_mount_points",
]

#: the walk of a page folder refuses more files and folders than this (counted as listed, before any page is
#: read): 2,000,000 leaves room for a corpus of a million pages with as many other files (images, styles),
#: and stops a walk of ``/`` (a Linux root holds a few hundred thousand to a few million entries) early
MAX_FOLDER_ENTRIES = 2_000_000
#: the pages of a folder may take at most this share of the memory available: they are read and held
#: (decoded) before their text is extracted, so pages beyond it could not be held anyway
PAGE_MEMORY_SHARE = 0.5
#: kernel file systems that hold no pages: their mount points below a page folder are not walked
PSEUDO_FILESYSTEMS = frozenset(
    {
        "autofs",
        "binfmt_misc",
        "bpf",
        "cgroup",
        "cgroup2",
        "configfs",
        "debugfs",
        "devpts",
        "devtmpfs",
        "efivarfs",
        "fusectl",
        "hugetlbfs",
        "mqueue",
        "nsfs",
        "proc",
        "pstore",
        "rpc_pipefs",
        "securityfs",
        "selinuxfs",
        "sysfs",
        "tracefs",
    }
)
#: folders that are never a page folder: the root of the file system and the operating system's own (their
#: HTML files are manuals and package documentation; / of a container held 112,328 of them among 630,000
#: entries, read for minutes): refused before the walk. Sub-folders of them (/var/www, /usr/share/doc/x) are not
SYSTEM_FOLDERS = frozenset(
    {"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var"}
)
#: always skipped, whatever ``/proc/self/mounts`` says (or when it cannot be read)
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
#: examples kept in the stats
_EXAMPLES = 10
HTML_EXTENSIONS: tuple[str, ...] = (".html", ".htm")


def html_stem(name: str) -> str | None:
    """``name`` without its HTML extension, or ``None`` if it is not an HTML file (case-insensitive)."""
    low = name.lower()
    for ext in HTML_EXTENSIONS:
        if low.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return None


def _unescape_mount(text: str) -> str:
    """A mount point as ``/proc/self/mounts`` writes it (space, tab, newline, backslash as octal escapes)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text


def pseudo_mount_points(mounts: str | None = None) -> frozenset[str]:
    """The mount points of :data:`PSEUDO_FILESYSTEMS` (``mounts``: the text of ``/proc/self/mounts``, read when
    None), with ``/proc``, ``/sys`` and ``/dev``."""
    if mounts is None:
        try:
            with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
                mounts = f.read(1 << 22)
        except OSError:
            mounts = ""
    points = set(_PSEUDO_ROOTS)
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] in PSEUDO_FILESYSTEMS:
            points.add(_unescape_mount(parts[1]))
    return frozenset(points)


@dataclass
class PageListing:
    """What :func:`list_pages` found: pages as ``(relative path, id)``, the other files, the walk's errors, and
    the sub-folders left out (er outputs, pseudo file systems), each sorted by relative path."""

    pages: list[tuple[str, str]] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    errors: list[OSError] = field(default_factory=list)
    er_outputs: list[str] = field(default_factory=list)
    pseudo: list[str] = field(default_factory=list)
    entries: int = 0

    def stats(self) -> dict[str, Any]:
        """The skipped sub-folders for the source's reading stats (only the kinds there are)."""
        out: dict[str, Any] = {}
        if self.er_outputs:
            out["skipped_er_outputs"] = len(self.er_outputs)
            out["skipped_er_output_examples"] = self.er_outputs[:_EXAMPLES]
        if self.pseudo:
            out["skipped_pseudo_filesystems"] = len(self.pseudo)
            out["skipped_pseudo_filesystem_examples"] = self.pseudo[:_EXAMPLES]
        return out


def _is_er_folder(path: str, name: str) -> bool:
    """Whether the folder ``path`` (named ``name``) is er's: an output folder, or a stage of an unfinished run."""
    if name.startswith(STAGE_PREFIX):
        return True
    if os.path.lexists(os.path.join(path, JOURNAL)):
        return True
    try:
        entries = os.listdir(path)
    except OSError:
        return False  # the walk reports the folder it cannot list
    if any(e.startswith(STAGE_PREFIX) for e in entries):
        return True
    return "report.json" in entries and bool(is_er_output(Path(path)))


def _too_many(folder: Path, hint: str, limit: int) -> InputError:
    return InputError(
        Problem(
            where=str(folder),
            message=f"the page folder {str(folder.absolute())!r}{hint} holds more than {limit:,} files and folders "
            "(the walk stopped there, before reading any page): it is not a folder of pages",
            fix="point the source's path at the folder that holds the pages (not / or a home folder); a corpus of "
            f"more than {limit:,} files reads faster as one JSON Lines file (one page per line)",
        )
    )


def list_pages(folder: Path, hint: str = "", max_entries: int = MAX_FOLDER_ENTRIES, pseudo: frozenset[str] | None = None) -> PageListing:
    """The HTML files below ``folder`` as ``(relative path, id)`` and the other files (and symlinked folders, not
    followed), each sorted by relative path; er output folders and pseudo file systems left out (see the module).

    Raises :class:`InputError` when the folder holds more than ``max_entries`` files and folders (the walk stops
    there); ``pseudo``: the mount points not walked (default :func:`pseudo_mount_points`)."""
    skip = pseudo_mount_points() if pseudo is None else pseudo
    found = PageListing()
    top = os.path.abspath(folder)
    if os.path.realpath(folder) in SYSTEM_FOLDERS:
        raise InputError(
            Problem(
                where=str(folder),
                message=f"the page folder {str(folder.absolute())!r}{hint} is {os.path.realpath(folder)!r}, a folder of the "
                "operating system, not a folder of pages: its HTML files are manuals and documentation, and walking it "
                "reads the whole file system",
                fix="point the source's path at the folder that holds the pages",
            )
        )
    for dirpath, dirnames, filenames in os.walk(folder, onerror=found.errors.append):
        rel_dir = Path(dirpath).relative_to(folder).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        found.entries += len(filenames) + len(dirnames)
        if found.entries > max_entries:
            raise _too_many(folder, hint, max_entries)
        for fname in filenames:
            stem = html_stem(fname)
            if stem is None:
                found.others.append(prefix + fname)
            else:
                found.pages.append((prefix + fname, prefix + stem))
        walked = []
        for dname in dirnames:
            full = os.path.join(dirpath, dname)
            if os.path.islink(full):
                found.others.append(prefix + dname + "/")
            elif os.path.abspath(full) in skip and os.path.abspath(full) != top:
                found.pseudo.append(prefix + dname + "/")
            elif _is_er_folder(full, dname):
                found.er_outputs.append(prefix + dname + "/")
            else:
                walked.append(dname)
        dirnames[:] = walked  # the skipped folders are not walked
    found.pages.sort()
    found.others.sort()
    found.er_outputs.sort()
    found.pseudo.sort()
    return found


def check_pages_fit(folder: Path, pages: list[tuple[str, str]], hint: str = "", memory: int | None = None) -> int:
    """The total size of the ``pages`` of ``folder`` (their ``lstat``: nothing opened), refused with an
    :class:`InputError` when more than :data:`PAGE_MEMORY_SHARE` of ``memory`` (default: the memory available
    now; no limit when unknown). A page that cannot be stat'ed counts 0 (its read reports it)."""
    total = 0
    for rel, _ in pages:
        try:
            total += os.lstat(folder / rel).st_size
        except OSError:
            continue
    avail = available_memory() if memory is None else memory
    if avail is not None and total > PAGE_MEMORY_SHARE * avail:
        raise InputError(
            Problem(
                where=str(folder),
                message=f"the {len(pages):,} pages of the folder {str(folder.absolute())!r}{hint} take {size_text(total)}: "
                f"more than this process can hold while reading them ({size_text(avail)} of memory available)",
                fix="point the source's path at a smaller folder, split the corpus into several jobs, or convert the "
                "pages to a JSON Lines file (one page per line: large files are read without holding their text), "
                "or run on a machine with more memory",
            )
        )
    return total
