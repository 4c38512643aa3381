"""Comparison ladders of the ``fellegi_sunter`` verifier: :class:`Rule` and :class:`LadderColumn`.

A field's ``ladder`` is a list of rules; a pair's level is the index of the first rule that holds, then an
"else" level; a pair whose value is missing on either side (or, on a field of numbers, dates or lists, does
not parse as one) is at the missing level -1 as for every field. The rules:

========================== ===================================================================================
``exact``                   equal values (numbers, dates, lists: equal once parsed: "1999.0" = "1999",
                            "1999-03-14" = "19990314", ``["a", "b"]`` = "b;a")
``ratio``, ``jaro_winkler``  a similarity scorer of :data:`~er_plugins.record_columns.SCORERS` (0..100)
... ``at_least: T``          ``>= T`` (``ratio``, ``partial_ratio``, ``token_sort_ratio``, ``token_set_ratio``,
                            ``jaro_winkler``, ``levenshtein``)
``phonetic``                equal phonetic codes (``algorithm``: ``soundex``, ``metaphone`` (default),
                            ``nysiis``, ``match_rating_codex``; the :mod:`jellyfish` library), word by word: the
                            value's words (runs of letters) each coded, in order, so "Jon Smyth" = "John Smith";
                            a value without letters never agrees
``swapped``                 ``with: COLUMN(S)``: a's field = b's ``with`` and a's ``with`` = b's field (first and
                            last names exchanged); a missing ``with`` value never agrees
``difference``              numbers: ``|a - b| <= at_most``
``relative_difference``     numbers: ``|a - b| / max(|a|, |b|) <= at_most`` (0 when both are 0)
``date_difference``         dates: ``unit: days`` (default) ``|a - b|`` in days ``<= at_most``; ``months`` /
                            ``years``: the whole months / years from the earlier date to the later one (as an
                            age is counted: 1999-03-14 to 2000-03-13 is 0 years, 11 months)
``transposed_day_month``    dates: same year, a's day = b's month and a's month = b's day (and day != month)
``jaccard``                 lists as sets: ``|A & B| / |A | B| >= at_least`` (0 < at_least <= 1)
``overlap``                 lists as sets: ``|A & B| >= at_least`` (a count, default 1)
========================== ===================================================================================

Values: a field's columns are joined by one space as for every field (missing parts skipped). Numbers
(``difference``, ``relative_difference``) are decimal numbers ("1999", "1999.0", "-1.5e3"). Dates
(``date_difference``, ``transposed_day_month``) are ISO "YYYY-MM-DD" or "YYYYMMDD" in one column, or a field of
three columns year, month, day ("1999 3 14", "1999.0 3.0 14.0"; a missing part makes the date missing); an
impossible date (1999-02-30) is missing. Lists (``jaccard``, ``overlap``) are JSON list text (``["a", "b"]``, how a
Parquet list column arrives) or else text split by the field's ``delimiter`` (default ";"); elements are
stripped, empty ones dropped, and compared as sets; an empty list is missing.

Cost: every value is parsed (and phonetically coded) once per distinct value; a rule is evaluated only on the
pairs that no earlier rule placed, on arrays (numbers and dates vectorized; similarity scorers through
:meth:`FieldColumn.compare <er_plugins.record_columns.FieldColumn.compare>`, distinct (value, value)
combinations once when values repeat; set rules once per distinct combination).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import typing
from collections.abc import Callable, Sequence
from typing import Any, Literal

import jellyfish
import numpy as np
import numpy.typing as npt
from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from er_framework.components import FieldRef, Params
from er_framework.data import Records
from er_framework.kernels.records_bounds import BOUNDED_SCORERS, bag_overlap, similarity_upper_bound
from er_framework.normalize import json_list
from er_plugins.record_columns import BOUND_MARGIN, FieldColumn, field_columns

__all__ = [
    "COMPARISONS",
    "DEFAULT_DELIMITER",
    "PHONETIC",
    "SIMILARITY_SCORERS",
    "LadderColumn",
    "Rule",
    "check_ladder",
    "date_parts",
    "ladder_kind",
    "ladder_text",
    "parse_date",
    "parse_list",
    "parse_number",
    "phonetic_code",
]

#: the similarity scorers a ladder rule may use with ``at_least`` (0..100)
SIMILARITY_SCORERS = ("ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "jaro_winkler", "levenshtein")
#: phonetic algorithm -> the jellyfish function coding one word
PHONETIC: dict[str, Callable[[str], str]] = {
    "soundex": jellyfish.soundex,
    "metaphone": jellyfish.metaphone,
    "nysiis": jellyfish.nysiis,
    "match_rating_codex": jellyfish.match_rating_codex,
}
DEFAULT_DELIMITER = ";"

Comparison = Literal[
    "exact",
    "ratio",
    "partial_ratio",
    "token_sort_ratio",
    "token_set_ratio",
    "jaro_winkler",
    "levenshtein",
    "phonetic",
    "swapped",
    "difference",
    "relative_difference",
    "date_difference",
    "transposed_day_month",
    "jaccard",
    "overlap",
]
#: every comparison of a ladder rule
COMPARISONS: tuple[str, ...] = typing.get_args(Comparison)

#: the kind of values a rule compares (text rules compare the values as they are)
_KIND = {
    "difference": "number",
    "relative_difference": "number",
    "date_difference": "date",
    "transposed_day_month": "date",
    "jaccard": "list",
    "overlap": "list",
}
#: which of at_least / at_most / algorithm / with / unit each comparison takes (the others must not be set)
_TAKES: dict[str, frozenset[str]] = {
    "exact": frozenset(),
    **{s: frozenset({"at_least"}) for s in SIMILARITY_SCORERS},
    "phonetic": frozenset({"algorithm"}),
    "swapped": frozenset({"with_"}),
    "difference": frozenset({"at_most"}),
    "relative_difference": frozenset({"at_most"}),
    "date_difference": frozenset({"at_most", "unit"}),
    "transposed_day_month": frozenset(),
    "jaccard": frozenset({"at_least"}),
    "overlap": frozenset({"at_least"}),
}
_OPTION_NAME = {"at_least": "at_least", "at_most": "at_most", "algorithm": "algorithm", "with_": "with", "unit": "unit"}
#: numbers and fractions are compared up to this relative rounding (|a - b| <= 0.1 holds for 1.1 and 1.0)
_ROUND = 1e-9


class Rule(Params):
    """One rule of a field's comparison ladder (``- exact`` or ``- {comparison: jaro_winkler, at_least: 92}``)."""

    model_config = ConfigDict(populate_by_name=True)

    comparison: Comparison = Field(description="the rule: exact, a similarity scorer, phonetic, swapped, difference, ... (see docs)")
    at_least: float | None = Field(
        default=None, description="similarity scorers: minimum 0..100; jaccard: minimum in (0, 1]; overlap: shared elements"
    )
    at_most: float | None = Field(
        default=None, description="difference / relative_difference / date_difference: largest difference that agrees"
    )
    algorithm: str | None = Field(default=None, description="phonetic: soundex, metaphone (default), nysiis, match_rating_codex")
    with_: FieldRef | list[FieldRef] | None = Field(
        default=None, alias="with", description="swapped: the other column(s) (a's field = b's with, a's with = b's field)"
    )
    unit: Literal["days", "months", "years"] | None = Field(default=None, description="date_difference: days (default), months, years")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"comparison": data}
        return data

    @model_validator(mode="after")
    def _check(self) -> Rule:
        c = self.comparison
        takes = _TAKES[c]
        for opt in ("at_least", "at_most", "algorithm", "with_", "unit"):
            if getattr(self, opt) is not None and opt not in takes:
                raise ValueError(f"{_OPTION_NAME[opt]} is not used with comparison {c!r} (it takes: {_options(takes)})")
        check = _CHECKS.get(c)
        if check is not None:
            check(self)
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        # only the options set, "with" under its YAML name (a dump validates again)
        out = handler(self)
        if isinstance(out, dict):
            out = {("with" if k == "with_" else k): v for k, v in out.items() if v is not None}
        return out

    @property
    def kind(self) -> str:
        """The values the rule compares: ``text``, ``number``, ``date`` or ``list``."""
        return _KIND.get(self.comparison, "text")

    @property
    def phonetic_algorithm(self) -> str:
        return self.algorithm or "metaphone"

    @property
    def overlap_at_least(self) -> int:
        return 1 if self.at_least is None else int(self.at_least)

    @property
    def with_columns(self) -> list[str]:
        return [] if self.with_ is None else field_columns(self.with_)

    @property
    def label(self) -> str:
        """The rule's level name in reports and explanations."""
        c = self.comparison
        if c in SIMILARITY_SCORERS:
            return f"{c}>={self.at_least:g}"
        if c == "phonetic":
            return f"phonetic({self.phonetic_algorithm})"
        if c == "swapped":
            return f"swapped({'+'.join(self.with_columns)})"
        if c == "difference":
            return f"|diff|<={self.at_most:g}"
        if c == "relative_difference":
            return f"|diff|/max<={self.at_most:g}"
        if c == "date_difference":
            return f"|date diff|<={self.at_most:g} {self.unit or 'days'}"
        if c == "jaccard":
            return f"jaccard>={self.at_least:g}"
        if c == "overlap":
            return f"overlap>={self.overlap_at_least}"
        return c  # exact, transposed_day_month


