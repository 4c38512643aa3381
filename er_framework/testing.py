"""Contract checks a plugin author runs on a new component.

    from er_framework.testing import check_blocker, check_shingler, sample_records

    def test_my_shingler():
        check_shingler(MyShingler(), sample_records())

    def test_my_blocker():
        check_blocker(MyBlocker(MyBlocker.Params(field="name")), Batch(records=my_records))

One check per family (:func:`check_shingler`, :func:`check_signature_builder`,
:func:`check_blocker`, :func:`check_lookup_keys`, :func:`check_window_keys`,
:func:`check_verifier`, :func:`check_pair_codes`, :func:`check_clusterer`,
:func:`check_normalizer`); each takes a component instance (or a class, built
with its default parameters). They assert what the engine relies on — the
contract of :mod:`er_framework.components` — and raise ``AssertionError``
with a message naming the rule that broke and an example:

* shapes and dtypes, and determinism (same input -> identical output);
* the empty batch (no records, no pairs);
* a batch with inactive records (:attr:`Batch.active`): rows left out of the
  batch as the engine leaves out collapsed exact duplicates, so that the
  batch's row ``i`` is the job's record ``active[i]``. A component answers in
  batch rows; its answer must not change with ``active`` (the persistent
  index and the Dask executor build batches without it);
* batch-split invariance where the contract promises it (a streamable
  shingler's and every signature builder's rows depend on their own record
  alone; a ``pairwise`` verifier's score on the pair alone; a blocker's
  ``lookup_keys`` on the record alone);
* for blockers, the candidates contract the engine enforces (indices into the
  batch, ``left < right``, unique, sorted; in link mode only pairs across
  sources), in both modes, and, for a blocker with ``lookup_keys``, that the
  records sharing a key are exactly its candidates;
* for normalizers, what :mod:`er_framework.normalize` relies on: one ``str``
  or ``None`` per value, a key that depends on its value alone (not on the
  rest of the batch, its order or the instance), and the same answer from
  ``normalize`` and ``per_value``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from functools import partial
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import CodeFitted, Explainable, Fitted, Learner
from er_framework.components import (
    Blocker,
    Clusterer,
    Component,
    Normalizer,
    Shingler,
    SignatureBuilder,
    Verifier,
)
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets
from er_framework.kernels.graph import canonical_labels
from er_framework.normalize import is_missing, normalize_column

__all__ = [
    "check_learner",
    "check_comparisons",
    "check_blocker",
    "check_clusterer",
    "check_lookup_keys",
    "check_normalizer",
    "check_pair_codes",
    "check_shingler",
    "check_signature_builder",
    "check_verifier",
    "check_window_keys",
    "pairs_in_windows",
    "pairs_sharing_keys",
    "sample_graph",
    "sample_records",
    "sample_values",
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
_SHOWN = 5
#: records looked up one at a time by :func:`check_lookup_keys`
_SINGLE_LOOKUPS = 4


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
        (0, 1, 0.97), (0, 2, 0.95), (0, 3, 0.93), (1, 2, 0.96), (1, 3, 0.92), (2, 3, 0.94),
        (5, 6, 0.91), (5, 7, 0.9), (5, 8, 0.93), (6, 7, 0.95), (6, 8, 0.9), (7, 8, 0.96),
        (3, 5, 0.55),
        (9, 10, 0.8), (10, 11, 0.75),
        (12, 14, 0.88),
    ]
    left, right, score = (np.array(col) for col in zip(*edges))
    return 15, Pairs(left, right, score.astype(np.float64)).normalized()


# ---------------------------------------------------------------- helpers


def _instance(component: Any, family: type[_C]) -> _C:
    """The component itself, or an instance of a component class with its default parameters."""
    if isinstance(component, type):
        assert issubclass(component, family), f"{component.__qualname__} is not a {family.__name__}"
        return component()
    assert isinstance(component, family), f"{component!r} is not a {family.__name__}"
    return component


def _shown(pairs: list[tuple[int, int]]) -> str:
    more = f" (and {len(pairs) - _SHOWN} more)" if len(pairs) > _SHOWN else ""
    return ", ".join(f"({a}, {b})" for a, b in pairs[:_SHOWN]) + more


def _as_tuples(p: Pairs, mask: npt.NDArray[np.bool_] | None = None) -> list[tuple[int, int]]:
    left, right = (p.left, p.right) if mask is None else (p.left[mask], p.right[mask])
    return list(zip(left.tolist(), right.tolist()))


def _same(a: Pairs, b: Pairs) -> bool:
    return np.array_equal(a.left, b.left) and np.array_equal(a.right, b.right)


def _inactive(batch: Batch) -> tuple[Int64Array, Batch]:
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


def _without_active(batch: Batch) -> Batch:
    return dataclasses.replace(batch, active=None)


def _empty(batch: Batch) -> Batch:
    """No records (``active`` empty too, as the engine builds an empty job's batch)."""
    empty = batch.subset(np.zeros(0, dtype=np.int64))
    empty.active = np.zeros(0, dtype=np.int64)
    return empty


def _call_without_active(who: str, fn: Any, batch: Batch, *args: Any) -> Any:
    try:
        return fn(_without_active(batch), *args)
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(
            f"{who} fails on a batch without `active` ({type(exc).__name__}: {exc}); the persistent index and "
            "the Dask executor build such batches: a component works on the batch's rows and must not need `active`"
        ) from exc


# ---------------------------------------------------------------- shinglers


def _check_tokens(ts: TokenSets, n: int, who: str) -> None:
    assert isinstance(ts, TokenSets), f"{who} must return TokenSets, got {type(ts).__name__}"
    assert len(ts) == n, f"{who} returned {len(ts)} rows for {n} records"
    assert ts.indptr.dtype == np.int64, f"{who}: indptr must be int64, got {ts.indptr.dtype}"
    assert ts.tokens.dtype in (np.uint64, np.uint32), f"{who}: tokens must be uint64/uint32, got {ts.tokens.dtype}"
    assert np.all(np.diff(ts.indptr) >= 0), f"{who}: indptr must be non-decreasing"
    for i in range(n):
        row = ts.row(i)
        assert np.all(row[1:] > row[:-1]), f"{who}: row {i} is not sorted and unique: {row[:8].tolist()} …"


def check_shingler(shingler: Shingler | type[Shingler], records: Records | None = None) -> TokenSets:
    """Shapes/dtypes, sorted unique rows, empty batch, determinism, multisets; split and subset
    invariance for a ``streamable`` shingler (a record's tokens depend on that record alone)."""
    shingler = _instance(shingler, Shingler)
    records = records if records is not None else sample_records()
    who = f"shingler {shingler.name!r}"
    n = len(records)
    ts = shingler.shingle(records)
    _check_tokens(ts, n, who)
    empty = shingler.shingle(records.take(np.zeros(0, dtype=np.int64)))
    _check_tokens(empty, 0, who + " (empty batch)")
    assert shingler.shingle(records).equals(ts), f"{who} is not deterministic: two calls on one batch differ"
    kept = np.flatnonzero(np.arange(n) % 3 != 0)
    sub = shingler.shingle(records.take(kept))
    _check_tokens(sub, len(kept), who + " (records 0, 3, 6 … left out)")
    if shingler.streamable or shingler.partitionable:
        half = n // 2
        parts = TokenSets.concat(
            [shingler.shingle(records.take(np.arange(half))), shingler.shingle(records.take(np.arange(half, n)))]
        )
        assert parts.equals(ts), (
            f"{who}: shingling two halves differs from shingling the whole batch; a streamable shingler's "
            "tokens must depend on the record alone (or set streamable = False)"
        )
        assert sub.equals(ts.take(kept)), (
            f"{who}: the token sets of records 1, 2, 4, 5 … shingled without records 0, 3, 6 … differ; a "
            "streamable shingler's tokens must depend on the record alone (or set streamable = False)"
        )
    if shingler.partitionable:  # the partitions' reports merge into the whole batch's report
        whole = shingler.shingle(records)
        report = shingler.describe()
        reports = []
        for part in (np.arange(n // 2), np.arange(n // 2, n)):
            shingler.shingle(records.take(part.astype(np.int64)))
            reports.append(shingler.partition_report())
        shingler.merge_reports(reports)
        assert whole.equals(ts) and shingler.describe() == report, (
            f"{who}: merge_reports of the two halves' partition_report differs from the whole batch's describe(); "
            "a partitionable shingler's report must be combinable from its partitions"
        )
    multi = shingler.shingle_multiset(records)
    assert isinstance(multi, TokenSets) and len(multi) == n, (
        f"{who}: shingle_multiset must return TokenSets with one row per record ({n})"
    )
    for i in range(n):
        got = np.unique(multi.row(i)).astype(np.uint64)
        assert np.array_equal(got, ts.row(i).astype(np.uint64)), (
            f"{who}: shingle_multiset row {i} holds other distinct tokens than shingle's set"
        )
    return ts


# ---------------------------------------------------------------- signature builders


def _as_multisets(tokens: TokenSets) -> TokenSets:
    """Each row reversed, then its first half again: the same sets as unsorted multisets."""
    rows = []
    for i in range(len(tokens)):
        r = tokens.row(i)
        rows.append(np.concatenate([r[::-1], r[: (len(r) + 1) // 2]]))
    sizes = np.array([len(r) for r in rows], dtype=np.int64)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    values = np.concatenate(rows) if rows else np.zeros(0, dtype=np.uint64)
    if tokens.tokens.dtype == np.uint32:
        return TokenSets(indptr, values.astype(np.uint32))
    return TokenSets(indptr, values.astype(np.uint64))


def _check_signatures(sig: Signatures, tokens: TokenSets, who: str) -> None:
    assert isinstance(sig, Signatures), f"{who} must return Signatures, got {type(sig).__name__}"
    assert sig.values.shape[0] == len(tokens), f"{who}: {sig.values.shape[0]} rows for {len(tokens)} sets"
    assert sig.values.dtype in (np.uint32, np.uint64), f"{who}: values must be uint32/uint64, got {sig.values.dtype}"
    assert sig.empty is not None and np.array_equal(sig.empty, tokens.sizes == 0), f"{who}: 'empty' must flag empty sets"


def check_signature_builder(builder: SignatureBuilder | type[SignatureBuilder], tokens: TokenSets) -> Signatures:
    """2-D signatures, one row per set, empty sets flagged, deterministic; a row depends on its set
    alone (two halves, rows left out); the empty batch; multisets when ``multiset_ok``."""
    builder = _instance(builder, SignatureBuilder)
    who = f"signature builder {builder.name!r}"
    sig = builder.build(tokens)
    _check_signatures(sig, tokens, who)
    again = builder.build(tokens)
    assert np.array_equal(again.values, sig.values), f"{who} is not deterministic: two calls on one batch differ"
    n = len(tokens)
    half = n // 2
    a = builder.build(tokens.take(np.arange(half)))
    b = builder.build(tokens.take(np.arange(half, n)))
    assert np.array_equal(np.concatenate([a.values, b.values]), sig.values), (
        f"{who}: not batch-split invariant (signing two halves differs from signing the whole batch); "
        "a record's signature must depend on its token set alone"
    )
    kept = np.flatnonzero(np.arange(n) % 3 != 0)
    sub = builder.build(tokens.take(kept))
    _check_signatures(sub, tokens.take(kept), who + " (sets 0, 3, 6 … left out)")
    assert np.array_equal(sub.values, sig.values[kept]), (
        f"{who}: the signatures of sets 1, 2, 4, 5 … signed without sets 0, 3, 6 … differ; "
        "a record's signature must depend on its token set alone"
    )
    e = builder.build(tokens.take(np.zeros(0, dtype=np.int64)))
    assert isinstance(e, Signatures) and e.values.shape[0] == 0, f"{who}: empty batch must give 0 rows"
    if builder.multiset_ok:
        multi = builder.build(_as_multisets(tokens))
        assert np.array_equal(multi.values, sig.values), (
            f"{who} declares multiset_ok but signs unsorted rows with repeats differently from the sets; "
            "set multiset_ok = False"
        )
    return sig


# ---------------------------------------------------------------- blockers


def _check_pairs(p: Pairs, n: int, who: str) -> None:
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
        f"{_shown(_as_tuples(p, outside))}; return indices into the batch, not into batch.active"
    )
    reversed_ = p.left >= p.right
    assert not reversed_.any(), (
        f"{who}: {int(reversed_.sum())} pairs with left >= right: {_shown(_as_tuples(p, reversed_))}; "
        "return Pairs(left, right).normalized()"
    )
    d_left, d_right = np.diff(p.left), np.diff(p.right)
    dup = np.flatnonzero((d_left == 0) & (d_right == 0))
    assert len(dup) == 0, (
        f"{who}: {len(dup)} duplicate pairs: {_shown(_as_tuples(p)[int(dup[0]) : int(dup[0]) + 1])} "
        "twice in a row; return Pairs(left, right).normalized()"
    )
    down = np.flatnonzero((d_left < 0) | ((d_left == 0) & (d_right < 0)))
    if len(down):
        i = int(down[0])
        duplicated = len(set(_as_tuples(p))) != len(p)
        raise AssertionError(
            f"{who}: pairs not sorted by (left, right): ({p.left[i]}, {p.right[i]}) comes before "
            f"({p.left[i + 1]}, {p.right[i + 1]})" + (" (and some pairs repeat)" if duplicated else "")
            + "; return Pairs(left, right).normalized()"
        )


def _check_link(p: Pairs, batch: Batch, who: str) -> None:
    if not batch.cross_source_only or len(p) == 0:
        return
    src = batch.records.source
    same = src[p.left] == src[p.right]
    assert not same.any(), (
        f"{who}: {int(same.sum())} pairs of records from the same source in link mode (cross_source_only): "
        f"{_shown(_as_tuples(p, same))}; drop them, e.g. return batch.allowed(pairs)"
    )


def _blocker_contract(blocker: Blocker, batch: Batch, who: str) -> Pairs:
    pairs = blocker.candidates(batch)
    _check_pairs(pairs, len(batch), who)
    _check_link(pairs, batch, who)
    assert _same(blocker.candidates(batch), pairs), f"{who} is not deterministic: two calls on one batch differ"
    empty = blocker.candidates(_empty(batch))
    _check_pairs(empty, 0, who + " (empty batch)")
    assert len(empty) == 0, f"{who}: the empty batch must give no pairs"
    if len(batch) >= 2:
        _, sub = _inactive(batch)
        where = f"{who} (batch of records 1, 2, 4, 5 …; active = {np.asarray(sub.active).tolist()[:6]} …)"
        got = blocker.candidates(sub)
        _check_pairs(got, len(sub), where)
        _check_link(got, sub, where)
        plain = _call_without_active(who, blocker.candidates, sub)
        assert _same(got, plain), (
            f"{where}: the candidates change with batch.active ({len(got)} pairs with it, {len(plain)} without); "
            "a blocker returns rows of the batch (0..len(batch)-1), never batch.active's record indices"
        )
    return pairs


def check_blocker(blocker: Blocker | type[Blocker], batch: Batch) -> Pairs:
    """The candidates contract the engine enforces, in both modes; empty batch; inactive records; lookup keys.

    ``batch`` is checked as given and with ``cross_source_only`` flipped (a
    job's mode picks either): int64 indices into the batch, ``left < right``,
    unique, sorted by ``(left, right)``, no same-source pair in link mode,
    deterministic, an empty batch gives no pairs, and a batch with inactive
    records (every third row left out, ``active`` set to the remaining rows'
    record indices) gives rows of that batch, the same with or without ``active``.
    A blocker with ``lookup_keys`` is also checked by :func:`check_lookup_keys`.
    Returns the candidates of ``batch`` (the last call is on ``batch``, so
    ``describe()`` reports it).
    """
    blocker = _instance(blocker, Blocker)
    who = f"blocker {blocker.name!r}"
    flipped = dataclasses.replace(batch, cross_source_only=not batch.cross_source_only)
    mode = " (link mode)" if flipped.cross_source_only else " (dedup mode)"
    _blocker_contract(blocker, flipped, who + mode)
    if type(blocker).lookup_keys is not Blocker.lookup_keys:
        check_lookup_keys(blocker, flipped)
        check_lookup_keys(blocker, batch)
    pairs = _blocker_contract(blocker, batch, who)
    final = blocker.candidates(batch)
    assert _same(final, pairs), f"{who} is not deterministic: calls on one batch differ"
    return final


def pairs_sharing_keys(
    rows: npt.ArrayLike, keys: npt.ArrayLike, cap: int | None = None, source: npt.ArrayLike | None = None
) -> Pairs:
    """The candidates that bucket keys imply, computed naively (the reference of :func:`check_lookup_keys`).

    Record ``rows[i]`` is in bucket ``keys[i]`` (a dict of key -> set of
    rows); every two records of a bucket form a pair, except in buckets of
    more than ``cap`` records (skipped, as :meth:`Blocker.lookup_cap` says)
    and, when ``source`` is given (link mode), pairs of one source.
    """
    buckets: dict[int, set[int]] = {}
    for r, k in zip(np.asarray(rows).tolist(), np.asarray(keys).tolist()):
        buckets.setdefault(int(k), set()).add(int(r))
    src = None if source is None else np.asarray(source).tolist()
    found: set[tuple[int, int]] = set()
    for members in buckets.values():
        if cap is not None and len(members) > cap:
            continue
        ordered = sorted(members)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                if src is None or src[a] != src[b]:
                    found.add((a, b))
    pairs = sorted(found)
    return Pairs(np.array([a for a, _ in pairs], dtype=np.int64), np.array([b for _, b in pairs], dtype=np.int64))


def _lookup(blocker: Blocker, batch: Batch, who: str) -> tuple[Int64Array, npt.NDArray[np.uint64]]:
    got = blocker.lookup_keys(batch)
    assert got is not None, (
        f"{who} has no lookup_keys (it returned None): it cannot serve er index or the Dask executor; "
        "implement lookup_keys(batch) -> (rows, keys) and lookup_cap()"
    )
    assert isinstance(got, tuple) and len(got) == 2, f"{who}: lookup_keys must return a tuple (rows, keys)"
    rows, keys = np.asarray(got[0]), np.asarray(got[1])
    n = len(batch)
    assert rows.ndim == 1 and keys.ndim == 1 and rows.shape == keys.shape, (
        f"{who}: lookup_keys must return two 1-D arrays of one length, got shapes {rows.shape} and {keys.shape}"
    )
    assert rows.dtype == np.int64, f"{who}: lookup_keys rows must be int64, got {rows.dtype}"
    assert keys.dtype == np.uint64, f"{who}: lookup_keys keys must be uint64 (64-bit bucket ids), got {keys.dtype}"
    if len(rows):
        assert rows.min() >= 0 and rows.max() < n, (
            f"{who}: lookup_keys rows must be rows of the batch, 0..{n - 1}, got {int(rows.min())}..{int(rows.max())}"
        )
    return rows, keys


def _key_set(rows: npt.ArrayLike, keys: npt.ArrayLike) -> set[tuple[int, int]]:
    return set(zip(np.asarray(rows).tolist(), np.asarray(keys).tolist()))


def _keys_match_candidates(blocker: Blocker, batch: Batch, who: str) -> tuple[Int64Array, npt.NDArray[np.uint64]]:
    rows, keys = _lookup(blocker, batch, who)
    src = batch.records.source if batch.cross_source_only else None
    want = set(_as_tuples(pairs_sharing_keys(rows, keys, blocker.lookup_cap(), src)))
    got = set(_as_tuples(blocker.candidates(batch)))
    missing = sorted(want - got)
    extra = sorted(got - want)
    cap = blocker.lookup_cap()
    if missing or extra:
        over = ""
        if extra and cap is not None:
            uncapped = set(_as_tuples(pairs_sharing_keys(rows, keys, None, src)))
            capped = [p for p in extra if p in uncapped]
            if capped:
                over = f" ({len(capped)} of them share only buckets over the cap: candidates must skip those too)"
        raise AssertionError(
            f"{who}: lookup_keys disagree with candidates (two records must be candidates exactly when they share a "
            f"key, buckets over lookup_cap() = {cap} skipped" + (", cross-source only" if src is not None else "") + "): "
            + (f"{len(missing)} pairs share a key but are no candidates: {_shown(missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"{len(extra)} candidates share no key: {_shown(extra)}{over}" if extra else "")
        )
    again = _lookup(blocker, batch, who)
    assert _key_set(*again) == _key_set(rows, keys), f"{who}: lookup_keys is not deterministic"
    return rows, keys


def check_lookup_keys(blocker: Blocker | type[Blocker], batch: Batch) -> tuple[Int64Array, npt.NDArray[np.uint64]]:
    """``lookup_keys`` agree with ``candidates`` and depend on each record alone.

    The pairs of records sharing a key (buckets with more than
    ``lookup_cap()`` records skipped; in link mode cross-source pairs only),
    computed naively by :func:`pairs_sharing_keys`, must equal
    ``blocker.candidates(batch)``: the persistent index and the Dask executor
    block through these keys. Checked on ``batch`` and on the batch with
    inactive records; the keys of a part of the batch (two halves, single
    records, the rows left active) must be that part's keys in the whole
    batch, so one new item can be looked up without the others; rows int64 in
    range, keys uint64; the empty batch gives no keys. Returns ``(rows, keys)``.
    """
    blocker = _instance(blocker, Blocker)
    who = f"blocker {blocker.name!r}" + (" (link mode)" if batch.cross_source_only else "")
    rows, keys = _keys_match_candidates(blocker, batch, who)
    n = len(batch)
    whole = _key_set(rows, keys)
    er, _ = _lookup(blocker, _empty(batch), who + " (empty batch)")
    assert len(er) == 0, f"{who}: the empty batch must give no lookup keys, got {len(er)}"
    kept, sub = _inactive(batch)
    parts = [np.arange(n // 2), np.arange(n // 2, n), kept] + [np.array([i]) for i in range(min(n, _SINGLE_LOOKUPS))]
    for part in parts:
        part = part.astype(np.int64)
        pr, pk = _lookup(blocker, batch.subset(part), who)
        got = _key_set(part[pr], pk)
        want = {(r, k) for r, k in whole if r in set(part.tolist())}
        assert got == want, (
            f"{who}: the lookup keys of records {part.tolist()[:8]} looked up without the others differ from their "
            "keys in the whole batch; a record's keys must depend on that record alone"
        )
    if n >= 2:
        _keys_match_candidates(blocker, sub, who + " (batch with inactive records)")
        plain = _call_without_active(who, lambda b: _lookup(blocker, b, who), sub)
        assert _key_set(*plain) == _key_set(*_lookup(blocker, sub, who)), (
            f"{who}: lookup_keys change with batch.active; a record's keys depend on that record alone "
            "(the index and the Dask executor pass no active)"
        )
    return rows, keys


def pairs_in_windows(
    passes: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]], window: int, source: npt.ArrayLike | None = None
) -> set[tuple[int, int]]:
    """The naive reading of :meth:`~er_framework.components.Blocker.window_keys`: per pass the rows sorted by
    ``(key, row)`` (Python string order), each paired with the next ``window - 1``; with ``source``, only
    pairs of different sources. The union over the passes, as ``(min, max)`` tuples."""
    src = None if source is None else np.asarray(source)
    out: set[tuple[int, int]] = set()
    for rows, keys in passes:
        order = [r for _, r in sorted(zip(np.asarray(keys).tolist(), np.asarray(rows).tolist()))]
        for i, a in enumerate(order):
            for b in order[i + 1 : i + window]:
                if src is None or src[a] != src[b]:
                    out.add((min(a, b), max(a, b)))
    return out


def _windows(blocker: Blocker, batch: Batch, who: str) -> list[tuple[Int64Array, npt.NDArray[Any]]]:
    got = blocker.window_keys(batch)
    assert got is not None, f"{who}: window_keys returned None (a blocker without windows keeps the default)"
    n = len(batch)
    out = []
    for rows, keys in got:
        r = np.asarray(rows)
        assert r.dtype == np.int64 and r.ndim == 1, f"{who}: window rows must be int64[m], got {r.dtype} {r.shape}"
        assert len(keys) == len(r), f"{who}: {len(keys)} window keys for {len(r)} rows"
        assert len(r) == 0 or (int(r.min()) >= 0 and int(r.max()) < n), f"{who}: window rows outside 0..{n - 1}"
        assert all(isinstance(k, str) for k in np.asarray(keys).tolist()), f"{who}: window keys must be strings"
        out.append((r, np.asarray(keys)))
    return out


def check_window_keys(blocker: Blocker | type[Blocker], batch: Batch) -> list[tuple[Int64Array, npt.NDArray[Any]]]:
    """``window_keys`` agree with ``candidates`` and depend on each record alone.

    The pairs of :func:`pairs_in_windows` (cross-source only in link mode)
    must equal ``blocker.candidates(batch)``: the Dask executor sorts the
    records of all partitions by these keys and pairs them within windows of
    ``window_size()``. The keys of each half of the batch must be that half's
    keys in the whole batch (an executor computes them partition by
    partition), the passes as many; the empty batch gives the same number of
    passes, with no rows. Returns the passes.
    """
    blocker = _instance(blocker, Blocker)
    who = f"blocker {blocker.name!r}" + (" (link mode)" if batch.cross_source_only else "")
    passes = _windows(blocker, batch, who)
    window = int(blocker.window_size())
    src = batch.records.source if batch.cross_source_only else None
    got = sorted(pairs_in_windows(passes, window, src))
    want = _as_tuples(blocker.candidates(batch))
    assert got == want, (
        f"{who}: the pairs within windows of window_size() = {window} of the window_keys order differ from "
        f"candidates(): {len(got)} vs {len(want)}; missing {_shown(sorted(set(want) - set(got)))}, "
        f"extra {_shown(sorted(set(got) - set(want)))}"
    )
    n = len(batch)
    empty = _windows(blocker, _empty(batch), who + " (empty batch)")
    assert len(empty) == len(passes) and all(len(r) == 0 for r, _ in empty), (
        f"{who}: the empty batch must give the same {len(passes)} passes, with no rows"
    )
    for part in (np.arange(n // 2, dtype=np.int64), np.arange(n // 2, n, dtype=np.int64)):
        sub = _windows(blocker, batch.subset(part), who)
        assert len(sub) == len(passes), f"{who}: a part of the batch gives {len(sub)} passes, the whole {len(passes)}"
        for (rows, keys), (prow, pkeys) in zip(passes, sub):
            whole = {(int(r), k) for r, k in zip(rows.tolist(), keys.tolist()) if r in set(part.tolist())}
            assert {(int(part[r]), k) for r, k in zip(prow.tolist(), pkeys.tolist())} == whole, (
                f"{who}: the window keys of records {part.tolist()[:8]} computed without the others differ from "
                "their keys in the whole batch; a record's sort key must depend on that record alone"
            )
    return passes


# ---------------------------------------------------------------- verifiers


def _scores(verifier: Verifier, batch: Batch, pairs: Pairs, who: str) -> npt.NDArray[np.float64]:
    raw = np.asarray(verifier.score(batch, pairs))
    assert raw.shape == (len(pairs),), f"{who}: {raw.shape} scores for {len(pairs)} pairs (one score per pair)"
    assert raw.dtype.kind in "fiu", f"{who}: scores must be float64, got {raw.dtype}"
    scores = raw.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(scores))
    assert len(bad) == 0, (
        f"{who}: scores must be finite, got {scores[bad[0]]} for pair ({pairs.left[bad[0]]}, {pairs.right[bad[0]]})"
    )
    return scores


def _close(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-12))


def check_verifier(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
    """One finite float score per pair, deterministic, symmetric in (left, right); the empty batch and
    empty pairs; a batch with inactive records; a pair's score does not depend on the other pairs or
    records (for a :class:`~er_framework.capabilities.Learner`: given its fitted state, through
    ``score_with``; the learner checks of :func:`check_learner` run too). The last call scores no pairs
    of ``batch``."""
    verifier = _instance(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    scores = _scores(verifier, batch, pairs, who)
    assert np.array_equal(_scores(verifier, batch, pairs, who), scores), f"{who} is not deterministic"
    swapped = _scores(verifier, batch, Pairs(pairs.right, pairs.left), who)
    assert np.allclose(swapped, scores), f"{who}: score(a, b) != score(b, a)"
    score: Callable[[Batch, Pairs, str], npt.NDArray[np.float64]] = partial(_scores, verifier)
    if isinstance(verifier, Learner):
        state = check_learner(verifier, batch, pairs)
        learner = verifier
        score = lambda b, p, w: _checked(learner.score_with(b, p, state), p, w)  # noqa: E731
    m = len(pairs)
    if m >= 2:
        half = m // 2
        first = score(batch, pairs.select(np.arange(m) < half), who)
        second = score(batch, pairs.select(np.arange(m) >= half), who)
        assert _close(np.concatenate([first, second]), scores), (
            f"{who}: scoring the pairs in two halves gives other scores; a pair's score depends on the pair "
            "alone (a verifier that learns from all pairs is a Learner: its state is fitted once, then applied)"
        )
        involved = np.unique(np.concatenate([pairs.left, pairs.right]))
        local = Pairs(np.searchsorted(involved, pairs.left), np.searchsorted(involved, pairs.right))
        assert _close(score(batch.subset(involved), local, who), scores), (
            f"{who}: scores change when the batch holds only the pairs' records; a pair's score depends on "
            "its two records alone (and a Learner's fitted state)"
        )
    if len(batch) >= 2:
        kept, sub = _inactive(batch)
        inside = np.isin(pairs.left, kept) & np.isin(pairs.right, kept)
        local = Pairs(np.searchsorted(kept, pairs.left[inside]), np.searchsorted(kept, pairs.right[inside]))
        where = f"{who} (batch of records 1, 2, 4, 5 …, with active)"
        got = score(sub, local, where)
        plain = _call_without_active(who, verifier.score, sub, local)
        if not isinstance(verifier, Learner):
            assert _close(np.asarray(plain, dtype=np.float64), got), f"{where}: the scores change with batch.active"
        assert _close(got, scores[inside]), (
            f"{where}: scores differ from the same pairs scored in the whole batch; a pair's score depends "
            "on its two records alone (pairs hold rows of the batch, not batch.active's indices)"
        )
    empty_batch = _scores(verifier, _empty(batch), Pairs.empty(), who + " (empty batch)")
    assert empty_batch.shape == (0,)
    empty = _scores(verifier, batch, Pairs.empty(), who + " (no pairs)")
    assert empty.shape == (0,), f"{who}: empty pairs must give 0 scores"
    return scores


def _checked(raw: Any, pairs: Pairs, who: str) -> npt.NDArray[np.float64]:
    out = np.asarray(raw, dtype=np.float64)
    assert out.shape == (len(pairs),), f"{who}: {out.shape} scores for {len(pairs)} pairs (one score per pair)"
    assert bool(np.all(np.isfinite(out))), f"{who}: scores must be finite"
    return out


def check_learner(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> dict[str, Any]:
    """A :class:`~er_framework.capabilities.Learner`'s fit is a value: ``fit_score`` gives ``score``'s scores
    and a JSON-serializable state; ``score_with`` that state (also after a JSON round trip, and on a new
    instance: nothing is kept on the component) gives the same scores; the instance is unchanged by the
    calls. Returns the state."""
    verifier = _instance(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    assert isinstance(verifier, Learner), f"{who} is not a Learner"
    before = dict(vars(verifier))
    scores, fitted = verifier.fit_score(batch, pairs, None)
    scores = _checked(scores, pairs, who + " (fit_score)")
    assert isinstance(fitted, Fitted), f"{who}: fit_score must return (scores, Fitted)"
    assert _close(scores, _scores(verifier, batch, pairs, who)), f"{who}: fit_score's scores differ from score()"
    state: dict[str, Any] = json.loads(json.dumps(fitted.state))
    assert state == fitted.state, f"{who}: the fitted state does not survive a JSON round trip (a model file)"
    assert dict(vars(verifier)) == before, (
        f"{who}: fitting changed the instance's attributes {sorted(set(vars(verifier)) ^ set(before))}; what a "
        "component learns is returned (Fitted), never kept on it")
    if len(pairs):
        fresh = type(verifier)(verifier.params, verifier.context)
        assert isinstance(fresh, Learner)
        again = _checked(fresh.score_with(batch, pairs, state), pairs, who + " (score_with)")
        assert _close(again, scores), (
            f"{who}: score_with(the fitted state) on a new instance gives other scores than the fit")
    return state


def check_pair_codes(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
    """A :class:`~er_framework.capabilities.CodeFitted` verifier's ``pair_codes`` / ``sample_pairs`` /
    ``fit_counts`` / ``score_codes`` give its ``score``.

    One int64 code per pair, the same when the pairs are coded in two halves or
    in a batch of their records only (a code depends on the pair's two
    records alone); ``sample_pairs`` the same for the same sources, with rows
    in range; and ``score(batch, pairs)`` equal to the partitioned path: the
    distinct codes and their counts, the sample pairs' likewise,
    ``fit_counts`` on them, each pair's score looked up by its code (what
    the Dask executor does); ``score_codes`` with the fitted state gives the
    same table. Returns the scores.
    """
    verifier = _instance(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    assert isinstance(verifier, CodeFitted), f"{who} is not CodeFitted"
    fitter = verifier
    m = len(pairs)

    def codes_of(b: Batch, p: Pairs) -> Int64Array:
        out = np.asarray(fitter.pair_codes(b, p))
        assert out.shape == (len(p),) and out.dtype.kind in "iu", (
            f"{who}: pair_codes must give one integer code per pair, got {out.dtype} {out.shape} for {len(p)} pairs"
        )
        return out.astype(np.int64)

    codes = codes_of(batch, pairs)
    if m >= 2:
        half = np.arange(m) < m // 2
        parts = np.concatenate([codes_of(batch, pairs.select(half)), codes_of(batch, pairs.select(~half))])
        involved = np.unique(np.concatenate([pairs.left, pairs.right]))
        local = Pairs(np.searchsorted(involved, pairs.left), np.searchsorted(involved, pairs.right))
        assert np.array_equal(parts, codes) and np.array_equal(codes_of(batch.subset(involved), local), codes), (
            f"{who}: the codes of the pairs change with the other pairs or records; a code depends on the pair's "
            "two records alone"
        )
    source = batch.records.source
    sample = fitter.sample_pairs(source, batch.cross_source_only)
    again = fitter.sample_pairs(source, batch.cross_source_only)
    assert _same(sample, again), f"{who}: sample_pairs differ between two calls on the same sources"
    n = len(batch)
    assert len(sample) == 0 or (int(min(sample.left.min(), sample.right.min())) >= 0
                                and int(max(sample.left.max(), sample.right.max())) < n), (
        f"{who}: sample_pairs holds rows outside 0..{n - 1}"
    )
    scores = _scores(verifier, batch, pairs, who)
    uniq, counts = np.unique(codes, return_counts=True)
    s_uniq, s_counts = np.unique(codes_of(batch, sample) if len(sample) else np.zeros(0, np.int64), return_counts=True)
    raw, fitted = fitter.fit_counts(uniq.astype(np.int64), counts.astype(np.float64), s_uniq.astype(np.int64),
                                    s_counts.astype(np.float64), None)
    table = np.asarray(raw, dtype=np.float64)
    assert table.shape == uniq.shape, f"{who}: fit_counts must give one score per distinct code ({len(uniq)})"
    via_codes = table[np.searchsorted(uniq, codes)] if m else np.zeros(0)
    assert np.array_equal(via_codes, scores), (
        f"{who}: score() differs from fit_counts on the codes' counts, looked up by code; an executor working "
        "partition by partition scores through the codes"
    )
    if m:
        applied = np.asarray(fitter.score_codes(uniq.astype(np.int64), fitted.state), dtype=np.float64)
        assert np.array_equal(applied, table), f"{who}: score_codes(the fitted state) differs from fit_counts' table"
    return scores


def check_comparisons(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
    """An :class:`~er_framework.capabilities.Explainable` verifier's ``comparisons`` (the terms behind ``er
    explain``, comparisons.csv and the report's waterfalls): one value per pair in every column, ``score``
    last and equal to ``score()``; the terms add up (``prior_weight`` + every ``weight_*`` = ``match_weight``,
    whose 2**w / (1 + 2**w) is the score; or the ``points_*`` sum to the score; or ``shared / (shared +
    left_only + right_only)`` is the score); a new instance given the same state (a Learner's fitted
    state, else None) gives the same terms. Returns the columns."""
    verifier = _instance(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    assert isinstance(verifier, Explainable), f"{who} is not Explainable (er_framework.capabilities)"
    scores = _scores(verifier, batch, pairs, who)
    state = verifier.fit_score(batch, pairs, None)[1].state if isinstance(verifier, Learner) else None
    cols = verifier.comparisons(batch, pairs, state)
    names = list(cols)
    assert names and names[-1] == "score", f"{who}: comparisons must end with the column 'score', got {names}"
    for name, col in cols.items():
        assert np.shape(col) == (len(pairs),), f"{who}: comparisons column {name!r} has shape {np.shape(col)}"
    assert _close(np.asarray(cols["score"], dtype=np.float64), scores), f"{who}: comparisons' score differs from score()"
    weights = [n for n in names if n.startswith("weight_")]
    points = [n for n in names if n.startswith("points_")]
    if "prior_weight" in cols:
        total = np.asarray(cols["prior_weight"], dtype=np.float64) + sum(
            (np.asarray(cols[n], dtype=np.float64) for n in weights), np.zeros(len(pairs)))
        assert np.allclose(total, np.asarray(cols["match_weight"], dtype=np.float64), atol=1e-9), (
            f"{who}: prior_weight + the weight_* columns differ from match_weight")
        assert np.allclose(1.0 / (1.0 + np.exp2(-total)), scores, atol=1e-9), (
            f"{who}: 2**match_weight / (1 + 2**match_weight) differs from the score")
    elif points:
        total = sum((np.nan_to_num(np.asarray(cols[n], dtype=np.float64)) for n in points), np.zeros(len(pairs)))
        assert np.allclose(total, scores, atol=1e-9), f"{who}: the points_* columns do not sum to the score"
    elif "shared" in cols:
        union = (np.asarray(cols["shared"]) + np.asarray(cols["left_only"]) + np.asarray(cols["right_only"])).astype(float)
        jac = np.divide(np.asarray(cols["shared"], dtype=float), union, out=np.zeros(len(pairs)), where=union > 0)
        assert np.allclose(jac, scores, atol=1e-12), f"{who}: shared / (shared + left_only + right_only) is not the score"
    fresh = type(verifier)(verifier.params, verifier.context)
    assert isinstance(fresh, Explainable)
    again = fresh.comparisons(batch, pairs, state)
    assert list(again) == names and all(
        np.allclose(np.asarray(again[n], dtype=float), np.asarray(cols[n], dtype=float), equal_nan=True) for n in names
    ), f"{who}: a new instance given the same state gives other comparisons (nothing may be kept on the component)"
    return cols


# ---------------------------------------------------------------- clusterers


def _labels(clusterer: Clusterer, n: int, pairs: Pairs, who: str) -> Int64Array:
    raw = clusterer.cluster(n, pairs)
    labels = np.asarray(raw)
    assert labels.shape == (n,), f"{who} returned labels of shape {labels.shape} for {n} records (one label per record)"
    assert labels.dtype.kind in "iu", f"{who}: labels must be integers (int64), got {labels.dtype}"
    return labels


def check_clusterer(
    clusterer: Clusterer | type[Clusterer], n: int | None = None, pairs: Pairs | None = None
) -> Int64Array:
    """The :class:`Clusterer` contract on scored pairs over ``n`` records (default :func:`sample_graph`).

    One integer label per record; records without pairs are singletons (a
    label of their own); deterministic (again, and with a fresh instance of
    the same parameters); the partition does not depend on the order of the
    input pairs; no records and no pairs give empty labels resp. all
    singletons. Labels are compared as partitions (the engine renumbers
    them). Pairs of one component may be split (community detection does).
    """
    clusterer = _instance(clusterer, Clusterer)
    who = f"clusterer {clusterer.name!r}"
    if pairs is None:
        n, pairs = sample_graph() if n is None else (n, Pairs.empty(scored=True))
    assert n is not None, "give n with pairs"
    labels = _labels(clusterer, n, pairs, who)
    partition = canonical_labels(labels)
    lonely = np.setdiff1d(np.arange(n), np.concatenate([pairs.left, pairs.right]))
    counts = np.bincount(partition, minlength=1)
    shared = lonely[counts[partition[lonely]] > 1]
    if len(shared):
        r = int(shared[0])
        others = [int(x) for x in np.flatnonzero(partition == partition[r]) if x != r]
        raise AssertionError(
            f"{who}: records without pairs must be singletons: record {r} shares label {labels[r]} with "
            f"record(s) {others[:8]} ({len(shared)} such records)"
        )
    assert np.array_equal(canonical_labels(_labels(clusterer, n, pairs, who)), partition), (
        f"{who} is not deterministic: two calls on the same pairs give other clusters"
    )
    fresh = type(clusterer)(clusterer.params, clusterer.context)
    assert np.array_equal(canonical_labels(_labels(fresh, n, pairs, who)), partition), (
        f"{who} is not deterministic: a new instance with the same parameters gives other clusters"
    )
    rng = np.random.default_rng(0)
    for attempt in range(3):
        order = rng.permutation(len(pairs))
        shuffled = Pairs(pairs.left[order], pairs.right[order], None if pairs.score is None else pairs.score[order])
        got = canonical_labels(_labels(clusterer, n, shuffled, who))
        assert np.array_equal(got, partition), (
            f"{who}: the clusters depend on the order of the input pairs (shuffle {attempt + 1} differs at records "
            f"{np.flatnonzero(got != partition)[:8].tolist()})"
        )
    none = _labels(clusterer, 0, Pairs.empty(scored=True), who + " (no records)")
    assert none.shape == (0,)
    alone = _labels(clusterer, n, Pairs.empty(scored=True), who + " (no pairs)")
    assert len(np.unique(alone)) == n, (
        f"{who}: without pairs every record must be a singleton, got {len(np.unique(alone))} labels for {n} records"
    )
    return labels


# ---------------------------------------------------------------- normalizers

_VALUES: list[Any] = [
    # names (titles, accents, apostrophes, nicknames, order, case)
    "Anna Smith", "anna  SMITH", "Smith, Anna", "Dr. José Álvarez-Núñez Jr.", "O'Brien, Seán", "Bob", "Mr.",
    "Robert 'Bob' Jones", "Zoë Saldaña", "Ærøskøbing", "Łódź", "İstanbul", "straße", "ﬁne ligature", "ǅemal",
    "北京市", "Москва", "Zo\u200be", "\U0001f40d python",
    # whitespace
    "  padded  ", "tab\tand\nnewline", "\u00a0no-break\u2003em space\u3000",
    # digits and phones
    "12345", "٣٤٥٦٧", "+1 (555) 010-9999 ext. 12", "555.010.9999", "+44 20 7946 0958", "000-000-0000", "#42",
    # e-mail-like
    "Anna.Smith+tag@GMail.com", "mailto:bob@example.org", "two@at@signs", "no at sign", "a@b",
    # date-like
    "1980-03-05", "05/03/1980", "March 5, 1980", "19800305", "31/02/1999", "2024-13-45", "5th of Mar 1980 10:30",
    # addresses
    "123 North Main Street, Apt #4", "P.O. Box 17", "1 Saint Paul Ave. Suite 5",
    # repeated values, and missing ones (never given to a normalizer)
    "Anna Smith", "12345", None, "", "   ", "N/A", "null", "-",
]  # fmt: skip

#: missing column values :func:`check_normalizer` adds to the column it runs through :func:`normalize_column`
_MISSING: list[Any] = [None, float("nan"), "", " \t\n", "N/A", "NULL", "--"]


def sample_values() -> list[Any]:
    """Varied field values for :func:`check_normalizer`: names (titles, accents, apostrophes, non-Latin
    scripts, a zero-width space, an emoji), whitespace, digits and phones, e-mail-like, date-like and
    address-like strings, repeated values, and missing ones (``None``, ``""``, blanks, ``"N/A"``)."""
    return list(_VALUES)


def _as_input(value: Any) -> str | None:
    """What :mod:`er_framework.normalize` gives a normalizer for the column value ``value``.

    ``None`` when the value is missing (``None``, NaN, blank or a placeholder:
    never given to a normalizer); otherwise the value, ``str(value)`` if not a string.
    """
    if is_missing(value):
        return None
    s = value if isinstance(value, str) else str(value)
    return None if is_missing(s) else s


def _as_key(result: str | None) -> str | None:
    """A normalizer's result as the machinery reads it: ``None``, ``""``, blanks and placeholders are missing."""
    return None if result is None or is_missing(result) else str(result)


def _few(values: list[str]) -> str:
    more = f" (and {len(values) - _SHOWN} more)" if len(values) > _SHOWN else ""
    return ", ".join(map(repr, values[:_SHOWN])) + more


def _normalized(n: Normalizer, values: list[str], who: str) -> list[str | None]:
    """``n.normalize(values)``, its shape and types checked; an exception is a contract failure."""
    try:
        out = n.normalize(list(values))
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(
            f"{who}: normalize() raised {type(exc).__name__} ({exc}) on the values {_few(values)}; a normalizer "
            "returns None for a value it cannot normalize, and implements normalize() or per_value()"
        ) from exc
    assert isinstance(out, list), (
        f"{who}: normalize() must return a list (one str or None per value), got {type(out).__name__}"
    )
    assert len(out) == len(values), (
        f"{who}: normalize() returned {len(out)} values for {len(values)} values; it returns one str or None "
        "per value, in order"
    )
    for v, r in zip(values, out):
        assert r is None or isinstance(r, str), (
            f"{who}: normalize() returned {type(r).__name__} {r!r} for {v!r}; a normalizer returns a str or None"
        )
    return out


def _per_value(f: Callable[[str], str | None], values: Iterable[str], who: str) -> list[str | None]:
    out: list[str | None] = []
    for v in values:
        try:
            r = f(v)
        except Exception as exc:  # reported as a contract failure
            raise AssertionError(
                f"{who}: the function of per_value() raised {type(exc).__name__} ({exc}) on {v!r}; a normalizer "
                "returns None for a value it cannot normalize"
            ) from exc
        assert r is None or isinstance(r, str), (
            f"{who}: the function of per_value() returned {type(r).__name__} {r!r} for {v!r}; a normalizer "
            "returns a str or None"
        )
        out.append(r)
    return out


def _assert_same_keys(
    first: list[str | None], second: list[str | None], values: list[str], message: str
) -> None:
    """``first`` and ``second`` give every value the same key; else ``message`` with the first value that differs."""
    for v, a, b in zip(values, first, second):
        if _as_key(a) != _as_key(b):
            raise AssertionError(f"{message} (at {v!r}: {a!r}, then {b!r})")


def _check_requires(n: Normalizer, who: str) -> None:
    req = type(n).requires
    assert isinstance(req, tuple) and all(isinstance(m, str) and m for m in req), (
        f"{who}: requires must be a tuple of Python module names, got {req!r}"
    )
    absent = []
    for module in req:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a dotted name whose parent is missing
            found = False
        if not found:
            absent.append(module)
    assert not absent, (
        f"{who} requires the Python module(s) {', '.join(map(repr, absent))}, not installed here: "
        f"pip install {' '.join(absent)} (a job naming it would be refused the same way)"
    )


def check_normalizer(normalizer: Normalizer | type[Normalizer], values: Iterable[Any] | None = None) -> list[str | None]:
    """The :class:`~er_framework.components.Normalizer` contract on ``values`` (default :func:`sample_values`).

    A normalizer is given the distinct non-missing strings of a column (missing,
    blank and placeholder values, such as ``None``, ``""``, ``"  "``, ``"N/A"``,
    never reach it; other values arrive as ``str(value)``); the check does the
    same. Its results are read as :mod:`er_framework.normalize` reads them: a
    result that is ``None``, ``""``, blank or a placeholder is *missing*, so
    the chain never returns ``""`` and results are compared as such keys
    (``""`` and ``None`` are the same answer; returning ``None`` says it
    plainly). Checked:

    * the ``requires`` modules are importable;
    * ``normalize()`` returns a list with one ``str`` or ``None`` per value
      (no exception: a value it cannot read gives ``None``), and ``[]`` for
      ``[]``; the function of ``per_value()``, if any, one ``str`` or ``None``;
    * some value of the sample gets a key (else the checks compare nothing);
    * deterministic: again on the same instance, and on a new instance of the
      same parameters;
    * a key depends on its value alone: ``normalize(reversed(values))``
      reversed, and ``normalize([v])`` value by value, give the same keys as
      ``normalize(values)``; the function of ``per_value()`` called again (the
      same function, values in reverse order) as well;
    * ``normalize()`` and ``per_value()`` agree value by value (the chains run
      ``per_value()`` when it is offered, ``normalize()`` otherwise);
    * through :func:`~er_framework.normalize.normalize_column` (the column with
      repeats and missing values added), missing values stay ``None`` and
      every other value gets the key ``normalize()`` gave it; an empty
      column gives ``[]``.

    Returns ``normalize_column(values, [normalizer])``: one key or ``None`` per value of ``values``.
    """
    n = _instance(normalizer, Normalizer)
    who = f"normalizer {n.name!r}"
    _check_requires(n, who)
    column = sample_values() if values is None else list(values)
    todo = list(dict.fromkeys(s for s in map(_as_input, column) if s is not None))
    out = _check_normalize_keys(n, todo, who)
    _check_per_value(n, todo, out, who)
    return _check_normalize_column(n, column, dict(zip(todo, map(_as_key, out))), who)


def _check_normalize_keys(n: Normalizer, todo: list[str], who: str) -> list[str | None]:
    """``normalize(todo)``, checked: ``[]`` for ``[]``, some key, deterministic, each key depending on its value alone."""
    assert _normalized(n, [], who + " (no values)") == [], f"{who}: normalize([]) must return []"
    out = _normalized(n, todo, who)
    assert any(_as_key(r) is not None for r in out), (
        f"{who}: every value of the sample normalized to missing (None, \"\" or a placeholder) "
        f"({len(todo)} values: {_few(todo)}); a normalizer gives a key to the values it can read, and the checks "
        "need some: give values it normalizes"
    )
    _assert_same_keys(out, _normalized(n, todo, who), todo, f"{who} is not deterministic: two normalize() calls on the same values differ")
    fresh = type(n)(n.params, n.context)
    _assert_same_keys(
        out, _normalized(fresh, todo, who), todo,
        f"{who} is not deterministic: a new instance with the same parameters gives other results",
    )
    _assert_same_keys(
        out, _normalized(n, todo[::-1], who)[::-1], todo,
        f"{who}: the result depends on the order of the values (normalize(values) and normalize(reversed(values)) "
        "reversed differ); a key depends on its value alone",
    )
    ones = [_normalized(n, [v], who)[0] for v in todo]
    _assert_same_keys(
        out, ones, todo,
        f"{who}: the result depends on the other values of the batch (normalize(values) and normalize([value]) one "
        "value at a time differ); a key depends on its value alone",
    )
    return out


def _check_per_value(n: Normalizer, todo: list[str], out: list[str | None], who: str) -> None:
    """The function of ``per_value()``, if any: one key per value, the same when called again, agreeing with ``out``."""
    try:
        f = n.per_value()
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(f"{who}: per_value() raised {type(exc).__name__} ({exc})") from exc
    assert f is None or callable(f), f"{who}: per_value() must return a function of one value or None, got {f!r}"
    if f is not None:
        direct = _per_value(f, todo, who)
        _assert_same_keys(
            direct, _per_value(f, todo[::-1], who)[::-1], todo,
            f"{who}: the function of per_value() gives other results when called again (values in reverse order); "
            "a key depends on its value alone, not on earlier calls",
        )
        _assert_same_keys(
            out, direct, todo,
            f"{who}: normalize() and per_value() disagree; the chains run per_value() when it is offered and "
            "normalize() otherwise, so both must give every value the same key",
        )


def _check_normalize_column(n: Normalizer, column: list[Any], keys: dict[str, str | None], who: str) -> list[str | None]:
    """``normalize_column(column, [n])``, checked against ``keys`` (each distinct input's key from ``normalize()``).

    The column is run with missing values and its reverse appended: missing
    values stay ``None``, every other value gets its key. Returns the results
    of ``column``'s own values.
    """
    whole = column + _MISSING + column[::-1]
    try:
        got = normalize_column(whole, [n])
        nothing = normalize_column([], [n])
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(f"{who}: normalize_column(values, [normalizer]) raised {type(exc).__name__} ({exc})") from exc
    assert nothing == [], f"{who}: normalize_column([], [normalizer]) must return [], got {nothing!r}"
    assert isinstance(got, list) and len(got) == len(whole), f"{who}: normalize_column must give one result per value"
    for v, r in zip(whole, got):
        s = _as_input(v)
        if s is None:
            assert r is None, f"{who}: the missing value {v!r} must stay missing (None) through normalize_column, got {r!r}"
            continue
        assert r is None or (isinstance(r, str) and not is_missing(r)), (
            f"{who}: normalize_column gave {r!r} for {v!r}; a chain's result is a key or None, never \"\" or a placeholder"
        )
        assert r == keys[s], (
            f"{who}: normalize_column gives {v!r} the key {r!r}, normalize() gave {keys[s]!r}; a key depends on its "
            "value alone (not on the column's other values, repeats or missing values)"
        )
    return got[: len(column)]
