"""The report's evidence of a verifier that kept nothing (engine/report.py near_identical_rejected): the sampled
count equals the plain twin's on a job small enough to check every pair, and a large job samples."""

from __future__ import annotations

import random

import numpy as np

from er_framework.data import Pairs, Records
from er_framework.engine.report import near_identical_rejected, near_identical_rejected_reference, record_grams


def records(n: int, seed: int = 1) -> Records:
    rnd = random.Random(seed)
    base = ["".join(rnd.choices("abcdefghij klmnop", k=30)) for _ in range(n // 2)]
    texts = []
    for t in base:
        texts += [t, t if rnd.random() < 0.5 else t[:-1] + "z"]
    return Records.from_columns(
        [str(i) for i in range(len(texts))], {"text": texts, "city": [None if i % 7 == 0 else "x" for i in range(len(texts))]}
    )


def test_counts_equal_the_plain_twin_when_every_pair_is_checked() -> None:
    recs = records(200)
    rng = np.random.default_rng(0)
    left = rng.integers(0, 200, 300)
    right = rng.integers(0, 200, 300)
    left = np.concatenate([left, np.arange(0, 200, 2)])
    right = np.concatenate([right, np.arange(1, 200, 2)])
    keep = left != right
    pairs = Pairs(left[keep].astype(np.int64), right[keep].astype(np.int64))
    scores = rng.random(len(pairs))
    got = near_identical_rejected(recs, pairs, scores, 0.99, sample=10_000)
    assert got["sampled"] == len(pairs)
    assert got["near_identical"] == near_identical_rejected_reference(recs, pairs) > 0
    assert got["best_score"] == float(scores.max())


def test_a_large_job_is_sampled_best_scored_first() -> None:
    recs = records(400)
    left = np.arange(0, 400, 2, dtype=np.int64)
    right = left + 1
    scores = np.zeros(len(left))
    scores[:10] = 1.0  # the best-scored are always looked at
    got = near_identical_rejected(recs, Pairs(left, right), scores, 0.5, sample=10)
    assert 10 <= got["sampled"] <= 20
    assert got["near_identical"] >= near_identical_rejected_reference(recs, Pairs(left[:10], right[:10]))


def test_record_grams_tag_each_field_and_skip_missing_values() -> None:
    recs = Records.from_columns(["1"], {"a": ["abcd"], "b": [None], "c": ["x"]})
    assert record_grams(recs, 0) == {("a", "abc"), ("a", "bcd"), ("c", "x")}
