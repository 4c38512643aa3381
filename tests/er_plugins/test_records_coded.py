"""The record kernels on normalized columns (kernels.arrow.CodedStrings: distinct values + codes) give what
they give on the same values as a plain list: field_codes (blocking keys, with and without a prefix) and
FieldColumn (the comparison codes and distinct values, on every row and on a subset of rows)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from er_framework.data import Records
from er_framework.kernels.arrow import ArrowValues, coded_parts, coded_strings, string_array
from er_framework.normalize import normalize_column_with_stats
from er_plugins.record_columns import FieldColumn
from er_plugins.records_blocking import field_codes, field_codes_arrow, field_codes_numpy


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
    for column in (col, plain):  # the Arrow path, which columns of ARROW_MIN_VALUES or more take
        arrow = field_codes_arrow(column, prefix)
        assert arrow is not None and arrow[1] == want[1]
        np.testing.assert_array_equal(arrow[0], want[0])
    unused = coded_strings(distinct + ["never used"], codes)  # a distinct value no row has: the plain path
    np.testing.assert_array_equal(field_codes(unused, prefix)[0], want[0])


def _naive_field_column(
    fields: dict[str, list[str | None]], columns: list[str], scorer: str, rows: np.ndarray, last_digits: int | None
) -> tuple[list[str], list[int]]:
    """A field's values for ``rows``, by the definition: blank parts dropped, the rest joined by one space;
    ``digits`` keeps the ASCII digits (the last ``last_digits``); distinct values in order of first appearance."""
    values = []
    for r in rows.tolist():
        parts = [fields[c][r] for c in columns]
        v = " ".join(p for p in parts if p is not None and p.strip() != "") or None
        if v is not None and scorer == "digits":
            v = "".join(ch for ch in v if "0" <= ch <= "9")
            v = (v[-last_digits:] if last_digits else v) or None
        values.append(v)
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    return distinct, [-1 if v is None else distinct.index(v) for v in values]


@pytest.mark.parametrize(("scorer", "last_digits"), [("jaro_winkler", None), ("digits", None), ("digits", 2)])
@pytest.mark.parametrize("columns", [["a", "b"], ["a"]])
def test_field_column_of_coded_and_plain_columns_agree(
    monkeypatch: pytest.MonkeyPatch, scorer: str, last_digits: int | None, columns: list[str]
) -> None:
    """Both preparations (Python below ARROW_MIN_VALUES rows, Arrow from it) give the same codes, distinct values
    (same order) and character bounds, on normalized (coded) and plain columns, for every row subset path; each
    row's value is the naive definition's (blank -> missing, joined by a space, digits only)."""
    import er_plugins.record_columns as rc

    n = 2000
    d1, c1 = _column(4, n)
    d2, c2 = _column(5, n)
    d1 += ["\u3000\u2028", "\x1c", "tel +1 (555) 0١23", " 42 "]  # Unicode blanks; a non-ASCII digit is not a digit
    c1[:8] = [len(d1) - 4, len(d1) - 3, len(d1) - 2, len(d1) - 1, 0, 1, 2, 3]
    coded = {"a": coded_strings(d1, c1), "b": coded_strings(d2, c2)}
    plain = {k: list(v) for k, v in coded.items()}
    as_arrow = {k: ArrowValues(string_array(v)) for k, v in plain.items()}

    def records(fields: dict[str, Any]) -> Records:
        return Records(ids=[str(i) for i in range(n)], source=np.zeros(n, dtype=np.int32), source_names=["s"], fields=fields)

    def prepared(fields: dict[str, Any], rows: np.ndarray, path: str) -> FieldColumn:
        monkeypatch.setattr(rc, "ARROW_MIN_VALUES", 1 << 40 if path == "python" else 0)
        col = FieldColumn(records(fields), columns, scorer, rows, last_digits, bounds=True)
        assert isinstance(col.dictionary, list) == (path == "python")
        return col

    for rows in (
        np.arange(n, dtype=np.int64),
        np.arange(0, n, 3, dtype=np.int64),
        np.arange(0, n, 50, dtype=np.int64),
        np.array([0, 1, 2, 3, 5, 17, 1999], dtype=np.int64),
    ):  # every path: whole, by code, a few rows
        distinct, codes = _naive_field_column(plain, columns, scorer, rows, last_digits)
        naive = [distinct[c] if c >= 0 else None for c in codes]
        for fields in (coded, plain, as_arrow):  # normalized, as read, and as a large job's read keeps them
            py, arrow = prepared(fields, rows, "python"), prepared(fields, rows, "arrow")
            np.testing.assert_array_equal(py.codes, arrow.codes)
            assert py.values.tolist() == arrow.values.tolist()
            assert [py.values[c] if c >= 0 else None for c in py.codes[rows]] == naive
            assert (py.bounds is None) == (arrow.bounds is None) == (scorer == "digits")
            if py.bounds is not None and arrow.bounds is not None:
                np.testing.assert_array_equal(py.bounds.sig, arrow.bounds.sig)
                np.testing.assert_array_equal(py.bounds.lengths, arrow.bounds.lengths)
                np.testing.assert_array_equal(py.bounds.exact_only, arrow.bounds.exact_only)
        if len(columns) > 1:  # (one normalized column is coded in its distinct values' order, a plain one by rows)
            np.testing.assert_array_equal(prepared(coded, rows, "arrow").codes, prepared(plain, rows, "arrow").codes)


def test_normalized_columns_are_coded_and_equal_the_reference() -> None:
    from er_framework.normalize import normalize_column_with_stats_reference

    rng = random.Random(9)
    values = [rng.choice(["Bob", "ROBERT", " bob ", None, "", "N/A", "Peggy", "Mr. Bill"]) for _ in range(20000)]
    out, stats = normalize_column_with_stats(values, ["name", "nickname"])
    ref, ref_stats = normalize_column_with_stats_reference(values, ["name", "nickname"])
    assert out == ref and stats == ref_stats
    assert coded_parts(out) is not None
