"""``er report OUT --truth FILE``: precision, recall and F1 by threshold of a finished run against a truth file.

Every candidate pair's score is read from the run's candidates table (``output: {candidates: true}`` writes
it), each candidate is marked true or not by the truth (:mod:`er_framework.evaluate.truth`: pairs, or clusters
whose within-cluster pairs are true), and recall is over every true pair :func:`er_framework.evaluate.metrics.evaluate`
counts (those no blocker produced too). For a Fellegi–Sunter run (report.json's ``scores.weights``) the curve
is on the match-weight scale, each probability read as log2(p / (1 − p)) (a probability written as exactly 1
is clipped: :func:`er_framework.engine.score_scale.logit2`). The metrics themselves:
:func:`er_framework.engine.threshold_curve.threshold_curve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.engine.score_scale import WEIGHT_CLIP_HIGH, logit2, weight_of_threshold
from er_framework.engine.threshold_curve import threshold_curve
from er_framework.errors import InputError, Problem
from er_framework.evaluate.metrics import evaluate
from er_framework.evaluate.truth import Truth, load_truth
from er_framework.io.output_read import read_output_columns
from er_framework.io.outputs import read_report

__all__ = ["candidate_truth", "truth_curve"]

_CANDIDATE_COLUMNS = ("left_source", "left_id", "right_source", "right_id", "score")


def _candidates_file(out: Path) -> Path:
    found = [p for p in (out / "candidates.csv", out / "candidates.parquet") if p.is_file()]
    if not found:
        raise InputError(
            Problem(
                where=str(out),
                message="no candidates.csv (or .parquet) in the output folder: the threshold curve needs every candidate's score",
                fix="run the job with output: {candidates: true} (it writes every candidate pair and its score), then er report --truth",
            )
        )
    return max(found, key=lambda p: p.stat().st_mtime_ns)


def _keys(sources: list[Any], ids: list[Any], with_source: bool) -> list[Any]:
    return [(str(s), str(i)) for s, i in zip(sources, ids)] if with_source else [str(i) for i in ids]


def candidate_truth(cols: dict[str, list[Any]], truth: Truth) -> npt.NDArray[np.bool_]:
    """Per candidate (columns ``left_source, left_id, right_source, right_id``), whether the truth says it is a
    true pair. Records are matched by source and id when the truth gives every record's source (or ``source=``
    fills it), else by id alone."""
    if truth.kind == "pairs":
        srcs = [s if s is not None else truth.source for s in (*truth.left_sources, *truth.right_sources)]
        with_source = bool(srcs) and all(s is not None for s in srcs)
        half = len(truth.left_ids)
        lk, rk = _keys(srcs[:half], truth.left_ids, with_source), _keys(srcs[half:], truth.right_ids, with_source)
        true_pairs = set(zip(lk, rk)) | set(zip(rk, lk))  # either order
        left = _keys(cols["left_source"], cols["left_id"], with_source)
        right = _keys(cols["right_source"], cols["right_id"], with_source)
        return np.fromiter(((a, b) in true_pairs for a, b in zip(left, right)), dtype=bool, count=len(left))
    srcs = [s if s is not None else truth.source for s in truth.sources]
    with_source = bool(srcs) and all(s is not None for s in srcs)
    label = {k: c for k, c in zip(_keys(srcs, truth.ids, with_source), truth.labels) if c is not None}
    left = _keys(cols["left_source"], cols["left_id"], with_source)
    right = _keys(cols["right_source"], cols["right_id"], with_source)
    return np.fromiter(
        (label.get(a) is not None and label.get(a) == label.get(b) for a, b in zip(left, right)), dtype=bool, count=len(left)
    )


def truth_curve(out_dir: str | Path, truth: Truth | str | Path) -> dict[str, Any]:
    """report.json's ``threshold_curve`` of the run in ``out_dir`` against ``truth`` (see the module)."""
    out = Path(out_dir)
    if not isinstance(truth, Truth):
        truth = load_truth(truth)
    report = read_report(out)
    metrics = evaluate(out, truth)  # the true pairs, counted as er evaluate counts them (and the outputs checked)
    n_true = int(metrics["truth"]["true_pairs"])
    path = _candidates_file(out)
    raw = read_output_columns(path, _CANDIDATE_COLUMNS)
    cols = {k: raw[k].to_pylist() for k in _CANDIDATE_COLUMNS}
    scores = np.array([float(s) if s not in (None, "") else np.nan for s in cols["score"]], dtype=np.float64)
    flags = candidate_truth(cols, truth)
    threshold = float((report.get("threshold") or {}).get("value", (report.get("scores") or {}).get("threshold", 0.5)))
    bits = isinstance((report.get("scores") or {}).get("weights"), dict)
    over = f"every candidate pair of {path.name} ({len(scores):,}) against {truth.path} ({n_true:,} true pairs)"
    if bits:
        values = logit2(scores)
        clipped = int(np.count_nonzero(scores >= 1.0))
        if clipped:
            over += f"; {clipped:,} probabilities written as 1 are read as {WEIGHT_CLIP_HIGH:g} bits (their weight is not in the file)"
        return threshold_curve(values, flags, n_true, weight_of_threshold(threshold), scale="bits", over=over)
    return threshold_curve(scores, flags, n_true, threshold, scale="score", over=over)
