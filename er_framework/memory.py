"""Peak resident memory of this process, per stage where the OS allows it."""

from __future__ import annotations

import resource
import sys


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
