"""Why a pair scored what it scored: the waterfall of its terms.

One place turns a verifier's comparisons (:meth:`er_framework.components.Verifier.comparisons`)
of one pair into an :class:`Explanation`: ``Result.explain`` from Python, ``er explain`` on a
finished run and the borderline pairs of the report all read it.

For Fellegi-Sunter the terms are bits: the prior log2(lambda / (1 - lambda)) plus, per field,
log2(m / u) of the pair's comparison level (0 when a side is missing) make the match weight
w, and the score is the match probability 2**w / (1 + 2**w). For ``field_score`` the points of
the fields add up to the score; for set verifiers the shared and differing tokens give
Jaccard = shared / (shared + left only + right only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Explainable, has
from er_framework.config.resolve import Job
from er_framework.data import Pairs, Records
from er_framework.engine.engine import Engine
from er_framework.engine.model import Model
from er_framework.engine.stages.exact import exact_keys
from er_framework.engine.stages.reading import normalize, read
from er_framework.errors import InputError, Problem

__all__ = ["BORDERLINE", "Explanation", "FieldTerm", "explain_run", "explanation", "find_record", "row_of_terms"]

#: pairs listed on each side of the threshold by the review (report.json ``review``, ``er review``)
BORDERLINE = 10


@dataclass
class FieldTerm:
    """One field's part of a pair's score."""

    name: str
    left: str | None  # the values as compared (after normalize:)
    right: str | None
    level: str | None = None  # the comparison level's name (Fellegi-Sunter)
    similarity: float | None = None  # 0..100
    weight: float | None = None  # bits (Fellegi-Sunter) or points (field_score)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class Explanation:
    """The terms of one pair's score; ``str()`` is the waterfall ``er explain`` prints."""

    left: tuple[str, str]  # (source, id)
    right: tuple[str, str]
    score: float
    threshold: float
    kind: str  # "weights" (bits), "points", "sets", "exact" (copies of one text) or "score" (no terms)
    verifier: str
    fields: list[FieldTerm] = field(default_factory=list)
    prior_weight: float | None = None
    match_weight: float | None = None
    tokens: dict[str, int] = field(default_factory=dict)  # sets: shared, left_only, right_only

    @property
    def verified(self) -> bool:
        return bool(self.score >= self.threshold)

    def total(self) -> float:
        """The terms summed: the match weight in bits, the points, or Jaccard from the token counts."""
        if self.kind == "weights":
            return float((self.prior_weight or 0.0) + sum(f.weight or 0.0 for f in self.fields))
        if self.kind == "points":
            return float(sum(f.weight or 0.0 for f in self.fields))
        if self.kind == "sets":
            union = self.tokens["shared"] + self.tokens["left_only"] + self.tokens["right_only"]
            return self.tokens["shared"] / union if union else 0.0
        return self.score

    def to_json(self) -> dict[str, Any]:
        return {
            "left": {"source": self.left[0], "id": self.left[1]},
            "right": {"source": self.right[0], "id": self.right[1]},
            "score": self.score,
            "threshold": self.threshold,
            "verified": self.verified,
            "kind": self.kind,
            "verifier": self.verifier,
            "prior_weight": self.prior_weight,
            "match_weight": self.match_weight,
            "fields": [f.to_json() for f in self.fields],
            "tokens": self.tokens,
        }

    def __str__(self) -> str:
        head = f"{self.left[0]} {self.left[1]}  vs  {self.right[0]} {self.right[1]}  ({self.verifier})"
        lines = [head]
        width = max([len(f.name) for f in self.fields] + [12])
        vw = 28
        if self.kind == "weights":
            lam = 1.0 / (1.0 + 2.0 ** -(self.prior_weight or 0.0))
            lines.append(
                f"  {'prior':<{width}}  {'':<{vw}}  {'':<{vw}}  {'':<10} {self.prior_weight:+8.2f} bits"
                f"   (P(match) among candidates {lam:.4g})"
            )
            for f in self.fields:
                lines.append(
                    f"  {f.name:<{width}}  {_cell(f.left, vw)}  {_cell(f.right, vw)}  {(f.level or ''):<10} {(f.weight or 0.0):+8.2f} bits"
                )
            total = self.total()
            lines.append(f"  {'total':<{width}}  {'':<{vw}}  {'':<{vw}}  {'':<10} {total:+8.2f} bits  -> probability {_prob(total):.6f}")
        elif self.kind == "points":
            for f in self.fields:
                sim = "missing" if f.similarity is None or math.isnan(f.similarity) else f"{f.similarity:6.1f}"
                lines.append(
                    f"  {f.name:<{width}}  {_cell(f.left, vw)}  {_cell(f.right, vw)}  similarity {sim:>7}  {(f.weight or 0.0):+9.2f} points"
                )
            lines.append(f"  {'total':<{width}}  {'':<{vw}}  {'':<{vw}}  {'':<18}  {self.total():+9.2f} points")
        elif self.kind == "sets":
            t = self.tokens
            union = t["shared"] + t["left_only"] + t["right_only"]

            def share(x: int) -> str:
                return f"{x / union:.1%}" if union else "-"

            lines.append(f"  shingles shared     {t['shared']:>9,}  ({share(t['shared'])} of the union)")
            lines.append(f"  only on the left    {t['left_only']:>9,}  ({share(t['left_only'])})")
            lines.append(f"  only on the right   {t['right_only']:>9,}  ({share(t['right_only'])})")
            lines.append(f"  Jaccard = shared / union = {t['shared']:,} / {union:,} = {self.total():.6f}")
        elif self.kind == "exact":
            lines.append("  exact copies: the same text after the exact-duplicate stage's normalization (score 1.0)")
        side = "at or above" if self.verified else "below"
        lines.append(f"  score {self.score:.6f}  {side} the threshold {self.threshold:g}")
        return "\n".join(lines)


