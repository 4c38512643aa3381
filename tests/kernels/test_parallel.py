"""er_framework.kernels.parallel: map_processes (forked workers that die with their parent) and friends."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from er_framework.data import TokenSets
from er_framework.kernels import char_shingles, hash_params, jaccard_pairs, minhash_signatures
from er_framework.kernels.oph import oph_signatures
from er_framework.kernels.parallel import (
    ForkedWorker,
    WorkerDied,
    map_ordered,
    map_processes,
    map_row_blocks,
    resolve_workers,
    row_blocks,
    split_sizes,
)
from er_plugins.documents import shingle_in_chunks

ROOT = Path(__file__).resolve().parents[2]

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and /proc")


def add(a: int, b: int) -> int:
    return a + b


def pid_and_sigint() -> tuple[int, object]:
    return os.getpid(), signal.getsignal(signal.SIGINT)


def boom(x: int) -> int:
    if x == 2:
        raise ValueError(f"bad {x}")
    return x


def sleep_long(seconds: float) -> None:
    time.sleep(seconds)


@pytest.fixture
def no_new_children() -> Iterator[None]:
    """After the test, no child process it started is alive (a session may hold others, e.g. Dask's)."""
    before = {p.pid for p in multiprocessing.active_children()}
    yield
    assert {p.pid for p in multiprocessing.active_children()} <= before


def test_map_ordered_in_input_order() -> None:
    assert map_ordered(lambda x: x * x, range(20), 4) == [x * x for x in range(20)]


@linux_only
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_map_processes_is_the_serial_map(workers: int) -> None:
    args = [(i, 10 * i) for i in range(7)]
    assert map_processes(add, args, workers) == [a + b for a, b in args]


def test_without_a_safe_fork_map_processes_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows (no fork) and macOS (unsafe fork): the tasks run in this process, same results."""
    import er_framework.kernels.parallel as parallel

    monkeypatch.setattr(parallel, "FORK_SAFE", False)
    got = map_processes(pid_and_sigint, [(), (), ()], 2)
    assert all(pid == os.getpid() for pid, _ in got)
    args = [(i, 10 * i) for i in range(7)]
    assert map_processes(add, args, 3) == [a + b for a, b in args]


@linux_only
def test_workers_are_other_processes_that_ignore_ctrl_c(no_new_children: None) -> None:
    got = map_processes(pid_and_sigint, [(), (), ()], 2)
    assert all(pid != os.getpid() for pid, _ in got)
    assert all(handler == signal.SIG_IGN for _, handler in got)


@linux_only
def test_an_error_of_fn_is_raised_and_no_worker_is_left(no_new_children: None) -> None:
    with pytest.raises(ValueError, match="bad 2"):
        map_processes(boom, [(i,) for i in range(4)], 2)


@linux_only
def test_an_interrupt_is_handled_after_polars_ran(no_new_children: None) -> None:
    """polars' native thread pool leaves SIGINT restarting a long lock wait (seen with polars 1.x-2.x): an
    unbounded wait would hear Ctrl-C only when the workers end. map_processes waits in short steps."""
    pl = pytest.importorskip("polars")
    pl.DataFrame({"a": ["x", "y"]}).to_arrow()
    pl.read_csv(ROOT / "configs" / "data" / "febrl" / "febrl4_a.csv", infer_schema=False).to_arrow()
    timer = threading.Timer(1.0, signal.pthread_kill, args=(threading.main_thread().ident, signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            map_processes(sleep_long, [(30,), (30,)], 2)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20  # not after the tasks' 30 s


@linux_only
def sleep_in_a_forked_worker(seconds: float) -> None:
    with ForkedWorker() as worker:
        ForkedWorker.result(worker.submit(sleep_long, seconds))


@linux_only
@pytest.mark.parametrize("how", ["map_processes", "forked_worker"])
def test_an_interrupt_kills_the_running_workers(no_new_children: None, how: str) -> None:
    """Ctrl-C while the workers run: KeyboardInterrupt here and the workers killed, not awaited
    (a real SIGINT to the main thread, which waits for the results)."""
    timer = threading.Timer(1.0, signal.pthread_kill, args=(threading.main_thread().ident, signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            if how == "map_processes":
                map_processes(sleep_long, [(600,), (600,)], 2)
            else:
                sleep_in_a_forked_worker(600)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 300  # a hang catcher: awaiting the tasks takes 600 s


SCRIPT = """
import os, sys, time
from pathlib import Path
import er_framework.kernels.parallel as parallel
from er_framework.kernels.parallel import ForkedWorker, map_processes
parallel.USE_PDEATHSIG = {pdeathsig}

def work(path):
    Path(path).write_text(str(os.getpid()))
    time.sleep(600)

if {forked}:
    worker = ForkedWorker()
    other = ForkedWorker()
    worker.submit(work, {a!r})
    ForkedWorker.result(other.submit(work, {b!r}))
else:
    map_processes(work, [({a!r},), ({b!r},)], 2)
"""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@linux_only
@pytest.mark.parametrize("how", ["pdeathsig", "watchdog", "forked_worker"])
def test_workers_die_when_their_parent_is_killed(tmp_path: Path, how: str) -> None:
    """SIGKILL of the parent (nothing of it runs): the kernel's PDEATHSIG, or else the watchdog thread
    (as on macOS: no prctl is made), ends the workers (of map_processes, or two ForkedWorkers)."""
    a, b = tmp_path / "a", tmp_path / "b"
    code = textwrap.dedent(SCRIPT.format(pdeathsig=how != "watchdog", a=str(a), b=str(b), forked=how == "forked_worker"))
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (a.exists() and b.exists() and a.read_text() and b.read_text()):
            assert time.monotonic() < deadline and proc.poll() is None, "the workers did not start"
            time.sleep(0.02)
        workers = [int(a.read_text()), int(b.read_text())]
        assert all(alive(p) for p in workers)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while any(alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(p) for p in workers)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@linux_only
def test_a_forked_worker_exists_before_any_task_and_ignores_ctrl_c(no_new_children: None) -> None:
    with ForkedWorker() as worker:
        assert len(worker.pool._processes) == 1  # forked by the constructor
        pid, handler = ForkedWorker.result(worker.submit(pid_and_sigint))
    assert pid != os.getpid() and handler == signal.SIG_IGN


@linux_only
def test_an_error_of_a_forked_workers_task_is_raised_and_the_worker_killed(no_new_children: None) -> None:
    with pytest.raises(ValueError, match="bad 2"), ForkedWorker() as worker:
        ForkedWorker.result(worker.submit(boom, 2))


def die() -> None:
    os._exit(3)


@linux_only
def test_a_forked_worker_that_dies_is_a_worker_died_error(no_new_children: None) -> None:
    with pytest.raises(WorkerDied, match="ended abruptly"), ForkedWorker() as worker:
        ForkedWorker.result(worker.submit(die))


def test_split_sizes_and_row_blocks() -> None:
    assert split_sizes([], 5) == []
    assert split_sizes([1, 1, 1, 1, 1], 2) == [(0, 2), (2, 4), (4, 5)]
    assert split_sizes([10, 1, 1], 3) == [(0, 1), (1, 3)]  # an oversized item forms its own range
    rng = np.random.default_rng(0)
    for _ in range(50):
        sizes = rng.integers(0, 20, rng.integers(1, 40))
        target = int(rng.integers(1, 60))
        ranges = split_sizes(sizes, target)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(sizes)
        assert all(a < b for a, b in ranges) and all(r[1] == s[0] for r, s in zip(ranges, ranges[1:]))
    ts = TokenSets.from_sets([[1, 2], [], [3], [4, 5, 6]])
    assert row_blocks(ts, 2) == [(0, 1), (1, 3), (3, 4)]  # an empty row counts as one token
    assert ts.slice(1, 3).equals(TokenSets.from_sets([[], [3]]))
    with pytest.raises(ValueError):
        split_sizes([1], 0)
    with pytest.raises(ValueError):
        resolve_workers(0)
    assert resolve_workers("auto") >= 1 and resolve_workers(3) == 3


def test_map_ordered_keeps_order_and_raises() -> None:
    assert map_ordered(lambda x: x * x, range(20), 4) == [x * x for x in range(20)]

    def boom(x: int) -> int:
        if x == 7:
            raise RuntimeError("seven")
        return x

    with pytest.raises(RuntimeError, match="seven"):
        map_ordered(boom, range(10), 2)


def test_kernels_identical_for_any_block_size_and_workers() -> None:
    rng = np.random.default_rng(1)
    texts = ["".join(rng.choice(list("abcdé xyz"), size=int(n))) for n in rng.integers(0, 300, 400)]
    ref = char_shingles(texts, 5)
    for w in (1, 2, 3):
        for mc in (1, 50, 1000, 10**6):
            assert shingle_in_chunks(texts, lambda t: char_shingles(t, 5), max_chars=mc, workers=w).equals(ref)
    a, b = hash_params(32, 4)
    sig = minhash_signatures(ref, a, b)
    osig = oph_signatures(ref, 32, 4)
    left = rng.integers(0, len(texts), 3000)
    right = rng.integers(0, len(texts), 3000)
    jac = jaccard_pairs(ref, left, right)
    for w in (1, 2):
        for bt in (1, 7, 500, 10**6):
            assert np.array_equal(map_row_blocks(lambda t: minhash_signatures(t, a, b), ref, w, bt), sig)
            assert np.array_equal(map_row_blocks(lambda t: oph_signatures(t, 32, 4), ref, w, bt), osig)
            assert np.array_equal(jaccard_pairs(ref, left, right, max_tokens_per_batch=bt, workers=w), jac)
