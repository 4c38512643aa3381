"""One-permutation hashing with optimal densification (Shrivastava, ICML 2017)."""

from __future__ import annotations

import numpy as np
import pytest
from estimators import estimates, pairs_with_jaccard
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.components import Context
from er_framework.data import TokenSets
from er_framework.kernels import (
    EMPTY,
    band_keys,
    candidate_probability,
)
from er_framework.kernels.oph import oph_reference, oph_signatures, probe_bins
from er_framework.testing import check_signature_builder, sample_records
from er_plugins.documents import CharShingler
from er_plugins.oph import OnePermutationHash

SETS = st.lists(
    st.lists(st.integers(0, (1 << 64) - 1), max_size=12) | st.lists(st.integers(0, 40), max_size=40),
    max_size=8,
)


def _rows(ts: TokenSets) -> list[list[int]]:
    return [[int(x) for x in ts.row(i)] for i in range(len(ts))]


@settings(max_examples=150, deadline=None)
@given(SETS, st.integers(1, 40), st.integers(0, (1 << 64) - 1), st.integers(1, 64))
def test_fast_equals_reference(sets: list[list[int]], k: int, seed: int, chunk: int) -> None:
    ts = TokenSets.from_sets(sets)
    fast = oph_signatures(ts, k, seed, chunk_tokens=chunk)
    assert fast.dtype == np.uint32 and fast.shape == (len(sets), k)
    assert fast.tolist() == oph_reference(_rows(ts), k, seed)


def test_uint32_tokens_and_empty_rows() -> None:
    ts = TokenSets.from_sets([[], [1, 2, 3], [], [7]], dtype=np.uint32)
    sig = oph_signatures(ts, 16, 5)
    assert sig.tolist() == oph_reference(_rows(ts), 16, 5)
    assert np.all(sig[[0, 2]] == EMPTY) and not np.any(sig[[1, 3]] == EMPTY)
    assert np.all(sig[3] == sig[3, 0])  # one token: every bin copies it
    assert oph_signatures(TokenSets.from_sets([]), 8, 1).shape == (0, 8)


def test_probe_bins_in_range_and_seeded() -> None:
    p = probe_bins(100, 3, 1)
    assert p.min() >= 0 and p.max() < 100
    assert not np.array_equal(p, probe_bins(100, 4, 1)) and not np.array_equal(p, probe_bins(100, 3, 2))
    with pytest.raises(ValueError):
        oph_signatures(TokenSets.from_sets([[1]]), 0, 1)


def test_builder_meets_the_contract_and_uses_the_job_seed() -> None:
    ts = CharShingler().shingle(sample_records())
    sig = check_signature_builder(OnePermutationHash(OnePermutationHash.Params(num_perm=32)), ts)
    assert sig.kind == "minhash" and sig.values.shape == (len(ts), 32) and sig.values.dtype == np.uint32
    assert np.all(sig.values[sig.empty] == EMPTY)
    other = OnePermutationHash(OnePermutationHash.Params(num_perm=32), Context(seed=99)).build(ts)
    assert not np.array_equal(other.values, sig.values)
    own = OnePermutationHash(OnePermutationHash.Params(num_perm=32, seed=99), Context(seed=1)).build(ts)
    assert np.array_equal(own.values, other.values)
    assert OnePermutationHash.Params().num_perm == 128


# union sizes: far fewer tokens than K, fewer than K, a few per bin, many per bin
@pytest.mark.parametrize("union", [20, 60, 100, 1000])
def test_estimator_is_unbiased(union: int) -> None:
    for exact, e_oph, _ in estimates(oph_signatures, union, 600, 1000 + union):
        err = e_oph - exact
        se = err.std(ddof=1) / np.sqrt(len(err))
        assert abs(err.mean()) <= 4 * se + 1e-12, (union, exact, err.mean(), se)


# Sets whose union is far below K (|A ∪ B| = 20 for K = 128) are left out on
# purpose: there OPH's error is measurably larger than classic MinHash's (MSE
# ratio ~1.25-1.4 across J, pooled ~1.3), because all K positions share one
# partition of the few tokens into bins (bin collisions move every position
# at once), while classic MinHash draws K independent hash functions. It is
# still unbiased (test above).
@pytest.mark.parametrize("union", [60, 100, 1000])
def test_mse_no_worse_than_classic_minhash(union: int) -> None:
    res = estimates(oph_signatures, union, 600, 2000 + union)
    mse_oph = np.mean([np.mean((e - j) ** 2) for j, e, _ in res])
    mse_cls = np.mean([np.mean((c - j) ** 2) for j, _, c in res])
    assert mse_oph <= 1.2 * mse_cls, (union, mse_oph, mse_cls)


@pytest.mark.parametrize("union", [60, 1000])
def test_banding_follows_the_s_curve(union: int) -> None:
    bands, rows, m = 16, 8, 500
    rng = np.random.default_rng(3000 + union)
    left = np.arange(0, 2 * m, 2, dtype=np.int64)
    for jac in [0.3, 0.5, 0.6, 0.7, 0.8, 0.9]:
        ts, s = pairs_with_jaccard(rng, jac, union, m)
        keys = band_keys(oph_signatures(ts, bands * rows, 23), bands, rows)
        rate = np.mean(np.any(keys[left] == keys[left + 1], axis=1))
        p = float(candidate_probability(s, bands, rows))
        se = np.sqrt(p * (1 - p) / m)
        assert abs(rate - p) <= 4 * se + 1.5 / m, (union, s, rate, p, se)
