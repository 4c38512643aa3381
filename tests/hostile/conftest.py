"""The hostile-input suite (issue 18): every case is a whole ``er`` process.

:func:`run_er` runs ``python -m er_framework.cli.main ARGS`` in a subprocess,
in its own process group, and returns its exit code, stdout, stderr and peak
RSS (``ru_maxrss`` of er, read with ``os.wait4`` by a small launcher - the
process's own peak, not a wall-clock figure; see :data:`LAUNCHER`). A case that must stay under a memory bound
also gets an address-space limit (``limit_mb``) so that a regression fails
the test instead of swapping the machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TRACEBACK = "Traceback (most recent call last)"

#: runs ``python ARGS`` as its child and writes the child's peak RSS (KB, from wait4) to a file. A process
#: forked from the test process would count the test process's pages as its own peak (ru_maxrss keeps the
#: high-water mark from before exec, and pytest grows to hundreds of MB over a session); this launcher is
#: small when it forks, so the figure is er's own. The address-space limit is set in the child only.
LAUNCHER = """
import os, resource, signal, sys
out, limit = sys.argv[1], int(sys.argv[2])
pid = os.fork()
if pid == 0:
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit << 20, limit << 20))
    os.execv(sys.executable, [sys.executable, *sys.argv[3:]])
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the group is the child's to act on
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.WEXITSTATUS(status))
"""


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
    args: Sequence[str],
    cwd: str | Path | None = None,
    *,
    timeout: float = 300,
    limit_mb: int | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> Ran:
    """Run ``er ARGS`` as a whole process; kill its whole process group on timeout."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("ER_DEBUG", None)

    def new_group() -> None:  # in the launcher, before exec
        os.setpgrp()

    fd, rusage_file = tempfile.mkstemp(prefix="er-rusage-")
    os.close(fd)
    launcher = [sys.executable, "-c", LAUNCHER, rusage_file, str(limit_mb or 0), "-m", "er_framework.cli.main"]
    proc = subprocess.Popen(
        [*launcher, *map(str, args)],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=new_group,
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
        proc.wait()
    finally:
        timer.cancel()
    try:
        peak_kb = int(Path(rusage_file).read_text() or 0)
    except ValueError:
        peak_kb = 0
    finally:
        os.unlink(rusage_file)
    for t in readers:
        t.join()
    out, err = chunks.get("out", b""), chunks.get("err", b"")
    left = group_alive(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
    if timed_out:
        pytest.fail(f"er {' '.join(map(str, args))} did not finish in {timeout} s: {err.decode(errors='replace')[-2000:]}")
    return Ran(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), peak_kb / 1024, left)


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
