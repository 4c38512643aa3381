"""Token hashing: fast kernels against the pure-Python reference definitions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.data import TokenSets
from er_framework.kernels import (
    char_shingles,
    char_shingles_reference,
    codepoints,
    hash_string_reference,
    hash_strings,
    mix64,
    mix64_reference,
    word_ngrams,
    word_ngrams_reference,
)
from er_framework.kernels.hashing import mix64_inplace

REPO = Path(__file__).resolve().parents[2]

# Small alphabet (many repeated shingles) mixed with astral-plane and odd characters.
CHARS = st.one_of(
    st.sampled_from(list("ab c")),
    st.sampled_from(["é", "ß", "\x00", "😀", "𝔘", "\U0010ffff", "\uffff"]),
    st.characters(),
)
TEXTS = st.lists(st.text(CHARS, max_size=14), max_size=7)
WORDY = st.lists(
    st.lists(st.sampled_from(["a", "b", "cc", "dé", "😀x", "z"]), max_size=7).map(" , ".join),
    max_size=6,
)


def as_lists(ts: TokenSets) -> list[list[int]]:
    return [[int(x) for x in ts.row(i)] for i in range(len(ts))]


def assert_csr_invariants(ts: TokenSets, n: int) -> None:
    assert len(ts) == n
    assert ts.tokens.dtype == np.uint64
    for i in range(n):
        row = ts.row(i)
        assert np.all(row[1:] > row[:-1]), "rows must be sorted and unique"


def test_mix64_matches_reference_and_known_values() -> None:
    xs = [0, 1, 2, 0xFFFFFFFFFFFFFFFF, 0x9E3779B97F4A7C15, 123456789]
    got = mix64(np.array(xs, dtype=np.uint64))
    assert [int(v) for v in got] == [mix64_reference(x) for x in xs]
    assert int(got[0]) == 0  # mix64(0) = 0 (a fixed point of the finalizer)
    # splitmix64's first output for seed 0 is mix64(0x9E3779B97F4A7C15) = 0xE220A8397B1DCDAF
    assert int(got[4]) == 0xE220A8397B1DCDAF


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), max_size=20))
def test_mix64_property(xs: list[int]) -> None:
    got = mix64(np.array(xs, dtype=np.uint64))
    assert [int(v) for v in got] == [mix64_reference(x) for x in xs]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), max_size=20))
def test_mix64_inplace_equals_mix64(xs: list[int]) -> None:
    x = np.array(xs, dtype=np.uint64)
    want = [mix64_reference(v) for v in xs]
    h = x.copy()
    got = mix64_inplace(h)
    assert got is h and [int(v) for v in got] == want  # mixed where it is
    ro = x.copy()
    ro.flags.writeable = False
    assert [int(v) for v in mix64_inplace(ro)] == want and [int(v) for v in ro] == xs  # read-only: a copy
    assert [int(v) for v in mix64_inplace(x.astype(np.int64) if xs and max(xs) < 2**63 else x)] == want


def test_codepoints_astral_and_offsets() -> None:
    cps, off = codepoints(["a😀", "", "é"])
    assert cps.dtype == np.uint32 and off.dtype == np.int64
    assert cps.tolist() == [ord("a"), 0x1F600, 0xE9]
    assert off.tolist() == [0, 2, 2, 3]
    cps, off = codepoints([])
    assert len(cps) == 0 and off.tolist() == [0]


def test_hash_string_definition() -> None:
    # poly("ab") = (ord(a)+1)*B + (ord(b)+1); hash = mix64(poly + 2)
    b = 0x100000001B3
    poly = (98 * b + 99) % (1 << 64)
    assert hash_string_reference("ab") == mix64_reference(poly + 2)
    assert int(hash_strings(["ab"])[0]) == mix64_reference(poly + 2)
    assert int(hash_strings([""])[0]) == 0
    assert hash_strings([]).dtype == np.uint64 and len(hash_strings([])) == 0


@settings(max_examples=60, deadline=None)
@given(TEXTS)
def test_hash_strings_matches_reference(texts: list[str]) -> None:
    got = hash_strings(texts)
    assert got.dtype == np.uint64
    assert [int(v) for v in got] == [hash_string_reference(t) for t in texts]


def test_abcab_k2() -> None:
    ts = char_shingles(["abcab"], 2)
    assert len(ts.tokens) == 3
    assert sorted(int(x) for x in ts.tokens) == sorted(int(x) for x in hash_strings(["ab", "bc", "ca"]))


def test_short_and_empty_texts() -> None:
    ts = char_shingles(["", "ab", "abc", "😀"], 3)
    assert ts.sizes.tolist() == [0, 1, 1, 1]
    assert int(ts.row(1)[0]) == int(hash_strings(["ab"])[0])
    assert int(ts.row(3)[0]) == int(hash_strings(["😀"])[0])
    empty = char_shingles([], 3)
    assert len(empty) == 0 and empty.indptr.tolist() == [0]
    with pytest.raises(ValueError):
        char_shingles(["abc"], 0)


def test_lone_surrogate_is_hashed_as_its_code_point() -> None:
    t = "a\ud800b"
    assert as_lists(char_shingles([t], 2)) == char_shingles_reference([t], 2)


@settings(max_examples=80, deadline=None)
@given(TEXTS, st.integers(1, 6))
def test_char_shingles_matches_reference(texts: list[str], k: int) -> None:
    ts = char_shingles(texts, k)
    assert_csr_invariants(ts, len(texts))
    assert as_lists(ts) == char_shingles_reference(texts, k)


@settings(max_examples=60, deadline=None)
@given(WORDY, st.integers(1, 4))
def test_word_ngrams_matches_reference(texts: list[str], n: int) -> None:
    ts = word_ngrams(texts, n)
    assert_csr_invariants(ts, len(texts))
    assert as_lists(ts) == word_ngrams_reference(texts, n)


def test_word_unigrams_formula() -> None:
    ts = word_ngrams(["b a b"], 1)
    w = hash_strings(["a", "b"])
    expect = sorted(int(x) for x in mix64(w + np.uint64(1)))
    assert [int(x) for x in ts.tokens] == expect
    # fewer words than n: one token over all words
    assert word_ngrams(["x y", "", "!!"], 3).sizes.tolist() == [1, 0, 0]
    with pytest.raises(ValueError):
        word_ngrams(["a"], 0)


def test_word_ngrams_custom_pattern() -> None:
    texts = ["a-b c", "x"]
    assert as_lists(word_ngrams(texts, 2, pattern=r"[^ ]+")) == word_ngrams_reference(texts, 2, pattern=r"[^ ]+")


SNIPPET = (
    "from er_framework.kernels import char_shingles, hash_strings, word_ngrams\n"
    "t = ['abcab', 'héllo 😀 wörld', '']\n"
    "print(' '.join(str(int(x)) for x in char_shingles(t, 3).tokens))\n"
    "print(' '.join(str(int(x)) for x in hash_strings(t)))\n"
    "print(' '.join(str(int(x)) for x in word_ngrams(t, 2).tokens))\n"
)


def test_identical_across_processes() -> None:
    t = ["abcab", "héllo 😀 wörld", ""]
    expected = "\n".join(
        [
            " ".join(str(int(x)) for x in char_shingles(t, 3).tokens),
            " ".join(str(int(x)) for x in hash_strings(t)),
            " ".join(str(int(x)) for x in word_ngrams(t, 2).tokens),
        ]
    )
    for hashseed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed, PYTHONIOENCODING="utf-8")
        out = subprocess.run(
            [sys.executable, "-c", SNIPPET],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.strip() == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 12), max_size=80), max_size=40),
    st.integers(1, 200),
    st.integers(1, 3),
    st.booleans(),
)
def test_unique_rows_is_np_unique_per_row(rows: list[list[int]], block: int, workers: int, in_place: bool) -> None:
    """unique_rows (blocks on threads, np.compress) against np.unique of every row on its own; with
    in_place the input stays the same multiset (its rows sorted where they are)."""
    from er_framework.kernels.hashing import unique_rows

    sizes = np.array([len(r) for r in rows], dtype=np.int64)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    values = np.array([x * 0x9E3779B97F4A7C15 % 2**64 for r in rows for x in r], dtype=np.uint64)
    multi = TokenSets(indptr, values.copy())
    got = unique_rows(multi, workers=workers, block_tokens=block, in_place=in_place)
    assert got.equals(TokenSets.from_sets([np.unique(np.array(r, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) for r in rows]))
    for i in range(len(rows)):  # the input is the same multiset either way
        assert sorted(multi.row(i).tolist()) == sorted(values[indptr[i] : indptr[i + 1]].tolist())
    if not in_place:
        assert np.array_equal(multi.tokens, values)


def test_char_multisets_and_sets_agree_with_short_texts() -> None:
    """The window tokens (np.compress of the valid windows) with texts shorter than k among them."""
    texts = ["abcabcab", "ab", "", "x", "hello world hello", "abcab", "a b"]
    sets, multi = char_shingles(texts, 3), char_shingles(texts, 3, unique=False)
    ref = char_shingles_reference(texts, 3)
    assert [sets.row(i).tolist() for i in range(len(texts))] == ref
    assert [sorted(set(multi.row(i).tolist())) for i in range(len(texts))] == ref
    assert multi.sizes.tolist() == [6, 1, 0, 1, 15, 3, 1]
