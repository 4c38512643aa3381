"""Built-in plugin: the field normalizers (``normalize:`` in a job).

Registered through ``er_register_normalizers`` under the entry-point group
``er_framework``, exactly as a third-party normalizer; the chains, the
missing values and the distinct-value cache are the framework's
(:mod:`er_framework.normalize`). Each normalizer is a function of one value
(:meth:`~er_framework.components.Normalizer.per_value`), so a chain of them
runs as one function per distinct value.

``text``
    NFKC, casefold, accents stripped (NFKD, combining marks dropped, and
    ``ø ł đ ð þ æ œ ı ħ ŧ ŀ`` folded to ASCII), apostrophes removed
    (``O'Brien`` -> ``obrien``), other punctuation and symbols (Unicode
    categories P*, S*) -> space, format characters (zero-width joiners, soft
    hyphens) removed, whitespace collapsed.
``name``
    ``text`` and then the titles and suffixes of :data:`NAME_TITLES` dropped
    (``mr mrs ms miss mx dr prof rev sir jr sr ii iii iv esq phd``; option
    ``drop_titles``); option ``sort_tokens`` sorts the tokens ("smith john"
    == "john smith").
``nickname``
    Each token of ``text`` mapped to a canonical first name with the list of
    the ``nicknames`` package, ambiguities settled by US given-name
    frequencies (see :func:`canonical_first_name` for the rule): Bob ->
    robert, Bill -> william, Peggy -> margaret; names not in the list are
    unchanged. Use after ``name``. Option ``tokens``: ``all`` (default) or
    ``first``. (Put ``sort_tokens`` in a ``name`` step *after* it.)
``phone``
    Digits only (extension, formatting and Unicode digits handled), the
    country code and trunk prefix of ``default_region`` removed; see
    :func:`_make_phone`.
``address``
    ``text`` and the USPS Publication 28 abbreviations: street suffixes
    (Appendix C1: street/st/str -> st, avenue/ave/av -> ave, ...), secondary
    unit designators (C2: apartment -> apt, suite -> ste, ``#`` -> apt, ...)
    and directionals (north -> n, southwest -> sw); ``p o box`` and
    ``post office box`` -> ``po box``, ``saint`` -> ``st``. Numbers kept.
``email``
    Stripped and casefolded, ``mailto:`` removed; exactly one ``@`` with
    non-empty parts and no whitespace, else missing. Option ``gmail_dots``.
``date``
    ISO ``YYYY-MM-DD`` from ``YYYY-MM-DD`` / ``YYYY/MM/DD`` / ``YYYY.MM.DD``
    (a time part is ignored), ``YYYYMMDD``, ``DD/MM/YYYY`` or
    ``MM/DD/YYYY`` (option ``dayfirst``; when the preferred order gives no
    valid date the other one is tried, so 25/12/1980 is read either way),
    and dates with English month names (``March 5, 1980``, ``5 Mar 1980``,
    ``1980-Mar-05``, ``Wednesday, 5th of March 1980``). Two-digit years only
    with option ``yy_pivot``.
``digits`` / ``lower`` / ``strip``
    Digits only / casefold only / strip only.

Speed
-----

``text``, ``address``, ``email``, ``phone`` and ``digits`` normalize a whole
batch of distinct values at once (``batch_first``): the ASCII values are
joined by NUL and each step is one C-level pass over the joined text
(``str.translate``, ``lower``, a token map, a regex search for the values
that need the per-value rules); values that are not ASCII, and those a
pattern marks (an address with ``#`` or ``p o``/``north east``, a phone
with an extension or ``(0)``, an email with whitespace or ``:``), go through
the per-value function, which stays the reference (tests compare both). On
the 2 x 1M generated customers: address 1.47M distinct values 2.3 s -> 1.7 s,
phone 1.62M 2.9 s -> 1.2 s, email 1.34M 0.6 s -> 0.4 s (noisy 2-core machine).

Text that is pure ASCII takes a ``str.translate`` fast path; the Unicode
path (NFKC, casefold, NFKD, accent stripping) runs only for non-ASCII
values. Phones use the metadata of `phonenumbers` (country codes, trunk and
international prefixes, national number patterns) in a fast path; its
parser (~10 µs per value, ~100k values/s) runs only for numbers with a
foreign country code. Measured on 1M generated customer values
(:mod:`er_framework.synth.customers`, n=500,000; 2-core machine, best of 3),
in values/s (distinct values in brackets): text 2.0M and name 1.6M (342k
distinct full names; 0.9M when every value is non-ASCII), name+nickname
1.0M, email 1.3M (692k), address 0.58M (770k), phone 0.5M (810k; the
phonenumbers parser alone does ~0.1M distinct/s), date 8M (28k ISO dates)
and 1.9M (140k, five mixed formats).
"""

