"""The parameters of the ``fellegi_sunter`` verifier (:mod:`er_plugins.fellegi_sunter`): the compared fields
(:class:`FSField`: a comparison cut into levels, or a ladder of rules; term frequencies) and the verifier's
settings (:class:`FellegiSunterParams`: EM, random pairs, training sessions, labels, dependence).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from er_framework.components import FieldRef, Params
from er_plugins.comparisons import Rule, check_ladder, ladder_text
from er_plugins.record_columns import SCORERS, Scorer, field_columns, field_label

__all__ = [
    "EQUAL_AT_100",
    "FS_FIELDS_EXAMPLE",
    "LABELS_INTERCEPT_SCALE",
    "LABELS_PRIOR_SCALE",
    "TEXT_RULES",
    "TF_DEFAULT_SCORERS",
    "FSField",
    "FellegiSunterParams",
]

#: scorers that give 100 to equal values only: their level ">= 100" is equality, open to term frequencies
EQUAL_AT_100 = frozenset({"exact", "digits", "jaro_winkler", "levenshtein", "ratio"})
#: fields whose exact agreements are adjusted by term frequency unless the job says otherwise (names:
#: common names collide among non-matches far more than rare ones)
TF_DEFAULT_SCORERS = frozenset({"jaro_winkler", "phonetic"})
#: ladder rules comparing the text itself (a ladder of these starting with exact: level 0 is equal text)
TEXT_RULES = frozenset({"exact", "phonetic", "swapped", *SCORERS})


class FSField(Params):
    field: FieldRef | list[FieldRef] = Field(description="a column, or several joined by one space (missing parts skipped)")
    name: str | None = Field(default=None, description="label in the report (default: the columns joined by '+')")
    comparison: Scorer = Field(
        default="jaro_winkler", description="similarity 0..100 cut into levels (scorers as field_score); not with ladder"
    )
    last_digits: int | None = Field(
        default=None, ge=1, description="comparison digits only: compare the last N digits (10 drops a +1 country code)"
    )
    levels: list[float] | None = Field(
        default=None,
        description="strictly decreasing thresholds in (0, 100]: level k = similarity >= levels[k] (first that holds), "
        "then an 'else' level; missing is separate. Default [100, 90, 75]; exact/digits: [100]",
    )
    ladder: list[Rule] | None = Field(
        default=None,
        description="instead of comparison + levels: rules, level k = the first that holds, then 'else' (missing "
        "separate): exact; {comparison: jaro_winkler (or ratio, levenshtein, token_set_ratio ...), at_least: 92}; "
        "{comparison: phonetic, algorithm: metaphone | soundex | nysiis | match_rating_codex}; "
        "{comparison: swapped, with: COLUMN}; numbers: {comparison: difference | relative_difference, at_most: X}; "
        "dates (one column YYYY-MM-DD / YYYYMMDD, or [year, month, day]): {comparison: date_difference, at_most: N, "
        "unit: days | months | years}, transposed_day_month; lists: {comparison: jaccard, at_least: 0.5}, "
        "{comparison: overlap, at_least: 1}",
    )
    delimiter: str | None = Field(
        default=None, description="ladder list rules (jaccard, overlap): separator of a value that is not JSON list text; default ';'"
    )

    term_frequency: bool | None = Field(
        default=None,
        description="adjust an exact agreement by how common the value is (Splink's term-frequency adjustment: "
        "weight log2(m / p_v) for value v of share p_v among the records, so 'smith' = 'smith' weighs less than "
        "'zbigniew' = 'zbigniew'); default: on for jaro_winkler fields whose first level is exact (names)",
    )

    @model_validator(mode="after")
    def _check(self) -> FSField:
        if isinstance(self.field, list) and (not self.field or len(set(self.field)) != len(self.field)):
            raise ValueError("field must be a column name or a non-empty list of distinct column names")
        if self.ladder is not None:
            given = sorted({"comparison", "levels", "last_digits"} & self.model_fields_set)
            if given:
                raise ValueError(f"set either ladder or {' / '.join(given)}, not both (a ladder rule names its own comparison)")
            check_ladder(self.ladder, field_columns(self.field), self.delimiter)
            if self.term_frequency and not self.tf_capable:
                raise ValueError("term_frequency adjusts exact agreements: a ladder needs exact first and text rules only")
            return self
        if self.delimiter is not None:
            raise ValueError("delimiter is used only by a ladder with jaccard or overlap rules")
        if self.last_digits is not None and self.comparison != "digits":
            raise ValueError("last_digits is used only with comparison: digits")
        self._check_levels()
        if self.term_frequency and not self.tf_capable:
            raise ValueError(
                f"term_frequency adjusts exact agreements: it needs a first level of 100 and a comparison of "
                f"{sorted(EQUAL_AT_100)} (comparison {self.comparison!r}, levels {self.thresholds})"
            )
        return self

    def _check_levels(self) -> None:
        lv = self.levels
        if lv is not None:
            if not lv or any(not (0.0 < x <= 100.0) for x in lv) or any(a <= b for a, b in zip(lv, lv[1:])):
                raise ValueError(f"levels must be strictly decreasing thresholds in (0, 100], got {lv}")
            if self.comparison in ("exact", "digits") and lv != [100.0]:
                raise ValueError(f"comparison {self.comparison!r} scores 0 or 100: levels must be [100]")

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        # a field without a ladder dumps as before the ladders; one with a ladder without comparison / levels
        out = handler(self)
        if isinstance(out, dict):
            drop = ("ladder", "delimiter") if self.ladder is None else ("comparison", "levels", "last_digits")
            out = {k: v for k, v in out.items() if k not in drop and not (k in ("delimiter", "term_frequency") and v is None)}
        return out

    @property
    def label(self) -> str:
        return field_label(self.field, self.name)

    @property
    def thresholds(self) -> list[float]:
        """The similarity thresholds of a ``comparison`` + ``levels`` field (ValueError for a ladder field)."""
        if self.ladder is not None:
            raise ValueError(f"field {self.label!r} has a ladder, not similarity thresholds")
        if self.levels is not None:
            return list(self.levels)
        return [100.0] if self.comparison in ("exact", "digits") else [100.0, 90.0, 75.0]

    @property
    def tf_capable(self) -> bool:
        """Level 0 is equality of the compared values (a first level of 100 with a scorer giving 100 only to
        equal values): a term-frequency adjustment applies to it."""
        if self.ladder is not None:  # a ladder of text rules starting with exact: equal texts
            return self.ladder[0].comparison == "exact" and all(r.comparison in TEXT_RULES for r in self.ladder)
        return self.thresholds[0] >= 100.0 and self.comparison in EQUAL_AT_100

    @property
    def tf(self) -> bool:
        """Whether the field's exact agreements are adjusted by the value's frequency."""
        if self.term_frequency is None:
            used = {self.comparison} if self.ladder is None else {r.comparison for r in self.ladder}
            return self.tf_capable and bool(used & TF_DEFAULT_SCORERS)
        return self.term_frequency

    @property
    def n_levels(self) -> int:
        """Agreement levels of the field (the last is 'else'; missing is not one of them)."""
        if self.ladder is not None:
            return len(self.ladder) + 1
        return len(self.thresholds) + 1

    def level_names(self) -> list[str]:
        if self.ladder is not None:
            return [r.label for r in self.ladder] + ["else"]
        t = self.thresholds
        names = ["=100" if x >= 100.0 else f">={x:g}" for x in t]
        return names + [f"<{t[-1]:g}"]

    @property
    def comparison_text(self) -> str:
        """The comparison in the report: the scorer's name, or the ladder in one line."""
        return self.comparison if self.ladder is None else ladder_text(self.ladder)


