"""What active labelling chooses from, as plain arrays: the three kinds of proposals, the model's expected
quality, and how the weights moved between two fits (:mod:`er_framework.engine.active` puts them together).

* **uncertain**: the candidates the model is least sure of: the match weight (log2 odds of the score, for
  a probability) nearest the threshold's, or the score nearest the threshold for a score that is not a
  probability; taken alternately above and below the threshold, at most one per comparison pattern and
  one per record, so that the round does not ask the same question twice (:func:`pick_uncertain`).
* **disagreement**: candidates where the blockers, the model and the clusterer do not agree
  (:func:`disagreements`): a pair only one of several blockers produced that the model calls a match (a
  match the blocking nearly lost); a pair every blocker produced that the model rejects; a pair the model
  calls a match whose records the clusterer put apart (``one_to_one`` kept a better partner); a pair the
  model rejects whose records the clusterer joined (through other pairs).
* **near-miss**: record pairs no blocker produced that share rare values (:func:`probe_pairs`): every field
  value and every word of it held by at most :data:`PROBE_MAX_DF` records is a token; a pair's probe score
  is the sum of its shared tokens' ``log2(records / holders)``. Labelled, they say what the blocking loses.

Ties are broken by a hash of the pair and the job's seed (:func:`tie_keys`): the same job, labels and seed
propose the same pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.kernels.hashing import mix64

__all__ = [
    "PROBE_MAX_DF",
    "PROBE_MAX_RECORDS",
    "LABELS_CORRECTION",
    "ExpectedQuality",
    "WeightChange",
    "disagreements",
    "distance_to_threshold",
    "expected_quality",
    "pair_keys",
    "pick_spread",
    "pick_uncertain",
    "probe_pairs",
    "tie_keys",
    "weight_changes",
]

Int64Array = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: a token held by more records than this is not rare enough to probe with
PROBE_MAX_DF = 8
#: the near-miss probe reads at most this many records (a seeded sample of a larger corpus)
PROBE_MAX_RECORDS = 200_000
#: scores are clipped to [EPS, 1 - EPS] before their log odds are taken
EPS = 1e-15


def pair_keys(left: Int64Array, right: Int64Array, n: int) -> Int64Array:
    """One integer per unordered pair of record indices below ``n`` (``min * n + max``)."""
    lo = np.minimum(left, right).astype(np.int64)
    hi = np.maximum(left, right).astype(np.int64)
    return lo * np.int64(max(n, 1)) + hi


def tie_keys(keys: Int64Array, seed: int) -> npt.NDArray[np.uint64]:
    """A seeded hash of each pair key: the order among equals, the same for the same seed."""
    salted = np.asarray(keys, dtype=np.int64).view(np.uint64) ^ np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    return mix64(salted)


def log_odds(p: FloatArray) -> FloatArray:
    """log2(p / (1 - p)), p clipped away from 0 and 1."""
    q = np.clip(np.asarray(p, dtype=np.float64), EPS, 1.0 - EPS)
    return np.asarray(np.log2(q) - np.log2(1.0 - q), dtype=np.float64)


def distance_to_threshold(scores: FloatArray, threshold: float, probability: bool) -> FloatArray:
    """How far each score is from the threshold: in bits of match weight for a probability, else in score."""
    if probability:
        return np.asarray(np.abs(log_odds(scores) - float(log_odds(np.asarray([threshold]))[0])), dtype=np.float64)
    return np.asarray(np.abs(np.asarray(scores, dtype=np.float64) - threshold), dtype=np.float64)


def pick_spread(
    order: Int64Array,
    left: Int64Array,
    right: Int64Array,
    count: int,
    used_records: set[int],
    patterns: Sequence[Any] | None = None,
) -> list[int]:
    """Up to ``count`` positions from ``order`` (best first) whose records are not in ``used_records`` and,
    given ``patterns`` (one hashable per position), whose pattern was not taken yet; ``used_records`` grows."""
    out: list[int] = []
    seen: set[Any] = set()
    for i in order.tolist():
        if len(out) >= count:
            break
        a, b = int(left[i]), int(right[i])
        if a in used_records or b in used_records:
            continue
        if patterns is not None:
            if patterns[i] in seen:
                continue
            seen.add(patterns[i])
        out.append(i)
        used_records.update((a, b))
    return out


def pick_uncertain(
    distance: FloatArray,
    above: npt.NDArray[np.bool_],
    ties: npt.NDArray[np.uint64],
    left: Int64Array,
    right: Int64Array,
    count: int,
    used_records: set[int],
    patterns: Sequence[Any] | None = None,
) -> list[int]:
    """Up to ``count`` positions nearest the threshold, alternately above and below it (one side's shortfall
    taken from the other), spread by :func:`pick_spread` (one per pattern, one per record)."""
    order = np.lexsort((ties, distance)).astype(np.int64)
    sides = [order[above[order]], order[~above[order]]]
    picked = [pick_spread(s, left, right, count, set(used_records), patterns) for s in sides]
    out: list[int] = []
    taken: set[Any] = set()
    for i in _interleave(picked[0], picked[1]):
        a, b = int(left[i]), int(right[i])
        pattern = patterns[i] if patterns is not None else None
        if len(out) >= count or a in used_records or b in used_records or (pattern is not None and pattern in taken):
            continue
        out.append(i)
        used_records.update((a, b))
        if pattern is not None:
            taken.add(pattern)
    return out


def _interleave(xs: list[int], ys: list[int]) -> list[int]:
    out: list[int] = []
    for k in range(max(len(xs), len(ys))):
        out += xs[k : k + 1] + ys[k : k + 1]
    return out


def disagreements(
    scores: FloatArray,
    keep: npt.NDArray[np.bool_],
    votes: Int64Array | None,
    blockers: int,
    same_cluster: npt.NDArray[np.bool_] | None,
    ties: npt.NDArray[np.uint64],
) -> list[tuple[str, Int64Array]]:
    """The candidates where blockers, model and clusterer disagree, by kind: ``(what, positions best first)``.

    ``keep``: the model calls the pair a match; ``votes``: how many of the ``blockers`` produced each pair;
    ``same_cluster``: the clusterer put both records in one cluster. Kinds with no pair are left out."""
    kinds: list[tuple[str, npt.NDArray[np.bool_], bool]] = []
    if votes is not None and blockers > 1:
        kinds.append((f"only 1 of {blockers} blockers produced it; the model calls it a match", keep & (votes == 1), False))
        kinds.append((f"all {blockers} blockers produced it; the model rejects it", ~keep & (votes == blockers), True))
    if same_cluster is not None:
        kinds.append(("the model calls it a match; the clusterer put its records apart", keep & ~same_cluster, True))
        kinds.append(("the model rejects it; the clusterer put its records together", ~keep & same_cluster, True))
    out: list[tuple[str, Int64Array]] = []
    for what, mask, high_first in kinds:
        at = np.flatnonzero(mask).astype(np.int64)
        if len(at):
            key = -scores[at] if high_first else scores[at]
            out.append((what, at[np.lexsort((ties[at], key))]))
    return out


def _tokens(values: Sequence[Any]) -> list[list[str]]:
    """Per value: the whole value and, when it has several words, each word (lower case)."""
    out: list[list[str]] = []
    for v in values:
        if v is None:
            out.append([])
            continue
        text = " ".join(str(v).lower().split())
        words = text.split(" ") if text else []
        out.append(([text] if text else []) + (words if len(words) > 1 else []))
    return out


def _token_table(fields: Mapping[str, Sequence[Any]], rows: Int64Array) -> tuple[Int64Array, Int64Array]:
    """(token id, row) of every distinct field token of the ``rows`` (positions into the fields' columns)."""
    ids: dict[tuple[str, str], int] = {}
    tok: list[int] = []
    rec: list[int] = []
    for name, column in fields.items():
        values = [column[int(r)] for r in rows]
        for row, words in zip(rows.tolist(), _tokens(values)):
            for w in set(words):
                tok.append(ids.setdefault((name, w), len(ids)))
                rec.append(row)
    return np.asarray(tok, dtype=np.int64), np.asarray(rec, dtype=np.int64)


def probe_pairs(
    fields: Mapping[str, Sequence[Any]],
    source: npt.NDArray[Any],
    cross_source_only: bool,
    seed: int,
    max_df: int = PROBE_MAX_DF,
    max_records: int = PROBE_MAX_RECORDS,
) -> tuple[Int64Array, Int64Array, FloatArray]:
    """Record pairs sharing rare tokens (held by 2 to ``max_df`` records) with their probe scores (the sum of
    the shared tokens' ``log2(records / holders)``), best first; in link mode only pairs of two sources.
    A corpus of more than ``max_records`` records is probed on a seeded sample of that many."""
    n = len(source)
    rows = np.arange(n, dtype=np.int64)
    if n > max_records:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=max_records, replace=False)).astype(np.int64)
    tok, rec = _token_table(fields, rows)
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    if not len(tok):
        return empty
    order = np.lexsort((rec, tok))
    tok, rec = tok[order], rec[order]
    starts = np.flatnonzero(np.r_[True, tok[1:] != tok[:-1]])
    sizes = np.diff(np.r_[starts, len(tok)])
    lefts: list[Int64Array] = []
    rights: list[Int64Array] = []
    weights: list[FloatArray] = []
    for size in range(2, max_df + 1):
        at = starts[sizes == size]
        if not len(at):
            continue
        members = rec[at[:, None] + np.arange(size)]
        i, j = np.triu_indices(size, k=1)
        lefts.append(members[:, i].ravel())
        rights.append(members[:, j].ravel())
        weights.append(np.full(len(at) * len(i), math.log2(len(rows) / size)))
    if not lefts:
        return empty
    left, right, weight = np.concatenate(lefts), np.concatenate(rights), np.concatenate(weights)
    if cross_source_only:
        cross = np.asarray(source)[left] != np.asarray(source)[right]
        left, right, weight = left[cross], right[cross], weight[cross]
    keys = pair_keys(left, right, n)
    uniq, inverse = np.unique(keys, return_inverse=True)
    total = np.bincount(inverse, weights=weight, minlength=len(uniq))
    lo, hi = uniq // max(n, 1), uniq % max(n, 1)
    best = np.lexsort((tie_keys(uniq, seed), -total))
    return lo[best].astype(np.int64), hi[best].astype(np.int64), np.asarray(total[best], dtype=np.float64)


