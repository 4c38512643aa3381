"""Tests of er_framework.kernels.em: levels, pattern counts and EM of the Fellegi-Sunter model.

* the pattern-count EM equals a naive per-pair EM, recovers a known latent-class
  model, handles label switching; a missing level weighs 0;
* the monotone M-step: isotonic_decreasing equals its min-max reference,
  monotone_m_step is the constrained maximum (brute force, a numerical
  optimizer), and fit_em with it is EM under the order;
* sigmoid equals scipy.special.expit bit for bit.

Run with ``-s`` to see the measured numbers.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.kernels.em import (
    EPS,
    SESSION_TIED_SHARE,
    EMFit,
    fit_em,
    fit_session,
    isotonic_decreasing,
    isotonic_decreasing_reference,
    level_of,
    monotone_m_step,
    pattern_counts,
    population_lambda,
    sigmoid,
)

# ---------------------------------------------------------------------------
# naive references


def _naive_em(levels, n_levels, lam, m, u, iters, fix_u=False, smoothing=0.0):
    """Per-pair EM (Python loops), the same floor/clip rules as fit_em."""
    eps = EPS
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


# ---------------------------------------------------------------------------
# monotone weights: the constrained M-step (issue 16)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(-100, 100, allow_nan=False), st.floats(0.01, 100, allow_nan=False)), min_size=1, max_size=8))
def test_isotonic_decreasing_equals_min_max_reference(yw):
    y = np.array([a for a, _ in yw])
    w = np.array([b for _, b in yw])
    x = isotonic_decreasing(y, w)
    np.testing.assert_allclose(x, isotonic_decreasing_reference(y, w), rtol=1e-9, atol=1e-9)
    assert np.all(np.diff(x) <= 1e-9)
    assert float(w @ x) == pytest.approx(float(w @ y), rel=1e-9, abs=1e-9)  # pooling keeps the weighted total


def test_isotonic_decreasing_zero_weights_and_order():
    np.testing.assert_allclose(isotonic_decreasing([3.0, 1.0, 2.0], [1.0, 1.0, 1.0]), [3.0, 1.5, 1.5])
    np.testing.assert_allclose(isotonic_decreasing([1.0, 2.0], [1.0, 3.0]), [1.75, 1.75])
    np.testing.assert_allclose(isotonic_decreasing([4.0, 2.0, 1.0], [1.0, 1.0, 1.0]), [4.0, 2.0, 1.0])  # already in order
    # a zero-weight entry takes its neighbour's value (the one before it; after it at the start)
    np.testing.assert_allclose(isotonic_decreasing([9.0, 5.0, 0.0, 3.0], [0.0, 1.0, 0.0, 1.0]), [5.0, 5.0, 5.0, 3.0])


def _objective(a, b, m, u):
    return float(a @ np.log(m) + b @ np.log(u))


def _block_partitions(K):
    """Every partition of 0..K-1 into runs of consecutive levels."""
    for cuts in itertools.product([False, True], repeat=K - 1):
        blocks, start = [], 0
        for k, cut in enumerate(cuts, start=1):
            if cut:
                blocks.append(list(range(start, k)))
                start = k
        blocks.append(list(range(start, K)))
        yield blocks


def _brute_force_m_step(a, b, u_fixed=None):
    """Naive constrained maximum: every partition into blocks of equal ratio, each block's maximum, the best
    one whose block ratios are non-increasing (the constrained optimum has this form)."""
    best, arg = -np.inf, None
    A, B, n = a.sum(), b.sum(), a + b
    for blocks in _block_partitions(len(a)):
        m, u = np.empty(len(a)), np.empty(len(a))
        for blk in blocks:
            if u_fixed is None:
                m[blk] = a[blk].sum() / A * n[blk] / n[blk].sum()
                u[blk] = b[blk].sum() / B * n[blk] / n[blk].sum()
            else:
                u[blk] = u_fixed[blk]
                m[blk] = u_fixed[blk] * a[blk].sum() / (A * u_fixed[blk].sum())
        w = np.log(m / u)
        if np.all(np.diff(w) <= 1e-12):
            v = _objective(a, b, m, u) if u_fixed is None else float(a @ np.log(m))
            if v > best:
                best, arg = v, (m, u)
    return arg


@pytest.mark.parametrize("seed", range(40))
def test_monotone_m_step_is_the_constrained_maximum(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 6))
    a = rng.gamma(0.7, 20.0, K) + 0.01
    b = rng.gamma(0.7, 200.0, K) + 0.01
    m, u = monotone_m_step(a, b)
    assert m.sum() == pytest.approx(1.0) and u.sum() == pytest.approx(1.0)
    assert np.all(np.diff(np.log(m / u)) <= 1e-12)
    rm, ru = _brute_force_m_step(a, b)
    np.testing.assert_allclose(m, rm, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(u, ru, rtol=1e-9, atol=1e-12)
    # u held: m alone
    uf = rng.dirichlet(np.ones(K))
    m2, u2 = monotone_m_step(a, b, uf)
    np.testing.assert_array_equal(u2, uf)
    assert np.all(np.diff(np.log(m2 / uf)) <= 1e-12)
    np.testing.assert_allclose(m2, _brute_force_m_step(a, b, uf)[0], rtol=1e-9, atol=1e-12)


def test_monotone_m_step_matches_a_numerical_optimizer():
    """scipy's SLSQP on the constrained problem (log-parameters, the order as inequalities) finds no better point."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    a = np.array([40.0, 25.0, 6.0, 30.0])  # level 1 would weigh more than level 0 unconstrained
    b = np.array([30.0, 5.0, 60.0, 900.0])
    K = len(a)

    def unpack(x):  # log m, log u from free parameters (softmax)
        return x[:K] - logsumexp(x[:K]), x[K:] - logsumexp(x[K:])

    def neg(x):
        lm, lu = unpack(x)
        return -float(a @ lm + b @ lu)

    # log(m_k/u_k) - log(m_k+1/u_k+1) >= 0: linear in x (the normalizers cancel)
    cons = [{"type": "ineq", "fun": (lambda x, k=k: x[k] - x[K + k] - x[k + 1] + x[K + k + 1])} for k in range(K - 1)]
    best = None
    for start in range(5):
        x0 = np.random.default_rng(start).normal(size=2 * K)
        r = minimize(neg, x0, constraints=cons, method="SLSQP", options={"maxiter": 2000, "ftol": 1e-14})
        if best is None or r.fun < best.fun:
            best = r
    assert best is not None
    bm, bu = (np.exp(v) for v in unpack(best.x))
    m, u = monotone_m_step(a, b)
    w_free = np.log((a / a.sum()) / (b / b.sum()))
    assert w_free[1] > w_free[0]  # the unconstrained estimate breaks the order here
    assert _objective(a, b, m, u) >= -best.fun - 1e-6
    np.testing.assert_allclose(m, bm, atol=1e-4)
    np.testing.assert_allclose(u, bu, atol=1e-4)


