"""Tests of er_plugins.records_scoring: the field_score and fellegi_sunter verifiers.

* field_score equals a naive per-pair reference (rapidfuzz.fuzz / rapidfuzz.distance
  called once per pair) for every scorer and missing mode, and reproduces the
  seed's totals (SEEDS §5: ~290 for a misspelt name, ~240 for very different names);
* the pattern-count EM equals a naive per-pair EM, recovers a known latent-class
  model, handles label switching; a missing level weighs 0; the probability rises
  with agreement;
* end to end on generated customers (er_framework.synth.customers): F1 of both.

Run with ``-s`` to see the measured numbers.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata

import numpy as np
import pytest
from pydantic import ValidationError
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein

import er_plugins.records_scoring as rs
from er_framework.components import Context
from er_framework.data import Batch, Pairs, Records
from er_framework.synth.customers import generate_customers
from er_framework.testing import check_verifier
from er_plugins.records_scoring import (
    EMFit,
    FellegiSunter,
    FellegiSunterParams,
    FieldScore,
    FieldScoreParams,
    fit_em,
    level_of,
    pattern_counts,
)

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


def _naive_em(levels, n_levels, lam, m, u, iters, fix_u=False, smoothing=0.0):
    """Per-pair EM (Python loops), the same floor/clip rules as fit_em."""
    eps = rs.EPS
    m = [list(map(float, x)) for x in m]
    u = [list(map(float, x)) for x in u]

    def floor_norm(p):
        p = [max(x, eps) for x in p]
        s = sum(p)
        return [x / s for x in p]

    m = [floor_norm(x) for x in m]
    u = [floor_norm(x) for x in u]
    lam = min(max(lam, eps), 1 - eps)
    trace = []

    def estep():
        post, ll = [], 0.0
        for row in levels:
            la, lb = math.log(lam), math.log(1 - lam)
            for f, lv in enumerate(row):
                if lv >= 0:
                    la += math.log(m[f][lv])
                    lb += math.log(u[f][lv])
            mx = max(la, lb)
            tot = mx + math.log(math.exp(la - mx) + math.exp(lb - mx))
            post.append((math.exp(la - tot), math.exp(lb - tot)))
            ll += tot
        return post, ll

    for _ in range(iters):
        post, ll = estep()
        trace.append(ll)
        lam = min(max(sum(g for g, _ in post) / len(levels), eps), 1 - eps)
        new_m, new_u = [], []
        for f, K in enumerate(n_levels):
            am, au = [smoothing] * K, [smoothing] * K
            for row, (g, h) in zip(levels, post):
                if row[f] >= 0:
                    am[row[f]] += g
                    au[row[f]] += h
            new_m.append(floor_norm([x / sum(am) for x in am]) if sum(am) > 0 else m[f])
            new_u.append(u[f] if fix_u else (floor_norm([x / sum(au) for x in au]) if sum(au) > 0 else u[f]))
        m, u = new_m, new_u
    trace.append(estep()[1])
    return lam, m, u, trace


# ---------------------------------------------------------------------------
# data


def _random_records(n: int, seed: int) -> Records:
    """Small records over a tiny alphabet (many near and exact matches) with None, '' and '  '."""
    rng = np.random.default_rng(seed)

    def word() -> str:
        return "".join(rng.choice(list("abcd"), size=int(rng.integers(1, 6))))

    def value(kind: str) -> str | None:
        r = rng.random()
        if r < 0.08:
            return None
        if r < 0.10:
            return ""
        if r < 0.11:
            return "  "
        if kind == "phone":
            digits = "".join(rng.choice(list("0123"), size=int(rng.integers(3, 7))))
            fmt = int(rng.integers(0, 4))
            return ["", "+1 ", "(", "n/a "][fmt] + "-".join(digits[k : k + 2] for k in range(0, len(digits), 2))
        return " ".join(word() for _ in range(int(rng.integers(1, 4))))

    fields = {k: [value(k) for _ in range(n)] for k in ("f1", "f2", "phone")}
    return Records.from_columns([str(i) for i in range(n)], fields)


@pytest.fixture(scope="module")
def small() -> tuple[Batch, Pairs]:
    rec = _random_records(300, 1)
    rng = np.random.default_rng(2)
    pairs = Pairs(rng.integers(0, 300, 2500), rng.integers(0, 300, 2500)).normalized()
    return Batch(rec), pairs


def _norm(v: str) -> str | None:
    """What the engine's normalization does to a value (NFKC, casefold, whitespace); '' -> None."""
    if not v:
        return None
    return " ".join(unicodedata.normalize("NFKC", v).casefold().split()) or None


