"""The ``field_score`` verifier: a weighted sum of per-field similarities, 100 per field (SEEDS §5).

Registered by :mod:`er_plugins.records_scoring` (the scorers and the field syntax are described there);
the fields are compared by :class:`er_plugins.record_columns.FieldColumn`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from er_framework.capabilities import Explainable, Scored, ScoreReporting
from er_framework.components import Context, FieldRef, Params, Verifier
from er_framework.data import Batch, Pairs
from er_plugins.record_columns import FieldColumn, Scorer, field_columns, field_label, pair_chunks, rows_of

__all__ = [
    "FieldRule",
    "FieldScoreParams",
    "FieldScore",
]


# ---------------------------------------------------------------------------
# field_score


class FieldRule(Params):
    field: FieldRef | list[FieldRef] = Field(description="a column, or several joined by one space (missing parts skipped)")
    name: str | None = Field(default=None, description="label in the report (default: the columns joined by '+')")
    scorer: Scorer = Field(default="ratio", description="comparison, 0..100 (see the module docstring)")
    weight: float = Field(default=1.0, gt=0.0, description="the field contributes at most 100 * weight")
    missing: Literal["neutral", "penalize", "zero"] = Field(
        default="neutral",
        description="neutral: left out, total rescaled to the full scale; zero: contributes 0; "
        "penalize: contributes missing_score * weight",
    )
    missing_score: float = Field(
        default=0.0, ge=-100.0, le=100.0, description="with missing: penalize, the field's score (0..100 scale, may be negative)"
    )
    last_digits: int | None = Field(
        default=None, ge=1, description="scorer digits only: compare the last N digits (10 drops a +1 country code)"
    )

    @model_validator(mode="after")
    def _check(self) -> FieldRule:
        if isinstance(self.field, list) and (not self.field or len(set(self.field)) != len(self.field)):
            raise ValueError("field must be a column name or a non-empty list of distinct column names")
        if self.last_digits is not None and self.scorer != "digits":
            raise ValueError("last_digits is used only with scorer: digits")
        if self.missing_score != 0.0 and self.missing != "penalize":
            raise ValueError("missing_score is used only with missing: penalize")
        return self

    @property
    def label(self) -> str:
        return field_label(self.field, self.name)


#: an example of ``fields:`` (customer records), shown when a job leaves ``fields:`` out: the fields a
#: verifier compares are the job's own choice, never a default
FIELD_RULES_EXAMPLE: list[dict[str, Any]] = [
    {"field": ["first_name", "last_name"], "name": "name", "scorer": "token_sort_ratio"},
    {"field": "address", "scorer": "ratio"},
    {"field": "phone", "scorer": "digits", "last_digits": 10},
]


class FieldScoreParams(Params):
    fields: list[FieldRule] = Field(
        min_length=1,
        examples=[FIELD_RULES_EXAMPLE],
        description="compared fields (required), e.g. {field: [first_name, last_name], name: name, scorer: token_sort_ratio}, "
        "{field: address, scorer: ratio}, {field: phone, scorer: digits, last_digits: 10}",
    )
    threshold: float | None = Field(
        default=None,
        description="keep pairs whose total >= threshold, on the total scale 0 .. 100 * sum(weights) "
        "(300 with three fields of weight 1); required: the job's top-level fraction is not used",
    )

    @model_validator(mode="after")
    def _unique(self) -> FieldScoreParams:
        labels = [r.label for r in self.fields]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"field labels must be unique; repeated: {dup} (set 'name' to tell them apart)")
        return self

    @property
    def scale(self) -> float:
        return 100.0 * sum(r.weight for r in self.fields)


class FieldScore(ScoreReporting, Explainable, Verifier[FieldScoreParams]):
    """Weighted sum of per-field similarities, 100 per field (SEEDS §5: a pair scores out of 300).

    Field f with weight w_f and similarity s_f in 0..100 contributes
    w_f * s_f. When the field is missing in a pair (either side):

    * ``neutral`` - the field is left out and the total is rescaled to the full
      scale: total = (sum of the kept contributions) * W / W_kept, where W is
      the sum of all weights and W_kept that of the kept fields (present ones
      and missing ones in ``zero``/``penalize`` mode). Equivalently the field
      gets the weighted mean score of the kept fields. A pair with every
      field missing and neutral scores 0.
    * ``zero`` - contributes 0 (as if the values were completely different).
    * ``penalize`` - contributes ``missing_score * weight`` (``missing_score`` in
      -100..100, default 0 = the same as ``zero``; e.g. 50 for "half credit", a
      negative value pulls the total below a total disagreement).

    The threshold is on the total (0 .. 100 * W) and must be set on the
    verifier: the job's top-level threshold is a fraction in (0, 1] and
    is ignored here. No default: SEEDS §5 gives two example totals (about 290
    for a misspelt name, 240 for very different names) but not where the cut
    lies for a given data set. With three fields (e.g. name, address, phone), 200 means "two of the
    three fields' worth of agreement"; on generated customers (20,000 per
    company, truth pairs plus 200,000 random pairs) F1 is 0.992 / 0.995 /
    0.985 / 0.965 / 0.930 at 160 / 180 / 200 / 220 / 240.
    """

    name = "field_score"
    summary = "weighted sum of field similarities (rapidfuzz), 100 per field; threshold on the total (e.g. out of 300)"
    Params = FieldScoreParams
    needs = frozenset({"fields"})

    @classmethod
    def check(cls, params: FieldScoreParams, context: Context) -> list[str]:
        scale = params.scale
        t = params.threshold
        if t is None:
            return [
                f"field_score needs verifier.threshold on its total scale 0..{scale:g} (e.g. {0.8 * scale:g}); "
                "the top-level threshold is a fraction and is not used"
            ]
        if not t > 0:
            return [f"field_score threshold {t:g} must be above 0 and at most the highest possible total {scale:g} (e.g. {0.8 * scale:g})"]
        if t > scale:
            return [f"field_score threshold {t:g} exceeds the highest possible total {scale:g} (100 * sum of weights)"]
        if t <= 1.0 and scale >= 10.0:
            return [f"field_score threshold {t:g} looks like a fraction; it is on the total scale 0..{scale:g} (e.g. {t * scale:g})"]
        return []

    @property
    def threshold(self) -> float:
        p = self.params
        if p.threshold is None:
            raise ValueError(f"field_score has no threshold: set verifier.threshold on the scale 0..{p.scale:g}")
        return float(p.threshold)

    def field_scores(self, batch: Batch, pairs: Pairs) -> dict[str, npt.NDArray[np.float64]]:
        """Per-field similarity 0..100 of every pair (NaN: missing), keyed by field label."""
        rows = rows_of(len(batch.records), pairs.left, pairs.right)
        out: dict[str, npt.NDArray[np.float64]] = {}
        for r in self.params.fields:
            col = FieldColumn(batch.records, field_columns(r.field), r.scorer, rows, r.last_digits)
            s = np.empty(len(pairs))
            for a, b in pair_chunks(len(pairs)):
                s[a:b] = col.scores(pairs.left[a:b], pairs.right[a:b], self.context.workers)
            out[r.label] = s
        return out

    def comparisons(self, batch: Batch, pairs: Pairs, state: Mapping[str, Any] | None = None) -> dict[str, npt.NDArray[Any]]:
        """Per pair and field: ``similarity_<f>`` (0..100, NaN = missing) and ``points_<f>``, the field's share
        of the total in the total's unit; ``score`` = the total of :meth:`score` (the points sum to it).

        A kept field (present, or missing in ``zero`` / ``penalize`` mode) scores
        ``c_f = w_f * s_f`` (``w_f * missing_score`` or 0 when missing), and the total is
        ``sum c_f * W / W_kept`` (:class:`FieldScore`): so ``points_f = c_f * W / W_kept``; a missing
        ``neutral`` field gets 0 points (its weight is spread over the kept fields by the rescaling),
        and every field 0 when none is kept."""
        p = self.params
        sims = self.field_scores(batch, pairs)
        n = len(pairs)
        total_w = sum(r.weight for r in p.fields)
        contrib: list[npt.NDArray[np.float64]] = []
        kept_w = np.zeros(n)
        num = np.zeros(n)
        for r in p.fields:
            s = sims[r.label]
            miss = np.isnan(s)
            if r.missing == "neutral":
                c = np.where(miss, 0.0, s * r.weight)
                kept_w += np.where(miss, 0.0, r.weight)
            else:
                fill = r.missing_score if r.missing == "penalize" else 0.0
                c = np.where(miss, fill, s) * r.weight
                kept_w += r.weight
            num += c
            contrib.append(c)
        none_kept = kept_w == 0
        scale = np.where(none_kept, 0.0, total_w / np.where(none_kept, 1.0, kept_w))
        out: dict[str, npt.NDArray[Any]] = {}
        for r, c in zip(p.fields, contrib):
            out[f"similarity_{r.label}"] = sims[r.label]
            out[f"points_{r.label}"] = c * scale
        # the same expression as score(), so the column equals it exactly
        out["score"] = np.where(none_kept, 0.0, num * total_w / np.where(none_kept, 1.0, kept_w))
        return out

    def score_reported(self, batch: Batch, pairs: Pairs) -> Scored:
        """The totals of ``pairs`` and the report: per field its mean similarity, missing pairs and distinct values."""
        p = self.params
        n = len(pairs)
        rows = rows_of(len(batch.records), pairs.left, pairs.right)
        cols = [FieldColumn(batch.records, field_columns(r.field), r.scorer, rows, r.last_digits) for r in p.fields]
        total_w = sum(r.weight for r in p.fields)
        total = np.empty(n)
        sums = np.zeros(len(p.fields))
        present_n = np.zeros(len(p.fields), dtype=np.int64)
        missing_n = np.zeros(len(p.fields), dtype=np.int64)
        all_missing = 0
        for a, b in pair_chunks(n):
            num = np.zeros(b - a)
            kept_w = np.zeros(b - a)
            for j, (r, col) in enumerate(zip(p.fields, cols)):
                s = col.scores(pairs.left[a:b], pairs.right[a:b], self.context.workers)
                miss = np.isnan(s)
                missing_n[j] += int(miss.sum())
                present_n[j] += int((~miss).sum())
                sums[j] += float(s[~miss].sum())
                if r.missing == "neutral":
                    num += np.where(miss, 0.0, s * r.weight)
                    kept_w += np.where(miss, 0.0, r.weight)
                else:
                    fill = r.missing_score if r.missing == "penalize" else 0.0
                    num += np.where(miss, fill, s) * r.weight
                    kept_w += r.weight
            none_kept = kept_w == 0
            all_missing += int(none_kept.sum())
            total[a:b] = np.where(none_kept, 0.0, num * total_w / np.where(none_kept, 1.0, kept_w))
        t = p.threshold
        report: dict[str, Any] = {
            "scale": p.scale,
            "pairs_scored": int(n),
            "mean_total": round(float(total.mean()), 4) if n else None,
            "pairs_at_or_above_threshold": None if t is None else int((total >= t).sum()),
            "pairs_with_every_field_missing": all_missing,
            "per_field": {
                r.label: {
                    "columns": field_columns(r.field),
                    "scorer": r.scorer,
                    "weight": r.weight,
                    "missing_mode": r.missing,
                    "mean_score": round(float(sums[j] / present_n[j]), 4) if present_n[j] else None,
                    "missing_pairs": int(missing_n[j]),
                    "distinct_values": len(cols[j].dictionary),
                }
                for j, r in enumerate(p.fields)
            },
        }
        return Scored(total, report)
