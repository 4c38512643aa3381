"""The record kernels on normalized columns (kernels.arrow.CodedStrings: distinct values + codes) give what
they give on the same values as a plain list: field_codes (blocking keys, with and without a prefix) and
FieldColumn (the comparison codes and distinct values, on every row and on a subset of rows)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from er_framework.data import Records
from er_framework.kernels.arrow import coded_parts, coded_strings
from er_framework.normalize import normalize_column_with_stats
from er_plugins.records_blocking import field_codes, field_codes_numpy
from er_plugins.records_scoring import FieldColumn


def _column(seed: int, n: int) -> tuple[list[str | None], np.ndarray]:
    rng = random.Random(seed)
    distinct: list[str | None] = [None, "", " ", "smith", "Smith", "smíth", "o'neil", "x" * 30, "日本", "a b"]
    distinct += ["".join(rng.choices("abcé ", k=rng.randint(1, 6))) for _ in range(40)]
    codes = np.array([rng.randrange(len(distinct)) for _ in range(n)], dtype=np.int32)
    return distinct, codes


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("prefix", [None, 1, 3])
def test_field_codes_of_coded_and_plain_columns_agree(seed: int, prefix: int | None) -> None:
    distinct, codes = _column(seed, 3000)
    col = coded_strings(distinct, codes)
    plain = list(col)
    got = field_codes(col, prefix)
    want = field_codes(plain, prefix)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]
    ref = field_codes_numpy(plain, prefix)
    np.testing.assert_array_equal(got[0], ref[0])
    unused = coded_strings(distinct + ["never used"], codes)  # a distinct value no row has: the plain path
    np.testing.assert_array_equal(field_codes(unused, prefix)[0], want[0])


@pytest.mark.parametrize("scorer", ["jaro_winkler", "digits"])
def test_field_column_of_coded_and_plain_columns_agree(scorer: str) -> None:
    n = 2000
    d1, c1 = _column(4, n)
    d2, c2 = _column(5, n)
    coded = {"a": coded_strings(d1, c1), "b": coded_strings(d2, c2)}
    plain = {k: list(v) for k, v in coded.items()}

    def records(fields: dict[str, list[str | None]]) -> Records:
        return Records(ids=[str(i) for i in range(n)], source=np.zeros(n, dtype=np.int32), source_names=["s"],
                       fields=fields)

    for rows in (np.arange(n, dtype=np.int64), np.arange(0, n, 3, dtype=np.int64), np.arange(0, n, 50, dtype=np.int64),
                 np.array([5, 17, 1999], dtype=np.int64)):  # every path: whole, by code, and a few rows in Python
        got = FieldColumn(records(coded), ["a", "b"], scorer, rows)
        want = FieldColumn(records(plain), ["a", "b"], scorer, rows)
        np.testing.assert_array_equal(got.codes, want.codes)
        assert got.dictionary.equals(want.dictionary)


def test_normalized_columns_are_coded_and_equal_the_reference() -> None:
    from er_framework.normalize import normalize_column_with_stats_reference

    rng = random.Random(9)
    values = [rng.choice(["Bob", "ROBERT", " bob ", None, "", "N/A", "Peggy", "Mr. Bill"]) for _ in range(20000)]
    out, stats = normalize_column_with_stats(values, ["name", "nickname"])
    ref, ref_stats = normalize_column_with_stats_reference(values, ["name", "nickname"])
    assert out == ref and stats == ref_stats
    assert coded_parts(out) is not None
