"""Fixtures of the tests of the records verifiers: small random records, generated customers, the shipped
record jobs run by the engine (helpers in records_cases.py)."""

from __future__ import annotations

import csv
import itertools
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fs_cases import candidates_by_keys, people_records
from records_cases import CONFIGS, SHIPPED

from er_framework.config import parse_job
from er_framework.data import Batch, Pairs, Records
from er_framework.executors.local import run_local
from er_framework.synth.customers import generate_customers


def _random_records(n: int, seed: int) -> Records:
    """Small records over a tiny alphabet (many near and exact matches) with None, '' and '  '."""
    rng = np.random.default_rng(seed)

    def word() -> str:
        return "".join(rng.choice(list("abcd"), size=int(rng.integers(1, 6))))

    def value(kind: str) -> str | None:
        r = rng.random()
        if r < 0.08:
            return None
        if r < 0.10:
            return ""
        if r < 0.11:
            return "  "
        if kind == "phone":
            digits = "".join(rng.choice(list("0123"), size=int(rng.integers(3, 7))))
            fmt = int(rng.integers(0, 4))
            return ["", "+1 ", "(", "n/a "][fmt] + "-".join(digits[k : k + 2] for k in range(0, len(digits), 2))
        return " ".join(word() for _ in range(int(rng.integers(1, 4))))

    fields = {k: [value(k) for _ in range(n)] for k in ("f1", "f2", "phone")}
    return Records.from_columns([str(i) for i in range(n)], fields)


@pytest.fixture(scope="module")
def small() -> tuple[Batch, Pairs]:
    rec = _random_records(300, 1)
    rng = np.random.default_rng(2)
    pairs = Pairs(rng.integers(0, 300, 2500), rng.integers(0, 300, 2500)).normalized()
    return Batch(rec), pairs


def _norm(v: str) -> str | None:
    """What the engine's normalization does to a value (NFKC, casefold, whitespace); '' -> None."""
    if not v:
        return None
    return " ".join(unicodedata.normalize("NFKC", v).casefold().split()) or None


@pytest.fixture(scope="module")
def customers() -> dict:
    """generate_customers(20000, 0.5, 7) as one link batch: A then B, truth as index pairs."""
    d = generate_customers(20000, 0.5, 7)
    cols = [c for c in d.a if c != "id"]
    a = Records.from_columns(d.a["id"], {c: [_norm(v) for v in d.a[c]] for c in cols}, "A")
    b = Records.from_columns(d.b["id"], {c: [_norm(v) for v in d.b[c]] for c in cols}, "B")
    rec = Records.concat([a, b])
    pos = {x: i for i, x in enumerate(rec.ids)}
    tl = np.array([pos[x] for x, _ in d.truth])
    tr = np.array([pos[y] for _, y in d.truth])
    return {"records": rec, "truth_left": tl, "truth_right": tr, "batch": Batch(rec, cross_source_only=True)}


def _read_truth_pairs(path: Path) -> set[tuple[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    if rows and len(rows[0]) == 2 and path.name == "febrl3_truth.csv":  # id,entity: every pair of an entity
        by: dict[str, list[str]] = {}
        for i, e in rows:
            by.setdefault(e, []).append(i)
        return {(a, b) for ids in by.values() for a, b in itertools.combinations(sorted(ids), 2)}
    return {(a, b) for a, b in rows}


@pytest.fixture(scope="module")
def shipped() -> dict[str, dict[str, Any]]:
    """Every shipped record job run once by the engine (no output written): its result and truth."""
    out = {}
    for name, (cfg, truth) in SHIPPED.items():
        job = parse_job(CONFIGS / cfg)
        out[name] = {"job": job, "result": run_local(job, write=False), "truth": _read_truth_pairs(CONFIGS / truth)}
    return out


@pytest.fixture(scope="module")
def people() -> tuple[Records, list[int], list[list[str]], Pairs, np.ndarray]:
    """People with skewed name frequencies (fs_cases.py), their candidates blocked on the name and on city + year."""
    rec, entity = people_records(3000, 1)
    keys = [["name"], ["city", "year"]]
    pairs = candidates_by_keys(rec, keys)
    y = np.array([entity[a] == entity[b] for a, b in zip(pairs.left.tolist(), pairs.right.tolist())])
    return rec, entity, keys, pairs, y
