"""Fast Similarity Sketching (Dahlgaard, Knudsen, Thorup, FOCS 2017)."""

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
from er_framework.kernels.fss import (
    fss_reference,
    fss_reference_with_rounds,
    fss_salts,
    fss_signatures,
    fss_signatures_with_rounds,
)
from er_framework.kernels.oph import oph_salts, oph_signatures
from er_framework.testing import check_signature_builder, sample_records
from er_plugins.documents import CharShingler
from er_plugins.oph import FastSimilaritySketch

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
    fast, rounds = fss_signatures_with_rounds(ts, k, seed, chunk_tokens=chunk)
    assert fast.dtype == np.uint32 and fast.shape == (len(sets), k)
    ref, ref_rounds = fss_reference_with_rounds(_rows(ts), k, seed)
    assert fast.tolist() == ref
    assert rounds.tolist() == ref_rounds
    assert np.array_equal(fss_signatures(ts, k, seed, chunk_tokens=chunk), fast)


def test_reference_is_the_smallest_pair_over_all_2k_rounds() -> None:
    """The early stop of the oracle changes nothing: brute force over every round."""
    from er_framework.kernels.hashing import mix64_reference

    rng = np.random.default_rng(5)
    for k in (1, 2, 3, 8, 13):
        sets = [[int(x) for x in rng.integers(0, 1 << 63, size=n)] for n in (0, 1, 2, 3, 9, 30)]
        for seed in (0, 7):
            brute = []
            for s in sets:
                best: list[tuple[int, int]] = [(1 << 40, int(EMPTY))] * k
                for r in range(2 * k):
                    a, b = fss_salts(seed, r)
                    for x in s:
                        h = mix64_reference(x ^ a)
                        j = ((h >> 32) * k) >> 32 if r < k else r - k
                        best[j] = min(best[j], (r, ((mix64_reference(h ^ b) & 0xFFFFFFFF) * 0xFFFFFFFF) >> 32))
                brute.append([v for _, v in best])
            assert fss_reference(sets, k, seed) == brute


def test_uint32_tokens_and_empty_rows() -> None:
    ts = TokenSets.from_sets([[], [1, 2, 3], [], [7]], dtype=np.uint32)
    sig, rounds = fss_signatures_with_rounds(ts, 16, 5)
    assert sig.tolist() == fss_reference(_rows(ts), 16, 5)
    assert np.all(sig[[0, 2]] == EMPTY) and not np.any(sig[[1, 3]] == EMPTY)
    assert rounds[0] == rounds[2] == 0
    assert rounds[3] > 16  # one token: bins are filled one by one, ending in phase 2
    assert len(set(sig[3].tolist())) > 1  # ... with fresh values, not copies of one bin
    assert fss_signatures(TokenSets.from_sets([]), 8, 1).shape == (0, 8)
    with pytest.raises(ValueError):
        fss_signatures(TokenSets.from_sets([[1]]), 0, 1)
    with pytest.raises(ValueError):
        fss_signatures(TokenSets.from_sets([[1]]), 8, 1, chunk_tokens=0)


def test_duplicate_tokens_in_a_row_give_the_set_signature() -> None:
    """A duplicated token ties with itself in every bin; the result is still the set's."""
    rng = np.random.default_rng(11)
    rows = [rng.integers(0, 30, size=n).tolist() for n in (0, 1, 3, 5, 12, 40, 200)]
    indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    ts = TokenSets(indptr, np.array([x for r in rows for x in r], dtype=np.uint64))
    for k in (4, 16, 37):
        sig, rounds = fss_signatures_with_rounds(ts, k, 3)
        ref, ref_rounds = fss_reference_with_rounds([sorted(set(r)) for r in rows], k, 3)
        assert sig.tolist() == ref and rounds.tolist() == ref_rounds


def test_chunking_does_not_change_the_output() -> None:
    rng = np.random.default_rng(9)
    sizes = rng.choice([0, 1, 2, 5, 20, 150, 2000], size=120)
    sets = [rng.integers(0, 1 << 63, size=n, dtype=np.uint64) for n in sizes]
    ts = TokenSets.from_sets(sets)
    whole, rounds = fss_signatures_with_rounds(ts, 64, 4)
    assert not np.any(whole[sizes > 0] == EMPTY) and np.all(whole[sizes == 0] == EMPTY)
    for chunk in (1, 7, 500, 4096, 1 << 30):
        part, part_rounds = fss_signatures_with_rounds(ts, 64, 4, chunk_tokens=chunk)
        assert np.array_equal(part, whole) and np.array_equal(part_rounds, rounds), chunk
    assert np.array_equal(whole[:3], fss_signatures(ts.take(np.arange(3)), 64, 4))


def test_salts_extend_oph_and_are_distinct() -> None:
    assert fss_salts(123, 0) == oph_salts(123)[:2]  # round 0 is OPH's hashing
    k = 300
    salts = [s for r in range(2 * k) for s in fss_salts(42, r)]
    assert len(set(salts)) == len(salts)
    assert fss_salts(42, 1) != fss_salts(43, 1)
    with pytest.raises(ValueError):
        fss_salts(1, -1)


