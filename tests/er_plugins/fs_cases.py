"""Data shared by the tests of the fellegi_sunter verifier's estimation and counts (test_fs_training.py,
test_fs_counts.py): people with skewed name frequencies and their duplicates, candidates blocked on keys."""

from __future__ import annotations

import numpy as np

from er_framework.data import Pairs, Records

FIELDS = [
    {"field": "name", "comparison": "jaro_winkler", "levels": [100, 85]},
    {"field": "city", "comparison": "exact"},
    {"field": "year", "comparison": "exact"},
    {"field": "street", "comparison": "exact"},
]


def people_records(n: int, seed: int) -> tuple[Records, list[int]]:
    """People with skewed name frequencies (a few very common names), their duplicates with changes."""
    rng = np.random.default_rng(seed)
    names = [f"n{k}" for k in range(400)]
    weights = 1.0 / np.arange(1, 401) ** 1.1
    name = rng.choice(names, size=n, p=weights / weights.sum()).tolist()
    city = [f"c{k}" for k in rng.integers(0, 40, n)]
    year = [str(y) for y in rng.integers(1940, 2000, n)]
    street = [f"s{k}" for k in rng.integers(0, 2000, n)]
    entity = list(range(n))
    dups = rng.choice(n, size=n // 5, replace=False)
    for i in dups.tolist():
        nm, ct, yr, st = name[i], city[i], year[i], street[i]
        change = rng.random(4) < 0.25  # each field changed independently (the model's assumption)
        if change[0]:
            nm = nm + "x"
        if change[1]:
            ct = f"c{int(rng.integers(0, 40))}"
        if change[2]:
            yr = str(int(yr) + 1)
        if change[3]:
            st = f"s{int(rng.integers(0, 2000))}"
        name.append(nm)
        street.append(st)
        city.append(ct)
        year.append(yr)
        entity.append(i)
    ids = [str(k) for k in range(len(name))]
    return Records.from_columns(ids, {"name": name, "city": city, "year": year, "street": street}), entity


def candidates_by_keys(rec: Records, keys: list[list[str]]) -> Pairs:
    """Every pair equal on all the columns of one key (field_hash's pairs, no cap)."""
    lefts, rights = [], []
    for key in keys:
        groups: dict[tuple, list[int]] = {}
        for i in range(len(rec)):
            groups.setdefault(tuple(rec.fields[c][i] for c in key), []).append(i)
        for g in groups.values():
            for a in range(len(g)):
                for b in range(a + 1, len(g)):
                    lefts.append(g[a])
                    rights.append(g[b])
    return Pairs(np.array(lefts, dtype=np.int64), np.array(rights, dtype=np.int64)).normalized()