def test_fit_em_monotone_is_em_under_the_order():
    # a model whose second level weighs more than the first: unconstrained EM finds that, monotone EM does not
    true_m = [np.array([0.50, 0.40, 0.10]), np.array([0.80, 0.15, 0.05]), np.array([0.70, 0.20, 0.10])]
    true_u = [np.array([0.20, 0.02, 0.78]), np.array([0.02, 0.08, 0.90]), np.array([0.10, 0.20, 0.70])]
    rng = np.random.default_rng(3)
    n = 50_000
    z = rng.random(n) < 0.1
    levels = np.stack([np.where(z, rng.choice(3, n, p=true_m[f]), rng.choice(3, n, p=true_u[f])) for f in range(3)], 1)
    patterns, counts, _ = pattern_counts(levels, [3, 3, 3])
    m0, u0 = _default_init([3, 3, 3])
    free = fit_em(patterns, counts, [3, 3, 3], 0.2, m0, u0, max_iter=3000, tol=1e-10, smoothing=1.0)
    mono = fit_em(patterns, counts, [3, 3, 3], 0.2, m0, u0, max_iter=3000, tol=1e-10, smoothing=1.0, monotone=True)
    assert free.weights()[0][1] > free.weights()[0][0]
    for w in mono.weights():
        assert np.all(np.diff(w) <= 1e-12)
    assert mono.weights()[0][0] == pytest.approx(mono.weights()[0][1], abs=1e-9)  # pooled
    assert all(y >= x - 1e-6 for x, y in zip(mono.loglik, mono.loglik[1:]))  # still never lowers the likelihood
    assert mono.loglik[-1] <= free.loglik[-1] + 1e-6  # a constrained maximum
    # where the data already respect the order, the constraint changes nothing
    levels, _ = _simulate(50_000, 11)
    patterns, counts, _ = pattern_counts(levels, [3, 3, 3])
    a = fit_em(patterns, counts, [3, 3, 3], 0.3, m0, u0, max_iter=3000, tol=1e-12)
    b = fit_em(patterns, counts, [3, 3, 3], 0.3, m0, u0, max_iter=3000, tol=1e-12, monotone=True)
    assert abs(a.lam - b.lam) < 1e-8
    for f in range(3):
        np.testing.assert_allclose(a.m[f], b.m[f], atol=1e-8)
        np.testing.assert_allclose(a.u[f], b.u[f], atol=1e-8)


