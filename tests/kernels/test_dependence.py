"""Tests of er_framework.kernels.dependence against naive Python.

* agreeing_pairs / agreement_share equal a count over every pair of records (dedup and cross-source);
* keyed_counts and merge_keyed: parts summed equal the whole;
* value_keys are stable and distinct; combined_keys tell value pairs apart;
* dependence_terms equals a per-pattern loop of the chain rule.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from er_framework.kernels.dependence import (
    agreeing_pairs,
    agreement_share,
    combined_keys,
    dependence_correction,
    dependence_terms,
    keyed_counts,
    merge_keyed,
    value_keys,
    value_keys_reference,
)


def _records(seed: int, n: int = 300):
    rng = np.random.default_rng(seed)
    a = [None if rng.random() < 0.1 else f"a{int(x)}" for x in rng.integers(0, 12, n)]
    b = [None if rng.random() < 0.1 else f"b{int(x)}" for x in rng.integers(0, 5, n)]
    src = rng.integers(0, 3, n).astype(np.int32)
    return a, b, src


def _keys(values):
    present = np.array([v is not None for v in values])
    keys = np.zeros(len(values), dtype=np.uint64)
    keys[present] = value_keys([v for v in values if v is not None])
    return keys, present


def _naive(values, src, cross):
    agree = total = 0
    for i, j in itertools.combinations(range(len(values)), 2):
        if values[i] is None or values[j] is None or (cross and src[i] == src[j]):
            continue
        total += 1
        agree += values[i] == values[j]
    return agree, total


@pytest.mark.parametrize("cross", [False, True])
def test_agreeing_pairs_and_share_equal_a_count_over_every_pair(cross):
    a, b, src = _records(1)
    for values in (a, [x if y is not None and x is not None else None for x, y in zip(a, b)]):
        keys, present = _keys(values)
        counted = keyed_counts(keys, present, src)
        agree, total = _naive(values, src, cross)
        assert agreeing_pairs(counted, cross) == agree
        assert agreement_share(counted, cross) == pytest.approx(agree / total, rel=1e-12)
    # two fields at once: the pair of values as one key
    ka, pa = _keys(a)
    kb, pb = _keys(b)
    joint = keyed_counts(combined_keys(ka, kb), pa & pb, src)
    both = [(x, y) if x is not None and y is not None else None for x, y in zip(a, b)]
    assert agreeing_pairs(joint, cross) == _naive(both, src, cross)[0]


def test_parts_summed_equal_the_whole():
    a, _, src = _records(2, 500)
    keys, present = _keys(a)
    whole = keyed_counts(keys, present, src)
    cut = [0, 120, 121, 400, 500]
    parts = [keyed_counts(keys[x:y], present[x:y], src[x:y]) for x, y in zip(cut, cut[1:])]
    merged = merge_keyed(parts)
    for got, want in zip(merged, whole):
        np.testing.assert_array_equal(got, want)
    assert agreeing_pairs(merge_keyed([]), False) == 0.0 and agreement_share(merge_keyed([]), True) == 0.0


def test_value_keys_are_stable_and_tell_values_apart():
    vals = ["smith", "Smith", "smïth", "", "smith "]
    keys = value_keys(vals)
    assert len(set(keys.tolist())) == len(vals)
    np.testing.assert_array_equal(keys, value_keys(vals))  # blake2b: the same in every process
    k = value_keys(["x", "y"])
    assert combined_keys(k[:1], k[1:])[0] != combined_keys(k[1:], k[:1])[0]


def _naive_terms(patterns, log_lift, order):
    out = np.zeros(patterns.shape)
    for p, pat in enumerate(patterns):
        seen = []
        for g in order:
            before = [f for f in seen if pat[f] == 0]
            if pat[g] == 0 and before:
                out[p, g] = max(log_lift[f, g] for f in before)
            seen.append(g)
    return out


def test_dependence_terms_equal_the_chain_rule_per_pattern():
    rng = np.random.default_rng(3)
    F = 5
    lift = np.triu(rng.random((F, F)) * 3 * (rng.random((F, F)) < 0.6), 1)
    lift = lift + lift.T
    order = [3, 0, 4, 1, 2]
    patterns = rng.integers(-1, 3, size=(400, F))
    got = dependence_terms(patterns, lift, order)
    np.testing.assert_allclose(got, _naive_terms(patterns, lift, order))
    np.testing.assert_allclose(dependence_correction(patterns, lift, order), got.sum(axis=1))
    # the rarest agreeing field keeps its weight; no dependence, nothing lost
    assert np.all(got[:, order[0]] == 0)
    assert not dependence_terms(patterns, np.zeros((F, F)), order).any()


def test_value_keys_equal_their_reference():
    rng = np.random.default_rng(9)
    alphabet = list("abcé ☃\x00z")
    vals = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 12)))) for _ in range(500)]
    vals += ["x" * 300, "y" * 300, "", "a", "a\x00"]
    np.testing.assert_array_equal(value_keys(vals), value_keys_reference(vals))
    keys = value_keys(vals)
    distinct = {v: k for v, k in zip(vals, keys.tolist())}
    assert len(set(distinct.values())) == len(distinct)  # different texts, different keys
    assert len(value_keys([])) == 0


@pytest.mark.parametrize("n_sources", [1, 2, 5, 300])
def test_keyed_counts_equal_a_naive_count_per_key_and_source(n_sources):
    """Counts per (key, source), sorted by key then source, for one source, a few (the source folded into
    the key's low bits) and more than SOURCE_BITS allow (a lexsort); the keys as given, low bits cleared."""
    from er_framework.kernels.dependence import SOURCE_BITS

    rng = np.random.default_rng(n_sources)
    keys = rng.integers(0, 2**63, 40, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    keys = keys[rng.integers(0, 40, 3000)]
    src = rng.integers(0, n_sources, 3000).astype(np.int32)
    present = rng.random(3000) < 0.9
    got_k, got_s, got_c = keyed_counts(keys, present, src)
    bits = max(1, (n_sources - 1).bit_length())
    mask = np.uint64((1 << bits) - 1) if bits <= SOURCE_BITS else np.uint64(0)
    want: dict[tuple[int, int], int] = {}
    for k, s, ok in zip(keys.tolist(), src.tolist(), present.tolist()):
        if ok:
            key = (int(np.uint64(k) & ~mask), s)
            want[key] = want.get(key, 0) + 1
    assert list(zip(got_k.tolist(), got_s.tolist())) == sorted(want)
    assert got_c.tolist() == [want[x] for x in sorted(want)]
