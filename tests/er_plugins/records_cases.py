"""Data and helpers shared by the tests of the records verifiers (test_field_score.py, test_fellegi_sunter.py,
test_records_scoring.py); their fixtures (``small``, ``customers``, ``shipped``) are in conftest.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from er_framework.data import Batch, Pairs

#: the fields configs/customers.yaml's fellegi_sunter compares (a verifier has no default fields)
CUSTOMER_FS_FIELDS: list[dict[str, Any]] = yaml.safe_load((Path(__file__).resolve().parents[2] / "configs" / "customers.yaml").read_text())[
    "verifier"
]["fields"]
#: field_score's customer fields (a pair scores out of 300)
CUSTOMER_FIELD_RULES: list[dict[str, Any]] = [
    {"field": ["first_name", "last_name"], "name": "name", "scorer": "token_sort_ratio"},
    {"field": "address", "scorer": "ratio"},
    {"field": "phone", "scorer": "digits", "last_digits": 10},
]


# ---------------------------------------------------------------------------
# generated customers (the customers fixture)


def truth_plus_random(c: dict, k: int = 200_000, seed: int = 3) -> tuple[Pairs, np.ndarray]:
    n_a = int((c["records"].source == 0).sum())
    n = len(c["records"])
    rng = np.random.default_rng(seed)
    left = np.concatenate([c["truth_left"], rng.integers(0, n_a, k)])
    right = np.concatenate([c["truth_right"], rng.integers(n_a, n, k)])
    pairs = Pairs(left, right).normalized()
    return pairs, truth_labels(c, pairs)


def truth_labels(c: dict, pairs: Pairs) -> np.ndarray:
    n = len(c["records"])
    key = c["truth_left"] * n + c["truth_right"]
    return np.isin(pairs.left * n + pairs.right, key)


def prf(pred: np.ndarray, y: np.ndarray, n_true: int) -> tuple[float, float, float]:
    tp = int((pred & y).sum())
    p = tp / max(int(pred.sum()), 1)
    r = tp / n_true
    return p, r, 2 * p * r / max(p + r, 1e-300)


# ---------------------------------------------------------------------------
# the shipped jobs: Febrl3, Febrl4 and the customers (read from configs/data, run by the engine)


CONFIGS = Path(__file__).resolve().parents[2] / "configs"


SHIPPED = {
    "febrl3": ("febrl3.yaml", "data/febrl/febrl3_truth.csv"),
    "febrl4": ("febrl4.yaml", "data/febrl/febrl4_truth.csv"),
    "customers": ("customers.yaml", "data/customers/truth.csv"),
}


def candidates_and_labels(d: dict[str, Any]) -> tuple[Batch, Pairs, np.ndarray]:
    r = d["result"]
    ids = r.records.ids
    c = r.candidates
    y = np.array([(ids[i], ids[j]) in d["truth"] or (ids[j], ids[i]) in d["truth"] for i, j in zip(c.left.tolist(), c.right.tolist())])
    return Batch(r.records, cross_source_only=d["job"].spec.mode == "link"), Pairs(c.left, c.right), y


def febrl4_sample(d: dict[str, Any], k: int = 3000) -> tuple[Batch, Pairs, Pairs]:
    batch, pairs, _ = candidates_and_labels(d)
    idx = np.sort(np.random.default_rng(0).choice(len(pairs), k, replace=False))
    return batch, pairs, Pairs(pairs.left[idx], pairs.right[idx])
