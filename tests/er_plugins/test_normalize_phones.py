"""The ``phone`` normalizer (er_plugins.normalize_phones): hand-picked cases, idempotence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from normalizer_cases import idempotence_settings, idempotent, norm, normalize, text_values

_phone_values = st.from_regex(r"[ +0-9().x#-]{0,25}", fullmatch=True) | text_values


@pytest.mark.parametrize(
    "raw",
    [
        "(555) 123-4567", "555-123-4567", "555.123.4567", "5551234567", "+1 555 123 4567", "+1-555-123-4567",
        "1-555-123-4567", "1 (555) 123-4567", "001 555 123 4567", "+1 (555) 123-4567 ext. 89", "555-123-4567 x89",
        "５５５-１２３-４５６７", "5551234567.0",
    ],
)  # fmt: skip
def test_phone_us(raw):
    assert norm("phone", raw) == "5551234567"


def test_phone_foreign_and_regions():
    uk = [
        "+44 20 7946 0958",
        "+44 (0)20 7946 0958",
        "0044 20 7946 0958",
        "011 44 20 7946 0958",
    ]
    assert normalize("phone", uk) == ["442079460958"] * 4
    assert norm("phone", "+44 20 7946 0958", foreign_country_code="strip") == "2079460958"
    gb = ["+44 20 7946 0958", "020 7946 0958", "0044 20 7946 0958", "44 20 7946 0958"]
    assert normalize("phone", gb, default_region="GB") == ["2079460958"] * 4
    assert norm("phone", "+1 212 555 1234", default_region="gb") == "12125551234"
    assert norm("phone", "+39 06 1234 5678", default_region="IT") == "0612345678"  # Italian leading zero kept
    assert norm("phone", "+1 555 123 4567", default_region=None) == "15551234567"


def test_phone_missing_short_and_placeholders():
    assert norm("phone", "000-000-0000") is None
    assert norm("phone", "+1 111 111 1111") is None
    assert norm("phone", "111-111-1111", drop_placeholders=False) == "1111111111"
    assert norm("phone", "123-456") is None  # 6 digits < min_digits 7
    assert norm("phone", "123-4567") == "1234567"
    assert norm("phone", "1-123-456-7890") == "1234567890"  # NANP: 1 + 10 digits loses the 1, valid or not
    assert norm("phone", "12345", min_digits=5) == "12345"
    assert norm("phone", "call me") is None


@idempotence_settings
@given(
    _phone_values,
    st.sampled_from(["US", "GB", "DE", "IT", "FR", "RU", None]),
    st.sampled_from(["keep", "strip"]),
)
def test_phone_idempotent(value, region, foreign):
    idempotent("phone", value, default_region=region, foreign_country_code=foreign)


def test_phone_written_as_a_float():
    # a phone column read as floats: the integer's digits; a number with a fraction keeps its digits as before
    assert normalize("phone", ["5551234567.0", "5551234567.00", "5.551234567e9", "5.551234567E+09"]) == ["5551234567"] * 4
    assert normalize("phone", [5551234567.0, "555.1234"]) == ["5551234567", "5551234"]
    many = [f"{5551230000 + i}.0" for i in range(100)] + [f"{5.55123e9 + i:.9e}" for i in range(100)]
    assert normalize("phone", many) == [norm("phone", v) for v in many] == [str(int(float(v))) for v in many]
