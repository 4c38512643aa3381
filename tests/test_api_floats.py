"""er_framework.run with DataFrames whose number columns arrived as floats (a year or a YYYYMMDD date read by
pandas.read_csv: 1999.0, 19151111.0, NaN for missing): read as the integers they are, so the values agree with
those of a text column; and the run's warnings for values a chain could not read."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import er_framework as er
from er_framework.errors import InputError


def _job(**extra: Any) -> dict[str, Any]:
    return {
        "mode": "link",
        "sources": [
            {"name": "a", "id": "id", "fields": ["name", "year", "dob"]},
            {"name": "b", "id": "id", "fields": ["name", "year", "dob"]},
        ],
        "normalize": {"name": "name", "year": "digits", "dob": "date"},
        "exact_duplicates": False,
        "blockers": [{"type": "field_hash", "fields": ["dob"]}],
        "verifier": {
            "type": "field_score",
            "threshold": 250,
            "fields": [
                {"field": "name", "scorer": "ratio"},
                {"field": "year", "scorer": "exact"},
                {"field": "dob", "scorer": "exact"},
            ],
        },
        **extra,
    }


A = pd.DataFrame(
    {
        "id": ["a1", "a2", "a3", "a4"],
        "name": ["Ann Lee", "Bob Roy", "Cy Day", "Di Fox"],
        "year": ["1999", "1985", "2001", ""],
        "dob": ["19151111", "19800305", "20010101", "19700707"],
    }
)


def _floats(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with year and dob as pandas reads them from a CSV: floats (an empty cell is NaN)."""
    out = df.copy()
    for c in ("year", "dob"):
        out[c] = pd.to_numeric(out[c].replace("", np.nan), errors="raise").astype("float64")
    return out


def _links(result: Any) -> set[tuple[str, str]]:
    t = result.run.tables["pairs"]
    return set(zip(map(str, t["left_id"]), map(str, t["right_id"])))


@pytest.mark.parametrize("kind", ["pandas", "arrow"])
def test_float_columns_read_as_integers_link_as_text_does(kind: str) -> None:
    b = A.assign(id=["b1", "b2", "b3", "b4"])
    fb = _floats(b)
    assert fb["dob"].dtype == np.float64 and fb["year"].isna().sum() == 1
    given_b: Any = fb if kind == "pandas" else pa.Table.from_pandas(fb, preserve_index=False)
    text = er.run(_job(), sources={"a": A, "b": b})
    floats = er.run(_job(), sources={"a": A, "b": given_b})
    assert _links(floats) == _links(text) == {("a1", "b1"), ("a2", "b2"), ("a3", "b3"), ("a4", "b4")}
    st = floats.report["normalize"]
    assert st["dob"]["unparseable"] == 0 and st["year"]["unparseable"] == 0
    assert st["year"]["missing_before"] == 2  # a4 and b4: "" and NaN
    assert "could not be read" not in floats.summary()


def test_float_values_of_a_text_column_are_read_by_the_normalizers() -> None:
    # an object column holding float text (written by a spreadsheet): "1999.0" and "19151111.0" under digits/date
    b = A.assign(
        id=["b1", "b2", "b3", "b4"],
        year=["1999.0", "1985.00", "2.001e3", None],
        dob=["19151111.0", "1.98003050e7", "20010101", "19700707.0"],
    )
    result = er.run(_job(), sources={"a": A, "b": b})
    assert _links(result) == {("a1", "b1"), ("a2", "b2"), ("a3", "b3"), ("a4", "b4")}


def test_unreadable_values_are_counted_and_warned() -> None:
    b = A.assign(id=["b1", "b2", "b3", "b4"], dob=["19151111.0x", "31/02/1999", "20010101", "hello"])
    result = er.run(_job(), sources={"a": A, "b": b})
    st = result.report["normalize"]["dob"]
    assert (st["values"], st["unparseable"], st["unparseable_share"]) == (8, 3, 0.375)
    assert st["unparseable_examples"] == ["19151111.0x", "31/02/1999", "hello"]
    lines = [line for line in result.summary().splitlines() if line.startswith("warning:")]
    assert lines == [
        "warning: dob: 3 of 8 values (37.5%) could not be read by [date] and became missing, e.g. '19151111.0x', "
        "'31/02/1999', 'hello'; fix the values or the field's normalizers (er plugins lists their options), "
        "or set normalize_strict: true to stop on them"
    ]
    with pytest.raises(InputError) as exc:
        er.run(_job(normalize_strict=True), sources={"a": A, "b": b})
    text = str(exc.value)
    assert "normalize.dob" in text and "3 of 8 values (37.5%)" in text and "'31/02/1999'" in text
    assert "remove normalize_strict: true" in text
    # strict with every value read: the run goes on
    assert _links(er.run(_job(normalize_strict=True), sources={"a": A, "b": A.assign(id=["b1", "b2", "b3", "b4"])}))
