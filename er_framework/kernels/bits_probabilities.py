"""Candidate probabilities of blocking fingerprints on random sets of grid cells, and the choice of ``(c, M)``.

The model (SEEDS §6; :mod:`.bits`, :mod:`.bits_candidates`): a print is the
set of grid cells that hold a minutia; ``M`` random sets of ``c`` cells each
have a bucket holding the prints that have all ``c`` cells; prints sharing a
bucket are candidates.

With a fraction ``p`` of cells occupied and two prints of one finger agreeing
on a fraction ``q`` of their occupied cells (and every cell independent)::

    P(one set hits both | same finger)       = (p q)**c
    P(one set hits both | different fingers) = p**(2 c)
    P(candidate | same) = 1 - (1 - (p q)**c)**M
    P(candidate | diff) = 1 - (1 - p**(2 c))**M

(p = 0.2, q = 0.8, c = 3, M = 1024: 0.985 and 0.063.) The last two lines
treat the ``M`` set hits of one pair as independent events. They are not on a
finite grid: every set looks at the same pair of prints, and a pair with more
common cells than average hits many sets at once. Averaging over the number
``k`` of cells the two prints share gives the exact value for sets drawn
uniformly at random (:func:`candidate_probabilities_exact`)::

    P(candidate) = E_k[ 1 - (1 - C(k, c) / C(N, c))**M ]

which for ``N = 400`` cells, ``k ~ Binomial(400, 0.16)`` is 0.967 (not 0.985),
and 0.0623 (not 0.0634) for different fingers. The concave map
``x -> 1 - (1 - x)**M`` is what lowers the value (Jensen); the per-set
probabilities ``(p q)**c`` and ``p**(2c)`` are exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "SetChoice",
    "Suggestion",
    "candidate_probabilities",
    "candidate_probabilities_exact",
    "suggest_sets",
]

Float64Array = npt.NDArray[np.float64]


# --------------------------------------------------------------------------- probabilities


def _one_minus_pow(x: Any, m: Any) -> Any:
    """``1 - (1 - x)**m``, accurate for small ``x`` (``-expm1(m log1p(-x))``)."""
    with np.errstate(divide="ignore"):  # x = 1: log1p(-1) = -inf, result 1
        return -np.expm1(np.asarray(m, dtype=np.float64) * np.log1p(-np.asarray(x, dtype=np.float64)))


def candidate_probabilities(occupancy: float, agreement: float, cells: int, sets: int) -> tuple[float, float]:
    """``(P(candidate | same finger), P(candidate | different fingers))`` (SEEDS §6).

    ``P_same = 1 - (1 - (p q)**c)**M``, ``P_diff = 1 - (1 - p**(2 c))**M``
    with occupancy ``p``, agreement ``q``, ``c`` cells per set, ``M`` sets.
    Assumes the ``M`` set hits of one pair are independent; see
    :func:`candidate_probabilities_exact` for a finite grid.
    p = 0.2, q = 0.8, c = 3, M = 1024 gives (0.98505, 0.06344).
    """
    _check_pq(occupancy, agreement)
    p, q = float(occupancy), float(agreement)
    same = float(_one_minus_pow((p * q) ** cells, sets))
    diff = float(_one_minus_pow(p ** (2 * cells), sets))
    return same, diff


def _check_pq(p: float, q: float) -> None:
    if not (0.0 <= p <= 1.0) or not (0.0 <= q <= 1.0):
        raise ValueError(f"occupancy and agreement must lie in [0, 1], got {p} and {q}")


def _log_comb(n: Float64Array, k: int) -> Float64Array:
    """``log C(n, k)`` elementwise (``-inf`` where ``n < k``)."""
    from math import lgamma

    out = np.full(len(n), -np.inf)
    ok = n >= k
    out[ok] = [lgamma(v + 1) - lgamma(k + 1) - lgamma(v - k + 1) for v in n[ok]]
    return out


def _binom_pmf(n: int, r: float) -> Float64Array:
    from math import lgamma, log

    k = np.arange(n + 1, dtype=np.float64)
    if r <= 0.0 or r >= 1.0:
        out = np.zeros(n + 1)
        out[0 if r <= 0.0 else n] = 1.0
        return out
    lc = np.array([lgamma(n + 1) - lgamma(v + 1) - lgamma(n - v + 1) for v in k])
    return np.exp(lc + k * log(r) + (n - k) * log(1.0 - r))


def _hypergeom_pmf(n: int, a: int, b: int) -> Float64Array:
    """``P(|A ∩ B| = k)``, ``k = 0 .. n``, for independent uniform subsets of sizes ``a``, ``b`` of ``n`` items."""
    k = np.arange(n + 1, dtype=np.float64)
    log_p = np.zeros(n + 1, dtype=np.float64)
    for i, v in enumerate(k):  # n + 1 scalar terms (a pmf table, not a hot path)
        if v > a or b - v < 0 or b - v > n - a:
            log_p[i] = -np.inf
        else:
            log_p[i] = (
                math.lgamma(a + 1)
                - math.lgamma(v + 1)
                - math.lgamma(a - v + 1)
                + math.lgamma(n - a + 1)
                - math.lgamma(b - v + 1)
                - math.lgamma(n - a - b + v + 1)
                - (math.lgamma(n + 1) - math.lgamma(b + 1) - math.lgamma(n - b + 1))
            )
    return np.exp(log_p)


def candidate_probabilities_exact(
    occupancy: float,
    agreement: float,
    cells: int,
    sets: int,
    n_cells: int,
    model: Literal["latent", "fixed"] = "latent",
) -> tuple[float, float]:
    """Candidate probabilities on a grid of ``N = n_cells`` cells, without the independence assumption.

    For sets drawn independently and uniformly (as :func:`~.bits_candidates.cell_sets` does),
    given that the two prints share ``k`` cells, the sets are i.i.d. and each
    lies inside the shared cells with probability ``C(k, c) / C(N, c)``, so::

        P(candidate) = E_k[ 1 - (1 - C(k, c) / C(N, c))**M ]

    (averaged over the random sets; a fixed collection deviates slightly).
    The distribution of ``k`` depends on the print model
    (see :mod:`er_framework.synth.fingerprints`):

    * ``"latent"`` — every cell independent: ``k ~ Binomial(N, p q)`` for the
      same finger, ``Binomial(N, p**2)`` for different fingers;
    * ``"fixed"`` — every print has exactly ``K = round(p N)`` cells and two
      impressions of one finger share exactly ``round(q K)``: ``k`` is that
      number for the same finger, ``Hypergeometric(N, K, K)`` for different
      fingers.
    """
    _check_pq(occupancy, agreement)
    n, c = int(n_cells), int(cells)
    if c > n:
        raise ValueError(f"cells={c} exceeds n_cells={n}")
    k = np.arange(n + 1, dtype=np.float64)
    x = np.exp(_log_comb(k, c) - _log_comb(np.array([float(n)]), c)[0])
    f = _one_minus_pow(x, sets)
    p, q = float(occupancy), float(agreement)
    if model == "latent":
        w_same, w_diff = _binom_pmf(n, p * q), _binom_pmf(n, p * p)
    elif model == "fixed":
        kk = int(round(p * n))
        w_same = np.zeros(n + 1)
        w_same[int(round(q * kk))] = 1.0
        w_diff = _hypergeom_pmf(n, kk, kk)
    else:
        raise ValueError(f"model must be 'latent' or 'fixed', got {model!r}")
    return float((w_same * f).sum()), float((w_diff * f).sum())


@dataclass(frozen=True)
class SetChoice:
    """For ``cells = c``: the fewest sets reaching the recall, and the resulting rates."""

    cells: int
    sets: int | None  # None: more than max_sets would be needed
    p_same: float
    p_diff: float
    meets_recall: bool
    meets_fp: bool


@dataclass(frozen=True)
class Suggestion:
    """Result of :func:`suggest_sets`."""

    options: list[SetChoice]
    recommended: SetChoice | None
    meets_targets: bool
    note: str = ""
    targets: dict[str, float] = field(default_factory=dict)


def _sets_needed(x: float, target: float) -> int | None:
    """Smallest ``M`` with ``1 - (1 - x)**M >= target`` (``None`` when ``x = 0``)."""
    if x <= 0.0:
        return None
    if x >= 1.0:
        return 1
    m = max(1, math.ceil(math.log1p(-target) / math.log1p(-x)))
    while float(_one_minus_pow(x, m)) < target:  # guard float rounding of the closed form
        m += 1
    while m > 1 and float(_one_minus_pow(x, m - 1)) >= target:
        m -= 1
    return m


def suggest_sets(
    occupancy: float,
    agreement: float,
    target_recall: float,
    max_fp_rate: float,
    c_range: Iterable[int] = range(1, 11),
    max_sets: int = 1 << 20,
) -> Suggestion:
    """Choose ``(c, M)``: for each ``c`` the fewest sets ``M`` with ``P_same >= target_recall``.

    ``M = ceil(log(1 - recall) / log(1 - (p q)**c))`` (then checked exactly);
    ``P_diff`` is the false-positive rate at that ``M``
    (:func:`candidate_probabilities`). Each option records whether it meets
    the recall (``M <= max_sets``) and the false-positive target.

    Recommended: among the options meeting both targets, the one with the
    fewest sets (the blocking work grows with ``M``; ties: the lower
    false-positive rate). When none meets both, the best compromise is
    returned with ``meets_targets = False`` and a note: the option meeting
    the recall with the lowest false-positive rate; failing that, the option
    with the highest recall at ``max_sets``.
    """
    _check_pq(occupancy, agreement)
    if not (0.0 < target_recall < 1.0):
        raise ValueError(f"target_recall must lie in (0, 1), got {target_recall}")
    if not (0.0 <= max_fp_rate <= 1.0):
        raise ValueError(f"max_fp_rate must lie in [0, 1], got {max_fp_rate}")
    p, q = float(occupancy), float(agreement)
    options: list[SetChoice] = []
    for c in c_range:  # one step per candidate set size
        if c < 1:
            raise ValueError(f"cells per set must be >= 1, got {c}")
        m = _sets_needed((p * q) ** c, target_recall)
        if m is None or m > max_sets:
            same, diff = candidate_probabilities(p, q, c, max_sets)
            options.append(SetChoice(c, None, same, diff, False, diff <= max_fp_rate))
        else:
            same, diff = candidate_probabilities(p, q, c, m)
            options.append(SetChoice(c, m, same, diff, True, diff <= max_fp_rate))
    targets = {"target_recall": target_recall, "max_fp_rate": max_fp_rate, "max_sets": max_sets}
    good = [o for o in options if o.meets_recall and o.meets_fp]
    if good:
        best = min(good, key=lambda o: (o.sets, o.p_diff))
        return Suggestion(options, best, True, "", targets)
    recall_ok = [o for o in options if o.meets_recall]
    if recall_ok:
        best = min(recall_ok, key=lambda o: (o.p_diff, o.sets))
        note = (
            f"no cells-per-set value reaches recall {target_recall} with a false-positive rate <= {max_fp_rate} "
            f"within {max_sets} sets; best compromise: c={best.cells}, M={best.sets} with P(candidate | different) = "
            f"{best.p_diff:.4g}; allow more sets or a higher false-positive rate"
        )
        return Suggestion(options, best, False, note, targets)
    if not options:
        return Suggestion(options, None, False, "c_range is empty", targets)
    best = max(options, key=lambda o: (o.p_same, -o.p_diff))
    note = (
        f"no cells-per-set value reaches recall {target_recall} within {max_sets} sets; "
        f"highest recall: c={best.cells} with {max_sets} sets gives {best.p_same:.4g}"
    )
    return Suggestion(options, best, False, note, targets)
