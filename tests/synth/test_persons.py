"""Tests of er_framework.synth.persons: sizes, errors on every copy, determinism, the files (CSV floats, Parquet lists)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from er_framework.synth.persons import (
    COLUMNS,
    DATE_COLUMNS,
    ERRORS,
    LIST_SEPARATOR,
    PersonErrorRates,
    PersonsData,
    generate_persons,
    name_pools,
    persons_table,
    typo,
    write_persons,
)

N, D, SEED = 3000, 300, 5


@pytest.fixture(scope="module")
def data() -> PersonsData:
    return generate_persons(N, D, SEED, triples=20)


def _row(data: PersonsData, rid: str) -> dict[str, object]:
    i = data.records["id"].index(rid)
    return {c: data.records[c][i] for c in COLUMNS}


def _rows(data: PersonsData) -> dict[str, dict[str, object]]:
    return {rid: {c: data.records[c][i] for c in COLUMNS} for i, rid in enumerate(data.records["id"])}


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_sizes_ids_and_truth(data: PersonsData) -> None:
    rec = data.records
    assert list(rec) == list(COLUMNS)
    assert all(len(v) == N for v in rec.values()) and len(data) == N
    assert len(set(rec["id"])) == N and all(x.startswith("P") and len(x) == 7 for x in rec["id"])
    assert sorted(rec["id"]) != rec["id"]  # rows in a random order
    assert len(data.original) == D == len(data.errors)
    entity = dict(data.truth)
    assert set(entity) == set(rec["id"])
    sizes = Counter(Counter(entity.values()).values())
    # D - triples people with copies, triples of them with two; the others alone
    assert sizes == {1: N - D - (D - 20), 2: D - 40, 3: 20}
    assert sum(k * (k - 1) // 2 * v for k, v in sizes.items()) == D + 20  # true pairs
    for dup, orig in data.original.items():
        assert entity[dup] == entity[orig] and orig not in data.original


def test_every_copy_differs_from_its_original_in_some_column(data: PersonsData) -> None:
    rows = _rows(data)
    for dup, orig in data.original.items():
        a, b = rows[dup], rows[orig]
        assert any(a[c] != b[c] for c in COLUMNS if c != "id"), (dup, orig)
        assert data.errors[dup], dup
        assert all(e in ERRORS for e in data.errors[dup])


def test_errors_do_what_they_say(data: PersonsData) -> None:
    rows = _rows(data)
    seen: Counter[str] = Counter()
    for dup, errs in data.errors.items():
        a, b = rows[dup], rows[data.original[dup]]
        seen.update(errs)
        if errs == ["swap_names"]:
            assert (a["first_name"], a["last_name"]) == (b["last_name"], b["first_name"])
        if errs == ["dob_swap"]:
            assert (a["birth_month"], a["birth_day"]) == (b["birth_day"], b["birth_month"])
        if errs == ["year_off"]:
            assert isinstance(a["birth_year"], int) and isinstance(b["birth_year"], int)
            assert abs(a["birth_year"] - b["birth_year"]) == 1
        if errs == ["moved"]:
            assert a["address"] != b["address"] and a["city"] != b["city"]
            assert a["previous_cities"][-1] == b["city"]  # type: ignore[index]
        if errs == ["married"]:
            assert a["last_name"] != b["last_name"] and a["sex"] == "F"
        if errs == ["missing_part"]:
            blank = [c for c in COLUMNS if a[c] in ("", None) and b[c] not in ("", None)]
            assert len(blank) == 1
        if errs == ["first_typo"]:
            assert a["first_name"] != b["first_name"] and abs(len(str(a["first_name"])) - len(str(b["first_name"]))) <= 1
        if errs == ["nickname"]:
            assert a["first_name"] in name_pools().nicknames[str(b["first_name"])]
    # several errors on some copies; every kind of error drawn
    assert set(seen) == set(ERRORS)
    assert sum(len(e) >= 2 for e in data.errors.values()) > 0.2 * D


def test_population_is_skewed(data: PersonsData) -> None:
    rec = data.records
    originals = [i for i, x in enumerate(rec["id"]) if x not in data.original]
    last = Counter(rec["last_name"][i] for i in originals)
    assert last.most_common(1)[0][0] == "Smith" and last["Smith"] > 0.01 * len(originals)
    # common full names and whole dates of birth are shared by different people
    name = Counter((rec["first_name"][i], rec["last_name"][i]) for i in originals)
    dob = Counter((rec["birth_year"][i], rec["birth_month"][i], rec["birth_day"][i]) for i in originals)
    assert sum(v > 1 for v in name.values()) > 10 and sum(v > 1 for v in dob.values()) > 100
    years = Counter(rec["birth_year"][i] for i in originals)
    top10 = sum(v for _, v in years.most_common(10))
    assert top10 > 1.5 * 10 * len(originals) / len(years)  # clustered: the ten busiest years hold far more than a uniform share
    # households: people sharing an address and a surname
    home = Counter((rec["address"][i], rec["zip"][i], rec["last_name"][i]) for i in originals)
    assert sum(v > 1 for v in home.values()) > 0.01 * len(originals)
    # relatives elsewhere in the same city: one surname and city, other addresses
    town: dict[tuple[object, object], set[object]] = {}
    for i in originals:
        town.setdefault((rec["last_name"][i], rec["city"][i]), set()).add(rec["address"][i])
    assert sum(len(v) > 1 for v in town.values()) > 0.002 * len(originals)
    # big cities have several zip codes
    zips: dict[object, set[object]] = {}
    for i in originals:
        zips.setdefault(rec["city"][i], set()).add(rec["zip"][i])
    assert max(len(v) for v in zips.values()) >= 10
    assert set(rec["sex"]) == {"M", "F"}
    assert any(p for p in rec["previous_cities"]) and any(not p for p in rec["previous_cities"])
    assert sum(p == "" for p in rec["phone"]) > 0.05 * N


def test_deterministic_for_a_seed(data: PersonsData, tmp_path: Path) -> None:
    again = generate_persons(N, D, SEED, triples=20)
    assert again.records == data.records and again.truth == data.truth and again.errors == data.errors
    other = generate_persons(N, D, SEED + 1, triples=20)
    assert other.records["first_name"] != data.records["first_name"]
    write_persons(data, tmp_path / "a")
    write_persons(again, tmp_path / "b")
    for name in ("persons.csv", "truth.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_csv_files_float_dates_and_lists(data: PersonsData, tmp_path: Path) -> None:
    paths = write_persons(data, tmp_path)
    assert paths == {"persons": tmp_path / "persons.csv", "truth": tmp_path / "truth.csv"}
    rows = _read_csv(paths["persons"])
    assert list(rows[0]) == list(COLUMNS) and len(rows) == N
    floats = [r for r in rows if r["birth_year"].endswith(".0")]
    assert 0.15 * N < len(floats) < 0.25 * N  # the default share 0.2
    for r in floats:  # a float row writes every known date part as a float
        assert all(r[c] == "" or (r[c].endswith(".0") and r[c][:-2].isdigit()) for c in DATE_COLUMNS)
    by_id = {r["id"]: r for r in rows}
    for i, rid in enumerate(data.records["id"]):
        r = by_id[rid]
        for c in DATE_COLUMNS:
            v = data.records[c][i]
            assert r[c] == "" if v is None else float(r[c]) == v
        assert r["previous_cities"] == LIST_SEPARATOR.join(data.records["previous_cities"][i])
    truth = _read_csv(paths["truth"])
    assert [(t["id"], int(t["entity"])) for t in truth] == data.truth


def test_float_share_option(data: PersonsData, tmp_path: Path) -> None:
    none = persons_table(data, "csv", 0.0)
    assert not any(str(v).endswith(".0") for c in DATE_COLUMNS for v in none[c])
    every = persons_table(data, "csv", 1.0)
    assert all(v == "" or str(v).endswith(".0") for c in DATE_COLUMNS for v in every[c])
    with pytest.raises(ValueError, match="float_share must be a number in"):
        persons_table(data, "csv", 1.5)
    with pytest.raises(ValueError, match="format must be"):
        persons_table(data, "json")


def test_parquet_list_column_and_int_dates(data: PersonsData, tmp_path: Path) -> None:
    paths = write_persons(data, tmp_path, fmt="parquet")
    assert paths["persons"] == tmp_path / "persons.parquet" and paths["truth"] == tmp_path / "truth.csv"
    table = pq.read_table(paths["persons"])
    assert table.column_names == list(COLUMNS)
    assert str(table.schema.field("previous_cities").type) == "list<element: string>"
    assert all(str(table.schema.field(c).type) == "int64" for c in DATE_COLUMNS)
    assert table.column("previous_cities").to_pylist() == data.records["previous_cities"]
    assert table.column("birth_year").to_pylist() == data.records["birth_year"]
    floats = pq.read_table(write_persons(data, tmp_path / "f", fmt="parquet", float_share=0.5)["persons"])
    assert all(str(floats.schema.field(c).type) == "double" for c in DATE_COLUMNS)
    assert [None if v != v else int(v) for v in floats.column("birth_month").to_pylist()] == data.records["birth_month"]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="duplicates .* must be fewer than the records"):
        generate_persons(10, 10, 0)
    with pytest.raises(ValueError, match="triples .* at most half"):
        generate_persons(100, 10, 0, triples=6)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        generate_persons(0, 0, 0)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        generate_persons(10, 1, -1)
    with pytest.raises(ValueError, match="PersonErrorRates.moved must be a probability"):
        PersonErrorRates(moved=1.5)
    with pytest.raises(ValueError, match="at least one rate"):
        PersonErrorRates(**{e: 0.0 for e in ERRORS})


def test_a_single_error_kind_still_gives_every_copy_an_error() -> None:
    rates = PersonErrorRates(**{**{e: 0.0 for e in ERRORS}, "dob_swap": 0.01})
    d = generate_persons(400, 100, 3, rates=rates)
    rows = _rows(d)
    kinds = Counter(tuple(e) for e in d.errors.values())
    assert set(kinds) == {("dob_swap",), ("first_typo",)} and kinds[("dob_swap",)] > 20
    for dup, orig in d.original.items():
        a, b = rows[dup], rows[orig]
        if d.errors[dup] == ["dob_swap"]:
            assert (a["birth_month"], a["birth_day"]) == (b["birth_day"], b["birth_month"]) != (b["birth_month"], b["birth_day"])
        else:  # a day the month cannot be swapped with: the fallback typo
            assert a["first_name"] != b["first_name"] and not (
                isinstance(b["birth_day"], int) and b["birth_day"] <= 12 and b["birth_day"] != b["birth_month"]
            )


@pytest.mark.parametrize("op", [0, 1, 2, 3])
def test_typo_always_changes_the_name(op: int) -> None:
    for s in ["Smith", "Al", "A", "", "Anna", "Lee", "ZZ", "Aa"]:
        for u in (0.0, 0.3, 0.99):
            for v in (0.0, 0.5, 0.99):
                t = typo(s, op, u, v)
                assert t != s and abs(len(t) - len(s)) <= 1, (s, op, u, v, t)
    assert typo("Smith", 3, 0.0, 0.0) == "Msith" and typo("Smith", 1, 0.0, 0.0) == "Mith"
