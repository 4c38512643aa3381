"""The whole-batch fast paths of normalization against their per-value references.

* every built-in normalizer with ``batch_first`` (text, address, email, phone,
  digits): ``normalize(values)`` equals ``per_value()`` mapped over the values,
  on generated customers and on hostile strings (quotes, ``#``, extensions,
  ``+``/``00``/``011`` prefixes, ``(0)``, a spreadsheet's ``.0``, NUL and other
  control characters, non-ASCII letters and digits), for several options;
* :func:`normalize_column_with_stats` (Arrow factorization, only the values
  that came out missing classified) equals
  :func:`normalize_column_with_stats_reference` (every distinct value through
  the chain's per-value functions, counted with a Counter) on long and short
  columns holding ``None``, NaN, blanks, placeholders and non-strings, for
  chains of per-value and batch steps.
"""

from __future__ import annotations

import math
import random
import string

import pytest

from er_framework.components import Context
from er_framework.normalize import (
    FACTORIZE_MIN,
    batch_first,
    normalize_column,
    normalize_column_with_stats,
    normalize_column_with_stats_reference,
)
from er_framework.synth.customers import generate_customers
from er_framework.testing import check_normalizer
from er_plugins.normalize_addresses import Address
from er_plugins.normalize_emails import Email
from er_plugins.normalize_phones import Phone
from er_plugins.normalize_text import BATCH_MIN, Digits, Text

DATA = generate_customers(3000, 0.5, 11)


def _column(name: str) -> list[str]:
    return [v for v in DATA.a[name] + DATA.b[name] if v]


def _hostile(seed: int, k: int = 1500) -> list[str]:
    rng = random.Random(seed)
    pieces = [
        "123",
        "Main",
        "St",
        "Street",
        "#",
        "# 4",
        "Apt",
        "p o box",
        "P.O. Box",
        "Post Office",
        "north east",
        "pob",
        "Saint",
        "x12",
        "ext. 7",
        "+1",
        "+44",
        "(0)",
        "00",
        "011",
        ".0",
        " ",
        "\t",
        "\n",
        "\x00",
        "\x01",
        '"',
        "'",
        "`",
        "mailto:",
        "@",
        "@@",
        ".",
        "-",
        "(",
        ")",
        "[",
        "é",
        "ß",
        "İ",
        "ǅ",
        "１２３",
        "٣٤٥",
        "日本",
        "ﬁ",
        "\u00a0",
        "\u200b",
        "\x1c",
        "A",
        "b",
        "gmail.com",
        "GoogleMail.com",
        "555",
        "1234567",
        "0000000",
        "9" * 12,
        "+1 (555) 123-4567",
        "1-555-123-4567",
        "020 7946 0958",
        "+44 20 7946 0958",
        "5551234567.0",
    ]
    out = []
    for _ in range(k):
        out.append("".join(rng.choice(pieces) for _ in range(rng.randrange(1, 6))))
    return list(dict.fromkeys(v for v in out if v.strip()))


def _phones(seed: int, k: int = 3000) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(k):
        digits = "".join(rng.choice(string.digits) for _ in range(rng.choice([3, 7, 9, 10, 10, 10, 11, 12, 13])))
        lead = rng.choice(["", "", "+", "+1", "+1 ", "1", "1-", "00", "0044", "011", "+44 ", "0", "+7", "+380"])
        body = rng.choice(
            [
                digits,
                f"({digits[:3]}) {digits[3:6]}-{digits[6:]}",
                ".".join([digits[:3], digits[3:]]),
                " ".join(digits),
                digits[:1] * len(digits),
            ]
        )
        tail = rng.choice(["", "", "", " x12", " ext. 3", "#9", ".0", " "])
        out.append(lead + body + tail)
    return list(dict.fromkeys(v for v in out if v.strip()))


def _check(n: object, values: list[str]) -> None:
    assert len(values) >= BATCH_MIN
    assert batch_first(n)  # type: ignore[arg-type]
    f = n.per_value()  # type: ignore[attr-defined]
    got = n.normalize(values)  # type: ignore[attr-defined]
    want = [f(v) for v in values]
    bad = [(v, g, w) for v, g, w in zip(values, got, want) if g != w]
    assert not bad, bad[:5]
    # one value at a time (below BATCH_MIN: the per-value path) and mixed with others: the same keys
    assert n.normalize(values[:3]) == want[:3]  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", [1, 2])
def test_text(seed: int) -> None:
    n = Text(Text.Params(), Context())
    _check(n, _hostile(seed) + _column("city") + _column("first_name"))
    _check(n, _column("address"))  # ASCII only: the joined path for every value


@pytest.mark.parametrize("seed", [1, 2])
def test_address(seed: int) -> None:
    n = Address(Address.Params(), Context())
    _check(n, _hostile(seed) + _column("address"))
    _check(n, _column("address"))
    _check(n, [f"{i} North East Street" if i % 3 else f"{i} P O Box {i}" for i in range(200)])


