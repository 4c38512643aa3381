"""Both cores: row blocks of a batch processed on a thread pool.

numpy releases the GIL inside its array loops, so kernels that spend their
time in large array operations (hashing, ``%``, sorting, reductions) run in
parallel on threads without copying data between processes. Work is split
into *blocks of whole rows* (a record is never split), every block is
computed independently by the same serial kernel, and the results are
concatenated in block order — so the output is identical for any number of
workers and any block size (tests check both).

``workers`` in a job (``workers: 2`` or ``auto``) reaches components through
:attr:`er_framework.components.Context.workers`.

Python work that holds the GIL (normalizers) runs on forked processes
instead (:func:`map_processes`); those workers die with the process that
started them, whatever ends it (SIGKILL, SIGTERM, the OOM killer, Ctrl-C).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets

__all__ = [
    "FORK_SAFE",
    "POLL_SECONDS",
    "ForkedWorker",
    "WorkerDied",
    "available_cores",
    "die_with_parent",
    "map_ordered",
    "map_processes",
    "map_row_blocks",
    "resolve_workers",
    "row_blocks",
    "split_sizes",
]

T = TypeVar("T")
R = TypeVar("R")

#: tokens per block: large enough that numpy's per-call overhead is noise,
#: small enough that a block's temporaries stay in the tens of MB
BLOCK_TOKENS = 1 << 20


def available_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def resolve_workers(workers: int | str | None) -> int:
    """``"auto"``/``None`` -> the available cores; an int >= 1 as given."""
    if workers is None or workers == "auto":
        return available_cores()
    n = int(workers)
    if n < 1:
        raise ValueError(f"workers must be >= 1 or 'auto', got {workers!r}")
    return n


def map_ordered(fn: Callable[[T], R], items: Iterable[T], workers: int) -> list[R]:
    """``[fn(x) for x in items]``, on ``workers`` threads, results in input order.

    An exception in any call is raised here (the first in input order).
    """
    todo = list(items)
    if workers <= 1 or len(todo) <= 1:
        return [fn(x) for x in todo]
    with ThreadPoolExecutor(max_workers=min(workers, len(todo)), thread_name_prefix="er-worker") as pool:
        return list(pool.map(fn, todo))


#: Linux ``prctl`` option: the signal a process gets when its parent dies
PR_SET_PDEATHSIG = 1
#: whether workers ask the kernel for that signal (Linux); elsewhere the watchdog thread alone
USE_PDEATHSIG = sys.platform.startswith("linux")
#: seconds between two checks of the parent by a worker's watchdog thread (the portable fallback)
WATCHDOG_SECONDS = 0.25
#: whether this system forks worker processes safely: not Windows (no fork) and not macOS (a forked child of
#: a process that has loaded system frameworks may crash); elsewhere :func:`map_processes` runs its tasks here
#: and no :class:`ForkedWorker` is started (:func:`er_framework.engine.shared.start_worker`)
FORK_SAFE = hasattr(os, "fork") and sys.platform != "darwin"
#: signals blocked while workers are forked, so that none reaches a worker before it set its handlers
_FORK_MASK = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} if hasattr(signal, "SIGHUP") else {signal.SIGINT, signal.SIGTERM}


class WorkerDied(RuntimeError):
    """A worker process of :func:`map_processes` ended abruptly (killed by a signal, e.g. the OOM killer)."""


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCHDOG_SECONDS)
        if os.getppid() != parent:  # the parent died: this process was re-parented
            os._exit(1)


def die_with_parent(parent: int) -> None:
    """Make this (forked worker) process end when the process ``parent`` ends, on any signal.

    * SIGINT is ignored: Ctrl-C reaches the whole process group of a terminal,
      and only the parent acts on it (it stops the workers and says
      "interrupted"), so no worker prints a KeyboardInterrupt traceback;
      SIGTERM and SIGHUP get their default action (end the process), not a
      handler inherited from the parent.
    * Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills this
      process when its parent dies, even by SIGKILL or the OOM killer. The
      parent may already be gone by then, so ``getppid()`` is checked after.
    * Everywhere (macOS has no PDEATHSIG): a daemon thread checks
      ``getppid()`` every :data:`WATCHDOG_SECONDS` and ends the process
      (``os._exit``) when it changed.

    Called as the initializer of the workers of :func:`map_processes`, which
    forks them with :data:`_FORK_MASK` blocked; unblocked here once the
    handlers are set.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in _FORK_MASK - {signal.SIGINT}:
        signal.signal(sig, signal.SIG_DFL)
    if USE_PDEATHSIG:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(
                ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
            )
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the watchdog alone
            pass
    if os.getppid() != parent:  # died before PDEATHSIG was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="er-parent-watchdog", daemon=True).start()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORK_MASK)


#: longest single wait of :func:`map_processes` for its workers (a signal is handled between two waits)
POLL_SECONDS = 0.25


