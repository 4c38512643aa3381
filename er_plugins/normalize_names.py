"""The ``name`` and ``nickname`` normalizers (see :mod:`er_plugins.normalizers` for the family)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from er_framework.components import Normalizer, Params
from er_plugins.given_names import GIVEN_NAME_FREQUENCIES
from er_plugins.nickname_names import NICKNAME_TABLE
from er_plugins.normalize_text import PerValue, text_key

__all__ = [
    "NAME_TITLES",
    "Name",
    "NameParams",
    "Nickname",
    "NicknameParams",
    "canonical_first_name",
    "computed_nickname_table",
    "faker_name_frequencies",
    "nickname_table",
]


# ---------------------------------------------------------------------------
# names

#: Tokens dropped by ``name`` (after ``text``, so "Mr." and "MR" are "mr").
NAME_TITLES: frozenset[str] = frozenset(
    {"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "rev", "sir", "jr", "sr", "ii", "iii", "iv", "esq", "phd"}
)


def _make_name(sort_tokens: bool = False, drop_titles: bool = True) -> PerValue:
    def name(s: str) -> str:
        tokens = text_key(s).split()
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
        parts = text_key(s).split()
        if first_only:
            if parts:
                parts[0] = table.get(parts[0], parts[0])
        else:
            parts = [table.get(p, p) for p in parts]
        return " ".join(parts)

    return nickname


# ---------------------------------------------------------------------------
# the components


class NameParams(Params):
    sort_tokens: bool = Field(default=False, strict=True, description="sort the tokens, so 'smith john' == 'john smith'")
    drop_titles: bool = Field(default=True, strict=True, description="drop titles and suffixes (NAME_TITLES)")


class Name(Normalizer[NameParams]):
    name = "name"
    summary = "text, then titles/suffixes (mr mrs ms miss mx dr prof rev sir jr sr ii iii iv esq phd) dropped"
    Params = NameParams

    def per_value(self) -> PerValue:
        p = self.params
        return _make_name(sort_tokens=p.sort_tokens, drop_titles=p.drop_titles)


class NicknameParams(Params):
    tokens: Literal["all", "first"] = Field(default="all", description="map every token or only the first")


class Nickname(Normalizer[NicknameParams]):
    name = "nickname"
    summary = "first names -> canonical name with the nicknames package (Bob -> robert); use after name"
    Params = NicknameParams  # (its table is shipped, er_plugins.nickname_names: nothing to import at run time)

    def per_value(self) -> PerValue:
        return _make_nickname(tokens=self.params.tokens)
