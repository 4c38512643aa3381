"""Tests of er_plugins.records_scoring: the plugin that registers the field_score and fellegi_sunter verifiers.

* the hook registers both;
* end to end on generated customers (er_framework.synth.customers): F1 of both,
  on the true pairs plus random pairs and on the seed's blocking.

Run with ``-s`` to see the measured numbers.
"""

from __future__ import annotations

import json
import re

import numpy as np
from records_cases import CUSTOMER_FIELD_RULES, CUSTOMER_FS_FIELDS, prf, truth_labels, truth_plus_random

import er_plugins.records_scoring as rs
from er_framework.components import Context
from er_framework.data import Pairs
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams
from er_plugins.field_score import FieldScore, FieldScoreParams


def test_registered_by_the_hook():
    assert rs.er_register_verifiers() == [FieldScore, FellegiSunter]
    assert FieldScore.needs == frozenset({"fields"}) and FellegiSunter.needs == frozenset({"fields"})
    # the listing (er plugins) serializes the defaults
    from er_framework.registry import describe_params

    json.dumps(describe_params(FieldScore))
    json.dumps(describe_params(FellegiSunter))


# ---------------------------------------------------------------------------
# end to end on generated customers


def _seed_blocking(c: dict, max_group: int = 50) -> Pairs:
    """SEEDS §5's simple LSH: candidates agree exactly on name, address or phone digits (cross-source)."""
    rec = c["records"]
    f = rec.fields
    keys = {
        "name": [" ".join(x for x in (a, b) if x) or None for a, b in zip(f["first_name"], f["last_name"])],
        "address": f["address"],
        "phone": [(re.sub(r"\D", "", v)[-10:] or None) if v else None for v in f["phone"]],
    }
    lefts, rights = [], []
    src = rec.source
    for values in keys.values():
        index: dict[str, int] = {}
        codes = np.array([-1 if v is None else index.setdefault(v, len(index)) for v in values])
        ok = np.flatnonzero(codes >= 0)
        order = ok[np.argsort(codes[ok], kind="stable")]
        cc = codes[order]
        starts = np.flatnonzero(np.r_[True, cc[1:] != cc[:-1]])
        ends = np.r_[starts[1:], len(cc)]
        for s, e in zip(starts.tolist(), ends.tolist()):
            if 2 <= e - s <= max_group:  # skip big blocks (the placeholder phone)
                g = order[s:e]
                a, b = np.meshgrid(g, g)
                keep = (src[a] == 0) & (src[b] == 1)
                lefts.append(a[keep])
                rights.append(b[keep])
    return Pairs(np.concatenate(lefts), np.concatenate(rights)).normalized()


def test_end_to_end_truth_plus_random_pairs(customers):
    c = customers
    pairs, y = truth_plus_random(c)
    n_true = len(c["truth_left"])
    fs = FieldScore(FieldScoreParams(fields=CUSTOMER_FIELD_RULES, threshold=200), Context(workers=2))
    s = fs.score(c["batch"], pairs)
    f_prf = prf(s >= fs.threshold, y, n_true)
    sweep = {t: round(prf(s >= t, y, n_true)[2], 4) for t in (160, 180, 200, 220, 240)}
    # EM on the candidates (estimation: em) estimates lambda among them; the default (training sessions,
    # none here: no blocking keys) is checked below
    fsun = FellegiSunter(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS, estimation="em"), Context(workers=2, threshold=0.5, seed=1))
    p, fitted = fsun.fit_score(c["batch"], pairs, None)
    rep = {**fsun.describe(), **fitted.report}
    json.dumps(rep)
    json.dumps(fs.describe())
    s_prf = prf(p >= fsun.threshold, y, n_true)
    fixed = FellegiSunter(
        FellegiSunterParams(fields=CUSTOMER_FS_FIELDS, fix_u=True, estimation="em"), Context(workers=2, threshold=0.5, seed=1)
    )
    x_prf = prf(fixed.score(c["batch"], pairs) >= 0.5, y, n_true)
    default = FellegiSunter(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS), Context(workers=2, threshold=0.5, seed=1))
    d_scores, d_fit = default.fit_score(c["batch"], pairs, None)
    d_prf = prf(d_scores >= 0.5, y, n_true)
    # lambda over every record pair: the expected matches among the candidates are the true ones
    assert d_fit.report["sessions"]["lambda_over"] == "population"
    assert abs(d_fit.report["expected_matches_in_candidates"] - n_true) < 0.02 * n_true
    assert d_prf[2] >= 0.95
    print(
        f"\ntruth + 200k random pairs ({len(pairs)} candidates, {n_true} true):"
        f"\n  field_score >= 200: P {f_prf[0]:.4f} R {f_prf[1]:.4f} F1 {f_prf[2]:.4f}; F1 by threshold {sweep}"
        f"\n  fellegi_sunter >= 0.5: P {s_prf[0]:.4f} R {s_prf[1]:.4f} F1 {s_prf[2]:.4f}; lambda {rep['lambda']:.5f} "
        f"(true {n_true / len(pairs):.5f}), {rep['iterations']} iterations, {rep['patterns']} patterns"
        f"\n  fellegi_sunter fix_u: P {x_prf[0]:.4f} R {x_prf[1]:.4f} F1 {x_prf[2]:.4f}"
    )
    assert f_prf[2] >= 0.95
    assert s_prf[2] >= 0.95
    assert x_prf[2] >= 0.95
    assert rep["converged"] and abs(rep["lambda"] - n_true / len(pairs)) < 0.002
    # agreement counts for a match: per field, exact has the highest weight, "else" the lowest (negative)
    for name, fld in rep["per_field"].items():
        w = fld["weight_log2"]
        assert w[0] == max(w) and w[0] > 0 and w[-1] == min(w) and w[-1] < 0, (name, w)
        assert fld["missing_weight"] == 0.0
    assert rep["per_field"]["phone"]["missing_pairs"] > 0


