"""The ``address`` normalizer (er_plugins.normalize_addresses): hand-picked cases, idempotence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from normalizer_cases import idempotence_settings, idempotent, norm, text_values

_address_values = st.lists(
    st.sampled_from(["123", "Main", "Street", "St.", "#", "Apt", "4", "North", "East", "P.O.", "Box", "p", "o",
                     "post", "office", "Suite", "Ave", "Saint", "-", ",", "ö", "NW", "n", "e"]),
    max_size=8,
).map(" ".join) | text_values  # fmt: skip


@pytest.mark.parametrize(
    "a, b",
    [
        ("123 Main Street", "123 MAIN ST."),
        ("123 Main Street", "123 main str"),
        ("88 Oak Avenue", "88 Oak Ave"),
        ("88 Oak Avenue", "88 oak av."),
        ("9 Elm Road", "9 elm rd"),
        ("9 Elm Drive", "9 Elm Dr."),
        ("4 Pine Lane", "4 pine ln"),
        ("1 Sunset Boulevard", "1 sunset blvd"),
        ("7 Hill Court", "7 hill ct"),
        ("3 Park Place", "3 park pl"),
        ("10 North Main Street", "10 N. Main St"),
        ("10 Northeast Main St", "10 North-East Main St"),
        ("5 Elm St Apartment 4", "5 Elm St Apt. #4"),
        ("5 Elm St #4", "5 elm st apt 4"),
        ("5 Elm St Suite 200", "5 Elm St Ste 200"),
        ("PO Box 12", "P.O. Box 12"),
        ("Post Office Box 12", "po box 12"),
        ("12 Rue Pérignon", "12 rue perignon"),
    ],
)
def test_address_equivalents(a, b):
    assert norm("address", a) == norm("address", b)


def test_address_values():
    assert norm("address", "123 Main Street, Apt. #4B") == "123 main st apt 4b"
    assert norm("address", "1600 Pennsylvania Avenue NW") == "1600 pennsylvania ave nw"
    assert norm("address", "221B Baker Street") == "221b baker st"


@idempotence_settings
@given(_address_values)
def test_address_idempotent(value):
    idempotent("address", value)
