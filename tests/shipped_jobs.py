"""A shipped job (``configs/NAME``) copied into a test's folder: its sources' paths made absolute, its output
folder dropped (the test names one), then edited; the tests that compare executors on the shipped jobs share it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


def shipped_job(
    name: str,
    tmp: Path,
    tag: str,
    *,
    executor: dict[str, Any] | None = None,
    edit: dict[str, Any] | None = None,
    paths: dict[str, Path] | None = None,
    output: bool = True,
    in_memory: bool = False,
) -> Path:
    """``configs/<name>`` written as ``tmp/<tag>-<name>``: each source's path absolute (``paths``: other files
    for some sources, by name; ``in_memory``: no path, the sources given as DataFrames), ``output.dir`` dropped
    (``output=False``: the whole ``output:``), the keys of ``edit`` set, and ``executor`` when given."""
    data: dict[str, Any] = yaml.safe_load((ROOT / "configs" / name).read_text(encoding="utf-8"))
    for src in data["sources"]:
        if in_memory:
            del src["path"]
        elif "path" in src:
            src["path"] = str((paths or {}).get(src["name"], (ROOT / "configs" / src["path"]).resolve()))
    if output:
        data.get("output", {}).pop("dir", None)
    else:
        data.pop("output", None)
    data.update(edit or {})
    if executor is not None:
        data["executor"] = executor
    path = tmp / f"{tag}-{name}"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