@pytest.fixture(scope="module")
def customers() -> dict:
    """generate_customers(20000, 0.5, 7) as one link batch: A then B, truth as index pairs."""
    d = generate_customers(20000, 0.5, 7)
    cols = [c for c in d.a if c != "id"]
    a = Records.from_columns(d.a["id"], {c: [_norm(v) for v in d.a[c]] for c in cols}, "A")
    b = Records.from_columns(d.b["id"], {c: [_norm(v) for v in d.b[c]] for c in cols}, "B")
    rec = Records.concat([a, b])
    pos = {x: i for i, x in enumerate(rec.ids)}
    tl = np.array([pos[x] for x, _ in d.truth])
    tr = np.array([pos[y] for _, y in d.truth])
    return {"records": rec, "truth_left": tl, "truth_right": tr, "batch": Batch(rec, cross_source_only=True)}


def _truth_plus_random(c: dict, k: int = 200_000, seed: int = 3) -> tuple[Pairs, np.ndarray]:
    n_a = int((c["records"].source == 0).sum())
    n = len(c["records"])
    rng = np.random.default_rng(seed)
    left = np.concatenate([c["truth_left"], rng.integers(0, n_a, k)])
    right = np.concatenate([c["truth_right"], rng.integers(n_a, n, k)])
    pairs = Pairs(left, right).normalized()
    return pairs, _labels(c, pairs)


def _labels(c: dict, pairs: Pairs) -> np.ndarray:
    n = len(c["records"])
    key = c["truth_left"] * n + c["truth_right"]
    return np.isin(pairs.left * n + pairs.right, key)


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


def _prf(pred: np.ndarray, y: np.ndarray, n_true: int) -> tuple[float, float, float]:
    tp = int((pred & y).sum())
    p = tp / max(int(pred.sum()), 1)
    r = tp / n_true
    return p, r, 2 * p * r / max(p + r, 1e-300)


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
    got = v.score(batch, pairs)
    want = _naive_field_score(batch.records, rules, pairs.left, pairs.right)
    assert got.dtype == np.float64 and got.shape == (len(pairs),)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    rep = v.describe()
    assert rep["pairs_scored"] == len(pairs)
    assert set(rep["per_field"]) == {"f1+f2", "f1", "phone", "f2_lev"}
    assert rep["per_field"]["f1"]["missing_pairs"] > 0


def test_field_score_chunks_workers_and_contract(small, monkeypatch):
    batch, pairs = small
    params = FieldScoreParams(
        threshold=150, fields=[{"field": ["f1", "f2"], "scorer": "token_set_ratio"}, {"field": "phone", "scorer": "digits"}]
    )
    whole = FieldScore(params, Context(workers=1)).score(batch, pairs)
    monkeypatch.setattr(rs, "CHUNK_PAIRS", 97)
    chunked = FieldScore(params, Context(workers=2)).score(batch, pairs)
    np.testing.assert_array_equal(whole, chunked)
    check_verifier(FieldScore(params, Context(workers=2)), batch, pairs)