def _check_similarity(r: Rule) -> None:
    if r.at_least is None or not 0.0 < r.at_least <= 100.0:
        raise ValueError(f"comparison {r.comparison!r} needs at_least in (0, 100] (a similarity 0..100), got {r.at_least}")


def _check_jaccard(r: Rule) -> None:
    if r.at_least is None or not 0.0 < r.at_least <= 1.0:
        raise ValueError(f"comparison 'jaccard' needs at_least in (0, 1] (shared / all elements), got {r.at_least}")


def _check_overlap(r: Rule) -> None:
    if r.at_least is not None and (r.at_least < 1.0 or r.at_least != int(r.at_least)):
        raise ValueError(f"comparison 'overlap': at_least is a count of shared elements (1, 2, ...), got {r.at_least}")


def _check_at_most(r: Rule) -> None:
    if r.at_most is None or not math.isfinite(r.at_most) or r.at_most < 0:
        raise ValueError(f"comparison {r.comparison!r} needs at_most >= 0 (the largest difference that agrees), got {r.at_most}")


def _check_phonetic(r: Rule) -> None:
    if r.algorithm is not None and r.algorithm not in PHONETIC:
        extra = " (jellyfish has no double metaphone: use metaphone)" if r.algorithm == "double_metaphone" else ""
        raise ValueError(f"phonetic algorithm {r.algorithm!r} is not one of {sorted(PHONETIC)}{extra}")


