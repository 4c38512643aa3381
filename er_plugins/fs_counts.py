"""What the ``fellegi_sunter`` verifier counts over the records (:class:`FSCounts`, a mixin of
:class:`er_plugins.fellegi_sunter.FellegiSunter`): the term-frequency tables of its fields and the
adjustments they give, and the record pairs agreeing exactly on each exact field and on every two of them,
from which the dependence of exact agreements among non-matches is measured
(:mod:`er_framework.kernels.dependence`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Batch, Pairs
from er_framework.kernels.dependence import agreeing_pairs, combined_keys, keyed_counts, merge_keyed, present_pairs, value_keys
from er_framework.kernels.em import EMFit, decode, sigmoid
from er_plugins.fs_params import FellegiSunterParams
from er_plugins.fs_refine import RefinedFit, TFAgreements
from er_plugins.record_columns import FieldColumn, field_columns, rows_of

__all__ = [
    "DEPENDENCE_MAX_MATCH_SHARE",
    "DEPENDENCE_MIN_PAIRS",
    "DEPENDENCE_SURE",
    "FSCounts",
]

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


class FSCounts:
    """The counts over the records of a :class:`~er_plugins.fellegi_sunter.FellegiSunter` (its
    ``params``): term frequencies, and the exact agreements whose dependence among non-matches is measured."""

    params: FellegiSunterParams

    def n_levels(self) -> list[int]:
        """The agreement levels of every field (:attr:`FSField.n_levels`)."""
        return [f.n_levels for f in self.params.fields]

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
            singles = {x: merge_keyed([q["exact"][x] for q in parts]) for x in exact}
            joint = {f"{a}|{b}": merge_keyed([q["joint"][f"{a}|{b}"] for q in parts]) for i, a in enumerate(exact) for b in exact[i + 1 :]}
            out["agreement"] = {
                "exact": {x: agreeing_pairs(k, cross) for x, k in singles.items()},
                "joint": {x: agreeing_pairs(k, cross) for x, k in joint.items()},
                # the pairs whose two records both have the field (both fields): where a match can agree
                "present": {x: present_pairs(k, cross) for x, k in (singles | joint).items()},
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
        lambda_over: int = 0,
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
        g, nm, soft = self.non_match_agreements(agreement, fit, patterns, counts, lambda_over)
        agree = patterns == 0
        share, present = self.match_share(agreement, fit, lambda_over)
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
            ia, ib = labels.index(a), labels.index(b)
            # the matches agreeing on both: the fit's posterior says, and at least what lambda and m say (the
            # posterior alone feeds on itself: a lift makes the fit unsure of moved customers agreeing on an
            # email and a birth date, which then count as non-matches sharing them, which raises the lift)
            floor = share * float(present.get(key, lambda_over)) * float(fit.m[ia][0]) * float(fit.m[ib][0])
            matched = max(float(g[agree[:, ia] & agree[:, ib]].sum()), floor)
            nm_both = max(float(both) - matched, 0.0)
            ok = nm_both >= DEPENDENCE_MIN_PAIRS and nm[a] > 0 and nm[b] > 0 and measured[a] and measured[b]
            lifts[key] = round(max(0.0, math.log(nm_both * total / (nm[a] * nm[b]))), 9) if ok else 0.0
        return {
            "order": sorted(nm, key=lambda x: (nm[x], labels.index(x))),
            "measured": [x for x in nm if measured[x]],
            "non_matching_pairs_agreeing": {x: round(v, 1) for x, v in nm.items()},
            "log_lift": lifts,
        }

    @staticmethod
    def match_share(agreement: Mapping[str, Any], fit: EMFit, lambda_over: int) -> tuple[float, dict[str, float]]:
        """Lambda when it is a share of every record pair (``lambda_over`` > 0; else 0: no bound) and the pairs
        whose records both have each field (two fields) of ``agreement``: the model's matches agreeing on f
        are at least ``lambda x present_f x m_f0`` (m is P(agree | match) where both values are there: a
        middle name most records lack is agreed on by few pairs, matches or not)."""
        return (float(fit.lam) if lambda_over > 0 else 0.0), dict(agreement.get("present") or {})

    def non_match_agreements(
        self,
        agreement: Mapping[str, Any],
        fit: EMFit,
        patterns: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
        lambda_over: int = 0,
    ) -> tuple[npt.NDArray[np.float64], dict[str, float], dict[str, float]]:
        """The expected matches of each candidate pattern (``g``; a pattern the fit is sure of,
        :data:`DEPENDENCE_SURE`, is all matches: its sliver of non-matches, 1 - g of tens of thousands of
        duplicates sharing an email and a birth date, is the model's rounding, not pairs), and per exact field
        of ``agreement`` (:meth:`counted_state`) the record pairs agreeing on it less the matches among them
        (``nm``) and the fit's expected matches among them (``soft``). The matches taken out are at least
        what lambda and m say (:meth:`match_share`; ``lambda_over``: the pairs lambda is a share of, 0 when it
        is not every record pair)."""
        labels = [f.label for f in self.params.fields]
        post = fit.probability(patterns)
        g = np.where(post >= DEPENDENCE_SURE, 1.0, post) * counts
        share, present = self.match_share(agreement, fit, lambda_over)
        agree = patterns == 0
        nm: dict[str, float] = {}
        soft: dict[str, float] = {}
        for x, pairs_agreeing in agreement["exact"].items():
            at = agree[:, labels.index(x)]
            matched = max(float(g[at].sum()), share * float(present.get(x, lambda_over)) * float(fit.m[labels.index(x)][0]))
            nm[x] = max(float(pairs_agreeing) - matched, 0.0)
            soft[x] = float((post * counts)[at].sum())
        return g, nm, soft

    def dependence_lifts(self, extra: Mapping[str, Any]) -> tuple[npt.NDArray[np.float64] | None, list[int]]:
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

    def tf_tables_of(self, state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
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
        A fit refined by labels (:class:`~er_plugins.fs_refine.RefinedFit`) scales them by the field's beta.
        """
        return self.tf_from_agreements(self.tf_agreements(batch, pairs), len(pairs), fit, tables)

    def tf_agreements(self, batch: Batch, pairs: Pairs) -> dict[int, TFAgreements]:
        """Per term-frequency field: which pairs have equal values and those values (what
        :meth:`tf_from_agreements` needs of the records)."""
        out: dict[int, TFAgreements] = {}
        if len(pairs) == 0:
            return out
        rows = rows_of(len(batch.records), pairs.left, pairs.right)
        for f, fld in enumerate(self.params.fields):
            if not fld.tf:
                continue
            col = FieldColumn(batch.records, field_columns(fld.field), fld.comparison, rows, fld.last_digits)
            cl, cr = col.codes[pairs.left], col.codes[pairs.right]
            equal = (cl >= 0) & (cl == cr)
            agreed, inverse = np.unique(cl[equal], return_inverse=True)
            out[f] = TFAgreements(equal, list(col.values[agreed].tolist()), inverse.reshape(-1))
            del col
        return out

    def tf_from_agreements(
        self, agreements: Mapping[int, TFAgreements], n: int, fit: EMFit, tables: Mapping[str, Any]
    ) -> dict[int, npt.NDArray[np.float64]]:
        """The adjustments of :meth:`term_frequency_weights` from the pairs' :meth:`tf_agreements` (``n`` pairs)."""
        out: dict[int, npt.NDArray[np.float64]] = {}
        for f, ag in agreements.items():
            table = tables[self.params.fields[f].label]
            known: dict[str, int] = table["counts"]
            count = np.array([known.get(v, 1) for v in ag.values], dtype=np.float64)
            share = count / max(float(table["present"]), 1.0)
            adj = np.zeros(n)
            adj[ag.equal] = (np.log2(fit.u[f][0]) - np.log2(share))[ag.inverse]
            if isinstance(fit, RefinedFit):
                adj = adj * fit.scale(f)
            out[f] = adj
        return out

    def with_term_frequencies(
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
        pats = decode(np.asarray(codes[hit], dtype=np.int64), self.n_levels())
        out = scores.copy()
        out[hit] = sigmoid(fit.logit(pats) + bits[hit] * math.log(2.0))
        return out
