"""Comparison ladders of fellegi_sunter (er_plugins/comparisons.py): every rule against a plain per-pair
loop on random values (missing, blank, floats, bad dates, JSON and delimited lists), the old
``comparison`` + ``levels`` syntax unchanged, the validation messages, and a ladder job run end to end
(``python -m er_framework run``) and indexed."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jellyfish
import numpy as np
import pytest
from pydantic import ValidationError

import er_plugins.comparisons as cmp
import er_plugins.fellegi_sunter as fs
import er_plugins.record_columns as rc
from er_framework.components import Context
from er_framework.config import parse_job
from er_framework.data import Batch, Pairs, Records
from er_framework.index.build import build_index
from er_framework.kernels.em import level_of
from er_plugins.comparisons import LadderColumn, Rule, parse_date, parse_list, parse_number, phonetic_code
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams, FSField

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------
# random values

NAMES = ["John", "Jon", "Johnny", "Smith", "Smyth", "Ann", "Anne", "Lee", "Li", "O'Neil", "José", "Müller", "Mueller",
         "Jean Paul", "Paul Jean", "Knight", "Night", "123", "", "  ", None]  # fmt: skip
NUMBERS = ["1999", "1999.0", "2000", "1998.5", "-3", "0", "0.0", "-0", "abc", "", None, "1e3", "1000", " 42 ", "41.99999",
           "+7", ".5", "1.1", "1.0", "1,5", "nan", "inf"]  # fmt: skip
DATES = ["1999-03-14", "19990314", "1999-14-03", "1999-3-4", "1999-04-03", "1999-03-04", "2000-02-29", "2001-02-29", "bad",
         "", None, "2000-03-13", "1998-03-15", "1999-03-13", "2000-03-14", "1999-05-14", "1999-02-14", "1999-12-31",
         "2000-01-01", "1975-03-14", "1950-07-01"]  # fmt: skip
YEARS = ["1999", "1999.0", "2000", None, "x", "1998"]
MONTHS = ["3", "3.0", "4", "14", None, "12", "1"]
DAYS = ["14", "4", "3", "3.0", None, "31", "1", "3.5"]
LISTS = ['["a", "b"]', "a;b", "b; c", "[]", "", "[1, 2]", "1;2", '["a", null, " "]', "[bad", "c", None, " ; ", '{"a": 1}',
         "a|b", "b|c|d", "a;b;x;y", '["b", "c", "d"]', "a; b; c; d"]  # fmt: skip
ALL_SCORERS = ["ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "jaro_winkler", "levenshtein"]


def _records(n: int, seed: int) -> Records:
    rng = np.random.default_rng(seed)

    def pick(pool: list[Any]) -> list[Any]:
        return [pool[i] for i in rng.integers(0, len(pool), n)]

    return Records.from_columns(
        [str(i) for i in range(n)],
        {
            "first": pick(NAMES),
            "last": pick(NAMES),
            "num": pick(NUMBERS),
            "date": pick(DATES),
            "y": pick(YEARS),
            "m": pick(MONTHS),
            "d": pick(DAYS),
            "tags": pick(LISTS),
        },
        "A",
    )


def _pairs(n_records: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    return rng.integers(0, n_records, n).astype(np.int64), rng.integers(0, n_records, n).astype(np.int64)


# ---------------------------------------------------------------------------
# the naive reference: one pair at a time


def _joined(records: Records, columns: list[str], i: int) -> str | None:
    parts = [records.fields[c][i] for c in columns]
    present = [p for p in parts if p is not None and p.strip() != ""]
    return " ".join(present) if present else None


def _whole_units(earlier: tuple[int, int, int], later: tuple[int, int, int], step: int) -> int:
    """Largest k with earlier + k * step months <= later (day kept): whole months (step 1) or years (step 12)."""
    k = 0
    while True:
        months = earlier[1] - 1 + (k + 1) * step
        nxt = (earlier[0] + months // 12, months % 12 + 1, earlier[2])
        if nxt > later:
            return k
        k += 1


def _holds(rule: Rule, kind: str, a: Any, b: Any, ta: str, tb: str, wa: str | None, wb: str | None) -> bool:
    c = rule.comparison
    if c == "exact":
        return bool(a == b)
    if c in ALL_SCORERS:
        fn, mult = rc.SCORERS[c]
        assert fn is not None and rule.at_least is not None
        return ta == tb or fn(ta, tb) * mult >= rule.at_least
    if c == "phonetic":
        f = getattr(jellyfish, rule.algorithm or "metaphone")
        ca = " ".join(f(w) for w in re.findall(r"[^\W\d_]+", ta))
        cb = " ".join(f(w) for w in re.findall(r"[^\W\d_]+", tb))
        return ca != "" and ca == cb
    if c == "swapped":
        return wa is not None and wb is not None and ta == wb and wa == tb
    if c == "difference":
        assert rule.at_most is not None
        return abs(a - b) <= rule.at_most + 1e-9 * max(abs(a), abs(b), 1.0)
    if c == "relative_difference":
        assert rule.at_most is not None
        big = max(abs(a), abs(b))
        return (abs(a - b) / big if big else 0.0) <= rule.at_most + 1e-9
    if c == "date_difference":
        assert rule.at_most is not None
        unit = rule.unit or "days"
        if unit == "days":
            return abs((dt.date(*a) - dt.date(*b)).days) <= rule.at_most
        lo, hi = sorted([a, b])
        return _whole_units(lo, hi, 1 if unit == "months" else 12) <= rule.at_most
    if c == "transposed_day_month":
        return bool(a[0] == b[0] and a[2] == b[1] and a[1] == b[2] and a[1] != a[2])
    if c == "jaccard":
        assert rule.at_least is not None
        return len(a & b) / len(a | b) >= rule.at_least - 1e-9
    if c == "overlap":
        return len(a & b) >= (1 if rule.at_least is None else rule.at_least)
    raise AssertionError(c)


def _naive_levels(records: Records, fld: FSField, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    assert fld.ladder is not None
    columns = rc.field_columns(fld.field)
    kind = cmp.ladder_kind(fld.ladder)
    delimiter = fld.delimiter or ";"
    out = []
    for i, j in zip(left.tolist(), right.tolist()):
        ta, tb = _joined(records, columns, i), _joined(records, columns, j)
        if ta is None or tb is None:
            out.append(-1)
            continue
        if kind == "number":
            a, b = parse_number(ta), parse_number(tb)
        elif kind == "date":
            a, b = parse_date(ta, len(columns) == 3), parse_date(tb, len(columns) == 3)
        elif kind == "list":
            a, b = parse_list(ta, delimiter), parse_list(tb, delimiter)
        else:
            a, b = ta, tb
        if a is None or b is None:
            out.append(-1)
            continue
        level = len(fld.ladder)
        for k, rule in enumerate(fld.ladder):
            wa = wb = None
            if rule.comparison == "swapped":
                wa, wb = _joined(records, rule.with_columns, i), _joined(records, rule.with_columns, j)
            if _holds(rule, kind, a, b, ta, tb, wa, wb):
                level = k
                break
        out.append(level)
    return np.array(out, dtype=np.int64)


LADDERS: list[dict[str, Any]] = [
    {
        "field": "first",
        "ladder": [
            "exact",
            {"comparison": "jaro_winkler", "at_least": 92},
            {"comparison": "phonetic", "algorithm": "soundex"},
            {"comparison": "phonetic"},
            {"comparison": "token_set_ratio", "at_least": 80},
            {"comparison": "swapped", "with": "last"},
            {"comparison": "levenshtein", "at_least": 40},
        ],
    },
    {
        "field": ["first", "last"],
        "name": "full",
        "ladder": [
            {"comparison": "token_sort_ratio", "at_least": 100},
            {"comparison": "phonetic", "algorithm": "nysiis"},
            {"comparison": "phonetic", "algorithm": "match_rating_codex"},
            {"comparison": "ratio", "at_least": 70},
            {"comparison": "partial_ratio", "at_least": 90},
        ],
    },
    {
        "field": "num",
        "ladder": [
            "exact",
            {"comparison": "difference", "at_most": 0.1},
            {"comparison": "difference", "at_most": 1},
            {"comparison": "relative_difference", "at_most": 0.05},
            {"comparison": "difference", "at_most": 1000},
            {"comparison": "jaro_winkler", "at_least": 80},
        ],
    },
    {
        "field": "date",
        "ladder": [
            "exact",
            "transposed_day_month",
            {"comparison": "date_difference", "at_most": 1, "unit": "days"},
            {"comparison": "date_difference", "at_most": 31},
            {"comparison": "date_difference", "at_most": 2, "unit": "months"},
            {"comparison": "date_difference", "at_most": 1, "unit": "years"},
            {"comparison": "levenshtein", "at_least": 80},
        ],
    },
    {
        "field": ["y", "m", "d"],
        "name": "dob",
        "ladder": [
            "exact",
            {"comparison": "transposed_day_month"},
            {"comparison": "date_difference", "at_most": 0, "unit": "months"},
            {"comparison": "date_difference", "at_most": 1, "unit": "years"},
        ],
    },
    {
        "field": "tags",
        "ladder": [
            "exact",
            {"comparison": "jaccard", "at_least": 0.5},
            {"comparison": "overlap", "at_least": 2},
            {"comparison": "overlap"},
        ],
    },
    {
        "field": "tags",
        "name": "tags_pipe",
        "delimiter": "|",
        "ladder": [{"comparison": "jaccard", "at_least": 1}, {"comparison": "jaccard", "at_least": 0.3}, "overlap"],
    },
]


@pytest.mark.parametrize("arrow", [False, True], ids=["python", "arrow"])
def test_every_rule_matches_the_per_pair_reference(monkeypatch: pytest.MonkeyPatch, arrow: bool) -> None:
    if arrow:  # FieldColumn's Arrow preparation (used from ARROW_MIN_VALUES rows on)
        monkeypatch.setattr(rc, "ARROW_MIN_VALUES", 0)
    records = _records(1500, seed=3)
    left, right = _pairs(len(records), 6000, seed=3)
    fields = [FSField.model_validate(x) for x in LADDERS]
    rows = rc.rows_of(len(records), left, right)
    seen: set[tuple[str, int]] = set()
    for fld in fields:
        assert fld.ladder is not None
        col = LadderColumn(records, rc.field_columns(fld.field), fld.ladder, rows, fld.delimiter)
        got = col.levels(left, right, 1)
        want = _naive_levels(records, fld, left, right)
        np.testing.assert_array_equal(got, want, err_msg=fld.label)
        seen |= {(fld.label, int(x)) for x in np.unique(got)}
        # every level (each rule, else, missing) is reached by the random data
        assert {int(x) for x in np.unique(got)} == set(range(-1, fld.n_levels)), (fld.label, np.unique(got))
    assert seen


def test_consecutive_rules_of_one_scorer_take_the_first_that_holds() -> None:
    """Rules of one scorer in a row are compared once; in any order of thresholds the first rule that holds wins
    (a looser rule before a stricter one leaves the stricter one empty)."""
    records = _records(1500, seed=9)
    left, right = _pairs(len(records), 6000, seed=9)
    rows = rc.rows_of(len(records), left, right)
    for ladder in (
        [{"comparison": "ratio", "at_least": 90}, {"comparison": "ratio", "at_least": 60}, {"comparison": "ratio", "at_least": 75}],
        [{"comparison": "jaro_winkler", "at_least": 80}, {"comparison": "jaro_winkler", "at_least": 95}, "exact"],
        [
            {"comparison": "levenshtein", "at_least": 100},
            {"comparison": "levenshtein", "at_least": 50},
            {"comparison": "ratio", "at_least": 40},
        ],
    ):
        fld = FSField.model_validate({"field": "last", "ladder": ladder})
        assert fld.ladder is not None
        got = LadderColumn(records, ["last"], fld.ladder, rows).levels(left, right, 2)
        np.testing.assert_array_equal(got, _naive_levels(records, fld, left, right), err_msg=str(ladder))
        assert len(np.unique(got)) >= 3


def test_scorer_rules_skip_pairs_their_character_bound_rules_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scorer rule compares only the pairs whose bag-of-characters bound reaches at_least (same levels: above)."""
    records = _records(1500, seed=3)
    left, right = _pairs(len(records), 6000, seed=3)
    fld = FSField.model_validate(LADDERS[0])
    assert fld.ladder is not None
    compared: dict[str, int] = {}
    compare = rc.FieldColumn.compare

    def spy(self: rc.FieldColumn, a: np.ndarray, b: np.ndarray, workers: int, scorer: str | None = None) -> np.ndarray:
        compared[scorer or self.scorer] = compared.get(scorer or self.scorer, 0) + len(a)
        return compare(self, a, b, workers, scorer)

    monkeypatch.setattr(rc.FieldColumn, "compare", spy)
    col = LadderColumn(records, ["first"], fld.ladder, rc.rows_of(len(records), left, right))
    levels = col.levels(left, right, 1)
    np.testing.assert_array_equal(levels, _naive_levels(records, fld, left, right))
    a, b = col.codes[left], col.codes[right]
    reached = int(((levels >= 1) & (a != b)).sum())  # pairs the jaro_winkler rule saw with different values
    assert 0 < compared["jaro_winkler"] < reached


