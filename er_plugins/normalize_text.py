"""The ``text`` normalizer and the simple ones (``digits``, ``lower``, ``strip``), and the whole-batch
machinery the other built-in normalizers share (see :mod:`er_plugins.normalizers` for the family and
its speed).
"""

from __future__ import annotations

import operator
import re
import string
import unicodedata
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from itertools import compress, repeat
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from er_framework.components import Normalizer, Params
from er_framework.normalize import json_list, list_text

__all__ = [
    "BATCH_MIN",
    "BATCH_SLICE",
    "FLOAT_LITERAL",
    "FLOAT_LITERAL_IN_JOINED",
    "NON_DIGITS",
    "NON_DIGITS_KEEP_SEP",
    "SEP",
    "Digits",
    "Lower",
    "PerValue",
    "Split",
    "SplitListParams",
    "Strip",
    "Text",
    "Value",
    "ascii_digits",
    "ascii_texts",
    "by_parts",
    "float_integer",
    "objects",
    "text_key",
]

Value = str | None
PerValue = Callable[[str], Value]


# ---------------------------------------------------------------------------
# text

_APOSTROPHES = "'`\u00b4\u2018\u2019\u201b\u02bc\u02b9\u02bb\u02bd\u02be\u2032\uff07"
#: Latin letters without a Unicode decomposition, folded by hand.
_LETTER_FOLD = {
    "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe",
    "ı": "i", "ħ": "h", "ŧ": "t", "ŀ": "l", "ŋ": "n", "ƒ": "f",
}  # fmt: skip

_ASCII_TEXT = str.maketrans(
    {
        **{c: " " for c in string.punctuation},
        **{chr(i): " " for i in list(range(32)) + [127]},
        "'": None,
        "`": None,
    }
)


class _UnicodeTextTable(dict[int, Any]):
    """``str.translate`` table for the Unicode path, filled per character on first use.

    Apostrophes, combining marks (Mn, Me), format characters (Cf) and surrogates
    are deleted, letters of :data:`_LETTER_FOLD` folded, punctuation, symbols,
    separators and control characters (P*, S*, Z*, Cc) -> space, the rest kept.
    """

    def __missing__(self, code: int) -> Any:
        ch = chr(code)
        cat = unicodedata.category(ch)
        if ch in _APOSTROPHES or cat in ("Mn", "Me", "Cf", "Cs"):
            value: Any = None
        elif ch in _LETTER_FOLD:
            value = _LETTER_FOLD[ch]
        elif cat[0] in "PSZ" or cat == "Cc":
            value = " "
        else:
            value = code
        self[code] = value
        return value


_UNICODE_TEXT = _UnicodeTextTable()
_DELETE_APOSTROPHES = str.maketrans("", "", _APOSTROPHES)


def _text_unicode_once(s: str) -> str:
    s = s.translate(_DELETE_APOSTROPHES)  # before NFKC, which turns U+00B4 into space + accent
    s = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", s).casefold())
    return " ".join(unicodedata.normalize("NFC", s.translate(_UNICODE_TEXT)).split())


def text_key(s: str) -> str:
    """The ``text`` normalizer of one non-missing value (may return ``""``)."""
    if s.isascii():
        return " ".join(s.translate(_ASCII_TEXT).lower().split())
    cur = _text_unicode_once(s)
    # Normalization forms and casefolding don't always commute: iterate to a fixed
    # point. An ASCII result is one already (the ASCII path would keep it as it is).
    for _ in range(4):
        if cur.isascii():
            break
        nxt = _text_unicode_once(cur)
        if nxt == cur:
            break
        cur = nxt
    return cur


def text_value(s: str) -> str:
    """The ``text`` normalizer of one non-missing value: :func:`text_key`, except that a float literal whose
    value is a whole number is that integer first (``"1999.0"`` -> ``"1999"``, not ``"1999 0"``:
    :func:`float_integer`)."""
    if "." in s or "e" in s or "E" in s:
        number = float_integer(s)
        if number:
            return text_key(number)
    return text_key(s)


def _make_text() -> PerValue:
    return text_value


# ---------------------------------------------------------------------------
# numbers written as floats

_FLOAT_BODY = r"[+-]?(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-][0-9]+)"
#: A number written as a float, surrounding whitespace allowed: digits with a decimal point (``1999.0``,
#: ``1999.00``, ``.5``, ``-3.``), optionally with an exponent (``1.9151111e7``), or digits with a *signed*
#: exponent (``1e+16``, as Python and numpy write large floats; ``3E5`` is read as text, not as a number).
FLOAT_LITERAL = re.compile(r"\s*" + _FLOAT_BODY + r"\s*")
#: :data:`FLOAT_LITERAL` as one whole value of a NUL-joined batch (a ``slow_pattern`` of :func:`by_parts`)
FLOAT_LITERAL_IN_JOINED = re.compile(r"(?<![^\x00])[^\S\x00]*" + _FLOAT_BODY + r"[^\S\x00]*(?![^\x00])")
#: the largest exponent (digits before the point, less one) of a float literal read as an integer
_FLOAT_MAX_ADJUSTED = 40


