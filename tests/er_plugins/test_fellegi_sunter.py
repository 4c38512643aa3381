"""Tests of er_plugins.fellegi_sunter: the fellegi_sunter verifier.

* on generated customers (er_framework.synth.customers) a missing field weighs 0 and the
  probability rises with agreement; the verifier contract;
* the shipped jobs (Febrl3, Febrl4, customers): the default weights are monotone;
* training from labelled pairs; explanations (comparisons) and the fitted state applied again.

The parameters are tested in test_fs_params.py, the counts over the records (term frequencies, dependence)
in test_fs_counts.py, the estimation (training sessions, random-pair u) in test_fs_training.py.

Run with ``-s`` to see the measured numbers.
"""

from __future__ import annotations

import csv
import json
import math
from typing import Any

import numpy as np
import pytest
from records_cases import CONFIGS, CUSTOMER_FS_FIELDS, SHIPPED, candidates_and_labels, febrl4_sample, prf, truth_plus_random

from er_framework.capabilities import Fitted, LabelledCodes
from er_framework.components import Context
from er_framework.config import parse_job
from er_framework.data import Batch, LabelledPairs, Pairs, Records, pair_population
from er_framework.executors.local import run_local
from er_framework.testing import check_verifier
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams

# ---------------------------------------------------------------------------
# end to end on generated customers


def test_fellegi_sunter_missing_weighs_zero_and_agreement_raises_probability(customers):
    """Probe pairs scored with the candidates: a missing phone adds 0, a closer field raises the probability."""
    c = customers
    rec = c["records"]
    pairs, _ = truth_plus_random(c, k=50_000)
    # probe records: X agrees with its partner on everything, Y is X without the phone, Z has a typo in the last name
    a0 = int(c["truth_left"][0])
    base = {k: rec.fields[k][a0] for k in rec.fields}
    probes = [dict(base), {**base, "phone": None}, {**base, "last_name": base["last_name"] + "x"}]
    extra = Records.from_columns(["x", "y", "z"], {k: [p[k] for p in probes] for k in rec.fields}, "B2")
    all_rec = Records.concat([rec, extra])
    n = len(rec)
    probe_pairs = Pairs(np.array([a0, a0, a0]), np.array([n, n + 1, n + 2]))
    both = Pairs(np.concatenate([pairs.left, probe_pairs.left]), np.concatenate([pairs.right, probe_pairs.right]))
    # (no term frequencies: a pair's score is then its pattern's probability, the property checked here)
    fields = [{**f.model_dump(), "term_frequency": False} for f in FellegiSunterParams(fields=CUSTOMER_FS_FIELDS).fields]
    v = FellegiSunter(FellegiSunterParams(fields=fields, dependence=False), Context(threshold=0.5, seed=2))
    batch = Batch(all_rec, cross_source_only=True)
    scores, fitted = v.fit_score(batch, both, None)
    p = scores[-3:]
    fit = v.fit_of(fitted.state)
    lv = v.comparison_levels(batch, probe_pairs)
    fields = [f.label for f in v.params.fields]
    ph, ln = fields.index("phone"), fields.index("last_name")
    assert lv[1, ph] == -1 and lv[0, ph] >= 0
    assert np.array_equal(np.delete(lv[0], ph), np.delete(lv[1], ph))
    z = fit.logit(lv)
    # the scores are the probabilities of these patterns; the missing phone adds exactly 0
    np.testing.assert_allclose(p, fit.probability(lv), rtol=1e-12)
    w = fit.weights()
    assert z[0] - z[1] == pytest.approx(w[ph][lv[0, ph]] * math.log(2), rel=1e-9)
    assert _report(v, fitted)["per_field"]["phone"]["missing_weight"] == 0.0
    # a one-letter typo in the last name: a lower level, a lower match weight
    assert lv[2, ln] > lv[0, ln]
    assert z[0] > z[2]
    # monotone in agreement: turning any field of any pattern into an exact agreement, or any
    # field into the "else" level, raises / lowers the match probability
    rng = np.random.default_rng(0)
    n_levels = [len(f.thresholds) + 1 for f in v.params.fields]
    pats = np.stack([rng.integers(-1, k, 2000) for k in n_levels], axis=1)
    for f, k in enumerate(n_levels):
        up = pats[pats[:, f] != 0].copy()
        before = fit.probability(up)
        up[:, f] = 0
        # (not strictly: the monotone fit may pool adjacent levels into one weight)
        assert np.all(fit.probability(up) >= before) and np.all(fit.logit(up) >= fit.logit(pats[pats[:, f] != 0]))
        down = pats[pats[:, f] != k - 1].copy()
        before = fit.logit(down)
        down[:, f] = k - 1
        assert np.all(fit.logit(down) <= before)
        assert w[f][0] > w[f][-1]  # exact agreement weighs more than the "else" level


