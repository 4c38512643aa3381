"""A large JSON Lines source read file-backed on several processes, one byte range each.

The first pass over a JSON Lines file parses every line (Python's JSON
scanner holds the GIL): on 1,000,000 documents of ~3,800 characters it is the
longest stage that uses one core. :func:`read_jsonl_parallel` cuts the file
into ``workers`` byte ranges (:func:`~er_framework.io.source_files.partition_ranges`),
reads each file-backed (:func:`~er_framework.io.source_files.read_source`) in a
forked process (:func:`~er_framework.kernels.parallel.map_processes`) and
joins the records in file order; what comes back is ids and where the texts
lie, not the texts. Only a clean file takes this path: when any range has a
problem (bad JSON, a missing field, a repeated id …), an id repeats across
ranges, or the file holds no record, it returns ``None`` and the caller reads
the file in one pass, which reports every problem with the file's own line
numbers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.filetext import FileTexts
from er_framework.io.source_files import partition_ranges, read_source
from er_framework.kernels import parallel
from er_framework.kernels.parallel import map_processes

__all__ = ["read_jsonl_parallel", "read_range"]


def read_range(path: str, byte_range: tuple[int, int], options: dict[str, Any]) -> Records | None:
    """The records of the lines starting in ``byte_range`` of ``path``, file-backed; None on any problem."""
    try:
        return read_source(path, byte_range=byte_range, file_backed=True, **options)
    except InputError:
        return None


def read_jsonl_parallel(path: str | Path, workers: int, **options: Any) -> Records | None:
    """:func:`~er_framework.io.source_files.read_source` of a JSON Lines file with ``file_backed=True``, on
    ``workers`` processes; None when the file is not read this way (not split, a problem anywhere)."""
    p = Path(path)
    if workers <= 1 or not p.is_file() or not parallel.FORK_SAFE:  # forked workers only
        return None
    size = p.stat().st_size
    ranges = partition_ranges(p, max(1, -(-size // workers)))
    if ranges is None or len(ranges) < 2:
        return None
    parts = map_processes(read_range, [(os.fspath(p), r, options) for r in ranges], workers)
    kept = [r for r in parts if r is not None and len(r)]
    if any(r is None for r in parts) or not kept:
        return None
    ids = [i for r in kept for i in r.ids]
    if len(set(ids)) != len(ids):  # a repeated id: the one-pass reader names both lines
        return None
    fields: dict[str, Any] = {}
    for f in kept[0].fields:
        cols = [r.fields[f] for r in kept]
        if all(isinstance(c, FileTexts) for c in cols):
            fields[f] = FileTexts.concat(cols)  # type: ignore[arg-type]
        else:
            fields[f] = [v for c in cols for v in c]
    return Records(ids=ids, source=np.zeros(len(ids), dtype=np.int32), source_names=list(kept[0].source_names), fields=fields)
