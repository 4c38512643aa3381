"""The ``phone`` normalizer (see :mod:`er_plugins.normalizers` for the family): digits only, the country
code and trunk prefix of ``default_region`` removed; see :func:`_phone_functions`."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from functools import cache, lru_cache
from itertools import repeat
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, field_validator

from er_framework.components import Normalizer, Params
from er_framework.errors import choices_text, did_you_mean
from er_plugins.normalize_text import (
    NON_DIGITS,
    NON_DIGITS_KEEP_SEP,
    SEP,
    PerValue,
    Value,
    ascii_digits,
    by_parts,
    float_integer,
    objects,
)

__all__ = ["Phone", "PhoneParams", "phone_regions"]


# ---------------------------------------------------------------------------
# phones

_EXTENSION = re.compile(r"\s*(?:ext(?:ension)?\.?|x|#)\s*:?\s*\d{1,7}\s*$", re.IGNORECASE)


@cache
def _phone_region(
    region: str,
) -> tuple[str, re.Pattern[str] | None, str, re.Pattern[str] | None]:
    """(country code, international-prefix pattern, trunk prefix, national-number pattern)."""
    from phonenumbers import PhoneMetadata

    md = PhoneMetadata.metadata_for_region(region)
    if md is None:  # pragma: no cover - PhoneParams validates regions
        raise ValueError(f"unknown phone region {region!r}")
    idd = re.compile(md.international_prefix) if md.international_prefix else None
    pattern = md.general_desc.national_number_pattern if md.general_desc else None
    return (
        str(md.country_code),
        idd,
        md.national_prefix or "",
        re.compile(pattern) if pattern else None,
    )


@lru_cache(maxsize=1)
def _country_codes() -> frozenset[str]:
    from phonenumbers import COUNTRY_CODE_TO_REGION_CODE

    return frozenset(str(k) for k in COUNTRY_CODE_TO_REGION_CODE)


def _make_phone(
    default_region: str | None = "US",
    min_digits: int = 7,
    drop_placeholders: bool = True,
    foreign_country_code: str = "keep",
) -> PerValue:
    """The phone normalizer of one value (see :func:`_phone_functions`)."""
    return _phone_functions(default_region, min_digits, drop_placeholders, foreign_country_code)[0]


def _phone_functions(
    default_region: str | None = "US",
    min_digits: int = 7,
    drop_placeholders: bool = True,
    foreign_country_code: str = "keep",
) -> tuple[PerValue, Callable[[str, bool], Value]]:
    """``(phone, from_digits)``: the normalizer of one value, and the same from the value's digits and whether
    it starts with ``+`` (what the rest of the rules look at, once extensions, ``(0)`` and a spreadsheet's
    ``.0`` are gone): ``phone(s) == from_digits(digits of s, s starts with +)`` for such values.

    Phone numbers -> national significant number, digits only.

    * Extensions (``x12``, ``ext. 12``, ``#12``) are dropped, Unicode digits
      read, ``+44 (0)20`` read as ``+44 20``, a spreadsheet's ``5551234567.0``
      as ``5551234567``.
    * International numbers -- ``+``, ``00`` or the region's own
      international prefix (``011`` for US) -- of the default region's
      country: the country code is removed (``+1 555 123 4567`` ->
      ``5551234567``). Of another country: parsed with `phonenumbers`, and
      the country code is kept in front (``+44 20 7946 0958`` ->
      ``442079460958``) so that two countries' numbers never collide;
      ``foreign_country_code: strip`` removes it too.
    * National numbers: the region's country code (``1 555 123 4567``,
      ``44 20 7946 0958``) or trunk prefix (``020 7946 0958`` for GB) is
      removed when what remains is a valid national number pattern of the
      region (`phonenumbers` metadata); in the North American Numbering Plan
      (US, CA, ...) 11 digits starting with 1 always lose the 1.
    * ``default_region: null`` removes nothing but the ``+``/``00``.
    * Fewer than ``min_digits`` digits, or (``drop_placeholders``) one digit
      repeated (``000-000-0000``) -> missing.
    """
    ccs = _country_codes()
    if default_region is not None:
        cc, idd, trunk, national = _phone_region(default_region.upper())
    else:
        cc, idd, trunk, national = "", None, "", None
    keep_foreign = foreign_country_code == "keep"
    nanp = cc == "1"  # North American Numbering Plan: 1 + 10 digits, whatever the 10 digits are

    def valid_national(d: str) -> bool:
        return national is not None and national.fullmatch(d) is not None

    def strip_trunk(rest: str) -> str:
        if trunk and rest.startswith(trunk) and not valid_national(rest) and valid_national(rest[len(trunk) :]):
            return rest[len(trunk) :]
        return rest

    def foreign(d: str) -> str:
        # d: digits after the international prefix, starting with a country code != cc
        for n in (1, 2, 3):
            if d[:n] in ccs:
                code, rest = d[:n], d[n:]
                break
        else:
            return d  # no known country code: keep the digits
        if code == cc:
            return strip_trunk(rest)
        import phonenumbers

        try:
            num = phonenumbers.parse("+" + d, None)
        except phonenumbers.NumberParseException:
            pass  # keep the digits after the country code
        else:
            rest = phonenumbers.national_significant_number(num) or rest
        return code + rest if keep_foreign else rest

    def once(s: str) -> tuple[Value, bool]:
        """(normalized number or None, whether it is its own digits read as a national number)."""
        s = s.strip()
        if not s.isascii():
            s = ascii_digits(s)
        if ("." in s or "e" in s or "E" in s) and (number := float_integer(s)):
            s = number  # a number read as a float: 5551234567.0, 5.551234567e9 -> 5551234567
        if "x" in s or "X" in s or "#" in s or "t" in s or "T" in s:
            s = _EXTENSION.sub("", s)
        plus = s.lstrip("\"'([ ").startswith("+")
        if plus and "(0)" in s:
            s = s.replace("(0)", "")
        return decide(NON_DIGITS.sub("", s), plus)

    def decide(d: str, plus: bool) -> tuple[Value, bool]:
        """:func:`once` from the digits ``d`` and whether the number starts with ``+``."""
        if not d:
            return None, True
        plain = False
        if plus:
            out = foreign(d)
        elif d.startswith("00"):
            out = foreign(d[2:])
        elif idd is not None and (m := idd.match(d)) is not None and m.end() > 0 and not valid_national(d):
            out = foreign(d[m.end() :])
        elif cc and d.startswith(cc) and ((nanp and len(d) == 11) or (not valid_national(d) and valid_national(d[len(cc) :]))):
            out = d[len(cc) :]
        else:
            out = strip_trunk(d)
            plain = out == d
        if len(out) < min_digits:
            return None, True
        if drop_placeholders and out.count(out[-1]) == len(out):
            return None, True
        return out, plain

    def settle(out: Value, plain: bool) -> Value:
        # A number read as international or with a prefix removed must not change when
        # normalized again: iterate to a fixed point. Digits kept as they were took the
        # branches a second pass would take, so they are one already.
        for _ in range(4):
            if out is None or plain:
                break
            nxt, plain = once(out)
            if nxt == out:
                break
            out = nxt
        return out

    def phone(s: str) -> Value:
        return settle(*once(s))

    def from_digits(d: str, plus: bool) -> Value:
        return settle(*decide(d, plus))

    return phone, from_digits


def _phones_from_digits(
    digits: list[str],
    plus: list[bool],
    from_digits: Callable[[str, bool], Value],
    region: str | None,
    min_digits: int,
    drop_placeholders: bool,
) -> list[Value]:
    """``list(map(from_digits, digits, plus))`` for the phone functions of ``region`` (:func:`_phone_functions`),
    the two common cases found by whole-list tests and settled without a call:

    * a national number (no ``+``; starts with none of ``00``, the country code, the trunk prefix; no
      match of the international prefix): :func:`decide` keeps its digits as they are (``plain``), so the
      key is the digits, or missing when too short or one repeated digit;
    * ``+`` and the region's country code (found first: no shorter country code is a prefix of it) followed
      by such a national number: the country code is removed, and the rest, normalized again, stays.

    Any other value goes through ``from_digits``.
    """
    n = len(digits)
    if region is None or n == 0:
        return list(map(from_digits, digits, plus))
    cc, idd, trunk, _ = _phone_region(region.upper())
    ccs = _country_codes()
    blocked = ("00", cc) + ((trunk,) if trunk else ())

    def national(ds: list[str]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """(is a plain national number, whose key is missing: too short or one repeated digit)."""
        m = len(ds)
        ok = ~np.fromiter(map(str.startswith, ds, repeat(blocked)), dtype=bool, count=m)
        if idd is not None:
            ok &= np.asarray(np.fromiter(map(idd.match, ds), dtype=object, count=m) == None)  # noqa: E711
        short = np.fromiter(map(len, ds), dtype=np.int64, count=m) < min_digits
        gone = short
        if drop_placeholders:  # d == d[-1] * len(d): stripping its last digit leaves nothing
            lasts: Iterable[str] = map(operator.getitem, ds, repeat(slice(-1, None)))  # "" for "" (no digits: never kept)
            stripped: Iterable[str] = map(str.strip, ds, lasts)
            gone = short | np.fromiter(map(operator.not_, stripped), dtype=np.bool_, count=m)
        return ok, gone

    has_plus = np.asarray(plus, dtype=bool)
    nonempty = np.fromiter(map(bool, digits), dtype=bool, count=n)
    out = objects(digits)
    done = np.zeros(n, dtype=bool)
    local = np.flatnonzero(~has_plus & nonempty)
    if len(local):
        ds = list(map(digits.__getitem__, local.tolist()))
        ok, gone = national(ds)
        done[local[ok]] = True
        out[local[ok & gone]] = None
    if not any(cc[:k] in ccs for k in range(1, len(cc))):
        lead = np.flatnonzero(has_plus & nonempty)
        if len(lead):
            ds = list(map(digits.__getitem__, lead.tolist()))
            lead = lead[np.fromiter(map(str.startswith, ds, repeat(cc)), dtype=bool, count=len(ds))]
            rests = [digits[i][len(cc) :] for i in lead.tolist()]
            ok, gone = national(rests)
            ok &= np.fromiter(map(bool, rests), dtype=bool, count=len(rests))
            keep = lead[ok]
            done[keep] = True
            out[keep] = np.asarray(rests + [None], dtype=object)[:-1][ok]
            out[lead[ok & gone]] = None
    rest = np.flatnonzero(~done).tolist()
    if rest:
        out[rest] = np.asarray([from_digits(digits[i], plus[i]) for i in rest] + [None], dtype=object)[:-1]
    return list(out.tolist())


# ---------------------------------------------------------------------------
# batches (see er_plugins.normalize_text)

#: phones with a possible extension ("x12", "ext 12", "#12", "t"), a "(0)" or written as a float (a
#: spreadsheet's ".0", an exponent "5.551234567e9"): the per-value path
_PHONE_SLOW = re.compile(r"[xX#tT]|\(0\)|\.0|[0-9][eE][+-]?[0-9]")
#: a value that starts with "+" (after whitespace and quotes, brackets, spaces), at a NUL of the joined text
_PHONE_PLUS = re.compile(SEP + r"[ \t\n\x0b\x0c\r\x1c-\x1f]*[\"'(\[ ]*\+")


def _phones(values: list[str], one: PerValue, batch: Callable[[list[str], list[bool]], list[Value]]) -> list[Value]:
    """``[one(v) for v in values]`` for the ``phone`` function ``one`` and ``batch`` (:func:`_phones_from_digits`
    of the same parameters): the digits of the fast values in one regex pass, the leading ``+`` found by one
    search of the joined text."""

    def fast(quick: list[str], big: str) -> list[Value]:
        digits = big.translate(NON_DIGITS_KEEP_SEP).split(SEP)
        plus = [False] * len(quick)
        marks = [m.start() for m in _PHONE_PLUS.finditer(SEP + big)]
        if marks:
            lengths = np.fromiter(map(len, quick), dtype=np.int64, count=len(quick)) + 1
            starts = np.cumsum(lengths) - lengths
            for k in np.searchsorted(starts, np.asarray(marks, dtype=np.int64), side="right").tolist():
                plus[k - 1] = True
        return batch(digits, plus)

    return by_parts(values, fast, one, _PHONE_SLOW)


# ---------------------------------------------------------------------------
# the component


@lru_cache(maxsize=1)
def phone_regions() -> tuple[str, ...]:
    """The region codes `phonenumbers` has metadata for (ISO 3166, sorted)."""
    import phonenumbers

    return tuple(sorted(phonenumbers.SUPPORTED_REGIONS))


class PhoneParams(Params):
    default_region: str | None = Field(
        default="US",
        strict=True,
        description="region of numbers written without a country code (ISO 3166 code) or null",
    )
    min_digits: int = Field(default=7, strict=True, ge=1, le=20, description="fewer digits than this -> missing")
    drop_placeholders: bool = Field(default=True, strict=True, description="a number of one repeated digit (000-000-0000) -> missing")
    foreign_country_code: Literal["keep", "strip"] = Field(
        default="keep", description="other countries' numbers: keep or strip their country code"
    )

    @field_validator("default_region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        if v is None:
            return None
        regions = phone_regions()
        if v.upper() not in regions:
            hint = did_you_mean(v.upper(), regions).strip() or "no close match"
            raise ValueError(f"must be one of: {choices_text(regions)}; got {v!r} ({hint})")
        return v.upper()


class Phone(Normalizer[PhoneParams]):
    name = "phone"
    summary = "digits only, the default region's country code and trunk prefix removed"
    Params = PhoneParams
    requires = ("phonenumbers",)

    batch_first: ClassVar[bool] = True

    def _functions(self) -> tuple[PerValue, Callable[[str, bool], Value]]:
        p = self.params
        return _phone_functions(
            default_region=p.default_region,
            min_digits=p.min_digits,
            drop_placeholders=p.drop_placeholders,
            foreign_country_code=p.foreign_country_code,
        )

    def per_value(self) -> PerValue:
        return self._functions()[0]

    def normalize(self, values: list[str]) -> list[str | None]:
        p = self.params
        one, from_digits = self._functions()

        def batch(digits: list[str], plus: list[bool]) -> list[Value]:
            return _phones_from_digits(digits, plus, from_digits, p.default_region, p.min_digits, p.drop_placeholders)

        return _phones(values, one, batch)
