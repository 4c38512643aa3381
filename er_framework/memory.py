"""Peak resident memory of this process, per stage where the OS allows it; the memory it may still take."""

from __future__ import annotations

import os
import resource
import sys

__all__ = ["available_memory", "peak_rss_mb", "reset_peak_rss", "size_text"]


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB.

    On Linux, ``VmHWM`` of ``/proc/self/status`` (the peak since the process
    started or since :func:`reset_peak_rss`); elsewhere ``ru_maxrss``, which
    can include the peak of a parent process.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux: ``echo 5 > /proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def available_memory() -> int | None:
    """Bytes this process may still allocate: ``MemAvailable`` of ``/proc/meminfo``, lowered to what an
    address-space limit (``RLIMIT_AS``) leaves above the current size; ``None`` when neither is known."""
    known: list[int] = []
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    known.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError):
        pass
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError, AttributeError):  # pragma: no cover
        soft = resource.RLIM_INFINITY
    if soft != resource.RLIM_INFINITY:
        size = 0
        try:
            with open("/proc/self/statm", encoding="ascii") as f:
                size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
        known.append(max(0, soft - size))
    return min(known) if known else None


def size_text(n_bytes: float) -> str:
    """``n_bytes`` for a message: ``1.5 GB``, ``300 MB`` or ``< 1 MB``."""
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:,.1f} GB"
    return f"{n_bytes / 2**20:,.0f} MB" if n_bytes >= 2**20 else "< 1 MB"
