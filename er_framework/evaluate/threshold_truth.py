"""``er report OUT --truth FILE``: precision, recall and F1 by threshold of a finished run against a truth file.

Every candidate pair's score is read from the run's candidates table (``output: {candidates: true}`` writes
it), each candidate is marked true or not by the truth (:mod:`er_framework.evaluate.truth`: pairs, or clusters
whose within-cluster pairs are true), and recall is over every true pair :func:`er_framework.evaluate.metrics.evaluate`
counts (those no blocker produced too). For a Fellegi–Sunter run (report.json's ``scores.weights``) the curve
is on the match-weight scale, each probability read as log2(p / (1 − p)) (a probability written as exactly 1
is clipped: :func:`er_framework.engine.score_scale.logit2`). A labels file (``er review``'s, with a ``match``
column) is not a truth of the whole data: its curve is over the labelled pairs only, and says so. The metrics:
:func:`er_framework.engine.threshold_curve.threshold_curve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.engine.score_scale import WEIGHT_CLIP_HIGH, logit2, weight_of_threshold
from er_framework.engine.stages.training import MATCH_WORDS, NON_MATCH_WORDS
from er_framework.engine.threshold_curve import threshold_curve
from er_framework.errors import InputError, Problem
from er_framework.evaluate.metrics import evaluate
from er_framework.evaluate.truth import Truth, load_truth
from er_framework.io.labels_file import labels_header, read_labels_file
from er_framework.io.output_read import find_table, read_output_columns
from er_framework.io.outputs import read_report

__all__ = ["candidate_truth", "is_labels_file", "labelled_values", "truth_curve"]

_CANDIDATE_COLUMNS = ("left_source", "left_id", "right_source", "right_id", "score")


def _candidates_file(out: Path) -> Path:
    found = find_table(out, "candidates")
    if found is None:
        raise InputError(
            Problem(
                where=str(out),
                message="no candidates.csv (or .parquet) in the output folder: the threshold curve needs every candidate's score",
                fix="run the job with output: {candidates: true} (it writes every candidate pair and its score), then er report --truth",
            )
        )
    return found


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


def is_labels_file(path: str | Path) -> bool:
    """Whether ``path`` is a labels file (its header names ``left_source … match``), not a truth file."""
    try:
        with Path(path).open("rb") as fh:
            return labels_header(fh.read(1 << 16)) is not None
    except OSError:
        return False  # (load_truth says what is wrong with the path)


def labelled_values(
    cols: dict[str, list[Any]], values: npt.NDArray[np.float64], path: Path
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Each labelled pair's candidate value (-inf: no candidate, never kept) and label, the rows without a
    label skipped; an unreadable label is an input error naming its line."""
    where = {}
    for k, key in enumerate(zip(cols["left_source"], cols["left_id"], cols["right_source"], cols["right_id"])):
        where[tuple(map(str, key))] = k
        where[(str(key[2]), str(key[3]), str(key[0]), str(key[1]))] = k
    found: list[float] = []
    match: list[bool] = []
    labels = read_labels_file(path, fix="pass a labels file er review wrote, or a truth file of pairs or clusters")
    for line, row in zip(labels.lines, labels.records()):
        word = str(row.get("match") or "").strip().lower()
        if not word:
            continue
        if word not in MATCH_WORDS and word not in NON_MATCH_WORDS:
            raise InputError(
                Problem(where=f"{path}:{line}", path="match", message="the label is neither a match nor a non-match", fix="write 1 or 0")
            )
        at = where.get((row["left_source"], row["left_id"], row["right_source"], row["right_id"]))
        found.append(-np.inf if at is None else float(values[at]))
        match.append(word in MATCH_WORDS)
    return np.array(found, dtype=np.float64), np.array(match, dtype=bool)


def _read_candidates(out: Path) -> tuple[Path, dict[str, list[Any]], npt.NDArray[np.float64]]:
    path = _candidates_file(out)
    raw = read_output_columns(path, _CANDIDATE_COLUMNS)
    cols = {k: raw[k].to_pylist() for k in _CANDIDATE_COLUMNS}
    scores = np.array([float(s) if s not in (None, "") else np.nan for s in cols["score"]], dtype=np.float64)
    return path, cols, scores


def truth_curve(out_dir: str | Path, truth: Truth | str | Path, **truth_options: Any) -> dict[str, Any]:
    """report.json's ``threshold_curve`` of the run in ``out_dir`` against ``truth`` (a :class:`Truth`, a truth
    file read with ``truth_options`` as :func:`load_truth` takes them, or a labels file: see the module)."""
    out = Path(out_dir)
    report = read_report(out)
    threshold = float((report.get("threshold") or {}).get("value", (report.get("scores") or {}).get("threshold", 0.5)))
    bits = isinstance((report.get("scores") or {}).get("weights"), dict)
    scale, t = ("bits", weight_of_threshold(threshold)) if bits else ("score", threshold)
    if not isinstance(truth, Truth) and is_labels_file(truth):
        path, cols, scores = _read_candidates(out)
        vals, match = labelled_values(cols, logit2(scores) if bits else scores, Path(truth))
        over = (
            f"the {len(vals):,} labelled pairs of {truth} only ({int(np.isinf(vals).sum()):,} of them no candidate, never kept): "
            "precision and recall among labelled pairs, not over the whole data"
        )
        return threshold_curve(vals, match, int(match.sum()), t, scale=scale, over=over)
    if not isinstance(truth, Truth):
        truth = load_truth(truth, **truth_options)
    metrics = evaluate(out, truth)  # the true pairs, counted as er evaluate counts them (and the outputs checked)
    n_true = int(metrics["truth"]["true_pairs"])
    path, cols, scores = _read_candidates(out)
    flags = candidate_truth(cols, truth)
    over = f"every candidate pair of {path.name} ({len(scores):,}) against {truth.path} ({n_true:,} true pairs)"
    clipped = int(np.count_nonzero(scores >= 1.0)) if bits else 0
    if clipped:
        over += f"; {clipped:,} probabilities written as 1 are read as {WEIGHT_CLIP_HIGH:g} bits (their weight is not in the file)"
    return threshold_curve(logit2(scores) if bits else scores, flags, n_true, t, scale=scale, over=over)
