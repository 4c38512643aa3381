"""Generated inventor mentions of patents, hard like a real patent inventor register (seeded, reproducible).

Each record is one *mention*: an inventor named on one patent. The truth says
which mentions are the same inventor. :func:`generate_inventors` makes
``n_mentions`` mentions; :func:`write_inventors` writes ``inventors.csv`` (or
``inventors.parquet``) and ``truth.csv`` (``id,entity``, every mention).

Columns::

    id, patent_id, first_name, middle_name, last_name, city, state, country,
    assignee, coinventors, classes

``coinventors`` (the other inventors' full names on the patent, as that
patent spells them) and ``classes`` (CPC-like subclass codes such as
``H04L``) are lists, written to Parquet as ``list<string>`` columns and to
CSV as ``;``-joined text. Other values are strings, ``""`` when missing
(``middle_name`` often, ``state`` outside the US and Canada and sometimes
inside, ``assignee`` for independent inventors).

What makes it hard
------------------

* **Heavy-tailed productivity.** Inventors work in teams (an assignee, a
  place, a field of 3-5 classes); a team's patent rate and an inventor's share
  in it are Pareto-distributed, so most inventors have one or two mentions and
  a few have 50 or more. A patent names 1-6 inventors of one team (now and
  then one from another team of the field): mentions of one patent are
  different people sharing ``patent_id``, assignee, classes, often the city,
  and each other's names in ``coinventors``.
* **Skewed names.** Inventors in Japan, Korea, China and Taiwan have names of
  those countries, and a large share of the US inventors (:data:`US_ORIGINS`)
  have Chinese, Korean, Vietnamese, Japanese or Indian names; surnames and
  given names are drawn with their frequencies (Wang, Li, Zhang, Kim, Lee,
  Park, Nguyen, Tanaka, Suzuki ...), from Faker's romanized tables where it has
  them, so many *different* inventors share a full name ("Wei Wang" in
  different cities, companies and fields). Western names come from
  :func:`er_framework.synth.persons.name_pools` (Faker's US tables with weights).
* **Careers.** A third of the inventors join one or two more teams
  (:data:`MOVE_RATE`): another employer, often another city, sometimes another
  country, mostly in the same field; their co-inventors change with the team.
* **Mention noise** (:class:`MentionNoise`): first name as an initial
  (``J.``), middle name present, initial or absent, keyboard typos in names
  (:func:`er_framework.synth.persons.typo`), two-part given names joined or
  hyphenated (``Xiao-Ming`` / ``Xiaoming``), assignee spellings
  (``International Business Machines Corporation`` / ``IBM`` / ``IBM Corp.``),
  city typos or missing, state missing. A mention's ``coinventors`` are the
  other mentions' names on the patent, with their noise.

Cities of the US come from :func:`er_framework.synth.customers.value_pools`
(Zipf-weighted); other countries have short lists of real cities.
Determinism: the same arguments and Faker version give the same mentions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.io import write_outputs
from er_framework.synth.customers import value_pools
from er_framework.synth.files import check_targets, table_targets
from er_framework.synth.persons import LIST_SEPARATOR, name_pools, typo

__all__ = [
    "ASSIGNEES",
    "COLUMNS",
    "LIST_COLUMNS",
    "LIST_SEPARATOR",
    "MOVE_RATE",
    "US_ORIGINS",
    "InventorData",
    "MentionNoise",
    "generate_inventors",
    "inventors_table",
    "write_inventors",
]

COLUMNS: tuple[str, ...] = (
    "id",
    "patent_id",
    "first_name",
    "middle_name",
    "last_name",
    "city",
    "state",
    "country",
    "assignee",
    "coinventors",
    "classes",
)
LIST_COLUMNS: tuple[str, ...] = ("coinventors", "classes")
#: share of inventors who join one or two further teams over their career
MOVE_RATE = 0.33
#: name origins of inventors living in the US, with their shares
US_ORIGINS: tuple[tuple[str, float], ...] = (
    ("western", 0.52),
    ("chinese", 0.2),
    ("indian", 0.09),
    ("korean", 0.08),
    ("vietnamese", 0.04),
    ("japanese", 0.04),
    ("taiwanese", 0.03),
)
#: countries of teams with their shares, and the name origin of their inventors ("us": by :data:`US_ORIGINS`)
_COUNTRIES: tuple[tuple[str, float, str], ...] = (
    ("US", 0.5, "us"),
    ("JP", 0.15, "japanese"),
    ("CN", 0.12, "chinese"),
    ("KR", 0.06, "korean"),
    ("TW", 0.05, "taiwanese"),
    ("DE", 0.05, "western"),
    ("GB", 0.03, "western"),
    ("CA", 0.04, "us"),
)


def _words(text: str, sep: str = " ") -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(sep) if x.strip())


def _weights(text: str) -> tuple[tuple[str, float], ...]:
    """``"Kim:21.5 Lee:14.7"`` -> ``(("Kim", 21.5), ("Lee", 14.7))``."""
    return tuple((k, float(v)) for k, v in (x.split(":") for x in _words(text)))


#: cities of the other countries (Canada: city/province)
_FOREIGN_CITIES: dict[str, tuple[str, ...]] = {
    "JP": _words("Tokyo,Kawasaki,Yokohama,Osaka,Kyoto,Nagoya,Toyota,Kobe,Hitachi,Sendai,Tsukuba,Hamamatsu", ","),
    "CN": _words("Beijing,Shanghai,Shenzhen,Hangzhou,Guangzhou,Chengdu,Nanjing,Wuhan,Suzhou,Xi'an", ","),
    "KR": _words("Seoul,Suwon,Yongin,Daejeon,Seongnam,Hwaseong,Incheon", ","),
    "TW": _words("Hsinchu,Taipei,New Taipei,Taichung,Tainan,Taoyuan", ","),
    "DE": _words("Munich,Berlin,Stuttgart,Erlangen,Hamburg,Cologne,Darmstadt", ","),
    "GB": _words("London,Cambridge,Oxford,Bristol,Manchester,Edinburgh", ","),
    "CA": _words("Toronto/ON,Ottawa/ON,Waterloo/ON,Montreal/QC,Vancouver/BC,Calgary/AB", ","),
}
_US_STATES = _words("CA CA CA TX NY WA MA MA IL MN MI NJ PA OH NC GA FL OR AZ CO MD VA WI IN CT UT ID NH DE MO")
#: big assignees, each "canonical name|other spellings|..."; teams pick them by a Zipf weight before the generated companies
ASSIGNEES: tuple[str, ...] = (
    "International Business Machines Corporation|IBM|IBM Corp.|International Business Machines Corp",
    "Samsung Electronics Co., Ltd.|Samsung Electronics|Samsung Electronics Co Ltd|SAMSUNG ELECTRONICS CO., LTD",
    "Canon Kabushiki Kaisha|Canon KK|Canon Inc.|Canon K.K.",
    "Microsoft Technology Licensing, LLC|Microsoft Corporation|Microsoft Corp.|Microsoft Technology Licensing LLC",
    "Intel Corporation|Intel Corp.|Intel Corp|INTEL CORPORATION",
    "Sony Corporation|Sony Corp.|Sony Group Corporation|SONY CORP",
    "LG Electronics Inc.|LG Electronics|LG Electronics, Inc.|LG ELECTRONICS INC",
    "Taiwan Semiconductor Manufacturing Company, Ltd.|TSMC|Taiwan Semiconductor Manufacturing Co., Ltd.|Taiwan Semiconductor Mfg",
    "Apple Inc.|Apple Inc|Apple Computer, Inc.|APPLE INC.",
    "Huawei Technologies Co., Ltd.|Huawei Technologies|Huawei Tech. Co., Ltd.|HUAWEI TECHNOLOGIES CO LTD",
    "Qualcomm Incorporated|Qualcomm Inc.|QUALCOMM Incorporated|Qualcomm Inc",
    "Toyota Jidosha Kabushiki Kaisha|Toyota Motor Corporation|Toyota Jidosha KK|Toyota Motor Corp.",
    "Google LLC|Google Inc.|Google, LLC|GOOGLE LLC",
    "Panasonic Intellectual Property Management Co., Ltd.|Panasonic Corporation|Panasonic Corp.|Panasonic IP Management",
    "General Electric Company|GE|General Electric Co.|General Electric Co",
    "Siemens Aktiengesellschaft|Siemens AG|Siemens Aktiengesellschaft AG|SIEMENS AG",
    "Robert Bosch GmbH|Bosch|Robert Bosch G.m.b.H.|ROBERT BOSCH GMBH",
    "Hitachi, Ltd.|Hitachi Ltd|Hitachi Ltd.|HITACHI, LTD.",
    "Semiconductor Energy Laboratory Co., Ltd.|Semiconductor Energy Lab|SEL Co., Ltd.|Semiconductor Energy Laboratory Co Ltd",
    "Amazon Technologies, Inc.|Amazon Technologies Inc|Amazon.com, Inc.|AMAZON TECHNOLOGIES, INC.",
)
#: legal-form suffixes of the generated companies: "canonical|other spellings|..."
_SUFFIXES = (
    "Inc.|Inc|Incorporated|INC.",
    "LLC|L.L.C.|LLC.|Llc",
    "Corporation|Corp.|Corp|CORPORATION",
    "Ltd.|Ltd|Limited|LTD.",
    "Co., Ltd.|Co Ltd|Company Limited|CO., LTD.",
)
_POPULAR_CLASSES = _words(
    "G06F H04L H04W H04N G06N G06Q G06T H01L A61K A61B C07D C12N G01N B60W H01M G02B H02J F16H B65D C08L "
    "G11C H03M A61P C07K G05B B01D H05K G03F"
)
_KOREAN_LAST = _weights(
    "Kim:21.5 Lee:14.7 Park:8.4 Choi:4.7 Jung:4.3 Kang:2.3 Cho:2.1 Yoon:2.1 Jang:2.0 Lim:1.7 Han:1.5 Oh:1.4 "
    "Seo:1.4 Shin:1.4 Kwon:1.4 Hwang:1.4 Ahn:1.3 Song:1.3 Yoo:1.2 Hong:1.1"
)
_KOREAN_GIVEN = _words(
    "Min-Jun Ji-Hoon Seung-Ho Young-Soo Jae-Won Dong-Hyun Sung-Min Jin-Woo Hyun-Woo Sang-Hoon Jong-Ho Ji-Young "
    "Eun-Ji Soo-Jin Hye-Jin Jae-Hyun Kyung-Soo Jun-Ho Byung-Chul Tae-Hoon Yong-Jin Seung-Woo Min-Soo Dong-Wook "
    "Hyun-Jin Jin-Ho"
)
_VIETNAMESE_LAST = _weights(
    "Nguyen:38 Tran:11 Le:9.5 Pham:7.1 Hoang:5.1 Huynh:5 Phan:4.5 Vu:3.9 Vo:3.5 Dang:2.1 Bui:2 Do:1.4 Ho:1.3 Ngo:1.3 Duong:1"
)
_VIETNAMESE_GIVEN = _words("Minh Anh Tuan Hung Thanh Duc Long Quang Hai Trung Huy Khanh Linh Phuong Nam Son Dung Hoa")
_INDIAN_LAST = _weights(
    "Kumar:10 Sharma:6 Patel:6 Singh:5.5 Gupta:3 Rao:3 Reddy:2.5 Agarwal:1.5 Iyer:1.2 Shah:2 Jain:1.5 Krishnan:1.2 Mehta:1 Nair:1"
)
_INDIAN_GIVEN = _words("Rajesh Amit Sanjay Rahul Vijay Anil Suresh Ravi Ashok Arun Srinivas Deepak Manish Priya Anand Vivek Ramesh Sunil")
#: common Chinese surnames by rank (the others of Faker's zh_CN table follow with a small weight)
_CHINESE_TOP = _words("Wang Li Zhang Liu Chen Yang Huang Zhao Wu Zhou Xu Sun Ma Zhu Hu Guo He Lin Gao Luo")
_CHINESE_GIVEN = _words(
    "Wei Jing Jun Ming Yan Li Lei Tao Yong Jian Hui Hong Xiaoming Jianhua Bin Hao Feng Peng Xin Yu Haibo Xiaodong Zhiwei Yi Kai Bo"
)


@dataclass(frozen=True)
class MentionNoise:
    """Probabilities of each mention-level change (drawn independently for every mention).

    initial (0.08)
        The first name as its initial and a full stop (``J.``).
    first_typo, last_typo (0.03, 0.03)
        One keyboard typo in the first or last name.
    given_form (0.3)
        A two-part given name written the other way (``Xiao-Ming`` / ``Xiaoming`` / ``Min-Jun`` / ``Minjun``).
    middle_initial, middle_dropped (0.3, 0.3)
        A known middle name written as its initial, or left out.
    city_typo, city_missing (0.03, 0.02)
        A typo in the city, or no city.
    state_missing (0.1)
        No state where there is one.
    assignee_variant (0.3)
        Another spelling of the assignee.
    """

    initial: float = 0.08
    first_typo: float = 0.03
    last_typo: float = 0.03
    given_form: float = 0.3
    middle_initial: float = 0.3
    middle_dropped: float = 0.3
    city_typo: float = 0.03
    city_missing: float = 0.02
    state_missing: float = 0.1
    assignee_variant: float = 0.3

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"MentionNoise.{f.name} must be a probability in [0, 1], got {v!r}")


@dataclass
class InventorData:
    """The mentions (column -> values, :data:`COLUMNS`) and the truth ``(id, entity)`` of every mention.

    ``names`` maps each entity to the inventor's true (first, middle, last) name.
    """

    records: dict[str, list[Any]]
    truth: list[tuple[str, int]]
    names: dict[int, tuple[str, str, str]]
    seed: int = 0

    def __len__(self) -> int:
        return len(self.records["id"])


# ---------------------------------------------------------------------------
# tables


def _cdf(w: Sequence[float] | np.ndarray) -> np.ndarray:
    c = np.cumsum(np.asarray(w, dtype=np.float64))
    return c / c[-1]


def _table(pairs: Sequence[tuple[str, float]]) -> tuple[list[str], np.ndarray]:
    return [p[0] for p in pairs], _cdf([p[1] for p in pairs])


def _zipf(names: Sequence[str], s: float = 1.0, offset: float = 2.0) -> tuple[list[str], np.ndarray]:
    return list(names), _cdf(1.0 / (np.arange(1, len(names) + 1) + offset) ** s)


@lru_cache(maxsize=1)
def _origin_tables() -> dict[str, tuple[tuple[list[str], np.ndarray], tuple[list[str], np.ndarray], tuple[list[str], np.ndarray]]]:
    """origin -> (male given, female given, surnames), each (names, cdf)."""
    from faker import Faker

    ja = Faker("ja_JP").provider("faker.providers.person")
    zh = Faker("zh_CN").provider("faker.providers.person")
    tw = Faker("zh_TW").provider("faker.providers.person")
    nm = name_pools()
    western_last = ([*nm.last, *nm.tail], _cdf(np.concatenate([nm.last_p * 0.85, np.full(len(nm.tail), 0.15 / len(nm.tail))])))
    cn_given = _zipf(list(dict.fromkeys([*_CHINESE_GIVEN, *zh.first_romanized_names])), 0.9, 1.0)
    rest = [x for x in dict.fromkeys(zh.last_romanized_names) if x not in _CHINESE_TOP]
    cn_last = ([*_CHINESE_TOP, *rest], _cdf([*(7.0 / (1 + 0.25 * k) for k in range(len(_CHINESE_TOP))), *([0.4] * len(rest))]))

    def tw_names(table: Any) -> tuple[list[str], np.ndarray]:
        return _table([(k.title(), float(v)) for k, v in table.items()])

    ja_last = _zipf(list(dict.fromkeys(ja.last_romanized_names)), 0.8, 1.0)
    return {
        "western": ((nm.male, _cdf(nm.male_p)), (nm.female, _cdf(nm.female_p)), western_last),
        "chinese": (cn_given, cn_given, cn_last),
        "taiwanese": (
            tw_names(tw.first_romanized_names_male),
            tw_names(tw.first_romanized_names_female),
            tw_names(tw.last_romanized_names),
        ),
        "japanese": (_zipf(ja.first_romanized_names_male, 0.7), _zipf(ja.first_romanized_names_female, 0.7), ja_last),
        "korean": (_zipf(_KOREAN_GIVEN[:20], 0.5), _zipf(_KOREAN_GIVEN[11:], 0.5), _table(_KOREAN_LAST)),
        "vietnamese": (_zipf(_VIETNAMESE_GIVEN, 0.8), _zipf(_VIETNAMESE_GIVEN[6:], 0.8), _table(_VIETNAMESE_LAST)),
        "indian": (_zipf(_INDIAN_GIVEN, 0.8), _zipf(_INDIAN_GIVEN[12:], 0.8), _table(_INDIAN_LAST)),
    }


def _class_codes(rng: np.random.Generator, k: int) -> list[str]:
    """``k`` distinct CPC-like subclass codes: the popular ones first, then made-up ones (section, class, letter)."""
    out = list(_POPULAR_CLASSES)
    seen = set(out)
    while len(out) < k:
        code = f"{'ABCDEFGH'[int(rng.integers(0, 8))]}{int(rng.integers(1, 100)):02d}{'ABCDEFGHJKLMNPQRSTUVWXY'[int(rng.integers(0, 23))]}"
        if code not in seen:
            seen.add(code)
            out.append(code)
    return out


# ---------------------------------------------------------------------------
# the population: places, assignees, teams, inventors


@dataclass
class _Inventor:
    first: str
    middle: str
    last: str
    two_part: bool  # a given name of two syllables that is written joined or hyphenated
    weight: float


@dataclass
class _Team:
    assignee: int  # -1: independent inventors
    country: str
    place: int  # index into the places of the country
    field: list[int]  # class indices, the main ones first
    activity: float
    members: list[int]
    homes: list[int]  # each member's place (mostly the team's)


class _World:
    def __init__(self, rng: np.random.Generator, seed: int, n_mentions: int) -> None:
        self.rng = rng
        pools = value_pools(seed)
        self.us_cities = pools.cities
        self.us_cdf = _cdf(pools.loc_p)
        self.us_state = [_US_STATES[int(x)] for x in rng.integers(0, len(_US_STATES), len(self.us_cities))]
        self.country_names = [c[0] for c in _COUNTRIES]
        self.country_cdf = _cdf([c[1] for c in _COUNTRIES])
        self.classes = _class_codes(rng, 400)
        self.class_cdf = _cdf(1.0 / (np.arange(1, len(self.classes) + 1) + 5.0))
        self.names = _origin_tables()
        self.origin_names = [o[0] for o in US_ORIGINS]
        self.origin_cdf = _cdf([o[1] for o in US_ORIGINS])
        self.assignees = self._assignees(seed, max(40, n_mentions // 60))
        self.assignee_cdf = _cdf(1.0 / (np.arange(1, len(self.assignees) + 1) + 3.0))
        self.inventors: list[_Inventor] = []
        self.teams: list[_Team] = []

    def pick(self, cdf: np.ndarray) -> int:
        return min(int(np.searchsorted(cdf, self.rng.random(), side="right")), len(cdf) - 1)

    def _assignees(self, seed: int, k: int) -> list[tuple[str, ...]]:
        from faker import Faker

        fake = Faker("en_US")
        fake.seed_instance(seed + 11)
        out = [_words(a, "|") for a in ASSIGNEES]
        seen = {a[0] for a in out}
        while len(out) < k:
            base = fake.last_name() + " " + fake.word().title() if self.rng.random() < 0.4 else fake.company().split(",")[0]
            suffixes = _words(_SUFFIXES[int(self.rng.integers(0, len(_SUFFIXES)))], "|")
            name = f"{base} {suffixes[0]}"
            if name not in seen:
                seen.add(name)
                out.append((name, *(f"{base} {v}" for v in suffixes[1:]), base))
        return out

    def place(self, country: str) -> int:
        if country == "US":
            return self.pick(self.us_cdf)
        return int(self.rng.integers(0, len(_FOREIGN_CITIES[country])))

    def nearby(self, country: str, place: int) -> int:
        """Another place of the same state (US), or of the country."""
        if country != "US":
            return self.place(country)
        for _ in range(30):
            p = self.pick(self.us_cdf)
            if self.us_state[p] == self.us_state[place]:
                return p
        return place

    def city_state(self, country: str, place: int) -> tuple[str, str]:
        if country == "US":
            return self.us_cities[place], self.us_state[place]
        city, _, state = _FOREIGN_CITIES[country][place].partition("/")
        return city, state

    def field(self) -> list[int]:
        """3-5 classes of a field: a popular main class and neighbours in the class ranking."""
        main = self.pick(self.class_cdf)
        k = int(self.rng.integers(3, 6))
        out = [main]
        while len(out) < k:
            c = (
                int(np.clip(main + self.rng.integers(-12, 13), 0, len(self.classes) - 1))
                if self.rng.random() < 0.7
                else self.pick(self.class_cdf)
            )
            if c not in out:
                out.append(c)
        return out

    def inventor(self, country: str) -> int:
        origin = dict((c[0], c[2]) for c in _COUNTRIES)[country]
        if origin == "us":
            origin = self.origin_names[self.pick(self.origin_cdf)]
        male_t, female_t, last_t = self.names[origin]
        given = male_t if self.rng.random() < 0.85 else female_t
        first = given[0][self.pick(given[1])]
        last = last_t[0][self.pick(last_t[1])]
        middle = ""
        p_middle = 0.45 if origin == "western" else (0.12 if country == "US" else 0.02)
        if self.rng.random() < p_middle:
            mt = self.names["western"][0 if self.rng.random() < 0.5 else 1]
            middle = mt[0][self.pick(mt[1])]
        two = origin in ("chinese", "korean", "taiwanese") and (len(first) >= 6 or "-" in first)
        weight = float(min(self.rng.pareto(1.1) + 0.2, 60.0))
        self.inventors.append(_Inventor(first, middle, last, two, weight))
        return len(self.inventors) - 1

    def team(self, country: str | None = None, field: list[int] | None = None) -> int:
        rng = self.rng
        country = country or self.country_names[self.pick(self.country_cdf)]
        independent = rng.random() < 0.06
        assignee = -1 if independent else self.pick(self.assignee_cdf)
        place = self.place(country)
        size = 1 + int(rng.integers(0, 2)) if independent else 1 + int(min(rng.geometric(0.35), 9))
        members = [self.inventor(country) for _ in range(size)]
        homes = [place if rng.random() < 0.7 else self.nearby(country, place) for _ in members]
        activity = float(min(rng.pareto(1.1) + 0.3, 150.0))
        self.teams.append(_Team(assignee, country, place, field or self.field(), activity, members, homes))
        return len(self.teams) - 1

    def moves(self) -> None:
        """A share :data:`MOVE_RATE` of the inventors join one or two more teams (same field mostly)."""
        rng = self.rng
        n_teams = len(self.teams)
        by_country: dict[str, list[int]] = {}
        for k in range(n_teams):
            by_country.setdefault(self.teams[k].country, []).append(k)
        for t in range(n_teams):
            for inv in list(self.teams[t].members):
                if rng.random() >= MOVE_RATE:
                    continue
                src = self.teams[t]
                for _ in range(1 + int(rng.random() < 0.3)):
                    country = src.country if rng.random() < 0.88 else self.country_names[self.pick(self.country_cdf)]
                    if rng.random() < 0.5:  # an existing team of that country
                        cands = by_country.get(country) or [t]
                        dest = self.teams[cands[int(rng.integers(0, len(cands)))]]
                    else:
                        field = src.field if rng.random() < 0.8 else None
                        dest = self.teams[self.team(country, list(field) if field else None)]
                    if inv in dest.members:
                        continue
                    dest.members.append(inv)
                    dest.homes.append(dest.place if rng.random() < 0.7 else self.nearby(dest.country, dest.place))
                    # keeps the core field: the mover brings their main classes into the new team's field
                    if rng.random() < 0.8:
                        dest.field = list(dict.fromkeys([*dest.field, *src.field[:2]]))[:6]


# ---------------------------------------------------------------------------
# patents and mentions


_SIZES = np.array([1, 2, 3, 4, 5, 6])
_SIZE_P = np.array([0.22, 0.28, 0.22, 0.14, 0.09, 0.05])


def _given_form(name: str) -> str:
    if "-" in name:
        a, b = name.split("-", 1)
        return a + b.lower()
    if len(name) >= 6:  # Xiaoming -> Xiao-Ming: split after the first syllable's vowels
        i = 1
        while i < len(name) - 2 and name[i].lower() not in "aeiou":
            i += 1
        while i < len(name) - 2 and name[i].lower() in "aeiou":
            i += 1
        if name[i].lower() in "ng" and i + 1 < len(name) - 2 and name[i + 1].lower() not in "aeiou":
            i += 1
        return name[:i] + "-" + name[i].upper() + name[i + 1 :]
    return name


def _render_name(rng: np.random.Generator, inv: _Inventor, noise: MentionNoise) -> tuple[str, str, str]:
    first, middle, last = inv.first, inv.middle, inv.last
    if inv.two_part and rng.random() < noise.given_form:
        first = _given_form(first)
    if rng.random() < noise.first_typo:
        first = typo(first, int(rng.integers(0, 4)), float(rng.random()), float(rng.random()))
    if rng.random() < noise.last_typo:
        last = typo(last, int(rng.integers(0, 4)), float(rng.random()), float(rng.random()))
    if rng.random() < noise.initial:
        first = first[0].upper() + "."
    if middle:
        u = rng.random()
        if u < noise.middle_dropped:
            middle = ""
        elif u < noise.middle_dropped + noise.middle_initial:
            middle = middle[0] + "."
    return first, middle, last


def _check_args(n_mentions: int, seed: int) -> None:
    for name, v, lo in (("n_mentions", n_mentions, 1), ("seed", seed, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")


def _patent_inventors(w: _World, team: _Team, by_field: dict[int, list[int]], room: int) -> list[tuple[int, int, str]]:
    """(inventor, home place, country) of the inventors of one patent of ``team``: 1-6 of its members by their
    weights, now and then one of another team of the field; at most ``room``."""
    rng = w.rng
    k = min(int(rng.choice(_SIZES, p=_SIZE_P)), len(team.members), room)
    p = np.array([w.inventors[i].weight for i in team.members])
    chosen = rng.choice(len(team.members), size=k, replace=False, p=p / p.sum()).tolist()
    people = [(team.members[j], team.homes[j], team.country) for j in chosen]
    others = [x for x in by_field.get(team.field[0], []) if w.teams[x] is not team]
    if others and len(people) < room and rng.random() < 0.15:  # a collaborator of another team of the field
        o = w.teams[others[int(rng.integers(0, len(others)))]]
        j = int(rng.integers(0, len(o.members)))
        if o.members[j] not in [x[0] for x in people]:
            people.append((o.members[j], o.homes[j], o.country))
    return people


def _patent_classes(w: _World, team: _Team) -> list[str]:
    """1-4 class codes: mostly the team's field (its main classes most often), sometimes any class."""
    rng = w.rng
    classes: list[str] = []
    for _ in range(int(rng.choice([1, 2, 3, 4], p=[0.35, 0.35, 0.2, 0.1]))):
        cls = team.field[min(int(rng.geometric(0.45)) - 1, len(team.field) - 1)] if rng.random() < 0.88 else w.pick(w.class_cdf)
        if w.classes[cls] not in classes:
            classes.append(w.classes[cls])
    return classes


