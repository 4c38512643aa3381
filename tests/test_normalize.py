"""Field normalizers: the family (chains, missing values, errors, cache, third-party normalizers) and the
built-ins of er_plugins.normalizers (hand-picked cases, idempotence)."""

from __future__ import annotations

import random
import types
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from er_framework import hookimpl
from er_framework.components import Normalizer, Params
from er_framework.errors import PluginError
from er_framework.normalize import (
    PLACEHOLDER_KEYS,
    check_steps,
    is_missing,
    normalize_column,
    normalize_column_with_stats,
    resolve_steps,
)
from er_framework.registry import build_registry
from er_plugins.normalize_names import NAME_TITLES, canonical_first_name, nickname_table

BUILTINS = build_registry(autoload=False).components["normalizer"]


def normalize(name: str, values, **options):
    """The normalizer ``name`` with ``options`` over a column (a chain of one step)."""
    return normalize_column(values, {"type": name, **options})


def norm(name: str, value, **options):
    return normalize(name, [value], **options)[0]


MISSING = [None, "", " ", "\t\n", "\u00a0", "-", "--", "?", "N/A", "n/a", "NA", "null", "NULL", "None",
           "none", "nil", "unknown", "Unknown", "#N/A", "<NA>", "NaN", "-nan", "undefined", "missing",
           "not available", "Not Applicable", float("nan")]  # fmt: skip


# ---------------------------------------------------------------------------
# registry


def test_registry_names_and_descriptions():
    assert set(BUILTINS) == {
        "text", "name", "nickname", "phone", "address", "email", "date", "digits", "lower", "strip",
    }  # fmt: skip
    for name, info in BUILTINS.items():
        assert info.cls.name == name and info.plugin.name == "normalizers"
        assert isinstance(info.cls.summary, str) and 10 < len(info.cls.summary) < 120
        assert info.cls.Params()  # every option has a valid default
        for opt, f in info.cls.Params.model_fields.items():
            assert f.description, (name, opt)


@pytest.mark.parametrize("name", sorted(BUILTINS))
@pytest.mark.parametrize("value", MISSING, ids=repr)
def test_missing_and_placeholders_stay_missing(name, value):
    assert norm(name, value) is None


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_never_returns_empty_string(name):
    values = [
        "",
        "   ",
        "!!!",
        "...",
        "Mr.",
        "()",
        "+",
        "@",
        "x",
        "a@",
        "---",
        "###",
        "\u200b",
        "\u0301",
    ]
    assert "" not in normalize(name, values)


def test_non_string_values():
    assert normalize("phone", [5551234567, 5551234567.0, float("nan")]) == [
        "5551234567",
        "5551234567",
        None,
    ]
    assert normalize_column((v for v in ["A", None]), "lower") == [
        "a",
        None,
    ]  # any iterable


def test_placeholder_keys_documented():
    assert {"", "na", "null", "none", "nil", "unknown", "nan"} <= PLACEHOLDER_KEYS


# ---------------------------------------------------------------------------
# text and name


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


# ---------------------------------------------------------------------------
# nickname


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


# ---------------------------------------------------------------------------
# phone


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


# ---------------------------------------------------------------------------
# address


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


# ---------------------------------------------------------------------------
# email


def test_email():
    assert norm("email", "  John.Doe@Example.COM ") == "john.doe@example.com"
    assert norm("email", "mailto:x@y.org") == "x@y.org"
    for bad in ["john", "a@b@c", "@example.com", "john@", "john doe@x.com", "@"]:
        assert norm("email", bad) is None, bad
    assert norm("email", "John.Doe+news@GoogleMail.com") == "john.doe+news@googlemail.com"
    assert norm("email", "John.Doe+news@GoogleMail.com", gmail_dots=True) == "johndoe@gmail.com"
    assert norm("email", "j.doe+x@yahoo.com", gmail_dots=True) == "j.doe+x@yahoo.com"


# ---------------------------------------------------------------------------
# date


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