def test_ladder_levels_through_the_verifier_do_not_depend_on_chunks_or_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    records = _records(800, seed=5)
    left, right = _pairs(len(records), 3000, seed=5)
    params = FellegiSunterParams(fields=LADDERS)
    pairs = Pairs(left, right)
    want = np.stack([_naive_levels(records, f, left, right) for f in params.fields], axis=1)
    for workers, chunk in ((1, 1 << 20), (2, 1 << 20), (2, 257), (3, 1000)):
        monkeypatch.setattr(rc, "CHUNK_PAIRS", chunk)
        v = FellegiSunter(params, Context(threshold=0.5, workers=workers))
        np.testing.assert_array_equal(v.comparison_levels(Batch(records), pairs), want)


# ---------------------------------------------------------------------------
# values


def test_parse_values() -> None:
    assert [parse_number(x) for x in ["1999", "1999.0", " -1.5e3 ", "+7", ".5", "abc", "1,5", "nan", "inf", "", None, "1_000"]] == [
        1999.0, 1999.0, -1500.0, 7.0, 0.5, None, None, None, None, None, None, None
    ]  # fmt: skip
    assert parse_date("1999-03-14", False) == parse_date("19990314", False) == parse_date("1999-3-14", False) == (1999, 3, 14)
    assert parse_date("1999 3 14", True) == parse_date("1999.0 3.0 14.0", True) == (1999, 3, 14)
    for bad, parts in [("1999-02-30", False), ("1999-14-03", False), ("199903", False), ("1999 3", True), ("1999 3.5 1", True),
                       ("x 3 1", True), ("1999 3 14", False), ("1999-03-14", True), ("", False), (None, False)]:  # fmt: skip
        assert parse_date(bad, parts) is None, bad
    assert parse_date("2000-02-29", False) == (2000, 2, 29) and parse_date("2001-02-29", False) is None
    assert parse_list('["a", " b ", null, "", 1, 2.5, true]', ";") == frozenset({"a", "b", "1", "2.5", "true"})
    assert parse_list("a; b ;;a", ";") == parse_list('["b","a"]', ";") == frozenset({"a", "b"})
    assert parse_list("[bad", ";") == frozenset({"[bad"}) and parse_list('{"a": 1}', ";") == frozenset({'{"a": 1}'})
    assert parse_list("a|b", "|") == frozenset({"a", "b"}) and parse_list("a|b", ";") == frozenset({"a|b"})
    assert parse_list("[]", ";") is None and parse_list(" ; ", ";") is None and parse_list(None, ";") is None
    assert phonetic_code("Jon Smyth", "soundex") == phonetic_code("John Smith", "soundex") == "J500 S530"
    assert phonetic_code("O'Neil", "metaphone") == "O NL" and phonetic_code("123", "metaphone") == ""