def _check_swapped(r: Rule) -> None:
    if r.with_ is None:
        raise ValueError("comparison 'swapped' needs with: the other column (e.g. {comparison: swapped, with: last_name})")
    if isinstance(r.with_, list) and (not r.with_ or len(set(r.with_)) != len(r.with_)):
        raise ValueError("swapped: with must be a column name or a non-empty list of distinct column names")


#: the checks of a rule's options, by comparison
_CHECKS: dict[str, Callable[[Rule], None]] = {
    **{s: _check_similarity for s in SIMILARITY_SCORERS},
    "jaccard": _check_jaccard,
    "overlap": _check_overlap,
    "difference": _check_at_most,
    "relative_difference": _check_at_most,
    "date_difference": _check_at_most,
    "phonetic": _check_phonetic,
    "swapped": _check_swapped,
}


def _options(takes: frozenset[str]) -> str:
    return ", ".join(_OPTION_NAME[o] for o in sorted(takes)) or "no option"


def ladder_kind(rules: Sequence[Rule]) -> str:
    """The kind of the ladder's values: that of its number / date / list rules (``text`` when none); ValueError
    when rules of two kinds are mixed."""
    kinds = sorted({r.kind for r in rules} - {"text"})
    if len(kinds) > 1:
        by = {k: [r.comparison for r in rules if r.kind == k] for k in kinds}
        raise ValueError(f"a ladder compares one kind of value; it mixes {by}: split them into separate fields")
    return kinds[0] if kinds else "text"


