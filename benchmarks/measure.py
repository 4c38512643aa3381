"""Time a command as a whole process and measure its peak memory from outside it.

    python benchmarks/measure.py --out result.json [--repeat N] [--timeout S] [--cwd DIR]
        [--stdout FILE] [--stderr FILE] -- COMMAND [ARG ...]

This small launcher (plain Python, no numpy) starts the command, waits for it
with ``os.wait4`` and writes one JSON object with, per run:

``wall_s``
    ``time.perf_counter`` from just before the fork to the return of ``wait4``:
    interpreter start-up, imports, the work, writing, exit — what a user waits.
``user_s``, ``sys_s``
    CPU seconds of the process and of every descendant it waited for (``wait4``'s rusage).
``ru_maxrss_mb``
    ``wait4``'s ``ru_maxrss``: the largest resident set of the process or of any
    descendant it waited for (a maximum over processes, not a sum).
``tree_rss_peak_mb``
    the largest sum of ``VmRSS`` over the process and all its descendants,
    sampled every ``--poll`` seconds (20 ms; the list of descendants is refreshed
    every 0.25 s): concurrent worker processes add up here, not in ``ru_maxrss``.
    Linux only (``/proc``); ``null`` elsewhere.
``peak_rss_mb``
    ``max(ru_maxrss_mb, tree_rss_peak_mb)``.

Why a launcher: Linux folds the memory high-water mark of the address space a
process had before ``exec`` into its ``ru_maxrss``, so a command started by a
benchmark that holds gigabytes of data would report at least those gigabytes.
Started from this ~10 MB process, the command's ``ru_maxrss`` is its own.
The launcher's own start-up is outside every figure. A command running past
``--timeout`` has its whole process group killed (``timed_out: true``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def _rss_kb(pid: int) -> int:
    """VmRSS of one process in kB from /proc/<pid>/statm (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_KB
    except (OSError, ValueError, IndexError):
        return 0


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's /proc/<pid>/task/<tid>/children)."""
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    out.extend(int(x) for x in f.read().split())
            except OSError:
                continue
    except OSError:
        pass
    return out


def descendants(pid: int) -> list[int]:
    seen: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        for c in _children(p):
            if c not in seen:
                seen.append(c)
                todo.append(c)
    return seen


def run_once(cmd: list[str], cwd: str | None, stdout: Any, stderr: Any, timeout: float | None, poll: float) -> dict[str, Any]:
    """One run: the main thread blocks in ``wait4`` (an exact end time); a thread samples the tree's RSS."""
    have_proc = os.path.isdir("/proc/self/task")
    state = {"peak_kb": 0, "polls": 0, "timed_out": False}
    done = threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=stdout, stderr=stderr, start_new_session=True)
    pid = proc.pid

    def sample() -> None:
        tree: list[int] = []
        next_tree = 0.0
        while not done.is_set():
            now = time.perf_counter() - t0
            if timeout is not None and now > timeout:
                state["timed_out"] = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                return
            if have_proc:
                if now >= next_tree:
                    tree = descendants(pid)
                    next_tree = now + 0.25
                state["peak_kb"] = max(state["peak_kb"], _rss_kb(pid) + sum(_rss_kb(c) for c in tree))
                state["polls"] += 1
            # short sleeps at first (start-up commands end in tens of ms), then the poll interval
            done.wait(min(poll, 0.002 + now / 20))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, kB elsewhere
    maxrss = ru.ru_maxrss / scale
    tree_mb = state["peak_kb"] / 1024 if have_proc else None
    return {
        "wall_s": round(wall, 4),
        "user_s": round(ru.ru_utime, 3),
        "sys_s": round(ru.ru_stime, 3),
        "ru_maxrss_mb": round(maxrss, 1),
        "tree_rss_peak_mb": None if tree_mb is None else round(tree_mb, 1),
        "peak_rss_mb": round(max(maxrss, tree_mb or 0.0), 1),
        "exit_code": proc.returncode,
        "timed_out": bool(state["timed_out"]),
        "polls": state["polls"],
    }


def measure(
    cmd: list[str],
    repeat: int = 1,
    cwd: str | None = None,
    stdout: str | None = None,
    stderr: str | None = None,
    timeout: float | None = None,
    poll: float = 0.02,
) -> dict[str, Any]:
    runs = []
    for _ in range(repeat):
        with open(stdout or os.devnull, "ab") as out, open(stderr or os.devnull, "ab") as err:
            r = run_once(cmd, cwd, out, err, timeout, poll)
        runs.append(r)
        if r["exit_code"] != 0 or r["timed_out"]:
            break
    ok = [r for r in runs if r["exit_code"] == 0 and not r["timed_out"]]
    best = min(ok, key=lambda r: r["wall_s"]) if ok else runs[-1]
    return {"cmd": cmd, "cwd": cwd, "runs": runs, "best": best, "ok": len(ok) == len(runs)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print("usage: measure.py [options] -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    cut = argv.index("--")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON result")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--timeout", type=float, default=None, help="seconds per run")
    p.add_argument("--cwd", default=None)
    p.add_argument("--stdout", default=None, help="append the command's stdout here (default: discarded)")
    p.add_argument("--stderr", default=None, help="append the command's stderr here (default: discarded)")
    p.add_argument("--poll", type=float, default=0.02, help="RSS sampling interval, seconds")
    a = p.parse_args(argv[:cut])
    cmd = argv[cut + 1 :]
    if not cmd:
        p.error("no command after --")
    res = measure(cmd, max(1, a.repeat), a.cwd, a.stdout, a.stderr, a.timeout, a.poll)
    Path(a.out).write_text(json.dumps(res, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
