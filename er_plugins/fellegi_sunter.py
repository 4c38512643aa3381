"""The ``fellegi_sunter`` verifier: unsupervised probabilistic record linkage (Fellegi & Sunter 1969).

The per-field similarities (:class:`er_plugins.record_columns.FieldColumn`) are cut into agreement
levels, a two-class latent model is fitted by EM on the counts of the candidates' comparison patterns
(:mod:`er_framework.kernels.em`), and each pair is scored with its posterior match probability.
Registered by :mod:`er_plugins.records_scoring` (the comparisons and the field syntax are described there).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from er_framework.capabilities import CodeFitted, Explainable, Fitted, LabelledCodes, Trainable
from er_framework.components import FieldRef, Params, Verifier
from er_framework.data import Batch, LabelledPairs, Pairs, pair_population
from er_framework.kernels.dependence import agreeing_pairs, combined_keys, dependence_correction, keyed_counts, merge_keyed, value_keys
from er_framework.kernels.em import (
    EPS,
    EMFit,
    SessionFit,
    count_codes,
    decode,
    fit_em,
    fit_session,
    floor_normalize,
    monotone_m_step,
    pattern_radix,
    population_lambda,
    sigmoid,
)
from er_framework.kernels.parallel import map_ordered
from er_framework.kernels.records_memory import release_free_memory
from er_plugins.comparisons import LadderColumn, Rule, check_ladder, ladder_text
from er_plugins.record_columns import SCORERS, FieldColumn, Scorer, field_columns, field_label, pair_chunks, rows_of

__all__ = [
    "FSField",
    "FellegiSunterParams",
    "FellegiSunter",
]


# ---------------------------------------------------------------------------
# fellegi_sunter

#: scorers that give 100 to equal values only: their level ">= 100" is equality, open to term frequencies
EQUAL_AT_100 = frozenset({"exact", "digits", "jaro_winkler", "levenshtein", "ratio"})
#: fields whose exact agreements are adjusted by term frequency unless the job says otherwise (names:
#: common names collide among non-matches far more than rare ones)
TF_DEFAULT_SCORERS = frozenset({"jaro_winkler", "phonetic"})
#: ladder rules comparing the text itself (a ladder of these starting with exact: level 0 is equal text)
TEXT_RULES = frozenset({"exact", "phonetic", "swapped", *SCORERS})

#: rounds of refitting the fields that only one-field sessions estimate (each round: lambda, then those
#: sessions' m with their share of matches held at what lambda and the other fields say)
SINGLE_SESSION_ROUNDS = 20

#: a dependence of two exact agreements among non-matches is used when at least this many non-matching
#: pairs agree on both (fewer: too little evidence of it)
DEPENDENCE_MIN_PAIRS = 10.0
#: ... between fields whose exact agreements are at most this share the independence fit's expected matches
#: (and leave at least twice DEPENDENCE_MIN_PAIRS non-matching pairs): a phone agrees almost only between
#: duplicates, and what is left of its pairs is too few and too uncertain to measure a dependence on
DEPENDENCE_MAX_MATCH_SHARE = 0.95
#: a candidate pattern with at least this match probability counts as matches only when the dependence is
#: measured (the rest of its posterior is no evidence of non-matching pairs)
DEPENDENCE_SURE = 0.99
#: rounds of finding the implied agreements and lambda together (the matches taken out are the fit's)
DEPENDENCE_ROUNDS = 4

#: a training session whose EM finds fewer matches than this is not used (its m would rest on a handful of pairs)
SESSION_MIN_MATCHES = 10.0


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
    labels_fit: Literal["em", "labels"] = Field(
        default="em",
        description="with the job's training labels: em - EM on the candidates started from the labels' m and u, "
        "every labelled pair held at its label (semi-supervised); labels - m and u from the labelled pairs alone "
        "(their level frequencies), only lambda fitted. fix_u and prior are not used with labels",
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


class FellegiSunter(Verifier[FellegiSunterParams], CodeFitted, Trainable, Explainable):
    """Unsupervised Fellegi-Sunter scoring on the candidates' comparison patterns.

    Default estimation (``estimation: sessions``, :meth:`fit_sessions`; docs/record-matching.md): u from
    random pairs, held; m by EM in training sessions (the candidates agreeing on a blocking key estimate the
    other fields); lambda over every record pair. Exact name agreements are adjusted by the value's
    frequency (:meth:`term_frequency_weights`) and dependent exact agreements are not counted twice
    (:meth:`dependence_of`). What follows describes the former EM (``estimation: em``) and what both share.

    Each field's similarity (0..100) is cut into levels by ``levels`` (e.g.
    [100, 90, 70]: exact / >= 90 / >= 70 / else), plus a *missing* level
    (either side missing) that is in neither m nor u and contributes weight 0.
    A two-class latent model with fields independent given the class is
    fitted by EM (:func:`fit_em`) on the counts of distinct patterns of the
    candidate pairs, so an iteration costs O(patterns), not O(pairs).

    u (level frequencies among non-matches): estimated from
    ``u_from_random_pairs`` random record pairs (in link mode pairs of
    different sources), which are almost all non-matches, with 0.5 added to
    every level count. By default this is only EM's *initial* u and EM
    re-estimates u on the candidates: the pairs being scored come from a
    blocker, and their non-matches agree on the blocked fields far more often
    than random pairs do (a pair blocked on phone shares the phone), so u of
    random pairs would overrate exactly those agreements. ``fix_u: true`` keeps
    the random-pair u (the classic "u from random sampling" estimate; right
    when the candidates are close to random pairs, or no field is blocked on);
    EM then fits lambda and m only. Without random pairs, u starts at
    ``8**(k - K + 1)`` (normalized) over the K levels of each field.

    EM's M-step adds ``smoothing`` (default 1) pseudo-pairs to every level
    of both classes: on the generated customers no true match falls in the
    location level ">= 70" (a move gives < 70, an abbreviation >= 85), and the
    maximum-likelihood m = 0 would make that level a -23 bit veto.

    Initial m: ``8**-k`` over the levels (normalized; most mass on level 0).
    Initial lambda: ``prior``, or else the mean posterior of the candidates
    under the initial m and u with lambda = 0.5, clipped to [0.001, 0.5].

    Fields should be close to independent given the class. The example fields
    (configs/customers.yaml) join address, city and zip into one ``location`` field: a customer who
    moved differs in all three, and as three fields EM learns "all three
    differ" as a sure sign of a non-match (m = 0) and rejects the movers. On
    candidates of the seed's blocking (one of name, address, phone identical)
    of 20,000 generated customers per company this took F1 from 0.942 to
    0.996 (tests/er_plugins/test_records_scoring.py).

    Monotone weights (``monotone: true``, default): a closer level never
    weighs less than a looser one. Each M-step is the maximum likelihood
    under the order log(m_0/u_0) >= log(m_1/u_1) >= ... (:func:`monotone_m_step`:
    the share of matches per level, a_k / (a_k + b_k), made non-increasing by
    pool adjacent violators with weights a_k + b_k; a pooled run of levels
    gets one weight). Unconstrained EM on blocked candidates can invert the
    order (Febrl4: given_name exact +0.98 bits, >= 92 +1.55) because the
    blocks make exact agreement common among non-matches; on Febrl3, Febrl4
    and generated customers the constraint kept F1 (benchmarks/README.md,
    bench_fs_weights.py). ``monotone: false`` is the EM of before.

    Training (:class:`~er_framework.capabilities.Trainable`): given labelled pairs (the job's
    ``training: {labels: FILE}``), :meth:`train` estimates m and u from the
    labelled pairs' levels and, by default (``labels_fit: em``), continues
    with EM on the candidates, every labelled pair held at its label; lambda
    from the labels' share or by EM (``labelled.lam``).

    Explanations (:class:`~er_framework.capabilities.Explainable`): :meth:`comparisons` gives every
    pair's level and weight (bits) per field, the prior weight, their sum and the probability, from
    the fitted state (:meth:`state_of`: lambda, m and u per field and level), which is the verifier's
    part of the job's model: saved with it and applied by :meth:`score_with` without fitting again.

    Score = match probability lam * prod m / (lam * prod m + (1 - lam) * prod u)
    over the fields present; the match weight log2(m / u) of each field and
    level is in the report, with ``estimation`` (how m, u and lambda were
    estimated) and ``weights_monotone``. After unconstrained EM the classes
    are exchanged when most fields have m < u at level 0 (label switching).
    """

    name = "fellegi_sunter"
    summary = (
        "Fellegi-Sunter: EM over comparison-pattern counts (weights monotone in the level; or trained from "
        "labelled pairs), score = match probability"
    )
    Params = FellegiSunterParams
    needs = frozenset({"fields"})

    def _random_pairs(
        self, src: npt.NDArray[np.int32], cross_source_only: bool, k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``k`` uniform random pairs of distinct records (``src``: each record's source); of different sources in link mode."""
        n = len(src)
        rng = np.random.default_rng(self.seed)
        left = rng.integers(0, n, size=k)
        if cross_source_only and len(np.unique(src)) > 1:
            order = np.argsort(src, kind="stable")
            sizes = np.bincount(src, minlength=int(src.max()) + 1)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            s = src[left]
            others = n - sizes[s]
            ok = others > 0
            left, s, others = left[ok], s[ok], others[ok]
            r = (rng.random(len(left)) * others).astype(np.int64)
            r = np.where(r >= starts[s], r + sizes[s], r)  # skip the block of the left record's source
            right = order[r]
        else:
            right = (left + 1 + rng.integers(0, n - 1, size=k)) % n
        return left.astype(np.int64), right.astype(np.int64)

    def _pattern_codes(
        self, batch: Batch, pair_sets: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]
    ) -> list[npt.NDArray[np.signedinteger[Any]]]:
        """Pattern code of every pair of each ``(left, right)`` of ``pair_sets`` (mixed radix over the fields'
        states; int32 when they fit).

        Field by field: a field's :class:`FieldColumn` (with the signatures of
        :meth:`FieldColumn.levels`) is prepared over the records of all the
        pairs, its levels added to every set's codes, and dropped before the
        next field, so one field's values are in memory at a time. Chunks of
        pairs run on ``context.workers`` threads (numpy and rapidfuzz release
        the GIL); a pair's code depends on the pair alone, so the result is the
        same for any chunking and any number of threads.
        """
        p = self.params
        n_levels = [f.n_levels for f in p.fields]
        radix = pattern_radix(n_levels)
        space = int(np.prod(np.asarray(n_levels, dtype=np.float64) + 1))
        dtype = np.int32 if space < 2**31 else np.int64
        outs: list[npt.NDArray[np.signedinteger[Any]]] = [np.zeros(len(left), dtype=dtype) for left, _ in pair_sets]
        rows = rows_of(len(batch.records), *[x for pair in pair_sets for x in pair])
        workers = max(1, int(self.context.workers))
        for f, fld in enumerate(p.fields):
            levels: Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64], int], npt.NDArray[np.int64]]
            if fld.ladder is None:
                col = FieldColumn(batch.records, field_columns(fld.field), fld.comparison, rows, fld.last_digits, bounds=True)
                levels = partial(self._similarity_levels, col, fld.thresholds)
            else:
                levels = LadderColumn(batch.records, field_columns(fld.field), fld.ladder, rows, fld.delimiter).levels
            release_free_memory()  # the preparation's temporaries (the allocators keep freed memory)
            for (left, right), out in zip(pair_sets, outs):
                self._add_levels(levels, int(radix[f]), left, right, out, workers)
            del levels
            release_free_memory()  # the field's values and the temporaries of its comparisons
        return outs

    @staticmethod
    def _add_levels(
        levels: Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64], int], npt.NDArray[np.int64]],
        place: int,
        left: npt.NDArray[np.int64],
        right: npt.NDArray[np.int64],
        out: npt.NDArray[np.signedinteger[Any]],
        workers: int,
    ) -> None:
        """``out += (level + 1) * place`` for the pairs ``(left, right)`` of one field (``levels(left, right,
        workers)``: a :class:`FieldColumn`'s levels at the field's thresholds, or a :class:`LadderColumn`'s), a
        chunk per thread step."""
        chunks = pair_chunks(len(left))
        if len(left) > 1 and len(chunks) < 2 * workers:  # small inputs: still one chunk per thread
            size = -(-len(left) // workers)
            chunks = [(a, min(a + size, len(left))) for a in range(0, len(left), size)]
        inner = 1 if len(chunks) > 1 else workers

        def chunk(ab: tuple[int, int]) -> None:
            a, b = ab
            out[a:b] += ((levels(left[a:b], right[a:b], inner) + 1) * place).astype(out.dtype)

        map_ordered(chunk, chunks, workers)

    @staticmethod
    def _similarity_levels(
        col: FieldColumn, thresholds: Sequence[float], left: npt.NDArray[np.int64], right: npt.NDArray[np.int64], workers: int
    ) -> npt.NDArray[np.int64]:
        """A ``comparison`` + ``levels`` field's levels (:meth:`FieldColumn.levels`, the bounded fast path)."""
        return col.levels(left, right, thresholds, workers)

    def comparison_levels(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.int64]:
        """``(n_pairs, n_fields)`` agreement level of every pair and field (0 = closest, -1 = missing)."""
        return decode(self.pair_codes(batch, pairs), [f.n_levels for f in self.params.fields])

    def pair_codes(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.int64]:
        """Comparison pattern of every pair, as one int64 code (mixed radix over the fields' states)."""
        return np.asarray(self._pattern_codes(batch, [(pairs.left, pairs.right)])[0], dtype=np.int64)

    def sample_pairs(self, source: npt.NDArray[np.int32], cross_source_only: bool) -> Pairs:
        """``u_from_random_pairs`` random pairs (:meth:`_random_pairs`, seeded): their level frequencies estimate u."""
        p = self.params
        if p.u_from_random_pairs == 0 or len(source) < 2:
            return Pairs.empty()
        left, right = self._random_pairs(np.asarray(source), bool(cross_source_only), p.u_from_random_pairs)
        return Pairs(left, right)

    def score(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
        """The match probability of every pair under a fit on these pairs, unlabelled (:meth:`fit_score`)."""
        return self.fit_score(batch, pairs, None)[0]

    def fit_score(self, batch: Batch, pairs: Pairs, labelled: LabelledPairs | None) -> tuple[npt.NDArray[np.float64], Fitted]:
        """The fit on ``pairs`` (codes, their counts, EM or training: :meth:`fit_counts`) and every pair's
        match probability, looked up by its code.

        An executor working partition by partition runs the same steps apart
        (codes where the records are, counts summed, one fit): same scores.
        """
        if len(pairs) == 0:
            return np.zeros(0), Fitted(state={}, report={"pairs_scored": 0})
        sample = self.sample_pairs(batch.records.source, batch.cross_source_only)
        # the fields prepared once for the candidates and the random pairs; int32 codes when the space fits
        codes, s_codes = self._pattern_codes(batch, [(pairs.left, pairs.right), (sample.left, sample.right)])
        space = self._space()
        uniq, counts = count_codes(codes, space)
        s_uniq, s_counts = count_codes(s_codes, space) if len(sample) else (np.zeros(0, np.int64), np.zeros(0))
        coded = None
        if labelled is not None:
            lcodes = self.pair_codes(batch, labelled.pairs) if len(labelled.pairs) else np.zeros(0, np.int64)
            coded = LabelledCodes(lcodes, labelled.match, labelled.lam)
        population = pair_population(batch.records.source, bool(batch.cross_source_only))
        counted = self.record_counts(batch)
        table, fitted = self.fit_counts(
            uniq, counts, s_uniq, s_counts, coded, population=population, record_counts=None if counted is None else [counted]
        )
        scores = self._lookup(codes, uniq, table, space)
        if fitted.state and self.scores_by_records(fitted.state):
            scores = self._with_term_frequencies(batch, pairs, codes, scores, self.fit_of(fitted.state), self._tf_tables_of(fitted.state))
        return scores, fitted

    @staticmethod
    def _lookup(
        codes: npt.NDArray[np.signedinteger[Any]], uniq: npt.NDArray[np.int64], table: npt.NDArray[np.float64], space: int
    ) -> npt.NDArray[np.float64]:
        """pair -> its pattern's probability: a table over the code space when it is small, else through the
        (sorted) distinct codes ``uniq``."""
        if space <= 1 << 22:
            by_code = np.zeros(space, dtype=np.float64)
            by_code[uniq] = table
            return np.asarray(by_code[codes], dtype=np.float64)
        return np.asarray(table[np.searchsorted(uniq, codes)], dtype=np.float64)

    def score_with(self, batch: Batch, pairs: Pairs, state: Mapping[str, Any]) -> npt.NDArray[np.float64]:
        """The match probability of every pair under a fitted ``state`` (a saved model): no EM."""
        if len(pairs) == 0:
            return np.zeros(0)
        fit = self.fit_of(state)
        codes = self._pattern_codes(batch, [(pairs.left, pairs.right)])[0]
        space = self._space()
        uniq, _ = count_codes(codes, space)
        scores = self._lookup(codes, uniq, fit.probability(decode(uniq, self._n_levels())), space)
        return self._with_term_frequencies(batch, pairs, codes, scores, fit, self._tf_tables_of(state))

    # -- term frequencies ---------------------------------------------------------

    def scores_by_records(self, state: Mapping[str, Any]) -> bool:
        """A field with term frequencies: a pair's score depends on its values, not its code alone."""
        return any(f.tf for f in self.params.fields)

    def exact_fields(self) -> list[int]:
        """The fields whose level 0 is equality of the compared values (:attr:`FSField.tf_capable`)."""
        return [f for f, fld in enumerate(self.params.fields) if fld.tf_capable]

    def needs_record_counts(self) -> bool:
        """The state holds counts over the records: a field with term frequencies, or (``dependence``) two
        fields compared exactly, whose dependence among non-matches is measured on the records."""
        p = self.params
        return any(f.tf for f in p.fields) or (p.dependence and len(self.exact_fields()) >= 2)

    def record_counts(self, batch: Batch) -> dict[str, Any] | None:
        """Counts over the batch's records, summed over an executor's parts by :meth:`fit_counts`: per field
        with term frequencies (:attr:`FSField.tf`) its ``present`` records and their count per value; with
        ``dependence``, per exact field (:meth:`exact_fields`) and per two of them, the records' count per
        value (a 64-bit key, :func:`~er_framework.kernels.dependence.keyed_counts`). None when the state
        needs none (:meth:`needs_record_counts`)."""
        if not self.needs_record_counts():
            return None
        p = self.params
        n = len(batch.records)
        every = np.arange(n, dtype=np.int64)
        src = np.asarray(batch.records.source, dtype=np.int32)
        exact = self.exact_fields() if p.dependence else []
        keys: dict[int, tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]] = {}
        tf: dict[str, Any] = {}
        for f, fld in enumerate(p.fields):
            if not (fld.tf or f in exact):
                continue
            col = FieldColumn(batch.records, field_columns(fld.field), fld.comparison, every, fld.last_digits)
            present = col.codes >= 0
            if fld.tf:
                counts = np.bincount(col.codes[present], minlength=len(col.dictionary))
                tf[fld.label] = {"present": int(present.sum()), "counts": dict(zip(col.values.tolist(), counts.tolist()))}
            if f in exact:
                k = np.zeros(n, dtype=np.uint64)
                k[present] = value_keys(col.values.tolist())[col.codes[present]]
                keys[f] = (k, present)
            del col
        labels = [f.label for f in p.fields]
        singles = {labels[f]: keyed_counts(k, ok, src) for f, (k, ok) in keys.items()}
        joint = {
            f"{labels[a]}|{labels[b]}": keyed_counts(combined_keys(keys[a][0], keys[b][0]), keys[a][1] & keys[b][1], src)
            for i, a in enumerate(exact)
            for b in exact[i + 1 :]
        }
        return {"cross_source_only": bool(batch.cross_source_only), "term_frequencies": tf, "exact": singles, "joint": joint}

    def counted_state(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        """What the state holds of the records (:meth:`record_counts` of every part, summed).

        ``term_frequencies``: per field, ``present`` and the counts of the values seen at least twice (a
        value seen once, or never, counts 1); saved in the model, so a saved model scores new records
        (``er run --model``, ``er index``) with the frequencies of the records it was fitted on.
        ``dependence``: the exact fields from the rarest agreement among random pairs to the commonest
        (``order``) and the log lift of every two of them (``log_lift``, 0 when not above 1:
        :mod:`er_framework.kernels.dependence`)."""
        p = self.params
        out: dict[str, Any] = {}
        if not parts:
            return out
        tables: dict[str, dict[str, Any]] = {}
        for fld in p.fields:
            if not fld.tf:
                continue
            total: Counter[str] = Counter()
            present = 0
            for part in parts:
                got = part["term_frequencies"][fld.label]
                present += int(got["present"])
                total.update(got["counts"])
            tables[fld.label] = {"present": present, "counts": {v: c for v, c in total.items() if c >= 2}}
        if tables:
            out["term_frequencies"] = tables
        cross = bool(parts[0]["cross_source_only"])
        labels = [f.label for f in p.fields]
        exact = [labels[f] for f in self.exact_fields()] if p.dependence else []
        if len(exact) >= 2:
            out["agreement"] = {
                "exact": {x: agreeing_pairs(merge_keyed([q["exact"][x] for q in parts]), cross) for x in exact},
                "joint": {
                    f"{a}|{b}": agreeing_pairs(merge_keyed([q["joint"][f"{a}|{b}"] for q in parts]), cross)
                    for i, a in enumerate(exact)
                    for b in exact[i + 1 :]
                },
            }
        return out

    def dependence_of(
        self,
        agreement: Mapping[str, Any],
        fit: EMFit,
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        population: int,
        reliable: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """The dependence of exact agreements among non-matches.

        ``agreement`` (:meth:`counted_state`) counts the record pairs agreeing exactly on each exact field
        and on every two of them. The matches are among the candidates: ``fit``'s expected matches of the
        candidates' ``patterns`` (their posterior times ``counts``) agreeing on f (and g) are taken out,
        leaving the non-matches' counts ``n_f``, ``n_g``, ``n_fg`` (rare fields, a phone, agree mostly
        between duplicates). Their log lift ``log(n_fg n / (n_f n_g))`` (``n``: the non-matching pairs of the
        ``population``) is kept when positive, at least :data:`DEPENDENCE_MIN_PAIRS` non-matching pairs
        agree on both, and both fields are ``reliable`` (default: matches make at most
        :data:`DEPENDENCE_MAX_MATCH_SHARE` of their agreeing pairs; listed as ``measured``); ``order``:
        the exact fields from the rarest agreement to the commonest
        (:func:`~er_framework.kernels.dependence.dependence_terms`)."""
        labels = [f.label for f in self.params.fields]
        g, nm, soft = self.non_match_agreements(agreement, fit, patterns, counts)
        agree = patterns == 0
        measured: dict[str, bool] = {}
        for x, pairs_agreeing in agreement["exact"].items():
            # a field whose agreements are nearly all the matches' (a phone) leaves a non-match count too
            # small and too uncertain (the pairs less the fit's matches) to measure a dependence on (judged on
            # the fit's own posterior)
            a = float(pairs_agreeing)
            ok_x = soft[x] <= DEPENDENCE_MAX_MATCH_SHARE * a and a - soft[x] >= 2 * DEPENDENCE_MIN_PAIRS
            measured[x] = ok_x if reliable is None else x in reliable
        total = max(float(population) - float(g.sum()), 1.0)
        lifts: dict[str, float] = {}
        for key, both in agreement["joint"].items():
            a, b = key.split("|")
            matched = float(g[agree[:, labels.index(a)] & agree[:, labels.index(b)]].sum())
            nm_both = max(float(both) - matched, 0.0)
            ok = nm_both >= DEPENDENCE_MIN_PAIRS and nm[a] > 0 and nm[b] > 0 and measured[a] and measured[b]
            lifts[key] = round(max(0.0, math.log(nm_both * total / (nm[a] * nm[b]))), 9) if ok else 0.0
        return {
            "order": sorted(nm, key=lambda x: (nm[x], labels.index(x))),
            "measured": [x for x in nm if measured[x]],
            "non_matching_pairs_agreeing": {x: round(v, 1) for x, v in nm.items()},
            "log_lift": lifts,
        }

    def non_match_agreements(
        self, agreement: Mapping[str, Any], fit: EMFit, patterns: npt.NDArray[np.int64], counts: npt.NDArray[np.float64]
    ) -> tuple[npt.NDArray[np.float64], dict[str, float], dict[str, float]]:
        """The expected matches of each candidate pattern (``g``; a pattern the fit is sure of,
        :data:`DEPENDENCE_SURE`, is all matches: its sliver of non-matches, 1 - g of tens of thousands of
        duplicates sharing an email and a birth date, is the model's rounding, not pairs), and per exact field
        of ``agreement`` (:meth:`counted_state`) the record pairs agreeing on it less the matches among them
        (``nm``) and the fit's expected matches among them (``soft``)."""
        labels = [f.label for f in self.params.fields]
        post = fit.probability(patterns)
        g = np.where(post >= DEPENDENCE_SURE, 1.0, post) * counts
        agree = patterns == 0
        nm: dict[str, float] = {}
        soft: dict[str, float] = {}
        for x, pairs_agreeing in agreement["exact"].items():
            at = agree[:, labels.index(x)]
            nm[x] = max(float(pairs_agreeing) - float(g[at].sum()), 0.0)
            soft[x] = float((post * counts)[at].sum())
        return g, nm, soft

    def _dependence_of(self, extra: Mapping[str, Any]) -> tuple[npt.NDArray[np.float64] | None, list[int]]:
        """The lift matrix and order of a state's ``dependence`` (None: none)."""
        dep = extra.get("dependence")
        if not dep:
            return None, []
        labels = [f.label for f in self.params.fields]
        try:
            order = [labels.index(x) for x in dep["order"]]
            lift = np.zeros((len(labels), len(labels)))
            for key, v in dep["log_lift"].items():
                a, b = (labels.index(x) for x in key.split("|"))
                lift[a, b] = lift[b, a] = float(v)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"fellegi_sunter: the model's dependence section does not fit these fields ({e})") from None
        if not (np.all(np.isfinite(lift)) and np.all(lift >= 0)):
            raise ValueError("fellegi_sunter: the model's dependence lifts must be numbers >= 0")
        return lift, order

    def _tf_tables_of(self, state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        tables: dict[str, dict[str, Any]] = dict(state.get("term_frequencies") or {})
        missing = [f.label for f in self.params.fields if f.tf and f.label not in tables]
        if missing:
            raise ValueError(f"fellegi_sunter: the model holds no term frequencies of {missing}: fit it again (er train)")
        return tables

    def term_frequency_weights(
        self, batch: Batch, pairs: Pairs, fit: EMFit, tables: Mapping[str, Any]
    ) -> dict[int, npt.NDArray[np.float64]]:
        """Per field with a term-frequency adjustment (:attr:`FSField.tf`): every pair's adjustment in bits,
        ``log2(u_0 / p_v)`` where the two values are equal (level 0) and 0 elsewhere.

        ``p_v`` is value v's share among the fitted records where the field is present (``tables``:
        :meth:`term_frequency_tables`; Splink's term frequency: the chance that a non-matching record shows
        v, given one does), ``u_0`` the model's u of exact agreement, so the field's weight of an exact
        agreement becomes ``log2(m_0 / p_v)``. The fit itself (EM, sessions) does not use them, as in Splink.
        """
        out: dict[int, npt.NDArray[np.float64]] = {}
        if len(pairs) == 0:
            return out
        rows = rows_of(len(batch.records), pairs.left, pairs.right)
        for f, fld in enumerate(self.params.fields):
            if not fld.tf:
                continue
            table = tables[fld.label]
            col = FieldColumn(batch.records, field_columns(fld.field), fld.comparison, rows, fld.last_digits)
            cl, cr = col.codes[pairs.left], col.codes[pairs.right]
            equal = (cl >= 0) & (cl == cr)
            agreed, inverse = np.unique(cl[equal], return_inverse=True)
            known: dict[str, int] = table["counts"]
            count = np.array([known.get(v, 1) for v in col.values[agreed].tolist()], dtype=np.float64)
            share = count / max(float(table["present"]), 1.0)
            adj = np.zeros(len(pairs))
            adj[equal] = (np.log2(fit.u[f][0]) - np.log2(share))[inverse.reshape(-1)]
            out[f] = adj
            del col
        return out

    def _with_term_frequencies(
        self,
        batch: Batch,
        pairs: Pairs,
        codes: npt.NDArray[Any],
        scores: npt.NDArray[np.float64],
        fit: EMFit,
        tables: Mapping[str, Any],
    ) -> npt.NDArray[np.float64]:
        """``scores`` with the term-frequency adjustments (:meth:`term_frequency_weights`) added to the log-odds
        of the pairs that have one; the other pairs keep their pattern's probability, bit for bit."""
        tf = self.term_frequency_weights(batch, pairs, fit, tables)
        if not tf:
            return scores
        bits = np.sum(list(tf.values()), axis=0)
        hit = np.flatnonzero(bits != 0.0)
        if len(hit) == 0:
            return scores
        pats = decode(np.asarray(codes[hit], dtype=np.int64), self._n_levels())
        out = scores.copy()
        out[hit] = sigmoid(fit.logit(pats) + bits[hit] * math.log(2.0))
        return out

    def score_codes(self, codes: npt.NDArray[np.int64], state: Mapping[str, Any]) -> npt.NDArray[np.float64]:
        """The match probability of each pattern code under a fitted ``state``."""
        codes = np.asarray(codes, dtype=np.int64)
        if len(codes) == 0:
            return np.zeros(0)
        return np.asarray(self.fit_of(state).probability(decode(codes, self._n_levels())), dtype=np.float64)

    def _n_levels(self) -> list[int]:
        return [f.n_levels for f in self.params.fields]

    def _space(self) -> int:
        return int(np.prod(np.asarray([f.n_levels + 1 for f in self.params.fields], dtype=np.float64)))

    # -- the fitted state (the model's verifier part) ----------------------------

    def state_of(self, fit: EMFit) -> dict[str, Any]:
        """The model's state of a fit: lambda, and per field (by label) m and u of every level."""
        return {
            "lambda": float(fit.lam),
            "fields": {
                fld.label: {"levels": fld.level_names(), "m": [float(x) for x in fit.m[f]], "u": [float(x) for x in fit.u[f]]}
                for f, fld in enumerate(self.params.fields)
            },
        }

    def fit_of(self, state: Mapping[str, Any]) -> EMFit:
        """The fit a state holds (:meth:`state_of`); ValueError naming what does not match this verifier's fields."""
        p = self.params
        if "lambda" not in state:
            raise ValueError("fellegi_sunter: the model holds no fit (the run that made it scored no pair)")
        fields = state.get("fields") or {}
        labels = [f.label for f in p.fields]
        if list(fields) != labels:
            raise ValueError(f"fellegi_sunter: the model's fields {list(fields)} are not this verifier's {labels}")
        m, u = [], []
        for fld in p.fields:
            rep = fields[fld.label]
            k = fld.n_levels
            mf = np.asarray(rep["m"], dtype=np.float64)
            uf = np.asarray(rep["u"], dtype=np.float64)
            if mf.shape != (k,) or uf.shape != (k,):
                raise ValueError(f"fellegi_sunter: field {fld.label!r} has {len(mf)} levels in the model, {k} here")
            if not (np.all(np.isfinite(mf)) and np.all(np.isfinite(uf)) and np.all(mf > 0) and np.all(uf > 0)):
                raise ValueError(f"fellegi_sunter: field {fld.label!r} has m or u values that are not positive numbers")
            m.append(mf)
            u.append(uf)
        lam = float(state["lambda"])
        if not 0.0 < lam < 1.0:
            raise ValueError(f"fellegi_sunter: lambda {lam} of the model is not between 0 and 1")
        log_lift, order = self._dependence_of(state)
        return EMFit(lam=lam, m=m, u=u, converged=True, log_lift=log_lift, order=order)

    def state_report(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """What the report says of a loaded model's fit: lambda and every field's levels, m, u and weights."""
        fit = self.fit_of(state)
        self._tf_tables_of(state)  # the term-frequency tables the fields need are there
        weights = fit.weights()
        return {
            "lambda": float(fit.lam),
            "estimation": "applied from a saved model (no fitting in this run)",
            "weights_monotone": all(bool(np.all(np.diff(w) <= 1e-12)) for w in weights),
            "per_field": self._per_field(fit, None, None, None),
        }

    def _per_field(
        self,
        fit: EMFit,
        u_random: list[npt.NDArray[np.float64]] | None,
        counts: npt.NDArray[np.float64] | None,
        patterns: npt.NDArray[np.int64] | None,
    ) -> dict[str, Any]:
        weights = fit.weights()
        out: dict[str, Any] = {}
        for f, fld in enumerate(self.params.fields):
            entry: dict[str, Any] = {
                "columns": field_columns(fld.field),
                "comparison": fld.comparison_text,
                "levels": fld.level_names(),
                "m": [float(x) for x in fit.m[f]],
                "u": [float(x) for x in fit.u[f]],
                "weight_log2": [round(float(x), 6) for x in weights[f]],
                "u_random_pairs": None if u_random is None else [float(x) for x in u_random[f]],
            }
            if counts is not None and patterns is not None:
                entry["missing_pairs"] = int(counts[patterns[:, f] < 0].sum())
            entry["missing_weight"] = 0.0
            out[fld.label] = entry
        return out

    def fit_counts(
        self,
        codes: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        sample_codes: npt.NDArray[np.int64],
        sample_counts: npt.NDArray[np.float64],
        labelled: LabelledCodes | None = None,
        population: int = 0,
        record_counts: list[dict[str, Any]] | None = None,
    ) -> tuple[npt.NDArray[np.float64], Fitted]:
        """The fit on the candidates' distinct patterns and counts, and the match probability of each pattern.

        ``estimation: sessions`` (default, :meth:`fit_sessions`): u from the random pairs, m by EM in training
        sessions, lambda over the ``population`` of record pairs (0: unknown, lambda among the candidates).
        ``estimation: em``: EM (:func:`fit_em`), u initialised (or fixed) from the random pairs' level
        frequencies. With ``labelled`` (the labelled pairs' :meth:`pair_codes`): m and u from the labels
        (:meth:`train`). ``record_counts``: the :meth:`record_counts` of the parts of the records (term
        frequencies, the dependence of exact agreements: :meth:`counted_state`), kept in the state."""
        p = self.params
        n = int(counts.sum())
        if n == 0:
            return np.zeros(0), Fitted(state={}, report={"pairs_scored": 0})
        n_levels = [f.n_levels for f in p.fields]
        uniq = np.asarray(codes, dtype=np.int64)
        patterns = decode(uniq, n_levels)

        u_random = self.random_pair_u(sample_codes, sample_counts)
        n_random = int(np.asarray(sample_counts).sum())
        training: dict[str, Any] | None = None
        sessions: dict[str, Any] | None = None
        extra = self.counted_state(record_counts or [])
        agreement = extra.pop("agreement", None)
        if labelled is not None:
            fit, lam0, training = self.train(patterns, counts, labelled)
        elif p.estimation == "sessions" and u_random is not None:
            fit, lam0, sessions = self.fit_sessions(patterns, counts, u_random, population)
            if population > 0:
                # the random pairs hold matches too (about lambda of them): u is refitted from their
                # expected non-matches, then the sessions again
                u_random = self.random_pair_u(sample_codes, sample_counts, fit) or u_random
                fit, lam0, sessions = self.fit_sessions(patterns, counts, u_random, population)
        else:
            fit, lam0 = self.fit_candidates_em(patterns, counts, u_random)
        if agreement is not None:
            fit = self.with_dependence(fit, agreement, extra, patterns, counts, population, refit_lambda=sessions is not None)
            if sessions is not None and u_random is not None and fit.log_lift is not None and fit.log_lift.any():
                # the sessions again, their non-matches' u conditioned on the key by the dependence found,
                # then the dependence again from that fit
                lifted = fit.log_lift
                fit, lam0, sessions = self.fit_sessions(patterns, counts, u_random, population, lifted)
                fit = self.with_dependence(fit, agreement, extra, patterns, counts, population, refit_lambda=True)
        table = fit.probability(patterns)

        weights = fit.weights()
        t = self.job_default("threshold")
        report = {
            "pairs_scored": n,
            "patterns": int(len(uniq)),
            "lambda": float(fit.lam),
            "lambda_initial": lam0,
            "expected_matches": round(float(fit.lam) * (population if sessions is not None and population else n), 1),
            "expected_matches_in_candidates": round(float(counts @ table), 1),
            "iterations": fit.iterations,
            "converged": fit.converged,
            "label_swapped": fit.swapped,
            "estimation": self.estimation(training, sessions),
            "weights_monotone": all(bool(np.all(np.diff(w) <= 1e-12)) for w in weights),
            "u_mode": self.u_mode(training, sessions is not None, u_random is not None),
            "training": training,
            "sessions": sessions,
            "population_pairs": population or None,
            "random_pairs": n_random,
            "loglik": [round(x, 6) for x in fit.loglik],
            "pairs_at_or_above_threshold": None if t is None else int(counts[table >= t].sum()),
            "per_field": self._per_field(fit, u_random, counts, patterns),
        }
        if "dependence" in extra:
            report["dependence"] = extra["dependence"]
        report["warnings"] = self.fit_warnings(sessions)
        return table, Fitted(state={**self.state_of(fit), **extra}, report=report)

    def fit_warnings(self, sessions: dict[str, Any] | None) -> list[dict[str, str]]:
        """What the fit itself finds doubtful (the run's plausibility checks add theirs): fields whose m no
        training session estimated."""
        if sessions is None or not sessions["m_from_candidate_em"]:
            return []
        fields = sessions["m_from_candidate_em"]
        return [
            {
                "code": "fs_no_session",
                "message": f"no training session estimated m of {fields}: it comes from EM on the candidates, which "
                "learns what the blocking selected (every pair blocked on a name agrees on the name)",
                "fix": "add a field_hash blocking key without these fields (e.g. the date of birth), or list "
                "sessions: in the verifier; see docs/record-matching.md",
            }
        ]

    def random_pair_u(
        self, sample_codes: npt.NDArray[np.int64], sample_counts: npt.NDArray[np.float64], fit: EMFit | None = None
    ) -> list[npt.NDArray[np.float64]] | None:
        """u of every field from the random pairs' level counts (0.5 added to every level); None without any.

        With a ``fit`` whose lambda is over all record pairs, each random pair counts as the non-match it is
        by that fit's posterior (1 - P(match)): a random sample of all pairs holds about lambda matches,
        and on a field that identifies a person (a social security number) those few agreeing matches
        would otherwise be most of u's exact level, and halve its weight."""
        if int(np.asarray(sample_counts).sum()) == 0:
            return None
        n_levels = self._n_levels()
        rpat = decode(np.asarray(sample_codes, dtype=np.int64), n_levels)
        weight = np.asarray(sample_counts, dtype=np.float64)
        if fit is not None:
            post = fit.probability(rpat) * weight
            # at most lambda of the pairs: where the fit finds more (relatives sharing an address and a
            # phone look like duplicates), the excess is the model's error, and taking those pairs out of
            # u would make the agreements they share weigh more still
            expected = float(fit.lam) * float(weight.sum())
            found = float(post.sum())
            weight = weight - post * (min(1.0, expected / found) if found > 0 else 0.0)
        u: list[npt.NDArray[np.float64]] = []
        for f, k in enumerate(n_levels):
            lv = rpat[:, f]
            ok = lv >= 0
            acc = np.bincount(lv[ok], weights=weight[ok], minlength=k).astype(np.float64) + 0.5
            u.append(acc / acc.sum())
        return u

    def fit_candidates_em(
        self, patterns: npt.NDArray[np.int64], counts: npt.NDArray[np.float64], u_random: list[npt.NDArray[np.float64]] | None
    ) -> tuple[EMFit, float]:
        """``estimation: em``: EM of lambda, m and u on the candidates (u initialised, or with ``fix_u`` held,
        at the random pairs'); the fit and the initial lambda."""
        p = self.params
        n_levels = self._n_levels()
        m0 = [floor_normalize(8.0 ** -np.arange(K, dtype=np.float64)) for K in n_levels]
        u0 = u_random if u_random is not None else [floor_normalize(8.0 ** (np.arange(K, dtype=np.float64) - K + 1)) for K in n_levels]
        if p.prior is not None:
            lam0 = float(p.prior)
        else:
            g = EMFit(lam=0.5, m=m0, u=u0).probability(patterns)
            lam0 = float(np.clip((counts @ g) / counts.sum(), 1e-3, 0.5))
        fit = fit_em(
            patterns,
            counts,
            n_levels,
            lam0,
            m0,
            u0,
            fix_u=p.fix_u,
            monotone=p.monotone,
            max_iter=p.max_iter,
            tol=p.tol,
            smoothing=p.smoothing,
        )
        return fit, lam0

    def with_dependence(
        self,
        fit: EMFit,
        agreement: Mapping[str, Any],
        extra: dict[str, Any],
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        population: int,
        refit_lambda: bool,
    ) -> EMFit:
        """``fit`` with the dependence of exact agreements (:meth:`dependence_of`, put in ``extra``) and, with
        ``refit_lambda`` (training sessions), lambda over every pair again with it (m, u held). The matches
        taken out of the counts are the fit's, so the two are found together, in a few rounds."""
        reliable: list[str] | None = None  # the fields measured: judged once, on the independence model's fit
        for _ in range(DEPENDENCE_ROUNDS):
            extra["dependence"] = self.dependence_of(agreement, fit, patterns, counts, population or int(counts.sum()), reliable)
            reliable = list(extra["dependence"]["measured"])
            log_lift, order = self._dependence_of(extra)
            before = fit.log_lift
            fit = dataclasses.replace(fit, log_lift=log_lift, order=order)
            if refit_lambda and population > 0 and log_lift is not None and log_lift.any():
                correction = dependence_correction(patterns, log_lift, order)
                lam, _, _ = population_lambda(patterns, counts, fit.m, fit.u, population, correction=correction)
                fit = dataclasses.replace(fit, lam=lam)
            if before is not None and log_lift is not None and np.allclose(before, log_lift, atol=1e-3):
                break
        return fit

    def u_mode(self, training: dict[str, Any] | None, sessions: bool, random_pairs: bool) -> str:
        """How u was estimated, for the report."""
        if training is not None:
            return (
                "from labelled non-matches" if training["fit"] == "labels" else "EM, started from labelled non-matches, labelled pairs held"
            )
        if self.params.fix_u or sessions:
            return "fixed from random pairs"
        return "EM, initialised from random pairs" if random_pairs else "EM"

    def estimation(self, training: dict[str, Any] | None, sessions: dict[str, Any] | None = None) -> str:
        """One line for the report: how m, u and lambda were estimated and whether the weights are monotone."""
        p = self.params
        order = (
            "weights monotone in the level (constrained maximum likelihood, pool adjacent violators)"
            if p.monotone
            else "weights unconstrained (a looser level may weigh more than a closer one)"
        )
        if training is not None:
            lam = "lambda = the labels' share of matches" if training["lambda"] == "labels" else "lambda by EM on the candidates"
            labels = f"{training['matches']} labelled matches and {training['non_matches']} labelled non-matches"
            if training["fit"] == "labels":
                how = f"m and u from {labels} (held)"
            else:
                how = f"m and u by EM on the candidates, started from {labels}, each labelled pair held at its label"
            return f"trained: {how}; {lam}; {order}"
        if sessions is not None:
            lam = (
                "lambda = P(match) of two records over every record pair"
                if sessions["lambda_over"] == "population"
                else "lambda among the candidates"
            )
            return (
                f"training sessions: u from random pairs (held); m by EM in {len(sessions['sessions'])} session(s) on "
                f"candidates agreeing on blocking keys; {lam}; {order}"
            )
        u = "u fixed from random pairs" if p.fix_u else "u by EM"
        return f"unsupervised EM on the candidates (m by EM, {u}); {order}"

    def session_fields(self) -> list[tuple[int, ...]]:
        """The training sessions as field indices: ``sessions`` when set, else one per blocking key of the job
        (:attr:`~er_framework.components.Context.blocking_keys`): the fields sharing a column with the key.
        Repeated sessions, and sessions that fix every field, are dropped."""
        p = self.params
        cols = [set(field_columns(f.field)) for f in p.fields]
        labels = [f.label for f in p.fields]
        out: list[tuple[int, ...]] = []
        if p.sessions is not None:
            chosen = [tuple(sorted({f for x in sess for f in range(len(cols)) if x == labels[f] or x in cols[f]})) for sess in p.sessions]
        else:
            keys = [set(k) for k in self.context.blocking_keys]
            chosen = [tuple(f for f in range(len(cols)) if cols[f] & k) for k in keys]
        for fixed in chosen:
            if fixed and len(fixed) < len(cols) and fixed not in out:
                out.append(fixed)
        return out

    def fit_sessions(
        self,
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        u: list[npt.NDArray[np.float64]],
        population: int,
        log_lift: npt.NDArray[np.float64] | None = None,
    ) -> tuple[EMFit, float, dict[str, Any]]:
        """u held at the random pairs' ``u``; m by EM in training sessions (:func:`fit_session`), each field's m
        the mean of the sessions that estimated it; lambda over the ``population`` of record pairs
        (:func:`population_lambda`), or among the candidates when it is unknown (0).

        A session is the candidates at level 0 on the fields of a blocking key: a key makes every pair
        agreeing on it a candidate, so within the session the other fields are compared as among all pairs
        and u of random pairs holds for their non-matches (it would not over all the candidates: a pair
        blocked on the name agrees on the name, match or not). A field no session estimates (it is in every
        key, or there is none) takes m of the unsupervised EM on the candidates (:func:`fit_em`, u free).
        With ``log_lift`` (the dependence of exact agreements among non-matches, :meth:`dependence_of`), a
        session's non-matches agree on a field dependent on the key as often as the dependence says
        (:meth:`session_u`): relatives within a surname-and-zip session share an address.
        """
        p = self.params
        n_levels = [f.n_levels for f in p.fields]
        F = len(n_levels)
        fits: list[SessionFit] = []
        for fixed in self.session_fields():
            u_s = u if log_lift is None else self.session_u(u, fixed, log_lift)
            sf = self.session_fit(patterns, counts, fixed, u_s)
            if sf is not None:
                fits.append(sf)
        # a session estimating one field cannot tell its share of matches from that field's m (with u held,
        # the level shares q = lam m + (1 - lam) u fit any lam above a bound): it is refitted below with its
        # share held at what the rest of the model says of its pairs
        used = [sf for sf in fits if sf.pairs * sf.lam >= SESSION_MIN_MATCHES and sum(x is not None for x in sf.m) >= 2]
        single = [sf for sf in fits if sum(x is not None for x in sf.m) == 1] if population > 0 else []
        estimates: list[list[npt.NDArray[np.float64]]] = [[] for _ in range(F)]
        for sf in used:
            for f, mf in enumerate(sf.m):
                if mf is not None:
                    estimates[f].append(mf)
        fallback = [f for f in range(F) if not estimates[f]]
        m: list[npt.NDArray[np.float64]] = [floor_normalize(np.mean(e, axis=0)) if e else np.zeros(0) for e in estimates]
        em_fit: EMFit | None = None
        if fallback:
            m0 = [floor_normalize(8.0 ** -np.arange(K, dtype=np.float64)) for K in n_levels]
            g = EMFit(lam=0.5, m=m0, u=u).probability(patterns)
            lam_c = float(np.clip((counts @ g) / counts.sum(), 1e-3, 0.5))
            em_fit = fit_em(
                patterns, counts, n_levels, lam_c, m0, u, monotone=p.monotone, max_iter=p.max_iter, tol=p.tol, smoothing=p.smoothing
            )
            for f in fallback:
                # EM's m against the held u: the order of the weights kept (the monotone M-step with u fixed,
                # EM's m as the expected matches per level)
                m[f] = monotone_m_step(em_fit.m[f], u[f], u[f])[0] if p.monotone else em_fit.m[f]
        lone: list[SessionFit] = []
        if population > 0:
            lone = [sf for sf in single if next(f for f, x in enumerate(sf.m) if x is not None) in fallback]
            lam, lam_iter, lam_ok = self.refit_one_field_sessions(patterns, counts, m, u, population, lone)
            fallback = [f for f in fallback if not any(next(g for g, x in enumerate(sf.m) if x is not None) == f for sf in lone)]
        else:
            cand = fit_em(
                patterns, counts, n_levels, 0.1, m, u, fix_m=True, fix_u=True, max_iter=p.max_iter, tol=p.tol, smoothing=p.smoothing
            )
            lam, lam_iter, lam_ok = cand.lam, cand.iterations, cand.converged
        converged = lam_ok and all(sf.converged for sf in used) and (em_fit is None or em_fit.converged)
        fit = EMFit(lam=lam, m=m, u=list(u), iterations=lam_iter, converged=converged)
        report = self.sessions_report(fits, used, lone, fallback, u, population)
        return fit, lam, report

    def session_fit(
        self,
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        fixed: Sequence[int],
        u: list[npt.NDArray[np.float64]],
        lam0: float = 0.5,
        fix_lam: bool = False,
    ) -> SessionFit | None:
        """One training session (:func:`fit_session`) with this verifier's EM settings."""
        p = self.params
        return fit_session(
            patterns,
            counts,
            self._n_levels(),
            fixed,
            u,
            lam0=lam0,
            fix_lam=fix_lam,
            monotone=p.monotone,
            max_iter=p.max_iter,
            tol=p.tol,
            smoothing=p.smoothing,
        )

    @staticmethod
    def session_u(
        u: list[npt.NDArray[np.float64]], fixed: Sequence[int], log_lift: npt.NDArray[np.float64]
    ) -> list[npt.NDArray[np.float64]]:
        """u of the non-matches of a session agreeing on the ``fixed`` fields: a field g's exact agreement is
        ``exp(max log_lift[f, g])`` times more likely (f of the session's fields; at most 0.99), its other
        levels scaled to sum to the rest."""
        out = []
        for g, ug in enumerate(u):
            lift = max((float(log_lift[f, g]) for f in fixed), default=0.0)
            if g in fixed or lift <= 0.0 or len(ug) < 2:
                out.append(ug)
                continue
            u0 = min(float(ug[0]) * math.exp(lift), 0.99)
            rest = ug[1:] * ((1.0 - u0) / max(float(ug[1:].sum()), EPS))
            out.append(floor_normalize(np.concatenate([[u0], rest])))
        return out

    def refit_one_field_sessions(
        self,
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        m: list[npt.NDArray[np.float64]],
        u: list[npt.NDArray[np.float64]],
        population: int,
        lone: list[SessionFit],
    ) -> tuple[float, int, bool]:
        """Lambda over every pair (:func:`population_lambda`), and the m of the fields that only one-field
        sessions (``lone``) estimate, refitted in rounds with each such session's share of matches held at
        what lambda and the other fields' m and u say of its pairs (``m`` is updated in place)."""
        n_levels = self._n_levels()
        F = len(n_levels)
        lam, lam_iter, lam_ok = population_lambda(patterns, counts, m, u, population)
        for _ in range(SINGLE_SESSION_ROUNDS if lone else 0):
            refits: list[list[npt.NDArray[np.float64]]] = [[] for _ in range(F)]
            for sf in lone:
                f_est = next(f for f, x in enumerate(sf.m) if x is not None)
                held = [f for f in range(F) if f != f_est and sf.m[f] is None]
                # P(match | the session's fields agree), from lambda and the other fields' m and u
                z = math.log(lam) - math.log1p(-lam) + sum(math.log(m[f][0] / u[f][0]) for f in held)
                share = float(sigmoid(np.array([z]))[0])
                again = self.session_fit(patterns, counts, sf.fixed, u, lam0=min(max(share, EPS), 1 - EPS), fix_lam=True)
                got = None if again is None else again.m[f_est]
                if got is not None:
                    refits[f_est].append(got)
            for f in range(F):
                if refits[f]:
                    m[f] = floor_normalize(np.mean(refits[f], axis=0))
            before = lam
            lam, lam_iter, lam_ok = population_lambda(patterns, counts, m, u, population)
            if abs(lam - before) <= 1e-4 * before:
                break
        return lam, lam_iter, lam_ok

    def sessions_report(
        self,
        fits: list[SessionFit],
        used: list[SessionFit],
        lone: list[SessionFit],
        fallback: list[int],
        u: list[npt.NDArray[np.float64]],
        population: int,
    ) -> dict[str, Any]:
        """The report's ``sessions``: every session's fields, pairs, share of matches and estimates side by side."""
        labels = [f.label for f in self.params.fields]
        return {
            "lambda_over": "population" if population > 0 else "candidates",
            "sessions": [
                {
                    "agree_on": [labels[f] for f in sf.fixed],
                    "tied_to_key": [labels[f] for f in sf.tied],
                    "pairs": int(sf.pairs),
                    "lambda": float(sf.lam),
                    "iterations": sf.iterations,
                    "converged": sf.converged,
                    "used": sf in used or sf in lone,
                    # a one-field session: its share of matches held at what the rest of the model says
                    "share_held": sf in lone,
                    "m": {labels[f]: [float(x) for x in mf] for f, mf in enumerate(sf.m) if mf is not None},
                    "weight_log2": {
                        labels[f]: [round(float(x), 6) for x in np.log2(mf / u[f])] for f, mf in enumerate(sf.m) if mf is not None
                    },
                }
                for sf in fits
            ],
            "m_from_candidate_em": [labels[f] for f in fallback],
            "m_from_one_field_sessions": [labels[f] for f in range(len(labels)) if any(sf.m[f] is not None for sf in lone)],
        }

    def train(
        self, patterns: npt.NDArray[np.int64], counts: npt.NDArray[np.float64], lab: LabelledCodes
    ) -> tuple[EMFit, float, dict[str, Any]]:
        """The fit from the labelled pairs (``lab``: their codes and labels) and the candidates' ``patterns``.

        Per field, ``a_k`` / ``b_k`` = labelled matches / non-matches at level
        k plus ``smoothing`` (pairs where the field is missing are skipped);
        the labels' estimate is m = a / sum a and u = b / sum b, or with
        ``monotone`` the constrained estimate of :func:`monotone_m_step` on the
        same counts (their maximum likelihood under the order).

        ``labels_fit: labels`` holds m and u there. ``labels_fit: em`` (default)
        starts :func:`fit_em` from them and fits m, u (and lambda) on the
        candidates, every labelled pair entering the M-step with its class
        known (``known``): semi-supervised, the labels and every candidate's
        comparison pattern in one likelihood.

        Lambda (``labelled.lam``): ``"labels"`` holds it at the labels' share of
        matches (right for a random sample of the candidates); ``"em"`` fits it
        on the candidates (with m and u held, under ``labels_fit: labels``),
        right for pairs chosen near the threshold, whose share of matches says
        nothing of the candidates'. Raises ValueError when the labels hold no
        match or no non-match.
        """
        p = self.params
        codes = lab.codes
        if len(codes) != len(lab.match):
            raise ValueError(f"fellegi_sunter: {len(codes)} codes of labelled pairs for {len(lab.match)} labels")
        y = np.asarray(lab.match, dtype=bool)
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        if n_pos == 0 or n_neg == 0:
            raise ValueError(
                f"training labels hold {n_pos} match(es) and {n_neg} non-match(es): fellegi_sunter estimates m from "
                "labelled matches and u from labelled non-matches, so it needs at least one of each; label more pairs "
                "(er review writes pairs on both sides of the threshold)"
            )
        n_levels = [f.n_levels for f in p.fields]
        lpat = decode(np.asarray(codes, dtype=np.int64), n_levels)
        m: list[npt.NDArray[np.float64]] = []
        u: list[npt.NDArray[np.float64]] = []
        per_field: dict[str, dict[str, list[int]]] = {}
        for f, fld in enumerate(p.fields):
            lv = lpat[:, f]
            ok = lv >= 0
            cm = np.bincount(lv[ok & y], minlength=n_levels[f]).astype(np.float64)
            cu = np.bincount(lv[ok & ~y], minlength=n_levels[f]).astype(np.float64)
            per_field[fld.label] = {"matches": cm.astype(int).tolist(), "non_matches": cu.astype(int).tolist()}
            a, b = cm + p.smoothing, cu + p.smoothing
            if a.sum() <= 0 or b.sum() <= 0:
                # no labelled pair shows this field in one class (and no smoothing): it starts at weight 0
                mf = uf = np.full(n_levels[f], 1.0 / n_levels[f])
            elif p.monotone:
                mf, uf = monotone_m_step(a, b)
            else:
                mf, uf = floor_normalize(a / a.sum()), floor_normalize(b / b.sum())
            m.append(mf)
            u.append(uf)
        lam_labels = float(np.clip(n_pos / (n_pos + n_neg), EPS, 1 - EPS))
        if lab.lam == "labels":
            lam0 = lam_labels
            fit = EMFit(lam=lam_labels, m=m, u=u, converged=True)
        else:
            lam0 = lam_labels
            fit = fit_em(
                patterns,
                counts,
                n_levels,
                lam0,
                m,
                u,
                fix_m=True,
                fix_u=True,
                max_iter=p.max_iter,
                tol=p.tol,
                smoothing=p.smoothing,
            )
        if p.labels_fit == "em":
            # the labelled pairs by distinct pattern: how many matches and non-matches show each
            lcodes = np.asarray(codes, dtype=np.int64)
            uniq, inv = np.unique(lcodes, return_inverse=True)
            inv = inv.reshape(-1)
            pos = np.bincount(inv, weights=y.astype(np.float64), minlength=len(uniq)).astype(np.float64)
            neg = np.bincount(inv, weights=(~y).astype(np.float64), minlength=len(uniq)).astype(np.float64)
            fit = fit_em(
                patterns,
                counts,
                n_levels,
                fit.lam,
                fit.m,
                fit.u,
                monotone=p.monotone,
                fix_lam=lab.lam == "labels",
                known=(decode(uniq, n_levels), pos, neg),
                max_iter=p.max_iter,
                tol=p.tol,
                smoothing=p.smoothing,
            )
        training = {
            "labelled_pairs": n_pos + n_neg,
            "matches": n_pos,
            "non_matches": n_neg,
            "lambda": lab.lam,
            "fit": p.labels_fit,
            "level_counts": per_field,
        }
        return fit, lam0, training

    # -- explanations ------------------------------------------------------------

    def comparisons(self, batch: Batch, pairs: Pairs, state: Mapping[str, Any] | None = None) -> dict[str, npt.NDArray[Any]]:
        """Per pair: ``prior_weight`` = log2(lambda / (1 - lambda)); per field ``level_<f>`` (0 = closest,
        -1 = missing) and ``weight_<f>`` = log2(m / u) of that level (0 when missing), with a term-frequency
        field's adjustment included and also given alone as ``tf_<f>``, and what a field loses to dependent
        exact agreements (:meth:`EMFit.dependence`) included and given alone as ``dependence_<f>`` (when
        any pair loses some); ``match_weight`` =
        their sum; ``score`` = 2**match_weight / (1 + 2**match_weight), the match probability of :meth:`score`.

        Uses the fitted ``state`` (the model's verifier part: :meth:`fit_score`, or a saved model)."""
        p = self.params
        if state is None:
            raise ValueError("fellegi_sunter explains scores with a fitted state: pass the model's (fit_score)")
        fit = self.fit_of(state)
        levels = self.comparison_levels(batch, pairs) if len(pairs) else np.zeros((0, len(p.fields)), np.int64)
        prior = math.log2(fit.lam) - math.log2(1.0 - fit.lam)
        out: dict[str, npt.NDArray[Any]] = {"prior_weight": np.full(len(pairs), prior)}
        total = np.full(len(pairs), prior)
        tables = self._tf_tables_of(state)
        tf = self.term_frequency_weights(batch, pairs, fit, tables)
        dep = fit.dependence(levels) / math.log(2.0) if fit.log_lift is not None else None
        for f, (fld, w) in enumerate(zip(p.fields, fit.weights())):
            lv = levels[:, f]
            ok = lv >= 0
            wf = np.where(ok, w[np.where(ok, lv, 0)], 0.0)
            out[f"level_{fld.label}"] = lv.astype(np.int64)
            if f in tf:
                wf = wf + tf[f]
            if dep is not None and dep[:, f].any():
                wf = wf - dep[:, f]
            out[f"weight_{fld.label}"] = wf
            if f in tf:  # the term-frequency part of the weight (bits)
                out[f"tf_{fld.label}"] = tf[f]
            if dep is not None and dep[:, f].any():  # what the field's agreement loses to a dependent one (bits)
                out[f"dependence_{fld.label}"] = -dep[:, f]
            total = total + wf
        out["match_weight"] = total
        codes = self.pair_codes(batch, pairs) if len(pairs) else np.zeros(0, np.int64)
        out["score"] = self._with_term_frequencies(batch, pairs, codes, fit.probability(levels), fit, tables)
        return out
