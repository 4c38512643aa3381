"""The ``date`` normalizer (er_plugins.normalize_dates): hand-picked cases, idempotence."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st
from normalizer_cases import idempotence_settings, idempotent, norm, normalize, text_values


@pytest.mark.parametrize(
    "raw",
    [
        "1980-03-05", "1980/03/05", "1980.3.5", "19800305", "03/05/1980", "3/5/1980", "03-05-1980",
        "March 5, 1980", "Mar 5 1980", "5 March 1980", "5-Mar-1980", "1980-Mar-05", "Wednesday, March 5th, 1980",
        "5th of March, 1980", "1980-03-05T10:30:00Z", "1980-03-05 10:30", "MARCH 5, 1980",
    ],
)  # fmt: skip
def test_date_formats(raw):
    assert norm("date", raw) == "1980-03-05"


def test_date_options_and_failures():
    assert norm("date", "05/03/1980") == "1980-05-03"
    assert norm("date", "05/03/1980", dayfirst=True) == "1980-03-05"
    assert norm("date", "25/12/1980") == "1980-12-25"  # only one valid reading
    assert norm("date", "05/03/80") is None
    assert norm("date", "05/03/80", yy_pivot=30) == "1980-05-03"
    assert norm("date", "05/03/20", yy_pivot=30) == "2020-05-03"
    for bad in [
        "1980-02-30",
        "13/13/1980",
        "hello",
        "1980",
        "March 1980",
        "0000-00-00",
        "32 March 1980",
    ]:
        assert norm("date", bad) is None, bad
    assert norm("date", "1981-02-29") is None and norm("date", "1984-02-29") == "1984-02-29"


@idempotence_settings
@given(text_values | st.dates().map(str) | st.dates().map(lambda d: d.strftime("%B %d, %Y")))
def test_date_idempotent(value):
    idempotent("date", value)


# ---------------------------------------------------------------------------
# dates written as floats (a YYYYMMDD column read by pandas.read_csv: 19151111.0)


def _date_reference(value: str) -> str | None:
    """The naive reading: a float literal that is a whole number is the date of its integer's digits."""
    f = float(value)
    if not f.is_integer():
        return None
    return norm("date", str(int(f)))


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("19151111.0", "1915-11-11"), ("19151111.00", "1915-11-11"), ("1.9151111e7", "1915-11-11"),
        ("1.9151111E+07", "1915-11-11"), (" 19800305.0 ", "1980-03-05"), ("19151111.5", None), ("19151131.0", None),
        ("1999.0", None), ("19151111.0x", None),
    ],
)  # fmt: skip
def test_date_written_as_a_float(raw, expected):
    assert norm("date", raw) == expected


def test_date_given_as_python_floats():
    assert normalize("date", [19151111.0, 1.9151111e7, 19800305.5, float("nan")]) == ["1915-11-11", "1915-11-11", None, None]


@given(st.dates(min_value=date(1000, 1, 1)), st.sampled_from(["{}.0", "{}.00", "{:.7e}", "{!r}"]), st.booleans())
def test_date_floats_against_the_naive_reading(day, form, half):
    n = int(day.strftime("%Y%m%d"))
    value = form.format(float(n) + (0.5 if half else 0.0)) if "e" in form or "r" in form else form.format(n)
    assert norm("date", value) == _date_reference(value)
    if not half:
        assert norm("date", value) == day.isoformat()
