"""The ``text``, ``digits``, ``lower`` and ``strip`` normalizers (er_plugins.normalize_text): hand-picked
cases, idempotence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from normalizer_cases import idempotence_settings, idempotent, norm, normalize, text_values

from er_plugins.normalize_text import float_integer


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("José", "jose"),
        ("Zoë", "zoe"),
        ("  ZOË\tSMITH  ", "zoe smith"),
        ("Ångström", "angstrom"),
        ("Łódź", "lodz"),
        ("Straße", "strasse"),
        ("Søren Kierkegaard", "soren kierkegaard"),
        ("François-Xavier", "francois xavier"),
        ("O'Brien", "obrien"),
        ("O’Brien", "obrien"),
        ("O´Brien", "obrien"),
        ("hello,world!", "hello world"),
        ("ﬁne Ｔｅｘｔ", "fine text"),  # NFKC: ligature, full-width
        ("a\u200bb", "ab"),  # zero-width space (format character) removed
        ("Ελληνικά", "ελληνικα"),
        ("東京", "東京"),
        ("123 Main", "123 main"),
    ],
)
def test_text(raw, expected):
    assert norm("text", raw) == expected


def test_simple():
    assert normalize("digits", ["(555) 123-4567", "no digits", "٣٤"]) == [
        "5551234567",
        None,
        "34",
    ]
    assert normalize("lower", ["ABC", "Straße"]) == ["abc", "strasse"]
    assert normalize("strip", [" a b ", "x"]) == ["a b", "x"]


@idempotence_settings
@given(text_values)
def test_text_idempotent(value):
    idempotent("text", value)


# ---------------------------------------------------------------------------
# numbers written as floats (a year column read by pandas: 1999.0)

_FRACTIONS = ["", "0", "00", "000", "5", "25", "75", "125", "50"]  # exact in binary: float() reads them exactly


def _float_literal_reference(value: str) -> str | None:
    """The naive reading of a float literal: the integer it stands for when it is a whole number, ``""`` when
    it has a fraction (``None``: not one of the literals these tests generate)."""
    f = float(value)
    return str(int(f)) if f.is_integer() else ""


@st.composite
def float_literals(draw: st.DrawFn) -> str:
    n = draw(st.integers(0, 10**12))
    sign = draw(st.sampled_from(["", "", "-", "+"]))
    form = draw(st.sampled_from(["point", "exponent", "repr"]))
    if form == "point":
        return f"{sign}{n}.{draw(st.sampled_from(_FRACTIONS))}"
    if form == "repr":
        return sign + repr(float(n) if draw(st.booleans()) else n + 0.5)
    digits = str(n)
    return f"{sign}{digits[0]}.{digits[1:] or '0'}e{len(digits) - 1}"


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("1999.0", "1999"), ("1999.00", "1999"), ("19151111.0", "19151111"), ("1.9151111e7", "19151111"),
        ("1.9151111E+07", "19151111"), ("1e+16", "10000000000000000"), (" 1999.0 ", "1999"), ("-5.0", "-5"),
        ("5.", "5"), ("0.0", "0"), ("12.5", ""), (".5", ""), ("1E-3", ""), ("1e+999", ""),
        ("1999", None), ("3E5", None), ("1.2.3", None), ("555-1234", None), ("1999.0x", None), ("", None), ("abc", None),
    ],
)  # fmt: skip
def test_float_integer(raw, expected):
    assert float_integer(raw) == expected


@given(float_literals())
def test_float_integer_against_the_naive_reading(value):
    assert float_integer(value) == _float_literal_reference(value)


@given(float_literals())
def test_digits_of_a_float_is_its_integer(value):
    ref = _float_literal_reference(value)
    assert norm("digits", value) == (ref.lstrip("-") or None)


def test_digits_of_floats():
    values = ["1999.0", "1999.00", "1.9151111e7", "12.5", "(555) 123-4567", "555.123.4567", "$12.50", "3E5", "5."]
    assert normalize("digits", values) == ["1999", "1999", "19151111", None, "5551234567", "5551234567", "1250", "35", "5"]
    # Python floats given as values arrive as their text (str(1999.0) == "1999.0")
    assert normalize("digits", [1999.0, 19151111.0, 1e16, 12.5]) == ["1999", "19151111", "10000000000000000", None]
    # a batch (the joined fast path) agrees with the values one by one
    many = [f"{i}.0" for i in range(100)] + [f"{i}.5" for i in range(100)] + [f"{i}-{i}" for i in range(100)]
    assert normalize("digits", many) == [norm("digits", v) for v in many]
    assert normalize("digits", many)[:3] == ["0", "1", "2"] and normalize("digits", many)[100] is None


@given(float_literals())
def test_text_of_a_whole_float_is_its_integer(value):
    """``text`` of a float literal: the integer when it is a whole number (a year 1999.0 is "1999", as a year
    1999 is), else the plain text rules (``12.5`` -> ``12 5``)."""
    ref = _float_literal_reference(value)
    assert norm("text", value) == (norm("text", ref) if ref else norm("text", value.replace(".", " ")))


def test_text_of_floats():
    values = ["1999.0", "Berlin 2.0", "12.5", "-5.0", " 1e+3 ", "3E5", "x"]
    assert normalize("text", values) == ["1999", "berlin 2 0", "12 5", "5", "1000", "3e5", "x"]
    # the batch (joined fast path) agrees with the values one by one, floats among them
    many = [f"{i}.0" for i in range(100)] + [f"{i}.5" for i in range(100)] + [f"Rue {i}" for i in range(100)]
    assert normalize("text", many) == [norm("text", v) for v in many]
    assert normalize("text", many)[:2] == ["0", "1"] and normalize("text", many)[100] == "0 5"


@idempotence_settings
@given(float_literals() | text_values)
def test_digits_idempotent(value):
    idempotent("digits", value)