@pytest.mark.parametrize("gmail_dots", [False, True])
def test_email(gmail_dots: bool) -> None:
    n = Email(Email.Params(gmail_dots=gmail_dots), Context())
    odd = ["a@b.", "@b", "a@", "a@@b", "MAILTO:X@Y.Z", " a@b ", "a b@c", "A.B+c@GMAIL.com", "x@y..", "ü@x.de"]
    _check(n, _hostile(3) + _column("email") + odd)
    _check(n, _column("email"))


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"default_region": "GB"},
        {"default_region": "DE"},
        {"default_region": "CA"},
        {"default_region": None},
        {"min_digits": 10},
        {"drop_placeholders": False},
        {"foreign_country_code": "strip"},
    ],
)
def test_phone(params: dict) -> None:
    n = Phone(Phone.Params(**params), Context())
    _check(n, _phones(5) + _hostile(4) + _column("phone"))
    _check(n, _column("phone"))


def _floats(seed: int, k: int = 600) -> list[str]:
    """Numbers written as floats, whole or not, alone or inside other text (the batch's slow pattern marks only
    whole values)."""
    rng = random.Random(seed)
    out = []
    for _ in range(k):
        n = rng.randrange(10**11)
        body = rng.choice([f"{n}.0", f"{n}.00", f"{n}.5", f"{float(n):e}", f"{float(n):.10e}", repr(float(n) * 1e6), f"{n}e+3", f"{n}E5"])
        lead, tail = rng.choice(["", "", " ", "-", "+", "x", "\x00"]), rng.choice(["", "", " ", "\t", "x", ".", "\x00"])
        out.append(lead + body + tail)
    return list(dict.fromkeys(out))


def test_digits() -> None:
    n = Digits(Digits.Params(), Context())
    _check(n, _hostile(6) + _column("zip") + _column("phone"))
    _check(n, _floats(7) + _column("zip"))


def test_phone_floats() -> None:
    n = Phone(Phone.Params(), Context())
    _check(n, _floats(8) + _column("phone"))


@pytest.mark.parametrize("cls", [Text, Address, Email, Phone, Digits])
def test_the_normalizer_contract_holds(cls: type) -> None:
    check_normalizer(cls(cls.Params(), Context()))


# ---------------------------------------------------------------------------
# the column and its statistics


def _raw_column(name: str, size: int, seed: int) -> list[object]:
    rng = random.Random(seed)
    base = DATA.a[name] + DATA.b[name]
    odd: list[object] = [
        None,
        "",
        "  ",
        "N/A",
        "null",
        "-",
        "?",
        "unknown",
        float("nan"),
        0,
        12,
        "\x00",
        "#N/A",
        "1ind",
        "nan",
        "Nan",
        "x",
        "000-000-0000",
        "not a date",
        "@",
        "é",
    ]
    return [rng.choice(odd) if rng.random() < 0.1 else rng.choice(base) for _ in range(size)]


CHAINS = [
    ("first_name", ["name", "nickname"]),
    ("last_name", "name"),
    ("address", "address"),
    ("city", "text"),
    ("zip", "digits"),
    ("phone", "phone"),
    ("email", "email"),
    ("dob", "date"),
    ("address", ["lower", "address"]),  # a batch step after a per-value step (strings no longer distinct)
    ("email", ["email", "text"]),  # two batch steps
]


@pytest.mark.parametrize("field, steps", CHAINS)
@pytest.mark.parametrize("size", [500, FACTORIZE_MIN + 500])
def test_column_with_stats_equals_the_reference(field: str, steps: object, size: int) -> None:
    values = _raw_column(field, size, seed=size)
    got, stats = normalize_column_with_stats(values, steps)
    want, want_stats = normalize_column_with_stats_reference(values, steps)
    assert got == want
    assert stats == want_stats
    assert normalize_column(values, steps) == want


def test_column_of_strings_with_a_lone_surrogate_takes_the_dict_path() -> None:
    values = ["\udc80abc", "Main St"] * (FACTORIZE_MIN // 2 + 1) + [None]
    got, stats = normalize_column_with_stats(values, "address")
    want, want_stats = normalize_column_with_stats_reference(values, "address")
    assert (got, stats) == (want, want_stats)


def test_nan_and_none_are_missing_before() -> None:
    values = [None, float("nan"), "", " ", "N/A", "Bob"] * (FACTORIZE_MIN // 5)
    _, stats = normalize_column_with_stats(values, ["name", "nickname"])
    assert stats["missing_before"] == 4 * (FACTORIZE_MIN // 5)
    assert stats["placeholders"] == FACTORIZE_MIN // 5
    assert math.isclose(stats["distinct_after"], 1)


def test_phone_in_every_region() -> None:
    from er_plugins.normalize_phones import phone_regions

    values = _phones(8, 600)
    for region in phone_regions():
        n = Phone(Phone.Params(default_region=region), Context())
        _check(n, values)


def test_long_batches_are_taken_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import er_plugins.normalize_text as normalize_text

    values = _hostile(9) + _column("address") + _phones(9)
    whole = {cls: cls(cls.Params(), Context()).normalize(values) for cls in (Address, Phone, Email, Text)}
    monkeypatch.setattr(normalize_text, "BATCH_SLICE", 97)  # slices of 97 values (BATCH_MIN <= 97)
    for cls, want in whole.items():
        n = cls(cls.Params(), Context())
        assert n.normalize(values) == want == [n.per_value()(v) for v in values]
