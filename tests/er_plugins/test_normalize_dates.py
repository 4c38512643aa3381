"""The ``date`` normalizer (er_plugins.normalize_dates): hand-picked cases, idempotence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from normalizer_cases import idempotence_settings, idempotent, norm, text_values


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