def test_field_score_all_missing_neutral_scores_zero():
    rec = Records.from_columns(["a", "b", "c"], {"x": [None, "q", ""], "y": ["", None, None]})
    v = FieldScore(FieldScoreParams(fields=[{"field": "x"}, {"field": "y"}], threshold=100))
    s = v.score(Batch(rec), Pairs(np.array([0, 0, 1]), np.array([1, 2, 2])))
    np.testing.assert_array_equal(s, [0.0, 0.0, 0.0])
    assert v.describe()["pairs_with_every_field_missing"] == 3


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
    v = FieldScore(FieldScoreParams(threshold=200))
    close = float(v.score(*_seed_records(("jon", "smith")))[0])
    assert v.describe()["scale"] == 300.0
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
    p = FieldScoreParams()
    assert p.scale == 300.0 and [r.label for r in p.fields] == ["name", "address", "phone"]
    ctx = Context(threshold=0.8)
    assert any("total scale 0..300" in m for m in FieldScore.check(FieldScoreParams(), ctx))
    assert any("looks like a fraction" in m for m in FieldScore.check(FieldScoreParams(threshold=0.8), ctx))
    assert any("exceeds" in m for m in FieldScore.check(FieldScoreParams(threshold=301), ctx))
    assert FieldScore.check(FieldScoreParams(threshold=240), ctx) == []
    assert FieldScore(FieldScoreParams(threshold=240), ctx).threshold == 240.0
    with pytest.raises(ValueError, match="no threshold"):
        _ = FieldScore(FieldScoreParams(), ctx).threshold  # the top-level fraction is not used
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


def test_registered_by_the_hook():
    assert rs.er_register_verifiers() == [FieldScore, FellegiSunter]
    assert FieldScore.needs == frozenset({"fields"}) and FellegiSunter.needs == frozenset({"fields"})
    # the listing (er plugins) serializes the defaults
    from er_framework.registry import describe_params

    json.dumps(describe_params(FieldScore))
    json.dumps(describe_params(FellegiSunter))


# ---------------------------------------------------------------------------
# Fellegi-Sunter: EM


TRUE_LAM = 0.1
TRUE_M = [np.array([0.90, 0.07, 0.03]), np.array([0.80, 0.15, 0.05]), np.array([0.70, 0.20, 0.10])]
TRUE_U = [np.array([0.05, 0.15, 0.80]), np.array([0.02, 0.08, 0.90]), np.array([0.10, 0.20, 0.70])]
MISSING_RATE = 0.05