def _mentions(w: _World, people: list[tuple[int, int, str]], noise: MentionNoise) -> list[tuple[dict[str, Any], int]]:
    """The name and place columns of each inventor's mention on one patent, with the other mentions' names."""
    rng = w.rng
    names = [_render_name(rng, w.inventors[i], noise) for i, _, _ in people]
    full = [" ".join(x for x in nm if x) for nm in names]
    out: list[tuple[dict[str, Any], int]] = []
    for j, ((inv, home, country), (first, middle, last)) in enumerate(zip(people, names)):
        city, state = w.city_state(country, home)
        if rng.random() < noise.city_typo:
            city = typo(city, int(rng.integers(0, 4)), float(rng.random()), float(rng.random()))
        elif rng.random() < noise.city_missing:
            city = ""
        if state and rng.random() < noise.state_missing:
            state = ""
        row = {"first_name": first, "middle_name": middle, "last_name": last, "city": city, "state": state, "country": country}
        out.append(({**row, "coinventors": [f for m, f in enumerate(full) if m != j]}, inv))
    return out


def generate_inventors(n_mentions: int = 20_000, seed: int = 0, *, noise: MentionNoise | None = None) -> InventorData:
    """``n_mentions`` inventor mentions of generated patents, with the truth (which mentions are one inventor).

    Teams (about one per 9 mentions) are made first, a third of their inventors
    join further teams (:data:`MOVE_RATE`), then patents are drawn team by team
    in proportion to the teams' activity, each naming 1-6 of the team's
    inventors by their weights (15% of the patents add an inventor of another
    team of the field), until ``n_mentions`` mentions are made (the last patent
    cut to fit). Rows and ids (``M000001``-style) are in a random order.
    ``noise`` sets the mention noise (default :class:`MentionNoise`).
    Raises :class:`ValueError` for a bad size or seed.
    """
    _check_args(n_mentions, seed)
    n, seed = int(n_mentions), int(seed)
    noise = noise if noise is not None else MentionNoise()
    rng = np.random.default_rng(seed)
    w = _World(rng, seed, n)
    while len(w.teams) < max(1, n // 9):
        w.team()
    w.moves()
    team_cdf = _cdf([t.activity for t in w.teams])
    by_field: dict[int, list[int]] = {}
    for k, t in enumerate(w.teams):
        by_field.setdefault(t.field[0], []).append(k)
    rows: list[dict[str, Any]] = []
    entity: list[int] = []
    patent_numbers = rng.permutation(np.arange(7_000_000, 7_000_000 + 4 * n + 10))[: n + 1]
    n_patent = 0
    while len(rows) < n:
        team = w.teams[w.pick(team_cdf)]
        people = _patent_inventors(w, team, by_field, n - len(rows))
        classes = _patent_classes(w, team)
        if team.assignee < 0:
            assignee = ""
        else:
            spellings = w.assignees[team.assignee]
            assignee = spellings[int(rng.integers(1, len(spellings)))] if rng.random() < noise.assignee_variant else spellings[0]
        patent_id = str(int(patent_numbers[n_patent]))
        n_patent += 1
        for row, inv in _mentions(w, people, noise):
            rows.append({"patent_id": patent_id, **row, "assignee": assignee, "classes": list(classes)})
            entity.append(inv)
    order = rng.permutation(n)
    width = max(6, len(str(n)))
    ids = [f"M{x:0{width}d}" for x in (rng.permutation(n) + 1).tolist()]
    records: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    truth: list[tuple[str, int]] = []
    for new, old in enumerate(order.tolist()):
        records["id"].append(ids[new])
        for c in COLUMNS[1:]:
            records[c].append(rows[old][c])
        truth.append((ids[new], entity[old]))
    truth.sort()
    used = sorted(set(entity))
    names_of = {e: (w.inventors[e].first, w.inventors[e].middle, w.inventors[e].last) for e in used}
    return InventorData(records=records, truth=truth, names=names_of, seed=seed)


# ---------------------------------------------------------------------------
# writing


def inventors_table(data: InventorData, fmt: str = "csv") -> dict[str, Sequence[Any] | np.ndarray]:
    """The columns as written to ``fmt``: CSV joins the list columns by ``;``, Parquet keeps them lists."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"format must be 'csv' or 'parquet', got {fmt!r}")
    out: dict[str, Sequence[Any] | np.ndarray] = {}
    for c in COLUMNS:
        if c in LIST_COLUMNS:
            out[c] = [LIST_SEPARATOR.join(v) for v in data.records[c]] if fmt == "csv" else [list(v) for v in data.records[c]]
        else:
            out[c] = list(data.records[c])
    return out


def write_inventors(data: InventorData, out: str | Path, fmt: str = "csv") -> dict[str, Path]:
    """Write ``inventors.csv`` or ``inventors.parquet`` (:func:`inventors_table`) and ``truth.csv`` (``id,entity``) into ``out``.

    Written by :func:`er_framework.io.write_outputs` (each file complete or not at all), after both targets
    are checked (:func:`er_framework.synth.files.table_targets`: an existing file is replaced only when it
    is one synth wrote). Returns ``{"inventors": path, "truth": path}``.
    """
    table = inventors_table(data, fmt)
    check_targets(table_targets(Path(out), "inventors", "inventor mentions", list(table), fmt))
    paths = write_outputs(out, {"inventors": table}, {}, fmt=fmt)
    truth: dict[str, Sequence[Any] | np.ndarray] = {"id": [t[0] for t in data.truth], "entity": [str(t[1]) for t in data.truth]}
    paths.update(write_outputs(out, {"truth": truth}, {}, fmt="csv"))
    return paths
