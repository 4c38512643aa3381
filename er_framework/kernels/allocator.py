"""The C allocator's handling of the document stages' large temporaries (glibc on Linux).

The shingle stage (and streamed verification) allocate and free arrays of
a few to a few hundred MB step after step: code points, window hashes,
token sets, the kept sets' copies. glibc serves requests above its mmap
threshold (dynamic, at most 32 MB) with fresh ``mmap`` memory and trims
free memory at the top of its heaps, so every step's temporaries are
memory new to the process: one page fault per 4 KB page, several
microseconds each in a virtual machine. Measured on 20,000 documents of
~4,000 characters (2 cores, whole ``er run``, 4 runs each): 0.35-1.1 s of
system time with the defaults, 0.19-0.49 s with the limits raised (64 MB
and 256 MB as below, or 256 MB and 1 GB: no difference seen), the wall
time 1.89-2.10 s against 2.08-2.33 s. :func:`keep_freed_memory` raises
both limits so that freed temporaries stay in the heap and the next step
reuses them; results do not depend on it. The lower pair is kept: the
heap then holds at most 256 MB of freed memory beyond what is in use.
Elsewhere (macOS, Windows, musl) it does nothing.
"""

from __future__ import annotations

import os
import sys

__all__ = ["HEAP_KEEP_BYTES", "HEAP_MAX_BLOCK_BYTES", "hand_back_freed_memory", "keep_freed_memory", "resident_bytes"]

#: glibc's mallopt parameters
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: requests up to this size come from the heap (reused once freed) instead of fresh mmap memory
HEAP_MAX_BLOCK_BYTES = 64 << 20
#: free memory at the top of the heap is handed back to the system only beyond this size
HEAP_KEEP_BYTES = 256 << 20

_applied = False
#: glibc, loaded once (None: not loaded yet; False: not glibc)
_libc: object = None


def _glibc() -> object:
    global _libc
    if _libc is None:
        _libc = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _libc = ctypes.CDLL("libc.so.6")
            except OSError:  # not glibc
                pass
    return _libc


def resident_bytes() -> int | None:
    """This process's resident memory now (Linux ``/proc/self/statm``); None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def keep_freed_memory() -> bool:
    """Make glibc keep freed large blocks for reuse (:data:`HEAP_MAX_BLOCK_BYTES`, :data:`HEAP_KEEP_BYTES`);
    True when the settings are in force (once set, for the rest of the process), False where there is no
    glibc. :func:`er_framework.kernels.records_memory.release_free_memory` still hands everything back."""
    global _applied
    if _applied:
        return True
    libc = _glibc()
    if not libc:
        return False
    try:
        mallopt = libc.mallopt  # type: ignore[attr-defined]
        ok = bool(mallopt(M_MMAP_THRESHOLD, HEAP_MAX_BLOCK_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, HEAP_KEEP_BYTES))
    except AttributeError:  # not glibc (musl, ...): the defaults stay
        return False
    _applied = ok
    return ok


def hand_back_freed_memory() -> bool:
    """Return the heap's free memory to the system now (glibc ``malloc_trim(0)``), e.g. when the steps
    that reused it are over, so that the stages after them do not start from their peak; False where
    there is no glibc."""
    libc = _glibc()
    if not libc:
        return False
    try:
        libc.malloc_trim(0)  # type: ignore[attr-defined]
    except AttributeError:  # not glibc
        return False
    return True
