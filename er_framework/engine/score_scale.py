"""The scale a threshold is decided on: the score itself, or for a verifier whose score is a match probability
(Fellegi–Sunter: ``score = 2**w / (1 + 2**w)``) the match weight ``w`` in bits (log2 of the Bayes factor,
prior included), where matches and non-matches lie far apart instead of piled at 0 and 1.

A probability near 1 does not hold its weight in float64 (``1 - p`` loses its digits above ~40 bits and is
exactly 0 above ~53 bits): those pairs' weights are taken from the verifier's own terms (``match_weight`` of
its comparisons) when the executor can compute them; otherwise they are clipped, and the report says how many.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Pairs

__all__ = [
    "EXACT_WEIGHT_MAX",
    "REFINED_MAX",
    "WEIGHT_CLIP_HIGH",
    "WEIGHT_CLIP_LOW",
    "Weights",
    "is_weight_scored",
    "logit2",
    "match_weights",
    "weight_of_threshold",
]

Float64Array = npt.NDArray[np.float64]

#: above this weight (bits) a probability's ``1 - p`` has lost too many digits: the weight is taken from the terms
EXACT_WEIGHT_MAX = 40.0
#: a probability of exactly 1.0 read as a weight, when no terms give it: log2((1 - 2**-53) / 2**-53)
WEIGHT_CLIP_HIGH = 53.0
#: a probability of exactly 0.0 read as a weight (the smallest float64 is 2**-1074)
WEIGHT_CLIP_LOW = -1074.0
#: at most this many pairs' weights are recomputed from the terms (beyond: clipped, and said)
REFINED_MAX = 1 << 21
#: pairs explained per call when the weights are recomputed
_STEP = 1 << 16


def is_weight_scored(verifier: dict[str, Any] | None) -> bool:
    """Whether the verifier's score is a match probability made of weights in bits: its report's
    ``per_field`` gives every field's ``weight_log2`` (what report.html's match-weight table reads)."""
    pf = (verifier or {}).get("per_field")
    return isinstance(pf, dict) and bool(pf) and all(isinstance(f, dict) and "weight_log2" in f for f in pf.values())


def logit2(p: Float64Array) -> Float64Array:
    """``log2(p / (1 - p))`` of every probability, 1.0 and 0.0 clipped to :data:`WEIGHT_CLIP_HIGH` /
    :data:`WEIGHT_CLIP_LOW` (NaN stays NaN)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.log2(p) - np.log2(1.0 - p)
    w = np.where(p >= 1.0, WEIGHT_CLIP_HIGH, w)
    return np.where(p <= 0.0, WEIGHT_CLIP_LOW, w)


def weight_of_threshold(t: float) -> float:
    """A probability threshold on the weight scale (clipped like :func:`logit2`)."""
    if t >= 1.0:
        return WEIGHT_CLIP_HIGH
    if t <= 0.0:
        return WEIGHT_CLIP_LOW
    return math.log2(t) - math.log2(1.0 - t)


@dataclass(frozen=True)
class Weights:
    """Every candidate's match weight in bits and how it was obtained."""

    weights: Float64Array
    #: pairs whose weight came from the verifier's terms (their probability was too near 1)
    from_terms: int
    #: pairs whose weight was clipped (probability exactly 1.0 or 0.0, and no terms to read)
    clipped: int

    def describe(self) -> dict[str, Any]:
        how = f"log2(p / (1 − p)) of the score p; above {EXACT_WEIGHT_MAX:g} bits the verifier's own match_weight"
        if self.clipped:
            how += (
                f"; {self.clipped:,} pairs whose probability is exactly 1 or 0 in float64 and whose terms could not be "
                f"read are clipped to {WEIGHT_CLIP_HIGH:g} / {WEIGHT_CLIP_LOW:g} bits"
            )
        return {"unit": "bits", "how": how, "from_terms": self.from_terms, "clipped": self.clipped}


def match_weights(
    scores: Float64Array,
    candidates: Pairs | None,
    explain: Callable[[Pairs], dict[str, npt.NDArray[Any]]] | None,
) -> Weights:
    """Every candidate's match weight (bits) from its probability ``scores``; the pairs above
    :data:`EXACT_WEIGHT_MAX` bits (at most :data:`REFINED_MAX` of them) read theirs from ``explain``'s
    ``match_weight`` when the candidates and ``explain`` are given."""
    w = logit2(scores)
    near_one = np.flatnonzero(np.isfinite(scores) & (w > EXACT_WEIGHT_MAX))
    from_terms = 0
    if candidates is not None and explain is not None and 0 < len(near_one) <= REFINED_MAX:
        for a in range(0, len(near_one), _STEP):
            pos = near_one[a : a + _STEP]
            terms = explain(Pairs(candidates.left[pos], candidates.right[pos]))
            if "match_weight" not in terms:
                break
            w[pos] = np.asarray(terms["match_weight"], dtype=np.float64)
            from_terms += len(pos)
    clipped = int(np.count_nonzero(np.isfinite(scores) & ((scores >= 1.0) | (scores <= 0.0))))
    if from_terms:
        clipped = int(np.count_nonzero(np.isfinite(scores) & (scores <= 0.0))) + (
            0 if from_terms == len(near_one) else int(np.count_nonzero(scores[near_one[from_terms:]] >= 1.0))
        )
    return Weights(w, from_terms, clipped)
