"""Sources named by URL (issue 30): ``s3://``, ``gs://``, ``memory://``, ``file://`` … read through fsspec.

A source's ``path:`` may be a URL ``PROTOCOL://…`` (two letters or more before ``://``: ``C:/data`` stays a
Windows path). What this module decides:

* **Never relative.** A URL names its file itself; the job file's folder is not put in front of it
  (:func:`is_url` is the test the config layer makes, :func:`~er_framework.config.source_checks.expand_source_path`).
* **file://** is the local file system: :func:`local_path` turns the URL into a local path, and that path is read
  as any other (byte ranges, the regular-file checks, fingerprints of the bytes).
* **Other protocols** are read through fsspec: :func:`open_url` opens a file for reading (a stream: the CSV and
  JSON Lines readers read it 1 MB at a time, the Parquet reader its footer and the columns it needs),
  :func:`expand_url` lists the files a glob matches (sorted by name, as a local glob) and :func:`url_info` is the
  file's size and version (``etag``, ``mtime`` or ``created``: what the file system tells) for the fingerprint of
  report.json's ``inputs``.
* **A missing package** (``s3fs`` for ``s3://``, ``gcsfs`` for ``gs://``, …) is an :class:`InputError` naming the
  package to install; an unknown protocol names the protocols fsspec knows.

fsspec (a dependency of Dask, and of er for this module) is imported when a URL is met.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, BinaryIO

from er_framework.errors import InputError, Problem

__all__ = [
    "expand_url",
    "is_url",
    "local_path",
    "open_url",
    "url_filesystem",
    "url_info",
    "url_protocol",
]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")


def url_protocol(path: str | Path) -> str | None:
    """The protocol of a URL (``"s3"`` of ``s3://bucket/a.parquet``), lower case, or ``None`` for a path."""
    if not isinstance(path, str):
        return None  # a Path never holds a URL (Path collapses the "//")
    m = _URL.match(path)
    return m.group(1).lower() if m else None


def is_url(path: str | Path) -> bool:
    """Whether a source path is a URL (``PROTOCOL://…``): never relative to the job file's folder."""
    return url_protocol(path) is not None


def local_path(path: str | Path) -> Path | None:
    """The local path a ``file://`` URL names (or a path that is not a URL, as it is); ``None`` for any other URL."""
    protocol = url_protocol(path)
    if protocol is None:
        return Path(path)
    if protocol not in ("file", "local"):
        return None
    rest = str(path)[len(protocol) + 3 :]
    from urllib.parse import unquote

    return Path(unquote(rest) or "/")


def _package_of(protocol: str) -> str | None:
    """The package that implements ``protocol`` in fsspec's registry (``"s3fs"`` for ``s3``), if fsspec names one."""
    from fsspec.registry import known_implementations

    known = known_implementations.get(protocol)
    if not isinstance(known, dict) or not isinstance(known.get("class"), str):
        return None
    return str(known["class"]).split(".", 1)[0]


def url_filesystem(url: str, where: str = "") -> tuple[Any, str]:
    """``(fsspec file system, the path inside it)`` of ``url``; :class:`InputError` when fsspec (or the package of the
    URL's protocol: ``s3fs``, ``gcsfs``, …) is not installed, or the protocol is unknown. ``where``: the URL's place
    in the job, named in the message."""
    protocol = url_protocol(url) or "file"
    at = where or url
    try:
        import fsspec
    except ImportError:
        raise InputError(
            Problem(where=at, message=f"reading the URL {url!r} needs fsspec, which is not installed", fix="pip install fsspec")
        ) from None
    try:
        fs, inner = fsspec.core.url_to_fs(url)
    except ImportError as e:
        package = _package_of(protocol) or "the package of the protocol"
        raise InputError(
            Problem(
                where=at,
                message=f"reading {protocol}:// URLs needs the package {package}, which is not installed ({e})",
                fix=f"pip install {package}" if _package_of(protocol) else "install fsspec's implementation of the protocol",
            )
        ) from None
    except ValueError as e:
        from fsspec.registry import known_implementations

        raise InputError(
            Problem(
                where=at,
                message=f"unknown URL protocol {protocol!r} in {url!r} ({e})",
                fix=f"use a protocol fsspec knows (e.g. {', '.join(sorted(known_implementations)[:12])}, …), or a local path",
            )
        ) from None
    return fs, str(inner)


def _full_url(fs: Any, inner: str) -> str:
    """The URL of the file system's path ``inner`` (``memory:///b/a.csv``)."""
    return str(fs.unstrip_protocol(inner))


def expand_url(url: str, where: str = "") -> list[str]:
    """The URLs of the files ``url`` names: itself, or for a glob pattern (``*``, ``?``, ``[``; ``**`` across
    folders) the files it matches, sorted by name (their records are read in that order)."""
    if not any(c in url for c in "*?["):
        return [url]
    fs, inner = url_filesystem(url, where)
    try:
        found = fs.glob(inner, detail=True)
    except OSError as e:
        raise InputError(
            Problem(where=where or url, message=f"cannot list {url!r}: {e}", fix="check the URL and your access to it")
        ) from None
    files = sorted(str(p) for p, info in found.items() if info.get("type") == "file")
    return [_full_url(fs, p) for p in files]


def url_info(url: str) -> dict[str, Any]:
    """A remote file's fingerprint as its file system tells it: ``{"kind": "url", "size", "version"}`` (``version``:
    its ``etag``, else its modification or creation time, as text), or ``{"error": …}`` when it cannot be read."""
    try:
        fs, inner = url_filesystem(url)
        info = fs.info(inner)
    except InputError as exc:
        return {"error": exc.problems[0].message[:200]}
    except (OSError, ValueError) as exc:
        return {"error": str(exc)[:200] or type(exc).__name__}
    if info.get("type") == "directory":
        return {"kind": "url folder", "size": 0, "version": ""}
    version = ""
    for key in ("ETag", "etag", "md5Hash", "LastModified", "last_modified", "mtime", "updated", "created"):
        if info.get(key) not in (None, ""):
            version = f"{key}={info[key]}"
            break
    return {"kind": "url", "size": int(info.get("size") or 0), "version": version}


def open_url(url: str, file: str, hint: str) -> BinaryIO:
    """``url`` opened for reading (binary, seekable); InputError naming ``file`` when it cannot be (missing file,
    a folder, no access, a missing package)."""
    fs, inner = url_filesystem(url, file)
    try:
        if fs.isdir(inner):
            raise InputError(
                Problem(where=file, message=f"{url!r} is a folder, expected a data file{hint}", fix="point the path to a file inside it")
            )
        f: BinaryIO = fs.open(inner, "rb")
    except FileNotFoundError:
        raise InputError(
            Problem(where=file, message=f"no such file: {url!r}{hint}", fix="check the URL (a URL is never relative to the job file)")
        ) from None
    except OSError as e:
        raise InputError(
            Problem(
                where=file, message=f"cannot read {url!r}: {e}{hint}", fix="check the URL and your access to it (credentials, permissions)"
            )
        ) from None
    return f
