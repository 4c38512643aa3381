"""Contract checks of the abilities of :mod:`er_framework.capabilities` (exported by :mod:`er_framework.testing`).

One check per ability that promises something checkable:
:func:`check_partitionable`, :func:`check_multiset`,
:func:`check_multiset_signing`, :func:`check_reporting`,
:func:`check_lookup_keys` (with :func:`check_keyed_reports` for a keyed
blocker that reports, and :func:`check_grouped_keys`),
:func:`check_window_keys`, :func:`check_diagnostic` and
:func:`check_signature_screen`. :func:`check_abilities` runs the checks of
every ability a component declares (:data:`ABILITY_CHECKS`); the family
checks of :mod:`er_framework.testing` call it, so ``check_blocker`` of a
keyed blocker also checks its keys. A verifier's learning abilities are
checked by ``check_pair_codes`` and ``check_comparisons`` there.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import (
    Blocked,
    Diagnostic,
    GroupedKeys,
    Keyed,
    LimitedKeys,
    Multiset,
    MultisetSigning,
    Partitionable,
    Reporting,
    SignatureScreen,
    Tokenized,
    Windowed,
    ability,
    capabilities_of,
    has,
)
from er_framework.components import Blocker, Component, Shingler, SignatureBuilder, Verifier
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets
from er_framework.testing_support import (
    as_tuples,
    call_without_active,
    check_token_sets,
    empty_batch,
    inactive_batch,
    instance_of,
    sample_records,
    shown,
)

__all__ = [
    "ABILITY_CHECKS",
    "bucket_statistics",
    "check_abilities",
    "check_diagnostic",
    "check_grouped_keys",
    "check_keyed_reports",
    "check_lookup_keys",
    "check_multiset",
    "check_multiset_signing",
    "check_partitionable",
    "check_reporting",
    "check_signature_screen",
    "check_window_keys",
    "pairs_in_windows",
    "pairs_sharing_keys",
]

Int64Array = npt.NDArray[np.int64]

#: records looked up one at a time by :func:`check_lookup_keys`
_SINGLE_LOOKUPS = 4
#: records the diagnostics probe in :func:`check_diagnostic`
DIAGNOSTIC_SAMPLE = 20


# ---------------------------------------------------------------- shinglers


def check_partitionable(shingler: Shingler | type[Shingler], records: Records | None = None) -> TokenSets:
    """A :class:`~er_framework.capabilities.Partitionable` shingler: ``shingle`` is ``shingle_reported``'s token
    sets; a record's token set depends on that record alone (two halves, records 0, 3, 6 … left out); the
    reports of the two halves merged equal the whole call's report merged; a call leaves ``describe()`` as it
    was (the report is the returned value, not state). Returns the token sets."""
    shingler = instance_of(shingler, Shingler)
    records = records if records is not None else sample_records()
    who = f"shingler {shingler.name!r}"
    part = ability(shingler, Partitionable)
    assert part is not None, f"{who} is not Partitionable"
    n = len(records)
    described = shingler.describe()
    whole = part.shingle_reported(records)
    assert isinstance(whole, Tokenized), f"{who}: shingle_reported must return Tokenized(tokens, report)"
    assert isinstance(whole.report, dict), f"{who}: shingle_reported's report must be a dict"
    check_token_sets(whole.tokens, n, who + " (shingle_reported)")
    assert shingler.shingle(records).equals(whole.tokens), f"{who}: shingle differs from shingle_reported's tokens"
    halves = [part.shingle_reported(records.take(np.arange(a, b, dtype=np.int64))) for a, b in ((0, n // 2), (n // 2, n))]
    assert TokenSets.concat([h.tokens for h in halves]).equals(whole.tokens), (
        f"{who}: shingling two halves differs from shingling the whole batch; a partitionable shingler's tokens "
        "must depend on the record alone (declare WholeCorpus, not Partitionable, otherwise)"
    )
    kept = np.flatnonzero(np.arange(n) % 3 != 0).astype(np.int64)
    assert part.shingle_reported(records.take(kept)).tokens.equals(whole.tokens.take(kept)), (
        f"{who}: the token sets of records 1, 2, 4, 5 … shingled without records 0, 3, 6 … differ; a "
        "partitionable shingler's tokens must depend on the record alone"
    )
    merged = part.merge_reports([h.report for h in halves])
    assert merged == part.merge_reports([whole.report]), (
        f"{who}: merge_reports of the two halves' reports differs from the whole call's; a partitionable "
        "shingler's report must be combinable from its partitions"
    )
    json.dumps(merged)  # report.json holds it
    assert shingler.describe() == described, (
        f"{who}: describe() changed after shingling; return the report (shingle_reported), keep no state"
    )
    return whole.tokens


def check_multiset(shingler: Shingler | type[Shingler], records: Records | None = None) -> TokenSets:
    """A :class:`~er_framework.capabilities.Multiset` shingler: one row per record, whose distinct tokens are
    ``shingle``'s set. Returns the multisets."""
    shingler = instance_of(shingler, Shingler)
    records = records if records is not None else sample_records()
    who = f"shingler {shingler.name!r}"
    multi_ability = ability(shingler, Multiset)
    assert multi_ability is not None, f"{who} is not Multiset"
    n = len(records)
    ts = shingler.shingle(records)
    multi = multi_ability.shingle_multiset(records)
    assert isinstance(multi, TokenSets) and len(multi) == n, f"{who}: shingle_multiset must return TokenSets with one row per record ({n})"
    for i in range(n):
        got = np.unique(multi.row(i)).astype(np.uint64)
        assert np.array_equal(got, ts.row(i).astype(np.uint64)), (
            f"{who}: shingle_multiset row {i} holds other distinct tokens than shingle's set"
        )
    return multi