def test_end_to_end_seed_blocking(customers):
    """Candidates of SEEDS §5's simple LSH (one field identical); non-matches there share a field.

    u of random pairs would overrate the blocked agreements: with fix_u every
    candidate looks like a match, EM's own u (the default) does not.
    """
    c = customers
    pairs = _seed_blocking(c)
    y = truth_labels(c, pairs)
    n_true = len(c["truth_left"])
    s = FieldScore(FieldScoreParams(fields=CUSTOMER_FIELD_RULES, threshold=200), Context(workers=2)).score(c["batch"], pairs)
    f_prf = prf(s >= 200, y, n_true)
    free = FellegiSunter(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS, estimation="em"), Context(workers=2, threshold=0.5, seed=1))
    free_scores, free_fit = free.fit_score(c["batch"], pairs, None)
    s_prf = prf(free_scores >= 0.5, y, n_true)
    # the default: u of random pairs held, m in training sessions on the blocking keys (whose pairs are
    # all candidates, so within a session the other fields are compared as among random pairs)
    keys = [["first_name", "last_name"], ["address"], ["phone"]]
    sess = FellegiSunter(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS), Context(workers=2, threshold=0.5, seed=1, blocking_keys=keys))
    sess_scores, sess_fit = sess.fit_score(c["batch"], pairs, None)
    t_prf = prf(sess_scores >= 0.5, y, n_true)
    used = [x["agree_on"] for x in sess_fit.report["sessions"]["sessions"] if x["used"]]
    assert used == [["first_name", "last_name"], ["location"], ["phone"]], used
    assert t_prf[2] >= 0.95 and t_prf[2] >= s_prf[2] - 0.005, (t_prf, s_prf)
    fixed = FellegiSunter(
        FellegiSunterParams(fields=CUSTOMER_FS_FIELDS, fix_u=True, estimation="em"), Context(workers=2, threshold=0.5, seed=1)
    )
    fixed_scores, fixed_fit = fixed.fit_score(c["batch"], pairs, None)
    x_prf = prf(fixed_scores >= 0.5, y, n_true)
    print(
        f"\nseed blocking ({len(pairs)} candidates, {int(y.sum())} of {n_true} true pairs among them; recall over all true pairs):"
        f"\n  field_score >= 200: P {f_prf[0]:.4f} R {f_prf[1]:.4f} F1 {f_prf[2]:.4f}"
        f"\n  fellegi_sunter >= 0.5: P {s_prf[0]:.4f} R {s_prf[1]:.4f} F1 {s_prf[2]:.4f}"
        f" (lambda {free_fit.report['lambda']:.4f}, true {y.mean():.4f})"
        f"\n  fellegi_sunter fix_u: P {x_prf[0]:.4f} R {x_prf[1]:.4f} F1 {x_prf[2]:.4f} (lambda {fixed_fit.report['lambda']:.4f})"
        f"\n  fellegi_sunter sessions: P {t_prf[0]:.4f} R {t_prf[1]:.4f} F1 {t_prf[2]:.4f}"
    )
    assert f_prf[2] >= 0.95
    assert s_prf[2] >= 0.95
    assert x_prf[2] < s_prf[2]
