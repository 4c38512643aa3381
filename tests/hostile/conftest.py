"""The hostile-input suite (issue 18): every case is a whole ``er`` process.

:func:`run_er` runs ``python -m er_framework.cli.main ARGS`` in a subprocess,
in its own process group, and returns its exit code, stdout, stderr and peak
RSS (``ru_maxrss`` of the child, read with ``os.wait4`` - the process's own
peak, not a wall-clock figure). A case that must stay under a memory bound
also gets an address-space limit (``limit_mb``) so that a regression fails
the test instead of swapping the machine.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pytest

TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Ran:
    code: int
    out: str
    err: str
    peak_mb: float
    #: a process of the run's process group (a worker it started) outlived it
    left_behind: bool = False

    def assert_clean_error(self, code: int = 2, *needles: str) -> None:
        """Exit ``code``, no traceback, and every needle (case-insensitive) in stderr."""
        assert TRACEBACK not in self.err and TRACEBACK not in self.out, self.err
        assert self.code == code, (self.code, self.out, self.err)
        low = self.err.lower()
        for n in needles:
            assert n.lower() in low, (n, self.err)


def run_er(
    args: Sequence[str], cwd: str | Path | None = None, *, timeout: float = 300, limit_mb: int | None = None,
    env: dict[str, str] | None = None, stdin: bytes | None = None,
) -> Ran:
    """Run ``er ARGS`` as a whole process; kill its whole process group on timeout."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("ER_DEBUG", None)

    def limits() -> None:  # in the child, before exec
        os.setpgrp()
        if limit_mb is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))

    proc = subprocess.Popen(
        [sys.executable, "-m", "er_framework.cli.main", *map(str, args)], cwd=cwd, env=full_env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limits,
    )
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    timed_out: list[bool] = []

    def kill() -> None:
        timed_out.append(True)
        os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak RSS
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join()
    out, err = chunks.get("out", b""), chunks.get("err", b"")
    left = group_alive(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
    if timed_out:
        pytest.fail(f"er {' '.join(map(str, args))} did not finish in {timeout} s: {err.decode(errors='replace')[-2000:]}")
    return Ran(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
               usage.ru_maxrss / 1024, left)


def group_alive(pgid: int, grace: float = 3.0) -> bool:
    """Whether any process of the group ``pgid`` is still alive after ``grace`` seconds."""
    deadline = time.monotonic() + grace
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


@pytest.fixture
def er() -> object:
    return run_er
