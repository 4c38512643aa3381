"""Tests of er_framework.kernels.records_bounds: the bag-of-characters bounds used to skip comparisons.

* the signatures are the per-bucket character counts of a naive loop, and the
  byte-sum overlap equals a naive ``sum(min(...))`` over the buckets;
* the bucketed overlap is never below the exact multiset intersection
  (:func:`bag_overlap_reference`), which is never below the longest common
  subsequence;
* every bound is at least rapidfuzz's score, on random, near and equal strings
  (the property that makes skipping a pair exact);
* values that are not ASCII, empty or longer than 255 characters are
  ``exact_only``.
"""

from __future__ import annotations

import random
import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, LCSseq, Levenshtein

from er_framework.kernels.records_bounds import (
    BOUNDED_SCORERS,
    MAX_SIG_LENGTH,
    SIG_BUCKETS,
    bag_overlap,
    bag_overlap_reference,
    bag_signatures,
    char_buckets,
    similarity_upper_bound,
    similarity_upper_bound_reference,
)


def _buffers(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    raw = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(r) for r in raw])
    return np.frombuffer(b"".join(raw), dtype=np.uint8).copy(), offsets


def _naive_signatures(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    data, _ = _buffers(values)
    table = char_buckets(np.bincount(data, minlength=256))
    sig = np.zeros((len(values), SIG_BUCKETS), dtype=np.int64)
    exact = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        if not v or not v.isascii() or len(v) > MAX_SIG_LENGTH:
            exact[i] = True
            continue
        for ch in v:
            sig[i, table[ord(ch)]] += 1
    return sig, exact


def _words(rng: random.Random, k: int) -> list[str]:
    alphabet = string.ascii_lowercase + string.digits + " .-@"
    out = []
    for _ in range(k):
        n = rng.choice([0, 1, 2, 5, 10, 20, 40, 80])
        out.append("".join(rng.choice(alphabet) for _ in range(n)))
    out += ["", "é", "naïve café", "日本", "x" * 255, "y" * 256, "a" * 300, "\x7f\x00\x01"]
    return out


def test_signatures_and_overlap_equal_naive_loops() -> None:
    rng = random.Random(5)
    values = _words(rng, 400)
    data, offsets = _buffers(values)
    bs = bag_signatures(data, offsets)
    sig, exact = _naive_signatures(values)
    assert np.array_equal(bs.exact_only, exact)
    assert np.array_equal(bs.sig[~exact].astype(np.int64), sig[~exact])
    assert np.array_equal(bs.lengths, np.diff(offsets))
    a = np.array([rng.randrange(len(values)) for _ in range(3000)])
    b = np.array([rng.randrange(len(values)) for _ in range(3000)])
    ok = ~(exact[a] | exact[b])
    got = bag_overlap(bs.sig, a[ok], b[ok])
    want = np.minimum(sig[a[ok]], sig[b[ok]]).sum(axis=1)
    assert np.array_equal(got, want)
    # bucketed >= exact multiset intersection >= LCS
    for x, y, g in zip(a[ok].tolist(), b[ok].tolist(), got.tolist()):
        exact_bag = bag_overlap_reference(values[x], values[y])
        assert g >= exact_bag >= LCSseq.similarity(values[x], values[y])


def test_signatures_in_small_chunks_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    import er_framework.kernels.records_bounds as rb

    values = _words(random.Random(2), 300)
    data, offsets = _buffers(values)
    whole = bag_signatures(data, offsets)
    monkeypatch.setattr(rb, "CHUNK_BYTES", 7)
    parts = bag_signatures(data, offsets)
    assert np.array_equal(whole.sig, parts.sig) and np.array_equal(whole.exact_only, parts.exact_only)
    # a sliced buffer (offsets not starting at 0)
    sub = bag_signatures(data, offsets[10:])
    assert np.array_equal(sub.exact_only, whole.exact_only[10:])


def test_empty_input() -> None:
    bs = bag_signatures(np.zeros(0, np.uint8), np.zeros(1, np.int64))
    assert bs.sig.shape == (0, SIG_BUCKETS) and len(bs.lengths) == 0
    assert len(bag_overlap(bs.sig, np.zeros(0, np.int64), np.zeros(0, np.int64))) == 0


def _score(scorer: str, a: str, b: str) -> float:
    if scorer == "ratio":
        return float(fuzz.ratio(a, b))
    if scorer == "levenshtein":
        return 100.0 * Levenshtein.normalized_similarity(a, b)
    return 100.0 * JaroWinkler.normalized_similarity(a, b)


def _mutate(rng: random.Random, s: str) -> str:
    chars = list(s)
    for _ in range(rng.randrange(0, 4)):
        op = rng.randrange(3)
        pos = rng.randrange(len(chars) + 1)
        if op == 0:
            chars.insert(pos, rng.choice(string.ascii_lowercase))
        elif chars and op == 1:
            del chars[min(pos, len(chars) - 1)]
        elif chars:
            chars[min(pos, len(chars) - 1)] = rng.choice(string.ascii_lowercase)
    return "".join(chars)


@pytest.mark.parametrize("scorer", sorted(BOUNDED_SCORERS))
def test_bounds_are_never_below_the_score(scorer: str) -> None:
    rng = random.Random(11)
    base = [w for w in _words(rng, 300) if w and w.isascii() and len(w) <= MAX_SIG_LENGTH]
    pairs = [(x, rng.choice(base)) for x in base] + [(x, _mutate(rng, x)) for x in base] + [(x, x) for x in base]
    pairs = [(x, y) for x, y in pairs if x and y]
    values = list(dict.fromkeys(v for p in pairs for v in p))
    pos = {v: i for i, v in enumerate(values)}
    bs = bag_signatures(*_buffers(values))
    a = np.array([pos[x] for x, _ in pairs])
    b = np.array([pos[y] for _, y in pairs])
    ub = similarity_upper_bound(scorer, bag_overlap(bs.sig, a, b), bs.lengths[a], bs.lengths[b])
    for (x, y), bound in zip(pairs, ub.tolist()):
        s = _score(scorer, x, y)
        assert bound >= s - 1e-9, (scorer, x, y, bound, s)
        assert similarity_upper_bound_reference(scorer, x, y) >= s - 1e-9
        assert bound >= similarity_upper_bound_reference(scorer, x, y) - 1e-9  # buckets only loosen it


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=string.ascii_letters + string.digits + " -", min_size=1, max_size=30),
    st.text(alphabet=string.ascii_letters + string.digits + " -", min_size=1, max_size=30),
)
def test_bound_property(x: str, y: str) -> None:
    values = list(dict.fromkeys([x, y]))
    bs = bag_signatures(*_buffers(values))
    a, b = np.array([0]), np.array([values.index(y)])
    bag = bag_overlap(bs.sig, a, b)
    for scorer in sorted(BOUNDED_SCORERS):
        bound = float(similarity_upper_bound(scorer, bag, bs.lengths[a], bs.lengths[b])[0])
        assert bound >= _score(scorer, x, y) - 1e-9


def test_unknown_scorer() -> None:
    with pytest.raises(ValueError, match="no bound"):
        similarity_upper_bound("partial_ratio", np.zeros(1), np.ones(1), np.ones(1))
