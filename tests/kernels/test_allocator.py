"""kernels.allocator: glibc keeps freed large blocks for reuse (Linux); nowhere else does it do anything."""

from __future__ import annotations

import subprocess
import sys

import pytest


_FAULTS = (
    "import resource, sys\n"
    "import numpy as np\n"
    "from er_framework.kernels.allocator import keep_freed_memory\n"
    "if sys.argv[1] == '1':\n"
    "    assert keep_freed_memory() and keep_freed_memory()\n"
    "a = np.ones(4 << 20)\n"
    "del a\n"
    "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
    "for _ in range(8):\n"
    "    a = np.ones(4 << 20)\n"
    "    del a\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_reuses_a_freed_32_mb_block() -> None:
    """In a fresh process: a 32 MB array allocated, written and freed 8 times. With the defaults each
    time is a new mapping (page faults on every page written); after keep_freed_memory (True, twice)
    the freed block is reused: no new page."""
    def faults(keep: bool) -> int:
        out = subprocess.run([sys.executable, "-c", _FAULTS, "1" if keep else "0"], check=True,
                             capture_output=True, text=True).stdout
        return int(out)

    assert faults(True) < 100 < faults(False)


def test_keep_freed_memory_elsewhere_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.kernels import allocator

    monkeypatch.setattr(allocator, "_applied", False)
    monkeypatch.setattr(allocator.sys, "platform", "darwin")
    assert allocator.keep_freed_memory() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_hand_back_freed_memory_returns_what_the_heap_kept() -> None:
    """With the heap keeping freed blocks, a freed 32 MB array stays resident until hand_back_freed_memory."""
    code = (
        "import os, numpy as np\n"
        "from er_framework.kernels.allocator import hand_back_freed_memory, keep_freed_memory\n"
        "def rss():\n"
        "    return int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') >> 20\n"
        "assert keep_freed_memory()\n"
        "a = np.ones(4 << 20)\n"
        "del a\n"
        "kept = rss()\n"
        "assert hand_back_freed_memory()\n"
        "print(kept - rss())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert int(out) >= 16