def map_processes(fn: Callable[..., R], args: Iterable[tuple[Any, ...]], workers: int) -> list[R]:
    """``[fn(*a) for a in args]`` on up to ``workers`` forked processes, results in input order.

    For Python work that holds the GIL. ``fn`` and the arguments are pickled
    to the workers and the results back. With ``workers <= 1`` or a single
    task everything runs in this process. The workers die with this process
    (:func:`die_with_parent`: SIGKILL, the OOM killer, SIGTERM …; Ctrl-C is
    the parent's alone), and when this call ends by an exception
    (KeyboardInterrupt, a SIGTERM turned into an exception, an error of
    ``fn``) the workers still running are killed before it propagates, so
    nothing is left behind and nothing waits for them. Call it from the
    thread that lives as long as the call (PDEATHSIG follows the forking
    thread); the workers are forked here, by the first submit.
    """
    todo = list(args)
    if workers <= 1 or len(todo) <= 1 or not FORK_SAFE:
        return [fn(*a) for a in todo]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),))
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _FORK_MASK)
        try:  # fork-context pools start every worker at the first submit, in this thread
            futures = [pool.submit(fn, *a) for a in todo]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        try:
            # waits of at most POLL_SECONDS: Ctrl-C is handled between them even when a native library
            # in this process (polars' thread pool, seen) has left the signal restarting a long wait
            pending = set(futures)
            while pending:
                pending = wait(pending, timeout=POLL_SECONDS)[1]
            results = [f.result() for f in futures]
        except BrokenProcessPool as exc:
            raise WorkerDied(
                f"a worker process ended abruptly ({exc}); when memory runs out the OOM killer ends the largest "
                "process: use fewer workers (workers: 1 runs this step in the main process) or more memory"
            ) from exc
    except BaseException:
        # the pool's own shutdown would wait for the running tasks: kill them first; then the pool's
        # thread sees them gone and ends, and the shutdown waits for it (were it still running at
        # interpreter exit, concurrent.futures' exit hook could write to its closed wakeup pipe)
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.kill()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results


class ForkedWorker:
    """One worker process forked *now*, to be handed tasks later (:meth:`submit`): for Python work that holds
    the GIL, started before the process holds its data.

    A process forked late shares every page of its parent, and the process
    tree's resident memory counts those pages twice; forked at the start of a
    run it shares only the interpreter and its modules, and holds what its
    tasks give it (their arguments, pickled to it, and their work). It dies
    with this process as the workers of :func:`map_processes` do
    (:func:`die_with_parent`), and :meth:`close` ends it (``kill=True``: at
    once, the way out of an exception). Use it as a context manager (killed
    when the block ends by an exception, else ended after its tasks).
    """

    def __init__(self) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("fork")
        self.pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),))
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _FORK_MASK)
        try:  # a fork-context pool starts its worker at the first submit, in this thread
            self.pool.submit(os.getpid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def submit(self, fn: Callable[..., R], *args: Any) -> Any:
        """``fn(*args)`` in the worker: a :class:`concurrent.futures.Future` (see :meth:`result`)."""
        return self.pool.submit(fn, *args)

    @staticmethod
    def result(future: Any) -> Any:
        """The result of a task (its exception raised here), waited for in steps of :data:`POLL_SECONDS` (a
        signal is handled between two); :class:`WorkerDied` when the worker ended abruptly."""
        from concurrent.futures import wait
        from concurrent.futures.process import BrokenProcessPool

        try:
            while not wait([future], timeout=POLL_SECONDS)[0]:
                pass
            return future.result()
        except BrokenProcessPool as exc:
            raise WorkerDied(
                f"a worker process ended abruptly ({exc}); when memory runs out the OOM killer ends the largest "
                "process: use fewer workers (workers: 1 runs this step in the main process) or more memory"
            ) from exc

    def close(self, kill: bool = False) -> None:
        """End the worker: after its tasks, or at once (``kill``); the pool's threads are joined either way."""
        if kill:
            for proc in list((getattr(self.pool, "_processes", None) or {}).values()):
                proc.kill()
            self.pool.shutdown(wait=True, cancel_futures=True)
        else:
            self.pool.shutdown(wait=True)

    def __enter__(self) -> ForkedWorker:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close(kill=exc_type is not None)


def split_sizes(sizes: npt.ArrayLike, target: int) -> list[tuple[int, int]]:
    """Cut items ``0 .. n-1`` into consecutive ranges ``[a, b)`` of about ``target`` summed size.

    An item larger than ``target`` forms its own range; ranges are never
    empty; ``n == 0`` gives no range.
    """
    if target < 1:
        raise ValueError(f"target must be >= 1, got {target}")
    sz = np.asarray(sizes, dtype=np.int64)
    n = len(sz)
    if n == 0:
        return []
    ends = np.cumsum(sz)
    total = int(ends[-1])
    cuts = np.searchsorted(ends, np.arange(target, total, target, dtype=np.int64), side="left") + 1
    bounds = np.unique(np.concatenate(([0], np.minimum(cuts, n), [n])))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def row_blocks(token_sets: TokenSets, block_tokens: int = BLOCK_TOKENS) -> list[tuple[int, int]]:
    """Row ranges of about ``block_tokens`` tokens each (an empty row counts as one token)."""
    return split_sizes(np.maximum(token_sets.sizes, 1), block_tokens)


def map_row_blocks(
    fn: Callable[[TokenSets], np.ndarray],
    token_sets: TokenSets,
    workers: int = 1,
    block_tokens: int = BLOCK_TOKENS,
) -> np.ndarray:
    """``fn`` applied to blocks of whole rows of ``token_sets``, results stacked along axis 0.

    ``fn`` must map a ``TokenSets`` of ``m`` rows to an array with ``m`` rows
    that depends on each row alone (a signature, a per-row statistic); then
    the result equals ``fn(token_sets)`` for any ``workers`` and
    ``block_tokens``. Blocks are views (no copy of the tokens).
    """
    blocks: Sequence[tuple[int, int]] = row_blocks(token_sets, block_tokens)
    if len(blocks) <= 1:
        return fn(token_sets)
    parts = map_ordered(lambda ab: fn(token_sets.slice(*ab)), blocks, workers)
    return np.concatenate(parts, axis=0)
