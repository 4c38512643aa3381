"""Tests of er_plugins.field_score: the field_score verifier.

* field_score equals a naive per-pair reference (rapidfuzz.fuzz / rapidfuzz.distance
  called once per pair) for every scorer and missing mode, and reproduces the
  seed's totals (SEEDS §5: ~290 for a misspelt name, ~240 for very different names);
* its comparisons (similarities and points) sum to its score.

Run with ``-s`` to see the measured numbers.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from pydantic import ValidationError
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein
from records_cases import CUSTOMER_FIELD_RULES, febrl4_sample

import er_plugins.record_columns as rc
from er_framework.capabilities import Explainable, Learner, Trainable, has
from er_framework.components import Context
from er_framework.data import Batch, Pairs, Records
from er_framework.testing import check_verifier
from er_plugins.fellegi_sunter import FellegiSunter
from er_plugins.field_score import FieldScore, FieldScoreParams

SCORER_NAMES = ["ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "jaro_winkler", "levenshtein", "exact", "digits"]


# ---------------------------------------------------------------------------
# naive references


def _naive_value(fields: dict[str, list[str | None]], cols: list[str], i: int, digits: bool, last: int | None) -> str | None:
    if len(cols) == 1:
        v = fields[cols[0]][i]
        v = None if v is None or not v.strip() else v
    else:
        v = " ".join(p for p in (fields[c][i] for c in cols) if p is not None and p.strip()) or None
    if v is not None and digits:
        v = re.sub(r"[^0-9]", "", v)
        if last is not None:
            v = v[-last:]
        v = v or None
    return v


def _naive_sim(scorer: str, a: str, b: str) -> float:
    if scorer in ("exact", "digits"):
        return 100.0 if a == b else 0.0
    if scorer == "jaro_winkler":
        return JaroWinkler.normalized_similarity(a, b) * 100.0
    if scorer == "levenshtein":
        return Levenshtein.normalized_similarity(a, b) * 100.0
    return float(getattr(fuzz, scorer)(a, b))


def _naive_field_score(records: Records, rules: list[dict], left: np.ndarray, right: np.ndarray) -> np.ndarray:
    out = []
    total_w = sum(r.get("weight", 1.0) for r in rules)
    for i, j in zip(left.tolist(), right.tolist()):
        num = kept = 0.0
        for r in rules:
            cols = [r["field"]] if isinstance(r["field"], str) else r["field"]
            dig = r.get("scorer", "ratio") == "digits"
            a = _naive_value(records.fields, cols, i, dig, r.get("last_digits"))
            b = _naive_value(records.fields, cols, j, dig, r.get("last_digits"))
            w = r.get("weight", 1.0)
            mode = r.get("missing", "neutral")
            if a is None or b is None:
                if mode == "neutral":
                    continue
                num += w * (r.get("missing_score", 0.0) if mode == "penalize" else 0.0)
                kept += w
            else:
                num += w * _naive_sim(r.get("scorer", "ratio"), a, b)
                kept += w
        out.append(0.0 if kept == 0 else num * total_w / kept)
    return np.array(out)


# ---------------------------------------------------------------------------
# field_score


@pytest.mark.parametrize("missing", ["neutral", "zero", "penalize"])
@pytest.mark.parametrize("scorer", SCORER_NAMES)
def test_field_score_equals_naive_reference(small, scorer, missing):
    batch, pairs = small
    extra = {"missing_score": -20.0} if missing == "penalize" else {}
    rules = [
        {"field": ["f1", "f2"], "scorer": scorer, "weight": 1.5, "missing": missing, **extra},
        {"field": "f1", "scorer": scorer, "weight": 0.5, "missing": missing, **extra},
        {"field": "phone", "scorer": "digits", "last_digits": 4, "missing": "neutral"},
        {"field": "f2", "name": "f2_lev", "scorer": "levenshtein", "missing": missing, **extra},
    ]
    if scorer == "digits":
        rules[0]["last_digits"] = 3
    v = FieldScore(FieldScoreParams(fields=rules, threshold=100), Context(workers=2))
    scored = v.score_reported(batch, pairs)
    got = scored.scores
    want = _naive_field_score(batch.records, rules, pairs.left, pairs.right)
    assert got.dtype == np.float64 and got.shape == (len(pairs),)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(v.score(batch, pairs), got)
    rep = {**v.describe(), **scored.report}
    assert rep["pairs_scored"] == len(pairs)
    assert set(rep["per_field"]) == {"f1+f2", "f1", "phone", "f2_lev"}
    assert rep["per_field"]["f1"]["missing_pairs"] > 0


def test_field_score_chunks_workers_and_contract(small, monkeypatch):
    batch, pairs = small
    params = FieldScoreParams(
        threshold=150, fields=[{"field": ["f1", "f2"], "scorer": "token_set_ratio"}, {"field": "phone", "scorer": "digits"}]
    )
    whole = FieldScore(params, Context(workers=1)).score(batch, pairs)
    monkeypatch.setattr(rc, "CHUNK_PAIRS", 97)
    chunked = FieldScore(params, Context(workers=2)).score(batch, pairs)
    np.testing.assert_array_equal(whole, chunked)
    check_verifier(FieldScore(params, Context(workers=2)), batch, pairs)


def test_field_score_all_missing_neutral_scores_zero():
    rec = Records.from_columns(["a", "b", "c"], {"x": [None, "q", ""], "y": ["", None, None]})
    v = FieldScore(FieldScoreParams(fields=[{"field": "x"}, {"field": "y"}], threshold=100))
    scored = v.score_reported(Batch(rec), Pairs(np.array([0, 0, 1]), np.array([1, 2, 2])))
    np.testing.assert_array_equal(scored.scores, [0.0, 0.0, 0.0])
    assert scored.report["pairs_with_every_field_missing"] == 3


def _seed_records(name_b: tuple[str, str]) -> tuple[Batch, Pairs]:
    rec = Records.concat(
        [
            Records.from_columns(
                ["a1"], {"first_name": ["john"], "last_name": ["smith"], "address": ["12 main street"], "phone": ["(555) 123-4567"]}, "A"
            ),
            Records.from_columns(
                ["b1"],
                {"first_name": [name_b[0]], "last_name": [name_b[1]], "address": ["12 main street"], "phone": ["+1 555 123 4567"]},
                "B",
            ),
        ]
    )
    return Batch(rec, cross_source_only=True), Pairs(np.array([0]), np.array([1]))


def test_seed_totals_out_of_300():
    """SEEDS §5: same address and phone, a one-letter misspelling -> ~290; very different names -> ~240."""
    v = FieldScore(FieldScoreParams(fields=CUSTOMER_FIELD_RULES, threshold=200))
    scored = v.score_reported(*_seed_records(("jon", "smith")))
    close = float(scored.scores[0])
    assert scored.report["scale"] == 300.0
    far = float(v.score(*_seed_records(("mary", "jones")))[0])
    print(f"\nseed totals (default fields, token_sort_ratio names): john smith/jon smith {close:.1f}, john smith/mary jones {far:.1f}")
    assert 280.0 <= close <= 300.0  # 294.7: token_sort_ratio 94.7 + 100 + 100
    assert 200.0 <= far <= 250.0  # 250.0: token_sort_ratio("john smith", "mary jones") = 50


def test_seed_240_is_a_name_similarity_of_about_40(customers):
    """Very different names: the mean total over unrelated generated people, per name scorer."""
    c = customers
    rec = c["records"]
    rng = np.random.default_rng(5)
    n_a = int((rec.source == 0).sum())
    k = 20000
    left, right = rng.integers(0, n_a, k), rng.integers(n_a, len(rec), k)
    # give every pair the same address and phone: only the name differs
    fields = {
        "first_name": rec.fields["first_name"],
        "last_name": rec.fields["last_name"],
        "address": ["1 main street"] * len(rec),
        "phone": ["555-123-4567"] * len(rec),
    }
    batch = Batch(Records(rec.ids, rec.source, rec.source_names, fields), cross_source_only=True)
    pairs = Pairs(left, right)
    means = {}
    for scorer in ["ratio", "partial_ratio", "token_sort_ratio", "jaro_winkler", "levenshtein"]:
        rules = [{"field": ["first_name", "last_name"], "scorer": scorer}, {"field": "address"}, {"field": "phone", "scorer": "digits"}]
        s = FieldScore(FieldScoreParams(fields=rules, threshold=200)).score(batch, pairs)
        means[scorer] = float(s.mean())
    print("\nmean total, unrelated names, same address and phone:", {k: round(v, 1) for k, v in means.items()})
    assert 200.0 <= means["token_sort_ratio"] <= 250.0
    # ~240 = a name similarity of ~40: InDel-ratio-type scorers on unrelated names
    assert 225.0 <= means["ratio"] <= 250.0 and 225.0 <= means["partial_ratio"] <= 250.0


def test_field_score_params_and_threshold_scale():
    with pytest.raises(ValidationError, match="fields"):
        FieldScoreParams(threshold=200)  # no default fields: the job names the fields it compares
    example = FieldScoreParams.model_fields["fields"].examples  # shown when a job leaves fields: out
    assert example and FieldScoreParams(fields=example[0], threshold=200).scale == 300.0
    p = FieldScoreParams(fields=CUSTOMER_FIELD_RULES)
    assert p.scale == 300.0 and [r.label for r in p.fields] == ["name", "address", "phone"]
    ctx = Context(threshold=0.8)
    assert any("total scale 0..300" in m for m in FieldScore.check(FieldScoreParams(fields=CUSTOMER_FIELD_RULES), ctx))
    assert any("looks like a fraction" in m for m in FieldScore.check(FieldScoreParams(fields=CUSTOMER_FIELD_RULES, threshold=0.8), ctx))
    assert any("exceeds" in m for m in FieldScore.check(FieldScoreParams(fields=CUSTOMER_FIELD_RULES, threshold=301), ctx))
    assert FieldScore.check(FieldScoreParams(fields=CUSTOMER_FIELD_RULES, threshold=240), ctx) == []
    assert FieldScore(FieldScoreParams(fields=CUSTOMER_FIELD_RULES, threshold=240), ctx).threshold == 240.0
    with pytest.raises(ValueError, match="no threshold"):
        _ = FieldScore(FieldScoreParams(fields=CUSTOMER_FIELD_RULES), ctx).threshold  # the top-level fraction is not used
    weighted = FieldScoreParams(fields=[{"field": "a", "weight": 2.0}, {"field": "b", "weight": 0.5}], threshold=200)
    assert weighted.scale == 250.0
    for bad in (
        {"fields": [{"field": "a", "missing_score": 10}]},
        {"fields": [{"field": "a", "scorer": "ratio", "last_digits": 4}]},
        {"fields": [{"field": "a"}, {"field": "a"}]},
        {"fields": [{"field": "a", "scorer": "soundex"}]},
        {"fields": [{"field": []}]},
        {"fields": []},
    ):
        with pytest.raises(ValidationError):
            FieldScoreParams(**bad)
    with pytest.raises(ValueError, match="not in the records"):
        FieldScore(FieldScoreParams(fields=[{"field": "nope"}], threshold=50)).score(
            Batch(Records.from_columns(["a", "b"], {"x": ["1", "2"]})), Pairs(np.array([0]), np.array([1]))
        )


# ---------------------------------------------------------------------------
# explanations: comparisons, the same from a new instance


@pytest.mark.parametrize("missing", ["neutral", "zero", "penalize"])
def test_field_score_comparisons_sum_to_the_score(small, missing):
    batch, pairs = small
    rules = [
        {"field": ["f1", "f2"], "name": "names", "scorer": "token_sort_ratio", "weight": 2.0, "missing": missing},
        {"field": "f2", "scorer": "ratio", "missing": missing, **({"missing_score": -30.0} if missing == "penalize" else {})},
        {"field": "phone", "scorer": "digits", "weight": 0.5},
    ]
    v = FieldScore(FieldScoreParams(fields=rules, threshold=150), Context())
    s = v.score(batch, pairs)
    cmp = v.comparisons(batch, pairs)
    labels = ["names", "f2", "phone"]
    assert list(cmp) == [x for lab in labels for x in (f"similarity_{lab}", f"points_{lab}")] + ["score"]
    np.testing.assert_array_equal(cmp["score"], s)
    np.testing.assert_allclose(sum(cmp[f"points_{lab}"] for lab in labels), s, rtol=0, atol=1e-9)
    sims = v.field_scores(batch, pairs)
    for lab in labels:
        np.testing.assert_array_equal(cmp[f"similarity_{lab}"], sims[lab])
    if missing == "neutral":
        assert np.all(cmp["points_names"][np.isnan(sims["names"])] == 0.0)
    assert np.isnan(sims["names"]).any()
    # no fitted state: a new instance gives the same comparisons (the total depends on the pair and the parameters)
    fresh = FieldScore(FieldScoreParams(fields=rules, threshold=150), Context())
    b = fresh.comparisons(batch, pairs, None)
    for k in cmp:
        np.testing.assert_array_equal(cmp[k], b[k])


def test_field_score_comparisons_on_febrl4(shipped):
    d = shipped["febrl4"]
    batch, _, some = febrl4_sample(d)
    rules = [
        {"field": "given_name", "scorer": "jaro_winkler"},
        {"field": "surname", "scorer": "jaro_winkler"},
        {"field": "address_2", "scorer": "ratio", "weight": 0.5},
        {"field": "soc_sec_id", "scorer": "exact"},
    ]
    v = FieldScore(FieldScoreParams(fields=rules, threshold=300), Context())
    s = v.score(batch, some)
    cmp = v.comparisons(batch, some)
    np.testing.assert_array_equal(cmp["score"], s)
    pts = sum(cmp[f"points_{r['field']}"] for r in rules)
    np.testing.assert_allclose(pts, s, rtol=0, atol=1e-9)
    assert has(FieldScore, Explainable) and has(FellegiSunter, Explainable) and has(FellegiSunter, Trainable)
    assert not has(FieldScore, Learner)


@pytest.mark.parametrize("threshold", [0.0, -5.0, -1e-9])
def test_a_threshold_not_above_0_is_refused_by_the_check(threshold: float) -> None:
    params = FieldScoreParams(fields=[{"field": "x"}, {"field": "y"}], threshold=threshold)
    problems = FieldScore.check(params, Context())
    assert problems and "must be above 0" in problems[0]


@pytest.mark.parametrize("threshold", [float("nan"), float("inf")])
def test_nan_and_infinity_thresholds_are_refused(threshold: float) -> None:
    with pytest.raises(ValidationError, match="finite"):
        FieldScoreParams(fields=[{"field": "x"}], threshold=threshold)
