"""Every kernel-related reference number of ../shared/SEEDS.md sections 1-4.

Preprocessing: every §1 number is reproduced on the *raw* text exactly as printed
(no lower-casing, punctuation and spaces kept), character shingles of the stated k.
The literal shingle strings are checked with a pure-Python set of substrings and the
64-bit token sets from ``char_shingles`` must give the same counts.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from er_framework.data import TokenSets
from er_framework.kernels import (
    EMPTY,
    PRIME,
    candidate_probability,
    char_shingles,
    estimate_jaccard,
    hash_strings,
    is_permutation,
    jaccard_pairs,
    minhash_rowwise_reference,
    minhash_signatures,
    threshold_estimate,
)


def substrings(text: str, k: int) -> set[str]:
    """The set of k-shingles of a text as literal strings."""
    return {text[i : i + k] for i in range(len(text) - k + 1)}


def jac(ts: TokenSets, i: int, j: int) -> float:
    return float(jaccard_pairs(ts, np.array([i]), np.array([j]))[0])


# ---------------------------------------------------------------- §1 Shingling


def test_abcab_k2() -> None:
    assert substrings("abcab", 2) == {"ab", "bc", "ca"}
    ts = char_shingles(["abcab"], 2)
    assert sorted(ts.tokens.tolist()) == sorted(hash_strings(["ab", "bc", "ca"]).tolist())


def test_dog_cat_k3() -> None:
    t1, t2 = "The dog which chased the cat", "The dog that chased the cat"
    s1, s2 = substrings(t1, 3), substrings(t2, 3)
    assert s1 - s2 == {"g w", " wh", "whi", "hic", "ich", "ch ", "h c"}
    assert s2 - s1 == {"g t", "tha", "hat", "at ", "t c"}
    assert (len(s1), len(s2), len(s1 & s2), len(s1 | s2)) == (25, 23, 18, 30)
    assert Fraction(len(s1 & s2), len(s1 | s2)) == Fraction(3, 5)  # 0.6 (corrected value)
    # changed word: every vanished shingle overlaps "which" (chars 8..12)
    start, end = t1.index("which"), t1.index("which") + len("which")
    gone_pos = [i for i in range(len(t1) - 2) if t1[i : i + 3] in s1 - s2]
    assert all(start - 3 < i < end for i in gone_pos)
    ts = char_shingles([t1, t2], 3)
    assert ts.sizes.tolist() == [25, 23]
    assert len(np.intersect1d(ts.row(0), ts.row(1))) == 18
    assert len(np.union1d(ts.row(0), ts.row(1))) == 30
    assert jac(ts, 0, 1) == 0.6


SPANISH = [
    "el perro persigue al gato, pero no lo alcanza",
    "el gato persigue al perro, pero no lo alcanza",
    "este es el documento de ejemplo",
    "el documento habla de perros, gatos, y otros animales",
]


def test_spanish_k4() -> None:
    ts = char_shingles(SPANISH, 4)
    assert ts.sizes.tolist() == [40, 40, 28, 49]
    assert [len(substrings(t, 4)) for t in SPANISH] == [40, 40, 28, 49]
    expected = {(0, 1): "0.739", (0, 2): "0", (0, 3): "0.0595", (1, 3): "0.0595", (2, 3): "0.167"}
    left = np.array([p[0] for p in expected], dtype=np.int64)
    right = np.array([p[1] for p in expected], dtype=np.int64)
    got = jaccard_pairs(ts, left, right)
    assert [f"{x:.3g}" for x in got] == list(expected.values())


def test_batman_robin() -> None:
    texts = ["Batman y Robin", "Robin y Batman"]
    assert jac(char_shingles(texts, 4), 0, 1) == 0.375
    assert jac(char_shingles(texts, 8), 0, 1) == 0.0


# ---------------------------------------------------------------- §2 Jaccard


@pytest.mark.parametrize(
    "a,b,value",
    [
        (range(1, 6), range(3, 9), Fraction(3, 8)),
        (range(1, 4), range(2, 6), Fraction(2, 5)),
        (range(1, 8), range(4, 12), Fraction(4, 11)),
    ],
)
def test_jaccard_examples(a: range, b: range, value: Fraction) -> None:
    ts = TokenSets.from_sets([a, b])
    assert jac(ts, 0, 1) == float(value)
    assert 1 - jac(ts, 0, 1) == pytest.approx(1 - float(value))  # distance


def test_boolean_matrix_formula() -> None:
    # rows = elements, columns = sets
    matrix = [[1, 1], [1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [1, 1]]
    a = sum(1 for r in matrix if r == [1, 1])
    b = sum(1 for r in matrix if r == [1, 0])
    c = sum(1 for r in matrix if r == [0, 1])
    cols = [[i for i, r in enumerate(matrix) if r[col]] for col in range(2)]
    assert jac(TokenSets.from_sets(cols), 0, 1) == a / (a + b + c) == 0.5


# ---------------------------------------------------------------- §3 MinHash

WORKED = [[1, 0], [0, 1], [1, 1], [1, 0], [0, 1]]  # rows 1..5


def test_worked_example_row_by_row_and_fast() -> None:
    def h(x: int) -> int:
        return x % 5

    def g(x: int) -> int:
        return (2 * x + 1) % 5

    sig = minhash_rowwise_reference(WORKED, [h, g], row_numbers=[1, 2, 3, 4, 5])
    assert sig == [[1, 0], [2, 0]]
    cols = TokenSets.from_sets([[r + 1 for r in range(5) if WORKED[r][c]] for c in range(2)])
    fast = minhash_signatures(cols, np.array([1, 2]), np.array([0, 1]), p=5)
    assert fast.T.tolist() == [[1, 0], [2, 0]]  # fast is (column, hash); SIG is (hash, column)
    assert estimate_jaccard(fast[0], fast[1]) == 0.0  # signature similarity 0
    assert jac(cols, 0, 1) == pytest.approx(1 / 5)  # true Jaccard 1/5


def test_probability_equals_jaccard_over_all_permutations() -> None:
    """P[h(C1) = h(C2)] = sim(C1, C2), exactly, over all 5! row permutations."""
    agree = 0
    perms = list(itertools.permutations(range(5)))
    for perm in perms:
        first = [min(perm[r] for r in range(5) if WORKED[r][c]) for c in range(2)]
        agree += first[0] == first[1]
    assert Fraction(agree, len(perms)) == Fraction(1, 5)


def test_non_prime_modulus() -> None:
    image = {(4 * x + 1) % 12 for x in range(12)}
    assert image == {1, 5, 9}
    assert not is_permutation(4, 1, 12)
    assert [is_permutation(a, b, 6) for a, b in [(2, 1), (3, 2), (5, 2)]] == [False, False, True]
    assert is_permutation(4, 1, 13)  # prime modulus: always a permutation


def test_exact_arithmetic_bounds() -> None:
    spark = 2038074743
    assert (spark - 1) ** 2 + (spark - 1) < 2**63  # Spark's prime fits signed 64 bits
    assert (PRIME - 1) ** 2 + (PRIME - 1) < 2**64  # ours fits unsigned 64 bits


def test_jaccard_zero_gives_estimate_zero() -> None:
    cols = TokenSets.from_sets([[1, 4], [2, 5, 7], []])
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], dtype=np.uint64)
    b = np.arange(10, dtype=np.uint64)
    sig = minhash_signatures(cols, a, b, p=11)
    assert estimate_jaccard(sig[0], sig[1]) == 0.0
    assert np.all(sig[2] == EMPTY) and estimate_jaccard(sig[2], sig[2]) == 0.0


def test_storage_40mb() -> None:
    sig = minhash_signatures(TokenSets.from_sets([[1]] * 100), np.arange(1, 101), np.zeros(100, dtype=np.int64))
    assert sig.dtype == np.uint32 and sig.itemsize == 4
    assert 100_000 * 100 * sig.itemsize == 40_000_000


# ---------------------------------------------------------------- §4 Banding


@pytest.mark.parametrize(
    "s,printed",
    [
        (0.2, "0.006"),
        (0.3, "0.047"),
        (0.4, "0.186"),
        (0.5, "0.470"),
        (0.6, "0.802"),
        (0.7, "0.975"),
        (0.8, "0.9996"),
    ],
)
def test_s_curve_table_b20_r5(s: float, printed: str) -> None:
    decimals = len(printed.split(".")[1])
    assert f"{candidate_probability(s, 20, 5):.{decimals}f}" == printed


def test_at_08_one_band_and_miss() -> None:
    one_band = 0.8**5
    miss = (1 - one_band) ** 20
    assert f"{one_band:.3f}" == "0.328"
    # The printed 0.00035 is (1 - 0.328)**20 with the *rounded* 0.328; the exact
    # value (1 - 0.32768)**20 = 0.000356 rounds to 0.00036 (and 1 - 0.000356 = 0.9996).
    assert f"{(1 - 0.328) ** 20:.5f}" == "0.00035"
    assert f"{miss:.6f}" == "0.000356"
    assert 2500 < 1 / miss < 3500  # "about 1 in 3000"
    assert candidate_probability(0.8, 20, 5) == pytest.approx(1 - miss)


def test_fewer_bands_fewer_candidates() -> None:
    # up to 0.95: closer to 1 both probabilities round to 1.0 in float64
    s = np.linspace(0.01, 0.95, 95)
    assert np.all(candidate_probability(s, 15, 5) < candidate_probability(s, 20, 5))


def test_one_band_only_near_identical_smaller_bands_lower_similarity() -> None:
    assert candidate_probability(0.9, 1, 100) < 1e-4  # all K rows in one band
    assert candidate_probability(0.5, 1, 100) < 1e-29
    probs = [candidate_probability(0.5, 100 // r, r) for r in (20, 10, 5, 2)]
    assert probs == sorted(probs)  # smaller bands admit lower similarities
    assert threshold_estimate(20, 5) == pytest.approx(0.549, abs=1e-3)
