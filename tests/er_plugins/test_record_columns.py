"""Tests of er_plugins.record_columns: FieldColumn's fast paths against their plain references.

* fellegi_sunter's levels (``FieldColumn.levels``: pairs whose bag-of-characters bound
  is below the lowest level are not compared) equal ``level_of`` of the exact
  similarities (``FieldColumn.scores``) and of a naive per-pair rapidfuzz call, for
  every scorer, several level lists, any chunking and any number of workers;
  the verifier's pattern codes and scores are the same.

(FieldColumn on normalized columns: test_records_coded.py.)
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein
from records_cases import CUSTOMER_FS_FIELDS

import er_plugins.record_columns as rc
from er_framework.components import Context
from er_framework.data import Batch, Pairs, Records
from er_framework.kernels.em import level_of, pattern_radix
from er_framework.kernels.records_bounds import BOUNDED_SCORERS
from er_framework.synth.customers import generate_customers
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams

FIELDS = ["first_name", "last_name", "address", "city", "zip", "phone", "email", "dob"]


def _records(n: int = 400, seed: int = 3) -> Records:
    data = generate_customers(n, 0.5, seed)
    cols = {f: list(data.a[f]) + list(data.b[f]) for f in FIELDS}
    rng = random.Random(seed)
    odd = ["", "  ", None, "é", "Ünïcödé straße 5", "日本語の住所", "x" * 300, "a", "ab", "\x00a", "#"]
    for f in FIELDS:  # some hostile values in every column
        for i in rng.sample(range(2 * n), 40):
            cols[f][i] = rng.choice(odd)
    ids = [f"r{i}" for i in range(2 * n)]
    return Records(ids=ids, source=np.repeat([0, 1], n).astype(np.int32), source_names=["A", "B"], fields=cols)


def _pairs(records: Records, k: int = 6000, seed: int = 1) -> Pairs:
    rng = np.random.default_rng(seed)
    n = len(records) // 2
    left = rng.integers(0, n, k)
    right = n + rng.integers(0, n, k)
    near = np.arange(min(n, k // 4))  # copies are near each other in the synthetic data
    left = np.concatenate([left, near])
    right = np.concatenate([right, n + near])
    return Pairs(left, right).normalized()


def _naive(scorer: str, a: str, b: str) -> float:
    if scorer == "jaro_winkler":
        return JaroWinkler.normalized_similarity(a, b) * 100.0
    if scorer == "levenshtein":
        return Levenshtein.normalized_similarity(a, b) * 100.0
    return float(getattr(fuzz, scorer)(a, b))


CASES = [
    (["first_name"], "jaro_winkler", [100.0, 92.0, 80.0]),
    (["last_name"], "jaro_winkler", [100.0, 60.0]),
    (["address", "city", "zip"], "ratio", [100.0, 85.0, 70.0]),
    (["address"], "ratio", [90.0, 30.0]),
    (["email"], "ratio", [100.0, 80.0]),
    (["dob"], "levenshtein", [100.0, 80.0]),
    (["dob"], "levenshtein", [95.0, 50.0, 10.0]),
    (["city"], "token_sort_ratio", [100.0, 80.0]),
    (["phone"], "digits", [100.0]),
]


@pytest.mark.parametrize("cols, scorer, levels", CASES)
@pytest.mark.parametrize("workers", [1, 2])
def test_levels_equal_the_levels_of_the_scores(cols: list[str], scorer: str, levels: list[float], workers: int) -> None:
    records = _records()
    pairs = _pairs(records)
    rows = rc.rows_of(len(records), pairs.left, pairs.right)
    fast = rc.FieldColumn(records, cols, scorer, rows, bounds=True)
    plain = rc.FieldColumn(records, cols, scorer, rows)
    got = fast.levels(pairs.left, pairs.right, levels, workers)
    want = level_of(plain.scores(pairs.left, pairs.right, workers), levels)
    assert np.array_equal(got, want)
    if scorer in BOUNDED_SCORERS:
        assert fast.bounds is not None
    # and a naive call per pair (the joined value of the columns, missing parts skipped)
    for i, (a, b) in enumerate(zip(pairs.left.tolist(), pairs.right.tolist())):
        va = " ".join(p for p in (records.fields[c][a] for c in cols) if p is not None and p.strip()) or None
        vb = " ".join(p for p in (records.fields[c][b] for c in cols) if p is not None and p.strip()) or None
        if scorer == "digits":
            continue  # exact digits: covered by test_field_score's references
        if va is None or vb is None:
            assert got[i] == -1
        else:
            assert got[i] == level_of(np.array([100.0 if va == vb else _naive(scorer, va, vb)]), levels)[0]


def test_bounds_skip_most_comparisons_of_far_pairs() -> None:
    records = _records()
    pairs = _pairs(records)
    rows = rc.rows_of(len(records), pairs.left, pairs.right)
    col = rc.FieldColumn(records, ["address", "city", "zip"], "ratio", rows, bounds=True)
    calls: list[int] = []
    real = col.compare

    def counting(a: np.ndarray, b: np.ndarray, workers: int) -> np.ndarray:
        calls.append(len(a))
        return real(a, b, workers)

    col.compare = counting  # type: ignore[method-assign]
    col.levels(pairs.left, pairs.right, [100.0, 85.0, 70.0], 1)
    assert sum(calls) < 0.3 * len(pairs)  # random pairs of customers: most locations are far apart


@pytest.mark.parametrize("workers", [1, 2])
def test_fellegi_sunter_codes_and_scores_do_not_depend_on_chunks_or_workers(workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    records = _records(600, seed=9)
    pairs = _pairs(records, 9000, seed=4)
    batch = Batch(records=records, cross_source_only=True, seed=1)
    ref = FellegiSunter(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS), Context(workers=1, threshold=0.5, seed=1))
    codes = ref.pair_codes(batch, pairs)
    scores, ref_fit = ref.fit_score(batch, pairs, None)
    # the reference codes: level_of of the exact scores, field by field
    p = FellegiSunterParams(fields=CUSTOMER_FS_FIELDS)
    n_levels = [len(f.thresholds) + 1 for f in p.fields]
    radix = pattern_radix(n_levels)
    rows = rc.rows_of(len(records), pairs.left, pairs.right)
    want = np.zeros(len(pairs), dtype=np.int64)
    for f, fld in enumerate(p.fields):
        col = rc.FieldColumn(records, rc.field_columns(fld.field), fld.comparison, rows, fld.last_digits)
        want += (level_of(col.scores(pairs.left, pairs.right, 1), fld.thresholds) + 1) * radix[f]
    assert np.array_equal(codes, want)
    monkeypatch.setattr(rc, "CHUNK_PAIRS", 777)
    other = FellegiSunter(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS), Context(workers=workers, threshold=0.5, seed=1))
    assert np.array_equal(other.pair_codes(batch, pairs), codes)
    other_scores, other_fit = other.fit_score(batch, pairs, None)
    assert np.array_equal(other_scores, scores)
    assert other_fit.report["per_field"] == ref_fit.report["per_field"]


@pytest.mark.parametrize("copies", [1, 6_000])  # fewer than ARROW_MIN_VALUES rows: prepared in Python; more: in Arrow
def test_digits_of_a_whole_number_written_as_a_float(copies: int) -> None:
    # the comparison `digits` reads "1999.0" as 1999 (as the digits normalizer does); other values keep their digits
    base = ["1999.0", "1999", "1.9151111e7", "19151111", "12.5", "125", "555.123.4567", "5551234567", "1999.00", "2001", None, "3E5"]
    values = base * copies
    n = len(values)
    records = Records(ids=[f"r{i}" for i in range(n)], source=np.zeros(n, dtype=np.int32), source_names=["A"], fields={"year": values})
    left = np.array([0, 2, 4, 6, 8, 0, 10], dtype=np.int64)
    right = np.array([1, 3, 5, 7, 1, 9, 11], dtype=np.int64)
    col = rc.FieldColumn(records, ["year"], "digits", np.arange(n, dtype=np.int64))
    scores = col.scores(left, right, 1)
    assert scores[:5].tolist() == [100.0] * 5
    assert scores[5] < 100.0 and np.isnan(scores[6])
    assert rc.FieldColumn(records, ["year"], "digits", np.arange(n, dtype=np.int64), last_digits=2).scores(left, right, 1)[0] == 100.0
