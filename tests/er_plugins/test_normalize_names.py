"""The ``name`` and ``nickname`` normalizers (er_plugins.normalize_names): hand-picked cases, idempotence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from normalizer_cases import idempotence_settings, idempotent, norm, text_values

from er_framework.normalize import normalize_column
from er_plugins.normalize_names import NAME_TITLES, canonical_first_name, nickname_table


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Dr. John Smith Jr.", "john smith"),
        ("MR. JOSÉ GARCÍA", "jose garcia"),
        ("Mrs Mary-Jane O'Neil III", "mary jane oneil"),
        ("Smith, John", "smith john"),
        ("Ms.", None),  # only a title: nothing left
    ],
)
def test_name(raw, expected):
    assert norm("name", raw) == expected


def test_name_options():
    assert norm("name", "Smith, John", sort_tokens=True) == norm("name", "John Smith", sort_tokens=True) == "john smith"
    assert norm("name", "Dr John", drop_titles=False) == "dr john"
    assert {"mr", "mrs", "ms", "dr", "jr", "sr", "ii", "iii"} <= NAME_TITLES


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Bob", "robert"),
        ("bobby", "robert"),
        ("Bill", "william"),
        ("Peggy", "margaret"),
        ("Jim", "james"),
        ("Liz", "elizabeth"),
        ("Robert", "robert"),  # canonical names stay
        ("William", "william"),
        ("John", "john"),
        ("Mary", "mary"),
        ("José", "jose"),  # not in the list: unchanged
        ("Xyzzy", "xyzzy"),
    ],
)
def test_nickname(raw, expected):
    assert norm("nickname", raw) == expected


def test_nickname_after_name_and_tokens_option():
    assert normalize_column(["Mr. Bob Smith", "ROBERT SMITH"], ["name", "nickname"]) == ["robert smith"] * 2
    assert norm("nickname", "bob bill", tokens="first") == "robert bill"
    assert norm("nickname", "bob bill") == "robert william"


def test_nickname_table_is_idempotent():
    table = nickname_table()
    assert len(table) > 500
    assert all(canonical_first_name(v) == v for v in table.values())


@idempotence_settings
@given(text_values, st.booleans())
def test_name_idempotent(value, sort_tokens):
    idempotent("name", value, sort_tokens=sort_tokens)
    idempotent("nickname", value)
