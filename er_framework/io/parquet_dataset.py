"""Parquet datasets (issue 30): a folder of Parquet files as one source, local or at a URL.

A source's ``path:`` is a **Parquet dataset** when it is a folder (or a URL of one) named ``*.parquet`` (as Spark
writes them), or a folder whose files include ``.parquet`` files and no web page (``.html``/``.htm``: a folder of
pages is read by :mod:`er_framework.io.html`). Its files:

* every ``*.parquet`` file below the folder, sub-folders included, in the order of their paths relative to the
  folder (``year=2023/part-0.parquet`` before ``year=2024/part-0.parquet``): the records of the source come in that
  order, as the files of a glob do. Files and folders whose name starts with ``.`` or ``_`` (``_SUCCESS``,
  ``_metadata``, ``.part-0.crc``) are skipped, as pyarrow.dataset skips them; so are other files (a README).
* **hive partitions**: a folder ``KEY=VALUE`` between the dataset's folder and a file adds the column ``KEY`` of
  value ``VALUE`` (URL-decoded; ``__HIVE_DEFAULT_PARTITION__`` is missing) to every row of that file. Their values
  are text, as every value a source reads (``year=2024`` is ``"2024"``); a field may name them. A file holding a
  column of the same name is an error (the column appears twice).
* each file is read on its own (:func:`read_dataset_file_columns`: the columns the job needs, no other), so memory
  holds one file's columns at a time besides the records kept; the Dask executor reads one file per partition
  (:func:`dataset_files`).

Bad datasets are :class:`~er_framework.errors.InputError` naming the file: a folder without a Parquet file, a file
that is not valid Parquet, a file lacking a column of the job (the others have it: mixed schemas), an id in two
files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from er_framework.errors import InputError, Problem
from er_framework.io.remote import local_path, open_url, url_filesystem

__all__ = [
    "HIVE_DEFAULT",
    "DatasetFile",
    "dataset_files",
    "dataset_header",
    "hive_partitions",
    "is_parquet_dataset",
    "bad_parquet",
]

#: the folder value Hive, Spark and pyarrow write for a missing partition value
HIVE_DEFAULT = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class DatasetFile:
    """One Parquet file of a dataset: where it is (a local path or a URL) and its hive partition columns."""

    #: the file: an absolute local path, or a URL
    location: str
    #: ``(column, value)`` of each ``KEY=VALUE`` folder between the dataset's folder and the file
    partitions: tuple[tuple[str, str | None], ...] = ()


def _skipped(name: str) -> bool:
    return name.startswith((".", "_"))


def hive_partitions(relative: str) -> tuple[tuple[str, str | None], ...]:
    """The hive partition columns of a file's path relative to its dataset's folder (``year=2024/m=1/a.parquet``
    -> ``(("year", "2024"), ("m", "1"))``); folders without ``=`` add none."""
    out: list[tuple[str, str | None]] = []
    for part in relative.replace("\\", "/").split("/")[:-1]:
        key, eq, value = part.partition("=")
        if eq and key:
            text = unquote(value)
            out.append((unquote(key), None if text == HIVE_DEFAULT else text))
    return tuple(out)


def is_parquet_dataset(location: str | Path) -> bool:
    """Whether ``location`` (a local path or URL) is a Parquet dataset folder (see the module)."""
    local = local_path(location)
    if local is not None:
        return _local_is_dataset(local)
    try:
        fs, inner = url_filesystem(str(location))
        if not fs.isdir(inner):
            return False
        if inner.rstrip("/").lower().endswith(".parquet"):
            return True
        names = [str(p).lower() for p in fs.find(inner)]
    except (InputError, OSError, ValueError):
        return False  # the reader reports it
    return any(n.endswith(".parquet") for n in names) and not any(n.endswith((".html", ".htm")) for n in names)


def _local_is_dataset(path: Path) -> bool:
    if not path.is_dir():
        return False
    if path.name.lower().endswith(".parquet"):
        return True
    found = False
    for _, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not _skipped(d)]
        for name in files:
            low = name.lower()
            if low.endswith((".html", ".htm")):
                return False
            found = found or (low.endswith(".parquet") and not _skipped(name))
    return found


def dataset_files(location: str | Path, where: str = "") -> list[DatasetFile]:
    """The Parquet files of the dataset ``location`` in reading order, each with its hive partitions; InputError
    naming the folder when it holds none."""
    local = local_path(location)
    rels: list[str]
    if local is not None:
        base = local.resolve()
        rels = []
        for root, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if not _skipped(d)]
            rels += [os.path.relpath(os.path.join(root, n), base) for n in files if n.lower().endswith(".parquet") and not _skipped(n)]
        made = [DatasetFile(str(base / r), hive_partitions(r)) for r in sorted(rels, key=_sort_key)]
    else:
        fs, inner = url_filesystem(str(location), where)
        inner = inner.rstrip("/")
        rels = [str(p)[len(inner) + 1 :] for p in fs.find(inner)]
        rels = [r for r in rels if r.lower().endswith(".parquet") and not any(_skipped(x) for x in r.split("/"))]
        made = [DatasetFile(str(fs.unstrip_protocol(f"{inner}/{r}")), hive_partitions(r)) for r in sorted(rels, key=_sort_key)]
    if not made:
        raise InputError(
            Problem(
                where=where or str(location),
                message=f"the Parquet dataset folder {str(location)!r} holds no .parquet file",
                fix="point the path to a folder of .parquet files (sub-folders are read too), or to one data file",
            )
        )
    return made


def _sort_key(relative: str) -> list[str]:
    return relative.replace("\\", "/").split("/")


def _parquet_names(location: str, file: str, hint: str) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        local = local_path(location)
        with open(local, "rb") if local is not None else open_url(location, file, hint) as f:
            return list(pq.read_schema(f).names)
    except (pa.ArrowException, OSError) as e:
        raise InputError(bad_parquet(file, e, hint)) from None


def bad_parquet(file: str, e: BaseException, hint: str) -> Problem:
    return Problem(
        where=file,
        message=f"cannot read the Parquet file: {e}{hint}",
        fix="check that the file is a complete, valid Parquet file (pyarrow.parquet.read_table opens it), or remove it from the dataset",
    )


def dataset_header(location: str | Path, hint: str = "") -> list[str]:
    """The columns of a dataset as its first file names them (its schema, then its hive partition columns)."""
    first = dataset_files(location)[0]
    return _parquet_names(first.location, first.location, hint) + [k for k, _ in first.partitions]