def float_integer(s: str) -> str | None:
    """The integer a float literal stands for, as text; ``None`` when ``s`` is no float literal.

    Numbers often arrive as floats (a spreadsheet's or pandas' column of years, dates written
    ``19151111``, phone numbers): ``"1999.0"``, ``"1999.00"``, ``"1.9151111e7"``, ``"1e+16"``. For such a
    value (:data:`FLOAT_LITERAL`) whose value is a whole number this gives the integer's text (``"1999"``,
    ``"19151111"``, ``"10000000000000000"``; ``"-5.0"`` -> ``"-5"``), read exactly (as a decimal, not as a
    binary float). A float literal with a non-zero fraction (``"12.5"``), or with more than 40 digits before
    the point, gives ``""``: a number that is no integer.
    """
    if FLOAT_LITERAL.fullmatch(s) is None:
        return None
    try:
        d = Decimal(s.strip())
    except InvalidOperation:  # (the pattern admits only what Decimal reads)
        return None
    if d.adjusted() > _FLOAT_MAX_ADJUSTED or d != d.to_integral_value():
        return ""
    return str(int(d))


# ---------------------------------------------------------------------------
# simple ones

NON_DIGITS = re.compile(r"[^0-9]+")


def ascii_digits(s: str) -> str:
    s = unicodedata.normalize("NFKC", s)
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in s)


def _make_digits() -> PerValue:
    def digits(s: str) -> Value:
        if not s.isascii():
            s = ascii_digits(s)
        if "." in s or "e" in s or "E" in s:
            number = float_integer(s)
            if number is not None:  # "1999.0" -> "1999"; "12.5" -> "" (missing: a number with a fraction)
                return NON_DIGITS.sub("", number) or None
        return NON_DIGITS.sub("", s)

    return digits


def _make_lower() -> PerValue:
    return str.casefold


def _make_strip() -> PerValue:
    return str.strip


# ---------------------------------------------------------------------------
# batches: the same functions over a whole list of distinct values
#
# The values of a batch that are ASCII and hold no NUL are joined by NUL into one text and go
# through each step (translate, lower, a regex, a token map) in one C-level pass; the text is split
# at the NULs again. The others (and values that a function treats specially, found by a pattern)
# go through the per-value function. Tests compare every batch with its per-value function.

#: batches shorter than this are normalized value by value (the joined passes do not pay)
BATCH_MIN = 64
#: values joined into one text at a time (bounds the memory: the text, its copies and its tokens)
BATCH_SLICE = 1 << 16
SEP = "\x00"
_ASCII_TEXT_KEEP_SEP = {**_ASCII_TEXT, 0: SEP}
#: deletes every ASCII character but the digits and NUL (str.translate: far faster than a regex)
NON_DIGITS_KEEP_SEP = str.maketrans("", "", "".join(chr(i) for i in range(1, 128) if not chr(i).isdigit()))


def _split_fast(values: list[str], slow_pattern: re.Pattern[str] | None = None) -> tuple[list[str], str, npt.NDArray[np.bool_] | None]:
    """``(fast, joined, slow)``: the values that are ASCII, hold no NUL and no match of ``slow_pattern`` (a
    pattern that never matches a NUL), those joined by NUL, and which values are not fast (``None``: all are)."""
    n = len(values)
    big = SEP.join(values)
    slow: npt.NDArray[np.bool_] | None = None
    if not big.isascii():
        slow = ~np.fromiter(map(str.isascii, values), dtype=bool, count=n)
    if big.count(SEP) != n - 1:  # rare: a value holds a NUL; the pattern is searched value by value
        slow = np.fromiter(map(str.__contains__, values, repeat(SEP)), dtype=bool, count=n) | (False if slow is None else slow)
        if slow_pattern is not None:
            slow |= np.fromiter((m is not None for m in map(slow_pattern.search, values)), dtype=bool, count=n)
    elif slow_pattern is not None:
        hits = [m.start() for m in slow_pattern.finditer(big)]
        if hits:
            lengths = np.fromiter(map(len, values), dtype=np.int64, count=n) + 1
            starts = np.cumsum(lengths) - lengths
            at = np.searchsorted(starts, np.asarray(hits, dtype=np.int64), side="right") - 1
            if slow is None:
                slow = np.zeros(n, dtype=bool)
            slow[at] = True
    if slow is None or not slow.any():
        return values, big, None
    fast = list(compress(values, map(operator.not_, slow.tolist())))
    return fast, SEP.join(fast), slow


