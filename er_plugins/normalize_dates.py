"""The ``date`` normalizer (see :mod:`er_plugins.normalizers` for the family): common date formats -> ISO
``YYYY-MM-DD``. A date written as a float (``19151111.0``, ``1.9151111e7``: a ``YYYYMMDD`` column read as
floats) is read as the integer it stands for (:func:`~er_plugins.normalize_text.float_integer`)."""

from __future__ import annotations

import re
from datetime import date as _date

from pydantic import Field

from er_framework.components import Normalizer, Params
from er_plugins.normalize_text import PerValue, Value, float_integer

__all__ = ["Date", "DateParams"]


# ---------------------------------------------------------------------------
# dates

_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4,
    "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9,
    "september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}  # fmt: skip
_DATE_NOISE = frozenset(
    {
        "mon", "monday", "tue", "tues", "tuesday", "wed", "wednesday", "thu", "thur", "thurs", "thursday",
        "fri", "friday", "sat", "saturday", "sun", "sunday", "st", "nd", "rd", "th", "of", "the",
    }
)  # fmt: skip
_TIME = r"(?:[t\s].*)?"
_ISO = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})" + _TIME)
_COMPACT = re.compile(r"(\d{4})(\d{2})(\d{2})")
_NUMERIC = re.compile(r"(\d{1,2})[-/. ](\d{1,2})[-/. ](\d{4}|\d{2})" + _TIME)
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:am|pm|z|utc|gmt)?(?:\s*[+-]\d{2}:?\d{2})?")
_DATE_TOKENS = re.compile(r"[a-z]+|\d+")


def _ymd(y: int, m: int, d: int) -> str | None:
    if not 1 <= y <= 9999:
        return None
    try:
        _date(y, m, d)
    except ValueError:
        return None
    return f"{y:04d}-{m:02d}-{d:02d}"


def _year_of(text: str, yy_pivot: int | None) -> int | None:
    """A four-digit year, or a two-digit one with ``yy_pivot``; None otherwise."""
    y = int(text)
    if len(text) == 4:
        return y
    if len(text) == 2 and yy_pivot is not None:
        return 2000 + y if y < yy_pivot else 1900 + y
    return None


def _numeric_date(t: str, dayfirst: bool, yy_pivot: int | None) -> Value | bool:
    """A date written in digits (ISO, compact, D/M/Y or M/D/Y); False: not written so."""
    if (m := _ISO.fullmatch(t)) is not None or (m := _COMPACT.fullmatch(t)) is not None:
        return _ymd(int(m[1]), int(m[2]), int(m[3]))
    if (m := _NUMERIC.fullmatch(t)) is not None:
        y = _year_of(m[3], yy_pivot)
        if y is None:
            return None
        a, b = int(m[1]), int(m[2])
        day, month = (a, b) if dayfirst else (b, a)
        return _ymd(y, month, day) or _ymd(y, day, month)
    return False


def _make_date(dayfirst: bool = False, yy_pivot: int | None = None) -> PerValue:
    def year(text: str) -> int | None:
        return _year_of(text, yy_pivot)

    def date(s: str) -> Value:
        t = s.strip().casefold()
        if ("." in t or "e" in t) and (number := float_integer(t)) is not None:
            t = number  # 19151111.0 -> 19151111; "" (a number with a fraction) is no date
        if t[:1].isdigit() and (got := _numeric_date(t, dayfirst, yy_pivot)) is not False:
            return None if got is True else got
        if not any(c.isalpha() for c in t):
            return None
        tokens = [x for x in _DATE_TOKENS.findall(_CLOCK.sub(" ", t)) if x not in _DATE_NOISE]
        months = [x for x in tokens if x in _MONTHS]
        numbers = [x for x in tokens if x.isdigit()]
        if len(months) != 1 or len(numbers) != 2 or len(tokens) != 3:
            return None
        longs = [x for x in numbers if len(x) == 4]
        if len(longs) == 1:
            y_text = longs[0]
            d_text = numbers[1] if numbers[0] == y_text else numbers[0]
        elif not longs and yy_pivot is not None:
            d_text, y_text = numbers
        else:
            return None
        y = year(y_text)
        if y is None or len(d_text) > 2:
            return None
        return _ymd(y, _MONTHS[months[0]], int(d_text))

    return date


# ---------------------------------------------------------------------------
# the component


class DateParams(Params):
    dayfirst: bool = Field(default=False, strict=True, description="read 05/03/1980 as 5 March (else May 3)")
    yy_pivot: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=100,
        description="two-digit years: < pivot -> 20yy, else 19yy; null: unparseable",
    )


class Date(Normalizer[DateParams]):
    name = "date"
    summary = "common date formats -> ISO YYYY-MM-DD (19151111.0 read as 19151111); unparseable -> missing"
    Params = DateParams

    def per_value(self) -> PerValue:
        p = self.params
        return _make_date(dayfirst=p.dayfirst, yy_pivot=p.yy_pivot)
