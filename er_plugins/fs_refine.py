"""Labels that refine a Fellegi–Sunter model (``labels_fit: refine``, the default with training labels).

The model is first fitted exactly as without labels (training sessions or EM, the dependence of exact
agreements included: the *unsupervised fit*). Then a Bayesian logistic regression on the labelled pairs
corrects it: a pair's features are its per-field match weights in bits under that fit (``w_f``: the level's
``log2(m / u)`` plus the field's term-frequency adjustment, 0 where the field is missing, as in scoring),
its offset the rest of its match weight (the prior weight, less what dependent exact agreements lose), and

    refined weight = b0 + sum_f beta_f * w_f + offset      (bits);   P(match) = sigmoid(ln 2 * weight)

with a Gaussian prior on every ``beta_f`` centred at 1 (scale ``labels_prior_scale``) and on the labels'
correction ``b0`` centred at 0 bits (scale ``labels_intercept_scale``). The log posterior is concave, and
its maximum is found by Newton's method (iteratively reweighted least squares) with step halving:
deterministic, a few iterations. With no labels the coefficients stay at their prior means (beta = 1,
b0 = 0) and the fit is the unsupervised one; labels of one class only still give a finite fit (the prior
bounds it), which moves the boundary only as far as those labels and the prior say.

A few labels near the threshold are a biased sample of the candidates: fitting m and u to them (``labels_fit:
em`` / ``labels``) replaced a good unsupervised estimate by a worse one; here they only rescale the fields'
evidence and shift the boundary, and a field's weights keep the unsupervised fit's shape across its levels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import LabelledCodes
from er_framework.kernels.dependence import dependence_correction
from er_framework.kernels.em import EMFit

__all__ = [
    "LN2",
    "NEWTON_MAX_ITER",
    "LabelledAgreements",
    "RefinedFit",
    "TFAgreements",
    "log_posterior",
    "fit_logistic",
    "fit_logistic_reference",
    "refinement_of",
    "refinement_state",
]

LN2 = math.log(2.0)
#: Newton iterations at most (each at least halves the distance to the maximum once close; 5-10 are typical)
NEWTON_MAX_ITER = 100


@dataclass
class RefinedFit(EMFit):
    """An :class:`EMFit` with the labels' refinement: field f's weights (its levels' and its term-frequency
    adjustment) times ``beta[f]``, and ``b0`` bits added to every pair's weight. The dependence correction
    and the prior weight are not scaled."""

    beta: npt.NDArray[np.float64] = dc_field(default_factory=lambda: np.zeros(0))
    b0: float = 0.0

    def scale(self, f: int) -> float:
        """The factor of field ``f``'s weights."""
        return float(self.beta[f])

    def weights(self) -> list[npt.NDArray[np.float64]]:
        """Refined match weight ``beta_f * log2(m / u)`` per field and level."""
        return [float(b) * w for b, w in zip(self.beta, super().weights())]

    def logit(self, patterns: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Natural-log posterior odds per pattern under the refined weights (``b0`` included)."""
        z = np.full(len(patterns), math.log(self.lam) - math.log1p(-self.lam) + self.b0 * LN2)
        for f, (m, u) in enumerate(zip(self.m, self.u)):
            lv = patterns[:, f]
            ok = lv >= 0
            z += float(self.beta[f]) * np.where(ok, np.log(m / u)[np.where(ok, lv, 0)], 0.0)
        if self.log_lift is not None:
            z -= dependence_correction(patterns, self.log_lift, self.order)
        return z


@dataclass(frozen=True)
class TFAgreements:
    """One term-frequency field over some pairs: ``equal`` (which pairs have equal values), the distinct
    equal ``values`` and, per equal pair in order, the index of its value (``inverse``)."""

    equal: npt.NDArray[np.bool_]
    values: list[Any]
    inverse: npt.NDArray[np.intp]


@dataclass(frozen=True)
class LabelledAgreements(LabelledCodes):
    """Labelled pairs' codes with their term-frequency agreements (per field index): what the refinement
    needs to give a labelled pair the weights its score has. Plain :class:`LabelledCodes` (an executor's)
    refine on the codes alone (no term-frequency part in the features)."""

    agreements: Mapping[int, TFAgreements] = dc_field(default_factory=dict)


def _design(features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The features with a first column of ones (the intercept b0)."""
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    return np.column_stack([np.ones(len(x)), x])


def log_posterior(
    coef: npt.NDArray[np.float64],
    features: npt.NDArray[np.float64],
    offset: npt.NDArray[np.float64],
    y: npt.NDArray[np.bool_],
    mean: npt.NDArray[np.float64],
    scale: npt.NDArray[np.float64],
) -> float:
    """The log posterior (up to a constant) of ``coef`` = [b0, beta_1..beta_F]: the labels' Bernoulli
    log-likelihood at ``z = ln 2 * (b0 + features @ beta + offset)`` plus the Gaussian prior ``N(mean, scale**2)``."""
    z = LN2 * (_design(features) @ coef + offset)
    ll = float(np.sum(np.where(y, z, 0.0) - np.logaddexp(0.0, z)))
    return ll - float(np.sum(((coef - mean) / scale) ** 2)) / 2.0


def _gradient(
    coef: npt.NDArray[np.float64],
    x: npt.NDArray[np.float64],
    offset: npt.NDArray[np.float64],
    y: npt.NDArray[np.bool_],
    mean: npt.NDArray[np.float64],
    scale: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The log posterior's gradient and the labels' probabilities at ``coef`` (``x``: the design)."""
    z = LN2 * (x @ coef + offset)
    p = 0.5 * (1.0 + np.tanh(z / 2.0))  # sigmoid without overflow
    return LN2 * (x.T @ (y.astype(np.float64) - p)) - (coef - mean) / scale**2, p


def fit_logistic(
    features: npt.NDArray[np.float64],
    offset: npt.NDArray[np.float64],
    y: npt.NDArray[np.bool_],
    mean: npt.NDArray[np.float64],
    scale: npt.NDArray[np.float64],
    tol: float = 1e-10,
) -> tuple[npt.NDArray[np.float64], int]:
    """The maximum of :func:`log_posterior` by Newton's method (IRLS), each step halved until the posterior
    does not fall; starts at the prior ``mean``. Returns the coefficients [b0, beta...] and the iterations."""
    x = _design(features)
    coef = np.asarray(mean, dtype=np.float64).copy()
    if len(x) == 0:
        return coef, 0
    precision = np.diag(1.0 / np.asarray(scale, dtype=np.float64) ** 2)
    current = log_posterior(coef, features, offset, y, mean, scale)
    for it in range(1, NEWTON_MAX_ITER + 1):
        grad, p = _gradient(coef, x, offset, y, mean, scale)
        hess = LN2**2 * (x.T * (p * (1.0 - p))) @ x + precision  # minus the Hessian: positive definite
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while True:
            trial = coef + t * step
            value = log_posterior(trial, features, offset, y, mean, scale)
            if value >= current - 1e-12 or t < 1e-8:
                break
            t /= 2.0
        moved = float(np.max(np.abs(trial - coef)))
        coef, current = trial, value
        if moved <= tol:
            return coef, it
    return coef, NEWTON_MAX_ITER


def fit_logistic_reference(
    features: npt.NDArray[np.float64],
    offset: npt.NDArray[np.float64],
    y: npt.NDArray[np.bool_],
    mean: npt.NDArray[np.float64],
    scale: npt.NDArray[np.float64],
    rate: float = 0.05,
    max_iter: int = 2_000_000,
    tol: float = 1e-12,
) -> npt.NDArray[np.float64]:
    """Naive twin of :func:`fit_logistic`: plain gradient ascent on the same log posterior, a fixed step
    ``rate`` divided by the curvature bound (the prior's precision plus ``ln2**2 / 4`` times the squared
    features), until no coefficient moves by more than ``tol``."""
    x = _design(features)
    coef = np.asarray(mean, dtype=np.float64).copy()
    bound = float(np.max(1.0 / np.asarray(scale) ** 2)) + LN2**2 / 4.0 * float(np.sum(x**2))
    for _ in range(max_iter):
        grad, _ = _gradient(coef, x, offset, y, mean, scale)
        step = rate / bound * grad
        coef = coef + step
        if float(np.max(np.abs(step))) <= tol:
            break
    return coef


def refinement_state(fit: RefinedFit, labels: Sequence[str], info: Mapping[str, Any]) -> dict[str, Any]:
    """The state's ``labels_refinement``: b0, beta per field label, and what the fit was (``info``)."""
    return {"b0": float(fit.b0), "beta": {x: float(b) for x, b in zip(labels, fit.beta)}, **info}


def refinement_of(state: Mapping[str, Any], labels: Sequence[str]) -> tuple[npt.NDArray[np.float64], float] | None:
    """The (beta, b0) a state's ``labels_refinement`` holds; None without one. ValueError naming what is wrong."""
    ref = state.get("labels_refinement")
    if ref is None:
        return None
    try:
        beta = {str(k): float(v) for k, v in dict(ref["beta"]).items()}
        b0 = float(ref["b0"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"fellegi_sunter: the model's labels_refinement must hold b0 and beta per field ({e})") from None
    if list(beta) != list(labels):
        raise ValueError(f"fellegi_sunter: the model's labels_refinement has fields {list(beta)}, not this verifier's {list(labels)}")
    values = np.asarray(list(beta.values()), dtype=np.float64)
    if not (np.all(np.isfinite(values)) and math.isfinite(b0)):
        raise ValueError("fellegi_sunter: the model's labels_refinement holds values that are not finite numbers")
    return values, b0