def test_fellegi_sunter_contract(small):
    batch, pairs = small
    fields = [
        {"field": ["f1", "f2"], "comparison": "token_sort_ratio"},
        {"field": "f1", "comparison": "exact"},
        {"field": "phone", "comparison": "digits"},
    ]
    v = FellegiSunter(FellegiSunterParams(fields=fields, u_from_random_pairs=2000), Context(threshold=0.5, seed=4))
    s = check_verifier(v, batch, pairs)
    assert np.all((s >= 0) & (s <= 1))
    assert v.fit_score(batch, Pairs.empty(), None)[1].report["pairs_scored"] == 0  # a fit on no pairs
    scores, fitted = v.fit_score(batch, pairs, None)
    np.testing.assert_array_equal(scores, s)
    rep = _report(v, fitted)
    assert set(rep) >= {"lambda", "iterations", "converged", "loglik", "per_field", "label_swapped", "patterns"}
    for fld in rep["per_field"].values():
        assert len(fld["m"]) == len(fld["u"]) == len(fld["levels"]) == len(fld["weight_log2"])
        assert sum(fld["m"]) == pytest.approx(1.0) and sum(fld["u"]) == pytest.approx(1.0)
    # deterministic in the seed, independent of the number of workers
    again = FellegiSunter(FellegiSunterParams(fields=fields, u_from_random_pairs=2000), Context(threshold=0.5, seed=4, workers=2))
    np.testing.assert_array_equal(again.score(batch, pairs), s)


# ---------------------------------------------------------------------------
# the shipped jobs: Febrl3, Febrl4 and the customers (read from configs/data, run by the engine)


def _fs(d: dict[str, Any], **changes: Any) -> FellegiSunter:
    """A fresh verifier of the shipped job's parameters (with ``changes``) and context, as the engine makes it."""
    job = d["job"]
    params = job.verifier.params
    assert isinstance(params, FellegiSunterParams)
    return FellegiSunter(FellegiSunterParams(**{**params.model_dump(), **changes}), job.context)


def _report(v: FellegiSunter, fitted: Fitted) -> dict[str, Any]:
    """The verifier's report of a fit, as report.json shows it: its parameters and what the fit said."""
    return {**v.describe(), **fitted.report}


def _fit(v: FellegiSunter, batch: Batch, pairs: Pairs, labelled: LabelledPairs | None = None) -> tuple[np.ndarray, dict[str, Any], Fitted]:
    """``v``'s fit on ``pairs``: the scores, the report and the fit."""
    scores, fitted = v.fit_score(batch, pairs, labelled)
    return scores, _report(v, fitted), fitted


