"""Field normalizers: the family (chains, missing values, errors, cache, third-party normalizers), over the
built-ins of er_plugins.normalizers (their hand-picked cases and idempotence: tests/er_plugins/test_normalize_*.py)."""

from __future__ import annotations

import random
import types
from typing import ClassVar

import pytest
from pydantic import Field

from er_framework import hookimpl
from er_framework.components import Normalizer, Params
from er_framework.errors import PluginError
from er_framework.normalize import (
    PLACEHOLDER_KEYS,
    UNPARSED_WARN_SHARE,
    check_steps,
    is_missing,
    merge_stats,
    normalize_column,
    normalize_column_with_stats,
    normalize_column_with_stats_reference,
    resolve_steps,
    step_names,
    unparsed_problem,
    unparsed_text,
    unparsed_warning,
)
from er_framework.registry import build_registry

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
# every built-in: missing values, never an empty key


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
# the statistics of a column


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


def test_unparsed_counts_of_a_small_table():
    # 12 values: 2 missing (None, blank), 2 placeholders (N/A, null), 8 present; of those, 4 not read
    dates = [
        "1980-03-05", None, " ", "N/A", "null", "31/02/1999", "hello", "hello", "19151111.0", "19151111.0x", "5 Mar 1980", "1.9151111e7",
    ]  # fmt: skip
    out, st = normalize_column_with_stats(dates, ["date"])
    assert out == [
        "1980-03-05", None, None, None, None, None, None, None, "1915-11-11", None, "1980-03-05", "1915-11-11",
    ]  # fmt: skip
    assert (st["values"], st["missing_before"], st["placeholders"], st["unparseable"]) == (12, 2, 2, 4)
    assert st["unparseable_share"] == 0.5  # 4 of the 8 present values
    assert st["unparseable_examples"] == ["31/02/1999", "hello", "19151111.0x"]
    assert st["steps"] == ["date"] and st["missing_after"] == 8
    assert (out, st) == normalize_column_with_stats_reference(dates, ["date"])
    # email without @, digits of a number with a fraction, a placeholder that is not "unparsed"
    _, em = normalize_column_with_stats(["a@b.com", "foo", "", "unknown", "x@y"], "email")
    assert (em["unparseable"], em["unparseable_share"], em["unparseable_examples"]) == (1, round(1 / 3, 6), ["foo"])
    _, dg = normalize_column_with_stats(["1999.0", "12.5", "n/a", "no digits", 7.25, None], [{"type": "digits"}])
    assert (dg["unparseable"], dg["placeholders"], dg["missing_before"]) == (3, 1, 1)
    assert dg["unparseable_examples"] == ["12.5", "no digits", "7.25"]  # as text
    assert dg["steps"] == ["digits"] and dg["unparseable_share"] == 0.75
    # nothing present: share 0
    assert normalize_column_with_stats([None, "N/A"], "date")[1]["unparseable_share"] == 0.0


@pytest.mark.parametrize("cuts", [[0, 40], [0, 7, 8, 25, 40], [0, 1, 2, 3, 39, 40]])
def test_merged_stats_of_parts_equal_the_whole(cuts):
    """The stats of a column normalized in parts (Dask partitions), merged, equal those of the whole column,
    examples included (the first five distinct, in order); distinct counts are not known across parts."""
    rng = random.Random(len(cuts))
    pool = ["1980-03-05", None, " ", "N/A", "31/02/1999", "hello", "x1", "x2", "x3", "x4", "x5", "19151111.0", "2001-01-01"]
    dates = [rng.choice(pool) for _ in range(40)]
    whole = normalize_column_with_stats(dates, ["date"])[1]
    parts = [{"dob": normalize_column_with_stats(dates[a:b], ["date"])[1]} for a, b in zip(cuts, cuts[1:])]
    merged = merge_stats(parts)["dob"]
    many = len(parts) > 1
    assert merged == {**whole, **({"distinct_before": None, "distinct_after": None} if many else {})}
    assert merge_stats([]) == {}


