"""Tests of er_plugins.fs_counts: what the fellegi_sunter verifier counts over the records.

* term-frequency adjustments equal a naive per-pair computation (and explain the score);
* the dependence of exact agreements among relatives: measured, and fewer relatives taken for duplicates.

The kernels (``keyed_counts``, ``dependence_correction``) are tested in tests/kernels/test_dependence.py.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from fs_cases import FIELDS, candidates_by_keys

from er_framework.components import Context
from er_framework.data import Batch, Records
from er_framework.kernels.em import decode
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams


def test_term_frequency_equals_a_naive_computation(people):
    """Every pair's score = sigmoid(pattern log-odds + sum over tf fields agreeing exactly of ln(u_0 / p_v)),
    p_v = the value's share among the records where the field is present."""
    rec, _, keys, pairs, _ = people
    fields = [dict(FIELDS[0]), {**FIELDS[1], "term_frequency": True}, FIELDS[2], FIELDS[3]]
    # (dependence off: the scores are then the independence model's plus the term frequencies; the
    # dependence has its own test)
    v = FellegiSunter(FellegiSunterParams(fields=fields, dependence=False), Context(threshold=0.5, seed=3, blocking_keys=keys))
    batch = Batch(rec)
    scores, fitted = v.fit_score(batch, pairs, None)
    fit = v.fit_of(fitted.state)
    levels = decode(v.pair_codes(batch, pairs), [f.n_levels for f in v.params.fields])
    share = {c: {val: k / len(rec) for val, k in Counter(rec.fields[c]).items()} for c in ("name", "city")}
    tables = fitted.state["term_frequencies"]  # saved with the model: the values seen twice or more
    assert set(tables) == {"name", "city"} and tables["city"]["present"] == len(rec)
    assert tables["name"]["counts"] == {val: k for val, k in Counter(rec.fields["name"]).items() if k >= 2}
    tf_fields = {0: "name", 1: "city"}
    expected = []
    for i, (a, b) in enumerate(zip(pairs.left.tolist(), pairs.right.tolist())):
        z = math.log(fit.lam) - math.log1p(-fit.lam)
        for f in range(4):
            k = int(levels[i, f])
            if k >= 0:
                z += math.log(fit.m[f][k] / fit.u[f][k])
        for f, c in tf_fields.items():
            if rec.fields[c][a] == rec.fields[c][b]:
                z += math.log(fit.u[f][0] / share[c][rec.fields[c][a]])
        expected.append(1.0 / (1.0 + math.exp(-z)))
    np.testing.assert_allclose(scores, expected, rtol=1e-9, atol=1e-12)
    # a saved model applied again gives the same scores; the explanation's weights sum to the score
    np.testing.assert_allclose(v.score_with(batch, pairs, fitted.state), scores, rtol=1e-12)
    terms = v.comparisons(batch, pairs, fitted.state)
    np.testing.assert_allclose(terms["score"], scores, rtol=1e-12)
    z2 = terms["match_weight"] * math.log(2.0)
    np.testing.assert_allclose(1.0 / (1.0 + np.exp(-z2)), scores, rtol=1e-9, atol=1e-12)
    assert "tf_name" in terms and "tf_city" in terms and "tf_year" not in terms and "tf_street" not in terms
    # a common name agreeing weighs less than a rare one
    common = rec.fields["name"].index("n0")
    rare = [i for i, x in enumerate(rec.fields["name"]) if Counter(rec.fields["name"])[x] == 2][0]
    at = {(a, b): i for i, (a, b) in enumerate(zip(pairs.left.tolist(), pairs.right.tolist()))}
    pick = [i for (a, b), i in at.items() if rec.fields["name"][a] == rec.fields["name"][b]]
    tf_bits = {rec.fields["name"][pairs.left[i]]: terms["tf_name"][i] for i in pick}
    assert tf_bits[rec.fields["name"][common]] < 0 < tf_bits[rec.fields["name"][rare]]


