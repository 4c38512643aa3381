"""Fingerprints of a run's input files: report.json records them, ``er explain`` (and ``er review``) compare.

A command that reads a run's sources again (``er explain`` reads the two records it explains) would explain
different data if a source changed after the run. The run records each input's fingerprint in report.json
(``inputs``), and :func:`changed_inputs` says which of them changed since.

* A **file**: its size, ``mtime_ns`` and the SHA-256 of its bytes: of the whole file up to
  :data:`WHOLE_HASH_MAX` bytes, else of its first and last :data:`EDGE_BYTES` (with the size: a file of
  gigabytes is fingerprinted in milliseconds). A file whose content hash covers every byte and still matches
  is unchanged even when its modification time moved (a ``touch``, a copy); a larger one whose modification
  time moved is changed (the middle is not hashed).
* A **folder of pages**: the number of pages, their total size, and the SHA-256 of the sorted listing of
  every page's relative path, size and ``mtime_ns`` (the pages are not read again: a corpus of a million
  pages is fingerprinted by one walk).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from er_framework.errors import ErError
from er_framework.io.page_folder import list_pages

__all__ = ["EDGE_BYTES", "WHOLE_HASH_MAX", "changed_inputs", "fingerprint"]

#: bytes hashed at each end of a large file
EDGE_BYTES = 1 << 20
#: files up to this size are hashed whole
WHOLE_HASH_MAX = 2 * EDGE_BYTES


def _file_fingerprint(path: Path) -> dict[str, Any]:
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        h = hashlib.sha256()
        if st.st_size <= WHOLE_HASH_MAX:
            h.update(f.read(WHOLE_HASH_MAX + 1))
            hashed = "whole"
        else:
            h.update(f.read(EDGE_BYTES))
            f.seek(st.st_size - EDGE_BYTES)
            h.update(f.read(EDGE_BYTES))
            hashed = "first and last MB"
    return {"kind": "file", "size": int(st.st_size), "mtime_ns": int(st.st_mtime_ns), "sha256": h.hexdigest(), "hashed": hashed}


def _folder_fingerprint(path: Path) -> dict[str, Any]:
    listing = list_pages(path)
    h = hashlib.sha256()
    total = 0
    newest = 0
    for rel, _ in listing.pages:
        try:
            st = os.lstat(path / rel)
        except OSError:
            h.update(f"{rel}\0missing\n".encode("utf-8", "surrogateescape"))
            continue
        total += st.st_size
        newest = max(newest, st.st_mtime_ns)
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return {"kind": "folder", "pages": len(listing.pages), "size": total, "mtime_ns": newest, "sha256": h.hexdigest(), "hashed": "listing"}


def fingerprint(path: str | Path) -> dict[str, Any]:
    """The fingerprint of an input file or page folder ``path`` (see the module), with its ``path``; an
    ``error`` (the OS's message) instead when it cannot be read."""
    p = Path(os.path.abspath(path))
    try:
        found = _folder_fingerprint(p) if p.is_dir() else _file_fingerprint(p)
    except OSError as exc:
        return {"path": str(p), "error": str(exc.strerror or exc)[:200]}
    except ErError as exc:  # a page folder the walk refuses (too many entries, a system folder)
        return {"path": str(p), "error": exc.problems[0].message[:200] if exc.problems else "refused"}
    return {"path": str(p), **found}


def _count(value: Any) -> str:
    """A number of report.json as text (a tampered report may hold anything: never a crash)."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"


def _difference(then: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """What differs between two fingerprints of one path (None: unchanged)."""
    if now.get("error"):
        return f"it cannot be read now ({now['error']})"
    if then.get("error"):
        return None  # it could not be fingerprinted at the run: nothing to compare
    if then.get("kind") != now.get("kind"):
        return f"it was a {'folder' if then.get('kind') == 'folder' else 'file'} and is now a {now.get('kind')}"
    if then.get("size") != now.get("size"):
        return f"its size was {_count(then.get('size'))} bytes and is now {_count(now.get('size'))}"
    if then.get("kind") == "folder" and then.get("pages") != now.get("pages"):
        return f"it held {_count(then.get('pages'))} pages and now holds {_count(now.get('pages'))}"
    if then.get("sha256") != now.get("sha256"):
        return "its content differs" if then.get("kind") == "file" else "its pages were changed, renamed or touched"
    if then.get("hashed") != "whole" and then.get("mtime_ns") != now.get("mtime_ns"):
        return "it was modified after the run (its modification time moved; the middle of a large file is not hashed)"
    return None


def changed_inputs(recorded: Sequence[Mapping[str, Any]], paths: Sequence[str | Path]) -> list[tuple[str, str]]:
    """``(path, what changed)`` for each of ``paths`` (the job's inputs now) that differs from its fingerprint in
    ``recorded`` (report.json ``inputs``), or that the run did not read; unchanged inputs give nothing."""
    by_path = {str(r.get("path")): r for r in recorded if isinstance(r, Mapping)}
    out: list[tuple[str, str]] = []
    for path in paths:
        path = os.path.abspath(path)
        then = by_path.get(path)
        if then is None:
            out.append((str(path), "the run did not read it (the job's sources changed since the run)"))
            continue
        diff = _difference(then, fingerprint(path))
        if diff is not None:
            out.append((str(path), diff))
    return out