def test_step_names():
    assert step_names("date") == ["date"]
    assert step_names(["name", {"type": "nickname", "tokens": "first"}, {"oops": 1}]) == ["name", "nickname", "?"]
    assert step_names([]) == []


def test_unparsed_warning_and_problem():
    st = {
        "steps": ["text", "date"], "values": 5200, "missing_before": 150, "placeholders": 50, "unparseable": 812,
        "unparseable_share": 812 / 5000, "unparseable_examples": ["19151111.0x", "31/02/99"],
    }  # fmt: skip
    assert unparsed_text("dob", st) == (
        "dob: 812 of 5,000 values (16.2%) could not be read by [text, date] and became missing, e.g. '19151111.0x', '31/02/99'"
    )
    warning = unparsed_warning("dob", st)
    assert warning is not None and warning.startswith("warning: dob: 812 of 5,000 values (16.2%)")
    assert warning.endswith(
        "fix the values or the field's normalizers (er plugins lists their options), or set normalize_strict: true to stop on them"
    )
    at = {**st, "unparseable": 50, "unparseable_share": UNPARSED_WARN_SHARE}  # 1% exactly (50 of 5,000): no warning
    assert UNPARSED_WARN_SHARE == 50 / 5000
    assert unparsed_warning("dob", at) is None
    assert unparsed_warning("dob", {**at, "unparseable": 51, "unparseable_share": 51 / 5000}) is not None
    problem = unparsed_problem("dob", {**st, "unparseable": 1, "unparseable_share": 1 / 5000}, "job.yaml")
    assert problem is not None and problem.path == "normalize.dob" and problem.where == "job.yaml"
    assert "1 of 5,000 values (<0.1%) could not be read by [text, date]" in problem.message
    assert "remove normalize_strict: true" in problem.fix
    assert unparsed_problem("dob", {**st, "unparseable": 0}, "job.yaml") is None


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


class Initials(Normalizer[InitialsParams]):
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
    [
        ["initials"],
        ["text", "initials"],
        ["initials", "reverse"],
        ["reverse", "initials", "lower", "reverse"],
        ["name", "reverse", "text"],
        [],
    ],
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


LIST_VALUES = [
    '["John  Smith", "jane DOE", null, "", "N/A", 3]',  # a Parquet list column's value, as it arrives
    '["Jane Doe", "jane doe"]',
    "[]",
    "John Smith; Jane Doe;; ",
    "Mary-Ann O'Neil",
    '["a;b", "c"]',
    "[not json",
    None,
    "N/A",
    "  ",
    '["Dr. Smith"]',
]


@pytest.mark.parametrize(
    "steps",
    [
        ["name"],
        ["text"],
        ["split"],
        ["split", "name"],
        [{"type": "split", "delimiter": ","}, "text"],
        ["strip", "split", "text", "split"],
        [],
    ],
    ids=str,
)
def test_lists_are_normalized_element_by_element_as_the_reference(steps):
    """A JSON list value goes through the chain element by element (missing elements dropped, each key once);
    ``split`` makes a list of text and the later steps take its elements; the batch path equals the naive
    per-value reference, stats included."""
    values = LIST_VALUES * 3
    assert normalize_column_with_stats(values, steps) == normalize_column_with_stats_reference(values, steps)


def test_split_and_list_elements():
    got = normalize_column(LIST_VALUES, ["split", "name"])
    assert got[0] == '["john smith", "jane doe", "3"]' and got[1] == '["jane doe"]'
    assert got[2] is None and got[3] == '["john smith", "jane doe"]' and got[5] == '["a", "b", "c"]'
    assert normalize_column(['["H04L", "g06f"]', "H04L;G06F"], "text") == ['["h04l", "g06f"]', "h04l g06f"]
    # a list whose every element is unreadable is an unparsed value
    _, st = normalize_column_with_stats(['["x", "y"]', '["1999-01-02"]'], "date")
    assert (st["unparseable"], st["unparseable_examples"]) == (1, ['["x", "y"]'])