def test_date_units_count_whole_months_and_years() -> None:
    records = Records.from_columns(
        ["a", "b", "c", "d", "e"], {"date": ["1999-03-14", "2000-03-13", "2000-03-14", "1999-04-13", "2000-02-29"]}, "A"
    )
    rules = [
        Rule(comparison="date_difference", at_most=0, unit="years"),
        Rule(comparison="date_difference", at_most=11, unit="months"),
        Rule(comparison="date_difference", at_most=1, unit="years"),
    ]
    col = LadderColumn(records, ["date"], rules, np.arange(5, dtype=np.int64))
    left, right = np.array([0, 0, 0, 1, 4]), np.array([1, 2, 3, 0, 2])
    # 0->1: 0 years (11 months, 30 days); 0->2: exactly 1 year; 0->3: 0 months; 2000-02-29 -> 2000-03-14: 0 months
    np.testing.assert_array_equal(col.levels(left, right, 1), [0, 2, 0, 0, 0])


# ---------------------------------------------------------------------------
# the old syntax


def test_old_syntax_runs_the_similarity_path_with_the_same_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    """comparison + levels: FieldColumn.levels, no LadderColumn, codes as level_of(scores) gives them; the
    equivalent ladder of at_least rules gives the same levels."""
    records = _records(1200, seed=7)
    left, right = _pairs(len(records), 5000, seed=7)
    batch, pairs = Batch(records), Pairs(left, right)
    old = [
        {"field": "first", "name": s, "comparison": s, "levels": t}
        for s, t in zip(ALL_SCORERS, ([100, 90, 75], [100, 80], [95, 60], [100, 92, 80], [100, 92, 80, 60], [100, 50]))
    ]
    old += [{"field": ["first", "last"], "name": "fl", "comparison": "exact"}, {"field": "num", "comparison": "digits", "last_digits": 2}]
    v = FellegiSunter(FellegiSunterParams(fields=old), Context(threshold=0.5, workers=2))

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a comparison + levels field went through LadderColumn")

    monkeypatch.setattr(fs, "LadderColumn", refuse)
    got = v.comparison_levels(batch, pairs)
    rows = rc.rows_of(len(records), left, right)
    for f, fld in enumerate(v.params.fields):
        col = rc.FieldColumn(records, rc.field_columns(fld.field), fld.comparison, rows, fld.last_digits)
        np.testing.assert_array_equal(got[:, f], level_of(col.scores(left, right, 1), fld.thresholds), err_msg=fld.label)
    monkeypatch.undo()
    for f, x in enumerate(old[: len(ALL_SCORERS)]):
        ladder = FSField(field=x["field"], ladder=[{"comparison": x["comparison"], "at_least": t} for t in x["levels"]])
        assert ladder.n_levels == v.params.fields[f].n_levels
        col2 = LadderColumn(records, ["first"], ladder.ladder or [], rows)
        np.testing.assert_array_equal(col2.levels(left, right, 1), got[:, f], err_msg=x["comparison"])