def _households(seed: int) -> tuple[Records, list[int]]:
    """People living in households (a surname, an address and a city shared), a fifth of them copied with an
    independent change per field: relatives agree on three rare fields without being the same person."""
    rng = np.random.default_rng(seed)
    first, last, addr, city, year = [], [], [], [], []
    for h in range(900):
        size = int(rng.integers(1, 5))
        sur, street, town = f"s{int(rng.integers(0, 600))}", f"a{h}", f"c{int(rng.integers(0, 60))}"
        for _ in range(size):
            first.append(f"f{int(rng.integers(0, 300))}")
            last.append(sur)
            addr.append(street)
            city.append(town)
            year.append(str(int(rng.integers(1930, 2010))))
    n = len(first)
    entity = list(range(n))
    for i in rng.choice(n, size=n // 5, replace=False).tolist():
        change = rng.random(4) < 0.25
        first.append(first[i] + "x" if change[0] else first[i])
        last.append(last[i])
        addr.append(f"a{int(rng.integers(0, 900))}" if change[1] else addr[i])
        city.append(city[i] if not change[1] else f"c{int(rng.integers(0, 60))}")
        year.append(str(int(year[i]) + 1) if change[2] else year[i])
        entity.append(i)
    fields = {"first": first, "last": last, "addr": addr, "city": city, "year": year}
    return Records.from_columns([str(k) for k in range(len(first))], fields), entity


def test_dependence_of_exact_agreements_among_relatives():
    """Households: the surname, address and city of relatives agree together. With dependence (default)
    the report shows their lifts, the non-matches' co-agreement, and fewer relatives are taken for
    duplicates than with the fields independent."""
    rec, entity = _households(5)
    keys = [["first", "last"], ["year"]]
    fields = [
        {"field": "first", "comparison": "jaro_winkler", "levels": [100, 85]},
        {"field": "last", "comparison": "exact"},
        {"field": "addr", "comparison": "exact"},
        {"field": "city", "comparison": "exact"},
        {"field": "year", "comparison": "exact"},
    ]
    # (a household's pairs are candidates only where another key makes them so: the records' counts of the
    # pairs sharing an address hold the relatives the blocking did not pair)
    pairs = candidates_by_keys(rec, keys)
    y = np.array([entity[a] == entity[b] for a, b in zip(pairs.left.tolist(), pairs.right.tolist())])
    got = {}
    for dependence in (True, False):
        v = FellegiSunter(
            FellegiSunterParams(fields=fields, dependence=dependence),
            Context(threshold=0.5, seed=3, blocking_keys=keys),
        )
        scores, fitted = v.fit_score(Batch(rec), pairs, None)
        keep = scores >= 0.5
        got[dependence] = (int((keep & ~y).sum()), int((keep & y).sum()), fitted)
    dep = got[True][2].report["dependence"]
    assert dep["log_lift"]["last|addr"] > 2.0 and dep["log_lift"]["addr|city"] > 2.0, dep["log_lift"]
    assert dep["order"][0] == "addr"  # the rarest agreement among non-matches speaks first
    assert "dependence" in got[True][2].state and "dependence" not in got[False][2].state
    n_true = int(y.sum())

    # measured: 15 false and 361 true pairs with the dependence, 43 and 381 without (of 426 true candidates):
    # relatives taken for duplicates fall three-fold, F1 0.900 against 0.896; a copy with a near first name
    # and another birth year living with its original is now as likely a relative (this data's relatives
    # have random first names)
    def f1(false: int, true: int) -> float:
        return 2 * true / (false + true + n_true)

    assert got[True][0] * 2.5 < got[False][0], (got[True][:2], got[False][:2], n_true)
    assert f1(*got[True][:2]) > f1(*got[False][:2]), (got[True][:2], got[False][:2], n_true)


def test_the_matches_taken_out_of_two_agreements_are_at_least_what_lambda_and_m_say():
    """The non-matches agreeing on two fields are the pairs agreeing on both less the matches among them; the
    matches are the fit's posterior or, when more, lambda x pairs x m_a0 x m_b0. A fit unsure of the
    matches agreeing on an email and a birth date (moved customers, posterior 0.5) would otherwise leave
    half of them as "non-matches sharing both", a lift that makes it surer still that they are not matches."""
    from er_framework.kernels.em import EMFit

    fields = [{"field": "email", "comparison": "exact"}, {"field": "dob", "comparison": "exact"}]
    v = FellegiSunter(FellegiSunterParams(fields=fields), Context(threshold=0.5, seed=3))
    population = 10**8
    # the candidates: 1,000 pairs agreeing on both, which the fit gives posterior 0.5; 9,000 agreeing on dob only
    patterns = np.array([[0, 0], [1, 0]])
    counts = np.array([1000.0, 9000.0])
    m = [np.array([0.9, 0.1]), np.array([0.95, 0.05])]
    u = [np.array([1e-5, 1 - 1e-5]), np.array([1e-4, 1 - 1e-4])]
    fit = EMFit(lam=1.2e-5, m=m, u=u)  # 1,200 matches among all pairs
    # choose u so that the posterior of the pattern agreeing on both is 0.5
    odds = fit.lam / (1 - fit.lam) * (0.9 / 1e-5) * (0.95 / 1e-4)
    u[0][0] *= odds
    u[0][1] = 1 - u[0][0]
    assert fit.probability(patterns)[0] == pytest.approx(0.5, rel=1e-6)
    agreement = {"exact": {"email": 1100.0, "dob": 20000.0}, "joint": {"email|dob": 1000.0}}
    dep = v.dependence_of(agreement, fit, patterns, counts, population, None, population)
    lam_n = fit.lam * population
    want_matched = max(0.5 * 1000.0, lam_n * 0.9 * 0.95)  # 1,026: lambda and m say more than the posterior's 500
    nm_email = 1100.0 - max(0.5 * 1000.0, lam_n * 0.9)
    nm_dob = 20000.0 - max(0.5 * 1000.0 + float(fit.probability(patterns)[1]) * 9000.0, lam_n * 0.95)
    assert dep["non_matching_pairs_agreeing"] == {"email": round(nm_email, 1), "dob": round(nm_dob, 1)}
    assert 1000.0 - want_matched < 0 and dep["log_lift"]["email|dob"] == 0.0
    # without the bound (lambda_over 0: the posterior alone) 500 pairs would be non-matches agreeing on both
    loose = v.dependence_of(agreement, fit, patterns, counts, population, None, 0)
    assert loose["log_lift"]["email|dob"] > 5.0
    # m is P(agree | match) where both records have the values: the bound counts only such pairs (a field most
    # records lack, such as a middle name, bounds nothing)
    sparse = {**agreement, "present": {"email": population / 100, "dob": population / 100, "email|dob": population / 100}}
    got = v.dependence_of(sparse, fit, patterns, counts, population, None, population)
    assert got["log_lift"]["email|dob"] == loose["log_lift"]["email|dob"]
    assert got["non_matching_pairs_agreeing"]["email"] == loose["non_matching_pairs_agreeing"]["email"]