@dataclass(frozen=True)
class ExpectedQuality:
    """The model's own expectation of its decisions over the candidates (the scores taken as match
    probabilities): E[true positives] = sum of the kept pairs' probabilities; E[matches] = sum of every
    candidate's probability. Precision = E[TP] / kept, recall = E[TP] / E[matches], F1 = 2 E[TP] / (kept +
    E[matches]) (ratios of expectations). Matches no blocker produced are not counted."""

    kept: int
    expected_matches: float
    precision: float
    recall: float
    f1: float


def expected_quality(probabilities: FloatArray, threshold: float) -> ExpectedQuality:
    """:class:`ExpectedQuality` of keeping the candidates whose probability is at least ``threshold``."""
    p = np.clip(np.asarray(probabilities, dtype=np.float64), 0.0, 1.0)
    keep = p >= threshold
    tp = float(p[keep].sum())
    matches = float(p.sum())
    kept = int(keep.sum())
    precision = tp / kept if kept else 0.0
    recall = tp / matches if matches > 0 else 0.0
    f1 = 2.0 * tp / (kept + matches) if kept + matches > 0 else 0.0
    return ExpectedQuality(kept, matches, precision, recall, f1)


@dataclass(frozen=True)
class WeightChange:
    """One level's weight (log2 m/u, bits) in two fits."""

    field: str
    level: str
    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before