def check_ladder(rules: Sequence[Rule], columns: Sequence[str], delimiter: str | None) -> None:
    """ValueError naming what is wrong with a field's ladder (its ``columns``)."""
    if not rules:
        raise ValueError("ladder must hold at least one rule (e.g. [exact])")
    kind = ladder_kind(rules)
    if kind == "date" and len(columns) not in (1, 3):
        raise ValueError(
            f"date rules compare one column (YYYY-MM-DD or YYYYMMDD) or three (year, month, day); field has {len(columns)}: {list(columns)}"
        )
    if delimiter is not None:
        if kind != "list":
            raise ValueError("delimiter is used only by the list rules jaccard and overlap")
        if not delimiter:
            raise ValueError("delimiter must not be empty")
    for r in rules:
        both = sorted(set(r.with_columns) & set(columns))
        if both:
            raise ValueError(f"swapped: with {both} is the field itself; name the other column (e.g. last_name for first_name)")


def ladder_text(rules: Sequence[Rule]) -> str:
    """The ladder in one line (the report's ``comparison``): ``exact > jaro_winkler>=92 > ... > else``."""
    return " > ".join([r.label for r in rules] + ["else"])


# ---------------------------------------------------------------------------
# values


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_COMPACT = re.compile(r"(\d{4})(\d{2})(\d{2})")
_WORD = re.compile(r"[^\W\d_]+")


def parse_number(text: str | None) -> float | None:
    """A decimal number ("1999", " 1999.0 ", "-1.5e3"), or None."""
    if text is None:
        return None
    t = text.strip()
    if not _NUMBER.fullmatch(t):
        return None
    x = float(t)
    return x if math.isfinite(x) else None


def parse_date(text: str | None, parts: bool) -> tuple[int, int, int] | None:
    """(year, month, day) of "YYYY-MM-DD" / "YYYYMMDD", or with ``parts`` of "Y M D" (three numbers joined by spaces,
    whole numbers like "3.0" allowed); None when it is not a date of the calendar."""
    if text is None:
        return None
    t = text.strip()
    if parts:
        bits = t.split()
        if len(bits) != 3:
            return None
        nums = [parse_number(b) for b in bits]
        if any(x is None or x != int(x) for x in nums):
            return None
        y, m, d = (int(x) for x in nums if x is not None)
    else:
        hit = _ISO.fullmatch(t) or _COMPACT.fullmatch(t)
        if hit is None:
            return None
        y, m, d = int(hit[1]), int(hit[2]), int(hit[3])
    try:
        _dt.date(y, m, d)
    except ValueError:
        return None
    return y, m, d


def parse_list(text: str | None, delimiter: str) -> frozenset[str] | None:
    """The elements of a JSON list text (``["a", "b"]``: :func:`~er_framework.normalize.json_list`) or else of
    text split by ``delimiter``: stripped, empty ones dropped, as a set; None when there is none."""
    if text is None:
        return None
    t = text.strip()
    items = json_list(t)
    out = frozenset(x for x in (e.strip() for e in (items if items is not None else t.split(delimiter))) if x)
    return out or None


