"""Generated customer records of two (or more) companies with known truth (seeded, reproducible).

Company A referred some of its customers to company B. :func:`generate_customers`
makes ``n`` records for A and ``n`` for B; ``round(overlap * n)`` of B's are
copies of distinct A customers, seen through B's data entry (typos, nicknames,
a move, a new phone, other formatting, missing fields, ...), and the rest of B
are new people. ``truth`` lists the ``(a_id, b_id)`` pairs.
:func:`write_customers` writes ``a.csv``, ``b.csv`` and ``truth.csv``.

With ``sources=3`` or more, companies C, D, … follow (``c.csv``, …): A and B
are as with two, and each further company copies ``round(overlap * n)``
distinct people of the earlier companies (so every pair of companies shares
customers) and adds new people; the truth (``left_id,right_id``) lists every
pair of records of one person in two companies.

Columns (all strings; a missing value is the empty string)::

    id, first_name, last_name, address, city, zip, phone, email, dob

``id`` is ``A000001``-style in A (in row order) and ``B000001``-style in B,
where both the row order and the ids are independent random permutations, so
neither reveals which B records are copies. ``address`` is a street line
(``"123 Main Street"``, ``"88 Oak Ave. Apt. 4"``), ``dob`` is ``YYYY-MM-DD``,
``phone`` is a 10-digit NANP number in one of four formats (see
:data:`PHONE_FORMATS`).

How values are made
-------------------

Base values come from `Faker <https://faker.readthedocs.io>`_ (``en_US``),
but calling Faker per record is far too slow for a million records: a Faker
instance seeded with ``seed`` draws *pools* once (first names, last names,
street names, (city, zip) localities, email domains) and records are
assembled from numpy index draws (``np.random.default_rng(seed)``). Faker's
name lists are weighted by US frequency and the pools are draws with
repetition, so common names are common (Smith is ~2% of last names) and, at
any size, different people share a first + last name; on top of that
:attr:`PopulationRates.duplicate_name` of the people copy the full name of
another person. Localities are Zipf-weighted (a few big cities), a few common
street names (Main, Oak, Park, ...) make up a quarter of the streets.
Nicknames come from the ``nicknames`` package (a name -> nickname list), with
nicknames sharing the name's initial letter preferred (Robert -> Rob, Bob).

Each person is rendered into records. A B record is made from its person
exactly like an A record (the *base* record) and then edited by
:class:`CorruptionRates`; B's new people go through the same process (their
base record is never shown), so the distribution of B's values does not tell
copies from new people. For a B copy the base record is the A record, apart
from A-side blanks and placeholder phones, which are A's own (B knows the
real values unless its own rates blank them).

Determinism: the same ``(n, overlap, seed, rates)`` and the same Faker and
``nicknames`` versions give the same records and byte-identical files.

Performance (measured on a 2-core machine, ``overlap = 0.5``): ``n = 100_000``
generates in ~1.5 s and writes in ~0.4 s (peak RSS ~0.2 GB); ``n = 1_000_000``
generates in ~7 s and writes (~220 MB of CSV) in ~3 s, peak RSS ~1.3 GB (the
records are Python lists of strings). Faker is called only for the pools
(~0.5 s, cached per seed).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.errors import InputError, os_problem
from er_framework.io.safe_write import FileKind
from er_framework.synth.files import check_targets, csv_kind, write_csv

__all__ = [
    "keyboard_neighbour",
    "COLUMNS",
    "PHONE_FORMATS",
    "PLACEHOLDER_PHONE",
    "STREET_SUFFIXES",
    "CorruptionRates",
    "CustomerData",
    "PopulationRates",
    "MAX_SOURCES",
    "generate_customers",
    "record_ids",
    "source_letter",
    "value_pools",
    "write_customers",
]

COLUMNS: tuple[str, ...] = ("id", "first_name", "last_name", "address", "city", "zip", "phone", "email", "dob")

#: Phone renderings of area code, exchange, line (index = phone style).
PHONE_FORMATS: tuple[str, ...] = (
    "({0:03d}) {1:03d}-{2:04d}",
    "{0:03d}-{1:03d}-{2:04d}",
    "+1 {0:03d} {1:03d} {2:04d}",
    "{0:03d}.{1:03d}.{2:04d}",
)

#: most companies (their ids are prefixed A … Z)
MAX_SOURCES = 26

#: What a clerk types when the customer gives no number (shown as is, in any style).
PLACEHOLDER_PHONE = "000-000-0000"

#: (full, abbreviation, weight) — USPS suffixes; a street line shows the
#: full word (style 0), the abbreviation (style 1) or the abbreviation with a
#: full stop (style 2): "Street" / "St" / "St.".
STREET_SUFFIXES: tuple[tuple[str, str, float], ...] = (
    ("Street", "St", 0.30),
    ("Avenue", "Ave", 0.18),
    ("Road", "Rd", 0.12),
    ("Drive", "Dr", 0.12),
    ("Lane", "Ln", 0.07),
    ("Court", "Ct", 0.06),
    ("Boulevard", "Blvd", 0.04),
    ("Place", "Pl", 0.04),
    ("Circle", "Cir", 0.03),
    ("Terrace", "Ter", 0.02),
    ("Parkway", "Pkwy", 0.02),
)

_COMMON_STREETS = (
    "Main", "Oak", "Maple", "Park", "Pine", "Cedar", "Elm", "Washington", "Lake", "Hill",
    "Church", "Walnut", "Spring", "North", "South", "Ridge", "Lincoln", "Jackson", "Highland", "Sunset",
    "Mill", "River", "Center", "Chestnut", "Willow", "2nd", "3rd", "4th", "5th", "1st",
)  # fmt: skip

_QWERTY = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


def _check_rate(name: str, value: float) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


@dataclass(frozen=True)
class CorruptionRates:
    """Per-record probabilities of the edits that B's data entry makes.

    Each edit is drawn independently for every B record. The defaults give
    about half of B's copies at least one visible difference in name or
    address and most of them some difference.

    name_typo (0.05)
        Independently for first and last name: one keyboard typo — insert,
        delete, substitute (a QWERTY neighbour) or transpose one character,
        equally likely; the name always changes.
    nickname (0.10)
        First name given the other way round: a nickname instead of the full
        name, or (when the base record had the nickname) the full name.
        Only for first names that have a nickname (about 80% of them);
        ``applied["nickname"]`` marks the records where it took effect.
    swap_names (0.02)
        First and last name exchanged (after typos).
    phone_change (0.05)
        A completely new number.
    phone_format (0.30)
        One of the other :data:`PHONE_FORMATS` (invisible if the phone is
        blank or the placeholder on either side).
    move (0.10)
        A new street line, and a different locality (city and zip).
    address_abbreviation (0.30)
        Another rendering of the street suffix (Street / St / St.); the
        address always changes.
    email_change (0.10)
        A new email address (another pattern, number and/or domain).
    missing_email, missing_phone, missing_dob (0.05, 0.05, 0.03)
        The field left empty.
    case (0.05)
        Names, street line and city in upper case (70%) or lower case (30%).
    dob_error (0.01)
        A wrong date of birth: one day off, one year off, or month and day
        exchanged, equally likely (a date that can't be swapped is one day off).
    """

    name_typo: float = 0.05
    nickname: float = 0.10
    swap_names: float = 0.02
    phone_change: float = 0.05
    phone_format: float = 0.30
    move: float = 0.10
    address_abbreviation: float = 0.30
    email_change: float = 0.10
    missing_email: float = 0.05
    missing_phone: float = 0.05
    missing_dob: float = 0.03
    case: float = 0.05
    dob_error: float = 0.01

    def __post_init__(self) -> None:
        for f in fields(self):
            _check_rate(f"CorruptionRates.{f.name}", getattr(self, f.name))

    @classmethod
    def none(cls) -> CorruptionRates:
        """All rates zero: B copies equal their A records (apart from A's blanks and placeholders)."""
        return cls(**{f.name: 0.0 for f in fields(cls)})


@dataclass(frozen=True)
class PopulationRates:
    """How the records of both companies look, apart from B's edits.

    nickname (0.05)
        A record gives a nickname as first name (of those that have one).
    duplicate_name (0.002)
        A person has the first and last name of another (random) person,
        on top of the coincidences of common names.
    placeholder_phone (0.005)
        A record's phone is :data:`PLACEHOLDER_PHONE` (per record, in A and
        in B independently): a large block of equal phones.
    unit (0.15)
        A street line has an apartment number.
    a_missing_email, a_missing_phone, a_missing_dob (0.02, 0.01, 0.01)
        An A record's field is empty (B's blanks are in :class:`CorruptionRates`).
    suffix_style ((0.6, 0.3, 0.1))
        Probabilities of "Street" / "St" / "St.".
    phone_style ((0.4, 0.4, 0.1, 0.1))
        Probabilities of the :data:`PHONE_FORMATS`.
    """

    nickname: float = 0.05
    duplicate_name: float = 0.002
    placeholder_phone: float = 0.005
    unit: float = 0.15
    a_missing_email: float = 0.02
    a_missing_phone: float = 0.01
    a_missing_dob: float = 0.01
    suffix_style: tuple[float, float, float] = (0.6, 0.3, 0.1)
    phone_style: tuple[float, float, float, float] = (0.4, 0.4, 0.1, 0.1)

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, tuple):
                if len(v) != {"suffix_style": 3, "phone_style": 4}[f.name] or any(x < 0 for x in v) or abs(sum(v) - 1) > 1e-9:
                    raise ValueError(f"PopulationRates.{f.name} must be {len(v)} probabilities summing to 1, got {v!r}")
            else:
                _check_rate(f"PopulationRates.{f.name}", v)


@dataclass
class CustomerData:
    """Records of A and B (column -> values, in :data:`COLUMNS` order), of C, D, … (``more``) and the truth.

    ``truth`` holds the ``(a_id, b_id)`` pairs of the referred customers,
    sorted by ``a_id`` (with three or more companies: every pair of records
    of one person in two companies, the earlier company's id first, sorted). ``applied`` maps each edit of :class:`CorruptionRates`
    (``name_typo`` split into ``first_name_typo`` / ``last_name_typo``) and
    ``placeholder_phone`` to a boolean array over B's rows: which edits were
    made to each B record. ``b_is_copy`` marks B's rows that are copies (for
    new people the edits apply to a base record that is never shown, so they
    have no observable meaning).
    """

    a: dict[str, list[str]]
    b: dict[str, list[str]]
    truth: list[tuple[str, str]]
    applied: dict[str, BoolArray] = field(default_factory=dict)
    b_is_copy: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: the records of companies C, D, … (``generate_customers(..., sources=3 or more)``)
    more: list[dict[str, list[str]]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.a["id"])

    @property
    def tables(self) -> list[dict[str, list[str]]]:
        """The records of every company in order: A, B, C, …"""
        return [self.a, self.b, *self.more]


# ---------------------------------------------------------------------------
# pools


@dataclass
class _Pools:
    first: list[str]
    first_nicks: list[list[str]]  # per pool index; repeated entries weight the choice
    last: list[str]
    first_key: list[str]  # lower-case letters only, for emails
    last_key: list[str]
    streets: list[str]
    cities: list[str]
    zips: list[str]
    loc_p: npt.NDArray[np.float64]
    domains: list[str]


def _nickname_lists(names: Sequence[str]) -> dict[str, list[str]]:
    """Nicknames of each distinct name (title case), same-initial ones three times."""
    from nicknames import NickNamer

    nn = NickNamer()
    out: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        nicks = []
        for nick in sorted(nn.nicknames_of(name)):
            if len(nick) < 2 or not nick.replace(" ", "").replace("-", "").isalpha() or nick == name.lower():
                continue
            t = nick.title()
            nicks += [t, t, t] if nick[0] == name[0].lower() else [t]
        out[name] = nicks
    return out


@lru_cache(maxsize=8)
def value_pools(seed: int) -> _Pools:
    """Value pools drawn from a Faker instance seeded with ``seed`` (cached; never mutated)."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    person = fake.provider("faker.providers.person")
    # Faker's US name lists with their frequency weights (what first_name() / last_name() draw from)
    first = list(fake.random_elements(person.first_names, length=6000, use_weighting=True))
    last = list(fake.random_elements(person.last_names, length=8000, use_weighting=True))
    streets = [fake.street_name().rsplit(" ", 1)[0] for _ in range(3000)]
    streets += [s for s in _COMMON_STREETS for _ in range(34)]  # ~1,000 of 4,000
    cities, zips = [], []
    for _ in range(3000):
        state = fake.state_abbr(include_territories=False)
        cities.append(fake.city())
        zips.append(str(fake.zipcode_in_state(state)))
    domains = [fake.free_email_domain() for _ in range(700)] + [fake.domain_name() for _ in range(300)]
    nick = _nickname_lists(first)

    def key(s: str) -> str:
        return "".join(c for c in s.lower() if c.isalpha())

    r = np.arange(1, len(cities) + 1, dtype=np.float64)
    loc_p = 1.0 / (r + 20.0)
    return _Pools(
        first=first,
        first_nicks=[nick[f] for f in first],
        last=last,
        first_key=[key(f) for f in first],
        last_key=[key(x) for x in last],
        streets=streets,
        cities=cities,
        zips=zips,
        loc_p=loc_p / loc_p.sum(),
        domains=domains,
    )


# ---------------------------------------------------------------------------
# value makers (vectorised draws; Python only to format strings)


def _street_numbers(rng: np.random.Generator, k: int) -> IntArray:
    """5 .. ~16,000, log-uniform (three- and four-digit numbers are the most common)."""
    return np.floor(10.0 ** rng.uniform(0.7, 4.2, size=k)).astype(np.int64)


def _units(rng: np.random.Generator, k: int, rate: float) -> IntArray:
    has = rng.random(k) < rate
    return np.where(has, rng.integers(1, 400, size=k), 0).astype(np.int64)


def _phones(rng: np.random.Generator, k: int) -> IntArray:
    """10-digit NANP numbers: area code and exchange start with 2-9."""
    area = rng.integers(200, 1000, size=k)
    exch = rng.integers(200, 1000, size=k)
    line = rng.integers(0, 10000, size=k)
    return (area * 10_000_000 + exch * 10_000 + line).astype(np.int64)


_EMAIL_PATTERNS = (
    "{f}.{l}{n}",
    "{f}{l}{n}",
    "{f0}{l}{n}",
    "{f}_{l}{n}",
    "{l}{f0}{n}",
    "{f}{n}",
)


@dataclass
class _EmailParts:
    pattern: IntArray
    number: list[str]
    domain: IntArray


def _email_parts(rng: np.random.Generator, k: int, birth_year: IntArray, n_domains: int) -> _EmailParts:
    pattern = rng.choice(len(_EMAIL_PATTERNS), size=k, p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.1])
    kind = rng.choice(3, size=k, p=[0.5, 0.15, 0.35])
    num = rng.integers(1, 1000, size=k)
    kind[pattern == len(_EMAIL_PATTERNS) - 1] = 2  # "{f}{n}" always has a number
    yy = birth_year % 100
    number = ["" if kd == 0 else (f"{y:02d}" if kd == 1 else str(x)) for kd, y, x in zip(kind.tolist(), yy.tolist(), num.tolist())]
    return _EmailParts(pattern=pattern, number=number, domain=rng.integers(0, n_domains, size=k))


def _render_emails(pools: _Pools, first_idx: IntArray, last_idx: IntArray, parts: _EmailParts) -> list[str]:
    fk, lk, dom = pools.first_key, pools.last_key, pools.domains
    pats = _EMAIL_PATTERNS
    out = []
    for fi, li, p, n, d in zip(first_idx.tolist(), last_idx.tolist(), parts.pattern.tolist(), parts.number, parts.domain.tolist()):
        f = fk[fi] or "x"
        out.append(pats[p].format(f=f, f0=f[0], l=lk[li], n=n) + "@" + dom[d])
    return out


def _render_phones(phone: IntArray, style: IntArray) -> list[str]:
    area = (phone // 10_000_000).tolist()
    exch = (phone // 10_000 % 1000).tolist()
    line = (phone % 10_000).tolist()
    fmts = PHONE_FORMATS
    return [fmts[s].format(a, e, x) for a, e, x, s in zip(area, exch, line, style.tolist())]


def _render_addresses(pools: _Pools, number: IntArray, street: IntArray, suffix: IntArray, unit: IntArray, style: IntArray) -> list[str]:
    forms = [(full, abbr, abbr + ".") for full, abbr, _ in STREET_SUFFIXES]
    unit_forms = ("Apt", "Apt", "Apt.")
    streets = pools.streets
    out = []
    for num, st, sf, u, sy in zip(number.tolist(), street.tolist(), suffix.tolist(), unit.tolist(), style.tolist()):
        s = f"{num} {streets[st]} {forms[sf][sy]}"
        out.append(f"{s} {unit_forms[sy]} {u}" if u else s)
    return out


def _render_dobs(days: IntArray) -> list[str]:
    return np.datetime_as_string(days.astype("datetime64[D]"), unit="D").tolist()


def _neighbours() -> dict[str, str]:
    pos = {c: (r, i) for r, row in enumerate(_QWERTY) for i, c in enumerate(row)}
    return {c: "".join(d for d, (r2, i2) in pos.items() if d != c and abs(r2 - r) <= 1 and abs(i2 - i) <= 1) for c, (r, i) in pos.items()}


_NEAR = _neighbours()


def keyboard_neighbour(c: str, v: float) -> str:
    """A QWERTY neighbour of ``c`` (any letter for a non-letter), chosen by ``v`` in [0, 1)."""
    pool = _NEAR.get(c.lower(), _LETTERS)
    return pool[int(v * len(pool))]


def _typo(s: str, op: int, u: float, v: float) -> str:
    """One typo: insert (0), delete (1), substitute (2) or transpose (3); always changes ``s``.

    ``u`` picks the position and ``v`` the character. Capitalisation stays
    where it was (a typo at the start of "Smith" gives "Mith", "Asmith", "Amith", "Msith").
    """
    n = len(s)
    if n == 0:
        return keyboard_neighbour("a", v)
    if (op == 1 and n <= 1) or (op == 3 and n < 2):
        op = 2
    if op == 3:
        i = min(int(u * (n - 1)), n - 2)
        a, b = s[i], s[i + 1]
        if a.lower() == b.lower():
            op = 2
        else:
            na = b.upper() if a.isupper() else b.lower()
            nb = a.upper() if b.isupper() else a.lower()
            return s[:i] + na + nb + s[i + 2 :]
    if op == 0:
        i = min(int(u * (n + 1)), n)
        c = keyboard_neighbour(s[i - 1] if i > 0 else s[0], v)
        if i == 0 and s[0].isupper():
            return c.upper() + s[0].lower() + s[1:]
        return s[:i] + (c.upper() if s.isupper() else c) + s[i:]
    if op == 1:
        i = min(int(u * n), n - 1)
        t = s[:i] + s[i + 1 :]
        return t[0].upper() + t[1:] if i == 0 and s[0].isupper() else t
    i = min(int(u * n), n - 1)
    c = keyboard_neighbour(s[i], v)
    return s[:i] + (c.upper() if s[i].isupper() else c) + s[i + 1 :]


def _dob_error(day: int, op: int, sign: int) -> int:
    """Days since the epoch of a wrong date: one day off (0), one year off (1), month/day swapped (2)."""
    d = _dt.date(1970, 1, 1) + _dt.timedelta(days=day)
    if op == 2 and d.day <= 12 and d.day != d.month:
        w = d.replace(month=d.day, day=d.month)
    elif op == 1:
        y = d.year + sign
        w = _dt.date(y, d.month, min(d.day, 28)) if (d.month, d.day) == (2, 29) else d.replace(year=y)
    else:
        w = d + _dt.timedelta(days=sign)
    return (w - _dt.date(1970, 1, 1)).days


# ---------------------------------------------------------------------------
# people and records


@dataclass
class _People:
    first: IntArray
    last: IntArray
    nick_u: npt.NDArray[np.float64]
    number: IntArray
    street: IntArray
    suffix: IntArray
    unit: IntArray
    loc: IntArray
    phone: IntArray
    email: list[str]
    dob: IntArray
    # base record choices
    uses_nick: BoolArray
    suffix_style: IntArray
    phone_style: IntArray


_DOB_LO = (np.datetime64("1930-01-01") - np.datetime64("1970-01-01")).astype(np.int64)
_DOB_HI = (np.datetime64("2006-12-31") - np.datetime64("1970-01-01")).astype(np.int64)


def _people(rng: np.random.Generator, pools: _Pools, k: int, pop: PopulationRates) -> _People:
    first = rng.integers(0, len(pools.first), size=k)
    last = rng.integers(0, len(pools.last), size=k)
    dup = np.flatnonzero(rng.random(k) < pop.duplicate_name)
    donor = rng.integers(0, k, size=len(dup))
    first[dup], last[dup] = first[donor], last[donor]
    suffix_p = np.array([w for _, _, w in STREET_SUFFIXES])
    dob = rng.integers(int(_DOB_LO), int(_DOB_HI) + 1, size=k)
    birth_year = dob.astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64) + 1970
    parts = _email_parts(rng, k, birth_year, len(pools.domains))
    has_nick = np.array([bool(x) for x in pools.first_nicks])[first]
    return _People(
        first=first,
        last=last,
        nick_u=rng.random(k),
        number=_street_numbers(rng, k),
        street=rng.integers(0, len(pools.streets), size=k),
        suffix=rng.choice(len(STREET_SUFFIXES), size=k, p=suffix_p / suffix_p.sum()),
        unit=_units(rng, k, pop.unit),
        loc=rng.choice(len(pools.cities), size=k, p=pools.loc_p),
        phone=_phones(rng, k),
        email=_render_emails(pools, first, last, parts),
        dob=dob,
        uses_nick=(rng.random(k) < pop.nickname) & has_nick,
        suffix_style=rng.choice(3, size=k, p=list(pop.suffix_style)),
        phone_style=rng.choice(len(PHONE_FORMATS), size=k, p=list(pop.phone_style)),
    )


def _first_names(pools: _Pools, first: IntArray, nick_u: npt.NDArray[np.float64], uses_nick: BoolArray) -> list[str]:
    names = [pools.first[i] for i in first.tolist()]
    for j in np.flatnonzero(uses_nick).tolist():
        nicks = pools.first_nicks[int(first[j])]
        names[j] = nicks[int(nick_u[j] * len(nicks))]
    return names


def _blank(values: list[str], mask: BoolArray, fill: str = "") -> None:
    for j in np.flatnonzero(mask).tolist():
        values[j] = fill


def record_ids(prefix: str, numbers: IntArray, width: int) -> list[str]:
    """``prefix`` + each number zero-padded to ``width`` digits (wider numbers keep every digit)."""
    return [f"{prefix}{x:0{width}d}" for x in numbers.tolist()]


def _check_customer_args(n: int, overlap: float, seed: int) -> None:
    """:class:`ValueError` unless ``n >= 1``, ``overlap`` in ``[0, 1]`` and ``seed >= 0`` (integers; no bools)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, (int, float, np.floating, np.integer)):
        raise ValueError(f"overlap must be a number in [0, 1], got {overlap!r}")
    if not 0.0 <= float(overlap) <= 1.0:
        raise ValueError(f"overlap must be in [0, 1], got {overlap!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def _records_a(rng: np.random.Generator, pools: _Pools, people: _People, n: int, pop: PopulationRates, width: int) -> dict[str, list[str]]:
    """A's records: people ``0 .. n-1``, in id order, with A's placeholder and missing values."""
    a_first = _first_names(pools, people.first[:n], people.nick_u[:n], people.uses_nick[:n])
    a_phone = _render_phones(people.phone[:n], people.phone_style[:n])
    _blank(a_phone, rng.random(n) < pop.placeholder_phone, PLACEHOLDER_PHONE)
    a_email = people.email[:n]
    a_dob = _render_dobs(people.dob[:n])
    _blank(a_email, rng.random(n) < pop.a_missing_email)
    _blank(a_phone, rng.random(n) < pop.a_missing_phone)
    _blank(a_dob, rng.random(n) < pop.a_missing_dob)
    return {
        "id": record_ids("A", np.arange(1, n + 1), width),
        "first_name": a_first,
        "last_name": [pools.last[i] for i in people.last[:n].tolist()],
        "address": _render_addresses(
            pools, people.number[:n], people.street[:n], people.suffix[:n], people.unit[:n], people.suffix_style[:n]
        ),
        "city": [pools.cities[i] for i in people.loc[:n].tolist()],
        "zip": [pools.zips[i] for i in people.loc[:n].tolist()],
        "phone": a_phone,
        "email": a_email,
        "dob": a_dob,
    }


@dataclass
class _Edits:
    """B's edits: the generator they draw from, the people, B's person per row, and the edits made so far.

    Every edit draws its mask with :meth:`flag` in a fixed order (the order of
    ``applied``), so the records depend on the seed alone.
    """

    rng: np.random.Generator
    pools: _Pools
    people: _People
    src: IntArray  # B row -> person
    applied: dict[str, BoolArray] = field(default_factory=dict)

    def flag(self, name: str, rate: float, allowed: BoolArray | None = None) -> BoolArray:
        """Each B row with probability ``rate`` (where ``allowed``), recorded as edit ``name``."""
        mask = self.rng.random(len(self.src)) < rate
        if allowed is not None:
            mask = mask & allowed
        self.applied[name] = mask
        return mask


def _b_names(e: _Edits, cr: CorruptionRates) -> tuple[list[str], list[str]]:
    """B's first and last names: nickname switches, typos in either, swapped names."""
    n, rng, pools = len(e.src), e.rng, e.pools
    first, last = e.people.first[e.src], e.people.last[e.src]
    has_nick = np.array([bool(x) for x in pools.first_nicks])[first]
    uses_nick = e.people.uses_nick[e.src] ^ e.flag("nickname", cr.nickname, has_nick)
    b_first = _first_names(pools, first, e.people.nick_u[e.src], uses_nick)
    b_last = [pools.last[i] for i in last.tolist()]
    for col, values in (("first_name_typo", b_first), ("last_name_typo", b_last)):
        typo = e.flag(col, cr.name_typo)
        op, u, v = rng.integers(0, 4, size=n), rng.random(n), rng.random(n)
        for j in np.flatnonzero(typo).tolist():
            values[j] = _typo(values[j], int(op[j]), float(u[j]), float(v[j]))
    for j in np.flatnonzero(e.flag("swap_names", cr.swap_names)).tolist():
        b_first[j], b_last[j] = b_last[j], b_first[j]
    return b_first, b_last


def _b_addresses(e: _Edits, cr: CorruptionRates, pop: PopulationRates) -> tuple[list[str], list[str], list[str]]:
    """B's address lines, cities and zips: a move draws a new street line (always another one) and another locality."""
    rng, pools, people, src = e.rng, e.pools, e.people, e.src
    number, street, suffix = people.number[src].copy(), people.street[src].copy(), people.suffix[src].copy()
    unit, loc = people.unit[src].copy(), people.loc[src].copy()
    mv = e.flag("move", cr.move)
    m = int(mv.sum())
    new_number = _street_numbers(rng, m)
    new_number = np.where(new_number == number[mv], new_number + 1, new_number)
    number[mv] = new_number
    street[mv] = rng.integers(0, len(pools.streets), size=m)
    suffix_p = np.array([w for _, _, w in STREET_SUFFIXES])
    suffix[mv] = rng.choice(len(STREET_SUFFIXES), size=m, p=suffix_p / suffix_p.sum())
    unit[mv] = _units(rng, m, pop.unit)
    loc[mv] = (loc[mv] + rng.integers(1, len(pools.cities), size=m)) % len(pools.cities)
    suffix_style = people.suffix_style[src].copy()
    ab = e.flag("address_abbreviation", cr.address_abbreviation)
    suffix_style[ab] = (suffix_style[ab] + rng.integers(1, 3, size=int(ab.sum()))) % 3
    b_address = _render_addresses(pools, number, street, suffix, unit, suffix_style)
    return b_address, [pools.cities[i] for i in loc.tolist()], [pools.zips[i] for i in loc.tolist()]


def _b_case(e: _Edits, cr: CorruptionRates, columns: Sequence[list[str]]) -> None:
    """Upper (70%) or lower case for every value of ``columns`` in the rows of the ``case`` edit, in place."""
    cs = e.flag("case", cr.case)
    upper = e.rng.random(len(e.src)) < 0.7
    for j in np.flatnonzero(cs).tolist():
        fn = str.upper if upper[j] else str.lower
        for values in columns:
            values[j] = fn(values[j])


def _b_phones(e: _Edits, cr: CorruptionRates, pop: PopulationRates) -> list[str]:
    """B's phones: changed numbers, other formats, placeholders."""
    rng = e.rng
    phone = e.people.phone[e.src].copy()
    pc = e.flag("phone_change", cr.phone_change)
    new_phone = _phones(rng, int(pc.sum()))
    phone[pc] = np.where(new_phone == phone[pc], new_phone + 1 - 2 * (new_phone % 10 == 9), new_phone)
    phone_style = e.people.phone_style[e.src].copy()
    pf = e.flag("phone_format", cr.phone_format)
    phone_style[pf] = (phone_style[pf] + rng.integers(1, len(PHONE_FORMATS), size=int(pf.sum()))) % len(PHONE_FORMATS)
    b_phone = _render_phones(phone, phone_style)
    _blank(b_phone, e.flag("placeholder_phone", pop.placeholder_phone), PLACEHOLDER_PHONE)
    return b_phone


def _b_emails(e: _Edits, cr: CorruptionRates) -> list[str]:
    """B's emails: a change re-draws pattern, number and domain until the address differs."""
    people, src = e.people, e.src
    b_email = [people.email[i] for i in src.tolist()]
    rows = np.flatnonzero(e.flag("email_change", cr.email_change))
    if len(rows):
        dob_year = people.dob[src[rows]].astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64) + 1970
        parts = _email_parts(e.rng, len(rows), dob_year, len(e.pools.domains))
        new_email = _render_emails(e.pools, people.first[src[rows]], people.last[src[rows]], parts)
        for j, new in zip(rows.tolist(), new_email):
            b_email[j] = new if new != b_email[j] else new.replace("@", "1@", 1)
    return b_email