def test_fit_em_known_pairs_and_fixed_parameters():
    levels, z = _simulate(20_000, 5)
    patterns, counts, _ = pattern_counts(levels, [3, 3, 3])
    m0, u0 = _default_init([3, 3, 3])
    # m and u held: EM fits lambda alone
    held = fit_em(patterns, counts, [3, 3, 3], 0.5, TRUE_M, TRUE_U, fix_m=True, fix_u=True, max_iter=2000, tol=1e-12)
    for f in range(3):
        np.testing.assert_allclose(held.m[f], TRUE_M[f], rtol=1e-12)
        np.testing.assert_allclose(held.u[f], TRUE_U[f], rtol=1e-12)
    assert abs(held.lam - TRUE_LAM) < 0.01
    fixed = fit_em(patterns, counts, [3, 3, 3], 0.3, m0, u0, fix_lam=True, max_iter=5)
    assert fixed.lam == 0.3
    # pairs of known class: with every pair known, EM is counting (the complete-data maximum, in one step)
    kp, kc, inv = pattern_counts(levels, [3, 3, 3])
    pos = np.bincount(inv, weights=z.astype(float), minlength=len(kp))
    neg = np.bincount(inv, weights=(~z).astype(float), minlength=len(kp))
    tiny = np.array([1e-300])  # the candidates weigh nothing
    known = fit_em(kp[:1], tiny, [3, 3, 3], 0.5, m0, u0, known=(kp, pos, neg), max_iter=3, tol=0.0)
    for f in range(3):
        ok = levels[:, f] >= 0
        np.testing.assert_allclose(known.m[f], np.bincount(levels[ok & z, f], minlength=3) / (ok & z).sum(), atol=1e-9)
        np.testing.assert_allclose(known.u[f], np.bincount(levels[ok & ~z, f], minlength=3) / (ok & ~z).sum(), atol=1e-9)
    assert all(y >= x - 1e-6 for x, y in zip(known.loglik[1:], known.loglik[2:]))


# ---------------------------------------------------------------------------
# sigmoid


def test_sigmoid_is_scipy_expit_bit_for_bit():
    """kernels.em.sigmoid (no scipy import at start-up) equals scipy.special.expit exactly, at every
    magnitude, at the overflow edge, at the infinities and at NaN, for arrays of any shape."""
    expit = pytest.importorskip("scipy.special").expit
    rng = np.random.default_rng(11)
    z = np.concatenate(
        [
            rng.normal(0, 3, 2000),
            rng.normal(0, 40, 2000),
            np.linspace(-760, 760, 3001),
            [0.0, -0.0, 1e-300, -1e-300, 36.7, -36.7, 709.78, -709.78, 709.79, -709.79, 745.2, -745.2, 1e308, -1e308, np.inf, -np.inf],
        ]
    )
    got = sigmoid(z)
    want = expit(z)
    assert got.dtype == np.float64 and got.shape == z.shape
    assert np.array_equal(got, want)  # bitwise: the written scores do not move
    assert np.isnan(sigmoid(np.array([np.nan, 1.0]))[0])
    grid = z[:3000].reshape(30, 100)
    assert np.array_equal(sigmoid(grid), expit(grid))
    assert sigmoid(np.zeros(0)).shape == (0,)
    assert np.all((got >= 0) & (got <= 1))


# ---------------------------------------------------------------------------
# training sessions and lambda over every record pair


def _latent_pairs(rng, n_match, n_non, m, u):
    """Levels of pairs drawn from a known latent-class model (fields independent given the class)."""
    rows = []
    for cls, k in ((m, n_match), (u, n_non)):
        rows.append(np.stack([rng.choice(len(p), size=k, p=p) for p in cls], axis=1))
    return np.concatenate(rows)


