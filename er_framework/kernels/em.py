"""Fellegi-Sunter maths: agreement levels, comparison-pattern codes and their counts, and EM for the
two-class latent model (match / non-match, fields conditionally independent given the class) with the
monotone M-step (pool adjacent violators).

Pure numpy, on levels and pattern counts (the fields are compared by
:class:`er_plugins.fellegi_sunter.FellegiSunter`). :func:`isotonic_decreasing` has its naive twin
:func:`isotonic_decreasing_reference`; :func:`fit_em` is tested against a per-pair EM and
:func:`monotone_m_step` against a brute-force constrained maximum (tests/kernels/test_em.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.kernels.dependence import dependence_correction, dependence_terms

__all__ = [
    "EPS",
    "EMFit",
    "count_codes",
    "decode",
    "fit_em",
    "floor_normalize",
    "isotonic_decreasing",
    "isotonic_decreasing_reference",
    "level_of",
    "monotone_m_step",
    "SESSION_TIED_SHARE",
    "SessionFit",
    "fit_session",
    "population_lambda",
    "pattern_counts",
    "pattern_radix",
    "sigmoid",
]


# ---------------------------------------------------------------------------
# Fellegi-Sunter: levels, pattern counts, EM


def level_of(scores: npt.NDArray[np.float64], levels: Sequence[float]) -> npt.NDArray[np.int64]:
    """Agreement level of each similarity: 0 if >= levels[0], 1 if >= levels[1], ..., len(levels) else; -1 if NaN."""
    thr = np.asarray(levels, dtype=np.float64)  # strictly decreasing
    asc = thr[::-1]
    lvl = len(thr) - np.searchsorted(asc, np.nan_to_num(scores, nan=-np.inf), side="right")
    return np.where(np.isnan(scores), -1, lvl).astype(np.int64)


def pattern_radix(n_levels: Sequence[int]) -> npt.NDArray[np.int64]:
    """Mixed-radix place values: field f's state (level + 1, 0 = missing) times radix[f]."""
    r = np.ones(len(n_levels), dtype=np.int64)
    for f in range(1, len(n_levels)):
        r[f] = r[f - 1] * (n_levels[f - 1] + 1)
    return r


def _encode(levels: npt.NDArray[np.int64], n_levels: Sequence[int]) -> npt.NDArray[np.int64]:
    codes: npt.NDArray[np.int64] = ((np.asarray(levels, dtype=np.int64) + 1) * pattern_radix(n_levels)).sum(axis=1)
    return codes


