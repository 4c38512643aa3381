"""Tests of er_framework.synth.customers: counts, determinism, edit rates and their effects, files."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rapidfuzz.distance import OSA

from er_framework.synth.customers import (
    COLUMNS,
    PHONE_FORMATS,
    PLACEHOLDER_PHONE,
    STREET_SUFFIXES,
    CorruptionRates,
    CustomerData,
    PopulationRates,
    generate_customers,
    value_pools,
    write_customers,
)

N = 20_000
SEED = 11
SIGMAS = 5.0


@pytest.fixture(scope="module")
def data() -> CustomerData:
    return generate_customers(N, 0.5, SEED)


@pytest.fixture(scope="module")
def copies(data: CustomerData) -> dict[str, object]:
    """Aligned A and B rows of the truth pairs, and the edit flags of those B rows."""
    a_row = {x: i for i, x in enumerate(data.a["id"])}
    b_row = {x: i for i, x in enumerate(data.b["id"])}
    ai = np.array([a_row[a] for a, _ in data.truth])
    bi = np.array([b_row[b] for _, b in data.truth])
    return {
        "a": {c: [data.a[c][i] for i in ai.tolist()] for c in COLUMNS},
        "b": {c: [data.b[c][i] for i in bi.tolist()] for c in COLUMNS},
        "flags": {k: v[bi] for k, v in data.applied.items()},
        "m": len(ai),
    }


def _within(count: int, m: int, p: float) -> bool:
    sd = math.sqrt(max(p * (1 - p), 1e-12) / m)
    return abs(count / m - p) <= SIGMAS * sd + 1e-12


def _digits(phone: str) -> str:
    d = "".join(c for c in phone if c.isdigit())
    return d[1:] if phone.startswith("+1") else d


_SUFFIX_FULL = {abbr.lower(): full.lower() for full, abbr, _ in STREET_SUFFIXES}


def _norm_address(s: str) -> str:
    words = s.lower().replace(".", "").split()
    return " ".join(_SUFFIX_FULL.get(w, w) for w in words)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("n", [0, -5, 1.5, True, "10"])
def test_bad_n_raises(n: object) -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        generate_customers(n, 0.5, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("overlap", [-0.01, 1.01, float("nan"), float("inf")])
def test_bad_overlap_raises(overlap: float) -> None:
    with pytest.raises(ValueError, match=r"overlap must be in \[0, 1\]"):
        generate_customers(10, overlap, 0)


def test_bad_seed_and_rates_raise() -> None:
    with pytest.raises(ValueError, match="seed"):
        generate_customers(10, 0.5, -1)
    with pytest.raises(ValueError, match=r"CorruptionRates.move must be in \[0, 1\]"):
        CorruptionRates(move=1.5)
    with pytest.raises(ValueError, match="PopulationRates.phone_style"):
        PopulationRates(phone_style=(0.5, 0.5, 0.5, 0.0))


# --------------------------------------------------------------------------- counts and ids


@pytest.mark.parametrize(("n", "overlap"), [(1, 0.0), (1, 1.0), (3, 0.5), (1000, 0.3), (1000, 1.0), (999, 0.25)])
def test_counts_and_ids(n: int, overlap: float) -> None:
    d = generate_customers(n, overlap, 5)
    for side in (d.a, d.b):
        assert list(side) == list(COLUMNS)
        assert all(len(v) == n for v in side.values())
        assert all(isinstance(x, str) for v in side.values() for x in v)
    assert len(d.truth) == round(overlap * n)
    assert d.a["id"] == [f"A{i:06d}" for i in range(1, n + 1)]
    assert sorted(d.b["id"]) == [f"B{i:06d}" for i in range(1, n + 1)]
    a_ids, b_ids = set(d.a["id"]), set(d.b["id"])
    assert all(a in a_ids and b in b_ids for a, b in d.truth)
    assert len({a for a, _ in d.truth}) == len(d.truth)
    assert len({b for _, b in d.truth}) == len(d.truth)
    assert int(d.b_is_copy.sum()) == len(d.truth)
    assert {d.b["id"][j] for j in np.flatnonzero(d.b_is_copy).tolist()} == {b for _, b in d.truth}


def test_ids_widen_past_six_digits() -> None:
    from er_framework.synth.customers import record_ids

    assert record_ids("A", np.array([1, 1_000_000]), max(6, len(str(1_000_000)))) == ["A0000001", "A1000000"]


def test_b_order_and_ids_reveal_nothing(data: CustomerData) -> None:
    # copies are spread over B's rows, and B's ids are not in row order
    rows = np.flatnonzero(data.b_is_copy)
    assert abs(rows.mean() / N - 0.5) < 0.02
    b_num = np.array([int(x[1:]) for x in data.b["id"]])
    assert abs(np.corrcoef(b_num, np.arange(N))[0, 1]) < 0.05
    copy_num = np.array([int(b[1:]) for _, b in data.truth])
    assert abs(copy_num.mean() / N - 0.5) < 0.02


# --------------------------------------------------------------------------- determinism


def _file_bytes(paths: dict[str, Path]) -> dict[str, bytes]:
    return {k: p.read_bytes() for k, p in paths.items()}


def test_same_seed_gives_identical_files(tmp_path: Path) -> None:
    p1 = write_customers(generate_customers(3000, 0.4, 42), tmp_path / "one")
    p2 = write_customers(generate_customers(3000, 0.4, 42), tmp_path / "two")
    assert _file_bytes(p1) == _file_bytes(p2)
    # and in another interpreter with another string-hash seed
    code = (
        "import sys; from er_framework.synth.customers import generate_customers, write_customers; "
        "write_customers(generate_customers(3000, 0.4, 42), sys.argv[1])"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "three")], check=True, env=env)
    p3 = {k: tmp_path / "three" / p.name for k, p in p1.items()}
    assert _file_bytes(p1) == _file_bytes(p3)


def test_different_seeds_differ() -> None:
    d1, d2 = generate_customers(500, 0.5, 1), generate_customers(500, 0.5, 2)
    for c in COLUMNS[1:]:
        assert d1.a[c] != d2.a[c]
        assert d1.b[c] != d2.b[c]
    assert d1.truth != d2.truth


# --------------------------------------------------------------------------- edit rates and effects


FLAG_RATES = {
    "first_name_typo": "name_typo",
    "last_name_typo": "name_typo",
    "swap_names": "swap_names",
    "phone_change": "phone_change",
    "phone_format": "phone_format",
    "move": "move",
    "address_abbreviation": "address_abbreviation",
    "email_change": "email_change",
    "missing_email": "missing_email",
    "missing_phone": "missing_phone",
    "missing_dob": "missing_dob",
    "case": "case",
    "dob_error": "dob_error",
}


@pytest.mark.parametrize("flag", sorted(FLAG_RATES))
def test_edit_rates_honoured(copies: dict, flag: str) -> None:
    rate = getattr(CorruptionRates(), FLAG_RATES[flag])
    f = copies["flags"][flag]
    assert _within(int(f.sum()), copies["m"], rate), (flag, f.mean(), rate)


def test_nickname_rate_among_eligible(copies: dict) -> None:
    pools = value_pools(SEED)
    eligible_names = {n for n, nicks in zip(pools.first, pools.first_nicks) if nicks}
    eligible_names |= {x for nicks in pools.first_nicks for x in nicks}  # A showed a nickname
    a_first = copies["a"]["first_name"]
    elig = np.array([x in eligible_names for x in a_first])
    assert elig.mean() > 0.5
    f = copies["flags"]["nickname"]
    assert not (f & ~elig).any()
    assert _within(int(f[elig].sum()), int(elig.sum()), CorruptionRates().nickname)


def test_placeholder_phone_rate(data: CustomerData) -> None:
    pop = PopulationRates()
    assert _within(data.a["phone"].count(PLACEHOLDER_PHONE), N, pop.placeholder_phone)
    assert _within(data.b["phone"].count(PLACEHOLDER_PHONE), N, pop.placeholder_phone)
    shown = data.applied["placeholder_phone"] & ~data.applied["missing_phone"]
    assert data.b["phone"].count(PLACEHOLDER_PHONE) == int(shown.sum())


def test_missing_fields_are_empty_strings_and_match_flags(data: CustomerData, copies: dict) -> None:
    for col in ("email", "phone", "dob"):
        b_empty = np.array([x == "" for x in data.b[col]])
        assert np.array_equal(b_empty, data.applied[f"missing_{col}"])
        a_empty = sum(x == "" for x in data.a[col])
        assert _within(a_empty, N, getattr(PopulationRates(), f"a_missing_{col}"))
    for side in (data.a, data.b):
        for col in ("id", "first_name", "last_name", "address", "city", "zip"):
            assert all(side[col]), col
        for col in ("id", "address", "city", "zip", "phone", "email", "dob"):  # a name may be "nan" (Nan, lower-cased)
            assert not any(x in ("nan", "None", "NaN", "null") for x in side[col])


def test_name_edits_have_their_effect(copies: dict) -> None:
    a, b, fl = copies["a"], copies["b"], copies["flags"]
    other = fl["swap_names"] | fl["case"]
    from nicknames import NickNamer

    nn = NickNamer()
    for j in range(copies["m"]):
        if other[j]:
            continue
        af, bf, al, bl = a["first_name"][j], b["first_name"][j], a["last_name"][j], b["last_name"][j]
        assert (al != bl) == bool(fl["last_name_typo"][j])
        if fl["last_name_typo"][j]:
            assert OSA.distance(al.lower(), bl.lower()) == 1, (al, bl)
        if fl["nickname"][j] and not fl["first_name_typo"][j]:
            assert af != bf
            assert bf.lower() in nn.nicknames_of(af) or af.lower() in nn.nicknames_of(bf), (af, bf)
        elif fl["first_name_typo"][j] and not fl["nickname"][j]:
            assert OSA.distance(af.lower(), bf.lower()) == 1, (af, bf)
        elif not fl["nickname"][j]:
            assert af == bf
    swapped = np.flatnonzero(fl["swap_names"] & ~fl["case"] & ~fl["nickname"] & ~fl["first_name_typo"] & ~fl["last_name_typo"])
    assert len(swapped) > 50
    for j in swapped.tolist():
        assert (b["first_name"][j], b["last_name"][j]) == (a["last_name"][j], a["first_name"][j])


def test_case_edit(copies: dict) -> None:
    b, fl = copies["b"], copies["flags"]
    for j in range(copies["m"]):
        fields = [b[c][j] for c in ("first_name", "last_name", "address", "city")]
        cased = all(x.isupper() for x in fields) or all(x.islower() for x in fields)
        assert cased == bool(fl["case"][j]), fields


def test_address_edits_have_their_effect(copies: dict) -> None:
    a, b, fl = copies["a"], copies["b"], copies["flags"]
    for j in range(copies["m"]):
        aa, ba = a["address"][j], b["address"][j]
        moved = _norm_address(aa) != _norm_address(ba)
        assert moved == bool(fl["move"][j]), (aa, ba)
        if not fl["move"][j]:
            assert a["city"][j].lower() == b["city"][j].lower() and a["zip"][j] == b["zip"][j]
            assert (aa.lower() != ba.lower()) == bool(fl["address_abbreviation"][j]), (aa, ba)
    # a move almost always lands in another city or zip
    mv = np.flatnonzero(fl["move"])
    other_place = sum((a["city"][j].lower(), a["zip"][j]) != (b["city"][j].lower(), b["zip"][j]) for j in mv.tolist())
    assert other_place >= 0.98 * len(mv)


def test_phone_edits_have_their_effect(copies: dict) -> None:
    a, b, fl = copies["a"], copies["b"], copies["flags"]
    checked = 0
    for j in range(copies["m"]):
        ap, bp = a["phone"][j], b["phone"][j]
        if ap in ("", PLACEHOLDER_PHONE) or bp in ("", PLACEHOLDER_PHONE):
            continue
        checked += 1
        assert (_digits(ap) != _digits(bp)) == bool(fl["phone_change"][j]), (ap, bp)
        assert len(_digits(bp)) == 10
        if not fl["phone_change"][j]:
            assert (ap != bp) == bool(fl["phone_format"][j]), (ap, bp)
    assert checked > 0.8 * copies["m"]
    assert len({f.format(555, 123, 4567) for f in PHONE_FORMATS}) == len(PHONE_FORMATS)


def test_email_and_dob_edits_have_their_effect(copies: dict) -> None:
    a, b, fl = copies["a"], copies["b"], copies["flags"]
    for j in range(copies["m"]):
        if a["email"][j] and b["email"][j]:
            assert (a["email"][j] != b["email"][j]) == bool(fl["email_change"][j])
            assert b["email"][j].count("@") == 1
        if a["dob"][j] and b["dob"][j]:
            assert (a["dob"][j] != b["dob"][j]) == bool(fl["dob_error"][j])
            assert len(b["dob"][j]) == 10 and b["dob"][j][4] == "-" and b["dob"][j][7] == "-"


def test_unedited_copies_equal_their_a_record(copies: dict) -> None:
    a, b, fl = copies["a"], copies["b"], copies["flags"]
    any_flag = np.zeros(copies["m"], dtype=bool)
    for v in fl.values():
        any_flag |= v
    clean = np.flatnonzero(~any_flag)
    assert len(clean) > 1000
    for j in clean.tolist():
        for c in COLUMNS[1:]:
            if c in ("email", "phone", "dob") and a[c][j] in ("", PLACEHOLDER_PHONE):
                continue  # A's own blank or placeholder; B has the real value
            assert a[c][j] == b[c][j], (c, a[c][j], b[c][j])


def test_fully_identical_copies_bounded_by_rates(copies: dict) -> None:
    a, b, m = copies["a"], copies["b"], copies["m"]
    same = sum(all(a[c][j] == b[c][j] for c in COLUMNS[1:]) for j in range(m))
    r = CorruptionRates()
    # each of these edits always shows; the others may not (a blank phone hides a new format)
    bound = (1 - r.name_typo) ** 2 * (1 - r.move) * (1 - r.address_abbreviation) * (1 - r.case)
    sd = math.sqrt(bound * (1 - bound) / m)
    assert 0 < same / m <= bound + SIGMAS * sd


def test_no_corruption_gives_equal_copies() -> None:
    d = generate_customers(2000, 0.5, 3, corruption=CorruptionRates.none(), population=PopulationRates(placeholder_phone=0.0))
    a_row = {x: i for i, x in enumerate(d.a["id"])}
    b_row = {x: i for i, x in enumerate(d.b["id"])}
    for ai, bi in d.truth:
        i, j = a_row[ai], b_row[bi]
        for c in COLUMNS[1:]:
            if d.a[c][i] != "":
                assert d.a[c][i] == d.b[c][j]


def test_population_repeats(data: CustomerData) -> None:
    from collections import Counter

    last = Counter(data.a["last_name"])
    assert last.most_common(1)[0][1] > 0.01 * N  # Smith
    names = Counter(zip(data.a["first_name"], data.a["last_name"]))
    assert sum(v for v in names.values() if v > 1) > 0.01 * N
    cities = Counter(data.a["city"])
    assert cities.most_common(1)[0][1] > 5 * N / len(cities)
    assert any(" St" in x or " Ave" in x for x in data.a["address"])
    assert any(" Street" in x for x in data.a["address"])


# --------------------------------------------------------------------------- files


def test_write_customers_roundtrip(tmp_path: Path) -> None:
    d = generate_customers(1500, 0.5, 9)
    out = tmp_path / "deep" / "dir"
    paths = write_customers(d, out)
    assert set(paths) == {"a", "b", "truth"}
    assert sorted(p.name for p in out.iterdir()) == ["a.csv", "b.csv", "truth.csv"]  # no temp files left
    for side in ("a", "b"):
        raw = paths[side].read_bytes()
        assert b"\r\n" not in raw
        with open(paths[side], newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        assert tuple(rows[0]) == COLUMNS
        table = getattr(d, side)
        assert rows[1:] == [list(r) for r in zip(*(table[c] for c in COLUMNS))]
    with open(paths["truth"], newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["a_id", "b_id"]
    assert [tuple(r) for r in rows[1:]] == d.truth
    # overwriting in place works and leaves no temp files
    write_customers(d, out)
    assert sorted(p.name for p in out.iterdir()) == ["a.csv", "b.csv", "truth.csv"]


# ---------------------------------------------------------------------------
# three or more companies


def test_more_sources_keep_a_and_b_and_add_companies() -> None:
    two = generate_customers(600, 0.5, 4)
    three = generate_customers(600, 0.5, 4, sources=3)
    four = generate_customers(600, 0.5, 4, sources=4)
    assert three.a == two.a and three.b == two.b and four.more[0] == three.more[0]  # earlier companies unchanged
    assert [t["id"][0][0] for t in four.tables] == ["A", "B", "C", "D"]
    assert all(len(t["id"]) == 600 and len(set(t["id"])) == 600 for t in four.tables)
    assert two.more == [] and generate_customers(600, 0.5, 4, sources=4).truth == four.truth  # deterministic


def test_truth_of_three_sources_is_every_pair_of_one_persons_records() -> None:
    d = generate_customers(1500, 0.5, 6, sources=3)
    by_pair: dict[tuple[str, str], int] = {}
    for left, right in d.truth:
        assert left[0] < right[0]  # the earlier company's id first; never a pair inside one company
        by_pair[(left[0], right[0])] = by_pair.get((left[0], right[0]), 0) + 1
    assert by_pair[("A", "B")] == 750 and by_pair[("A", "C")] > 300 and by_pair[("B", "C")] > 300
    assert d.truth == sorted(set(d.truth))
    # the truth is transitively closed (a person in three files gives three pairs) and a person is at most once per company
    partner: dict[str, set[str]] = {}
    for x, y in d.truth:
        partner.setdefault(x, set()).add(y)
        partner.setdefault(y, set()).add(x)
    for x, ys in partner.items():
        letters = [y[0] for y in ys]
        assert len(letters) == len(set(letters)) and x[0] not in letters
        for y in ys:
            assert ys - {y} <= partner[y] | {x}
    # C's copies are edited like B's: most names are equal to the partner's, some differ
    rows = {r["id"]: r for t in d.tables for r in ({c: t[c][i] for c in COLUMNS} for i in range(len(t["id"])))}
    same_last = sum(rows[x]["last_name"] == rows[y]["last_name"] for x, y in d.truth if y[0] == "C")
    n_c = sum(1 for _, y in d.truth if y[0] == "C")
    assert 0.75 * n_c < same_last < n_c


@pytest.mark.parametrize("sources", [1, 27, True, 2.5])
def test_bad_number_of_sources(sources: object) -> None:
    with pytest.raises(ValueError, match="sources must be an integer from 2 to 26"):
        generate_customers(10, 0.5, 0, sources=sources)  # type: ignore[arg-type]


def test_write_three_companies_and_rewrite_with_two(tmp_path: Path) -> None:
    paths = write_customers(generate_customers(200, 0.5, 3, sources=3), tmp_path)
    assert sorted(paths) == ["a", "b", "c", "truth"]
    with open(paths["truth"], newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["left_id", "right_id"] and len(rows) - 1 == len(generate_customers(200, 0.5, 3, sources=3).truth)
    with open(paths["c"], newline="", encoding="utf-8") as f:
        assert next(csv.reader(f)) == list(COLUMNS)
    # the folder can be regenerated with two companies (truth.csv is one synth wrote, either header)
    again = write_customers(generate_customers(200, 0.5, 3), tmp_path)
    assert open(again["truth"], encoding="utf-8").readline() == "a_id,b_id\n"
