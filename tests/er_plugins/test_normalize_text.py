"""The ``text``, ``digits``, ``lower`` and ``strip`` normalizers (er_plugins.normalize_text): hand-picked
cases, idempotence."""

from __future__ import annotations

import pytest
from hypothesis import given
from normalizer_cases import idempotence_settings, idempotent, norm, normalize, text_values


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
