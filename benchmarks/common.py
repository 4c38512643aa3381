"""Helpers shared by the benchmark scripts (plain Python: the workers of other
libraries must not import numpy or er-framework before they are timed)."""

from __future__ import annotations

import hashlib
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    """Peak resident memory of this process so far, MB.

    Linux: ``VmHWM`` of /proc/self/status, the high-water mark of this process's
    own address space. ``getrusage(RUSAGE_SELF).ru_maxrss`` is not used there:
    it survives fork + exec, so a worker would report at least the RSS its
    parent had when it was started (the parent holds the data and the truth).
    Elsewhere: ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def cpu_s() -> float:
    """User + system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Clock:
    """Seconds per stage, measured back to back."""

    def __init__(self) -> None:
        self.t0 = self.last = time.perf_counter()
        self.cpu0 = cpu_s()
        self.stages: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = self.stages.get(name, 0.0) + (now - self.last)
        self.last = now

    def total(self) -> float:
        return time.perf_counter() - self.t0


def code_fingerprint() -> dict[str, Any]:
    """git HEAD, the uncommitted er paths, and SHA-256s of the er-framework sources as run.

    The repository is edited while benchmarks run; this ties a result to the code it measured.
    """
    files = sorted([*ROOT.glob("er_framework/**/*.py"), *ROOT.glob("plugins/*.py")])
    h = hashlib.sha256()
    newest = 0.0
    per_file: dict[str, str] = {}
    for f in files:
        data = f.read_bytes()
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + data + b"\0")
        per_file[str(f.relative_to(ROOT))] = hashlib.sha256(data).hexdigest()[:16]
        newest = max(newest, f.stat().st_mtime)

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "git_head": git("rev-parse", "HEAD"),
        "dirty_paths": git("status", "--porcelain", "--", "er_framework", "plugins").splitlines(),
        "sources_sha256": h.hexdigest(),
        "newest_source_mtime": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(newest)),
        "files": per_file,
    }


def machine_info(dists: tuple[str, ...]) -> dict[str, Any]:
    """Cores, CPU model, memory, Python, platform and the versions of ``dists``."""
    import os
    import platform
    from importlib import metadata

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str] = {}
    for dist in dists:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    try:
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        mem_gb = None
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": mem_gb,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def parse_contenders(text: str, known: Any, choices: Any) -> list[str] | None:
    """The comma-separated contender names of ``--contenders``; ``None`` (after a message) if any is unknown."""
    contenders = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in contenders if c not in known]
    if unknown:
        print(f"unknown contender(s) {unknown}; choose from {choices}", file=sys.stderr)
        return None
    return contenders


def min_max(text: str, example: str) -> tuple[int, int]:
    """An argparse type: ``"MIN,MAX"`` with ``1 <= MIN <= MAX`` (``example`` shown in the message)."""
    import argparse

    try:
        lo, hi = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MIN,MAX (e.g. {example}), got {text!r}") from None
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"need 1 <= MIN <= MAX, got {text!r}")
    return lo, hi