def test_long_sets_take_one_round_and_equal_oph() -> None:
    """|S| >> K ln K: round 0 leaves no bin empty, so FSS costs and is OPH (no densification)."""
    rng = np.random.default_rng(21)
    sets = [rng.integers(0, 1 << 63, size=int(n), dtype=np.uint64) for n in rng.integers(2500, 4000, size=60)]
    ts = TokenSets.from_sets(sets)
    sig, rounds = fss_signatures_with_rounds(ts, 128, 8)
    assert np.all(rounds == 1)
    assert np.array_equal(sig, oph_signatures(ts, 128, 8))


def test_rounds_follow_the_coupon_collector() -> None:
    """Phase 1 throws n independent uniform balls per round: a set is done after
    ceil(T / n) rounds, T the coupon-collector time of K bins (E[T] = K H_K),
    so K H_K / n <= E[rounds] <= K H_K / n + 1; short sets stop long before 2K."""
    rng = np.random.default_rng(22)
    k = 128
    kh = k * sum(1 / i for i in range(1, k + 1))
    for n in (20, 150):
        ts = TokenSets.from_sets([rng.integers(0, 1 << 63, size=n, dtype=np.uint64) for _ in range(400)])
        _, rounds = fss_signatures_with_rounds(ts, k, 1)
        se = rounds.std(ddof=1) / np.sqrt(len(rounds))
        assert kh / n - 4 * se <= rounds.mean() <= kh / n + 1 + 4 * se, (n, rounds.mean(), kh / n, se)
        assert rounds.max() < k


def test_builder_meets_the_contract_and_uses_the_job_seed() -> None:
    ts = CharShingler().shingle(sample_records())
    sig = check_signature_builder(FastSimilaritySketch(FastSimilaritySketch.Params(num_perm=32)), ts)
    assert sig.kind == "minhash" and sig.values.shape == (len(ts), 32) and sig.values.dtype == np.uint32
    assert sig.empty is not None
    assert np.all(sig.values[sig.empty] == EMPTY) and not np.any(sig.values[~sig.empty] == EMPTY)
    assert sig.meta["scheme"] == "fast-similarity-sketching"
    other = FastSimilaritySketch(FastSimilaritySketch.Params(num_perm=32), Context(seed=99)).build(ts)
    assert not np.array_equal(other.values, sig.values)
    own = FastSimilaritySketch(FastSimilaritySketch.Params(num_perm=32, seed=99), Context(seed=1)).build(ts)
    assert np.array_equal(own.values, other.values)
    assert FastSimilaritySketch.Params().num_perm == 128
    assert FastSimilaritySketch.name == "fss"


# union sizes: far fewer tokens than K, fewer than K, a few per bin, many per bin
@pytest.mark.parametrize("union", [20, 60, 100, 1000])
def test_estimator_is_unbiased(union: int) -> None:
    for exact, e_fss, _ in estimates(fss_signatures, union, 600, 1000 + union):
        err = e_fss - exact
        se = err.std(ddof=1) / np.sqrt(len(err))
        assert abs(err.mean()) <= 4 * se + 1e-12, (union, exact, err.mean(), se)


# Including |A ∪ B| = 20 << K = 128, where OPH with densification is ~1.3x
# classic MinHash (tests/kernels/test_oph.py). Measured FSS / classic MSE
# ratios (pooled over J): ~0.5 for unions 20, 60 and 100 (every token fills
# about K / |A ∪ B| bins, evenly: fewer repeats than K independent minima),
# ~0.9 for 1000 (there FSS is OPH: bins sample the union without replacement).
@pytest.mark.parametrize("union", [20, 60, 100, 1000])
def test_mse_no_worse_than_classic_minhash(union: int) -> None:
    res = estimates(fss_signatures, union, 600, 2000 + union)
    mse_fss = np.mean([np.mean((e - j) ** 2) for j, e, _ in res])
    mse_cls = np.mean([np.mean((c - j) ** 2) for j, _, c in res])
    assert mse_fss <= 1.2 * mse_cls, (union, mse_fss, mse_cls)


@pytest.mark.parametrize("union", [20, 60, 1000])
def test_banding_follows_the_s_curve(union: int) -> None:
    bands, rows, m = 16, 8, 500
    rng = np.random.default_rng(3000 + union)
    left = np.arange(0, 2 * m, 2, dtype=np.int64)
    for jac in [0.3, 0.5, 0.6, 0.7, 0.8, 0.9]:
        ts, s = pairs_with_jaccard(rng, jac, union, m)
        keys = band_keys(fss_signatures(ts, bands * rows, 23), bands, rows)
        rate = np.mean(np.any(keys[left] == keys[left + 1], axis=1))
        p = float(candidate_probability(s, bands, rows))
        se = np.sqrt(p * (1 - p) / m)
        assert abs(rate - p) <= 4 * se + 1.5 / m, (union, s, rate, p, se)