def _prob(weight: float) -> float:
    return 1.0 / (1.0 + 2.0**-weight) if weight > -1000 else 0.0


def _cell(value: str | None, width: int) -> str:
    text = "(missing)" if value is None else " ".join(str(value).split())
    return (text[: width - 1] + "…") if len(text) > width else f"{text:<{width}}"


def row_of_terms(columns: dict[str, npt.NDArray[Any]], i: int) -> dict[str, Any]:
    """Row ``i`` of a verifier's comparisons as plain Python values (JSON-ready; NaN -> None)."""
    out: dict[str, Any] = {}
    for name, col in columns.items():
        v = col[i]
        if isinstance(v, (np.floating, float)):
            out[name] = None if math.isnan(float(v)) else float(v)
        elif isinstance(v, (np.integer, int)):
            out[name] = int(v)
        else:
            out[name] = v
    return out


def explanation(
    records: Records,
    left: int,
    right: int,
    terms: dict[str, Any],
    described: dict[str, Any],
    threshold: float,
    *,
    exact_copies: bool = False,
) -> Explanation:
    """The :class:`Explanation` of the pair ``(left, right)`` of ``records`` (the values as compared) from one
    row of its comparisons (``terms``, :func:`row_of_terms`) and the verifier's report section (``described``)."""
    names, ids, src = records.source_names, records.ids, records.source
    lk = (names[int(src[left])], str(ids[left]))
    rk = (names[int(src[right])], str(ids[right]))
    verifier = str(described.get("name") or described.get("type") or "verifier")
    if exact_copies:
        return Explanation(lk, rk, 1.0, threshold, "exact", verifier)
    score = float(terms.get("score", float("nan")))
    per_field = described.get("per_field") or {}
    fields: list[FieldTerm] = []
    for label in _labels(terms):
        info = per_field.get(label, {})
        cols = info.get("columns") or [label]
        lv = _joined(records, cols, left), _joined(records, cols, right)
        term = FieldTerm(label, lv[0], lv[1])
        if f"level_{label}" in terms:
            k = int(terms[f"level_{label}"])
            levels = info.get("levels") or []
            term.level = "missing" if k < 0 else (levels[k] if k < len(levels) else str(k))
        if f"similarity_{label}" in terms:
            term.similarity = terms[f"similarity_{label}"]
        if f"weight_{label}" in terms:
            term.weight = float(terms[f"weight_{label}"] or 0.0)
        elif f"points_{label}" in terms:
            term.weight = float(terms[f"points_{label}"] or 0.0)
        fields.append(term)
    if "prior_weight" in terms:
        return Explanation(
            lk,
            rk,
            score,
            threshold,
            "weights",
            verifier,
            fields,
            prior_weight=float(terms["prior_weight"]),
            match_weight=float(terms["match_weight"]),
        )
    if any(f"points_{f.name}" in terms for f in fields):
        return Explanation(lk, rk, score, threshold, "points", verifier, fields)
    if "shared" in terms:
        return Explanation(
            lk, rk, score, threshold, "sets", verifier, tokens={k: int(terms[k]) for k in ("shared", "left_only", "right_only")}
        )
    return Explanation(lk, rk, score, threshold, "score", verifier)