def phonetic_code(text: str, algorithm: str) -> str:
    """The phonetic codes of the words (runs of letters) of ``text``, in order, joined by spaces ("" without letters)."""
    fn = PHONETIC[algorithm]
    return " ".join(fn(w) for w in _WORD.findall(text))


def date_parts(date: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """(year, month, day, day number) of a parsed date."""
    y, m, d = date
    return y, m, d, _dt.date(y, m, d).toordinal()


# ---------------------------------------------------------------------------
# one field's ladder over the records taking part


class LadderColumn:
    """A ladder field's values over the records in ``rows``: :meth:`levels` gives each pair's level.

    The field's columns are prepared by :class:`~er_plugins.record_columns.FieldColumn` (joined, factorized:
    ``codes`` per record, one entry per distinct value), and every distinct value is parsed once: ``canon``
    (the id of the value's parsed form: equal ids = ``exact``; -1 = missing, also when it does not parse), and
    the arrays of the ladder's kind (numbers; year, month, day, day number; sets; phonetic codes).
    """

    def __init__(
        self,
        records: Records,
        columns: Sequence[str],
        rules: Sequence[Rule],
        rows: npt.NDArray[np.int64],
        delimiter: str | None = None,
    ) -> None:
        self.rules = list(rules)
        self.kind = ladder_kind(self.rules)
        col = FieldColumn(records, columns, "exact", rows)
        self.col = col
        self.codes = col.codes
        n = len(col.dictionary)
        values: list[str] = col.values.tolist() if (self.kind != "text" or self._needs_text()) else []
        canon = np.arange(n, dtype=np.int64)
        if self.kind == "number":
            nums = [parse_number(v) for v in values]
            self.number = np.array([np.nan if x is None else x for x in nums], dtype=np.float64)
            canon = _ids(nums)
        elif self.kind == "date":
            dates = [parse_date(v, parts=len(columns) == 3) for v in values]
            ymdo = np.array([date_parts(d) if d is not None else (0, 0, 0, 0) for d in dates], dtype=np.int64).reshape(-1, 4)
            self.year, self.month, self.day, self.ordinal = ymdo[:, 0], ymdo[:, 1], ymdo[:, 2], ymdo[:, 3]
            canon = _ids(dates)
        elif self.kind == "list":
            sets = [parse_list(v, delimiter or DEFAULT_DELIMITER) for v in values]
            self.sets = sets
            canon = _ids(sets)
        self.canon = canon
        #: rule indices by step: one rule, or consecutive rules of one similarity scorer (compared once)
        self.steps: list[list[int]] = []
        for k, r in enumerate(self.rules):
            prev = self.rules[k - 1].comparison if k else None
            if r.comparison in SIMILARITY_SCORERS and r.comparison == prev:
                self.steps[-1].append(k)
            else:
                self.steps.append([k])
        # character bags: a pair whose similarity bound is below a scorer's at_least is not compared
        self.bags = col.bag_bounds() if any(r.comparison in BOUNDED_SCORERS for r in self.rules) else None
        self.phonetic: dict[str, npt.NDArray[np.int64]] = {}
        for r in self.rules:
            if r.comparison == "phonetic" and r.phonetic_algorithm not in self.phonetic:
                codes = [phonetic_code(v, r.phonetic_algorithm) for v in values]
                self.phonetic[r.phonetic_algorithm] = np.where([bool(c) for c in codes], _ids(codes), -1).astype(np.int64)
        # swapped: the other columns' values, in one id space with this field's
        self.swapped: dict[tuple[str, ...], tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        for r in self.rules:
            key = tuple(r.with_columns)
            if r.comparison == "swapped" and key not in self.swapped:
                other = FieldColumn(records, key, "exact", rows)
                ids: dict[str, int] = {}
                mine = np.array([ids.setdefault(v, len(ids)) for v in values], dtype=np.int64)
                theirs = np.array([ids.setdefault(v, len(ids)) for v in other.values.tolist()], dtype=np.int64)
                # each record's value of the other columns, as an id of the shared space (-1: missing)
                by_record = np.where(other.codes >= 0, theirs[np.maximum(other.codes, 0)] if len(theirs) else -1, -1)
                self.swapped[key] = (mine, by_record.astype(np.int64))

    def _needs_text(self) -> bool:
        return any(r.comparison in ("phonetic", "swapped") for r in self.rules)

    @property
    def n_levels(self) -> int:
        return len(self.rules) + 1

    def levels(self, left: npt.NDArray[np.int64], right: npt.NDArray[np.int64], workers: int) -> npt.NDArray[np.int64]:
        """Level of every pair ``(left[k], right[k])`` (records): the first rule that holds, ``len(rules)`` when
        none does, -1 when the value is missing (or unparseable) on either side. Each rule sees only the pairs no
        earlier rule placed."""
        cl, cr = self.codes[left], self.codes[right]
        out = np.full(len(cl), -1, dtype=np.int64)
        present = (cl >= 0) & (cr >= 0)
        ca = np.where(present, self.canon[np.maximum(cl, 0)] if len(self.canon) else -1, -1)
        cb = np.where(present, self.canon[np.maximum(cr, 0)] if len(self.canon) else -1, -1)
        present &= (ca >= 0) & (cb >= 0)
        todo = np.flatnonzero(present)
        out[todo] = len(self.rules)
        for step in self.steps:
            if len(todo) == 0:
                break
            rule = self.rules[step[0]]
            if rule.comparison in SIMILARITY_SCORERS:
                # consecutive rules of one scorer: each pair's similarity computed once, for all of them
                thresholds = [float(self.rules[k].at_least or 0.0) for k in step]
                which = self._scorer_levels(rule.comparison, thresholds, cl[todo], cr[todo], workers)
                placed = which < len(step)
                out[todo[placed]] = np.asarray(step, dtype=np.int64)[which[placed]]
                todo = todo[~placed]
                continue
            hold = self._holds(rule, cl[todo], cr[todo], ca[todo], cb[todo], left[todo], right[todo], workers)
            out[todo[hold]] = step[0]
            todo = todo[~hold]
        return out

    def _scorer_levels(
        self, scorer: str, thresholds: Sequence[float], a: npt.NDArray[np.int32], b: npt.NDArray[np.int32], workers: int
    ) -> npt.NDArray[np.int64]:
        """For each value pair the first ``k`` with similarity ``>= thresholds[k]`` (``len(thresholds)``: none).
        Equal values score 100 without a call; a pair whose bag-of-characters bound is below every threshold
        is not compared."""
        which = np.full(len(a), len(thresholds), dtype=np.int64)
        same = a == b
        which[same] = 0  # every threshold is <= 100
        rest = np.flatnonzero(~same)
        bs = self.bags
        if bs is not None and scorer in BOUNDED_SCORERS and len(rest):
            ra, rb = a[rest], b[rest]
            bound = similarity_upper_bound(scorer, bag_overlap(bs.sig, ra, rb), bs.lengths[ra], bs.lengths[rb])
            near = bound >= min(thresholds) - BOUND_MARGIN
            if bs.exact_only.any():
                near |= bs.exact_only[ra] | bs.exact_only[rb]
            rest = rest[near]
        if len(rest):
            sim = self.col.compare(a[rest], b[rest], workers, scorer=scorer)
            got = np.full(len(rest), len(thresholds), dtype=np.int64)
            for k in reversed(range(len(thresholds))):  # the first threshold reached wins
                got[sim >= thresholds[k]] = k
            which[rest] = got
        return which

    def _holds(
        self,
        rule: Rule,
        a: npt.NDArray[np.int32],
        b: npt.NDArray[np.int32],
        ca: npt.NDArray[np.int64],
        cb: npt.NDArray[np.int64],
        left: npt.NDArray[np.int64],
        right: npt.NDArray[np.int64],
        workers: int,
    ) -> npt.NDArray[np.bool_]:
        """Whether ``rule`` (not a similarity scorer: :meth:`_scorer_levels`) holds for the value pairs (``a``,
        ``b``: value ids; ``ca``, ``cb``: parsed ids; ``left``, ``right``: the records)."""
        c = rule.comparison
        if c == "exact":
            return np.asarray(ca == cb)
        if c == "phonetic":
            code = self.phonetic[rule.phonetic_algorithm]
            pa, pb = code[a], code[b]
            return np.asarray((pa >= 0) & (pa == pb))
        if c == "swapped":
            mine, by_record = self.swapped[tuple(rule.with_columns)]
            wa, wb = by_record[left], by_record[right]
            return np.asarray((wa >= 0) & (wb >= 0) & (mine[a] == wb) & (wa == mine[b]))
        if c in ("difference", "relative_difference"):
            assert rule.at_most is not None
            x, y = self.number[a], self.number[b]
            big = np.maximum(np.abs(x), np.abs(y))
            diff = np.abs(x - y)
            if c == "difference":
                return np.asarray(diff <= rule.at_most + _ROUND * np.maximum(big, 1.0))
            rel = np.divide(diff, big, out=np.zeros_like(diff), where=big > 0)
            return np.asarray(rel <= rule.at_most + _ROUND)
        if c == "date_difference":
            assert rule.at_most is not None
            unit = rule.unit or "days"
            if unit == "days":
                return np.asarray(np.abs(self.ordinal[a] - self.ordinal[b]) <= rule.at_most)
            later = self.ordinal[a] >= self.ordinal[b]
            hi, lo = np.where(later, a, b), np.where(later, b, a)
            months = (self.year[hi] - self.year[lo]) * 12 + (self.month[hi] - self.month[lo]) - (self.day[hi] < self.day[lo])
            return np.asarray((months if unit == "months" else months // 12) <= rule.at_most)
        if c == "transposed_day_month":
            return np.asarray(
                (self.year[a] == self.year[b])
                & (self.day[a] == self.month[b])
                & (self.month[a] == self.day[b])
                & (self.day[a] != self.month[a])
            )
        if c in ("jaccard", "overlap"):
            return self._set_rule(rule, a, b)
        raise ValueError(f"unknown comparison {c!r}")  # pragma: no cover - Rule validates the name

    def _set_rule(self, rule: Rule, a: npt.NDArray[np.int32], b: npt.NDArray[np.int32]) -> npt.NDArray[np.bool_]:
        """jaccard / overlap once per distinct (value, value) combination."""
        nv = np.int64(max(len(self.sets), 1))
        keys, inverse = np.unique(a.astype(np.int64) * nv + b, return_inverse=True)
        ka, kb = (keys // nv).tolist(), (keys % nv).tolist()
        sets = self.sets
        if rule.comparison == "jaccard":
            assert rule.at_least is not None
            t = rule.at_least - _ROUND
            res = [_jaccard(sets[i], sets[j]) >= t for i, j in zip(ka, kb)]
        else:
            need = rule.overlap_at_least
            res = [len(_set(sets[i]) & _set(sets[j])) >= need for i, j in zip(ka, kb)]
        held: npt.NDArray[np.bool_] = np.asarray(res, dtype=bool)[inverse.reshape(-1)]
        return held


def _set(s: frozenset[str] | None) -> frozenset[str]:
    return frozenset() if s is None else s


def _jaccard(x: frozenset[str] | None, y: frozenset[str] | None) -> float:
    sx, sy = _set(x), _set(y)
    union = len(sx | sy)
    return len(sx & sy) / union if union else 0.0


def _ids(keys: Sequence[Any]) -> npt.NDArray[np.int64]:
    """Each key's id among the distinct keys (-1 for None)."""
    index: dict[Any, int] = {}
    out = np.fromiter((-1 if k is None else index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    return out