def test_stats():
    values = [
        "1980-03-05",
        None,
        "",
        "  ",
        "N/A",
        "garbage",
        "garbage",
        "31/31/1980",
        "1980-03-05",
        "5 Mar 1980",
    ]
    out, stats = normalize_column_with_stats(values, ["date"])
    assert out == normalize_column(values, "date")
    assert out[0] == out[-1] == "1980-03-05"
    assert stats["values"] == 10
    assert stats["missing_before"] == 3
    assert stats["placeholders"] == 1
    assert stats["unparseable"] == 3
    assert stats["unparseable_examples"] == ["garbage", "31/31/1980"]
    assert stats["missing_after"] == 7 == sum(v is None for v in out)
    assert stats["distinct_before"] == 4 and stats["distinct_after"] == 1
    _, phone_stats = normalize_column_with_stats(["555-123-4567", "12", "000-000-0000", "-", None], ["phone"])
    assert (
        phone_stats["unparseable"],
        phone_stats["placeholders"],
        phone_stats["missing_before"],
    ) == (2, 1, 1)
    many = [f"bad{i}" for i in range(20)]
    assert normalize_column_with_stats(many, ["date"])[1]["unparseable_examples"] == many[:5]


# ---------------------------------------------------------------------------
# simple ones


def test_simple():
    assert normalize("digits", ["(555) 123-4567", "no digits", "٣٤"]) == [
        "5551234567",
        None,
        "34",
    ]
    assert normalize("lower", ["ABC", "Straße"]) == ["abc", "strasse"]
    assert normalize("strip", [" a b ", "x"]) == ["a b", "x"]


# ---------------------------------------------------------------------------
# idempotence


_text_values = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40) | st.from_regex(
    r"[ A-Za-z0-9.,#'@+()/-]{0,40}", fullmatch=True
)
_phone_values = st.from_regex(r"[ +0-9().x#-]{0,25}", fullmatch=True) | _text_values
_address_values = st.lists(
    st.sampled_from(["123", "Main", "Street", "St.", "#", "Apt", "4", "North", "East", "P.O.", "Box", "p", "o",
                     "post", "office", "Suite", "Ave", "Saint", "-", ",", "ö", "NW", "n", "e"]),
    max_size=8,
).map(" ".join) | _text_values  # fmt: skip


def _idempotent(name: str, value: str, **options) -> None:
    once = norm(name, value, **options)
    assert once != ""
    if once is not None:
        assert norm(name, once, **options) == once, (value, once)


_settings = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(_text_values)
def test_text_idempotent(value):
    _idempotent("text", value)


@_settings
@given(_text_values, st.booleans())
def test_name_idempotent(value, sort_tokens):
    _idempotent("name", value, sort_tokens=sort_tokens)
    _idempotent("nickname", value)


@_settings
@given(_address_values)
def test_address_idempotent(value):
    _idempotent("address", value)


@_settings
@given(
    _text_values | st.from_regex(r"[ A-Za-z.+]{0,10}@[A-Za-z.]{0,10}", fullmatch=True),
    st.booleans(),
)
def test_email_idempotent(value, gmail_dots):
    _idempotent("email", value, gmail_dots=gmail_dots)


@_settings
@given(
    _phone_values,
    st.sampled_from(["US", "GB", "DE", "IT", "FR", "RU", None]),
    st.sampled_from(["keep", "strip"]),
)
def test_phone_idempotent(value, region, foreign):
    _idempotent("phone", value, default_region=region, foreign_country_code=foreign)


@_settings
@given(_text_values | st.dates().map(str) | st.dates().map(lambda d: d.strftime("%B %d, %Y")))
def test_date_idempotent(value):
    _idempotent("date", value)


# ---------------------------------------------------------------------------
# chains and errors


def test_chain_order_and_forms():
    values = ["  Dr. Bob  Smith ", "bob smith", None, "N/A"]
    assert normalize_column(values, ["name", "nickname"]) == [
        "robert smith",
        "robert smith",
        None,
        None,
    ]
    assert normalize_column(values, "name") == ["bob smith", "bob smith", None, None]
    assert normalize_column(values, {"type": "name", "sort_tokens": True}) == [
        "bob smith",
        "bob smith",
        None,
        None,
    ]
    assert normalize_column(["(555) 123-4567"], [{"type": "phone", "default_region": "US"}]) == ["5551234567"]
    assert normalize_column(["  x ", " ", "", None], []) == ["  x ", None, None, None]
    assert normalize_column(["A B"], ["strip", "lower", "text"]) == ["a b"]


def test_unknown_normalizer_lists_choices():
    with pytest.raises(ValueError) as e:
        normalize_column(["x"], ["nmae"])
    msg = str(e.value)
    assert "'nmae'" in msg and "did you mean 'name'" in msg
    for name in BUILTINS:
        assert name in msg