def _labels(terms: dict[str, Any]) -> list[str]:
    """The field labels of a comparisons row, in column order."""
    out: list[str] = []
    for name in terms:
        for prefix in ("level_", "similarity_", "weight_", "points_"):
            if name.startswith(prefix) and name != "prior_weight" and name[len(prefix) :] not in out:
                out.append(name[len(prefix) :])
    return out


def _joined(records: Records, columns: list[str], row: int) -> str | None:
    """The values of ``columns`` of one record joined by a space (missing parts skipped); None when all missing."""
    parts = [records.fields[c][row] for c in columns if c in records.fields]
    present = [str(p) for p in parts if p is not None and str(p) != ""]
    return " ".join(present) if present else None


# ------------------------------------------------------------------ a finished run's pair


def find_record(records: Records, record_id: str, source: str | None, where: str) -> int:
    """The index of the record ``record_id`` (of ``source`` when given); an input error naming what is
    missing or ambiguous."""
    names = records.source_names
    if source is not None and source not in names:
        raise InputError(Problem(where=where, message=f"no source {source!r}", fix=f"sources: {', '.join(names)}"))
    hits = [i for i, x in enumerate(records.ids) if x == str(record_id) and (source is None or names[int(records.source[i])] == source)]
    if not hits:
        raise InputError(
            Problem(
                where=where,
                message=f"no record {record_id!r}" + (f" in source {source!r}" if source else ""),
                fix="give the id of a record of the job (as in pairs.csv)",
            )
        )
    if len(hits) > 1:
        raise InputError(
            Problem(
                where=where,
                message=f"the id {record_id!r} is in several sources ({', '.join(sorted({names[int(records.source[i])] for i in hits}))})",
                fix="name the source of each side (--left-source / --right-source)",
            )
        )
    return hits[0]


def explain_run(
    job: Job,
    report: dict[str, Any],
    left: tuple[str | None, str],
    right: tuple[str | None, str],
    model: Model | None = None,
) -> tuple[Explanation, list[str]]:
    """The explanation of one pair of a finished run (``er explain``): the records read and normalized
    again through the job, the run's model applied (its model.json: the verifier's fitted state and the
    pruned shingles; no refit), the pair compared. Returns it with notes on what may differ from the run
    (``(source, id)`` per side; a source of None: any)."""
    notes: list[str] = []
    records, _stats = read(job)
    records, _norm = normalize(job, records, job.context.workers)
    a = find_record(records, left[1], left[0], "--left")
    b = find_record(records, right[1], right[0], "--right")
    engine = Engine(job, model)
    described = dict(report.get("verifier") or {})
    described.setdefault("name", engine.verifier.name)
    threshold = float((report.get("threshold") or {}).get("value", engine.threshold))
    if engine.collapse:
        keys, nonempty = exact_keys(records.take(np.array([a, b], dtype=np.int64)), job.exact.normalize)
        if nonempty.all() and keys[0] == keys[1]:
            return explanation(records, a, b, {}, described, threshold, exact_copies=True), notes
    if not has(engine.verifier, Explainable):
        raise InputError(
            Problem(
                where=str(job.config_path),
                path="verifier",
                message=f"verifier {engine.verifier.name!r} cannot break its scores into terms",
                fix="er plugins lists the verifiers; jaccard, field_score and fellegi_sunter can",
            )
        )
    if engine.learns() and engine.verifier_state() is None:
        raise InputError(
            Problem(
                where=str(report.get("outputs_dir", job.config_path)),
                message=f"verifier {engine.verifier.name!r} explains a score with the run's fitted "
                "model, and the run folder holds no model.json (written by an older er)",
                fix="run the job again (er run writes model.json), then er explain",
            )
        )
    if job.spec.prune_shingles is not None and engine.model.pruned is None:
        notes.append(
            "the job prunes shingles by corpus frequency (prune_shingles) and the run folder holds no "
            "model.json with the dropped shingles, so these counts include them and may differ from the run's"
        )
    pair = records.take(np.array([a, b], dtype=np.int64))
    batch = engine.batch(pair, tokens="tokens" in engine.verifier.needs, signatures=False)
    terms = engine.comparisons(batch, Pairs(np.array([0]), np.array([1])))
    return explanation(pair, 0, 1, row_of_terms(terms, 0), described, threshold), notes