# ---------------------------------------------------------------- signature builders


def as_multisets(tokens: TokenSets) -> TokenSets:
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


def check_multiset_signing(builder: SignatureBuilder | type[SignatureBuilder], tokens: TokenSets) -> Signatures:
    """A :class:`~er_framework.capabilities.MultisetSigning` builder signs the sets as unsorted rows with
    repeats exactly as the sets. Returns the signatures of the multisets."""
    builder = instance_of(builder, SignatureBuilder)
    who = f"signature builder {builder.name!r}"
    assert has(builder, MultisetSigning), f"{who} is not MultisetSigning"
    multi = builder.build(as_multisets(tokens))
    assert np.array_equal(multi.values, builder.build(tokens).values), (
        f"{who} declares MultisetSigning but signs unsorted rows with repeats differently from the sets; do not declare it"
    )
    return multi


# ---------------------------------------------------------------- blockers


def check_reporting(blocker: Blocker | type[Blocker], batch: Batch) -> Blocked:
    """A :class:`~er_framework.capabilities.Reporting` blocker: ``block`` gives ``candidates``' pairs with a
    report (a JSON-serializable dict), the same on a second call, and a call leaves ``describe()`` as it was
    (the report is the returned value, not state). Returns ``block(batch)``."""
    blocker = instance_of(blocker, Blocker)
    who = f"blocker {blocker.name!r}" + (" (link mode)" if batch.cross_source_only else "")
    reporting = ability(blocker, Reporting)
    assert reporting is not None, f"{who} is not Reporting"
    described = blocker.describe()
    got = reporting.block(batch)
    assert isinstance(got, Blocked), f"{who}: block must return Blocked(pairs, report), got {type(got).__name__}"
    assert isinstance(got.report, dict), f"{who}: block's report must be a dict"
    json.dumps(got.report)  # report.json holds it
    cand = blocker.candidates(batch)
    assert np.array_equal(got.pairs.left, cand.left) and np.array_equal(got.pairs.right, cand.right), (
        f"{who}: block's pairs differ from candidates()"
    )
    assert reporting.block(batch).report == got.report, f"{who}: block's report is not deterministic"
    assert blocker.describe() == described, f"{who}: describe() changed after blocking; return the report (block), keep no state"
    return got


