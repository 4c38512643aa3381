"""The names of an output folder and how to recognize one, without the transaction's machinery.

What :mod:`er_framework.io.outputs` writes is named here, so that modules that only need to recognize
an output folder (the one writer, the page-folder walk) do not load the transaction: ``er validate``
stays light.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

__all__ = [
    "DATASET_MANIFEST",
    "JOURNAL",
    "MAX_REPORT_BYTES",
    "OUTPUT_DATASETS",
    "OUTPUT_NAMES",
    "OUTPUT_TABLES",
    "STAGE_PREFIX",
    "is_dataset_dir",
    "is_er_output",
    "part_file_name",
]

#: the tables a run may write (pairs and clusters always; the others when the job asks or its clusterer selects pairs)
OUTPUT_TABLES = ("pairs", "clusters", "verified_pairs", "candidates", "comparisons", "golden")
#: the folders a run may write: a table as a Parquet dataset written in parts (``pairs/part-00000.parquet`` …
#: and ``pairs/_manifest.json``, written last; :mod:`er_framework.io.part_tables`)
OUTPUT_DATASETS = frozenset(OUTPUT_TABLES)
#: every name er writes into an output folder (tables in either format or as a dataset folder, the reports,
#: the model, er evaluate's metrics)
OUTPUT_NAMES = (
    frozenset(f"{t}.{ext}" for t in OUTPUT_TABLES for ext in ("csv", "parquet"))
    | OUTPUT_DATASETS
    | {
        "report.json",
        "report.html",
        "model.json",
        "evaluation.json",
    }
)
#: the manifest of a dataset folder: its parts, rows and schema; a folder without one is not a (complete) dataset
DATASET_MANIFEST = "_manifest.json"
_PART = re.compile(r"part-[0-9]{5,}\.(csv|parquet)")
JOURNAL = ".er-commit.json"
STAGE_PREFIX = ".er-tmp-"
#: the largest report.json read (er's are kilobytes to a few megabytes)
MAX_REPORT_BYTES = 256 << 20


def is_er_output(out: Path) -> set[str]:
    """The names in ``out`` that an er run wrote: those its ``report.json`` lists (``outputs``), or, for a
    report.json of an older version, the tool's output names. Empty when there is no er report.json (a
    report.json that is not a regular file or is larger than :data:`MAX_REPORT_BYTES` is not read)."""
    path = out / "report.json"
    try:
        st = os.stat(path)
        if not path.is_file() or st.st_size > MAX_REPORT_BYTES:
            return set()
        with open(path, "rb") as fh:
            report = json.loads(fh.read(MAX_REPORT_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    if not isinstance(report, dict) or "config_hash" not in report or "versions" not in report:
        return set()
    listed = report.get("outputs")
    names = set(OUTPUT_NAMES)
    if isinstance(listed, list):
        names |= {n for n in listed if isinstance(n, str) and "/" not in n}
    return names


def part_file_name(part_no: int, fmt: str) -> str:
    """The file of part ``part_no`` of a table written in parts: ``part-00007.csv`` / ``part-00007.parquet``."""
    return f"part-{part_no:05d}.{fmt}"


def is_dataset_dir(path: Path) -> bool:
    """``path`` is a dataset folder er wrote: a folder (not a symlink) holding its manifest
    (:data:`DATASET_MANIFEST`, a regular file) and otherwise only part files (``part-NNNNN.parquet``). A folder
    holding anything else is not er's (a commit never removes it)."""
    try:
        if path.is_symlink() or not path.is_dir():
            return False
        entries = os.listdir(path)
    except OSError:
        return False
    if DATASET_MANIFEST not in entries or not (path / DATASET_MANIFEST).is_file() or (path / DATASET_MANIFEST).is_symlink():
        return False
    return all(e == DATASET_MANIFEST or (_PART.fullmatch(e) is not None and e.endswith(".parquet")) for e in entries)