def _weights(state: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """Every level's weight of a state's ``fields`` (log2 m/u, times the field's beta of a ``labels_refinement``),
    and with them the labels' correction b0 of a refinement."""
    out: dict[tuple[str, str], float] = {}
    refinement = state.get("labels_refinement")
    refinement = refinement if isinstance(refinement, Mapping) else {}
    beta = refinement.get("beta")
    beta = beta if isinstance(beta, Mapping) else {}
    for name, f in (state.get("fields") or {}).items():
        if not isinstance(f, Mapping) or "m" not in f or "u" not in f:
            continue
        levels = list(f.get("levels") or range(len(f["m"])))
        scale = float(beta.get(name, 1.0))
        for level, m, u in zip(levels, f["m"], f["u"]):
            if m > 0 and u > 0:
                out[(str(name), str(level))] = scale * math.log2(m / u)
    if out and refinement:
        out[LABELS_CORRECTION] = float(refinement.get("b0", 0.0))
    return out


#: the (field, level) of the labels' correction b0 among the weight changes
LABELS_CORRECTION = ("labels' correction", "b0")


def weight_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[WeightChange]:
    """Every level's weight in both fitted states (a verifier's ``fields`` of m and u per level; a fit refined
    by labels: times the field's beta, and the labels' correction b0 as one more entry), largest change first;
    empty when either state holds no such weights."""
    if not before or not after:
        return []
    a, b = _weights(before), _weights(after)
    if a and b and (LABELS_CORRECTION in a or LABELS_CORRECTION in b):  # no refinement: a correction of 0 bits
        a.setdefault(LABELS_CORRECTION, 0.0)
        b.setdefault(LABELS_CORRECTION, 0.0)
    changes = [WeightChange(k[0], k[1], a[k], b[k]) for k in a if k in b]
    return sorted(changes, key=lambda c: (-abs(c.change), c.field, c.level))
