"""What the contract checks of :mod:`er_framework.testing` share: sample data and the helpers of the checks.

:func:`sample_records` and :func:`sample_graph` are public test data (also
exported by :mod:`er_framework.testing`); the other names are the checks'
building blocks: the component of a class, batches with inactive rows or
no rows, the candidates contract rule by rule, failure messages.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from er_framework.components import Component
from er_framework.data import Batch, Pairs, Records, TokenSets

__all__ = [
    "SHOWN",
    "as_tuples",
    "call_without_active",
    "check_cross_source",
    "check_pairs_contract",
    "check_token_sets",
    "empty_batch",
    "inactive_batch",
    "instance_of",
    "same_pairs",
    "sample_graph",
    "sample_records",
    "shown",
    "without_active",
]

Int64Array = npt.NDArray[np.int64]
_C = TypeVar("_C", bound=Component)

_TEXTS = [
    "The dog which chased the cat",
    "The dog that chased the cat",
    "el perro persigue al gato, pero no lo alcanza",
    "el gato persigue al perro, pero no lo alcanza",
    "",
    "a",
    "Ünïcödé ﬁ ligatures and emoji 🐍🐍 repeated 🐍",
    "   spaces   and\ttabs\nand newlines   ",
    "The dog which chased the cat",
]

#: pairs shown in a failure message
SHOWN = 5


def sample_records(field: str = "text", n_sources: int = 1) -> Records:
    """Varied small records (empty, one character, Unicode, duplicates)."""
    n = len(_TEXTS)
    return Records(
        ids=[f"r{i}" for i in range(n)],
        source=np.arange(n, dtype=np.int32) % n_sources,
        source_names=[f"s{i}" for i in range(n_sources)],
        fields={field: list(_TEXTS)},
    )


def sample_graph() -> tuple[int, Pairs]:
    """``(n, scored pairs)`` for :func:`check_clusterer`: 15 records.

    Two dense groups (0-3 and 5-8) joined by one weak bridge (3, 5), a chain
    9-10-11, a lone pair (12, 14), and records 4 and 13 without pairs.
    """
    edges = [
        (0, 1, 0.97),
        (0, 2, 0.95),
        (0, 3, 0.93),
        (1, 2, 0.96),
        (1, 3, 0.92),
        (2, 3, 0.94),
        (5, 6, 0.91),
        (5, 7, 0.9),
        (5, 8, 0.93),
        (6, 7, 0.95),
        (6, 8, 0.9),
        (7, 8, 0.96),
        (3, 5, 0.55),
        (9, 10, 0.8),
        (10, 11, 0.75),
        (12, 14, 0.88),
    ]
    left, right, score = (np.array(col) for col in zip(*edges))
    return 15, Pairs(left, right, score.astype(np.float64)).normalized()


# ---------------------------------------------------------------- helpers


def instance_of(component: Any, family: type[_C]) -> _C:
    """The component itself, or an instance of a component class with its default parameters."""
    if isinstance(component, type):
        assert issubclass(component, family), f"{component.__qualname__} is not a {family.__name__}"
        return component()
    assert isinstance(component, family), f"{component!r} is not a {family.__name__}"
    return component


def shown(pairs: list[tuple[int, int]]) -> str:
    more = f" (and {len(pairs) - SHOWN} more)" if len(pairs) > SHOWN else ""
    return ", ".join(f"({a}, {b})" for a, b in pairs[:SHOWN]) + more


def as_tuples(p: Pairs, mask: npt.NDArray[np.bool_] | None = None) -> list[tuple[int, int]]:
    left, right = (p.left, p.right) if mask is None else (p.left[mask], p.right[mask])
    return list(zip(left.tolist(), right.tolist()))


def same_pairs(a: Pairs, b: Pairs) -> bool:
    return np.array_equal(a.left, b.left) and np.array_equal(a.right, b.right)


def inactive_batch(batch: Batch) -> tuple[Int64Array, Batch]:
    """``(kept rows, batch)``: the batch without every third row (0, 3, 6 …), as the engine builds it.

    The new batch's row ``i`` is the old row ``kept[i]``; its ``active`` holds
    the job's record index of each row (with gaps, and larger than the batch).
    """
    n = len(batch)
    kept = np.flatnonzero(np.arange(n) % 3 != 0).astype(np.int64)
    sub = batch.subset(kept)
    base = batch.active if batch.active is not None else np.arange(n, dtype=np.int64)
    sub.active = np.asarray(base, dtype=np.int64)[kept]
    return kept, sub


def without_active(batch: Batch) -> Batch:
    return dataclasses.replace(batch, active=None)


def empty_batch(batch: Batch) -> Batch:
    """No records (``active`` empty too, as the engine builds an empty job's batch)."""
    empty = batch.subset(np.zeros(0, dtype=np.int64))
    empty.active = np.zeros(0, dtype=np.int64)
    return empty


def call_without_active(who: str, fn: Any, batch: Batch, *args: Any) -> Any:
    try:
        return fn(without_active(batch), *args)
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(
            f"{who} fails on a batch without `active` ({type(exc).__name__}: {exc}); the persistent index and "
            "the Dask executor build such batches: a component works on the batch's rows and must not need `active`"
        ) from exc


def check_token_sets(ts: TokenSets, n: int, who: str) -> None:
    assert isinstance(ts, TokenSets), f"{who} must return TokenSets, got {type(ts).__name__}"
    assert len(ts) == n, f"{who} returned {len(ts)} rows for {n} records"
    assert ts.indptr.dtype == np.int64, f"{who}: indptr must be int64, got {ts.indptr.dtype}"
    assert ts.tokens.dtype in (np.uint64, np.uint32), f"{who}: tokens must be uint64/uint32, got {ts.tokens.dtype}"
    assert np.all(np.diff(ts.indptr) >= 0), f"{who}: indptr must be non-decreasing"
    for i in range(n):
        row = ts.row(i)
        assert np.all(row[1:] > row[:-1]), f"{who}: row {i} is not sorted and unique: {row[:8].tolist()} …"


def check_pairs_contract(p: Pairs, n: int, who: str) -> None:
    """The candidates contract, rule by rule (what :meth:`Engine.checked_candidates` enforces)."""
    assert isinstance(p, Pairs), f"{who} must return Pairs, got {type(p).__name__}"
    assert p.left.dtype == np.int64 and p.right.dtype == np.int64, f"{who}: pairs must be int64"
    if len(p) == 0:
        return
    lo = int(min(p.left.min(), p.right.min()))
    hi = int(max(p.left.max(), p.right.max()))
    outside = (p.left < 0) | (p.left >= n) | (p.right < 0) | (p.right >= n)
    assert lo >= 0 and hi < n, (
        f"{who}: pair indices must be rows of the batch, 0..{n - 1} ({n} records), got indices from {lo} to {hi}: "
        f"{shown(as_tuples(p, outside))}; return indices into the batch, not into batch.active"
    )
    reversed_ = p.left >= p.right
    assert not reversed_.any(), (
        f"{who}: {int(reversed_.sum())} pairs with left >= right: {shown(as_tuples(p, reversed_))}; return Pairs(left, right).normalized()"
    )
    d_left, d_right = np.diff(p.left), np.diff(p.right)
    dup = np.flatnonzero((d_left == 0) & (d_right == 0))
    assert len(dup) == 0, (
        f"{who}: {len(dup)} duplicate pairs: {shown(as_tuples(p)[int(dup[0]) : int(dup[0]) + 1])} "
        "twice in a row; return Pairs(left, right).normalized()"
    )
    down = np.flatnonzero((d_left < 0) | ((d_left == 0) & (d_right < 0)))
    if len(down):
        i = int(down[0])
        duplicated = len(set(as_tuples(p))) != len(p)
        raise AssertionError(
            f"{who}: pairs not sorted by (left, right): ({p.left[i]}, {p.right[i]}) comes before "
            f"({p.left[i + 1]}, {p.right[i + 1]})"
            + (" (and some pairs repeat)" if duplicated else "")
            + "; return Pairs(left, right).normalized()"
        )


def check_cross_source(p: Pairs, batch: Batch, who: str) -> None:
    if not batch.cross_source_only or len(p) == 0:
        return
    src = batch.records.source
    same = src[p.left] == src[p.right]
    assert not same.any(), (
        f"{who}: {int(same.sum())} pairs of records from the same source in link mode (cross_source_only): "
        f"{shown(as_tuples(p, same))}; drop them, e.g. return batch.allowed(pairs)"
    )