def bucket_statistics(blocker: Blocker, batch: Batch) -> dict[str, Any]:
    """The statistics of the buckets of ``blocker.lookup_keys(batch)`` that an executor blocking through the
    keys gives :meth:`~er_framework.capabilities.Keyed.merge_reports`, computed naively (with ``groups`` and
    ``oversized`` for :class:`~er_framework.capabilities.GroupedKeys`)."""
    who = f"blocker {blocker.name!r}"
    keyed = _keyed(blocker, who)
    rows, keys = _lookup(blocker, batch, who)
    cap = keyed.lookup_cap()
    grouped = ability(blocker, GroupedKeys)
    group_of = np.asarray(grouped.lookup_groups(batch), dtype=np.int64) if grouped is not None else None
    members: dict[int, list[int]] = {}
    bucket_group: dict[int, int] = {}
    for i, (r, k) in enumerate(zip(rows.tolist(), keys.tolist())):
        members.setdefault(int(k), []).append(int(r))
        if group_of is not None:
            bucket_group.setdefault(int(k), int(group_of[i]))
    src = batch.records.source.tolist()
    out = dict.fromkeys(("buckets", "largest_bucket", "oversized_buckets", "pairs_skipped", "raw_pairs"), 0)
    groups: dict[int, dict[str, int]] = {}
    oversized: list[dict[str, Any]] = []
    for k, rs in members.items():
        size = len(rs)
        pairs = size * (size - 1) // 2
        over = cap is not None and size > cap
        out["buckets"] += size >= 2
        out["largest_bucket"] = max(out["largest_bucket"], size)
        out["oversized_buckets"] += over
        out["pairs_skipped"] += pairs if over else 0
        out["raw_pairs"] += pairs if size >= 2 and not over else 0
        if group_of is None:
            continue
        made = pairs
        if batch.cross_source_only:
            ordered = sorted(rs)
            made = sum(1 for x, a in enumerate(ordered) for b in ordered[x + 1 :] if src[a] != src[b])
        g = groups.setdefault(
            bucket_group[k],
            {
                name: 0
                for name in ("distinct", "buckets", "largest_bucket", "pairs", "oversized_buckets", "oversized_records", "oversized_pairs")
            },
        )
        g["distinct"] += 1
        g["buckets"] += size >= 2
        g["largest_bucket"] = max(g["largest_bucket"], size)
        g["pairs"] += made if size >= 2 and not over else 0
        if over:
            g["oversized_buckets"] += 1
            g["oversized_records"] += size
            g["oversized_pairs"] += made
            first = min(rs)
            oversized.append({"group": bucket_group[k], "size": size, "record": batch.records.take(np.array([first], dtype=np.int64))})
    stats: dict[str, Any] = {key: int(v) for key, v in out.items()}
    stats["distinct_pairs"] = len(blocker.candidates(batch))
    if group_of is not None:
        stats["groups"] = groups
        stats["oversized"] = oversized
    return stats


