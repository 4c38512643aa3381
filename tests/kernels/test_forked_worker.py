"""er_framework.kernels.parallel.ForkedWorker: one worker forked at once, that dies with its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from er_framework.kernels.parallel import ForkedWorker, WorkerDied

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and /proc")


def pid_and_sigint() -> tuple[int, object]:
    return os.getpid(), signal.getsignal(signal.SIGINT)


def boom(x: int) -> int:
    raise ValueError(f"bad {x}")


def die() -> None:
    os._exit(3)


def sleep_long(seconds: float) -> None:
    time.sleep(seconds)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_the_worker_exists_before_any_task_and_ignores_ctrl_c() -> None:
    with ForkedWorker() as worker:
        assert len(worker.pool._processes) == 1  # forked by the constructor
        pid, handler = ForkedWorker.result(worker.submit(pid_and_sigint))
    assert pid != os.getpid() and handler == signal.SIG_IGN
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:  # ended by the block's end (after its tasks)
        time.sleep(0.02)
    assert not alive(pid)


def test_an_error_of_a_task_is_raised_here_and_the_worker_killed() -> None:
    with pytest.raises(ValueError, match="bad 7"):
        with ForkedWorker() as worker:
            pid = ForkedWorker.result(worker.submit(os.getpid))
            ForkedWorker.result(worker.submit(boom, 7))
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid)


def test_a_worker_that_dies_is_a_worker_died_error() -> None:
    with pytest.raises(WorkerDied, match="ended abruptly"):
        with ForkedWorker() as worker:
            ForkedWorker.result(worker.submit(die))


def test_an_interrupt_while_waiting_kills_the_worker() -> None:
    timer = threading.Timer(1.0, signal.pthread_kill, args=(threading.main_thread().ident, signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            with ForkedWorker() as worker:
                ForkedWorker.result(worker.submit(sleep_long, 600))
    finally:
        timer.cancel()
    assert time.monotonic() - started < 300  # a hang catcher: awaiting the task takes 600 s


SCRIPT = """
import os, time
from pathlib import Path
from er_framework.kernels.parallel import ForkedWorker

def work(path):
    Path(path).write_text(str(os.getpid()))
    time.sleep(600)

worker = ForkedWorker()
ForkedWorker.result(worker.submit(work, {a!r}))
"""


@linux_only
def test_the_worker_dies_when_its_parent_is_killed(tmp_path: Path) -> None:
    a = tmp_path / "a"
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SCRIPT.format(a=str(a)))], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (a.exists() and a.read_text()):
            assert time.monotonic() < deadline and proc.poll() is None, "the worker did not start"
            time.sleep(0.02)
        pid = int(a.read_text())
        assert alive(pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
