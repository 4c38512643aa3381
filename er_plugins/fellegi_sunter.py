"""The ``fellegi_sunter`` verifier: unsupervised probabilistic record linkage (Fellegi & Sunter 1969).

The per-field similarities (:class:`er_plugins.record_columns.FieldColumn`) are cut into agreement
levels, a two-class latent model is fitted by EM on the counts of the candidates' comparison patterns
(:mod:`er_framework.kernels.em`), and each pair is scored with its posterior match probability.
Registered by :mod:`er_plugins.records_scoring` (the comparisons and the field syntax are described there).

This module holds the component (comparison patterns, scoring, the fitted state, explanations); its
parameters are in :mod:`er_plugins.fs_params`, what it counts over the records (term frequencies, the
dependence of exact agreements) in :mod:`er_plugins.fs_counts`, and its estimation (training sessions,
EM, labels) in :mod:`er_plugins.fs_training`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import CodeFitted, Explainable, Fitted, LabelledCodes, Trainable
from er_framework.components import Verifier
from er_framework.data import Batch, LabelledPairs, Pairs, pair_population
from er_framework.kernels.em import EMFit, count_codes, decode, pattern_radix
from er_framework.kernels.parallel import map_ordered
from er_framework.kernels.records_memory import release_free_memory
from er_plugins.comparisons import LadderColumn
from er_plugins.fs_params import FellegiSunterParams, FSField
from er_plugins.fs_refine import LabelledAgreements, RefinedFit, refinement_of, refinement_state
from er_plugins.fs_training import FSTraining
from er_plugins.record_columns import FieldColumn, field_columns, pair_chunks, rows_of

__all__ = [
    "FSField",
    "FellegiSunterParams",
    "FellegiSunter",
]


class FellegiSunter(FSTraining, Verifier[FellegiSunterParams], CodeFitted, Trainable, Explainable):
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
    ``training: {labels: FILE}``), by default (``labels_fit: refine``) the fit is the unsupervised one,
    refined by a Bayesian logistic regression on the labelled pairs' per-field weights
    (:meth:`refine`, :mod:`er_plugins.fs_refine`: beta per field, the labels' correction b0, in the
    state). ``labels_fit: em`` / ``labels``: :meth:`train` estimates m and u from the labelled pairs'
    levels and (``em``) continues with EM on the candidates, every labelled pair held at its label;
    lambda from the labels' share or by EM (``labelled.lam``). Only ``refine`` learns from labels of one
    kind (:meth:`learns_from_one_kind`); the engine refuses them for ``em`` and ``labels``.

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

    def learns_from_one_kind(self) -> bool:
        """``labels_fit: refine`` learns from labels of one kind (the prior centred at the unsupervised fit keeps
        it finite: ten matches and no non-match move the labels' correction b0); ``em`` and ``labels`` estimate
        m and u from the labels' two classes and need both (:meth:`train` refuses one kind)."""
        return self.params.labels_fit == "refine"

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
        coded = self.labelled_codes(batch, labelled) if labelled is not None else None
        population = pair_population(batch.records.source, bool(batch.cross_source_only))
        counted = self.record_counts(batch)
        table, fitted = self.fit_counts(
            uniq, counts, s_uniq, s_counts, coded, population=population, record_counts=None if counted is None else [counted]
        )
        scores = self._lookup(codes, uniq, table, space)
        if fitted.state and self.scores_by_records(fitted.state):
            scores = self.with_term_frequencies(batch, pairs, codes, scores, self.fit_of(fitted.state), self.tf_tables_of(fitted.state))
        return scores, fitted

    def labelled_codes(self, batch: Batch, labelled: LabelledPairs) -> LabelledAgreements:
        """The labelled pairs' codes with their term-frequency agreements (what the labels' refinement needs
        of their records), computed where the records are."""
        lcodes = self.pair_codes(batch, labelled.pairs) if len(labelled.pairs) else np.zeros(0, np.int64)
        return LabelledAgreements(lcodes, labelled.match, labelled.lam, agreements=self.tf_agreements(batch, labelled.pairs))

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
        scores = self._lookup(codes, uniq, fit.probability(decode(uniq, self.n_levels())), space)
        return self.with_term_frequencies(batch, pairs, codes, scores, fit, self.tf_tables_of(state))

    # -- term frequencies (their tables and weights: er_plugins/fs_counts.py) -----

    def scores_by_records(self, state: Mapping[str, Any]) -> bool:
        """A field with term frequencies: a pair's score depends on its values, not its code alone."""
        return any(f.tf for f in self.params.fields)

    def score_codes(self, codes: npt.NDArray[np.int64], state: Mapping[str, Any]) -> npt.NDArray[np.float64]:
        """The match probability of each pattern code under a fitted ``state``."""
        codes = np.asarray(codes, dtype=np.int64)
        if len(codes) == 0:
            return np.zeros(0)
        return np.asarray(self.fit_of(state).probability(decode(codes, self.n_levels())), dtype=np.float64)

    def _space(self) -> int:
        return int(np.prod(np.asarray([f.n_levels + 1 for f in self.params.fields], dtype=np.float64)))

    # -- the fitted state (the model's verifier part) ----------------------------

    def state_of(self, fit: EMFit) -> dict[str, Any]:
        """The model's state of a fit: lambda, and per field (by label) m and u of every level; a fit refined by
        labels also its ``labels_refinement`` (b0, beta per field: :func:`refinement_state`)."""
        out: dict[str, Any] = {
            "lambda": float(fit.lam),
            "fields": {
                fld.label: {"levels": fld.level_names(), "m": [float(x) for x in fit.m[f]], "u": [float(x) for x in fit.u[f]]}
                for f, fld in enumerate(self.params.fields)
            },
        }
        if isinstance(fit, RefinedFit):
            p = self.params
            scales = {"prior_scale": p.labels_prior_scale, "intercept_scale": p.labels_intercept_scale}
            out["labels_refinement"] = refinement_state(fit, [f.label for f in p.fields], scales)
        return out

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
        log_lift, order = self.dependence_lifts(state)
        refined = refinement_of(state, labels)
        if refined is not None:
            return RefinedFit(lam=lam, m=m, u=u, converged=True, log_lift=log_lift, order=order, beta=refined[0], b0=refined[1])
        return EMFit(lam=lam, m=m, u=u, converged=True, log_lift=log_lift, order=order)

    def state_report(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """What the report says of a loaded model's fit: lambda and every field's levels, m, u and weights."""
        fit = self.fit_of(state)
        self.tf_tables_of(state)  # the term-frequency tables the fields need are there
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
                # candidate pairs per level: a level no candidate reaches has a weight that was not learned from one
                entry["candidate_pairs"] = [int(counts[patterns[:, f] == lv].sum()) for lv in range(len(entry["levels"]))]
            entry["missing_weight"] = 0.0
            if isinstance(fit, RefinedFit):  # weight_log2 is the refined weight: the unsupervised one times beta
                entry["labels_beta"] = fit.scale(f)
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
        if labelled is not None and p.labels_fit != "refine":
            fit, lam0, training = self.train(patterns, counts, labelled)
        else:
            fit, lam0, sessions, u_random = self.fit_unsupervised(patterns, counts, sample_codes, sample_counts, population, u_random)
        if agreement is not None:
            fit, lam0, sessions = self.dependence_and_sessions(
                fit, lam0, sessions, agreement, extra, patterns, counts, population, u_random
            )
        if labelled is not None and p.labels_fit == "refine":
            fit, training = self.refine(fit, labelled, extra.get("term_frequencies") or {})
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

    def fit_unsupervised(
        self,
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        sample_codes: npt.NDArray[np.int64],
        sample_counts: npt.NDArray[np.float64],
        population: int,
        u_random: list[npt.NDArray[np.float64]] | None,
    ) -> tuple[EMFit, float, dict[str, Any] | None, list[npt.NDArray[np.float64]] | None]:
        """The fit without labels (before the dependence): training sessions, or EM on the candidates; the
        fit, the initial lambda, the sessions' report (None under EM) and u of the random pairs."""
        if self.params.estimation == "sessions" and u_random is not None:
            fit, lam0, sessions = self.fit_sessions(patterns, counts, u_random, population)
            if population > 0:
                # the random pairs hold matches too (about lambda of them): u is refitted from their
                # expected non-matches, then the sessions again
                u_random = self.random_pair_u(sample_codes, sample_counts, fit) or u_random
                fit, lam0, sessions = self.fit_sessions(patterns, counts, u_random, population)
            return fit, lam0, sessions, u_random
        fit, lam0 = self.fit_candidates_em(patterns, counts, u_random)
        return fit, lam0, None, u_random

    def dependence_and_sessions(
        self,
        fit: EMFit,
        lam0: float,
        sessions: dict[str, Any] | None,
        agreement: Mapping[str, Any],
        extra: dict[str, Any],
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        population: int,
        u_random: list[npt.NDArray[np.float64]] | None,
    ) -> tuple[EMFit, float, dict[str, Any] | None]:
        """``fit`` with the dependence of exact agreements (:meth:`with_dependence`); under training sessions,
        the sessions again with their non-matches' u conditioned on the key by the dependence found, then the
        dependence again from that fit."""
        fit = self.with_dependence(fit, agreement, extra, patterns, counts, population, refit_lambda=sessions is not None)
        if sessions is not None and u_random is not None and fit.log_lift is not None and fit.log_lift.any():
            lifted = fit.log_lift
            fit, lam0, sessions = self.fit_sessions(patterns, counts, u_random, population, lifted)
            fit = self.with_dependence(fit, agreement, extra, patterns, counts, population, refit_lambda=True)
        return fit, lam0, sessions

    # -- explanations ------------------------------------------------------------

    def comparisons(self, batch: Batch, pairs: Pairs, state: Mapping[str, Any] | None = None) -> dict[str, npt.NDArray[Any]]:
        """Per pair: ``prior_weight`` = log2(lambda / (1 - lambda)) (plus, for a fit refined by labels, the labels'
        correction b0, also given alone as ``labels_correction``); per field ``level_<f>`` (0 = closest,
        -1 = missing) and ``weight_<f>`` = log2(m / u) of that level (0 when missing; times the field's beta
        when refined by labels), with a term-frequency
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
        if isinstance(fit, RefinedFit):  # the labels' correction b0 (bits), a part of the prior weight
            prior = prior + fit.b0
        out: dict[str, npt.NDArray[Any]] = {"prior_weight": np.full(len(pairs), prior)}
        if isinstance(fit, RefinedFit):
            out["labels_correction"] = np.full(len(pairs), fit.b0)
        total = np.full(len(pairs), prior)
        tables = self.tf_tables_of(state)
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
        out["score"] = self.with_term_frequencies(batch, pairs, codes, fit.probability(levels), fit, tables)
        return out