def _simulate(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Comparison levels from the latent-class model (fields independent given the class), 5% missing."""
    rng = np.random.default_rng(seed)
    z = rng.random(n) < TRUE_LAM
    levels = np.empty((n, 3), dtype=np.int64)
    for f in range(3):
        lm = rng.choice(3, size=n, p=TRUE_M[f])
        lu = rng.choice(3, size=n, p=TRUE_U[f])
        levels[:, f] = np.where(z, lm, lu)
        levels[rng.random(n) < MISSING_RATE, f] = -1
    return levels, z


def _default_init(n_levels):
    m0 = [8.0 ** -np.arange(K) for K in n_levels]
    u0 = [8.0 ** (np.arange(K) - K + 1) for K in n_levels]
    return m0, u0


def test_em_recovers_known_model():
    n = 200_000
    levels, z = _simulate(n, 11)
    patterns, counts, inverse = pattern_counts(levels, [3, 3, 3])
    np.testing.assert_array_equal(patterns[inverse], levels)
    assert len(patterns) <= 4**3 and counts.sum() == n
    m0, u0 = _default_init([3, 3, 3])
    fit = fit_em(patterns, counts, [3, 3, 3], 0.3, m0, u0, max_iter=2000, tol=1e-10)
    assert fit.converged and not fit.swapped
    assert all(b >= a - 1e-6 for a, b in zip(fit.loglik, fit.loglik[1:]))  # EM never lowers the likelihood
    n_match = n * TRUE_LAM * (1 - MISSING_RATE)
    n_non = n * (1 - TRUE_LAM) * (1 - MISSING_RATE)
    err_lam = abs(fit.lam - TRUE_LAM)
    err_m = max(float(np.abs(fit.m[f] - TRUE_M[f]).max()) for f in range(3))
    err_u = max(float(np.abs(fit.u[f] - TRUE_U[f]).max()) for f in range(3))
    # in standard errors (binomial, known class; EM's are somewhat larger)
    z_m = max(float((np.abs(fit.m[f] - TRUE_M[f]) / np.sqrt(TRUE_M[f] * (1 - TRUE_M[f]) / n_match)).max()) for f in range(3))
    z_u = max(float((np.abs(fit.u[f] - TRUE_U[f]) / np.sqrt(TRUE_U[f] * (1 - TRUE_U[f]) / n_non)).max()) for f in range(3))
    print(
        f"\nEM recovery (200k pairs, lambda=0.1, 3 fields x 3 levels, 5% missing): iterations {fit.iterations}, "
        f"|lambda err| {err_lam:.5f}, max |m err| {err_m:.5f} ({z_m:.1f} SE), max |u err| {err_u:.5f} ({z_u:.1f} SE)"
    )
    assert err_lam < 0.005
    assert err_m < 0.015
    assert err_u < 0.01
    # the weights are monotone in the level here, so is the probability in agreement
    for w in fit.weights():
        assert np.all(np.diff(w) < 0)


def test_em_on_pattern_counts_equals_naive_per_pair_em():
    levels, _ = _simulate(3000, 5)
    patterns, counts, _ = pattern_counts(levels, [3, 3, 3])
    m0, u0 = _default_init([3, 3, 3])
    for fix_u, alpha in ((False, 0.0), (True, 0.0), (False, 1.0)):
        fit = fit_em(patterns, counts, [3, 3, 3], 0.25, m0, u0, fix_u=fix_u, max_iter=30, tol=0.0, guard=False, smoothing=alpha)
        lam, m, u, trace = _naive_em([tuple(r) for r in levels.tolist()], [3, 3, 3], 0.25, m0, u0, 30, fix_u=fix_u, smoothing=alpha)
        assert fit.iterations == 30
        assert abs(fit.lam - lam) < 1e-9
        for f in range(3):
            np.testing.assert_allclose(fit.m[f], m[f], rtol=0, atol=1e-9)
            np.testing.assert_allclose(fit.u[f], u[f], rtol=0, atol=1e-9)
        np.testing.assert_allclose(fit.loglik, trace, rtol=1e-12, atol=1e-9)


def test_em_label_switching_is_undone():
    levels, _ = _simulate(100_000, 13)
    patterns, counts, _ = pattern_counts(levels, [3, 3, 3])
    m0, u0 = _default_init([3, 3, 3])
    # start from the exchanged labels: EM converges to the mirrored solution
    raw = fit_em(patterns, counts, [3, 3, 3], 0.9, u0, m0, max_iter=2000, tol=1e-10, guard=False)
    assert raw.lam > 0.8 and all(m[0] < u[0] for m, u in zip(raw.m, raw.u))
    fit = fit_em(patterns, counts, [3, 3, 3], 0.9, u0, m0, max_iter=2000, tol=1e-10)
    assert fit.swapped
    assert abs(fit.lam - TRUE_LAM) < 0.005
    for f in range(3):
        assert np.abs(fit.m[f] - TRUE_M[f]).max() < 0.015
        assert np.abs(fit.u[f] - TRUE_U[f]).max() < 0.01


def test_missing_level_weighs_zero_and_probability_formula():
    fit = EMFit(lam=0.2, m=[np.array([0.8, 0.15, 0.05]), np.array([0.9, 0.1])], u=[np.array([0.1, 0.2, 0.7]), np.array([0.3, 0.7])])
    pats = np.array([[0, 0], [0, -1], [-1, 1], [-1, -1], [2, 1]])
    p = fit.probability(pats)
    def direct(row):
        pm, pu = 0.2, 0.8
        for f, lv in enumerate(row):
            if lv >= 0:
                pm *= fit.m[f][lv]
                pu *= fit.u[f][lv]
        return pm / (pm + pu)
    np.testing.assert_allclose(p, [direct(r) for r in pats.tolist()], rtol=1e-12)
    assert p[3] == pytest.approx(0.2)  # nothing observed: the prior
    w = fit.weights()
    assert fit.logit(pats)[1] - fit.logit(pats)[3] == pytest.approx(w[0][0] * math.log(2))


def test_level_of():
    s = np.array([100.0, 99.9, 90.0, 89.9, 70.0, 0.0, np.nan])
    np.testing.assert_array_equal(level_of(s, [100, 90, 70]), [0, 1, 1, 2, 2, 3, -1])
    np.testing.assert_array_equal(level_of(np.array([100.0, 0.0]), [100]), [0, 1])


def test_fellegi_sunter_params():
    p = FellegiSunterParams()
    assert [f.label for f in p.fields] == ["first_name", "last_name", "location", "phone", "email", "dob"]
    assert p.fields[2].field == ["address", "city", "zip"]
    assert p.fields[3].thresholds == [100.0] and p.fields[0].level_names() == ["=100", ">=92", ">=80", "<80"]
    for bad in (
        {"fields": [{"field": "a", "levels": [90, 100]}]},
        {"fields": [{"field": "a", "levels": [100, 0]}]},
        {"fields": [{"field": "a", "comparison": "exact", "levels": [100, 50]}]},
        {"fix_u": True, "u_from_random_pairs": 0},
        {"threshold": 2.0},
    ):
        with pytest.raises(ValidationError):
            FellegiSunterParams(**bad)
    assert FellegiSunter.check(FellegiSunterParams(), Context()) != []  # no threshold anywhere
    assert FellegiSunter.check(FellegiSunterParams(), Context(threshold=0.5)) == []
    assert FellegiSunter(FellegiSunterParams(), Context(threshold=0.5)).threshold == 0.5


# ---------------------------------------------------------------------------
# end to end on generated customers


def test_end_to_end_truth_plus_random_pairs(customers):
    c = customers
    pairs, y = _truth_plus_random(c)
    n_true = len(c["truth_left"])
    fs = FieldScore(FieldScoreParams(threshold=200), Context(workers=2))
    s = fs.score(c["batch"], pairs)
    f_prf = _prf(s >= fs.threshold, y, n_true)
    sweep = {t: round(_prf(s >= t, y, n_true)[2], 4) for t in (160, 180, 200, 220, 240)}
    fsun = FellegiSunter(FellegiSunterParams(), Context(workers=2, threshold=0.5, seed=1))
    p = fsun.score(c["batch"], pairs)
    rep = fsun.describe()
    json.dumps(rep)
    json.dumps(fs.describe())
    s_prf = _prf(p >= fsun.threshold, y, n_true)
    fixed = FellegiSunter(FellegiSunterParams(fix_u=True), Context(workers=2, threshold=0.5, seed=1))
    x_prf = _prf(fixed.score(c["batch"], pairs) >= 0.5, y, n_true)
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


def test_fellegi_sunter_missing_weighs_zero_and_agreement_raises_probability(customers):
    """Probe pairs scored with the candidates: a missing phone adds 0, a closer field raises the probability."""
    c = customers
    rec = c["records"]
    pairs, _ = _truth_plus_random(c, k=50_000)
    # probe records: X agrees with its partner on everything, Y is X without the phone, Z has a typo in the last name
    a0 = int(c["truth_left"][0])
    base = {k: rec.fields[k][a0] for k in rec.fields}
    probes = [dict(base), {**base, "phone": None}, {**base, "last_name": base["last_name"] + "x"}]
    extra = Records.from_columns(["x", "y", "z"], {k: [p[k] for p in probes] for k in rec.fields}, "B2")
    all_rec = Records.concat([rec, extra])
    n = len(rec)
    probe_pairs = Pairs(np.array([a0, a0, a0]), np.array([n, n + 1, n + 2]))
    both = Pairs(np.concatenate([pairs.left, probe_pairs.left]), np.concatenate([pairs.right, probe_pairs.right]))
    v = FellegiSunter(FellegiSunterParams(), Context(threshold=0.5, seed=2))
    batch = Batch(all_rec, cross_source_only=True)
    p = v.score(batch, both)[-3:]
    fit = v.fit
    assert fit is not None
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
    assert v.describe()["per_field"]["phone"]["missing_weight"] == 0.0
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
        assert np.all(fit.probability(up) >= before) and np.all(fit.logit(up) > fit.logit(pats[pats[:, f] != 0]))
        down = pats[pats[:, f] != k - 1].copy()
        before = fit.logit(down)
        down[:, f] = k - 1
        assert np.all(fit.logit(down) < before)


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
    assert v.describe()["pairs_scored"] == 0  # the last call of check_verifier had no pairs
    np.testing.assert_array_equal(v.score(batch, pairs), s)
    rep = v.describe()
    assert set(rep) >= {"lambda", "iterations", "converged", "loglik", "per_field", "label_swapped", "patterns"}
    for fld in rep["per_field"].values():
        assert len(fld["m"]) == len(fld["u"]) == len(fld["levels"]) == len(fld["weight_log2"])
        assert sum(fld["m"]) == pytest.approx(1.0) and sum(fld["u"]) == pytest.approx(1.0)
    # deterministic in the seed, independent of the number of workers
    again = FellegiSunter(FellegiSunterParams(fields=fields, u_from_random_pairs=2000), Context(threshold=0.5, seed=4, workers=2))
    np.testing.assert_array_equal(again.score(batch, pairs), s)


def test_end_to_end_seed_blocking(customers):
    """Candidates of SEEDS §5's simple LSH (one field identical); non-matches there share a field.

    u of random pairs would overrate the blocked agreements: with fix_u every
    candidate looks like a match, EM's own u (the default) does not.
    """
    c = customers
    pairs = _seed_blocking(c)
    y = _labels(c, pairs)
    n_true = len(c["truth_left"])
    s = FieldScore(FieldScoreParams(threshold=200), Context(workers=2)).score(c["batch"], pairs)
    f_prf = _prf(s >= 200, y, n_true)
    free = FellegiSunter(FellegiSunterParams(), Context(workers=2, threshold=0.5, seed=1))
    s_prf = _prf(free.score(c["batch"], pairs) >= 0.5, y, n_true)
    fixed = FellegiSunter(FellegiSunterParams(fix_u=True), Context(workers=2, threshold=0.5, seed=1))
    x_prf = _prf(fixed.score(c["batch"], pairs) >= 0.5, y, n_true)
    print(
        f"\nseed blocking ({len(pairs)} candidates, {int(y.sum())} of {n_true} true pairs among them; recall over all true pairs):"
        f"\n  field_score >= 200: P {f_prf[0]:.4f} R {f_prf[1]:.4f} F1 {f_prf[2]:.4f}"
        f"\n  fellegi_sunter >= 0.5: P {s_prf[0]:.4f} R {s_prf[1]:.4f} F1 {s_prf[2]:.4f}"
        f" (lambda {free.describe()['lambda']:.4f}, true {y.mean():.4f})"
        f"\n  fellegi_sunter fix_u: P {x_prf[0]:.4f} R {x_prf[1]:.4f} F1 {x_prf[2]:.4f} (lambda {fixed.describe()['lambda']:.4f})"
    )
    assert f_prf[2] >= 0.95
    assert s_prf[2] >= 0.95
    assert x_prf[2] < s_prf[2]
