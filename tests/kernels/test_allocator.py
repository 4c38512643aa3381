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
        out = subprocess.run([sys.executable, "-c", _FAULTS, "1" if keep else "0"], check=True, capture_output=True, text=True).stdout
        return int(out)

    assert faults(True) < 100 < faults(False)


def test_keep_freed_memory_elsewhere_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.kernels import allocator

    monkeypatch.setattr(allocator, "_applied", False)
    monkeypatch.setattr(allocator, "_libc", None)
    monkeypatch.setattr(allocator.sys, "platform", "darwin")
    assert allocator.keep_freed_memory() is False
    assert allocator.hand_back_freed_memory() is False


def test_release_free_memory_waits_for_a_large_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small process hands nothing back (each malloc_trim walks the heap); from the threshold on, both
    Arrow's pool and the heap are handed back; where the size cannot be read, always."""
    from er_framework.kernels import records_memory

    calls: list[str] = []
    monkeypatch.setattr(records_memory, "hand_back_freed_memory", lambda: calls.append("heap") or True)
    for rss, expected in [
        (records_memory.RELEASE_MIN_RESIDENT_BYTES - 1, []),
        (records_memory.RELEASE_MIN_RESIDENT_BYTES, ["heap"]),
        (None, ["heap"]),
    ]:
        calls.clear()
        monkeypatch.setattr(records_memory, "resident_bytes", lambda rss=rss: rss)
        records_memory.release_free_memory()
        assert calls == expected, rss


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/statm")
def test_resident_bytes_follows_an_allocation() -> None:
    import numpy as np

    from er_framework.kernels.allocator import resident_bytes

    before = resident_bytes()
    a = np.ones(64 << 17)  # 64 MB, written
    after = resident_bytes()
    assert before is not None and after is not None and after - before > 48 << 20
    del a


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