def by_parts(
    values: list[str],
    fast: Callable[[list[str], str], list[Value]],
    one: PerValue,
    slow_pattern: re.Pattern[str] | None = None,
) -> list[Value]:
    """``fast(values, joined)`` for the fast values of :func:`_split_fast`, ``one`` for each other value; in order.

    A batch longer than :data:`BATCH_SLICE` is taken a slice at a time (each value's result is its own, so
    the same): the joined text and its tokens are then those of a slice, not of the whole column.
    """
    if len(values) < BATCH_MIN:
        return list(map(one, values))
    if len(values) > BATCH_SLICE:
        out: list[Value] = []
        for a in range(0, len(values), BATCH_SLICE):
            out.extend(by_parts(values[a : a + BATCH_SLICE], fast, one, slow_pattern))
        return out
    quick, big, slow = _split_fast(values, slow_pattern)
    done = fast(quick, big) if quick else []
    if slow is None:
        return done
    merged = np.empty(len(values), dtype=object)
    merged[~slow] = objects(done)
    merged[slow] = objects([one(v) for v in compress(values, slow.tolist())])
    return list(merged.tolist())


def objects(items: list[Any]) -> npt.NDArray[np.object_]:
    """A 1-D object array of the items (never an array of strings or a 2-D array)."""
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def ascii_texts(big: str) -> list[str]:
    """:func:`text_key` of the NUL-joined ASCII values of ``big`` (none holding a NUL)."""
    t = big.translate(_ASCII_TEXT_KEEP_SEP).lower()  # punctuation and control characters -> space
    while "  " in t:  # runs of spaces -> one space (only spaces are whitespace now)
        t = t.replace("  ", " ")
    t = t.replace(" " + SEP, SEP).replace(SEP + " ", SEP).strip(" ")
    return t.split(SEP)


def _texts(values: list[str]) -> list[Value]:
    """``[text_value(v) for v in values]``: ASCII values in one pass (float literals by :func:`text_value`)."""
    return by_parts(values, lambda _, big: list(ascii_texts(big)), text_value, FLOAT_LITERAL_IN_JOINED)


def _digit_strings(values: list[str], one: PerValue) -> list[Value]:
    """``[one(v) for v in values]`` for the ``digits`` function ``one``: ASCII values in one regex pass
    (float literals, such as ``1999.0``, by ``one``)."""
    return by_parts(values, lambda _, big: list(big.translate(NON_DIGITS_KEEP_SEP).split(SEP)), one, FLOAT_LITERAL_IN_JOINED)


# ---------------------------------------------------------------------------
# the components


class Text(Normalizer):
    name = "text"
    summary = "NFKC, casefold, accents and apostrophes removed, punctuation -> space, spaces collapsed; 1999.0 -> 1999"
    #: chains run normalize() (the whole batch in a few passes; per_value() is its reference)
    batch_first: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        return _make_text()

    def normalize(self, values: list[str]) -> list[str | None]:
        return _texts(values)


class Digits(Normalizer):
    name = "digits"
    summary = "digits only; a number written as a float: its integer (1999.0 -> 1999), missing if it has a fraction"
    batch_first: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        return _make_digits()

    def normalize(self, values: list[str]) -> list[str | None]:
        return _digit_strings(values, _make_digits())


class Lower(Normalizer):
    name = "lower"
    summary = "casefold only"

    def per_value(self) -> PerValue:
        return _make_lower()


class Strip(Normalizer):
    name = "strip"
    summary = "strip surrounding whitespace only"

    def per_value(self) -> PerValue:
        return _make_strip()


class SplitListParams(Params):
    delimiter: str = Field(default=";", min_length=1, strict=True, description="what separates the list's elements")


class Split(Normalizer[SplitListParams]):
    """Text -> a list: ``"H04L; G06F"`` -> ``'["H04L", "G06F"]'`` (elements stripped, empty ones dropped, each
    once). A value that is a list already (a Parquet list column) keeps its elements. The steps after it in
    the chain take the elements one by one (``coinventors: [split, name]``), and the list comparisons
    (``jaccard``, ``overlap``) compare them as sets."""

    name = "split"
    summary = "text -> a list of its elements split at a delimiter (';'); later steps normalize each element"
    Params = SplitListParams
    makes_lists: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        delimiter = self.params.delimiter

        def split(s: str) -> Value:
            items = json_list(s)
            parts = items if items is not None else s.split(delimiter)
            return list_text(x for x in (p.strip() for p in parts) if x)

        return split