def decode(codes: npt.NDArray[np.int64], n_levels: Sequence[int]) -> npt.NDArray[np.int64]:
    radix = pattern_radix(n_levels)
    base = np.asarray(n_levels, dtype=np.int64) + 1
    return (codes[:, None] // radix[None, :]) % base[None, :] - 1


def count_codes(codes: npt.NDArray[np.signedinteger[Any]], space: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Distinct codes (sorted) and their counts; a bincount when the code space is small (at most 2**22 and
    not much larger than the codes: a bincount of 36 k codes over 2.9 M patterns cost ~10 ms, their sort ~1 ms)."""
    if space <= min(1 << 22, max(1 << 16, 4 * len(codes))):
        c = np.bincount(codes, minlength=space)
        uniq = np.flatnonzero(c).astype(np.int64)
        return uniq, c[uniq].astype(np.float64)
    uniq, cnt = np.unique(codes, return_counts=True)
    return uniq.astype(np.int64), cnt.astype(np.float64)


def pattern_counts(
    levels: npt.NDArray[np.int64], n_levels: Sequence[int]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Distinct comparison patterns of an ``(n_pairs, F)`` level matrix (-1 = missing).

    Returns ``(patterns (P, F), counts (P,), inverse (n_pairs,))`` with
    ``patterns[inverse] == levels``.
    """
    codes = _encode(levels, n_levels)
    uniq, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    return decode(uniq, n_levels), counts.astype(np.float64), inverse.reshape(-1).astype(np.int64)


#: floor of every m and u probability (and of lambda, 1 - lambda): a level never seen
#: in one class gets a large finite weight instead of an infinite one
EPS = 1e-10


def floor_normalize(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    p = np.maximum(p, EPS)
    out: npt.NDArray[np.float64] = p / p.sum()
    return out


@dataclass
class EMFit:
    """A fitted two-class model: ``lam`` = P(match), ``m[f][k]`` = P(level k | match), ``u[f][k]`` = P(level k | non-match)."""

    lam: float
    m: list[npt.NDArray[np.float64]]
    u: list[npt.NDArray[np.float64]]
    iterations: int = 0
    converged: bool = False
    loglik: list[float] = dc_field(default_factory=list)
    swapped: bool = False
    #: the dependence of exact agreements among non-matches (:mod:`er_framework.kernels.dependence`):
    #: ``log_lift[f, g]`` and the fields from the rarest exact agreement on; None: fields independent
    log_lift: npt.NDArray[np.float64] | None = None
    order: list[int] = dc_field(default_factory=list)

    def weights(self) -> list[npt.NDArray[np.float64]]:
        """Match weight log2(m / u) per field and level."""
        return [np.log2(m / u) for m, u in zip(self.m, self.u)]

    def dependence(self, patterns: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """``(P, F)`` natural-log weight each field loses in each pattern for dependent exact agreements."""
        if self.log_lift is None:
            return np.zeros((len(patterns), len(self.m)))
        return dependence_terms(patterns, self.log_lift, self.order)

    def logit(self, patterns: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Natural-log posterior odds of a match per pattern (a missing level adds 0; dependent exact
        agreements less: :meth:`dependence`)."""
        z = np.full(len(patterns), math.log(self.lam) - math.log1p(-self.lam))
        for f, (m, u) in enumerate(zip(self.m, self.u)):
            lv = patterns[:, f]
            ok = lv >= 0
            z += np.where(ok, np.log(m / u)[np.where(ok, lv, 0)], 0.0)
        if self.log_lift is not None:
            z -= dependence_correction(patterns, self.log_lift, self.order)
        return z

    def probability(self, patterns: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """lam * prod m / (lam * prod m + (1 - lam) * prod u) per pattern."""
        return sigmoid(self.logit(patterns))


def _sigmoid_one(z: float) -> float:
    try:
        return 1.0 / (1.0 + math.exp(-z))
    except OverflowError:  # exp(-z) beyond the largest float (z < -709.78): 1 / (1 + inf)
        return 0.0


def sigmoid(z: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The logistic function ``1 / (1 + exp(-z))`` of every value, bit for bit ``scipy.special.expit``
    (without importing scipy.special: ~0.1 s of start-up).

    Numerically safe at every value: ``exp(-z)`` past the largest float gives 0.0 (as 1 / inf), ``+inf``
    gives 1.0, ``-inf`` 0.0 and NaN NaN, without an overflow warning. The exponential is the C library's
    (``math.exp``, as scipy's): numpy's vectorized ``exp`` can differ from it in the last bit, which would
    move the scores written out. It is evaluated once per distinct value (the callers pass the distinct
    comparison patterns' log-odds, a few hundred)."""
    arr = np.asarray(z, dtype=np.float64)
    if arr.size == 0:
        return np.zeros(arr.shape)
    flat = arr.reshape(-1)
    keys, inverse = np.unique(flat, return_inverse=True)  # NaNs: one key each, all NaN
    values = np.fromiter(map(_sigmoid_one, keys.tolist()), dtype=np.float64, count=len(keys))
    return values[inverse.reshape(-1)].reshape(arr.shape)


def _class_logs(patterns: npt.NDArray[np.int64], probs: list[npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    out = np.zeros(len(patterns))
    for f, p in enumerate(probs):
        lv = patterns[:, f]
        ok = lv >= 0
        out += np.where(ok, np.log(p)[np.where(ok, lv, 0)], 0.0)
    return out


def isotonic_decreasing(values: npt.ArrayLike, weights: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Weighted least-squares non-increasing fit of ``values`` (pool adjacent violators).

    Returns ``x`` minimizing ``sum w_k (x_k - y_k)**2`` subject to
    ``x_0 >= x_1 >= ...``: adjacent entries that violate the order are pooled
    into blocks whose value is their weighted mean ``sum w y / sum w``
    (Robertson, Wright & Dykstra 1988, *Order Restricted Statistical
    Inference*, ch. 1). The same ``x`` maximizes, under the order, every
    likelihood of the form ``sum w_k [y_k theta(x_k) - psi(x_k)]`` with
    ``theta' = psi'/x`` (the binomial ``y log x + (1 - y) log(1 - x)`` and
    the Poisson ``y log x - x`` among them; ibid., generalized isotonic
    regression), which is what :func:`monotone_m_step` uses. An entry of weight 0 takes the value of the
    nearest positive-weight entry before it (after it when there is none);
    all weights 0: ``values`` unchanged.
    """
    y = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    pos = np.flatnonzero(w > 0)
    if len(pos) == 0:
        return y.copy()
    # blocks as a stack of (weighted sum, weight, entries); a loop over at most a few levels
    sums: list[float] = []
    wts: list[float] = []
    sizes: list[int] = []
    for k in pos.tolist():
        sums.append(float(w[k] * y[k]))
        wts.append(float(w[k]))
        sizes.append(1)
        # pool while the last block's mean exceeds the one before it (a rise breaks "non-increasing")
        while len(sums) > 1 and sums[-1] / wts[-1] > sums[-2] / wts[-2]:
            s_, w_, n_ = sums.pop(), wts.pop(), sizes.pop()
            sums[-1] += s_
            wts[-1] += w_
            sizes[-1] += n_
    fitted = np.repeat([s_ / w_ for s_, w_ in zip(sums, wts)], sizes)
    out = np.empty(len(y))
    # zero-weight entries: the value of the positive-weight entry before them (after, at the start)
    idx = np.searchsorted(pos, np.arange(len(y)), side="right") - 1
    out[:] = fitted[np.maximum(idx, 0)]
    return out


def isotonic_decreasing_reference(values: npt.ArrayLike, weights: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Naive twin of :func:`isotonic_decreasing` (positive weights): the min-max formula
    ``x_k = min over i <= k of max over j >= k of mean_w(y[i..j])`` (the max-min formulas of
    isotonic regression, Robertson, Wright & Dykstra 1988, ch. 1)."""
    y = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    n = len(y)
    out = np.empty(n)
    for k in range(n):
        out[k] = min(max(float((w[i : j + 1] * y[i : j + 1]).sum() / w[i : j + 1].sum()) for j in range(k, n)) for i in range(k + 1))
    return out


def monotone_m_step(
    a: npt.ArrayLike, b: npt.ArrayLike, u_fixed: npt.ArrayLike | None = None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Constrained M-step of one field: m, u maximizing the expected complete-data log-likelihood
    with the match weight ``log(m_k / u_k)`` non-increasing in the level k (0 = closest).

    ``a_k`` / ``b_k`` are the expected matches / non-matches at level k (EM's
    ``sum c_p g_p`` and ``sum c_p (1 - g_p)`` over the patterns with level k, plus
    the smoothing pseudo-pairs; or counts of labelled pairs). The problem::

        maximize  sum_k a_k log m_k + b_k log u_k
        s.t.      sum_k m_k = sum_k u_k = 1,   m_0/u_0 >= m_1/u_1 >= ... >= m_{K-1}/u_{K-1}

    *m and u both free.* Write the field's own share of matches
    ``lam_f`` (free: it enters neither the objective's m, u terms nor the
    constraint, so adding ``A log lam_f + B log(1 - lam_f)`` changes no
    maximizer) and reparametrize ``(lam_f, m, u)`` as the level shares
    ``q_k = lam_f m_k + (1 - lam_f) u_k`` and the match share within a level
    ``p_k = lam_f m_k / q_k``. The objective becomes
    ``sum_k n_k log q_k + sum_k [a_k log p_k + b_k log(1 - p_k)]`` with
    ``n_k = a_k + b_k``, and for a fixed ``lam_f`` the ratio m_k/u_k is an
    increasing function of ``p_k``, so the constraint is ``p`` non-increasing.
    The q and p terms separate: ``q_k = n_k / N``, and ``p`` is the binomial
    maximum likelihood under an order, i.e. the isotonic regression of
    ``a_k / n_k`` with weights ``n_k`` (pool adjacent violators,
    :func:`isotonic_decreasing`). Back::

        m_k = n_k p_k / A,   u_k = n_k (1 - p_k) / B     (A = sum a, B = sum b)

    Within a pooled block S of levels this is ``m_k = (a_S / A)(n_k / n_S)``,
    ``u_k = (b_S / B)(n_k / n_S)``: one weight ``log((a_S / A) / (b_S / B))``
    for the whole block; without a violation, the unconstrained ``a_k / A``,
    ``b_k / B``.

    *u fixed* (``u_fixed``, ``fix_u``): with ``m_k = u_k r_k`` the problem is
    maximize ``sum a_k log r_k`` s.t. ``sum u_k r_k = 1``, r non-increasing.
    With the multiplier A the Lagrangian is
    ``A sum_k u_k [y_k log r_k - r_k]``, ``y_k = a_k / (A u_k)``: a Poisson
    likelihood with weights u_k, maximized under the order by the isotonic
    regression of ``y`` with weights ``u`` (pooling keeps ``sum u_k r_k =
    sum u_k y_k = 1``, so the multiplier is right); within a block
    ``r_S = a_S / (A u_S)``.

    Floors: ``p`` is clipped to [EPS, 1 - EPS] (``r`` to at least EPS) before
    m and u are formed, so every probability is positive and the order of
    the weights is kept exactly (a floor on m or u themselves could break it).
    """
    av = np.asarray(a, dtype=np.float64)
    if u_fixed is not None:
        u = np.asarray(u_fixed, dtype=np.float64)
        A = float(av.sum())
        if A <= 0:
            return u.copy(), u.copy()
        r = np.maximum(isotonic_decreasing(av / (A * u), u), EPS)
        m = u * r
        return m / m.sum(), u.copy()
    bv = np.asarray(b, dtype=np.float64)
    n = av + bv
    N = float(n.sum())
    if N <= 0 or float(av.sum()) <= 0 or float(bv.sum()) <= 0:
        raise ValueError("monotone_m_step needs positive totals in both classes")
    share = np.divide(av, n, out=np.zeros_like(n), where=n > 0)
    p = np.clip(isotonic_decreasing(share, n), EPS, 1.0 - EPS)
    q = np.maximum(n, EPS * N)  # a level no pair shows keeps a tiny share in both classes
    m = q * p
    u = q * (1.0 - p)
    return m / m.sum(), u / u.sum()


def fit_em(
    patterns: npt.NDArray[np.int64],
    counts: npt.NDArray[np.float64],
    n_levels: Sequence[int],
    lam0: float,
    m0: Sequence[npt.ArrayLike],
    u0: Sequence[npt.ArrayLike],
    *,
    fix_u: bool = False,
    fix_m: bool = False,
    fix_lam: bool = False,
    monotone: bool = False,
    known: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None,
    max_iter: int = 500,
    tol: float = 1e-7,
    guard: bool = True,
    smoothing: float = 0.0,
) -> EMFit:
    """EM for the two-class latent model with conditionally independent fields, on pattern counts.

    ``patterns`` is ``(P, F)`` (level per field, -1 = missing), ``counts`` how
    many pairs show each pattern; each iteration costs O(P * F), whatever the
    number of pairs. A missing level is in neither m nor u (the field's factor
    is 1 in both classes: missing at random).

    E-step: posterior g_p = lam * prod m / (lam * prod m + (1 - lam) * prod u).
    M-step: lam = sum c_p g_p / sum c_p; m_f[k] = sum over patterns with level
    k of c_p g_p / sum over patterns with f present of c_p g_p; u likewise with
    1 - g_p (unless ``fix_u``; m unless ``fix_m``; lam unless ``fix_lam``: with
    ``fix_m`` and ``fix_u`` EM fits lam alone). ``smoothing`` (alpha) adds alpha expected pairs
    to every level of every field in both classes before normalizing (the MAP
    estimate under a Dirichlet(1 + alpha) prior): a level that no pair of a
    class shows gets a small probability instead of 0, so its weight stays
    moderate. Every m, u is then floored at :data:`EPS` and renormalized, lam
    clipped to [EPS, 1 - EPS].

    ``monotone``: the M-step maximizes the same expected log-likelihood under
    the constraint that every field's match weight log(m_k / u_k) is
    non-increasing from level 0 (the closest) to the last level
    (:func:`monotone_m_step`: pool adjacent violators on the level's match
    share; with ``fix_u`` on m_k / u_k). The E-step is unchanged, so this is
    EM on the constrained parameter space and the likelihood still never
    decreases; the floors are applied inside :func:`monotone_m_step` so that
    they keep the order.

    ``known`` = ``(patterns (L, F), matches (L,), non_matches (L,))``: pairs of
    known class (labelled pairs), ``matches[l]`` / ``non_matches[l]`` of them
    showing pattern l. They add the complete-data term
    ``sum_l matches_l log prod m + non_matches_l log prod u`` to the
    likelihood: their counts enter the M-step of m and u as pairs whose
    posterior is held at 1 / 0. They say nothing of lam (they were chosen, not
    sampled), so lam stays the candidates' share. ``loglik`` includes the term.

    Stops when no parameter moved
    by more than ``tol`` (``converged``) or after ``max_iter`` iterations;
    ``loglik`` holds the log-likelihood (natural log) before every iteration
    and after the last one.

    Label-switching guard (``guard``, not with ``fix_u``, ``fix_m`` or ``known``): the match class must
    have m > u at level 0 (the closest agreement) for most fields; when more
    fields say otherwise, the classes are exchanged (``swapped``). Under
    ``monotone`` m_0 >= u_0 holds for every field (a non-increasing ratio
    starting below 1 would make m sum to less than u), so it never fires.
    """
    pat = np.asarray(patterns, dtype=np.int64)
    cnt = np.asarray(counts, dtype=np.float64)
    F = len(n_levels)
    if pat.ndim != 2 or pat.shape[1] != F:
        raise ValueError(f"patterns must be (P, {F}), got {pat.shape}")
    N = float(cnt.sum())
    if N <= 0:
        raise ValueError("no pairs to fit")
    lam = float(np.clip(lam0, EPS, 1 - EPS))
    m = [floor_normalize(np.asarray(x, dtype=np.float64)) for x in m0]
    u = [floor_normalize(np.asarray(x, dtype=np.float64)) for x in u0]
    for f in range(F):
        if len(m[f]) != n_levels[f] or len(u[f]) != n_levels[f]:
            raise ValueError(f"field {f}: m0/u0 need {n_levels[f]} levels")
    present = [pat[:, f] >= 0 for f in range(F)]
    lv = [pat[present[f], f] for f in range(F)]
    # pairs of known class: their level counts per field, the same every iteration
    km: list[npt.NDArray[np.float64]] = [np.zeros(K) for K in n_levels]
    ku: list[npt.NDArray[np.float64]] = [np.zeros(K) for K in n_levels]
    kpat = np.zeros((0, F), dtype=np.int64)
    kpos = kneg = np.zeros(0)
    if known is not None:
        kpat = np.asarray(known[0], dtype=np.int64).reshape(-1, F)
        kpos = np.asarray(known[1], dtype=np.float64)
        kneg = np.asarray(known[2], dtype=np.float64)
        for f in range(F):
            ok = kpat[:, f] >= 0
            km[f] = np.bincount(kpat[ok, f], weights=kpos[ok], minlength=n_levels[f]).astype(np.float64)
            ku[f] = np.bincount(kpat[ok, f], weights=kneg[ok], minlength=n_levels[f]).astype(np.float64)
    trace: list[float] = []
    converged = False
    it = 0

    def estep() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
        a = math.log(lam) + _class_logs(pat, m)
        b = math.log1p(-lam) + _class_logs(pat, u)
        tot = np.logaddexp(a, b)
        ll = float(cnt @ tot)
        if len(kpat):
            ll += float(kpos @ _class_logs(kpat, m) + kneg @ _class_logs(kpat, u))
        return np.exp(a - tot), np.exp(b - tot), ll

    for _ in range(max_iter):
        it += 1
        g, h, ll = estep()
        trace.append(ll)
        wm, wu = cnt * g, cnt * h
        lam_new = lam if fix_lam else float(np.clip(wm.sum() / N, EPS, 1 - EPS))
        delta = abs(lam_new - lam)
        m_new, u_new = [], []
        for f in range(F):
            am = np.bincount(lv[f], weights=wm[present[f]], minlength=n_levels[f]) + km[f] + smoothing
            au = np.bincount(lv[f], weights=wu[present[f]], minlength=n_levels[f]) + ku[f] + smoothing
            if fix_m:
                mf = m[f]
                uf = u[f] if fix_u else (floor_normalize(au / au.sum()) if au.sum() > 0 else u[f])
            elif monotone and am.sum() > 0 and (fix_u or au.sum() > 0):
                mf, uf = monotone_m_step(am, au, u[f] if fix_u else None)
            else:
                mf = floor_normalize(am / am.sum()) if am.sum() > 0 else m[f]
                uf = u[f] if fix_u else (floor_normalize(au / au.sum()) if au.sum() > 0 else u[f])
            delta = max(delta, float(np.abs(mf - m[f]).max()), float(np.abs(uf - u[f]).max()))
            m_new.append(mf)
            u_new.append(uf)
        lam, m, u = lam_new, m_new, u_new
        if delta < tol:
            converged = True
            break
    trace.append(estep()[2])
    fit = EMFit(lam=lam, m=m, u=u, iterations=it, converged=converged, loglik=trace)
    if guard and not fix_u and not fix_m and known is None:
        votes = sum(1 if mf[0] > uf[0] else -1 if mf[0] < uf[0] else 0 for mf, uf in zip(m, u))
        if votes < 0:
            fit = EMFit(lam=1 - lam, m=u, u=m, iterations=it, converged=converged, loglik=trace, swapped=True)
    return fit


# ---------------------------------------------------------------------------
# training sessions (m) and lambda over every record pair


#: a field at level 0 in at least this share of a training session's pairs (where present) is taken as
#: tied to the session's key and not estimated there
SESSION_TIED_SHARE = 0.98


@dataclass
class SessionFit:
    """One training session: the candidates agreeing (level 0) on the fields ``fixed``, and the m it
    estimated for every other field (``m[f]`` is None for a field of ``fixed`` or ``tied``)."""

    fixed: tuple[int, ...]
    tied: tuple[int, ...]
    pairs: float
    lam: float
    m: list[npt.NDArray[np.float64] | None]
    iterations: int
    converged: bool


def fit_session(
    patterns: npt.NDArray[np.int64],
    counts: npt.NDArray[np.float64],
    n_levels: Sequence[int],
    fixed: Sequence[int],
    u: Sequence[npt.NDArray[np.float64]],
    *,
    lam0: float = 0.5,
    fix_lam: bool = False,
    monotone: bool = True,
    max_iter: int = 500,
    tol: float = 1e-7,
    smoothing: float = 1.0,
) -> SessionFit | None:
    """m of the fields not in ``fixed`` by EM on the pairs at level 0 of every field of ``fixed``, u held.

    The pairs a blocking key produces agree on the key's fields, so among them those fields say nothing
    of the class; every other field is compared as among random pairs (conditional independence), whose
    level frequencies ``u`` are known (random pairs). In this session the ``fixed`` fields are left out
    of the model (as if missing: factor 1 in both classes), u is held and EM fits lambda (the session's
    own share of matches, not kept) and m of the other fields: the training sessions of Splink
    ("estimate_parameters_using_expectation_maximisation" on a blocking rule; Fellegi & Sunter 1969,
    Winkler 1988 for EM). None when no pair of the candidates is in the session.

    ``fix_lam``: the session's share of matches is held at ``lam0`` (a session estimating one field cannot
    tell it from that field's m; the caller knows it from the other fields' fit).
    """
    pat = np.asarray(patterns, dtype=np.int64)
    sel = np.ones(len(pat), dtype=bool)
    for f in fixed:
        sel &= pat[:, f] == 0
    if not sel.any():
        return None
    sp = pat[sel].copy()
    sc = np.asarray(counts, dtype=np.float64)[sel]
    # a field that agrees (level 0) in almost every pair of the session is tied to its key (a city to its
    # zip), not evidence of the class: it is left out with the key's fields
    tied = []
    for f in range(len(n_levels)):
        ok = sp[:, f] >= 0
        shown = float(sc[ok].sum())
        if f not in fixed and shown > 0 and float(sc[ok & (sp[:, f] == 0)].sum()) >= SESSION_TIED_SHARE * shown:
            tied.append(f)
    fixed = tuple(sorted(set(fixed) | set(tied)))
    sp[:, list(fixed)] = -1
    m0 = [floor_normalize(8.0 ** -np.arange(K, dtype=np.float64)) for K in n_levels]
    fit = fit_em(
        sp,
        sc,
        n_levels,
        lam0,
        m0,
        [np.asarray(x, dtype=np.float64) for x in u],
        fix_u=True,
        fix_lam=fix_lam,
        monotone=monotone,
        max_iter=max_iter,
        tol=tol,
        guard=False,
        smoothing=smoothing,
    )
    m: list[npt.NDArray[np.float64] | None] = [None if f in fixed else fit.m[f] for f in range(len(n_levels))]
    return SessionFit(tuple(f for f in fixed if f not in tied), tuple(tied), float(sc.sum()), fit.lam, m, fit.iterations, fit.converged)


def population_lambda(
    patterns: npt.NDArray[np.int64],
    counts: npt.NDArray[np.float64],
    m: Sequence[npt.NDArray[np.float64]],
    u: Sequence[npt.NDArray[np.float64]],
    population: float,
    *,
    correction: npt.NDArray[np.float64] | None = None,
    max_iter: int = 2000,
    tol: float = 1e-9,
) -> tuple[float, int, bool]:
    """P(match) of two records drawn from all ``population`` record pairs, m and u held: EM on lambda alone.

    The candidates are the pairs of ``patterns`` / ``counts``; every other pair of the population is
    taken as a non-match (blocking's purpose: the candidates hold the matches). The maximum-likelihood
    lambda then solves ``lambda = sum_p c_p g_p(lambda) / population`` (g_p: the posterior of pattern p
    under lambda), reached by EM's fixed-point iteration (the likelihood never decreases); ``correction``
    is subtracted from each pattern's log Bayes factor (:func:`dependence_correction`). Stops when
    lambda moves by less than ``tol`` relative to itself. Returns ``(lambda, iterations, converged)``.
    """
    pat = np.asarray(patterns, dtype=np.int64)
    cnt = np.asarray(counts, dtype=np.float64)
    N = float(population)
    if float(cnt.sum()) > N or N <= 0:
        raise ValueError(f"population of {N:g} pairs is smaller than the {float(cnt.sum()):g} candidates")
    bf = _class_logs(pat, list(m)) - _class_logs(pat, list(u))  # natural-log Bayes factor of each pattern
    if correction is not None:  # dependent agreements (EMFit.dependence)
        bf = bf - correction
    lam = float(np.clip(float(cnt.sum()) / N * 0.5, EPS, 0.5))
    for it in range(1, max_iter + 1):
        z = np.clip(bf + (math.log(lam) - math.log1p(-lam)), -700.0, 700.0)
        g = 1.0 / (1.0 + np.exp(-z))
        new = float(np.clip(float(cnt @ g) / N, EPS, 1 - EPS))
        done = abs(new - lam) <= tol * max(lam, EPS)
        lam = new
        if done:
            return lam, it, True
    return lam, max_iter, False