@pytest.mark.parametrize("name", list(SHIPPED))
def test_shipped_jobs_default_weights_are_monotone(shipped, name):
    d = shipped[name]
    rep = d["result"].report["verifier"]
    assert rep["monotone"] is True and rep["weights_monotone"] is True
    assert "monotone in the level" in rep["estimation"]
    for field, f in rep["per_field"].items():
        w = f["weight_log2"]
        assert all(b <= a + 1e-9 for a, b in zip(w, w[1:])), (name, field, w)
        assert w[0] > 0 > w[-1], (name, field, w)
    # the same candidates with the EM of before (estimation: em, monotone: false): same pairs at the threshold
    # or fewer right than EM with the monotone constraint
    batch, pairs, y = candidates_and_labels(d)
    new = _fs(d, estimation="em").score(batch, pairs) >= 0.9
    old_v = _fs(d, monotone=False, estimation="em")
    old_scores, old_rep, _ = _fit(old_v, batch, pairs)
    old = old_scores >= 0.9
    assert "unconstrained" in old_rep["estimation"]
    tp_new, tp_old = int((new & y).sum()), int((old & y).sum())
    print(
        f"\n{name}: {len(pairs)} candidates; true pairs kept at 0.9: monotone {tp_new} of {int(new.sum())}, "
        f"unconstrained {tp_old} of {int(old.sum())}; unconstrained monotone: {old_rep['weights_monotone']}"
    )
    # no more false pairs; the true pairs kept within 0.05% (on Febrl3 with the any-order name pass, the
    # unconstrained EM keeps one true pair more, 6,524 against 6,523; on the others monotone keeps as many or more)
    assert tp_new >= tp_old - max(1, tp_old // 2000) and int((new & ~y).sum()) <= int((old & ~y).sum())
    if name == "febrl4":  # the example: before, given_name >= 92 outweighed an exact given_name
        w = old_rep["per_field"]["given_name"]["weight_log2"]
        assert w[1] > w[0] and not old_rep["weights_monotone"]


# ---------------------------------------------------------------------------
# training from labelled pairs


def _labelled(pairs: Pairs, y: np.ndarray, idx: np.ndarray, lam: str = "em") -> LabelledPairs:
    return LabelledPairs(Pairs(pairs.left[idx], pairs.right[idx]), y[idx], lam)


def test_training_labels_alone_counts_levels(shipped):
    d = shipped["febrl4"]
    batch, pairs, y = candidates_and_labels(d)
    idx = np.random.default_rng(1).choice(len(pairs), 200, replace=False)
    v = _fs(d, labels_fit="labels", monotone=False, smoothing=0.5)
    _, rep, _ = _fit(v, batch, pairs, _labelled(pairs, y, idx, "labels"))
    assert rep["training"]["matches"] == int(y[idx].sum()) and rep["training"]["non_matches"] == 200 - int(y[idx].sum())
    assert rep["lambda"] == pytest.approx(y[idx].mean())
    assert rep["estimation"].startswith("trained: m and u from") and rep["u_mode"] == "from labelled non-matches"
    lv = v.comparison_levels(batch, Pairs(pairs.left[idx], pairs.right[idx]))
    for f, fld in enumerate(v.params.fields):
        ok = lv[:, f] >= 0
        K = len(fld.thresholds) + 1
        a = np.bincount(lv[ok & y[idx], f], minlength=K) + 0.5
        b = np.bincount(lv[ok & ~y[idx], f], minlength=K) + 0.5
        np.testing.assert_allclose(rep["per_field"][fld.label]["m"], a / a.sum(), rtol=1e-12)
        np.testing.assert_allclose(rep["per_field"][fld.label]["u"], b / b.sum(), rtol=1e-12)
        assert rep["training"]["level_counts"][fld.label]["matches"] == (a - 0.5).astype(int).tolist()
    # lambda by EM on the candidates, m and u held at the labels' estimate
    v2 = _fs(d, labels_fit="labels", monotone=False, smoothing=0.5)
    _, r2, _ = _fit(v2, batch, pairs, _labelled(pairs, y, idx, "em"))
    assert r2["per_field"] == rep["per_field"]
    assert abs(r2["lambda"] - y.mean()) < 0.01 and abs(rep["lambda"] - y.mean()) > 0.01


@pytest.mark.parametrize("how", ["random", "borderline"])
def test_training_from_200_labels_on_febrl4(shipped, how):
    """200 labelled candidates (random, or nearest the threshold as er review picks them): the default
    (semi-supervised EM) keeps at least the unsupervised true pairs; m and u from the labels alone are reported."""
    d = shipped["febrl4"]
    batch, pairs, y = candidates_and_labels(d)
    s = d["result"].candidates.score
    if how == "random":
        idx = np.random.default_rng(2).choice(len(pairs), 200, replace=False)
    else:
        above, below = np.flatnonzero(s >= 0.9), np.flatnonzero(s < 0.9)
        idx = np.r_[above[np.argsort(s[above], kind="stable")][:100], below[np.argsort(-s[below], kind="stable")][:100]]
    n_true = len(d["truth"])
    unsup = prf(s >= 0.9, y, n_true)[2]
    got = {}
    for fit in ("em", "labels"):
        v = _fs(d, labels_fit=fit)
        scores, rep, _ = _fit(v, batch, pairs, _labelled(pairs, y, idx))
        got[fit] = prf(scores >= 0.9, y, n_true)[2]
        assert rep["weights_monotone"]
    print(
        f"\nfebrl4, 200 {how} labels ({int(y[idx].sum())} matches): pairwise F1 at 0.9 unsupervised {unsup:.5f}, "
        f"semi-supervised {got['em']:.5f}, m/u from the labels alone {got['labels']:.5f}"
    )
    assert got["em"] >= unsup


def test_training_needs_both_classes_and_codes(shipped):
    d = shipped["febrl4"]
    batch, pairs, y = candidates_and_labels(d)
    for cls in (True, False):
        v = _fs(d, labels_fit="em")  # (labels_fit: refine fits one kind too: tests/er_plugins/test_fs_refine.py)
        idx = np.flatnonzero(y == cls)[:20]
        with pytest.raises(ValueError, match="at least one of each"):
            v.fit_score(batch, pairs, _labelled(pairs, y, idx))
    # an executor calling fit_counts itself hands over the labelled pairs' codes (LabelledCodes), one per label
    v = _fs(d, labels_fit="em")
    labelled = _labelled(pairs, y, np.arange(50))
    codes = v.pair_codes(batch, pairs)
    uniq, cnt = np.unique(codes, return_counts=True)
    lcodes = v.pair_codes(batch, labelled.pairs)
    with pytest.raises(ValueError, match="codes of labelled pairs"):
        v.fit_counts(uniq, cnt.astype(float), np.zeros(0, np.int64), np.zeros(0), LabelledCodes(lcodes[:-1], labelled.match, labelled.lam))
    table, _ = v.fit_counts(
        uniq, cnt.astype(float), np.zeros(0, np.int64), np.zeros(0), LabelledCodes(lcodes, labelled.match, labelled.lam)
    )
    # (fit_score adds the term-frequency adjustments to the table's scores: off here, to compare the table)
    # (nor the record counts: the dependence of exact agreements)
    no_tf = [{**f.model_dump(), "term_frequency": False} for f in d["job"].verifier.params.fields]
    v2 = _fs(d, fields=no_tf, dependence=False, labels_fit="em")
    np.testing.assert_array_equal(table[np.searchsorted(uniq, codes)], v2.fit_score(batch, pairs, labelled)[0])
    # labels_fit: refine, from the codes with the random pairs and the population as fit_score has them
    v3 = _fs(d, fields=no_tf, dependence=False)
    sample = v3.sample_pairs(batch.records.source, batch.cross_source_only)
    s_uniq, s_cnt = np.unique(v3.pair_codes(batch, sample), return_counts=True)
    population = pair_population(batch.records.source, bool(batch.cross_source_only))
    table, _ = v3.fit_counts(
        uniq, cnt.astype(float), s_uniq, s_cnt.astype(float), LabelledCodes(lcodes, labelled.match, labelled.lam), population=population
    )
    np.testing.assert_array_equal(table[np.searchsorted(uniq, codes)], v3.fit_score(batch, pairs, labelled)[0])


def test_training_through_a_job(tmp_path, shipped):
    """training: {labels: FILE} of a job reaches the verifier (the engine maps the ids to batch rows)."""
    d = shipped["febrl4"]
    r = d["result"]
    ids, names, src = r.records.ids, r.records.source_names, r.records.source
    c = r.candidates
    _, pairs, y = candidates_and_labels(d)
    idx = np.random.default_rng(4).choice(len(pairs), 200, replace=False)
    with open(tmp_path / "labels.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        for k in idx.tolist():
            i, j = int(c.left[k]), int(c.right[k])
            w.writerow([names[src[i]], ids[i], names[src[j]], ids[j], "yes" if y[k] else "no"])
    text = (CONFIGS / "febrl4.yaml").read_text().replace("path: data/", f"path: {CONFIGS}/data/")
    (tmp_path / "job.yaml").write_text(text + "\ntraining:\n  labels: labels.csv\n  prior: labels\n")
    res = run_local(parse_job(tmp_path / "job.yaml"), write=False)
    rep = res.report["verifier"]
    # labels_fit: refine (default): the unsupervised fit, refined; the training prior is not used
    assert rep["training"]["matches"] == int(y[idx].sum()) and rep["training"]["fit"] == "refine"
    assert rep["estimation"].startswith("training sessions:") and "refined by" in rep["estimation"]
    text = text.replace("type: fellegi_sunter ", "type: fellegi_sunter\n  labels_fit: em\n ", 1)
    assert "labels_fit: em" in text
    (tmp_path / "job.yaml").write_text(text + "\ntraining:\n  labels: labels.csv\n  prior: labels\n")
    rep = run_local(parse_job(tmp_path / "job.yaml"), write=False).report["verifier"]
    assert rep["training"]["matches"] == int(y[idx].sum()) and rep["training"]["lambda"] == "labels"
    assert rep["estimation"].startswith("trained: m and u by EM")
    assert rep["weights_monotone"]


# ---------------------------------------------------------------------------
# explanations: comparisons, and the fitted state applied again


def test_fellegi_sunter_comparisons_sum_to_the_score(shipped):
    d = shipped["febrl4"]
    batch, pairs, some = febrl4_sample(d)
    v = _fs(d)
    scores, rep, fitted = _fit(v, batch, pairs)
    cmp = v.comparisons(batch, some, fitted.state)
    labels = [f.label for f in v.params.fields]
    tf = {f.label for f in v.params.fields if f.tf}
    assert tf == {"given_name", "surname", "suburb"}  # jaro_winkler fields with an exact level: term frequencies by default
    expected = (
        ["prior_weight"]
        + [
            x
            for lab in labels
            for x in (
                f"level_{lab}",
                f"weight_{lab}",
                *([f"tf_{lab}"] if lab in tf else []),
                *([f"dependence_{lab}"] if f"dependence_{lab}" in cmp else []),
            )
        ]
        + ["match_weight", "score"]
    )
    assert list(cmp) == expected
    assert all(len(col) == len(some) for col in cmp.values())
    total = cmp["prior_weight"] + sum(cmp[f"weight_{lab}"] for lab in labels)
    np.testing.assert_allclose(cmp["match_weight"], total, rtol=0, atol=1e-9)
    mw = cmp["match_weight"]
    np.testing.assert_allclose(2.0**mw / (1 + 2.0**mw), cmp["score"], rtol=0, atol=1e-9)
    # the score column is score()'s value of the pair
    pos = np.searchsorted(pairs.left * len(batch.records) + pairs.right, some.left * len(batch.records) + some.right)
    np.testing.assert_array_equal(cmp["score"], scores[pos])
    for lab in labels:
        lv = cmp[f"level_{lab}"]
        assert lv.dtype == np.int64 and lv.min() >= -1
        w = np.asarray(rep["per_field"][lab]["weight_log2"])
        ok = lv >= 0
        adj = cmp[f"tf_{lab}"][ok] if lab in tf else 0.0  # the term-frequency part, in the weight
        adj = adj + (cmp[f"dependence_{lab}"][ok] if f"dependence_{lab}" in cmp else 0.0)  # and the dependence
        np.testing.assert_allclose(cmp[f"weight_{lab}"][ok] - adj, w[lv[ok]], atol=1e-6)  # the report rounds to 1e-6
        if lab in tf:
            assert np.all(cmp[f"tf_{lab}"][lv != 0] == 0.0) and np.any(cmp[f"tf_{lab}"][lv == 0] != 0.0)
        assert np.all(cmp[f"weight_{lab}"][~ok] == 0.0)
    assert (cmp["level_address_2"] == -1).any()  # some pairs miss a field: weight 0 there
    assert v.comparisons(batch, Pairs.empty(), fitted.state)["score"].shape == (0,)


def test_fellegi_sunter_state_applied_again(shipped):
    """The fitted state (the model's verifier part, as model.json holds it) given to a new instance gives the
    same comparisons and scores; the report's verifier section is the verifier's and its fit's; a state of
    other fields or levels is refused."""
    d = shipped["febrl4"]
    batch, pairs, some = febrl4_sample(d)
    v = _fs(d)
    scores, _, fitted = _fit(v, batch, pairs)
    described = json.loads(json.dumps(d["result"].report["verifier"]))  # report.json's verifier section
    v_run = _fs(d)
    _, run_rep, run_fitted = _fit(v_run, batch, pairs)
    assert json.loads(json.dumps({**run_rep, "threshold": described["threshold"]})) == described
    state = json.loads(json.dumps(d["result"].model.verifier_state))  # model.json's verifier state
    assert state == json.loads(json.dumps(run_fitted.state)) == json.loads(json.dumps(fitted.state))
    fresh = _fs(d)
    with pytest.raises(ValueError, match="fitted state"):
        fresh.comparisons(batch, some)
    a, b = v.comparisons(batch, some, fitted.state), fresh.comparisons(batch, some, state)
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    np.testing.assert_array_equal(fresh.score_with(batch, pairs, state), scores)
    assert fresh.state_report(state)["lambda"] == described["lambda"]
    # a state of other fields is refused, and one of other level counts
    other = json.loads(json.dumps(state))
    other["fields"].pop("state")
    with pytest.raises(ValueError, match="not this verifier's"):
        _fs(d).fit_of(other)
    fewer = json.loads(json.dumps(state))
    for key in ("m", "u"):
        fewer["fields"]["state"][key] = fewer["fields"]["state"][key][:-1]
    with pytest.raises(ValueError, match="levels"):
        _fs(d).comparisons(batch, some, fewer)
    # a run that scored nothing fitted nothing
    _, empty = _fs(d).fit_score(batch, Pairs.empty(), None)
    assert empty.state == {} and empty.report["pairs_scored"] == 0
    with pytest.raises(ValueError, match="holds no fit"):
        _fs(d).fit_of(empty.state)