def test_fit_session_recovers_m_of_the_other_fields_with_u_held():
    """Pairs agreeing on a blocking key (field 0 at level 0), the other fields drawn from the known model:
    the session's EM, u held at the true u, recovers m of fields 1 and 2 and leaves field 0 out."""
    rng = np.random.default_rng(3)
    m = [np.array([0.9, 0.1]), np.array([0.7, 0.2, 0.1]), np.array([0.8, 0.2])]
    u = [np.array([0.01, 0.99]), np.array([0.02, 0.08, 0.9]), np.array([0.1, 0.9])]
    lv = _latent_pairs(rng, 20_000, 60_000, m, u)
    lv[:, 0] = 0  # the session: every pair agrees on the key's field
    pats, counts, _ = pattern_counts(lv, [2, 3, 2])
    sf = fit_session(pats, counts, [2, 3, 2], (0,), u, monotone=False, smoothing=0.0)
    assert sf is not None and sf.fixed == (0,) and sf.tied == () and sf.m[0] is None
    assert sf.lam == pytest.approx(0.25, abs=0.01)
    np.testing.assert_allclose(sf.m[1], m[1], atol=0.01)
    np.testing.assert_allclose(sf.m[2], m[2], atol=0.01)
    # equal to fit_em on the session's patterns with the key's field set missing (the naive way)
    sp = pats.copy()
    sp[:, 0] = -1
    ref = fit_em(
        sp,
        counts,
        [2, 3, 2],
        0.5,
        [np.array([8.0, 1.0]) / 9, np.array([64.0, 8, 1]) / 73, np.array([8.0, 1.0]) / 9],
        u,
        fix_u=True,
        guard=False,
    )
    np.testing.assert_allclose(sf.m[1], ref.m[1], rtol=1e-9)
    assert sf.lam == pytest.approx(ref.lam, rel=1e-9)
    # no pair in the session: None
    none = pats[pats[:, 1] != 0]
    assert fit_session(none, np.ones(len(none)), [2, 3, 2], (1,), u) is None


def test_fit_session_leaves_out_a_field_tied_to_the_key():
    """A field at level 0 in (almost) every pair of the session (a city under its zip) is not estimated."""
    rng = np.random.default_rng(4)
    m = [np.array([0.9, 0.1]), np.array([0.7, 0.3]), np.array([0.8, 0.2])]
    u = [np.array([0.01, 0.99]), np.array([0.05, 0.95]), np.array([0.1, 0.9])]
    lv = _latent_pairs(rng, 2_000, 8_000, m, u)
    lv[:, 0] = 0
    lv[:, 1] = 0  # tied to field 0
    lv[: int(len(lv) * (1 - SESSION_TIED_SHARE) / 2), 1] = 1  # a few disagree: still tied
    pats, counts, _ = pattern_counts(lv, [2, 2, 2])
    sf = fit_session(pats, counts, [2, 2, 2], (0,), u)
    assert sf is not None and sf.tied == (1,) and sf.m[1] is None and sf.m[2] is not None


def _loglik_over_population(lam, pats, counts, m, u, population):
    """Log-likelihood of lambda: the candidates' mixture terms, every other pair a non-match (naive loops)."""
    total = 0.0
    for p, c in zip(pats, counts):
        pm = math.prod(float(m[f][k]) for f, k in enumerate(p) if k >= 0)
        pu = math.prod(float(u[f][k]) for f, k in enumerate(p) if k >= 0)
        total += c * math.log(lam * pm + (1 - lam) * pu)
    return total + (population - counts.sum()) * math.log(1 - lam)


def test_population_lambda_is_the_maximum_likelihood():
    rng = np.random.default_rng(5)
    m = [np.array([0.9, 0.1]), np.array([0.7, 0.2, 0.1])]
    u = [np.array([0.01, 0.99]), np.array([0.02, 0.08, 0.9])]
    # every pair of a population of 200,300 drawn from the model; the candidates: the pairs agreeing somewhere
    # (the blocking), the others, far from any match, are left out as non-matches
    lv = _latent_pairs(rng, 300, 200_000, m, u)
    population = len(lv)
    lv = lv[(lv[:, 0] == 0) | (lv[:, 1] < 2)]
    pats, counts, _ = pattern_counts(lv, [2, 3])
    lam, iters, ok = population_lambda(pats, counts, m, u, population)
    assert ok
    grid = np.exp(np.linspace(math.log(lam) - 0.05, math.log(lam) + 0.05, 201))
    ll = [_loglik_over_population(x, pats, counts, m, u, population) for x in grid]
    best = grid[int(np.argmax(ll))]
    assert lam == pytest.approx(best, rel=1e-3)
    # the expected matches are about the drawn matches
    assert lam * population == pytest.approx(300, rel=0.15)
    with pytest.raises(ValueError, match="smaller than"):
        population_lambda(pats, counts, m, u, 10)