def check_keyed_reports(blocker: Blocker | type[Blocker], batch: Batch) -> dict[str, Any]:
    """A keyed blocker that reports: ``merge_reports`` of the two halves' ``partition_report`` and the
    buckets' statistics (:func:`bucket_statistics`) equals ``block(batch)``'s report, as the Dask executor
    reports a run blocked through the keys. Returns the merged report."""
    blocker = instance_of(blocker, Blocker)
    who = f"blocker {blocker.name!r}" + (" (link mode)" if batch.cross_source_only else "")
    keyed, reporting = _keyed(blocker, who), ability(blocker, Reporting)
    assert reporting is not None, f"{who} is not Reporting"
    n = len(batch)
    parts = [keyed.partition_report(batch.subset(np.arange(a, b, dtype=np.int64))) for a, b in ((0, n // 2), (n // 2, n))]
    merged = keyed.merge_reports(parts, bucket_statistics(blocker, batch))
    want = reporting.block(batch).report
    assert merged == want, (
        f"{who}: merge_reports of the partitions' partition_report and the buckets' statistics differs from "
        f"block()'s report; differing keys: {sorted(k for k in set(merged) | set(want) if merged.get(k) != want.get(k))}"
    )
    return merged


def check_grouped_keys(blocker: Blocker | type[Blocker], batch: Batch) -> Int64Array:
    """:class:`~er_framework.capabilities.GroupedKeys`: one integer group per entry of ``lookup_keys``, the
    same on a second call. Returns the groups."""
    blocker = instance_of(blocker, Blocker)
    who = f"blocker {blocker.name!r}"
    grouped = ability(blocker, GroupedKeys)
    assert grouped is not None, f"{who} is not GroupedKeys"
    rows, _ = _lookup(blocker, batch, who)
    groups = np.asarray(grouped.lookup_groups(batch))
    assert groups.shape == rows.shape and groups.dtype.kind in "iu", (
        f"{who}: lookup_groups must give one integer group per lookup key ({len(rows)}), got {groups.dtype} {groups.shape}"
    )
    assert np.array_equal(np.asarray(grouped.lookup_groups(batch)), groups), f"{who}: lookup_groups is not deterministic"
    return groups.astype(np.int64)


def check_diagnostic(blocker: Blocker | type[Blocker], batch: Batch, sample: int = DIAGNOSTIC_SAMPLE) -> dict[str, Any] | None:
    """:class:`~er_framework.capabilities.Diagnostic`: ``diagnostics`` gives ``None`` or a JSON-serializable
    dict, the same on a second call, and nothing for the empty batch that breaks. Returns it."""
    blocker = instance_of(blocker, Blocker)
    who = f"blocker {blocker.name!r}"
    diagnostic = ability(blocker, Diagnostic)
    assert diagnostic is not None, f"{who} is not Diagnostic"
    got = diagnostic.diagnostics(batch, sample)
    assert got is None or isinstance(got, dict), f"{who}: diagnostics must give a dict or None"
    if got is not None:
        json.dumps(got)  # report.json holds it
        assert diagnostic.diagnostics(batch, sample) == got, f"{who}: diagnostics is not deterministic"
    diagnostic.diagnostics(empty_batch(batch), sample)
    return got


# ---------------------------------------------------------------- verifiers


def check_signature_screen(
    verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]] | None:
    """:class:`~er_framework.capabilities.SignatureScreen`: ``decided_by_signatures`` gives ``None`` or a
    boolean mask and an estimate per pair, the estimates of the rejected pairs below the threshold (the
    verify stage scores them by it). Returns it."""
    verifier = instance_of(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    screen = ability(verifier, SignatureScreen)
    assert screen is not None, f"{who} is not SignatureScreen"
    got = screen.decided_by_signatures(batch, pairs)
    if got is None:
        return None
    skip, estimate = np.asarray(got[0]), np.asarray(got[1])
    assert skip.shape == (len(pairs),) and skip.dtype == np.bool_, f"{who}: the mask must be one bool per pair"
    assert estimate.shape == (len(pairs),) and estimate.dtype.kind == "f", f"{who}: the estimate must be one float per pair"
    assert bool(np.all(estimate[skip] < verifier.threshold)), (
        f"{who}: a pair rejected from its signatures has an estimate at or above the threshold {verifier.threshold}"
    )
    return skip, estimate.astype(np.float64)


# ---------------------------------------------------------------- keyed and windowed blockers


def pairs_sharing_keys(rows: npt.ArrayLike, keys: npt.ArrayLike, cap: int | None = None, source: npt.ArrayLike | None = None) -> Pairs:
    """The candidates that bucket keys imply, computed naively (the reference of :func:`check_lookup_keys`).

    Record ``rows[i]`` is in bucket ``keys[i]`` (a dict of key -> set of
    rows); every two records of a bucket form a pair, except in buckets of
    more than ``cap`` records (skipped, as :meth:`~er_framework.capabilities.Keyed.lookup_cap` says)
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


def _keyed(blocker: Blocker, who: str) -> Keyed:
    keyed = ability(blocker, Keyed)
    assert keyed is not None, (
        f"{who} has no lookup_keys (it is not Keyed): it cannot serve er index or the Dask executor; "
        "declare er_framework.capabilities.Keyed and implement lookup_keys(batch) -> (rows, keys) and lookup_cap()"
    )
    return keyed


def _lookup(blocker: Blocker, batch: Batch, who: str) -> tuple[Int64Array, npt.NDArray[np.uint64]]:
    got: Any = _keyed(blocker, who).lookup_keys(batch)
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
    cap = _keyed(blocker, who).lookup_cap()
    want = set(as_tuples(pairs_sharing_keys(rows, keys, cap, src)))
    got = set(as_tuples(blocker.candidates(batch)))
    missing = sorted(want - got)
    extra = sorted(got - want)
    if missing or extra:
        over = ""
        if extra and cap is not None:
            uncapped = set(as_tuples(pairs_sharing_keys(rows, keys, None, src)))
            capped = [p for p in extra if p in uncapped]
            if capped:
                over = f" ({len(capped)} of them share only buckets over the cap: candidates must skip those too)"
        raise AssertionError(
            f"{who}: lookup_keys disagree with candidates (two records must be candidates exactly when they share a "
            f"key, buckets over lookup_cap() = {cap} skipped"
            + (", cross-source only" if src is not None else "")
            + "): "
            + (f"{len(missing)} pairs share a key but are no candidates: {shown(missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"{len(extra)} candidates share no key: {shown(extra)}{over}" if extra else "")
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
    blocker = instance_of(blocker, Blocker)
    who = f"blocker {blocker.name!r}" + (" (link mode)" if batch.cross_source_only else "")
    rows, keys = _keys_match_candidates(blocker, batch, who)
    n = len(batch)
    whole = _key_set(rows, keys)
    er, _ = _lookup(blocker, empty_batch(batch), who + " (empty batch)")
    assert len(er) == 0, f"{who}: the empty batch must give no lookup keys, got {len(er)}"
    kept, sub = inactive_batch(batch)
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
        plain = call_without_active(who, lambda b: _lookup(blocker, b, who), sub)
        assert _key_set(*plain) == _key_set(*_lookup(blocker, sub, who)), (
            f"{who}: lookup_keys change with batch.active; a record's keys depend on that record alone "
            "(the index and the Dask executor pass no active)"
        )
    return rows, keys


def pairs_in_windows(
    passes: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]], window: int, source: npt.ArrayLike | None = None
) -> set[tuple[int, int]]:
    """The naive reading of :meth:`~er_framework.capabilities.Windowed.window_keys`: per pass the rows sorted by
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


def _windowed(blocker: Blocker, who: str) -> Windowed:
    windowed = ability(blocker, Windowed)
    assert windowed is not None, f"{who} has no window_keys (it is not Windowed)"
    return windowed


def _windows(blocker: Blocker, batch: Batch, who: str) -> list[tuple[Int64Array, npt.NDArray[Any]]]:
    got: Any = _windowed(blocker, who).window_keys(batch)
    assert got is not None, f"{who}: window_keys returned None"
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
    blocker = instance_of(blocker, Blocker)
    who = f"blocker {blocker.name!r}" + (" (link mode)" if batch.cross_source_only else "")
    passes = _windows(blocker, batch, who)
    window = int(_windowed(blocker, who).window_size())
    src = batch.records.source if batch.cross_source_only else None
    got = sorted(pairs_in_windows(passes, window, src))
    want = as_tuples(blocker.candidates(batch))
    assert got == want, (
        f"{who}: the pairs within windows of window_size() = {window} of the window_keys order differ from "
        f"candidates(): {len(got)} vs {len(want)}; missing {shown(sorted(set(want) - set(got)))}, "
        f"extra {shown(sorted(set(got) - set(want)))}"
    )
    n = len(batch)
    empty = _windows(blocker, empty_batch(batch), who + " (empty batch)")
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


# ---------------------------------------------------------------- every ability


def _records_of(batch: Batch | None) -> Records:
    return batch.records if batch is not None else sample_records()


def _needs(what: Any, name: str, ability_name: str) -> Any:
    assert what is not None, f"checking {ability_name} needs {name}"
    return what


def _both_modes(check: Callable[[Any, Batch], Any]) -> Callable[[Any, Batch | None, Pairs | None], None]:
    def run(component: Any, batch: Batch | None, pairs: Pairs | None) -> None:
        b = _needs(batch, "a batch", check.__name__)
        check(component, dataclasses.replace(b, cross_source_only=not b.cross_source_only))
        check(component, b)

    return run


def _keyed_checks(component: Any, batch: Batch | None, pairs: Pairs | None) -> None:
    _both_modes(check_lookup_keys)(component, batch, pairs)
    if has(component, Reporting):
        _both_modes(check_keyed_reports)(component, batch, pairs)


def _limited(component: Any, batch: Batch | None, pairs: Pairs | None) -> None:
    limited = ability(component, LimitedKeys)
    assert limited is not None
    limited.check_lookup_pairs(0, 0)  # no pairs: within every limit


#: the check of each ability (by its name in :data:`~er_framework.capabilities.CAPABILITIES`), given the
#: component, a batch (its records, tokens, signatures as the family reads them) and pairs (verifiers)
ABILITY_CHECKS: dict[str, Callable[[Any, Batch | None, Pairs | None], Any]] = {
    "partitionable": lambda c, b, p: check_partitionable(c, _records_of(b)),
    "multiset": lambda c, b, p: check_multiset(c, _records_of(b)),
    "multiset_signing": lambda c, b, p: check_multiset_signing(c, _needs(b and b.tokens, "a batch with tokens", "multiset_signing")),
    "reporting": _both_modes(check_reporting),
    "keyed": _keyed_checks,
    "grouped_keys": lambda c, b, p: check_grouped_keys(c, _needs(b, "a batch", "grouped_keys")),
    "limited_keys": _limited,
    "windowed": _both_modes(check_window_keys),
    "diagnostic": lambda c, b, p: check_diagnostic(c, _needs(b, "a batch", "diagnostic")),
    "signature_screen": lambda c, b, p: check_signature_screen(
        c, _needs(b, "a batch", "signature_screen"), _needs(p, "pairs", "signature_screen")
    ),
}


def check_abilities(component: Component | type[Component], batch: Batch | None = None, pairs: Pairs | None = None) -> list[str]:
    """Run the check of every ability ``component`` (an instance, or a class built with its default parameters)
    declares, in :data:`~er_framework.capabilities.CAPABILITIES` order; returns the names of the abilities
    checked. ``batch`` holds what the component reads (records; tokens for a signature builder; signatures,
    tokens or fields for a blocker); ``pairs`` a verifier's pairs."""
    if isinstance(component, type):
        component = component()
    done = []
    for name in capabilities_of(component):
        check = ABILITY_CHECKS.get(name)
        if check is not None:
            check(component, batch, pairs)
            done.append(name)
    return done
