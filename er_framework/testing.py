"""Contract checks a plugin author runs on a new component.

    from er_framework.testing import check_shingler, sample_records

    def test_my_shingler():
        check_shingler(MyShingler(), sample_records())

Each check asserts the batch contract of the design: shapes and dtypes, the
empty batch, determinism (same input -> identical output), and batch-split
invariance (shingling or signing two halves and concatenating gives the
same result as the whole batch). They raise ``AssertionError`` with a message
saying which rule broke.
"""

from __future__ import annotations

import numpy as np

from er_framework.components import Blocker, Shingler, SignatureBuilder, Verifier
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets

__all__ = [
    "sample_records",
    "check_shingler",
    "check_signature_builder",
    "check_blocker",
    "check_verifier",
]

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


def sample_records(field: str = "text", n_sources: int = 1) -> Records:
    """Varied small records (empty, one character, Unicode, duplicates)."""
    n = len(_TEXTS)
    return Records(
        ids=[f"r{i}" for i in range(n)],
        source=np.arange(n, dtype=np.int32) % n_sources,
        source_names=[f"s{i}" for i in range(n_sources)],
        fields={field: list(_TEXTS)},
    )


def _check_tokens(ts: TokenSets, n: int, who: str) -> None:
    assert isinstance(ts, TokenSets), f"{who} must return TokenSets, got {type(ts).__name__}"
    assert len(ts) == n, f"{who} returned {len(ts)} rows for {n} records"
    assert ts.indptr.dtype == np.int64, f"{who}: indptr must be int64, got {ts.indptr.dtype}"
    assert ts.tokens.dtype in (np.uint64, np.uint32), f"{who}: tokens must be uint64/uint32, got {ts.tokens.dtype}"
    assert np.all(np.diff(ts.indptr) >= 0), f"{who}: indptr must be non-decreasing"
    for i in range(n):
        row = ts.row(i)
        assert np.all(row[1:] > row[:-1]), f"{who}: row {i} is not sorted and unique"


def check_shingler(shingler: Shingler, records: Records | None = None) -> TokenSets:
    """Shapes/dtypes, sorted unique rows, empty batch, determinism, split invariance."""
    records = records if records is not None else sample_records()
    who = f"shingler {shingler.name!r}"
    ts = shingler.shingle(records)
    _check_tokens(ts, len(records), who)
    empty = shingler.shingle(records.take(np.zeros(0, dtype=np.int64)))
    _check_tokens(empty, 0, who + " (empty batch)")
    assert shingler.shingle(records).equals(ts), f"{who} is not deterministic"
    half = len(records) // 2
    parts = TokenSets.concat(
        [shingler.shingle(records.take(np.arange(half))), shingler.shingle(records.take(np.arange(half, len(records))))]
    )
    assert parts.equals(ts), f"{who}: shingling two halves differs from shingling the whole batch"
    return ts


def check_signature_builder(builder: SignatureBuilder, tokens: TokenSets) -> Signatures:
    """2-D signatures, one row per set, deterministic, split-invariant, empty sets flagged."""
    who = f"signature builder {builder.name!r}"
    sig = builder.build(tokens)
    assert isinstance(sig, Signatures), f"{who} must return Signatures"
    assert sig.values.shape[0] == len(tokens), f"{who}: {sig.values.shape[0]} rows for {len(tokens)} sets"
    assert sig.values.dtype in (np.uint32, np.uint64), f"{who}: values must be uint32/uint64, got {sig.values.dtype}"
    assert sig.empty is not None and np.array_equal(sig.empty, tokens.sizes == 0), f"{who}: 'empty' must flag empty sets"
    again = builder.build(tokens)
    assert np.array_equal(again.values, sig.values), f"{who} is not deterministic"
    half = len(tokens) // 2
    a = builder.build(tokens.take(np.arange(half)))
    b = builder.build(tokens.take(np.arange(half, len(tokens))))
    assert np.array_equal(np.concatenate([a.values, b.values]), sig.values), f"{who}: not batch-split invariant"
    e = builder.build(tokens.take(np.zeros(0, dtype=np.int64)))
    assert e.values.shape[0] == 0, f"{who}: empty batch must give 0 rows"
    return sig


def _check_pairs(p: Pairs, n: int, who: str) -> None:
    assert isinstance(p, Pairs), f"{who} must return Pairs"
    assert p.left.dtype == np.int64 and p.right.dtype == np.int64, f"{who}: pairs must be int64"
    assert p.is_normalized(), f"{who}: pairs must be unique, left < right, sorted"
    if len(p):
        assert p.left.min() >= 0 and p.right.max() < n, f"{who}: pair index out of range"


def check_blocker(blocker: Blocker, batch: Batch) -> Pairs:
    """Normalized int64 pairs in range, deterministic, cross-source only in link mode."""
    who = f"blocker {blocker.name!r}"
    pairs = blocker.candidates(batch)
    _check_pairs(pairs, len(batch), who)
    again = blocker.candidates(batch)
    assert np.array_equal(again.left, pairs.left) and np.array_equal(again.right, pairs.right), f"{who} is not deterministic"
    if batch.cross_source_only and len(pairs):
        src = batch.records.source
        assert np.all(src[pairs.left] != src[pairs.right]), f"{who}: same-source pair in link mode"
    return pairs


def check_verifier(verifier: Verifier, batch: Batch, pairs: Pairs) -> np.ndarray:
    """One finite float64 score per pair, symmetric in (left, right), empty input allowed."""
    who = f"verifier {verifier.name!r}"
    scores = np.asarray(verifier.score(batch, pairs))
    assert scores.shape == (len(pairs),), f"{who}: {scores.shape} scores for {len(pairs)} pairs"
    assert np.all(np.isfinite(scores)), f"{who}: scores must be finite"
    swapped = np.asarray(verifier.score(batch, Pairs(pairs.right, pairs.left)))
    assert np.allclose(swapped, scores), f"{who}: score(a, b) != score(b, a)"
    empty = np.asarray(verifier.score(batch, Pairs.empty()))
    assert empty.shape == (0,), f"{who}: empty pairs must give 0 scores"
    return scores