def _b_dobs(e: _Edits, cr: CorruptionRates) -> list[str]:
    """B's dates of birth, with date errors."""
    n = len(e.src)
    dob = e.people.dob[e.src].copy()
    de = e.flag("dob_error", cr.dob_error)
    op, sign = e.rng.integers(0, 3, size=n), e.rng.choice(np.array([-1, 1]), size=n)
    for j in np.flatnonzero(de).tolist():
        dob[j] = _dob_error(int(dob[j]), int(op[j]), int(sign[j]))
    return _render_dobs(dob)


def _concat_people(a: _People, b: _People) -> _People:
    """People ``a`` followed by people ``b`` (every attribute concatenated)."""
    out: dict[str, Any] = {}
    for f in fields(_People):
        x, y = getattr(a, f.name), getattr(b, f.name)
        out[f.name] = x + y if isinstance(x, list) else np.concatenate([x, y])
    return _People(**out)


def _edited_records(
    e: _Edits, cr: CorruptionRates, pop: PopulationRates, prefix: str, numbers: IntArray, width: int
) -> dict[str, list[str]]:
    """The records of the rows of ``e`` (their people seen through a company's data entry: every edit of ``cr``)."""
    first, last = _b_names(e, cr)
    address, city, zip_ = _b_addresses(e, cr, pop)
    _b_case(e, cr, (first, last, address, city))
    phone, email, dob = _b_phones(e, cr, pop), _b_emails(e, cr), _b_dobs(e, cr)
    for col, values, rate in (
        ("missing_email", email, cr.missing_email),
        ("missing_phone", phone, cr.missing_phone),
        ("missing_dob", dob, cr.missing_dob),
    ):
        _blank(values, e.flag(col, rate))
    return {
        "id": record_ids(prefix, numbers, width),
        "first_name": first,
        "last_name": last,
        "address": address,
        "city": city,
        "zip": zip_,
        "phone": phone,
        "email": email,
        "dob": dob,
    }


