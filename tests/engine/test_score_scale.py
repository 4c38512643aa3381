"""Match weights from match probabilities (engine/score_scale.py): exact from the terms near 1, clipped otherwise."""

from __future__ import annotations

import math

import numpy as np

from er_framework.data import Pairs
from er_framework.engine.score_scale import (
    EXACT_WEIGHT_MAX,
    WEIGHT_CLIP_HIGH,
    WEIGHT_CLIP_LOW,
    is_weight_scored,
    logit2,
    match_weights,
    weight_of_threshold,
)


def _prob(w: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp2(-w))


def test_logit2_inverts_the_probability_and_clips_the_ends() -> None:
    w = np.array([-30.0, -3.0, 0.0, 2.5, 20.0])
    assert np.allclose(logit2(_prob(w)), w, atol=1e-6)
    assert list(logit2(np.array([1.0, 0.0]))) == [WEIGHT_CLIP_HIGH, WEIGHT_CLIP_LOW]
    assert math.isnan(float(logit2(np.array([np.nan]))[0]))
    assert weight_of_threshold(0.5) == 0.0 and weight_of_threshold(1.0) == WEIGHT_CLIP_HIGH
    assert weight_of_threshold(0.0) == WEIGHT_CLIP_LOW


def test_weights_above_the_limit_come_from_the_terms() -> None:
    true_w = np.array([-12.0, 3.0, 45.0, 70.0, 90.0])
    scores = _prob(true_w)
    assert scores[3] == 1.0 and scores[4] == 1.0  # float64 holds no weight there
    pairs = Pairs(np.arange(5, dtype=np.int64), np.arange(5, dtype=np.int64) + 10)
    asked: list[int] = []

    def explain(p: Pairs) -> dict[str, np.ndarray]:
        asked.extend(p.left.tolist())
        return {"match_weight": true_w[p.left]}

    got = match_weights(scores, pairs, explain)
    assert sorted(asked) == [2, 3, 4]  # only those above EXACT_WEIGHT_MAX bits
    assert np.allclose(got.weights, true_w, atol=1e-6)
    assert got.from_terms == 3 and got.clipped == 0
    assert got.describe()["unit"] == "bits"
    plain = match_weights(scores, None, None)  # no terms (an executor that cannot explain): clipped, and said
    assert plain.clipped == 2 and plain.from_terms == 0
    assert list(plain.weights[3:]) == [WEIGHT_CLIP_HIGH, WEIGHT_CLIP_HIGH]
    assert "clipped" in plain.describe()["how"]
    assert plain.weights[2] > EXACT_WEIGHT_MAX


def test_is_weight_scored() -> None:
    assert is_weight_scored({"per_field": {"a": {"weight_log2": [1.0, -1.0]}}})
    assert not is_weight_scored({"per_field": {"a": {"points": 3}}})
    assert not is_weight_scored({}) and not is_weight_scored(None)
