"""The helpers the contract checks share (er_framework.testing_support)."""

from __future__ import annotations

import numpy as np
import pytest

from er_framework.data import Batch, Pairs
from er_framework.testing_support import (
    as_tuples,
    check_cross_source,
    check_pairs_contract,
    empty_batch,
    inactive_batch,
    instance_of,
    same_pairs,
    sample_graph,
    sample_records,
    shown,
)
from er_plugins.documents import CharShingler


def test_sample_data() -> None:
    recs = sample_records("body", n_sources=2)
    assert list(recs.fields) == ["body"] and set(recs.source.tolist()) == {0, 1}
    n, pairs = sample_graph()
    assert n == 15 and pairs.is_normalized() and pairs.score is not None


def test_batches_with_inactive_rows_and_without_rows() -> None:
    batch = Batch(records=sample_records())
    kept, sub = inactive_batch(batch)
    assert kept.tolist() == [i for i in range(len(batch)) if i % 3] and sub.active is not None
    assert sub.active.tolist() == kept.tolist() and len(sub) == len(kept)
    empty = empty_batch(batch)
    assert len(empty) == 0 and empty.active is not None and len(empty.active) == 0


def test_instance_of_and_messages() -> None:
    assert isinstance(instance_of(CharShingler, CharShingler), CharShingler)
    with pytest.raises(AssertionError, match="is not a"):
        instance_of(CharShingler(), Pairs)  # type: ignore[arg-type]
    p = Pairs(np.arange(7), np.arange(1, 8))
    assert as_tuples(p)[:2] == [(0, 1), (1, 2)] and same_pairs(p, p)
    assert shown(as_tuples(p)).endswith("(and 2 more)")


def test_the_candidates_contract_rule_by_rule() -> None:
    check_pairs_contract(Pairs(np.array([0, 0]), np.array([1, 2])), 3, "x")
    with pytest.raises(AssertionError, match="left >= right"):
        check_pairs_contract(Pairs(np.array([1]), np.array([0])), 3, "x")
    batch = Batch(records=sample_records(n_sources=2), cross_source_only=True)
    with pytest.raises(AssertionError, match="same source in link mode"):
        check_cross_source(Pairs(np.array([0]), np.array([2])), batch, "x")