#: ``labels_prior_scale`` / ``labels_intercept_scale`` defaults: chosen on Febrl4 labels only
#: (benchmarks/bench_labels_refine.py); persons and inventors are the held-out measurement
LABELS_PRIOR_SCALE = 0.25
LABELS_INTERCEPT_SCALE = 4.0

#: an example of ``fields:`` (customer records), shown when a job leaves ``fields:`` out: the fields a
#: verifier compares are the job's own choice, never a default (a default naming columns the job does not
#: read gave one error per column the user never wrote)
FS_FIELDS_EXAMPLE: list[dict[str, Any]] = [
    {"field": "first_name", "comparison": "jaro_winkler", "levels": [100, 92, 80]},
    {"field": "last_name", "comparison": "jaro_winkler", "levels": [100, 92, 80]},
    # one field: a move changes all three together, and as three fields they would break the
    # model's conditional independence and count a move three times (see FellegiSunter)
    {"field": ["address", "city", "zip"], "name": "location", "comparison": "ratio", "levels": [100, 85, 70]},
    {"field": "phone", "comparison": "digits", "last_digits": 10},
    {"field": "dob", "comparison": "levenshtein", "levels": [100, 80]},
]


class FellegiSunterParams(Params):
    fields: list[FSField] = Field(
        min_length=1,
        examples=[FS_FIELDS_EXAMPLE],
        description="compared fields and their agreement levels (required: one entry per field to compare, e.g. "
        "{field: last_name, comparison: jaro_winkler, levels: [100, 92, 80]}; several columns compared as one: "
        "{field: [address, city, zip], name: location, comparison: ratio})",
    )
    threshold: float | None = Field(
        default=None, gt=0.0, le=1.0, description="keep pairs with match probability >= threshold (default: the job threshold)"
    )
    max_iter: int = Field(default=500, ge=1, le=100000, description="EM iterations at most")
    tol: float = Field(default=1e-7, ge=0.0, description="EM stops when no parameter (lambda, m, u) moves by more than tol")
    prior: float | None = Field(
        default=None,
        gt=0.0,
        lt=1.0,
        description="initial lambda = P(match) among the candidates (default: from the initial m and u, see docs)",
    )
    smoothing: float = Field(
        default=1.0,
        ge=0.0,
        description="pseudo-pairs added to every level of every field in both classes in EM's M-step "
        "(a level never seen in a class keeps a moderate weight); 0: maximum likelihood",
    )
    u_from_random_pairs: int = Field(
        default=20000,
        ge=0,
        description="random record pairs (cross-source in link mode) whose level frequencies estimate u; 0: none. "
        "Without fix_u they only initialise EM, which re-estimates u (20,000 and 100,000 gave the same pairs "
        "on the 100k-customer benchmark); raise it with fix_u",
    )
    fix_u: bool = Field(
        default=False,
        description="hold u at the random-pair estimate (EM fits lambda and m only); default: it only initialises u",
    )
    monotone: bool = Field(
        default=True,
        description="every field's match weight log2(m/u) non-increasing from the closest level to the last "
        "(EM's M-step is the maximum likelihood under that order: pool adjacent violators); false: unconstrained EM",
    )
    labels_fit: Literal["refine", "em", "labels"] = Field(
        default="refine",
        description="with the job's training labels: refine - the model fitted as without labels, then a Bayesian "
        "logistic regression on the labelled pairs rescales each field's weights (beta, prior mean 1) and adds a "
        "correction in bits (b0, prior mean 0); em - EM on the candidates started from the labels' m and u, every "
        "labelled pair held at its label (semi-supervised); labels - m and u from the labelled pairs alone (their "
        "level frequencies), only lambda fitted. fix_u and prior are not used with em or labels",
    )
    labels_prior_scale: float = Field(
        default=LABELS_PRIOR_SCALE,
        gt=0.0,
        le=100.0,
        description="labels_fit: refine - standard deviation of the Gaussian prior of every field's beta around 1 "
        "(smaller: the labels move the weights less)",
    )
    labels_intercept_scale: float = Field(
        default=LABELS_INTERCEPT_SCALE,
        gt=0.0,
        le=1000.0,
        description="labels_fit: refine - standard deviation (bits) of the Gaussian prior of the labels' correction b0 around 0",
    )
    seed: int | None = Field(default=None, ge=0, description="seed of the random pairs (default: the job seed)")
    estimation: Literal["sessions", "em"] = Field(
        default="sessions",
        description="without labels: sessions - u from the random pairs (held), m by EM in training sessions "
        "(the candidates agreeing on a blocking key's fields estimate the other fields), lambda = P(match) of two "
        "records over every record pair; em - the former unsupervised EM of lambda, m and u on the candidates",
    )
    dependence: bool = Field(
        default=True,
        description="count dependent exact agreements once: two fields compared exactly that agree together among "
        "random records more often than independence says (a zip and its city; an address, its zip and city; a "
        "household's surname and address) have the joint chance of agreeing in place of the product (measured on "
        "the records; kernels/dependence.py); false: the fields independent",
    )
    sessions: list[list[str]] | None = Field(
        default=None,
        description="training sessions: each a list of fields (labels or columns) the session's pairs agree on "
        "(level 0); default: one per exact blocking key of the job (field_hash keys)",
    )

    @model_validator(mode="after")
    def _check(self) -> FellegiSunterParams:
        labels = [r.label for r in self.fields]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"field labels must be unique; repeated: {dup} (set 'name' to tell them apart)")
        if self.fix_u and self.u_from_random_pairs == 0:
            raise ValueError("fix_u needs u_from_random_pairs > 0")
        if self.estimation == "sessions" and self.u_from_random_pairs == 0:
            raise ValueError("estimation: sessions estimates u from random pairs: set u_from_random_pairs > 0 (or estimation: em)")
        known = set(labels) | {c for r in self.fields for c in field_columns(r.field)}
        for i, sess in enumerate(self.sessions or []):
            bad = [x for x in sess if x not in known]
            if not sess or bad:
                raise ValueError(f"sessions[{i}]: {bad or 'empty'} - a session lists compared fields (labels or columns): {sorted(known)}")
        return self
