"""Generated person records for deduplication, hard like real registers (seeded, reproducible).

:func:`generate_persons` makes ``n`` records of which ``duplicates`` are
copies of other records' people, and every copy carries at least one error
(several with some probability): a dedup benchmark where no duplicate is an
exact copy, built to be about as hard as a real register of people.
:func:`write_persons` writes ``persons.csv`` (or ``persons.parquet``) and
``truth.csv`` (``id,entity``, every record, as ``configs/data/febrl/febrl3_truth.csv``).

Columns::

    id, first_name, last_name, sex, birth_year, birth_month, birth_day,
    address, city, zip, phone, previous_cities

``birth_year``, ``birth_month`` and ``birth_day`` are numbers (``None`` when
missing); ``previous_cities`` is a list of city names (empty for most
people), written to Parquet as a list column and to CSV as ``;``-joined text.
Other values are strings, ``""`` when missing.

What makes it hard
------------------

* Names have real, skewed frequencies: given names are drawn by sex from
  Faker's US tables with their weights (the tables ``er_plugins/given_names.py``
  is made from), surnames 80% from Faker's 1,000 US surnames with their
  weights (Smith 2.2%, Johnson 1.7%, ... Lee, Kim, Nguyen) and 20% uniformly
  from a long tail of rarer (Irish, German, Italian, Indian) surnames, so
  common names collide among different people.
* One in twenty people come in families of 2-5 (:data:`HOUSEHOLD_SIZES`;
  a register holds a sample of a population, so most people's relatives are
  not in it): mostly one surname, and half of the members after the first
  at the first's address (city, zip, often a landline), the others elsewhere,
  half of those in the same city (:data:`AWAY`). Children are born 20-40
  years after their parents, some are twins (same surname and date of birth,
  another first name).
* Birth years cluster (two generations around 1958 and 1986), 1.5% of
  birthdays are recorded as 1 January: many different people share a year
  or a whole date of birth.
* Localities and streets come from :func:`er_framework.synth.customers.value_pools`
  (Zipf-weighted cities); a big city has many zip codes (the largest 40), a small town one.

Errors on copies (:class:`PersonErrorRates`; each drawn independently, and a
copy that drew none gets one chosen in proportion to the rates): typos in
first or last name (insert, delete, substitute a QWERTY neighbour,
transpose), a nickname (Robert -> Bob) or the full name of one (``nicknames``
package), first and last name swapped, birth day and month transposed,
birth year one off, a part missing, a move (new street line, city and zip;
the old city is added to ``previous_cities``), a married surname, a new
phone, another spelling of the street suffix (Street / St). Every copy
differs from the record it copies in at least one column (checked: errors
that changed nothing are drawn again; a copy that can take none of the errors
the rates allow, such as a day/month swap of the 20th, gets a first-name typo).
:func:`persons_table` writes the date parts of a fifth of the CSV rows as
floats (``1999.0``), as pandas writes a column with missing values.

With ``triples > 0``, that many of the copies are second copies of a person
that already has one (three records, three true pairs). The pairs of the
truth number ``duplicates + triples``.

Determinism: the same arguments and the same Faker and ``nicknames``
versions give the same records and the same files. Speed: 100,000 records
in about 10 s at 250 MB peak (one Python dict per record).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.io import write_outputs
from er_framework.synth.customers import PHONE_FORMATS, STREET_SUFFIXES, keyboard_neighbour, value_pools
from er_framework.synth.files import check_targets, table_targets

__all__ = [
    "COLUMNS",
    "DATE_COLUMNS",
    "ERRORS",
    "HOUSEHOLD_SIZES",
    "AWAY",
    "LIST_SEPARATOR",
    "PersonErrorRates",
    "PersonsData",
    "generate_persons",
    "name_pools",
    "persons_table",
    "typo",
    "write_persons",
]

COLUMNS: tuple[str, ...] = (
    "id",
    "first_name",
    "last_name",
    "sex",
    "birth_year",
    "birth_month",
    "birth_day",
    "address",
    "city",
    "zip",
    "phone",
    "previous_cities",
)
DATE_COLUMNS: tuple[str, ...] = ("birth_year", "birth_month", "birth_day")
#: how a list of previous cities is written to CSV
LIST_SEPARATOR = ";"

#: probabilities of households of 1, 2, 3, 4 and 5 people among the generated people: a register holds a
#: sample of a population, so most people's relatives are not in it
HOUSEHOLD_SIZES: tuple[float, ...] = (0.95, 0.035, 0.01, 0.004, 0.001)
#: probability that a family member other than the first lives at another address (half of them in the same city)
AWAY = 0.5

#: error names, in the order they are drawn (the fields of :class:`PersonErrorRates`)
ERRORS: tuple[str, ...] = (
    "first_typo",
    "last_typo",
    "nickname",
    "swap_names",
    "dob_swap",
    "year_off",
    "missing_part",
    "moved",
    "married",
    "phone_changed",
    "address_format",
)

_TAIL_LOCALES = ("en_IE", "de_DE", "it_IT", "en_IN")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
#: parts a "missing_part" error may blank (a name is blanked rarely: it is what people give first)
_MISSING_PARTS = ("birth_day", "birth_month", "birth_year", "address", "city", "zip", "phone", "first_name")
_MISSING_P = (0.16, 0.12, 0.1, 0.16, 0.12, 0.12, 0.17, 0.05)


@dataclass(frozen=True)
class PersonErrorRates:
    """Probabilities of each error on a copy (independent; a copy that draws none gets one).

    first_typo, last_typo (0.2, 0.2)
        One keyboard typo in the name (insert, delete, substitute a QWERTY
        neighbour, transpose two letters); the name always changes.
    nickname (0.12)
        A nickname for the first name (Robert -> Bob) or, for a nickname,
        the full name; only where the ``nicknames`` package knows one.
    swap_names (0.04)
        First and last name exchanged.
    dob_swap (0.06)
        Birth day and month exchanged (only where the day is 1-12 and not the month).
    year_off (0.06)
        Birth year one more or one less.
    missing_part (0.15)
        One known part left empty: day, month or year of birth, address,
        city, zip, phone or (rarely) the first name.
    moved (0.15)
        A new street line, city and zip; the old city is added to ``previous_cities``;
        half of the movers also get a new phone.
    married (0.04)
        A new surname (women of 18 or older at the record's time only).
    phone_changed (0.1)
        A new phone number (or one where there was none).
    address_format (0.15)
        Another spelling of the street suffix (Street / St / St.).
    """

    first_typo: float = 0.2
    last_typo: float = 0.2
    nickname: float = 0.12
    swap_names: float = 0.04
    dob_swap: float = 0.06
    year_off: float = 0.06
    missing_part: float = 0.15
    moved: float = 0.15
    married: float = 0.04
    phone_changed: float = 0.1
    address_format: float = 0.15

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"PersonErrorRates.{f.name} must be a probability in [0, 1], got {v!r}")
        if sum(float(getattr(self, e)) for e in ERRORS) <= 0.0:
            raise ValueError("PersonErrorRates: at least one rate must be above 0 (every copy carries an error)")


@dataclass
class PersonsData:
    """The records (column -> values, :data:`COLUMNS`), the truth and what was done to each copy.

    ``truth`` is ``(id, entity)`` for every record; ``original`` maps each
    copy's id to the id of the record it was copied from; ``errors`` maps each
    copy's id to the errors applied to it (in :data:`ERRORS` order).
    """

    records: dict[str, list[Any]]
    truth: list[tuple[str, int]]
    original: dict[str, str] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    seed: int = 0

    def __len__(self) -> int:
        return len(self.records["id"])


# ---------------------------------------------------------------------------
# name tables


@dataclass(frozen=True)
class _Names:
    male: list[str]
    male_p: np.ndarray
    female: list[str]
    female_p: np.ndarray
    last: list[str]
    last_p: np.ndarray
    tail: list[str]
    nicknames: dict[str, list[str]]  # name -> nicknames (same initial three times) or the full name of a nickname


def _weighted(table: Any) -> tuple[list[str], np.ndarray]:
    names = list(table)
    w = np.array([float(table[k]) for k in names], dtype=np.float64)
    return names, w / w.sum()


@lru_cache(maxsize=2)
def name_pools() -> _Names:
    """Faker's US given names by sex and surnames (with their weights), a tail of rarer surnames, nicknames."""
    from faker import Faker
    from nicknames import NickNamer

    person = Faker("en_US").provider("faker.providers.person")
    male, male_p = _weighted(person.first_names_male)
    female, female_p = _weighted(person.first_names_female)
    last, last_p = _weighted(person.last_names)
    common = set(last)
    tail: set[str] = set()
    for loc in _TAIL_LOCALES:
        for s in Faker(loc).provider("faker.providers.person").last_names:
            if s.isascii() and s.isalpha() and len(s) > 2 and s not in common:
                tail.add(s)
    nn = NickNamer()
    nick: dict[str, list[str]] = {}
    for name in sorted(set(male) | set(female)):
        out: list[str] = []
        for x in sorted(nn.nicknames_of(name)):
            if len(x) >= 2 and x.isalpha() and x != name.lower():
                out += [x.title()] * (3 if x[0] == name[0].lower() else 1)
        if not out:  # a nickname itself: its full names
            out = [x.title() for x in sorted(nn.canonicals_of(name)) if len(x) > len(name) and x.isalpha()]
        if out:
            nick[name] = out
    return _Names(male, male_p, female, female_p, last, last_p, sorted(tail), nick)


# ---------------------------------------------------------------------------
# typos


def typo(s: str, op: int, u: float, v: float) -> str:
    """One keyboard typo in ``s``: insert (0), delete (1), substitute (2) or transpose (3); always changes ``s``.

    ``u`` in [0, 1) picks the position, ``v`` in [0, 1) the QWERTY neighbour. A capital first
    letter stays a capital ("Smith" -> "Mith", "Asmith", "Amith", "Msith").
    """
    n = len(s)
    if n == 0:
        return keyboard_neighbour("a", v)
    if (op == 1 and n <= 1) or (op == 3 and (n < 2 or len(set(s.lower())) < 2)):
        op = 2
    if op == 3:
        i = min(int(u * (n - 1)), n - 2)
        while s[i].lower() == s[i + 1].lower():  # a pair of different letters exists (checked above)
            i = (i + 1) % (n - 1)
        a, b = s[i], s[i + 1]
        return s[:i] + (b.upper() if a.isupper() else b.lower()) + (a.upper() if b.isupper() else a.lower()) + s[i + 2 :]
    if op == 0:
        i = min(int(u * (n + 1)), n)
        c = keyboard_neighbour(s[i - 1] if i > 0 else s[0], v)
        if i == 0 and s[0].isupper():
            return c.upper() + s[0].lower() + s[1:]
        return s[:i] + c + s[i:]
    if op == 1:
        i = min(int(u * n), n - 1)
        t = s[:i] + s[i + 1 :]
        return t[0].upper() + t[1:] if i == 0 and s[0].isupper() else t
    i = min(int(u * n), n - 1)
    c = keyboard_neighbour(s[i], v)
    return s[:i] + (c.upper() if s[i].isupper() else c) + s[i + 1 :]


# ---------------------------------------------------------------------------
# people


@dataclass
class _Person:
    first: str
    last: str
    sex: str
    year: int
    month: int
    day: int
    number: int
    street: int
    suffix: int
    style: int
    loc: int
    zip_k: int  # which of the locality's zip codes
    phone: int  # 0 = none
    phone_style: int
    previous: list[int]


def _check_args(n: int, duplicates: int, triples: int, seed: int) -> None:
    def whole(name: str, v: object, lo: int) -> None:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")

    whole("n", n, 1)
    whole("duplicates", duplicates, 0)
    whole("triples", triples, 0)
    whole("seed", seed, 0)
    if duplicates >= n:
        raise ValueError(f"duplicates ({duplicates:,}) must be fewer than the records (n = {n:,}): each copies another record")
    if 2 * triples > duplicates:
        raise ValueError(f"triples ({triples:,}) must be at most half of duplicates ({duplicates:,}): a triple is two of the copies")


def _birth_years(rng: np.random.Generator, k: int) -> np.ndarray:
    gen = rng.random(k) < 0.55
    y = np.where(gen, rng.normal(1958.0, 8.0, k), rng.normal(1986.0, 7.0, k))
    return np.clip(np.rint(y), 1925, 2006).astype(np.int64)


def _birthday(rng: np.random.Generator, year: int) -> tuple[int, int]:
    if rng.random() < 0.015:
        return 1, 1
    month = int(rng.integers(1, 13))
    days = _DAYS[month - 1] + (1 if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 0)
    return month, int(rng.integers(1, days + 1))


def _phone(rng: np.random.Generator) -> int:
    return int(rng.integers(200, 1000)) * 10_000_000 + int(rng.integers(200, 1000)) * 10_000 + int(rng.integers(0, 10_000))


def _cdf(p: np.ndarray) -> np.ndarray:
    c = np.cumsum(np.asarray(p, dtype=np.float64))
    return c / c[-1]


class _Draw:
    """Value draws shared by people and copies (weighted draws by their cumulative weights: one uniform each)."""

    def __init__(self, rng: np.random.Generator, seed: int) -> None:
        self.rng = rng
        self.names = name_pools()
        self.pools = value_pools(seed)
        nm = self.names
        self.cdf_male, self.cdf_female, self.cdf_last = _cdf(nm.male_p), _cdf(nm.female_p), _cdf(nm.last_p)
        self.cdf_suffix = _cdf(np.array([w for _, _, w in STREET_SUFFIXES]))
        self.cdf_style = _cdf(np.array([0.6, 0.3, 0.1]))
        self.cdf_loc = _cdf(self.pools.loc_p)
        self.cdf_previous = _cdf(np.array([0.55, 0.28, 0.12, 0.05]))

    def pick(self, cdf: np.ndarray) -> int:
        return min(int(np.searchsorted(cdf, self.rng.random(), side="right")), len(cdf) - 1)

    def first(self, sex: str) -> str:
        nm = self.names
        return nm.male[self.pick(self.cdf_male)] if sex == "M" else nm.female[self.pick(self.cdf_female)]

    def last(self) -> str:
        nm = self.names
        if self.rng.random() < 0.2:
            return nm.tail[int(self.rng.integers(0, len(nm.tail)))]
        return nm.last[self.pick(self.cdf_last)]

    def street(self) -> tuple[int, int, int, int]:
        """(number, street, suffix, style)"""
        number = int(10.0 ** self.rng.uniform(0.7, 4.0))
        street = int(self.rng.integers(0, len(self.pools.streets)))
        return number, street, self.pick(self.cdf_suffix), self.pick(self.cdf_style)

    def loc(self) -> int:
        return self.pick(self.cdf_loc)

    def zip_k(self, loc: int) -> int:
        """One of the zip codes of locality ``loc``: big cities have many (the largest 40), small towns one."""
        p = self.pools.loc_p
        return int(self.rng.integers(0, max(1, round(40 * p[loc] / p[0]))))

    def previous(self, loc: int) -> list[int]:
        k = self.pick(self.cdf_previous)
        out: list[int] = []
        while len(out) < k:
            c = self.loc()
            if c != loc and c not in out:
                out.append(c)
        return out


def _household(d: _Draw, size: int, out: list[_Person]) -> None:
    """``size`` people of one family appended to ``out``: a first person, often a partner, children."""
    rng = d.rng
    number, street, suffix, style = d.street()
    loc = d.loc()
    zip_k = d.zip_k(loc)
    landline = _phone(rng) if rng.random() < 0.5 else 0
    head_sex = "M" if rng.random() < 0.5 else "F"
    surname = d.last()
    head_year = int(_birth_years(rng, 1)[0])
    while size >= 3 and head_year > 1980:  # parents of children born by 2008
        head_year = int(_birth_years(rng, 1)[0])
    last_child: tuple[int, int, int] | None = None
    start = len(out)
    for k in range(size):
        if k == 0:
            sex, year, last = head_sex, head_year, surname
            month, day = _birthday(rng, year)
        elif k == 1 and rng.random() < 0.8:  # a partner
            sex = ("F" if head_sex == "M" else "M") if rng.random() < 0.95 else head_sex
            year = int(np.clip(round(head_year + rng.normal(0, 5)), 1925, 2006))
            last = surname if rng.random() < 0.75 else d.last()
            month, day = _birthday(rng, year)
        else:  # a child; 4% of the children after the first are twins of the one before
            sex = "M" if rng.random() < 0.5 else "F"
            last = surname if rng.random() < 0.9 else d.last()
            if last_child is not None and rng.random() < 0.04:
                year, month, day = last_child
            elif head_year > 1988:  # too young for a child: a sibling
                year = int(np.clip(round(head_year + rng.normal(0, 4)), 1925, 2008))
                month, day = _birthday(rng, year)
            else:
                year = head_year + int(rng.integers(20, min(41, 2009 - head_year)))
                month, day = _birthday(rng, year)
            last_child = (year, month, day)
        own = _phone(rng) if rng.random() < 0.75 else 0
        home = (number, street, suffix, style, loc, zip_k)
        if k > 0 and rng.random() < AWAY:  # a relative living elsewhere, often in the same city
            loc_k = loc if rng.random() < 0.5 else d.loc()
            home = (*d.street(), loc_k, d.zip_k(loc_k))
            phone = own
        else:
            phone = landline if landline and rng.random() < 0.5 else own
        if rng.random() < 0.15:
            phone = 0
        first = d.first(sex)
        while any(p.first == first and p.last == last for p in out[start:]):
            first = d.first(sex)  # no two people of one family with one name
        out.append(_Person(first, last, sex, year, month, day, *home, phone, int(rng.integers(0, 4)), d.previous(home[4])))


def _people(d: _Draw, k: int) -> list[_Person]:
    out: list[_Person] = []
    sizes = np.array([1, 2, 3, 4, 5])
    p = np.array(HOUSEHOLD_SIZES)
    while len(out) < k:
        _household(d, min(int(d.rng.choice(sizes, p=p)), k - len(out)), out)
    return out


# ---------------------------------------------------------------------------
# copies with errors


def _name_typo(d: _Draw, s: str) -> str:
    rng = d.rng
    return typo(s, int(rng.integers(0, 4)), float(rng.random()), float(rng.random()))


class _Copy:
    """A copy being given errors: the person's values ``c``, the parts left blank, when it was recorded.

    Each error is a method named after it; it edits ``c`` (or ``blank``) and returns False when it
    cannot apply to this person (no nickname known, a day that is no month, ...).
    """

    def __init__(self, d: _Draw, c: _Person, year_now: int) -> None:
        self.d, self.c, self.year_now = d, c, year_now
        self.blank: set[str] = set()

    def apply(self, error: str) -> bool:
        fn = getattr(self, error)
        return bool(fn())

    def first_typo(self) -> bool:
        self.c.first = _name_typo(self.d, self.c.first)
        return True

    def last_typo(self) -> bool:
        self.c.last = _name_typo(self.d, self.c.last)
        return True

    def nickname(self) -> bool:
        options = self.d.names.nicknames.get(self.c.first)
        if not options:
            return False
        self.c.first = options[int(self.d.rng.integers(0, len(options)))]
        return True

    def swap_names(self) -> bool:
        c = self.c
        if c.first == c.last:
            return False
        c.first, c.last = c.last, c.first
        return True

    def dob_swap(self) -> bool:
        c = self.c
        if c.day > 12 or c.day == c.month:
            return False
        c.month, c.day = c.day, c.month
        return True

    def year_off(self) -> bool:
        c = self.c
        c.year += 1 if self.d.rng.random() < 0.5 else -1
        if c.month == 2 and c.day == 29:
            c.day = 28
        return True

    def missing_part(self) -> bool:
        order = self.d.rng.choice(len(_MISSING_PARTS), size=len(_MISSING_PARTS), replace=False, p=_MISSING_P)
        for j in order.tolist():
            part = _MISSING_PARTS[j]
            if (part == "phone" and not self.c.phone) or part in self.blank:
                continue
            self.blank.add(part)
            return True
        return False

    def moved(self) -> bool:
        d, c = self.d, self.c
        old = c.loc
        c.number, c.street, c.suffix, c.style = d.street()
        while c.loc == old:
            c.loc = d.loc()
        c.zip_k = d.zip_k(c.loc)
        c.previous = [*[x for x in c.previous if x != c.loc], old][-4:]
        if d.rng.random() < 0.5:
            c.phone = _phone(d.rng)
        return True

    def married(self) -> bool:
        c = self.c
        if c.sex != "F" or self.year_now - c.year < 18:
            return False
        surname = c.last
        while surname == c.last:
            surname = self.d.last()
        c.last = surname
        return True

    def phone_changed(self) -> bool:
        number = _phone(self.d.rng)
        self.c.phone = number if number != self.c.phone else number + 1
        return True

    def address_format(self) -> bool:
        self.c.style = (self.c.style + int(self.d.rng.integers(1, 3))) % 3
        return True


def _render(d: _Draw, p: _Person, blank: set[str]) -> dict[str, Any]:
    pools = d.pools
    full, abbr, _ = STREET_SUFFIXES[p.suffix]
    suffix = (full, abbr, abbr + ".")[p.style]
    row: dict[str, Any] = {
        "first_name": p.first,
        "last_name": p.last,
        "sex": p.sex,
        "birth_year": p.year,
        "birth_month": p.month,
        "birth_day": p.day,
        "address": f"{p.number} {pools.streets[p.street]} {suffix}",
        "city": pools.cities[p.loc],
        "zip": f"{(int(pools.zips[p.loc]) + p.zip_k) % 100_000:05d}",
        "phone": PHONE_FORMATS[p.phone_style].format(p.phone // 10_000_000, p.phone // 10_000 % 1000, p.phone % 10_000) if p.phone else "",
        "previous_cities": [pools.cities[x] for x in p.previous],
    }
    for part in blank:
        row[part] = None if part in DATE_COLUMNS else ""
    return row


def _copy(d: _Draw, p: _Person, rates: PersonErrorRates, base: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of person ``p`` with errors; differs from ``base`` (the rendered record it copies) in some column."""
    rng = d.rng
    probs = np.array([float(getattr(rates, e)) for e in ERRORS])
    year_now = 2024 - int(rng.integers(0, 15))  # when the copy was recorded
    for _attempt in range(50):
        c = _Person(**{f.name: getattr(p, f.name) for f in fields(_Person)})
        c.previous = list(p.previous)
        cp = _Copy(d, c, year_now)
        drawn = [e for e, x in zip(ERRORS, rng.random(len(ERRORS)) < probs) if x]
        applied = [e for e in drawn if cp.apply(e)]
        for _ in range(20):  # none drawn (or none applicable): one in proportion to the rates
            if applied:
                break
            e = ERRORS[int(rng.choice(len(ERRORS), p=probs / probs.sum()))]
            if cp.apply(e):
                applied.append(e)
        if not applied:  # the rates allow only errors this person cannot have (a day/month swap of the 20th)
            c.first = _name_typo(d, c.first)
            applied.append("first_typo")
        row = _render(d, c, cp.blank)
        if any(row[k] != base[k] for k in row):
            return row, [e for e in ERRORS if e in applied]
    c = _Person(**{f.name: getattr(p, f.name) for f in fields(_Person)})  # practically never: a typo always changes
    c.first = _name_typo(d, c.first)
    return _render(d, c, set()), ["first_typo"]


def generate_persons(
    n: int = 10_000, duplicates: int = 1_000, seed: int = 0, *, triples: int = 0, rates: PersonErrorRates | None = None
) -> PersonsData:
    """``n`` person records, ``duplicates`` of them erroneous copies of other records' people.

    ``n - duplicates`` people each have one record; ``duplicates - triples``
    of them (chosen at random) have a copy, and ``triples`` of those a second
    copy. Rows and ids (``P000001``-style) are in an independent random
    order. ``rates`` sets the errors (default :class:`PersonErrorRates`).
    Raises :class:`ValueError` for sizes that do not fit.
    """
    _check_args(n, duplicates, triples, seed)
    n, duplicates, triples, seed = int(n), int(duplicates), int(triples), int(seed)
    rates = rates if rates is not None else PersonErrorRates()
    rng = np.random.default_rng(seed)
    d = _Draw(rng, seed)
    k = n - duplicates
    people = _people(d, k)
    rows: list[dict[str, Any]] = []
    entity: list[int] = []
    source: list[int] = []  # row the copy was made from (-1 for a person's own record)
    errors: list[list[str]] = []
    for i, p in enumerate(people):
        rows.append(_render(d, p, set()))
        entity.append(i)
        source.append(-1)
        errors.append([])
    copied = rng.choice(k, size=duplicates - triples, replace=False) if duplicates else np.zeros(0, dtype=np.int64)
    twice = set(rng.choice(copied, size=triples, replace=False).tolist()) if triples else set()
    for i in copied.tolist():
        for _ in range(2 if i in twice else 1):
            row, applied = _copy(d, people[i], rates, rows[i])
            rows.append(row)
            entity.append(i)
            source.append(i)
            errors.append(applied)
    order = rng.permutation(n)
    width = max(6, len(str(n)))
    number = rng.permutation(n) + 1
    ids = [f"P{x:0{width}d}" for x in number.tolist()]
    row_id = [""] * n
    for new, old in enumerate(order.tolist()):
        row_id[old] = ids[new]
    records: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for old in order.tolist():
        records["id"].append(row_id[old])
        for c in COLUMNS[1:]:
            records[c].append(rows[old][c])
    truth = sorted((row_id[j], entity[j]) for j in range(n))
    original = {row_id[j]: row_id[source[j]] for j in range(n) if source[j] >= 0}
    errs = {row_id[j]: errors[j] for j in range(n) if source[j] >= 0}
    return PersonsData(records=records, truth=truth, original=original, errors=errs, seed=seed)


# ---------------------------------------------------------------------------
# writing


def _check_share(float_share: float) -> None:
    if isinstance(float_share, bool) or not isinstance(float_share, (int, float)) or not 0.0 <= float(float_share) <= 1.0:
        raise ValueError(f"float_share must be a number in [0, 1], got {float_share!r}")


def persons_table(data: PersonsData, fmt: str = "csv", float_share: float | None = None) -> dict[str, Sequence[Any] | np.ndarray]:
    """The columns as written to ``fmt`` (``csv`` or ``parquet``).

    CSV: every value as text; the date parts of a share ``float_share`` of the
    rows (default 0.2; rows chosen by the data's seed) as pandas writes a float
    column with missing values (``1999.0``, ``3.0``); ``previous_cities``
    joined by ``;``. Parquet: the date parts as ``int64`` columns with nulls,
    or, when ``float_share`` > 0 (default 0: a Parquet column has one type),
    ``float64`` with NaN for every row; ``previous_cities`` a list column.
    """
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"format must be 'csv' or 'parquet', got {fmt!r}")
    share = (0.2 if fmt == "csv" else 0.0) if float_share is None else float_share
    _check_share(share)
    rec = data.records
    out: dict[str, Sequence[Any] | np.ndarray] = {}
    if fmt == "csv":
        is_float = np.random.default_rng([data.seed, 7]).random(len(data)) < share
        for c in COLUMNS:
            if c in DATE_COLUMNS:
                out[c] = ["" if v is None else (f"{v}.0" if f else str(v)) for v, f in zip(rec[c], is_float.tolist())]
            elif c == "previous_cities":
                out[c] = [LIST_SEPARATOR.join(v) for v in rec[c]]
            else:
                out[c] = list(rec[c])
        return out
    for c in COLUMNS:
        if c in DATE_COLUMNS and share > 0:
            out[c] = np.array([np.nan if v is None else float(v) for v in rec[c]], dtype=np.float64)
        else:  # int and None (an int64 column with nulls), lists of str (a list column), str
            out[c] = [list(v) for v in rec[c]] if c == "previous_cities" else list(rec[c])
    return out


def write_persons(data: PersonsData, out_dir: str | Path, fmt: str = "csv", float_share: float | None = None) -> dict[str, Path]:
    """Write ``persons.csv`` or ``persons.parquet`` (:func:`persons_table`) and ``truth.csv`` (``id,entity``) into ``out_dir``.

    Written by :func:`er_framework.io.write_outputs` (each file complete or not at all), after both targets
    are checked (:func:`er_framework.synth.files.table_targets`: an existing file is replaced only when it
    is one synth wrote). Returns ``{"persons": path, "truth": path}``.
    """
    table = persons_table(data, fmt, float_share)
    check_targets(table_targets(Path(out_dir), "persons", "person records", list(table), fmt))
    paths = write_outputs(out_dir, {"persons": table}, {}, fmt=fmt)
    paths.update(
        write_outputs(out_dir, {"truth": {"id": [t[0] for t in data.truth], "entity": [str(t[1]) for t in data.truth]}}, {}, fmt="csv")
    )
    return paths