def source_letter(i: int) -> str:
    """The name of the ``i``-th company (0 -> ``"A"``, 1 -> ``"B"``, …): its ids' prefix and, lower case, its file's name."""
    if not 0 <= i < MAX_SOURCES:
        raise ValueError(f"a source number must be from 0 to {MAX_SOURCES - 1}, got {i!r}")
    return chr(ord("A") + i)


def generate_customers(
    n: int,
    overlap: float,
    seed: int,
    *,
    corruption: CorruptionRates | None = None,
    population: PopulationRates | None = None,
    sources: int = 2,
) -> CustomerData:
    """``n`` customers of each of ``sources`` companies (A, B, C, …), ``round(overlap * n)`` of every
    company after A being edited copies of customers of the companies before it.

    With two sources (the default): B's copies are of distinct A records
    chosen at random. With more, company A and B are made exactly as with two
    (their records are the same for the same arguments), then each further
    company's ``round(overlap * n)`` copies are of distinct people chosen at
    random among everyone the earlier companies hold (A's customers and the
    earlier companies' new people), and its other customers are new people;
    so every pair of companies shares customers, and some people are in
    three or more files. A person is at most once in a company's file.
    ``corruption`` sets the edits of every company after A (default
    :class:`CorruptionRates`), ``population`` how all companies' records look
    (default :class:`PopulationRates`). Deterministic in all arguments (and
    the Faker and nicknames versions). ``truth`` lists every pair of records
    of one person in two companies.
    """
    _check_customer_args(n, overlap, seed)
    if isinstance(sources, bool) or not isinstance(sources, (int, np.integer)) or not 2 <= sources <= MAX_SOURCES:
        raise ValueError(f"sources must be an integer from 2 to {MAX_SOURCES}, got {sources!r}")
    n, seed, sources = int(n), int(seed), int(sources)
    cr = corruption if corruption is not None else CorruptionRates()
    pop = population if population is not None else PopulationRates()

    rng = np.random.default_rng(seed)
    pools = value_pools(seed)
    k = round(float(overlap) * n)
    people = _people(rng, pools, n + (n - k), pop)
    width = max(6, len(str(n)))
    a = _records_a(rng, pools, people, n, pop, width)

    # --- B: k copies of distinct A people and n - k new people, rows shuffled
    copied = rng.choice(n, size=k, replace=False) if k else np.zeros(0, dtype=np.int64)
    src = np.concatenate([copied.astype(np.int64), np.arange(n, n + (n - k), dtype=np.int64)])
    order = rng.permutation(n)
    src = src[order]
    is_copy = order < k
    b_num = rng.permutation(n) + 1

    e = _Edits(rng, pools, people, src)
    b = _edited_records(e, cr, pop, "B", b_num, width)
    copy_rows = np.flatnonzero(is_copy)
    if sources == 2:
        pairs = sorted(zip(src[copy_rows].tolist(), b_num[copy_rows].tolist()))
        truth = [(f"A{ai + 1:0{width}d}", f"B{bi:0{width}d}") for ai, bi in pairs]
        return CustomerData(a=a, b=b, truth=truth, applied=e.applied, b_is_copy=is_copy)

    # --- C, D, ...: k copies of distinct people seen so far, n - k new people, rows shuffled
    holders: list[list[str]] = [[a["id"][i]] for i in range(n)] + [[] for _ in range(n - k)]  # person -> its record ids
    for row, person in enumerate(src.tolist()):
        holders[person].append(b["id"][row])
    more: list[dict[str, list[str]]] = []
    for j in range(2, sources):
        seen = len(people.first)
        people = _concat_people(people, _people(rng, pools, n - k, pop))
        holders += [[] for _ in range(n - k)]
        copied = rng.choice(seen, size=k, replace=False) if k else np.zeros(0, dtype=np.int64)
        src = np.concatenate([copied.astype(np.int64), np.arange(seen, seen + (n - k), dtype=np.int64)])[rng.permutation(n)]
        table = _edited_records(_Edits(rng, pools, people, src), cr, pop, source_letter(j), rng.permutation(n) + 1, width)
        for row, person in enumerate(src.tolist()):
            holders[person].append(table["id"][row])
        more.append(table)
    truth = sorted((x, y) for ids in holders for i, x in enumerate(ids) for y in ids[i + 1 :])
    return CustomerData(a=a, b=b, truth=truth, applied=e.applied, b_is_copy=is_copy, more=more)