def test_unknown_option_lists_choices():
    with pytest.raises(ValueError) as e:
        normalize_column(["x"], [{"type": "phone", "region": "US"}])
    msg = str(e.value)
    assert "'region'" in msg and "default_region" in msg and "min_digits" in msg and "drop_placeholders" in msg
    with pytest.raises(ValueError, match="has no option 'bogus'"):
        normalize("email", ["a@b"], bogus=1)
    with pytest.raises(ValueError, match="valid options: none"):
        normalize("text", ["a"], sort_tokens=True)


def test_check_steps():
    assert (
        check_steps(
            [
                "name",
                "nickname",
                {"type": "phone", "default_region": "GB", "min_digits": 8},
            ]
        )
        == []
    )
    assert check_steps("date") == []
    assert check_steps([]) == []
    problems = check_steps(
        [
            "nam",
            {"type": "phone", "region": "US"},
            {"type": "phone", "default_region": "XX"},
            {"phone": {"default_region": "US"}},
            3,
            {"type": "date", "dayfirst": "yes"},
            {"type": "phone", "min_digits": 0},
            {"type": "nickname", "tokens": "last"},
            {"type": "date", "yy_pivot": True},
        ]
    )
    assert len(problems) == 9
    assert [p.split(":")[0] for p in problems] == [f"steps[{i}]" for i in range(9)]
    assert "did you mean 'name'" in problems[0]
    assert "default_region" in problems[1]
    assert "'XX'" in problems[2] and "US" in problems[2] and "GB" in problems[2]
    assert "'type'" in problems[3] and "{type: phone" in problems[3]
    assert "got 3" in problems[4]
    assert "boolean" in problems[5]
    assert ">= 1" in problems[6]
    assert "all, first" in problems[7]
    assert "integer" in problems[8]
    assert check_steps(42) and "list" in check_steps(42)[0]


# ---------------------------------------------------------------------------
# the distinct-value cache


@pytest.mark.parametrize(
    "steps",
    [["text"], ["name", "nickname"], [{"type": "name", "sort_tokens": True}], ["address"], ["email"],
     [{"type": "phone", "default_region": "GB"}], ["phone"], ["date"], ["digits"]],
    ids=str,
)  # fmt: skip
def test_cache_matches_per_value(steps):
    rng = random.Random(7)
    pool = ["José Smith", "Bob  SMITH", "n/a", "", None, "(555) 123-4567", "+1 555 123 4567", "123 Main Street #4",
            "x@Example.com", "March 5, 1980", "05/03/1980", "Zoë O'Neil", "  ", "020 7946 0958", "garbage",
            "Dr. Bill Jones Jr.", "1980-03-05"]  # fmt: skip
    values = [rng.choice(pool) for _ in range(3000)] + [f"{rng.randint(0, 50)} Elm St" for _ in range(500)]
    rng.shuffle(values)
    column = normalize_column(values, steps)
    one_by_one = [normalize_column([v], steps)[0] for v in values]
    assert column == one_by_one
    assert len(column) == len(values)
    if len(steps) == 1 and isinstance(steps[0], str):
        assert normalize(steps[0], values) == column


# ---------------------------------------------------------------------------
# the family: third-party normalizers, batch steps, plugin errors

class InitialsParams(Params):
    sep: str = Field(default="", description="between the initials")


class Initials(Normalizer):
    """A batch normalizer (no per_value): the initials of the words; no letters -> missing."""

    name = "initials"
    summary = "initials of the words"
    Params = InitialsParams
    calls: ClassVar[list[list[str]]] = []

    def normalize(self, values):
        type(self).calls.append(list(values))
        sep = self.params.sep
        return [sep.join(w[0] for w in v.split() if w[0].isalpha()) or None for v in values]


class Reverse(Normalizer):
    name = "reverse"
    summary = "the characters in reverse order"

    def per_value(self):
        return lambda s: s[::-1]


class Broken(Normalizer):
    name = "broken"
    summary = "returns whatever it is told to"

    def __init__(self, result, *args) -> None:
        super().__init__(*args)
        self.result = result

    def normalize(self, values):
        return self.result(values)


PLUGIN = types.ModuleType("erx_initials")
PLUGIN.er_register_normalizers = hookimpl(lambda: [Initials, Reverse])  # type: ignore[attr-defined]


