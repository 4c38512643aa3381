"""Document frequencies and pruning (``prune_shingles:``): the fast kernels against naive Python."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels.df import DocFreq, df_limits, drop_tokens, drop_tokens_reference, pruned_tokens

sets_strategy = st.lists(st.lists(st.integers(0, 40), max_size=15), max_size=25)


def _naive_df(rows: list[list[int]]) -> Counter[int]:
    return Counter(t for r in rows for t in set(r))


@settings(max_examples=150, deadline=None)
@given(rows=sets_strategy, chunk=st.integers(1, 7))
def test_doc_freq_counts_each_token_once_per_record_in_any_chunking(rows: list[list[int]], chunk: int) -> None:
    ts = TokenSets.from_sets(rows)
    freq = DocFreq()
    for a in range(0, len(rows), chunk):
        freq.add(ts.slice(a, min(len(rows), a + chunk)))
    tokens, df = freq.table()
    naive = _naive_df(rows)
    assert freq.records == len(rows)
    assert tokens.tolist() == sorted(naive)
    assert df.tolist() == [naive[t] for t in sorted(naive)]
    # merging partition tables gives the same table
    halves = [ts.slice(0, len(rows) // 2), ts.slice(len(rows) // 2, len(rows))]
    parts = []
    for h in halves:
        f = DocFreq()
        f.add(h)
        parts.append((*f.table(), f.records))
    merged = DocFreq.merge(parts)
    t2, d2 = merged.table()
    assert merged.records == len(rows) and t2.tolist() == tokens.tolist() and d2.tolist() == df.tolist()


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(st.integers(0, 30), max_size=20), max_size=20), drop=st.sets(st.integers(0, 35)))
def test_drop_tokens_matches_the_reference_on_sets_and_multisets(rows: list[list[int]], drop: set[int]) -> None:
    dropped = np.asarray(sorted(drop), dtype=np.uint64)
    sets = TokenSets.from_sets(rows)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    multisets = TokenSets(indptr, np.asarray([t for r in rows for t in r], dtype=np.uint64))
    for ts, is_set in ((sets, True), (multisets, False)):
        want, want_lost = drop_tokens_reference(ts, dropped)
        for kwargs in ({}, {"sets": is_set}, {"workers": 2, "block_tokens": 7}, {"block_tokens": 1, "sets": is_set}):
            got, lost = drop_tokens(ts, dropped, **kwargs)  # type: ignore[arg-type]
            assert got.equals(want), kwargs
            assert lost.tolist() == want_lost.tolist(), kwargs  # distinct tokens lost, also for a multiset's repeats


def test_df_limits_share_and_count() -> None:
    assert df_limits(100, 0.05, None) == (5, 1)
    assert df_limits(100, 50, None) == (50, 1)
    assert df_limits(10, 0.01, None) == (1, 1)  # a share never rounds to 0 records
    assert df_limits(100, None, 2) == (None, 2)
    assert df_limits(100, None, 0.015) == (None, 2)  # 1.5 records: at least 2
    assert df_limits(100, 1.0, None) == (100, 1)  # every record: nothing is above
    assert df_limits(40, 0.05, None, max_df_floor=10) == (10, 1)  # a share never limits below the floor
    assert df_limits(1000, 0.05, None, max_df_floor=10) == (50, 1)
    assert df_limits(40, 3, None, max_df_floor=10) == (3, 1)  # a count is taken as given


def test_pruned_tokens_by_both_limits() -> None:
    tokens = np.array([1, 2, 3, 4, 5], dtype=np.uint64)
    df = np.array([1, 2, 3, 9, 10], dtype=np.int64)
    assert pruned_tokens(tokens, df, 8, 1).tolist() == [4, 5]
    assert pruned_tokens(tokens, df, None, 2).tolist() == [1]
    assert pruned_tokens(tokens, df, 8, 3).tolist() == [1, 2, 4, 5]


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_tiny_inputs(n: int) -> None:
    ts = TokenSets.from_sets([[1, 2]] * n)
    freq = DocFreq()
    freq.add(ts)
    tokens, df = freq.table()
    assert len(tokens) == (2 if n else 0) and freq.records == n
    got, lost = drop_tokens(ts, np.array([2], dtype=np.uint64))
    assert got.tokens.tolist() == ([1] if n else []) and lost.tolist() == [1] * n