# ---------------------------------------------------------------------------
# writing


def write_customers(data: CustomerData, out_dir: str | Path) -> dict[str, Path]:
    """Write ``a.csv``, ``b.csv`` (``c.csv`` … for more companies; columns :data:`COLUMNS`) and ``truth.csv`` into ``out_dir``.

    The truth has the columns ``a_id,b_id`` for two companies and
    ``left_id,right_id`` for more (ids are unique across companies: their
    prefix is the company's letter, so ``er evaluate`` finds each id's source).
    UTF-8, ``\\n`` line ends, a header line; each file is written through
    :mod:`er_framework.io.safe_write` (atomically; an existing file of that
    name is replaced only when it has the header synth writes, and every
    target is checked before any is written). Returns ``{"a": path, "b": path, …, "truth": path}``.
    """
    out = Path(out_dir)
    sides = [source_letter(i).lower() for i in range(len(data.tables))]
    paths = {**{side: out / f"{side}.csv" for side in sides}, "truth": out / "truth.csv"}
    truth_header = ("a_id", "b_id") if len(sides) == 2 else ("left_id", "right_id")
    headers = {**{side: COLUMNS for side in sides}, "truth": truth_header}
    whats = {**{side: f"company {side.upper()}'s records" for side in sides}, "truth": f"truth file ({','.join(truth_header)})"}
    kinds = {k: csv_kind(whats[k], headers[k]) for k in paths}
    # either truth header is one synth wrote: a folder of two companies' files can be regenerated with three
    either = [csv_kind(whats["truth"], h) for h in (("a_id", "b_id"), ("left_id", "right_id"))]
    kinds["truth"] = FileKind(kinds["truth"].description, lambda head: any(k.recognizes(head) for k in either))
    check_targets((paths[k], whats[k], kinds[k]) for k in paths)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(os_problem(exc, str(out), "create the folder")) from None
    for side, table in zip(sides, data.tables):
        write_csv(paths[side], whats[side], kinds[side], COLUMNS, zip(*(table[c] for c in COLUMNS)), lineterminator="\n")
    write_csv(paths["truth"], whats["truth"], kinds["truth"], headers["truth"], data.truth, lineterminator="\n")
    return paths