def test_a_plugin_normalizer_is_found_by_name_with_options():
    reg = build_registry(extra_modules=[PLUGIN], autoload=False)
    assert reg.components["normalizer"]["initials"].plugin.name == "erx_initials"
    values = ["John Ronald Tolkien", "n/a", None, "john  ronald tolkien", "42 x"]
    Initials.calls.clear()
    out = normalize_column(values, ["text", {"type": "initials", "sep": "."}], registry=reg)
    assert out == ["j.r.t", None, None, "j.r.t", "x"]
    # one batch call, with the distinct non-missing strings reaching it
    assert Initials.calls == [["john ronald tolkien", "42 x"]]
    problems = check_steps([{"type": "initials", "sepp": "."}, "initals"], registry=reg)
    assert "has no option 'sepp'" in problems[0] and "did you mean 'sep'?" in problems[0]
    assert "did you mean 'initials'?" in problems[1]
    with pytest.raises(ValueError, match="unknown normalizer 'initials'"):
        normalize_column(["x"], "initials")  # the default registry has no such plugin


def reference(values, steps):
    """Naive: value by value, each step on one string, missing checked before and after each step."""
    out = []
    for v in values:
        s = None if is_missing(v) else str(v)
        for n in steps:
            if s is None:
                break
            f = n.per_value()
            s = f(s) if f is not None else n.normalize([s])[0]
            s = None if is_missing(s) else s
        out.append(s)
    return out


@pytest.mark.parametrize(
    "names",
    [["initials"], ["text", "initials"], ["initials", "reverse"], ["reverse", "initials", "lower", "reverse"],
     ["name", "reverse", "text"], []],
    ids=str,
)
def test_chains_of_batch_and_per_value_steps_equal_the_naive_reference(names):
    reg = build_registry(extra_modules=[PLUGIN], autoload=False)
    steps = [reg.components["normalizer"][n].cls() for n in names]
    rng = random.Random(3)
    pool = ["Ann Lee", "ann lee", " -- ", "", None, float("nan"), "N/A", "Dr. Zoë Ng", "x", "Éa ?", "?", 12, "b  a", "!!"]
    values = [rng.choice(pool) for _ in range(400)]
    assert normalize_column(values, steps) == reference(values, steps)
    out, stats = normalize_column_with_stats(values, steps)
    assert out == reference(values, steps) and stats["missing_after"] == sum(v is None for v in out)


def test_resolve_steps_gives_classes_and_validated_params():
    resolved, problems = resolve_steps(["name", {"type": "phone", "default_region": "gb"}])
    assert problems == []
    assert [cls.name for cls, _ in resolved] == ["name", "phone"]
    assert resolved[1][1].default_region == "GB" and resolved[1][1].min_digits == 7
    _, problems = resolve_steps([{"type": "phone", "min_digits": 0}])
    assert (problems[0].index, problems[0].key) == (0, "min_digits") and problems[0].fix == "use a value >= 1"


def test_a_normalizer_breaking_the_contract_is_a_plugin_error():
    with pytest.raises(PluginError, match=r"normalize\(\) returned 1 values for 2 values"):
        normalize_column(["a", "b", "a"], [Broken(lambda vs: ["x"])])
    with pytest.raises(PluginError, match="returned int 7 for 'a'; a normalizer returns a str or None"):
        normalize_column(["a"], [Broken(lambda vs: [7] * len(vs))])

    class Bad(Normalizer):
        name = "bad"

        def per_value(self):
            return lambda s: b"bytes"

    with pytest.raises(PluginError, match="normalizer 'bad'.*returned bytes"):
        normalize_column(["a"], ["text", Bad()])

    class StrSubclass(str):
        pass

    assert normalize_column(["a", "n/a"], [Broken(lambda vs: [StrSubclass(v + "!") for v in vs])]) == ["a!", None]
    with pytest.raises(NotImplementedError, match="neither normalize"):
        Normalizer().normalize(["a"])


def test_a_missing_required_package_is_a_problem_with_the_install():
    class NeedsIt(Normalizer):
        name = "needs_it"
        requires = ("no_such_module_er_test",)

        def per_value(self):
            return str.upper

    plugin = types.ModuleType("erx_needs")
    plugin.er_register_normalizers = hookimpl(lambda: [NeedsIt])  # type: ignore[attr-defined]
    reg = build_registry(extra_modules=[plugin], autoload=False)
    assert check_steps("needs_it", registry=reg) == [
        "steps[0]: normalizer 'needs_it' needs the Python package 'no_such_module_er_test'; pip install no_such_module_er_test"
    ]
