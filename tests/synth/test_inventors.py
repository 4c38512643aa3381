"""Tests of er_framework.synth.inventors: columns, truth, determinism, the files, and that the data are hard."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from er_framework.synth.inventors import (
    ASSIGNEES,
    COLUMNS,
    LIST_COLUMNS,
    LIST_SEPARATOR,
    InventorData,
    MentionNoise,
    generate_inventors,
    inventors_table,
    write_inventors,
)

N, SEED = 6000, 4


@pytest.fixture(scope="module")
def data() -> InventorData:
    return generate_inventors(N, SEED)


def _rows(data: InventorData) -> list[dict[str, object]]:
    return [{c: data.records[c][i] for c in COLUMNS} for i in range(len(data))]


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_columns_ids_and_truth(data: InventorData) -> None:
    rec = data.records
    assert list(rec) == list(COLUMNS) and len(data) == N
    assert all(len(v) == N for v in rec.values())
    assert len(set(rec["id"])) == N and all(x.startswith("M") and len(x) == 7 for x in rec["id"])
    assert sorted(rec["id"]) != rec["id"]  # rows in a random order
    entity = dict(data.truth)
    assert len(data.truth) == N and set(entity) == set(rec["id"])  # every mention in the truth
    assert set(entity.values()) == set(data.names)
    for c in COLUMNS:
        if c in LIST_COLUMNS:
            assert all(isinstance(v, list) and all(isinstance(x, str) and x for x in v) for v in rec[c])
        else:
            assert all(isinstance(v, str) for v in rec[c])
    for c in ("id", "patent_id", "last_name", "country"):
        assert all(rec[c]), c
    assert all(rec["classes"]) and all(len(set(v)) == len(v) for v in rec["classes"])


def test_deterministic_and_seed_dependent(data: InventorData) -> None:
    again = generate_inventors(N, SEED)
    assert again.records == data.records and again.truth == data.truth
    other = generate_inventors(N, SEED + 1)
    assert other.records["first_name"] != data.records["first_name"]
    assert len(generate_inventors(1, 0)) == 1


def test_patents_name_different_inventors_and_their_coinventors(data: InventorData) -> None:
    entity = dict(data.truth)
    by_patent: dict[str, list[dict[str, object]]] = {}
    for r in _rows(data):
        by_patent.setdefault(str(r["patent_id"]), []).append(r)
    sizes = Counter(len(v) for v in by_patent.values())
    assert max(sizes) <= 7 and sizes[1] > 0 and sum(v for k, v in sizes.items() if k >= 3) > 0.2 * len(by_patent)
    shared_city = 0
    multi = 0
    for rows in by_patent.values():
        ents = [entity[str(r["id"])] for r in rows]
        assert len(set(ents)) == len(ents)  # one mention per inventor and patent
        if len(rows) < 2:
            continue
        multi += 1
        assert len({str(r["assignee"]) for r in rows}) == 1 and len({tuple(r["classes"]) for r in rows}) == 1  # type: ignore[arg-type]
        shared_city += len({str(r["city"]) for r in rows}) < len(rows)
        full = [" ".join(x for x in (str(r["first_name"]), str(r["middle_name"]), str(r["last_name"])) if x) for r in rows]
        if len(rows) < 7:  # (a patent cut to fit n is not the last of the mentions)
            for j, r in enumerate(rows):
                assert sorted(r["coinventors"]) == sorted(full[:j] + full[j + 1 :])  # type: ignore[type-var]
    assert shared_city > 0.5 * multi  # team members share the city more often than not


def test_heavy_tailed_mentions_per_inventor(data: InventorData) -> None:
    counts = Counter(dict(data.truth).values())
    dist = Counter(counts.values())
    assert (dist[1] + dist[2]) / len(counts) > 0.6  # most inventors: one or two patents
    assert max(counts.values()) >= 25  # a few have many (50+ at 20,000 mentions)
    assert sum(1 for v in counts.values() if v >= 10) >= 30


def test_many_different_inventors_share_a_full_name(data: InventorData) -> None:
    full = Counter(f"{f} {last}" for f, _, last in data.names.values())
    sharing = sum(1 for f, _, last in data.names.values() if full[f"{f} {last}"] > 1)
    assert sharing / len(data.names) >= 0.2  # (about 0.4 at 20,000 mentions)
    east_asian = {"Wang", "Li", "Zhang", "Liu", "Chen", "Kim", "Lee", "Park", "Nguyen", "Tanaka", "Suzuki", "Sato"}
    assert sum(1 for _, _, last in data.names.values() if last in east_asian) / len(data.names) > 0.2
    # the same exact name in different places and companies
    rows = _rows(data)
    entity = dict(data.truth)
    places: dict[str, set[tuple[str, str]]] = {}
    for r in rows:
        f, _, last = data.names[entity[str(r["id"])]]
        if full[f"{f} {last}"] > 2:
            places.setdefault(f"{f} {last}", set()).add((str(r["city"]), str(r["assignee"])))
    assert any(len(v) >= 3 for v in places.values())


def test_careers_move_and_keep_a_core_field(data: InventorData) -> None:
    entity = dict(data.truth)
    seen: dict[int, dict[str, set[str]]] = {}
    for r in _rows(data):
        d = seen.setdefault(entity[str(r["id"])], {"assignee": set(), "city": set(), "classes": set(), "co": set()})
        d["assignee"].add(str(r["assignee"]).split(" ")[0])
        d["city"].add(str(r["city"]))
        d["classes"].update(r["classes"])  # type: ignore[arg-type]
        d["co"].update(r["coinventors"])  # type: ignore[arg-type]
    busy = {e: d for e, d in seen.items() if Counter(entity.values())[e] >= 5}
    assert busy
    assert sum(len(d["assignee"]) > 1 for d in busy.values()) / len(busy) > 0.2  # employers change
    assert sum(len(d["city"]) > 1 for d in busy.values()) / len(busy) > 0.3  # so do places
    counts = Counter(entity.values())
    # classes and co-inventors recur: fewer distinct than mentions x (average list length)
    assert sum(len(d["classes"]) < 2 * counts[e] for e, d in busy.items()) / len(busy) > 0.8


def test_mention_noise_present(data: InventorData) -> None:
    rec = data.records
    assert 0.03 < sum(len(f) == 2 and f.endswith(".") for f in rec["first_name"]) / N < 0.15  # initials
    middles = Counter("" if not m else ("initial" if m.endswith(".") else "full") for m in rec["middle_name"])
    assert middles[""] > N / 2 and middles["initial"] > 0 and middles["full"] > 0
    canon = {a.split("|")[0]: a.split("|")[1:] for a in ASSIGNEES}
    assignees = set(rec["assignee"])
    assert "" in assignees  # independent inventors
    assert any(name in assignees and any(v in assignees for v in variants) for name, variants in canon.items())
    assert any("-" in f for f in rec["first_name"])
    assert sum(not s for s, c in zip(rec["state"], rec["country"]) if c == "US") > 0


def test_noise_rates_checked_and_zero_noise() -> None:
    with pytest.raises(ValueError, match="MentionNoise.initial"):
        MentionNoise(initial=1.5)
    with pytest.raises(ValueError, match="n_mentions"):
        generate_inventors(0, 1)
    with pytest.raises(ValueError, match="seed"):
        generate_inventors(10, -1)
    zero = MentionNoise(**{f: 0.0 for f in MentionNoise.__dataclass_fields__})
    clean = generate_inventors(2000, 3, noise=zero)
    entity = dict(clean.truth)
    for i, rid in enumerate(clean.records["id"]):
        first, middle, last = clean.names[entity[rid]]
        assert (clean.records["first_name"][i], clean.records["middle_name"][i], clean.records["last_name"][i]) == (first, middle, last)


def test_csv_and_parquet_files(data: InventorData, tmp_path: Path) -> None:
    small = generate_inventors(500, 9)
    paths = write_inventors(small, tmp_path / "c")
    rows = _read_csv(paths["inventors"])
    assert list(rows[0]) == list(COLUMNS) and len(rows) == 500
    for i, r in enumerate(rows):
        for c in LIST_COLUMNS:
            assert r[c] == LIST_SEPARATOR.join(small.records[c][i])
    truth = _read_csv(paths["truth"])
    assert list(truth[0]) == ["id", "entity"] and sorted(t["id"] for t in truth) == sorted(r["id"] for r in rows)
    write_inventors(small, tmp_path / "c2")
    assert (tmp_path / "c" / "inventors.csv").read_bytes() == (tmp_path / "c2" / "inventors.csv").read_bytes()
    pq_paths = write_inventors(small, tmp_path / "p", fmt="parquet")
    table = pq.read_table(pq_paths["inventors"])
    assert table.column_names == list(COLUMNS) and table.num_rows == 500
    for c in LIST_COLUMNS:
        assert str(table.schema.field(c).type) == "list<element: string>" or str(table.schema.field(c).type).startswith("list<")
        assert table.column(c).to_pylist() == small.records[c]
    assert str(table.schema.field("first_name").type) == "string"
    with pytest.raises(ValueError, match="format"):
        inventors_table(small, "json")
