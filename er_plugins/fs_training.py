"""How the ``fellegi_sunter`` verifier estimates its model (:class:`FSTraining`, a mixin of
:class:`er_plugins.fellegi_sunter.FellegiSunter`): u from random pairs, m by EM in training sessions and
lambda over every record pair (``estimation: sessions``), the former EM on the candidates (``estimation:
em``), the fit refined by labelled pairs (:meth:`FSTraining.refine`, the default) or from them
(:meth:`FSTraining.train`), the dependence of exact agreements folded in, and what the report says of the
estimation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import LabelledCodes
from er_framework.components import Context
from er_framework.kernels.dependence import dependence_correction
from er_framework.kernels.em import (
    EPS,
    EMFit,
    SessionFit,
    decode,
    fit_em,
    fit_session,
    floor_normalize,
    monotone_m_step,
    population_lambda,
    sigmoid,
)
from er_plugins.fs_counts import FSCounts
from er_plugins.fs_refine import LN2, LabelledAgreements, RefinedFit, fit_logistic
from er_plugins.record_columns import field_columns

__all__ = [
    "DEPENDENCE_ROUNDS",
    "SESSION_MIN_MATCHES",
    "SINGLE_SESSION_ROUNDS",
    "FSTraining",
]

#: rounds of refitting the fields that only one-field sessions estimate (each round: lambda, then those
#: sessions' m with their share of matches held at what lambda and the other fields say)
SINGLE_SESSION_ROUNDS = 20
#: rounds of finding the implied agreements and lambda together (the matches taken out are the fit's)
DEPENDENCE_ROUNDS = 4

#: a training session whose EM finds fewer matches than this is not used (its m would rest on a handful of pairs)
SESSION_MIN_MATCHES = 10.0


class FSTraining(FSCounts):
    """The estimation of a :class:`~er_plugins.fellegi_sunter.FellegiSunter`'s fit (its ``params``; the
    training sessions follow the ``context``'s blocking keys)."""

    context: Context

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
        n_levels = self.n_levels()
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
        n_levels = self.n_levels()
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
        # the pairs lambda is a share of when it is every record pair (sessions; else no bound from it)
        over = population if refit_lambda and population > 0 else 0
        for _ in range(DEPENDENCE_ROUNDS):
            extra["dependence"] = self.dependence_of(agreement, fit, patterns, counts, population or int(counts.sum()), reliable, over)
            reliable = list(extra["dependence"]["measured"])
            log_lift, order = self.dependence_lifts(extra)
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
        if training is not None and training["fit"] != "refine":
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
        if training is not None and training["fit"] == "refine":
            return f"{self.estimation(None, sessions)}; {self.refined_text(training)}"
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
            self.n_levels(),
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
        n_levels = self.n_levels()
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

        ``labels_fit: labels`` holds m and u there. ``labels_fit: em``
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

    @staticmethod
    def refined_text(training: Mapping[str, Any]) -> str:
        """The report's words for a refinement by labels."""
        beta = ", ".join(f"{k} {v:.3g}" for k, v in training["beta"].items())
        return (
            f"refined by {training['matches']} labelled matches and {training['non_matches']} labelled non-matches "
            f"(Bayesian logistic regression on the fields' weights: beta {beta}; labels' correction {training['b0']:+.3g} bits)"
        )

    def labelled_features(
        self, fit: EMFit, lab: LabelledCodes, tables: Mapping[str, Any]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The labelled pairs' features under the unsupervised ``fit``: per field its match weight in bits (the
        level's, plus the term-frequency adjustment when ``lab`` carries the agreements; 0 where missing), and
        the offset: the prior weight less what dependent exact agreements lose (bits)."""
        n_levels = self.n_levels()
        lpat = decode(np.asarray(lab.codes, dtype=np.int64), n_levels)
        feats = np.zeros((len(lpat), len(n_levels)))
        for f, w in enumerate(fit.weights()):
            lv = lpat[:, f]
            ok = lv >= 0
            feats[:, f] = np.where(ok, w[np.where(ok, lv, 0)], 0.0)
        if isinstance(lab, LabelledAgreements) and lab.agreements:
            for f, adj in self.tf_from_agreements(lab.agreements, len(lpat), fit, tables).items():
                feats[:, f] += adj
        prior = math.log2(fit.lam) - math.log2(1.0 - fit.lam)
        offset = np.full(len(lpat), prior) - fit.dependence(lpat).sum(axis=1) / LN2
        return feats, offset

    def refine(self, fit: EMFit, lab: LabelledCodes, tables: Mapping[str, Any]) -> tuple[EMFit, dict[str, Any]]:
        """``labels_fit: refine``: the unsupervised ``fit`` refined by the labelled pairs (:mod:`er_plugins.fs_refine`):
        beta per field and b0 by Newton's method on the log posterior. No labelled pair: ``fit`` unchanged."""
        p = self.params
        y = np.asarray(lab.match, dtype=bool)
        if len(lab.codes) != len(y):
            raise ValueError(f"fellegi_sunter: {len(lab.codes)} codes of labelled pairs for {len(y)} labels")
        training: dict[str, Any] = {
            "labelled_pairs": int(len(y)),
            "matches": int(y.sum()),
            "non_matches": int((~y).sum()),
            "lambda": "unsupervised fit's (training prior not used by labels_fit: refine)",
            "fit": "refine",
        }
        if len(y) == 0:
            return fit, {**training, "beta": {f.label: 1.0 for f in p.fields}, "b0": 0.0, "iterations": 0}
        feats, offset = self.labelled_features(fit, lab, tables)
        F = len(p.fields)
        mean = np.r_[0.0, np.ones(F)]
        scale = np.r_[p.labels_intercept_scale, np.full(F, p.labels_prior_scale)]
        coef, iterations = fit_logistic(feats, offset, y, mean, scale)
        refined = RefinedFit(
            **{fd.name: getattr(fit, fd.name) for fd in dataclasses.fields(EMFit)}, beta=np.asarray(coef[1:]), b0=float(coef[0])
        )
        beta = {fld.label: float(b) for fld, b in zip(p.fields, coef[1:])}
        return refined, {**training, "beta": beta, "b0": float(coef[0]), "iterations": iterations}
