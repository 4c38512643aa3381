"""``labels_fit: refine`` (er_plugins/fs_refine.py): Newton's method against plain gradient ascent, no labels =
the unsupervised fit (byte for byte), labels moving the boundary the right way, one class of labels, the state
(model.json) round trip through ``er train`` / ``er run --model``, the explanation's labels' correction, and
the refusal of bad values."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError
from records_cases import CONFIGS, candidates_and_labels

from er_framework.cli.main import main
from er_framework.data import LabelledPairs, Pairs
from er_framework.engine.explain import Explanation, FieldTerm
from er_framework.kernels.em import EMFit
from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams
from er_plugins.fs_refine import RefinedFit, fit_logistic, fit_logistic_reference, log_posterior, refinement_of


def _fs(d: dict[str, Any], **changes: Any) -> FellegiSunter:
    job = d["job"]
    params = job.verifier.params
    assert isinstance(params, FellegiSunterParams)
    return FellegiSunter(FellegiSunterParams(**{**params.model_dump(), **changes}), job.context)


def _labelled(pairs: Pairs, idx: np.ndarray, y: np.ndarray) -> LabelledPairs:
    return LabelledPairs(Pairs(pairs.left[idx], pairs.right[idx]), np.asarray(y, dtype=bool))


def _problem(seed: int, n: int, f: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    feats = rng.normal(0.0, 3.0, size=(n, f))
    offset = rng.normal(-2.0, 1.0, size=n)
    z = math.log(2.0) * (0.5 + feats @ np.linspace(0.5, 1.5, f) + offset)
    y = rng.random(n) < 1.0 / (1.0 + np.exp(-z))
    return feats, offset, y


@pytest.mark.parametrize(("seed", "n", "f", "s"), [(0, 30, 3, 0.5), (1, 12, 4, 2.0), (2, 40, 2, 0.25), (3, 5, 3, 1.0)])
def test_newton_matches_plain_gradient_ascent(seed: int, n: int, f: int, s: float) -> None:
    feats, offset, y = _problem(seed, n, f)
    mean, scale = np.r_[0.0, np.ones(f)], np.r_[4.0, np.full(f, s)]
    fast, iterations = fit_logistic(feats, offset, y, mean, scale)
    naive = fit_logistic_reference(feats, offset, y, mean, scale)
    np.testing.assert_allclose(fast, naive, atol=1e-6)
    assert 0 < iterations < 50
    # the maximum: no coordinate step improves the log posterior
    best = log_posterior(fast, feats, offset, y, mean, scale)
    for j in range(f + 1):
        for d in (1e-4, -1e-4):
            assert log_posterior(fast + d * np.eye(f + 1)[j], feats, offset, y, mean, scale) <= best


def test_no_labels_stay_at_the_prior_and_one_class_stays_finite() -> None:
    feats, offset, y = _problem(5, 20, 3)
    mean, scale = np.r_[0.0, np.ones(3)], np.r_[4.0, np.full(3, 0.5)]
    coef, iterations = fit_logistic(feats[:0], offset[:0], y[:0], mean, scale)
    assert iterations == 0 and np.array_equal(coef, mean)
    for cls in (True, False):
        ones = np.full(len(y), cls)
        coef, _ = fit_logistic(feats, offset, ones, mean, scale)
        assert np.all(np.isfinite(coef))
        np.testing.assert_allclose(coef, fit_logistic_reference(feats, offset, ones, mean, scale), atol=1e-6)
        # all matches: the correction is upward; all non-matches: downward
        assert (coef[0] > 0) == cls


def test_refined_fit_scales_weights_and_adds_the_correction() -> None:
    m = [np.array([0.9, 0.1]), np.array([0.7, 0.2, 0.1])]
    u = [np.array([0.1, 0.9]), np.array([0.05, 0.15, 0.8])]
    base = RefinedFit(lam=0.01, m=m, u=u, beta=np.array([1.0, 1.0]), b0=0.0)
    ref = RefinedFit(lam=0.01, m=m, u=u, beta=np.array([0.5, 2.0]), b0=-1.5)
    pats = np.array([[0, 0], [1, 2], [-1, 1], [0, -1]])
    prior = math.log(0.01 / 0.99)
    w = [np.log(a / b) for a, b in zip(m, u)]
    want = np.array(
        [prior + 0.5 * w[0][0] + 2.0 * w[1][0], prior + 0.5 * w[0][1] + 2.0 * w[1][2], prior + 2.0 * w[1][1], prior + 0.5 * w[0][0]]
    ) - 1.5 * math.log(2.0)
    np.testing.assert_allclose(ref.logit(pats), want, rtol=1e-12)
    # beta 1 and b0 0: the unrefined fit's logit
    np.testing.assert_allclose(base.logit(pats), EMFit(lam=0.01, m=m, u=u).logit(pats), rtol=1e-15)
    np.testing.assert_allclose(ref.weights()[1], 2.0 * np.log2(m[1] / u[1]))


def test_zero_labels_are_the_unsupervised_fit_byte_for_byte(shipped: dict[str, Any]) -> None:
    for name in ("febrl4", "customers"):
        d = shipped[name]
        batch, pairs, _ = candidates_and_labels(d)
        v = _fs(d)
        scores, fitted = v.fit_score(batch, pairs, None)
        none = np.zeros(0, dtype=np.int64)
        s0, f0 = v.fit_score(batch, pairs, _labelled(pairs, none, np.zeros(0, dtype=bool)))
        assert s0.tobytes() == scores.tobytes() and f0.state == fitted.state
        assert f0.report["training"]["labelled_pairs"] == 0 and "labels_refinement" not in f0.state
        assert np.array_equal(scores, d["result"].candidates.score)


def test_labels_move_the_boundary_the_right_way(shipped: dict[str, Any]) -> None:
    """A stricter reviewer: the 40 verified pairs of least weight labelled non-matches (with 40 sure matches and
    40 sure non-matches): the refined model scores them lower and verifies fewer pairs; a lenient one (the 40
    best-scored pairs below the threshold labelled matches) the other way."""
    d = shipped["febrl4"]
    batch, pairs, y = candidates_and_labels(d)
    v = _fs(d)
    s = np.asarray(d["result"].candidates.score)
    t = 0.5
    above, below = np.flatnonzero(s >= t), np.flatnonzero(s < t)
    weak = above[np.argsort(s[above], kind="stable")][:40]
    near = below[np.argsort(-s[below], kind="stable")][:40]
    sure_m = above[np.argsort(-s[above], kind="stable")][:40]
    sure_n = below[np.argsort(s[below], kind="stable")][:40]
    strict = np.r_[weak, sure_m, sure_n]
    got, fitted = v.fit_score(batch, pairs, _labelled(pairs, strict, np.r_[np.zeros(40), np.ones(40), np.zeros(40)]))
    assert fitted.state["labels_refinement"]["b0"] < 0
    assert np.all(got[weak] < s[weak]) and int((got >= t).sum()) < int((s >= t).sum())
    lenient = np.r_[near, sure_m, sure_n]
    got, fitted = v.fit_score(batch, pairs, _labelled(pairs, lenient, np.r_[np.ones(40), np.ones(40), np.zeros(40)]))
    assert fitted.state["labels_refinement"]["b0"] > 0
    assert np.all(got[near] > s[near]) and int((got >= t).sum()) > int((s >= t).sum())
    # the explanation's terms are the refined ones and sum to the refined score
    cols = v.comparisons(batch, Pairs(pairs.left[near], pairs.right[near]), fitted.state)
    total = cols["prior_weight"] + sum(cols[k] for k in cols if k.startswith("weight_"))
    np.testing.assert_allclose(total, cols["match_weight"], atol=1e-9)
    np.testing.assert_allclose(cols["labels_correction"], fitted.state["labels_refinement"]["b0"])
    np.testing.assert_array_equal(cols["score"], got[near])
    rep = fitted.report
    assert rep["training"]["fit"] == "refine" and "refined by 80 labelled matches" in rep["estimation"]
    for label, entry in rep["per_field"].items():
        assert entry["labels_beta"] == fitted.state["labels_refinement"]["beta"][label]


def test_one_class_of_labels_fits(shipped: dict[str, Any]) -> None:
    d = shipped["febrl4"]
    batch, pairs, y = candidates_and_labels(d)
    idx = np.flatnonzero(~y)[:30]
    _, fitted = _fs(d).fit_score(batch, pairs, _labelled(pairs, idx, np.zeros(30)))
    ref = fitted.state["labels_refinement"]
    assert math.isfinite(ref["b0"]) and all(math.isfinite(b) for b in ref["beta"].values())
    # em and labels still need both kinds
    with pytest.raises(ValueError, match="at least one of each"):
        _fs(d, labels_fit="em").fit_score(batch, pairs, _labelled(pairs, idx, np.zeros(30)))


def test_state_round_trip_and_damaged_refinement(shipped: dict[str, Any]) -> None:
    d = shipped["febrl4"]
    batch, pairs, y = candidates_and_labels(d)
    v = _fs(d)
    idx = np.random.default_rng(3).choice(len(pairs), 60, replace=False)
    flipped = y[idx].copy()
    flipped[:10] = ~flipped[:10]
    scores, fitted = v.fit_score(batch, pairs, _labelled(pairs, idx, flipped))
    state = json.loads(json.dumps(fitted.state))  # as model.json holds it
    assert np.array_equal(v.score_with(batch, pairs, state), scores)
    applied = v.state_report(state)["per_field"]
    assert all(
        applied[k]["weight_log2"] == e["weight_log2"] and applied[k]["labels_beta"] == e["labels_beta"]
        for k, e in fitted.report["per_field"].items()
    )
    labels = [f.label for f in v.params.fields]
    got = refinement_of(state, labels)
    assert got is not None and got[1] == state["labels_refinement"]["b0"]
    bad = {**state, "labels_refinement": {**state["labels_refinement"], "beta": {"x": 1.0}}}
    with pytest.raises(ValueError, match="labels_refinement has fields"):
        v.score_with(batch, pairs, bad)
    bad = {**state, "labels_refinement": {"b0": "nan", "beta": state["labels_refinement"]["beta"]}}
    with pytest.raises(ValueError, match="not finite"):
        v.score_with(batch, pairs, bad)
    with pytest.raises(ValueError, match="must hold b0 and beta"):
        v.score_with(batch, pairs, {**state, "labels_refinement": {"beta": {}}})


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"labels_prior_scale": 0}, "labels_prior_scale"),
        ({"labels_prior_scale": -1.0}, "labels_prior_scale"),
        ({"labels_intercept_scale": 0.0}, "labels_intercept_scale"),
        ({"labels_fit": "bayes"}, "labels_fit"),
    ],
)
def test_bad_values_are_refused_by_name(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as e:
        FellegiSunterParams(fields=[{"field": "name"}], **changes)
    assert field in str(e.value)


def test_explanation_shows_the_labels_correction() -> None:
    e = Explanation(
        ("A", "1"), ("B", "2"), 0.5, 0.5, "weights", "fellegi_sunter",
        [FieldTerm("name", "ann", "anne", level=">=90", weight=3.0)], prior_weight=-4.0, match_weight=-2.5, labels_correction=-1.5,
    )  # fmt: skip
    text = str(e)
    assert "labels' correction" in text and "-1.50 bits" in text
    assert e.total() == pytest.approx(-2.5) and e.to_json()["labels_correction"] == -1.5


def test_er_train_and_run_with_the_model_apply_the_refinement(tmp_path: Path, shipped: dict[str, Any]) -> None:
    """``er train`` of a job with labels writes beta and b0 in model.json; ``er run --model`` applies them: the
    same pairs as the run that fitted them."""
    d = shipped["febrl4"]
    r = d["result"]
    ids, src = r.records.ids, r.records.source
    names = r.records.source_names
    c = r.candidates
    s = np.asarray(c.score)
    order = np.argsort(np.abs(s - 0.5), kind="stable")[:30]
    with (tmp_path / "labels.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        for k in order.tolist():
            i, j = int(c.left[k]), int(c.right[k])
            w.writerow([names[int(src[i])], ids[i], names[int(src[j])], ids[j], "0" if k % 3 else "1"])
    text = (CONFIGS / "febrl4.yaml").read_text(encoding="utf-8").replace("path: data/", f"path: {CONFIGS}/data/")
    job = tmp_path / "job.yaml"
    job.write_text(text + "\ntraining: {labels: labels.csv}\n", encoding="utf-8")
    model = tmp_path / "model.json"
    assert main(["train", str(job), "--model", str(model), "-q"]) == 0
    state = json.loads(model.read_text(encoding="utf-8"))["verifier"]["state"]
    assert set(state["labels_refinement"]) >= {"b0", "beta", "prior_scale", "intercept_scale"}
    assert main(["run", str(job), "--out", str(tmp_path / "fitted"), "-q"]) == 0
    assert main(["run", str(job), "--model", str(model), "--out", str(tmp_path / "applied"), "-q"]) == 0
    fitted = (tmp_path / "fitted" / "pairs.csv").read_text(encoding="utf-8")
    assert fitted == (tmp_path / "applied" / "pairs.csv").read_text(encoding="utf-8")
    assert len(fitted.splitlines()) > 1000