def test_old_syntax_dumps_and_names_as_before() -> None:
    f = FSField(field="a", comparison="ratio", levels=[100, 80])
    assert f.model_dump(mode="json") == {"field": "a", "name": None, "comparison": "ratio", "last_digits": None, "levels": [100.0, 80.0]}
    assert f.level_names() == ["=100", ">=80", "<80"] and f.comparison_text == "ratio" and f.n_levels == 3
    lad = FSField.model_validate(LADDERS[0])
    dumped = lad.model_dump(mode="json")
    assert "comparison" not in dumped and dumped["ladder"][5] == {"comparison": "swapped", "with": "last"}
    assert FSField.model_validate(dumped) == lad  # a dump validates again (the model's job sections)
    assert lad.level_names() == [
        "exact", "jaro_winkler>=92", "phonetic(soundex)", "phonetic(metaphone)", "token_set_ratio>=80", "swapped(last)",
        "levenshtein>=40", "else",
    ]  # fmt: skip
    assert lad.comparison_text == " > ".join(lad.level_names())
    names = [FSField.model_validate(x).level_names() for x in LADDERS[2:]]
    assert names[0][1:5] == ["|diff|<=0.1", "|diff|<=1", "|diff|/max<=0.05", "|diff|<=1000"]
    assert names[1][1:4] == ["transposed_day_month", "|date diff|<=1 days", "|date diff|<=31 days"]
    assert names[3] == ["exact", "jaccard>=0.5", "overlap>=2", "overlap>=1", "else"]
    with pytest.raises(ValueError, match="has a ladder"):
        _ = lad.thresholds


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"field": "a", "ladder": [{"comparison": "soundex"}]}, "Input should be 'exact'"),
        ({"field": "a", "ladder": ["fuzzy"]}, "Input should be 'exact'"),
        ({"field": "a", "ladder": []}, "at least one rule"),
        ({"field": "a", "ladder": [{"comparison": "jaro_winkler"}]}, "needs at_least in \\(0, 100\\]"),
        ({"field": "a", "ladder": [{"comparison": "ratio", "at_least": 120}]}, "needs at_least in \\(0, 100\\]"),
        ({"field": "a", "ladder": [{"comparison": "jaccard", "at_least": 50}]}, "at_least in \\(0, 1\\]"),
        ({"field": "a", "ladder": [{"comparison": "overlap", "at_least": 0.5}]}, "count of shared elements"),
        ({"field": "a", "ladder": [{"comparison": "difference", "at_most": -1}]}, "at_most >= 0"),
        ({"field": "a", "ladder": [{"comparison": "relative_difference"}]}, "at_most >= 0"),
        ({"field": "a", "ladder": [{"comparison": "difference", "at_least": 1}]}, "at_least is not used with comparison 'difference'"),
        ({"field": "a", "ladder": [{"comparison": "exact", "unit": "days"}]}, "unit is not used with comparison 'exact'"),
        ({"field": "a", "ladder": [{"comparison": "phonetic", "algorithm": "double_metaphone"}]}, "no double metaphone"),
        ({"field": "a", "ladder": [{"comparison": "phonetic", "algorithm": "caverphone"}]}, "not one of"),
        ({"field": "a", "ladder": [{"comparison": "swapped"}]}, "needs with"),
        ({"field": "a", "ladder": [{"comparison": "swapped", "with": "a"}]}, "is the field itself"),
        ({"field": "a", "ladder": [{"comparison": "date_difference", "at_most": 1, "unit": "weeks"}]}, "unit"),
        ({"field": ["y", "m"], "ladder": ["transposed_day_month"]}, "one column .* or three"),
        ({"field": "a", "ladder": [{"comparison": "difference", "at_most": 1}, "transposed_day_month"]}, "mixes"),
        ({"field": "a", "ladder": ["exact"], "levels": [100]}, "either ladder or levels"),
        ({"field": "a", "ladder": ["exact"], "comparison": "ratio"}, "either ladder or comparison"),
        ({"field": "a", "ladder": ["exact"], "delimiter": ","}, "only by the list rules"),
        ({"field": "a", "ladder": ["overlap"], "delimiter": ""}, "must not be empty"),
        ({"field": "a", "comparison": "ratio", "delimiter": ","}, "only by a ladder"),
        ({"field": "a", "ladder": [{"comparison": "exact", "typo": 1}]}, "Extra inputs"),
    ],
)
def test_ladder_validation_messages(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FellegiSunterParams(fields=[bad])


def test_swapped_with_a_column_no_source_reads_is_a_job_error(tmp_path: Path) -> None:
    cfg = _job(tmp_path, ladder_first=[{"comparison": "swapped", "with": "surname"}])
    with pytest.raises(Exception, match=r"verifier\.fields\[0\]\.ladder\[0\]\.with: field 'surname' is not read by any source"):
        parse_job(cfg)


# ---------------------------------------------------------------------------
# a ladder job end to end: run and index

FIRSTS = ["anna", "bert", "carla", "dieter", "emil", "frieda", "gustav", "hanna", "ilse", "jonas", "karl", "lena", "moritz", "nina"]
LASTS = ["schmidt", "meyer", "weber", "wagner", "becker", "hoffmann", "schulz", "koch", "richter", "klein", "wolf", "neumann"]


def _people(seed: int) -> tuple[list[dict[str, str]], list[dict[str, str]], set[tuple[str, str]]]:
    """Source A, source B (a changed copy of most A records, plus others) and the true (A id, B id) pairs."""
    rng = np.random.default_rng(seed)
    a_rows, b_rows, truth = [], [], set()
    for i in range(300):
        y, m, d = int(rng.integers(1940, 2005)), int(rng.integers(1, 13)), int(rng.integers(1, 29))
        first, last = FIRSTS[int(rng.integers(0, len(FIRSTS)))], LASTS[int(rng.integers(0, len(LASTS)))]
        tags = sorted({f"t{int(x)}" for x in rng.integers(0, 12, 3)})
        zip_code = f"{int(rng.integers(0, 40)):03d}"
        income = str(int(rng.integers(1, 9)) * 10000)
        a = {"id": f"a{i}", "first": first, "last": last, "y": str(y), "m": str(m), "d": str(d), "income": income,
             "tags": json.dumps(tags), "zip": zip_code}  # fmt: skip
        a_rows.append(a)
        if i % 10 == 9:  # no partner in B
            continue
        b = dict(a, id=f"b{i}", tags=";".join(tags), income=str(float(a["income"]) * 1.02), y=f"{y}.0")
        change = i % 5
        if change == 0:
            b["first"], b["last"] = last, first  # swapped names
        elif change == 1 and d <= 12 and d != m:
            b["m"], b["d"] = str(d), str(m)  # day and month transposed
        elif change == 2:
            b["first"] = first[:-1] + ("x" if first[-1] != "x" else "y")  # a typo
        elif change == 3:
            b["y"] = str(y + 1)
        b_rows.append(b)
        truth.add((a["id"], b["id"]))
    return a_rows, b_rows, truth


def _write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _job(tmp: Path, ladder_first: list[Any] | None = None) -> Path:
    a, b, truth = _people(11)
    _write_csv(tmp / "a.csv", a)
    _write_csv(tmp / "b.csv", b)
    (tmp / "truth.json").write_text(json.dumps(sorted(truth)))
    first = ladder_first or [
        "exact",
        {"comparison": "jaro_winkler", "at_least": 90},
        {"comparison": "swapped", "with": "last"},
    ]
    fields = [
        {"field": "first", "ladder": first},
        {"field": "last", "ladder": ["exact", {"comparison": "swapped", "with": "first"}, {"comparison": "phonetic"}]},
        {"field": ["y", "m", "d"], "name": "dob",
         "ladder": ["exact", "transposed_day_month", {"comparison": "date_difference", "at_most": 1, "unit": "years"}]},
        {"field": "income", "ladder": [{"comparison": "relative_difference", "at_most": 0.05}]},
        {"field": "tags", "ladder": [{"comparison": "jaccard", "at_least": 1}, {"comparison": "overlap", "at_least": 2}]},
    ]  # fmt: skip
    job = {
        "name": "ladders",
        "mode": "link",
        "seed": 3,
        "sources": [
            {"name": "A", "path": str(tmp / "a.csv"), "id": "id", "fields": ["first", "last", "y", "m", "d", "income", "tags", "zip"]},
            {"name": "B", "path": str(tmp / "b.csv"), "id": "id", "fields": ["first", "last", "y", "m", "d", "income", "tags", "zip"]},
        ],
        "blockers": [{"type": "field_hash", "fields": ["zip"]}],
        "verifier": {"type": "fellegi_sunter", "threshold": 0.5, "u_from_random_pairs": 2000, "fields": fields},
        "cluster": {"type": "one_to_one"},
        "output": {"dir": str(tmp / "out"), "format": "csv"},
    }
    cfg = tmp / "job.yaml"
    cfg.write_text(json.dumps(job))  # JSON is YAML
    return cfg


def test_a_ladder_job_runs_end_to_end_and_is_indexed(tmp_path: Path) -> None:
    cfg = _job(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "er_framework", "run", str(cfg), "--out", str(out), "-q"], env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr
    truth = {tuple(x) for x in json.loads((tmp_path / "truth.json").read_text())}
    with open(out / "pairs.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    found = {(r["left_id"], r["right_id"]) if r["left_source"] == "A" else (r["right_id"], r["left_id"]) for r in rows}
    # the swapped names, transposed dates, typos and years one apart all link; nothing else does
    assert found == truth
    report = json.loads((out / "report.json").read_text())
    per_field = next(s for s in _walk(report) if isinstance(s, dict) and "per_field" in s)["per_field"]
    assert per_field["first"]["comparison"] == "exact > jaro_winkler>=90 > swapped(last) > else"
    assert per_field["dob"]["levels"] == ["exact", "transposed_day_month", "|date diff|<=1 years", "else"]
    w = per_field["first"]["weight_log2"]
    assert w[2] > 0 > w[3]  # swapped names are evidence of a match; a different first name is not
    # the index: built from the same job, each B record's link is returned first with the run's score
    index, _ = build_index(parse_job(cfg), tmp_path / "p.erx")
    scores = {(r["left_id"], r["right_id"]) if r["left_source"] == "A" else (r["right_id"], r["left_id"]): float(r["score"]) for r in rows}
    _, b_rows, _ = _people(11)
    fields = ["first", "last", "y", "m", "d", "income", "tags", "zip"]
    with index:
        query = Records.from_columns([r["id"] for r in b_rows], {k: [r[k] for r in b_rows] for k in fields})
        matches = index.query(query, source="B")
    for r, got in zip(b_rows, matches):
        a = f"a{r['id'][1:]}"
        assert got and got[0].id == a and got[0].score == pytest.approx(scores[(a, r["id"])], abs=1e-9), r["id"]


def _walk(x: Any) -> list[Any]:
    out = [x]
    if isinstance(x, dict):
        for v in x.values():
            out += _walk(v)
    elif isinstance(x, list):
        for v in x:
            out += _walk(v)
    return out


def test_list_columns_are_normalized_element_by_element_from_csv_and_parquet(tmp_path: Path) -> None:
    """A list field: B's tags as a Parquet list column in capitals, A's as ";"-joined CSV text. With
    ``normalize: tags: [split, text]`` both become lists of normalized tags, and the jaccard level links the
    same pairs as the lower-case lists compared raw; without normalizing, no tag agrees."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cfg = _job(tmp_path)
    job = json.loads(cfg.read_text())
    a_rows = list(csv.DictReader(open(tmp_path / "a.csv", newline="", encoding="utf-8")))
    b_rows = list(csv.DictReader(open(tmp_path / "b.csv", newline="", encoding="utf-8")))
    for r in a_rows:
        r["tags"] = ";".join(json.loads(r["tags"]))
    _write_csv(tmp_path / "a.csv", a_rows)
    table = {k: [r[k] for r in b_rows] for k in b_rows[0]}
    table["tags"] = [[t.upper() + " " for t in r["tags"].split(";")] for r in b_rows]
    pq.write_table(pa.table(table), tmp_path / "b.parquet")
    job["sources"][1]["path"] = str(tmp_path / "b.parquet")
    keep = ("first", "last", "dob", "tags")
    job["verifier"]["fields"] = [f for f in job["verifier"]["fields"] if f.get("name", f["field"]) in keep]

    def linked(normalize: dict[str, Any]) -> tuple[set[tuple[str, str]], dict[str, Any]]:
        out = tmp_path / f"out-{len(normalize)}"
        path = tmp_path / f"job-{len(normalize)}.yaml"
        path.write_text(json.dumps({**job, "normalize": normalize, "output": {"dir": str(out), "format": "csv"}}))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "er_framework", "run", str(path), "-q"]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr
        with open(out / "pairs.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        report = json.loads((out / "report.json").read_text())
        tags = next(s for s in _walk(report) if isinstance(s, dict) and "per_field" in s)["per_field"]["tags"]
        return {(r["left_id"], r["right_id"]) if r["left_source"] == "A" else (r["right_id"], r["left_id"]) for r in rows}, tags

    got, tags = linked({"tags": ["split", "text"]})
    truth = {tuple(x) for x in json.loads((tmp_path / "truth.json").read_text())}
    assert got == truth
    assert tags["weight_log2"][0] > 0  # equal tag sets are evidence once normalized
    _, raw = linked({})
    assert raw["m"][0] < 0.01  # "T3 " never equals "t3": no pair's tags agree without normalizing