from __future__ import annotations

import operator
import re
import string
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from datetime import date as _date
from functools import cache, lru_cache
from itertools import compress, repeat
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from pydantic import Field, field_validator

from er_framework import hookimpl
from er_framework.components import Normalizer, Params
from er_framework.errors import choices_text, did_you_mean
from er_plugins.given_names import GIVEN_NAME_FREQUENCIES
from er_plugins.nickname_names import NICKNAME_TABLE

__all__ = [
    "ADDRESS_TOKENS",
    "BUILTIN_NORMALIZERS",
    "NAME_TITLES",
    "Address",
    "Date",
    "Digits",
    "Email",
    "Lower",
    "Name",
    "Nickname",
    "Phone",
    "Strip",
    "Text",
    "canonical_first_name",
    "faker_name_frequencies",
    "computed_nickname_table",
    "nickname_table",
    "phone_regions",
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


def _text(s: str) -> str:
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


def _make_text() -> PerValue:
    return _text


# ---------------------------------------------------------------------------
# names

#: Tokens dropped by ``name`` (after ``text``, so "Mr." and "MR" are "mr").
NAME_TITLES: frozenset[str] = frozenset(
    {"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "rev", "sir", "jr", "sr", "ii", "iii", "iv", "esq", "phd"}
)


def _make_name(sort_tokens: bool = False, drop_titles: bool = True) -> PerValue:
    def name(s: str) -> str:
        tokens = _text(s).split()
        if drop_titles:
            tokens = [t for t in tokens if t not in NAME_TITLES]
        if sort_tokens:
            tokens.sort()
        return " ".join(tokens)

    return name


# ---------------------------------------------------------------------------
# nicknames


def _name_frequencies() -> dict[str, float]:
    """US given-name frequencies (lowercase name -> weight): Faker's en_US lists, as shipped in
    :mod:`er_plugins.given_names` (importing Faker costs ~0.1 s of every run that uses ``nickname``)."""
    return dict(GIVEN_NAME_FREQUENCIES)


def faker_name_frequencies() -> dict[str, float]:
    """US given-name frequencies (lowercase name -> weight) read from Faker's en_US lists: a name's
    largest weight in the male and female tables; ``{}`` without Faker. ``scripts/make_given_names.py``
    writes them to :mod:`er_plugins.given_names`; a test compares the two."""
    freq: dict[str, float] = {}
    try:
        from faker.providers.person.en_US import Provider

        for attr in ("first_names_male", "first_names_female"):
            table = getattr(Provider, attr, {})
            if isinstance(table, Mapping):
                for k, v in table.items():
                    key = str(k).lower()
                    freq[key] = max(freq.get(key, 0.0), float(v))
    except (ImportError, AttributeError, TypeError, ValueError):  # pragma: no cover - Faker missing or changed
        return {}
    return freq


def nickname_table() -> dict[str, str]:
    """name -> canonical first name (:func:`canonical_first_name`), for every name of the ``nicknames`` package that
    changes: :func:`computed_nickname_table` as shipped in :mod:`er_plugins.nickname_names` (building it from the
    package costs ~30 ms of every run that uses ``nickname``; ``scripts/make_given_names.py`` writes the module and
    a test compares it with the table computed from the installed package). Do not modify the returned dict."""
    return NICKNAME_TABLE


def computed_nickname_table() -> dict[str, str]:
    """:func:`nickname_table` computed from the ``nicknames`` package and the shipped name frequencies."""
    from nicknames import NickNamer

    nn = NickNamer()
    nicks = nn.nickname_lookup  # canonical -> its nicknames
    canons = nn.canonical_lookup  # nickname -> the names it is a nickname of
    names = set(nicks) | set(canons)
    freq = _name_frequencies()

    def f(x: str) -> float:
        return freq.get(x, 0.0)

    def more_formal(n: str) -> list[str]:
        fn = f(n)
        return [c for c in canons.get(n, ()) if f(c) > fn or (f(c) == fn == 0.0 and len(c) > len(n))]

    def related(x: str) -> set[str]:
        return {x} | nicks.get(x, set()) | canons.get(x, set())

    terminal = {n for n in names if not more_formal(n)}
    table: dict[str, str] = {}
    for n in names:
        cands = [c for c in more_formal(n) if c in terminal]
        if not cands:
            continue
        rel = related(n)
        best = min(
            cands,
            key=lambda c: (-len(related(c) & rel), -f(c), -len(nicks.get(c, ())), c),
        )
        table[n] = best
    return table


def canonical_first_name(name: str) -> str:
    """The canonical first name of ``name`` (lowercase, ``text``-normalized single token).

    Uses the ``nicknames`` package (name -> names it may be a nickname of;
    noisy: it has both "robert has_nickname bill" and "bill has_nickname
    robert"). Deterministic rule:

    1. A candidate ``c`` of ``n`` is a name that lists ``n`` as a nickname and
       is *more formal*: more frequent as a US given name (Faker's en_US
       frequency tables), or, when neither is in those tables, longer.
    2. A name with no more-formal candidate is *terminal* and maps to itself
       (Robert, William, Margaret, John, Mary; and every name the package
       doesn't know, such as José).
    3. Otherwise ``n`` maps to its terminal candidate sharing the most related
       names with it (itself, its nicknames and the names it is a nickname
       of), then the most frequent, then the one with the most nicknames, then
       the alphabetically first; with no terminal candidate ``n`` is kept.

    So Bob -> robert, Bill -> william (not robert: Bill shares Billy, Will and
    Willie with William), Peggy -> margaret. Mapping only to terminal names
    makes it idempotent. Nicknames the list gives to several names go to one
    of them: Billy -> robert (the list has it for Robert and William alike),
    Sam -> samantha, Chris -> christina. The result is a matching key, not a
    claim about the person.
    """
    return nickname_table().get(name, name)


def _make_nickname(tokens: str = "all") -> PerValue:
    table = nickname_table()
    first_only = tokens == "first"

    def nickname(s: str) -> str:
        parts = _text(s).split()
        if first_only:
            if parts:
                parts[0] = table.get(parts[0], parts[0])
        else:
            parts = [table.get(p, p) for p in parts]
        return " ".join(parts)

    return nickname


# ---------------------------------------------------------------------------
# phones

_EXTENSION = re.compile(r"\s*(?:ext(?:ension)?\.?|x|#)\s*:?\s*\d{1,7}\s*$", re.IGNORECASE)
_NON_DIGITS = re.compile(r"[^0-9]+")
_EXCEL_FLOAT = re.compile(r"\d+\.0")


def _ascii_digits(s: str) -> str:
    s = unicodedata.normalize("NFKC", s)
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in s)


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
            s = _ascii_digits(s)
        if _EXCEL_FLOAT.fullmatch(s):
            s = s[:-2]
        if "x" in s or "X" in s or "#" in s or "t" in s or "T" in s:
            s = _EXTENSION.sub("", s)
        plus = s.lstrip("\"'([ ").startswith("+")
        if plus and "(0)" in s:
            s = s.replace("(0)", "")
        return decide(_NON_DIGITS.sub("", s), plus)

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
        elif (
            cc
            and d.startswith(cc)
            and ((nanp and len(d) == 11) or (not valid_national(d) and valid_national(d[len(cc) :])))
        ):
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
    digits: list[str], plus: list[bool], from_digits: Callable[[str, bool], Value], region: str | None,
    min_digits: int, drop_placeholders: bool,
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
    out = _objects(digits)
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
            rests = [digits[i][len(cc):] for i in lead.tolist()]
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
# addresses

# USPS Publication 28, Appendix C1 (street suffixes): "canonical=variant,..."
# (single-word entries, as transcribed in the usaddress-scourgify package, MIT
# licence; "la", "cr" and "ck" left out: Spanish article / county road).
_C1 = """
    aly=allee,alley,ally anx=anex,annex,annx arc=arcade ave=av,aven,avenu,avenue,avn,avnue
    bch=beach bg=burg bgs=burgs blf=bluf,bluff blfs=bluffs blvd=boul,boulevard,boulv
    bnd=bend br=branch,brnch brg=brdge,bridge brk=brook brks=brooks btm=bot,bottm,bottom
    byp=bypa,bypas,bypass,byps byu=bayoo,bayou cir=circ,circl,circle,crcl,crcle
    cirs=circles clb=club clf=cliff clfs=cliffs cmn=common cor=corner cors=corners
    cp=camp,cmp cpe=cape cres=crecent,crescent,cresent,crscnt,crsent,crsnt crk=creek
    crse=course crst=crest cswy=causeway,causway ct=court,crt
    ctr=cen,cent,center,centr,centre,cnter,cntr ctrs=centers cts=courts curv=curve cv=cove
    cvs=coves cyn=canyn,canyon,cnyn dl=dale dm=dam dr=driv,drive,drv drs=drives
    dv=div,divide,dvd est=estate ests=estates expy=exp,expr,express,expressway,expw
    ext=extension,extn,extnsn exts=extensions fld=field flds=fields fls=falls flt=flat
    flts=flats frd=ford frds=fords frg=forg,forge frgs=forges frk=fork frks=forks
    frst=forest,forests fry=ferry,frry ft=fort,frt fwy=freeway,freewy,frway,frwy
    gdn=garden,gardn,grden,grdn gdns=gardens,grdns gln=glen glns=glens grn=green
    grns=greens grv=grov,grove grvs=groves gtwy=gateway,gatewy,gatway,gtway
    hbr=harb,harbor,harbr,hrbor hbrs=harbors hl=hill hls=hills
    holw=hllw,hollow,hollows,holws hts=height,heights,hgts,ht hvn=haven,havn
    hwy=highway,highwy,hiway,hiwy,hway inlt=inlet is=island,islnd isle=isles
    iss=islands,islnds jct=jction,jctn,junction,junctn,juncton jcts=jctns,junctions
    knl=knol,knoll knls=knolls ky=key kys=keys lck=lock lcks=locks ldg=ldge,lodg,lodge
    lf=loaf lgt=light lgts=lights lk=lake lks=lakes ln=lane,lanes lndg=landing,lndng
    loop=loops mdw=meadow mdws=meadows,medows ml=mill mls=mills mnr=manor
    mnrs=manors msn=mission,missn,mssn mt=mnt,mount mtn=mntain,mntn,mountain,mountin,mtin
    mtns=mntns,mountains mtwy=motorway nck=neck opas=overpass orch=orchard,orchrd oval=ovl
    park=parks,pk,prk path=paths pike=pikes
    pkwy=parkway,parkways,parkwy,pkway,pkwys,pky pl=place pln=plain plns=plaines,plains
    plz=plaza,plza pne=pine pnes=pines pr=prairie,prarie,prr prt=port prts=ports
    psge=passage pt=point pts=points radl=rad,radial,radiel rd=road rdg=rdge,ridge
    rdgs=ridges rds=roads riv=river,rivr,rvr rnch=ranch,ranches,rnchs rpd=rapid
    rpds=rapids rst=rest rte=route shl=shoal shls=shoals shr=shoar,shore
    shrs=shoars,shores skwy=skyway smt=sumit,sumitt,summit spg=spng,spring,sprng
    spgs=spngs,springs,sprngs spur=spurs sq=sqr,sqre,squ,square sqs=sqrs,squares
    st=str,street,strt sta=station,statn,stn
    stra=strav,strave,straven,stravenue,stravn,strvn,strvnue strm=stream,streme sts=streets
    ter=terr,terrace tpke=tpk,trnpk,trpk,turnpike,turnpk trak=track,tracks,trk,trks
    trce=trace,traces trfy=trafficway trl=tr,trail,trails,trls trwy=throughway
    tunl=tunel,tunls,tunnel,tunnels,tunnl un=union uns=unions upas=underpass
    via=vdct,viadct,viaduct vis=vist,vista,vst,vsta vl=ville
    vlg=vill,villag,village,villg,villiage vlgs=villages vly=valley,vally,vlly vlys=valleys
    vw=view vws=views walk=walks way=wy wl=well wls=wells
    xing=crossing,crssing,crssng xrd=crossroad
"""
# USPS Publication 28, Appendix C2 (secondary unit designators), a few common
# variants added; "key" is left to C1 (-> "ky").
_C2 = """
    apt=apartment,appt,apmt bsmt=basement bldg=building,bld,bldng dept=department
    fl=floor,flr frnt=front hngr=hanger,hangar lbby=lobby lowr=lower ofc=office
    ph=penthouse rm=room spc=space ste=suite,suit trlr=trailer uppr=upper
    lot pier rear side slip stop unit
"""
# USPS Publication 28 directionals; and "saint" -> "st" (not USPS: St. Paul == Saint Paul).
_DIRECTIONALS = """
    n=north s=south e=east w=west ne=northeast nw=northwest se=southeast sw=southwest st=saint
"""


def _parse_table(*texts: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for text in texts:
        for item in text.split():
            canon, _, variants = item.partition("=")
            for v in [canon, *filter(None, variants.split(","))]:
                table.setdefault(v, canon)
    return table


#: address token -> its USPS abbreviation.
ADDRESS_TOKENS: dict[str, str] = _parse_table(_C1, _C2, _DIRECTIONALS)
_UNIT_DESIGNATORS = frozenset(_parse_table(_C2).values())
_COMPASS_PAIRS = {
    ("north", "east"): "ne", ("north", "west"): "nw", ("south", "east"): "se", ("south", "west"): "sw",
}  # fmt: skip
_ADDRESS_PAIRS = {("p", "o"): "po", ("post", "office"): "po", **_COMPASS_PAIRS}
_ADDRESS_SPECIAL = frozenset({"#", "pob"} | {a for a, _ in _ADDRESS_PAIRS})


def _address(s: str) -> str:
    if "#" in s or "\uff03" in s:  # "#" (or its full-width form) is a unit designator, not punctuation
        parts = s.replace("\uff03", "#").split("#")
        tokens = _text(parts[0]).split()
        for part in parts[1:]:
            tokens.append("#")
            tokens.extend(_text(part).split())
    else:
        tokens = _text(s).split()
        if _ADDRESS_SPECIAL.isdisjoint(tokens):
            get = ADDRESS_TOKENS.get
            return " ".join([get(t, t) for t in tokens])
    out: list[str] = []
    i, n = 0, len(tokens)
    get = ADDRESS_TOKENS.get
    while i < n:
        t = tokens[i]
        if i + 1 < n and (t, tokens[i + 1]) in _ADDRESS_PAIRS:
            out.append(_ADDRESS_PAIRS[(t, tokens[i + 1])])
            i += 2
            continue
        if t == "#":
            if not (out and out[-1] in _UNIT_DESIGNATORS):
                out.append("apt")
        elif t == "pob":
            out.extend(("po", "box"))
        else:
            out.append(get(t, t))
        i += 1
    return " ".join(out)


def _make_address() -> PerValue:
    return _address


# ---------------------------------------------------------------------------
# emails

_GMAIL = frozenset({"gmail.com", "googlemail.com"})


def _make_email(gmail_dots: bool = False) -> PerValue:
    def email(s: str) -> Value:
        s = s.strip().casefold()
        if s.startswith("mailto:"):
            s = s[7:].strip()
        if s.count("@") != 1 or len(s.split()) != 1:
            return None
        local, domain = s.split("@")
        domain = domain.rstrip(".")
        if not local or not domain:
            return None
        if gmail_dots and domain in _GMAIL:
            local = local.split("+", 1)[0].replace(".", "")
            domain = "gmail.com"
            if not local:
                return None
        return f"{local}@{domain}"

    return email


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


def _make_date(dayfirst: bool = False, yy_pivot: int | None = None) -> PerValue:
    def year(text: str) -> int | None:
        y = int(text)
        if len(text) == 4:
            return y
        if len(text) == 2 and yy_pivot is not None:
            return 2000 + y if y < yy_pivot else 1900 + y
        return None

    def date(s: str) -> Value:
        t = s.strip().casefold()
        if t[:1].isdigit():
            if (m := _ISO.fullmatch(t)) is not None:
                return _ymd(int(m[1]), int(m[2]), int(m[3]))
            if (m := _COMPACT.fullmatch(t)) is not None:
                return _ymd(int(m[1]), int(m[2]), int(m[3]))
            if (m := _NUMERIC.fullmatch(t)) is not None:
                y = year(m[3])
                if y is None:
                    return None
                a, b = int(m[1]), int(m[2])
                day, month = (a, b) if dayfirst else (b, a)
                return _ymd(y, month, day) or _ymd(y, day, month)
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
# simple ones


def _make_digits() -> PerValue:
    def digits(s: str) -> str:
        if not s.isascii():
            s = _ascii_digits(s)
        return _NON_DIGITS.sub("", s)

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
_SEP = "\x00"
_ASCII_TEXT_KEEP_SEP = {**_ASCII_TEXT, 0: _SEP}
#: deletes every ASCII character but the digits and NUL (str.translate: far faster than a regex)
_NON_DIGITS_KEEP_SEP = str.maketrans("", "", "".join(chr(i) for i in range(1, 128) if not chr(i).isdigit()))


def _split_fast(
    values: list[str], slow_pattern: re.Pattern[str] | None = None
) -> tuple[list[str], str, npt.NDArray[np.bool_] | None]:
    """``(fast, joined, slow)``: the values that are ASCII, hold no NUL and no match of ``slow_pattern`` (a
    pattern that never matches a NUL), those joined by NUL, and which values are not fast (``None``: all are)."""
    n = len(values)
    big = _SEP.join(values)
    slow: npt.NDArray[np.bool_] | None = None
    if not big.isascii():
        slow = ~np.fromiter(map(str.isascii, values), dtype=bool, count=n)
    if big.count(_SEP) != n - 1:  # rare: a value holds a NUL; the pattern is searched value by value
        slow = np.fromiter(map(str.__contains__, values, repeat(_SEP)), dtype=bool, count=n) | (
            False if slow is None else slow)
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
    return fast, _SEP.join(fast), slow


def _by_parts(
    values: list[str], fast: Callable[[list[str], str], list[Value]], one: PerValue,
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
            out.extend(_by_parts(values[a : a + BATCH_SLICE], fast, one, slow_pattern))
        return out
    quick, big, slow = _split_fast(values, slow_pattern)
    done = fast(quick, big) if quick else []
    if slow is None:
        return done
    merged = np.empty(len(values), dtype=object)
    merged[~slow] = _objects(done)
    merged[slow] = _objects([one(v) for v in compress(values, slow.tolist())])
    return list(merged.tolist())


def _objects(items: list[Any]) -> npt.NDArray[np.object_]:
    """A 1-D object array of the items (never an array of strings or a 2-D array)."""
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def _ascii_texts(big: str) -> list[str]:
    """:func:`_text` of the NUL-joined ASCII values of ``big`` (none holding a NUL)."""
    t = big.translate(_ASCII_TEXT_KEEP_SEP).lower()  # punctuation and control characters -> space
    while "  " in t:  # runs of spaces -> one space (only spaces are whitespace now)
        t = t.replace("  ", " ")
    t = t.replace(" " + _SEP, _SEP).replace(_SEP + " ", _SEP).strip(" ")
    return t.split(_SEP)


def _texts(values: list[str]) -> list[Value]:
    """``[_text(v) for v in values]``."""
    return _by_parts(values, lambda _, big: list(_ascii_texts(big)), _text)


#: tokens that :func:`_address` reads with their neighbour ("p o", "post office", "north east"), or "pob"
_ADDRESS_NEIGHBOURS = tuple(sorted(_ADDRESS_SPECIAL - {"#"}))


def _ascii_addresses(values: list[str], big: str) -> list[Value]:
    """:func:`_address` of ASCII values without ``#``: texts joined by `` NUL ``, split into tokens, each token
    mapped (``ADDRESS_TOKENS``) and joined again; values with a token of :data:`_ADDRESS_NEIGHBOURS` one by one."""
    texts = _ascii_texts(big)
    joined = f" {_SEP} ".join(texts)
    tokens = joined.split(" ")
    out: list[Value] = list(" ".join(map(ADDRESS_TOKENS.get, tokens, tokens)).split(f" {_SEP} "))
    padded = f" {joined} "
    hits: list[int] = []
    for tok in _ADDRESS_NEIGHBOURS:
        needle = f" {tok} "
        i = padded.find(needle)
        while i >= 0:
            hits.append(i)
            i = padded.find(needle, i + 1)
    if hits:
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 3
        starts = np.cumsum(lengths) - lengths
        for k in np.unique(np.searchsorted(starts, np.asarray(hits, dtype=np.int64), side="right") - 1).tolist():
            out[k] = _address(values[k])
    return out


def _addresses(values: list[str]) -> list[Value]:
    """``[_address(v) for v in values]``."""
    return _by_parts(values, _ascii_addresses, _address, re.compile("#"))


#: emails holding whitespace or a colon ("mailto:") take the per-value path
_EMAIL_SLOW = re.compile(r"[\s:]")


def _emails(values: list[str], one: PerValue, gmail_dots: bool) -> list[Value]:
    """``[one(v) for v in values]`` for the ``email`` function ``one``: ASCII values without whitespace or
    ``:`` lowercased in one pass; one that is ``local@domain`` (one ``@``, both parts non-empty, no final
    dot) is its own key, any other goes through ``one``."""
    if gmail_dots:
        return list(map(one, values))

    def fast(_: list[str], big: str) -> list[Value]:
        low = big.lower().split(_SEP)  # casefold() of ASCII text
        return [e if e.count("@") == 1 and e[0] != "@" and e[-1] != "@" and e[-1] != "." else one(e) for e in low]

    return _by_parts(values, fast, one, _EMAIL_SLOW)


#: phones with a possible extension ("x12", "ext 12", "#12", "t"), a "(0)" or a spreadsheet's ".0":
#: the per-value path
_PHONE_SLOW = re.compile(r"[xX#tT]|\(0\)|\.0")
#: a value that starts with "+" (after whitespace and quotes, brackets, spaces), at a NUL of the joined text
_PHONE_PLUS = re.compile(_SEP + r"[ \t\n\x0b\x0c\r\x1c-\x1f]*[\"'(\[ ]*\+")


def _phones(values: list[str], one: PerValue, batch: Callable[[list[str], list[bool]], list[Value]]) -> list[Value]:
    """``[one(v) for v in values]`` for the ``phone`` function ``one`` and ``batch`` (:func:`_phones_from_digits`
    of the same parameters): the digits of the fast values in one regex pass, the leading ``+`` found by one
    search of the joined text."""

    def fast(quick: list[str], big: str) -> list[Value]:
        digits = big.translate(_NON_DIGITS_KEEP_SEP).split(_SEP)
        plus = [False] * len(quick)
        marks = [m.start() for m in _PHONE_PLUS.finditer(_SEP + big)]
        if marks:
            lengths = np.fromiter(map(len, quick), dtype=np.int64, count=len(quick)) + 1
            starts = np.cumsum(lengths) - lengths
            for k in np.searchsorted(starts, np.asarray(marks, dtype=np.int64), side="right").tolist():
                plus[k - 1] = True
        return batch(digits, plus)

    return _by_parts(values, fast, one, _PHONE_SLOW)


def _digit_strings(values: list[str], one: PerValue) -> list[Value]:
    """``[one(v) for v in values]`` for the ``digits`` function ``one``: ASCII values in one regex pass."""
    return _by_parts(values, lambda _, big: list(big.translate(_NON_DIGITS_KEEP_SEP).split(_SEP)), one)


# ---------------------------------------------------------------------------
# the components


class Text(Normalizer):
    name = "text"
    summary = "NFKC, casefold, accents stripped, apostrophes removed, punctuation -> space, whitespace collapsed"
    #: chains run normalize() (the whole batch in a few passes; per_value() is its reference)
    batch_first: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        return _make_text()

    def normalize(self, values: list[str]) -> list[str | None]:
        return _texts(values)


class NameParams(Params):
    sort_tokens: bool = Field(default=False, strict=True, description="sort the tokens, so 'smith john' == 'john smith'")
    drop_titles: bool = Field(default=True, strict=True, description="drop titles and suffixes (NAME_TITLES)")


class Name(Normalizer):
    name = "name"
    summary = "text, then titles/suffixes (mr mrs ms miss mx dr prof rev sir jr sr ii iii iv esq phd) dropped"
    Params = NameParams

    def per_value(self) -> PerValue:
        p = self.params
        assert isinstance(p, NameParams)
        return _make_name(sort_tokens=p.sort_tokens, drop_titles=p.drop_titles)


class NicknameParams(Params):
    tokens: Literal["all", "first"] = Field(default="all", description="map every token or only the first")


class Nickname(Normalizer):
    name = "nickname"
    summary = "first names -> canonical name with the nicknames package (Bob -> robert); use after name"
    Params = NicknameParams  # (its table is shipped, er_plugins.nickname_names: nothing to import at run time)

    def per_value(self) -> PerValue:
        p = self.params
        assert isinstance(p, NicknameParams)
        return _make_nickname(tokens=p.tokens)


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
    drop_placeholders: bool = Field(
        default=True, strict=True, description="a number of one repeated digit (000-000-0000) -> missing"
    )
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


class Phone(Normalizer):
    name = "phone"
    summary = "digits only, the default region's country code and trunk prefix removed"
    Params = PhoneParams
    requires = ("phonenumbers",)

    batch_first: ClassVar[bool] = True

    def _functions(self) -> tuple[PerValue, Callable[[str, bool], Value]]:
        p = self.params
        assert isinstance(p, PhoneParams)
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
        assert isinstance(p, PhoneParams)
        one, from_digits = self._functions()

        def batch(digits: list[str], plus: list[bool]) -> list[Value]:
            return _phones_from_digits(digits, plus, from_digits, p.default_region, p.min_digits, p.drop_placeholders)

        return _phones(values, one, batch)


class Address(Normalizer):
    name = "address"
    summary = "text, then USPS Pub. 28 street suffix, unit and directional abbreviations (street -> st)"
    batch_first: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        return _make_address()

    def normalize(self, values: list[str]) -> list[str | None]:
        return _addresses(values)


class EmailParams(Params):
    gmail_dots: bool = Field(
        default=False, strict=True, description="gmail.com/googlemail.com: drop dots and +tags of the local part"
    )


class Email(Normalizer):
    name = "email"
    summary = "stripped, casefolded; exactly one @ with non-empty parts, else missing"
    Params = EmailParams

    batch_first: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        p = self.params
        assert isinstance(p, EmailParams)
        return _make_email(gmail_dots=p.gmail_dots)

    def normalize(self, values: list[str]) -> list[str | None]:
        p = self.params
        assert isinstance(p, EmailParams)
        return _emails(values, self.per_value(), p.gmail_dots)


class DateParams(Params):
    dayfirst: bool = Field(default=False, strict=True, description="read 05/03/1980 as 5 March (else May 3)")
    yy_pivot: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=100,
        description="two-digit years: < pivot -> 20yy, else 19yy; null: unparseable",
    )


class Date(Normalizer):
    name = "date"
    summary = "common date formats -> ISO YYYY-MM-DD; unparseable -> missing"
    Params = DateParams

    def per_value(self) -> PerValue:
        p = self.params
        assert isinstance(p, DateParams)
        return _make_date(dayfirst=p.dayfirst, yy_pivot=p.yy_pivot)


class Digits(Normalizer):
    name = "digits"
    summary = "digits only"
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


BUILTIN_NORMALIZERS: tuple[type[Normalizer], ...] = (
    Text, Name, Nickname, Phone, Address, Email, Date, Digits, Lower, Strip,
)


@hookimpl
def er_register_normalizers() -> list[type[Normalizer]]:
    return list(BUILTIN_NORMALIZERS)
