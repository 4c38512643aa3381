"""The names of an output folder and how to recognize one, without the transaction's machinery.

What :mod:`er_framework.io.outputs` writes is named here, so that modules that only need to recognize
an output folder (the one writer, the page-folder walk) do not load the transaction: ``er validate``
stays light.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["JOURNAL", "MAX_REPORT_BYTES", "OUTPUT_NAMES", "OUTPUT_TABLES", "STAGE_PREFIX", "is_er_output"]

#: the tables a run may write (pairs and clusters always; the others when the job asks or its clusterer selects pairs)
OUTPUT_TABLES = ("pairs", "clusters", "verified_pairs", "candidates", "comparisons", "golden")
#: every name er writes into an output folder (tables in either format, the reports, the model, er evaluate's metrics)
OUTPUT_NAMES = frozenset(f"{t}.{ext}" for t in OUTPUT_TABLES for ext in ("csv", "parquet")) | {
    "report.json",
    "report.html",
    "model.json",
    "evaluation.json",
}
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
