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
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets

__all__ = ["available_cores", "map_ordered", "map_row_blocks", "resolve_workers", "row_blocks", "split_sizes"]

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
