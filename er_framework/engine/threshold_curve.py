"""Precision, recall and F1 of the pairs kept at every threshold (a pair is kept when its value is at least
the threshold), from every candidate's value and whether it is a true pair: report.json's ``threshold_curve``,
the threshold-selection chart of report.html.

The values are on the scale the threshold is decided on (match weights in bits for a Fellegi–Sunter job,
scores otherwise: :mod:`er_framework.engine.score_scale`). Recall is over ``true_pairs`` (every true pair,
those no blocker produced too, when a truth file says how many there are; the labelled matches when the truth
is a labels file). :func:`threshold_curve` sorts once and counts by cumulative sums;
:func:`threshold_curve_reference` counts every threshold in a loop (the tests' oracle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["CURVE_POINTS", "best_cut", "curve_at", "threshold_curve", "threshold_curve_reference"]

Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: thresholds of the chart's curve (evenly spaced over the values' range)
CURVE_POINTS = 201


def _prf(tp: npt.NDArray[Any], kept: npt.NDArray[Any], n_true: int) -> tuple[Float64Array, Float64Array, Float64Array]:
    tp_f, kept_f = tp.astype(np.float64), kept.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(kept_f > 0, tp_f / kept_f, np.nan)
        recall = tp_f / n_true if n_true else np.full(len(tp_f), np.nan)
        f1 = np.where(kept_f + n_true > 0, 2.0 * tp_f / (kept_f + n_true), np.nan)
    return precision, recall, f1


def curve_at(values: Float64Array, truth: BoolArray, n_true: int, thresholds: Float64Array) -> dict[str, Float64Array]:
    """Kept pairs, true pairs kept, precision, recall and F1 at each of ``thresholds`` (vectorized: the values
    sorted once, the true pairs at or above each threshold by a suffix sum and a binary search)."""
    ok = np.isfinite(values)
    v, tr = values[ok], truth[ok]
    order = np.argsort(v, kind="stable")
    v_sorted = v[order]
    true_at_or_above = np.concatenate([np.cumsum(tr[order][::-1])[::-1], [0]]).astype(np.int64)
    first = np.searchsorted(v_sorted, thresholds, side="left")
    kept = len(v_sorted) - first
    tp = true_at_or_above[first]
    precision, recall, f1 = _prf(tp, kept, n_true)
    return {"kept": kept.astype(np.float64), "true_kept": tp.astype(np.float64), "precision": precision, "recall": recall, "f1": f1}


def best_cut(values: Float64Array, truth: BoolArray, n_true: int) -> tuple[float, float, float, float, int] | None:
    """The threshold of highest F1 among every distinct value (keeping the pairs at or above it), as
    ``(threshold, precision, recall, f1, kept)``; the threshold is put midway to the next lower value (the
    same pairs are kept, with room on both sides). Ties: the highest threshold. None without a finite value."""
    ok = np.isfinite(values)
    v, tr = values[ok], truth[ok]
    if not len(v):
        return None
    order = np.argsort(-v, kind="stable")
    v_desc = v[order]
    tp = np.cumsum(tr[order]).astype(np.int64)
    last = np.flatnonzero(np.append(v_desc[1:] != v_desc[:-1], True))  # the last position of each distinct value
    kept = last + 1
    _, _, f1 = _prf(tp[last], kept, n_true)
    if np.all(np.isnan(f1)):
        return None
    k = int(np.nanargmax(f1))
    i = int(last[k])
    s = float(v_desc[i])
    t = (s + float(v_desc[i + 1])) / 2.0 if i + 1 < len(v_desc) else s
    p, r, f = _prf(tp[[i]], kept[[k]], n_true)
    return t, float(p[0]), float(r[0]), float(f[0]), int(kept[k])


def _num(x: float) -> float | None:
    return round(float(x), 6) if math.isfinite(x) else None


def threshold_curve(values: Float64Array, truth: BoolArray, n_true: int, threshold: float, *, scale: str, over: str) -> dict[str, Any]:
    """report.json's ``threshold_curve``: the chart's points (:data:`CURVE_POINTS` thresholds over the values'
    range), the metrics at ``threshold`` and the threshold of highest F1 (:func:`best_cut`). ``truth``: per
    value, whether its pair is a true pair; ``n_true``: the true pairs recall is over (at least ``truth.sum()``);
    ``scale``: ``"bits"`` or ``"score"``; ``over``: what the pairs and the truth are, in words."""
    values = np.asarray(values, dtype=np.float64)
    truth = np.asarray(truth, dtype=bool)
    finite = values[np.isfinite(values)]
    lo = min(float(finite.min()), threshold) if len(finite) else threshold
    hi = max(float(finite.max()), threshold) if len(finite) else threshold
    grid = np.linspace(lo, hi, CURVE_POINTS) if hi > lo else np.array([lo])
    at = curve_at(values, truth, n_true, grid)
    now = curve_at(values, truth, n_true, np.array([threshold], dtype=np.float64))
    best = best_cut(values, truth, n_true)
    out: dict[str, Any] = {
        "scale": scale,
        "over": over,
        "pairs": int(len(values)),
        "true_pairs": int(n_true),
        "true_among_pairs": int(truth.sum()),
        "threshold": threshold,
        "at_threshold": {k: _num(float(now[k][0])) for k in ("precision", "recall", "f1")} | {"kept": int(now["kept"][0])},
        "best": None,
        "curve": {"threshold": [_num(x) for x in grid], **{k: [_num(x) for x in at[k]] for k in ("precision", "recall", "f1")}},
    }
    if best is not None:
        t, p, r, f, kept = best
        out["best"] = {"threshold": _num(t), "precision": _num(p), "recall": _num(r), "f1": _num(f), "kept": kept}
        if scale == "bits":
            out["best"]["probability"] = _num(1.0 / (1.0 + 2.0 ** (-t)) if t > -1000 else 0.0)
    return out


def threshold_curve_reference(values: Float64Array, truth: BoolArray, n_true: int) -> list[tuple[float, float, float, float, int]]:
    """Plain twin of :func:`curve_at` / :func:`best_cut`: at every distinct finite value ``s`` (highest first),
    ``(s, precision, recall, f1, kept)`` of the pairs whose value is at least ``s``, counted one by one."""
    vals = [float(x) for x in values]
    marks = [bool(x) for x in truth]
    out = []
    for s in sorted({x for x in vals if math.isfinite(x)}, reverse=True):
        kept = sum(1 for x in vals if math.isfinite(x) and x >= s)
        tp = sum(1 for x, m in zip(vals, marks) if math.isfinite(x) and x >= s and m)
        p = tp / kept if kept else math.nan
        r = tp / n_true if n_true else math.nan
        f = 2 * tp / (kept + n_true) if kept + n_true else math.nan
        out.append((s, p, r, f, kept))
    return out
