"""Tests of er_plugins.fs_training: the fellegi_sunter verifier's default estimation.

* training sessions: chosen from the job's blocking keys (or ``sessions:``), reported side by side, lambda
  over every record pair (its expected matches near the true count on generated customers);
* without a session, m from EM on the candidates (and a warning);
* u from random pairs with a fit's matches taken out (a naive per-pair computation).

The kernels (``fit_session``, ``population_lambda``) are tested against naive references in
tests/kernels/test_em.py.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from fs_cases import FIELDS
from pydantic import ValidationError

from er_framework.components import Context
from er_framework.data import Batch
from er_framework.kernels.em import decode
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams


def test_sessions_from_the_blocking_keys_and_lambda_over_every_pair(people):
    rec, entity, keys, pairs, y = people
    v = FellegiSunter(FellegiSunterParams(fields=FIELDS), Context(threshold=0.5, seed=3, blocking_keys=keys))
    assert v.session_fields() == [(0,), (1, 2)]
    scores, fitted = v.fit_score(Batch(rec), pairs, None)
    rep = fitted.report
    s = rep["sessions"]
    assert s["lambda_over"] == "population" and rep["population_pairs"] == len(rec) * (len(rec) - 1) // 2
    assert [x["agree_on"] for x in s["sessions"]] == [["name"], ["city", "year"]]
    assert all(x["used"] for x in s["sessions"])
    assert not any(x["share_held"] for x in s["sessions"])
    assert s["m_from_one_field_sessions"] == [] and s["m_from_candidate_em"] == []
    # each session estimates the fields it did not select on, side by side
    assert set(s["sessions"][0]["m"]) == {"city", "year", "street"} and set(s["sessions"][1]["m"]) == {"name", "street"}
    assert "training sessions" in rep["estimation"]
    # the expected matches over every pair: of the order of the true matching pairs among the candidates
    # (pairs whose fields mostly disagree get a posterior near 0, match or not: measured 0.86 of them)
    true_pairs = sum(k * (k - 1) // 2 for k in Counter(entity).values())
    assert true_pairs == 600 and 0.85 * true_pairs < int(y.sum()) < true_pairs
    assert 0.7 * y.sum() < rep["expected_matches"] < 1.1 * y.sum(), rep["expected_matches"]
    assert rep["expected_matches"] == pytest.approx(rep["lambda"] * rep["population_pairs"], abs=0.05)
    keep = scores >= 0.5
    precision, recall = (keep & y).sum() / keep.sum(), (keep & y).sum() / y.sum()
    assert precision > 0.9 and recall > 0.75, (precision, recall)  # measured 0.958 and 0.801


def test_sessions_set_in_the_job_and_checked():
    v = FellegiSunter(FellegiSunterParams(fields=FIELDS, sessions=[["year", "city"], ["name"]]), Context(threshold=0.5))
    assert v.session_fields() == [(1, 2), (0,)]  # (field indices, in the order of the fields)
    with pytest.raises(ValidationError, match="sessions\\[0\\]"):
        FellegiSunterParams(fields=FIELDS, sessions=[["nope"]])
    with pytest.raises(ValidationError, match="u_from_random_pairs"):
        FellegiSunterParams(fields=FIELDS, u_from_random_pairs=0)
    FellegiSunterParams(fields=FIELDS, u_from_random_pairs=0, estimation="em")  # the former EM needs none


def test_no_session_falls_back_to_em_for_m(people):
    rec, _, _, pairs, _ = people
    v = FellegiSunter(FellegiSunterParams(fields=FIELDS), Context(threshold=0.5, seed=3))  # no blocking keys
    _, fitted = v.fit_score(Batch(rec), pairs, None)
    assert fitted.report["sessions"]["sessions"] == []
    assert fitted.report["sessions"]["m_from_candidate_em"] == ["name", "city", "year", "street"]
    (warning,) = fitted.report["warnings"]
    assert warning["code"] == "fs_no_session" and "name" in warning["message"] and "field_hash" in warning["fix"]
    assert fitted.report["weights_monotone"]


@pytest.mark.parametrize("lam", [0.01, 0.0001])
def test_random_pair_u_takes_out_the_fits_matches_at_most_lambda_of_them(lam: float):
    """A random sample of all pairs holds about lambda matches: with a fit, u counts each random pair as the
    non-match it is by the fit's posterior, the matches taken out scaled down to lambda of the pairs when
    the fit finds more (a naive per-pair computation)."""
    from er_framework.kernels.em import EMFit, pattern_radix

    fields = [{"field": "id", "comparison": "exact"}, {"field": "name", "comparison": "jaro_winkler", "levels": [100, 85]}]
    v = FellegiSunter(FellegiSunterParams(fields=fields), Context(threshold=0.5, seed=3))
    n_levels = [2, 3]
    rng = np.random.default_rng(0)
    levels = np.stack([rng.choice(2, 5000, p=[0.02, 0.98]), rng.choice(3, 5000, p=[0.05, 0.05, 0.9])], axis=1)
    levels[rng.random(5000) < 0.1, 1] = -1  # a missing name
    codes, counts = np.unique(((levels + 1) * pattern_radix(n_levels)).sum(axis=1), return_counts=True)
    counts = counts.astype(np.float64)
    m = [np.array([0.9, 0.1]), np.array([0.8, 0.15, 0.05])]
    u = [np.array([0.001, 0.999]), np.array([0.01, 0.02, 0.97])]
    fit = EMFit(lam=lam, m=m, u=u)
    got = v.random_pair_u(codes, counts, fit)
    raw = v.random_pair_u(codes, counts)
    assert got is not None and raw is not None

    pats = decode(codes, n_levels)
    post = []
    for row in pats.tolist():
        a, b = lam, 1 - lam
        for f, k in enumerate(row):
            if k >= 0:
                a *= m[f][k]
                b *= u[f][k]
        post.append(a / (a + b))
    found = sum(p * c for p, c in zip(post, counts.tolist()))
    scale = min(1.0, lam * counts.sum() / found)
    for f, k in enumerate(n_levels):
        acc = [0.5] * k
        for row, p, c in zip(pats.tolist(), post, counts.tolist()):
            if row[f] >= 0:
                acc[row[f]] += c * (1 - p * scale)
        want = np.array(acc) / sum(acc)
        assert got[f] == pytest.approx(want, rel=1e-9), (f, got[f], want)
    # the exact agreement on the identifying field is mostly the matches': its u falls
    assert got[0][0] < raw[0][0]
