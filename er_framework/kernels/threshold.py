"""A verification threshold chosen from the scores of the candidate pairs.

LSH candidates blocked for a low floor threshold ``low`` are a mixture of
non-matching pairs (many, low scores, a long tail) and near-duplicates (fewer,
high scores). :func:`choose_threshold` finds the split between the two groups
from the score distribution alone, in one of two ways:

``valley``
    The density of the scores (a Gaussian kernel density on a fine grid over
    [0, 1], reflected at both ends) at several bandwidths, from Silverman's rule
    up to 0.12 (``bandwidth="scan"``, the default). At each bandwidth every local
    minimum of the density inside [low, high] is a candidate valley; its
    *depth* is its density over the smaller of the two highest peaks on either
    side, and its *contrast* is how many standard errors the smaller peak's
    count (in a window of ±h) exceeds the valley's count. The valley of the
    largest contrast over all bandwidths wins; it must be deeper than
    :data:`MAX_DEPTH` and show a contrast of at least :data:`MIN_CONTRAST`.
``mixture``
    The matches are the highest-scoring group of scores, and there may be more
    than two groups (e.g. a tail at the floor, a large middle group of
    documents sharing boilerplate, and a small top group of near-duplicates).
    K = 1 … :data:`MAX_COMPONENTS` Gaussians are fitted to ``logit(score)`` by
    EM on the fine histogram (binned EM: a few thousand bins whatever the
    number of scores), each K from several deterministic starts (equal-count
    and top-weighted quantile splits, the gaps and density valleys of the
    histogram, each component of the best K - 1 fit split in two), and K is
    chosen by BIC. The *top group* is the highest component, merged downward
    with the adjacent one while no clear dip separates them, and the split is
    at the *clearest gap* between the groups left (:func:`_split`): at every
    boundary between adjacent components the data's density (the bandwidth
    scan of ``valley``, extended below Silverman's rule) has its lowest point
    between the two medians; its sides reach to the neighbouring boundaries'
    dips (a truncated tail decreasing from ``low`` is a side with its peak at
    ``low``); its depth is its density over the smaller side's peak, and it is
    significant when at most :data:`DIP_DEPTH` deep with a Poisson contrast of
    :data:`DIP_CONTRAST` x (1 + depth), and the fitted density dips there to
    at most :data:`MODEL_DIP_DEPTH`. Boundaries that fail are merged away, the
    weakest first; of those left, the deepest (the highest within
    :data:`GAP_TIE` of it) is the split. So a broad group of matches with a
    bump of copies stays one group above a tail of non-matches at the floor,
    and edited near-copies around 0.8 and copies around 0.95 stay one group.
    The threshold is where the components above the gap become more likely
    than all those below it together (posterior 0.5), the crossing nearest the
    dip inside the gap (:data:`GAP_LEVEL`), else the dip itself. It must describe groups apart from each other:
    Ashman's separation ``D = |mu1 - mu2| sqrt(2 / (s1^2 + s2^2))`` between the
    group above (its components' moments) and the next component below at least
    :data:`MIN_SEPARATION`, at least :data:`MIN_GROUP` scores in the top group
    and :data:`MIN_REST` below it, and the split inside [low, high].

Only the scores in [low, 1] are fitted: LSH lets through candidates below
``low`` by chance, in numbers set by the blocker rather than the data (on a
chained-records corpus 2.18 M of 2.19 M candidates scored below a floor of
0.3), and they would drown the groups the decision is about. Exact 1.0 scores (pairs with equal shingle sets) are counted in the histogram
but left out of both fits: a spike of copies at 1.0 is no evidence of where the
broader group of near-duplicates starts, and is above any threshold anyway.

When the scores show no two groups (too few scores, one group, or no split
inside [low, high]) the fit is not ``ok`` and the threshold is the fallback
(``fallback`` if given, else ``low``), with the reason in plain words.

Everything is computed on histograms: 10 M scores take about a tenth of a
second (one pass to bin them). The result does not depend on the order of the
scores and involves no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "GRID_BINS",
    "HIST_BINS",
    "MIN_SCORES",
    "ThresholdFit",
    "choose_threshold",
    "score_histogram",
]

FloatArray = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]

#: bins of the fine histogram every fit works on (width 0.0005)
GRID_BINS = 2000
#: bins of the histogram given for the report's plot (width 0.01)
HIST_BINS = 100
#: below this many scores (exact 1.0s not counted) no fit is tried
MIN_SCORES = 30
#: the smaller group must hold at least this many scores (valley: in the ±h window around its peak);
#: mixture: the top group must
MIN_GROUP = 16
#: mixture: the scores below the top group must be at least this many
MIN_REST = 8
#: a valley's density over the smaller neighbouring peak must be at most this
MAX_DEPTH = 0.5
#: (peak count - valley count) / sqrt(peak count + valley count) in windows of ±h must be at least this
MIN_CONTRAST = 4.0
#: mixture: the density must dip between the two component medians, at least this deep (valley / smaller peak) …
DIP_DEPTH = 0.8
#: … with a contrast of at least this times (1 + depth): an empty gap beside a small group needs 1.8, a dip
#: to 70% (noise on hundreds of scores, seen at a small bandwidth) about 3 (a model of two groups is no evidence
#: of two groups: a skewed or flat single group is fitted by two Gaussians too)
DIP_CONTRAST = 1.8
#: mixture: of the gaps left, those whose depth is within this of the deepest tie; the highest of them is the split
GAP_TIE = 0.1
#: mixture: the gaps are looked for also at this many bandwidths below Silverman's (each 1.25 times smaller)
GAP_FINER = 6
#: mixture: the gap is the stretch around the dip where the density stays below this share of the way from the
#: dip up to the smaller side's peak; the posterior crossing is taken only inside it
GAP_LEVEL = 0.75
#: mixture: adjacent components are separate groups only where the fitted density has a local minimum between
#: their medians at most this deep (lowest / smaller highest on either side) and the data dip there too (was
#: 0.97: a 3% dip of the model on a broad group of matches split it)
MODEL_DIP_DEPTH = 0.9
#: mixture: … unless the data's dip is this significant (Poisson contrast): overlapping components can sum to a
#: density without a minimum where the scores clearly have one (a held-out news corpus: contrast 18.5 at 0.33,
#: the fitted density monotone there; the noise dips rejected above have contrasts below 3)
STRONG_CONTRAST = 8.0
#: mixture: Ashman's D of the two components must be at least this (2: two clearly separated groups)
MIN_SEPARATION = 2.0
#: mixture: K = 1 … this many logit-normal components are fitted, K chosen by BIC
MAX_COMPONENTS = 5
#: mixture: a component's standard deviation is at least this on the score scale (10 fine bins): a component
#: cannot shrink onto a few equal scores
MIN_SD = 0.005
#: mixture: EM iterations of every start; the best start per K then runs up to :data:`EM_ITERS`
EM_SHORT = 30
EM_ITERS = 500
#: mixture: EM stops when the log-likelihood gains less than this share of itself in an iteration
EM_TOL = 1e-8
#: the bandwidths the valley scan tries: Silverman's (at least 2 grid bins), times 1.25 per step, up to this
MAX_BANDWIDTH = 0.12
#: half-width of the window whose share of the scores the reason quotes
NEAR = 0.02
#: the plotted curves take every this-many grid point (500 points)
CURVE_STEP = 4
#: scores are binned this many at a time (bounds the temporary arrays)
_CHUNK = 1 << 20


@dataclass
class ThresholdFit:
    """A threshold chosen from the candidate scores, with what the report shows about it.

    ``curve_y`` is on the scale of ``hist_counts`` (expected scores per histogram bin),
    so both can be drawn on one axis; for ``mixture`` ``curve_low`` (every component below
    the top group) and ``curve_high`` (the top group) are on the same scale and add up to
    ``curve_y`` (``curve_high`` is empty when one component fits best; both empty for ``valley``).
    """

    threshold: float
    method: str  # "valley" | "mixture" | "fallback"
    ok: bool
    reason: str
    n_scores: int
    hist_edges: FloatArray
    hist_counts: Int64Array
    curve_x: FloatArray
    curve_y: FloatArray
    evidence: dict[str, Any]
    requested: str = "mixture"  # the method asked for (``method`` is "fallback" when it did not apply)
    low: float = 0.0
    high: float = 1.0
    curve_low: FloatArray = field(default_factory=lambda: np.zeros(0))
    curve_high: FloatArray = field(default_factory=lambda: np.zeros(0))

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON types (arrays as lists rounded to 6 decimals; non-finite numbers as None)."""
        return {
            "threshold": _num(self.threshold),
            "method": self.method,
            "requested": self.requested,
            "ok": bool(self.ok),
            "reason": self.reason,
            "n_scores": int(self.n_scores),
            "low": _num(self.low),
            "high": _num(self.high),
            "hist_edges": [_num(v) for v in self.hist_edges.tolist()],
            "hist_counts": [int(v) for v in self.hist_counts.tolist()],
            "curve_x": [_num(v) for v in self.curve_x.tolist()],
            "curve_y": [_num(v) for v in self.curve_y.tolist()],
            "curve_low": [_num(v) for v in self.curve_low.tolist()],
            "curve_high": [_num(v) for v in self.curve_high.tolist()],
            "evidence": _jsonable(self.evidence),
        }


def _num(v: float, digits: int = 6) -> float | None:
    v = float(v)
    return round(v, digits) if math.isfinite(v) else None


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return _num(float(v))
    if v is None or isinstance(v, str):
        return v
    return str(v)


# --------------------------------------------------------------------------- histogram


def score_histogram(scores: npt.ArrayLike, bins: int = GRID_BINS, low: float = 0.0) -> tuple[Int64Array, Int64Array, int]:
    """``(all, fitted, ones)``: the scores below 1.0 in ``bins`` equal bins over [0, 1); the same for the
    scores in [low, 1) only; and the number of exact 1.0s.

    Raises ValueError for NaN or a score outside [0, 1].
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    counts = np.zeros(bins, dtype=np.int64)
    fitted = np.zeros(bins, dtype=np.int64)
    ones = 0
    for start in range(0, len(s), _CHUNK):
        part = s[start : start + _CHUNK]
        lo, hi = float(part.min()), float(part.max())
        if not (lo >= 0.0 and hi <= 1.0):  # NaN fails both comparisons
            if np.isnan(part).any():
                raise ValueError("scores contain NaN: a threshold cannot be chosen from them")
            bad = lo if not lo >= 0.0 else hi
            raise ValueError(f"scores must lie in [0, 1], got {bad!r}")
        one = part >= 1.0
        n_one = int(np.count_nonzero(one))
        ones += n_one
        if n_one:
            part = part[~one]
        idx = (part * bins).astype(np.int64)
        np.minimum(idx, bins - 1, out=idx)
        every = np.bincount(idx, minlength=bins)
        counts += every
        fitted += np.bincount(idx[part >= low], minlength=bins) if lo < low else every
    return counts, fitted, ones


def _plot_hist(fine: Int64Array, ones: int) -> tuple[FloatArray, Int64Array]:
    per = GRID_BINS // HIST_BINS
    counts = fine.reshape(HIST_BINS, per).sum(axis=1)
    counts[-1] += ones  # the last bin is closed: [0.99, 1.0]
    return np.linspace(0.0, 1.0, HIST_BINS + 1), counts


def _stats(fine: Int64Array) -> tuple[float, float, float]:
    """Mean, standard deviation and interquartile range of the binned scores (bin centres)."""
    x = (np.arange(GRID_BINS) + 0.5) / GRID_BINS
    n = float(fine.sum())
    mean = float((fine * x).sum() / n)
    sd = math.sqrt(max(float((fine * (x - mean) ** 2).sum() / n), 0.0))
    cum = np.cumsum(fine)
    q1 = x[int(np.searchsorted(cum, 0.25 * n))]
    q3 = x[int(np.searchsorted(cum, 0.75 * n))]
    return mean, sd, float(q3 - q1)


def silverman_bandwidth(fine: Int64Array) -> float:
    """Silverman's rule of thumb ``0.9 min(sd, IQR / 1.34) n^(-1/5)`` on the binned scores (at least 2 bins)."""
    n = int(fine.sum())
    _, sd, iqr = _stats(fine)
    spread = min(sd, iqr / 1.34) if iqr > 0 else sd
    return max(0.9 * spread * math.pow(n, -0.2), 2.0 / GRID_BINS)


def smoothed(fine: Int64Array, h: float, start: int = 0) -> FloatArray:
    """Gaussian kernel density (bandwidth ``h``) of the binned scores at the bin centres, reflected at the
    lower edge of bin ``start`` and at 1 (zero below ``start``; bins below it must be empty).

    The even extension ``[counts, counts reversed]`` is periodic and equals the reflection at both ends,
    so one circular convolution (by FFT) gives the reflected density exactly.
    """
    full = len(fine)
    seg = fine[start:]
    g = len(seg)
    ext = np.concatenate([seg, seg[::-1]]).astype(np.float64)
    freq = np.fft.rfftfreq(2 * g)  # cycles per bin
    sigma_bins = h * full
    out = np.fft.irfft(np.fft.rfft(ext) * np.exp(-2.0 * (math.pi * sigma_bins * freq) ** 2), n=2 * g)[:g]
    out[out < 1e-9 * max(float(out.max()), 1e-300)] = 0.0  # FFT round-off in empty stretches
    n = float(seg.sum())
    return np.concatenate([np.zeros(start), out * (full / n)])  # a density on [0, 1]


# --------------------------------------------------------------------------- valley


def _valleys(f: FloatArray, n: int, h: float, i_lo: int, i_hi: int) -> list[dict[str, Any]]:
    """The candidate valleys of density ``f`` (bin centres) with an index in [i_lo, i_hi]."""
    g = len(f)
    if i_hi - i_lo < 0 or g < 3:
        return []
    left_max = np.maximum.accumulate(f)
    right_max = np.maximum.accumulate(f[::-1])[::-1]
    idx = np.arange(max(i_lo, 1), min(i_hi, g - 2) + 1)
    if len(idx) == 0:
        return []
    fi = f[idx]
    is_min = (fi <= f[idx - 1]) & (fi <= f[idx + 1]) & ((fi < f[idx - 1]) | (fi < f[idx + 1]) | (fi == 0.0))
    peak = np.minimum(left_max[idx], right_max[idx])
    keep = is_min & (fi < peak)
    idx, fi, peak = idx[keep], fi[keep], peak[keep]
    if len(idx) == 0:
        return []
    window = n * 2.0 * h  # expected scores in a window of +-h per unit of density
    c_peak, c_val = peak * window, fi * window
    contrast = (c_peak - c_val) / np.sqrt(c_peak + c_val)
    out = []
    for j in np.argsort(-contrast, kind="stable")[:8]:
        i = int(idx[j])
        out.append(
            {
                "index": i,
                "density": float(fi[j]),
                "peak": float(peak[j]),
                "depth": float(fi[j] / peak[j]),
                "contrast": float(contrast[j]),
                "peak_count": float(c_peak[j]),
                "bandwidth": h,
            }
        )
    return out


def _floor_middle(f: FloatArray, i: int, i_lo: int, i_hi: int) -> int:
    """The middle of the flat stretch of ``f`` around its local minimum ``i`` (an empty gap between groups)."""
    level = f[i] + 1e-6 * float(f.max())
    a = i
    while a - 1 >= i_lo and f[a - 1] <= level:
        a -= 1
    b = i
    while b + 1 <= i_hi and f[b + 1] <= level:
        b += 1
    return (a + b) // 2


def _modes_around(f: FloatArray, i: int) -> tuple[int, int]:
    """The highest points of ``f`` left and right of index ``i``."""
    return int(np.argmax(f[: i + 1])), i + int(np.argmax(f[i:]))


def _bandwidths(fine: Int64Array, bandwidth: str | float) -> list[float]:
    if isinstance(bandwidth, str):
        h0 = silverman_bandwidth(fine)
        if bandwidth == "silverman":
            return [h0]
        if bandwidth != "scan":
            raise ValueError(f"bandwidth must be 'scan', 'silverman' or a number, got {bandwidth!r}")
        hs = [h0]
        while hs[-1] * 1.25 <= MAX_BANDWIDTH:
            hs.append(hs[-1] * 1.25)
        return hs
    h = float(bandwidth)
    if not (h > 0 and math.isfinite(h)):
        raise ValueError(f"bandwidth must be positive, got {bandwidth!r}")
    return [h]


def _start(low: float) -> int:
    """The first fine bin that holds scores >= low."""
    return min(int(low * GRID_BINS), GRID_BINS - 1)


def _index_range(low: float, high: float) -> tuple[int, int]:
    """Bin-centre indices ``i`` with ``low <= (i + 0.5) / GRID_BINS <= high``."""
    return int(math.ceil(low * GRID_BINS - 0.5)), int(math.floor(high * GRID_BINS - 0.5))


def _fit_valley(fine: Int64Array, low: float, high: float, bandwidth: str | float) -> dict[str, Any]:
    """The best valley inside [low, high] (``found``) and the best anywhere (for the reason when none is inside)."""
    n = int(fine.sum())
    i_lo, i_hi = _index_range(low, high)
    best: dict[str, Any] | None = None
    best_any: dict[str, Any] | None = None
    for h in _bandwidths(fine, bandwidth):
        f = smoothed(fine, h, _start(low))
        for v in _valleys(f, n, h, 0, GRID_BINS - 1):
            good = v["depth"] <= MAX_DEPTH and v["contrast"] >= MIN_CONTRAST and v["peak_count"] >= MIN_GROUP
            if not good:
                continue
            inside = i_lo <= v["index"] <= i_hi
            if best_any is None or v["contrast"] > best_any["contrast"]:
                best_any = dict(v, inside=inside)
            if inside and (best is None or v["contrast"] > best["contrast"]):
                best = dict(v, f=f)
    return {"found": best, "anywhere": best_any, "silverman": silverman_bandwidth(fine)}


def _logit(x: FloatArray) -> FloatArray:
    return np.log(x) - np.log1p(-x)


def _expit(y: FloatArray) -> FloatArray:
    return 1.0 / (1.0 + np.exp(-y))


def _sd_floor(mu: FloatArray) -> FloatArray:
    """The smallest standard deviation (logit scale) of a component centred at ``mu``: :data:`MIN_SD` on the score scale."""
    p = _expit(mu)
    return MIN_SD / np.maximum(p * (1.0 - p), 1e-12)


@dataclass
class _Mixture:
    """K Gaussians on logit(score), ordered by mean."""

    w: FloatArray
    mu: FloatArray
    sd: FloatArray
    loglik: float
    iterations: int

    @property
    def k(self) -> int:
        return len(self.w)

    def log_parts(self, y: FloatArray) -> FloatArray:
        """log of each weighted component density (logit scale) at ``y``: shape (K, len(y))."""
        z = (y[None, :] - self.mu[:, None]) / self.sd[:, None]
        return (np.log(np.maximum(self.w, 1e-300)) - np.log(self.sd) - 0.5 * math.log(2.0 * math.pi))[:, None] - 0.5 * z * z


def _em_k(y: FloatArray, c: FloatArray, w: FloatArray, mu: FloatArray, sd: FloatArray, iters: int) -> _Mixture | None:
    """Binned EM of ``len(w)`` Gaussians on points ``y`` with counts ``c``, from (w, mu, sd); None when a component empties."""
    n = float(c.sum())
    loglik_prev = -math.inf
    loglik = -math.inf
    it = 0
    for step in range(1, iters + 1):
        it = step
        m = _Mixture(w, mu, sd, 0.0, 0)
        logp = m.log_parts(y)
        top = logp.max(axis=0)
        p = np.exp(logp - top)
        tot = p.sum(axis=0)
        loglik = float((c * (np.log(tot) + top)).sum())
        r = p * (c / tot)[None, :]
        nk = r.sum(axis=1)
        if (nk < 1.0).any():
            return None
        w = nk / n
        mu = (r @ y) / nk
        var = (r @ (y * y)) / nk - mu * mu
        sd = np.maximum(np.sqrt(np.maximum(var, 0.0)), _sd_floor(mu))
        if loglik - loglik_prev < EM_TOL * abs(loglik) + 1e-12:
            break
        loglik_prev = loglik
    o = np.argsort(mu, kind="stable")
    return _Mixture(w[o], mu[o], sd[o], loglik, it)


def _from_cuts(y: FloatArray, c: FloatArray, cuts: list[float]) -> tuple[FloatArray, FloatArray, FloatArray] | None:
    """Weights, means and standard deviations of the hard split of the points at ``cuts`` (None: an empty part)."""
    k = len(cuts) + 1
    seg = np.searchsorted(np.sort(np.asarray(cuts, dtype=np.float64)), y)
    nk = np.bincount(seg, c, k)
    if (nk < 1.0).any():
        return None
    mu = np.bincount(seg, c * y, k) / nk
    var = np.bincount(seg, c * y * y, k) / nk - mu * mu
    return nk / nk.sum(), mu, np.maximum(np.sqrt(np.maximum(var, 0.0)), _sd_floor(mu))


def _gap_cuts(fine: Int64Array, low: float, y_of: FloatArray) -> list[float]:
    """Candidate cuts (logit scale) at the gaps of the histogram: the middles of the longest empty stretches
    between fitted scores, then the deepest density valleys at Silverman's bandwidth and twice it."""
    nz = np.flatnonzero(fine)
    cuts: list[float] = []
    if len(nz) > 1:
        gaps = np.diff(nz)
        for j in np.argsort(-gaps, kind="stable")[:4]:
            if gaps[j] > 4:
                cuts.append(float(y_of[(nz[j] + nz[j + 1]) // 2]))
    n = int(fine.sum())
    h = silverman_bandwidth(fine)
    for hh in (h, 2.0 * h):
        for v in _valleys(smoothed(fine, hh, _start(low)), n, hh, 0, GRID_BINS - 1)[:4]:
            cuts.append(float(y_of[v["index"]]))
    out: list[float] = []
    for x in cuts:  # distinct, in order of preference
        if all(abs(x - o) > 1e-9 for o in out):
            out.append(x)
    return out


def _fit_mixtures(fine: Int64Array, low: float) -> dict[int, _Mixture]:
    """The best binned-EM fit of K = 1 … :data:`MAX_COMPONENTS` Gaussians on logit(score), for every K that fits.

    Each K starts from several deterministic hard splits: equal-count quantiles, quantiles weighted towards
    the top (a small top group), the gaps of the histogram, and each component of the best K - 1 fit split
    at its mean. Every start runs :data:`EM_SHORT` iterations; the best (likelihood) runs to convergence.
    """
    centres = (np.arange(GRID_BINS) + 0.5) / GRID_BINS
    y_of = _logit(centres)
    nz = fine > 0
    y = y_of[nz]
    c = fine[nz].astype(np.float64)
    n = float(c.sum())
    cum = np.cumsum(c) / n

    def q(p: float) -> float:
        return float(y[min(int(np.searchsorted(cum, p)), len(y) - 1)])

    gap = _gap_cuts(fine, low, y_of)
    fits: dict[int, _Mixture] = {}
    mean = float((c * y).sum() / n)
    sd1 = math.sqrt(max(float((c * (y - mean) ** 2).sum() / n), 0.0))
    one = _em_k(y, c, np.ones(1), np.array([mean]), np.maximum(np.array([sd1]), _sd_floor(np.array([mean]))), 1)
    if one is None:
        return fits
    fits[1] = one
    for k in range(2, MAX_COMPONENTS + 1):
        if len(y) < 2 * k:
            break
        starts: list[list[float]] = [
            [q(j / k) for j in range(1, k)],
            [q(1 - 0.5**j) for j in range(1, k)],
            sorted(q(1 - 0.1**j) for j in range(1, k)),
        ]
        if len(gap) >= k - 1:
            starts.append(sorted(gap[: k - 1]))
        if k - 1 in fits:
            prev = fits[k - 1].mu
            mids = list((prev[1:] + prev[:-1]) / 2.0)
            starts += [sorted(mids + [float(m)]) for m in prev]
        best: _Mixture | None = None
        for cuts in starts:
            init = _from_cuts(y, c, cuts)
            if init is None:
                continue
            fit = _em_k(y, c, *init, iters=EM_SHORT)
            if fit is not None and (best is None or fit.loglik > best.loglik + 1e-9 * abs(best.loglik)):
                best = fit
        if best is None:
            continue
        full = _em_k(y, c, best.w, best.mu, best.sd, iters=EM_ITERS)
        if full is not None:
            fits[k] = full
    return fits


def _bic(fit: _Mixture, n: float) -> float:
    return -2.0 * fit.loglik + (3 * fit.k - 1) * math.log(n)


def _scaled_parts(fit: _Mixture, x: FloatArray) -> FloatArray:
    """Each weighted component density at scores ``x`` in (0, 1), on the score scale (Jacobian included): (K, len(x))."""
    return np.exp(fit.log_parts(_logit(x))) / (x * (1.0 - x))[None, :]


def _model_dip(f: FloatArray, a: float, b: float) -> float:
    """How deep the model density ``f`` (at the fine bin centres) dips between scores ``a`` < ``b``: its lowest
    value there over the smaller of the highest values on either side of it (1: no dip)."""
    i, j = int(a * GRID_BINS), int(b * GRID_BINS)
    seg = f[i : j + 1]
    if len(seg) < 3:
        return 1.0
    m = int(np.argmin(seg))
    peak = min(float(seg[: m + 1].max()), float(seg[m:].max()))
    return float(seg[m] / peak) if peak > 0 else 1.0


def _boundary_stats(
    fit: _Mixture, fine: Int64Array, low: float, dens: list[tuple[float, FloatArray]], active: list[int]
) -> dict[int, dict[str, Any]]:
    """The data's dip at each active boundary ``c`` (between components ``c - 1`` and ``c``), on each smoothed
    density of ``dens`` (bandwidth, density at the fine bin centres): the lowest point strictly between the
    two components' medians, lower than both; its *sides* reach to the neighbouring active boundaries' dips
    (or to ``low`` and 1), so a truncated tail decreasing from ``low`` is the left side of the first gap.
    ``depth`` is the dip's density over the smaller of the highest densities on either side and ``contrast``
    how many Poisson standard errors the smaller side's count (in a window of +-h) exceeds the dip's. Per
    boundary the bandwidth of the largest contrast among those at most :data:`DIP_DEPTH` deep is kept (else
    the deepest dip seen, marked not ``significant``)."""
    n = float(fine.sum())
    med_idx = np.clip((_expit(fit.mu) * GRID_BINS).astype(np.int64), 0, GRID_BINS - 1)
    start = _start(low)
    out: dict[int, dict[str, Any]] = {}
    for h, f in dens:
        dips: dict[int, int] = {}
        for c in active:
            a, b = max(int(med_idx[c - 1]), start), int(med_idx[c])
            if b - a < 2:
                continue
            m = a + 1 + int(np.argmin(f[a + 1 : b]))
            if f[m] < f[a] and f[m] < f[b]:
                dips[c] = m
        order = sorted(dips)
        for j, c in enumerate(order):
            m = dips[c]
            lo_edge = dips[order[j - 1]] if j > 0 else start
            hi_edge = dips[order[j + 1]] if j + 1 < len(order) else GRID_BINS - 1
            pl = lo_edge + int(np.argmax(f[lo_edge : m + 1]))
            pr = m + int(np.argmax(f[m : hi_edge + 1]))
            peak = min(float(f[pl]), float(f[pr]))
            if not peak > 0:
                continue
            window = n * 2.0 * h
            cp, cv = peak * window, float(f[m]) * window
            depth = float(f[m]) / peak
            contrast = (cp - cv) / math.sqrt(cp + cv)
            significant = depth <= DIP_DEPTH and contrast >= DIP_CONTRAST * (1.0 + depth)
            v: dict[str, Any] = {
                "index": m,
                "at": float((m + 0.5) / GRID_BINS),
                "depth": depth,
                "contrast": contrast,
                "bandwidth": h,
                "peaks": [pl, pr],
                "model_depth": 1.0,
                "significant": significant,
            }
            rank = (significant, contrast if significant else -depth)
            if c not in out or rank > out[c]["rank"]:
                out[c] = dict(v, rank=rank)
    return out


def _split(fit: _Mixture, fine: Int64Array, low: float, bandwidth: str | float) -> dict[str, Any]:
    """The clearest gap between the groups of components. Adjacent components are merged while the data show
    no significant dip between them (:func:`_boundary_stats`) or the model's density does not dip there
    (:data:`MODEL_DIP_DEPTH`; a data dip of contrast :data:`STRONG_CONTRAST` stands alone), the weakest
    boundary first; of the boundaries left, the one of the deepest dip
    (the highest one among those within :data:`GAP_TIE` of it) is the split. ``first`` is the index of the
    lowest component above it (0: no split), ``dip`` its stats, ``gaps`` every boundary tried."""
    grid_x = (np.arange(GRID_BINS) + 0.5) / GRID_BINS
    model = _scaled_parts(fit, grid_x).sum(axis=0)
    med = _expit(fit.mu)
    start = _start(low)
    hs = _bandwidths(fine, bandwidth)
    if bandwidth == "scan":  # few scores make Silverman's rule wide: an empty gap between small groups shows only below it
        hs = [max(hs[0] / 1.25**j, 2.0 / GRID_BINS) for j in range(GAP_FINER, 0, -1)] + hs
    dens = [(h, smoothed(fine, h, start)) for h in sorted(set(hs))]
    active = list(range(1, fit.k))
    model_depth = {c: _model_dip(model, float(med[c - 1]), float(med[c])) for c in active}
    tried: dict[int, dict[str, Any]] = {}
    while active:
        stats = _boundary_stats(fit, fine, low, dens, active)
        weak = []
        for c in active:
            v = stats.get(c)
            if v is not None:
                v["model_depth"] = model_depth[c]
                tried[c] = v
            if v is None or not v["significant"] or (model_depth[c] > MODEL_DIP_DEPTH and v["contrast"] < STRONG_CONTRAST):
                weak.append(((2, 0.0) if v is None else (1, -v["contrast"]) if not v["significant"] else (0, -v["contrast"]), c))
        if not weak:
            best = min(stats[c]["depth"] for c in active)
            c = max(c for c in active if stats[c]["depth"] <= best + GAP_TIE)
            gaps = [dict(tried[j], boundary=j, kept=j in active) for j in sorted(tried)]
            return {"first": c, "dip": stats[c], "gaps": gaps, "active": active}
        active.remove(max(weak)[1])
    gaps = [dict(tried[j], boundary=j, kept=False) for j in sorted(tried)]
    return {"first": 0, "dip": None, "gaps": gaps, "active": []}


def _gap_crossing(fit: _Mixture, first: int, dip: dict[str, Any], dens_f: FloatArray, low: float, high: float) -> tuple[float, bool]:
    """The threshold at the gap ``dip`` below component ``first``: where the components above it turn from less
    to more likely than those below (posterior 0.5), the crossing nearest the dip inside the gap (the stretch
    around the dip where the density ``dens_f`` stays below :data:`GAP_LEVEL` of the way from the dip to the
    smaller side's peak);
    else the middle of the dip's floor. Returns (threshold, whether it is the crossing)."""
    m = int(dip["index"])
    pl, pr = dip["peaks"]
    level = float(dens_f[m]) + GAP_LEVEL * (min(float(dens_f[pl]), float(dens_f[pr])) - float(dens_f[m]))
    a = m
    while a - 1 > pl and dens_f[a - 1] <= level:
        a -= 1
    b = m
    while b + 1 < pr and dens_f[b + 1] <= level:
        b += 1
    x_lo, x_hi = max(a / GRID_BINS, low, 0.5 / GRID_BINS), min((b + 1) / GRID_BINS, high, 1.0 - 0.5 / GRID_BINS)
    if x_hi > x_lo:
        y = np.linspace(float(_logit(np.array([x_lo]))[0]), float(_logit(np.array([x_hi]))[0]), 4001)
        lp = fit.log_parts(y)
        d = np.logaddexp.reduce(lp[first:], axis=0) - np.logaddexp.reduce(lp[:first], axis=0)
        up = np.flatnonzero((d[:-1] < 0) & (d[1:] >= 0))
        if len(up):
            ts = [y[i] + (y[i + 1] - y[i]) * (-d[i]) / (d[i + 1] - d[i]) for i in up]
            xs = [1.0 / (1.0 + math.exp(-t)) for t in ts]
            at = float(dip["at"])
            return float(min(xs, key=lambda x: (abs(x - at), x))), True
    i = _floor_middle(dens_f, m, max(pl, 0), pr)
    return float(min(max((i + 0.5) / GRID_BINS, low), high)), False


def _group_moments(fit: _Mixture, idx: slice) -> tuple[float, float, float]:
    """Weight, mean and standard deviation (logit scale) of the components ``idx`` taken as one group."""
    w, mu, sd = fit.w[idx], fit.mu[idx], fit.sd[idx]
    tw = float(w.sum())
    m = float((w * mu).sum() / tw)
    var = float((w * (sd**2 + (mu - m) ** 2)).sum() / tw)
    return tw, m, math.sqrt(var)


def _group_median(fit: _Mixture, first: int) -> float:
    """The median score of the top group (the components ``first`` … as one distribution), by bisection."""
    w = fit.w[first:] / fit.w[first:].sum()
    lo, hi = float(fit.mu[first:].min()), float(fit.mu[first:].max())
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        cdf = float((w * 0.5 * (1.0 + np.vectorize(math.erf)((mid - fit.mu[first:]) / (fit.sd[first:] * math.sqrt(2.0))))).sum())
        lo, hi = (mid, hi) if cdf < 0.5 else (lo, mid)
    return float(1.0 / (1.0 + math.exp(-0.5 * (lo + hi))))


# --------------------------------------------------------------------------- entry point


def _share_near(fine: Int64Array, ones: int, t: float) -> float:
    a = max(int(math.floor((t - NEAR) * GRID_BINS)), 0)
    b = min(int(math.ceil((t + NEAR) * GRID_BINS)), GRID_BINS)
    total = int(fine.sum()) + ones
    return float(fine[a:b].sum()) / total if total else 0.0


def _fmt(x: float) -> str:
    return f"{x:.2f}" if abs(x - round(x, 2)) < 5e-4 else f"{x:.3f}"


def choose_threshold(
    scores: npt.ArrayLike,
    *,
    low: float,
    high: float = 1.0,
    method: str = "mixture",
    fallback: float | None = None,
    bandwidth: str | float = "scan",
) -> ThresholdFit:
    """Choose a verification threshold in [low, high] from the candidates' scores (see the module docstring).

    ``scores``: float scores in [0, 1] (NaN or a value outside refused with ValueError).
    ``method``: ``"mixture"`` (the default: measured better on real candidate scores,
    ``benchmarks/bench_threshold.py``) or ``"valley"``. ``fallback``: the threshold when no two groups show
    (default ``low``); must lie in [low, high]. ``bandwidth`` (valley): ``"scan"`` (Silverman's rule up to
    :data:`MAX_BANDWIDTH`, the valley of the largest contrast), ``"silverman"`` or a number.
    """
    if method not in ("valley", "mixture"):
        raise ValueError(f"method must be 'valley' or 'mixture', got {method!r}")
    low, high = float(low), float(high)
    if not (0.0 <= low < high <= 1.0):
        raise ValueError(f"need 0 <= low < high <= 1, got low={low!r}, high={high!r}")
    fb = low if fallback is None else float(fallback)
    if not (low <= fb <= high):
        raise ValueError(f"fallback {fallback!r} must lie in [low, high] = [{low}, {high}]")
    every, fine, ones = score_histogram(scores, low=low)
    n_all = int(every.sum()) + ones
    n_cont = int(fine.sum())  # the scores fitted: in [low, 1)
    edges, counts = _plot_hist(every, ones)
    bin_w = 1.0 / HIST_BINS
    grid_x = (np.arange(GRID_BINS) + 0.5) / GRID_BINS
    evidence: dict[str, Any] = {
        "scores": n_all,
        "below_low": n_all - n_cont - ones,
        "fitted": n_cont,
        "exact_ones": ones,
        "low": low,
        "high": high,
    }

    def fall(why: str, curve_y: FloatArray | None = None, extra: dict[str, Any] | None = None) -> ThresholdFit:
        ev = dict(evidence, **(extra or {}))
        x = grid_x[::CURVE_STEP] if curve_y is not None else np.zeros(0)
        y = curve_y[::CURVE_STEP] if curve_y is not None else np.zeros(0)
        src = "given fallback" if fallback is not None else "the floor low"
        return ThresholdFit(
            fb,
            "fallback",
            False,
            f"{why}; threshold {_fmt(fb)} ({src})",
            n_all,
            edges,
            counts,
            x,
            y,
            ev,
            requested=method,
            low=low,
            high=high,
        )

    if n_cont < MIN_SCORES:
        more = f" (and {ones} exact 1.0s)" if ones else ""
        return fall(f"only {n_cont} candidate scores in [{_fmt(low)}, 1){more}, fewer than {MIN_SCORES}: too few to see two groups")
    if np.count_nonzero(fine) == 1:
        return fall(f"all {n_cont} scores in [{_fmt(low)}, 1) are equal ({_fmt(float(grid_x[np.flatnonzero(fine)[0]]))}): one group only")

    if method == "valley":
        valley = _fit_valley(fine, low, high, bandwidth)
        evidence["silverman_bandwidth"] = valley["silverman"]
        v = valley["found"]
        if v is None:
            f0 = smoothed(fine, valley["silverman"], _start(low))
            curve = f0 * n_cont * bin_w
            w = valley["anywhere"]
            if w is not None:
                at = float(grid_x[w["index"]])
                return fall(
                    f"the density valley at {_fmt(at)} lies outside [{_fmt(low)}, {_fmt(high)}]",
                    curve,
                    {"valley_outside": at, "valley_contrast": w["contrast"], "valley_depth": w["depth"]},
                )
            return fall("the scores form one group (no density valley with a clear dip between two peaks)", curve)
        f = v["f"]
        i_lo, i_hi = _index_range(low, high)
        i = _floor_middle(f, v["index"], i_lo, i_hi)
        t = float(min(max(grid_x[i], low), high))
        a, b = _modes_around(f, v["index"])
        m_lo, m_hi = float(grid_x[a]), float(grid_x[b])
        share = _share_near(every, ones, t)
        evidence.update(
            {
                "bandwidth": v["bandwidth"],
                "modes": [m_lo, m_hi],
                "mode_density": [float(f[a]), float(f[b])],
                "valley_density": v["density"],
                "valley_depth_ratio": v["depth"],
                "valley_contrast": v["contrast"],
                "share_below": float(every[: int(t * GRID_BINS)].sum()) / n_all,
                "share_within_002": share,
            }
        )
        reason = (
            f"density valley at {_fmt(t)} between modes at {_fmt(m_lo)} and {_fmt(m_hi)} "
            f"(valley {v['depth']:.0%} of the smaller peak); {share:.1%} of the scores within ±{NEAR:g}"
        )
        return ThresholdFit(
            t,
            "valley",
            True,
            reason,
            n_all,
            edges,
            counts,
            grid_x[::CURVE_STEP],
            (f * n_cont * bin_w)[::CURVE_STEP],
            evidence,
            requested=method,
            low=low,
            high=high,
        )

    evidence["silverman_bandwidth"] = silverman_bandwidth(fine)
    fits = _fit_mixtures(fine, low)
    if not fits:
        return fall("the mixture could not be fitted to the scores")
    bics = {k: _bic(f, n_cont) for k, f in fits.items()}
    k = min(bics, key=lambda j: (bics[j], j))
    fit = fits[k]
    parts = _scaled_parts(fit, grid_x)
    scale = n_cont * bin_w
    med = _expit(fit.mu)
    evidence.update(
        {
            "components": [
                {"weight": float(w), "median": float(m), "logit_mu": float(u), "logit_sd": float(s)}
                for w, m, u, s in zip(fit.w, med, fit.mu, fit.sd)
            ],
            "k_components": k,
            "bic": [[j, bics[j]] for j in sorted(bics)],
            "loglik": fit.loglik,
            "loglik_one": fits[1].loglik if 1 in fits else None,
            "loglik_two": fits[2].loglik if 2 in fits else None,
            "em_iterations": fit.iterations,
        }
    )

    def mix_fall(why: str, first: int) -> ThresholdFit:
        r = fall(why, parts.sum(axis=0) * scale)
        r.curve_low = (parts[:first].sum(axis=0) * scale)[::CURVE_STEP]
        r.curve_high = (parts[first:].sum(axis=0) * scale)[::CURVE_STEP] if first > 0 else np.zeros(0)
        return r

    if k == 1:
        return mix_fall(
            f"one logit-normal group around {_fmt(float(med[0]))} describes the scores best (BIC over 1 to "
            f"{max(fits)} components): no second group",
            0,
        )
    split = _split(fit, fine, low, bandwidth)
    first = split["first"]
    evidence["gaps"] = [
        {
            "at": g["at"],
            "between_components": [g["boundary"] - 1, g["boundary"]],
            "depth": g["depth"],
            "contrast": g["contrast"],
            "bandwidth": g["bandwidth"],
            "model_depth": g["model_depth"],
            "significant": g["significant"],
            "kept": g["kept"],
        }
        for g in split["gaps"]
    ]
    comps = ", ".join(f"{w:.1%} around {_fmt(float(m))}" for w, m in zip(fit.w[::-1], med[::-1]))
    if first == 0:
        return mix_fall(f"the {k} fitted components ({comps}) have no clear dip in the density between them: one group only", 0)
    dip = split["dip"]
    nxt = first - 1
    w_top, m_top, s_top = _group_moments(fit, slice(first, None))
    sep = abs(m_top - float(fit.mu[nxt])) * math.sqrt(2.0 / (s_top**2 + float(fit.sd[nxt]) ** 2))
    top_median = _group_median(fit, first)
    evidence.update(
        {
            "top_components": k - first,
            "w_high": w_top,
            "w_low": 1.0 - w_top,
            "median_high": top_median,
            "median_low": float(med[nxt]),
            "logit_mu": [float(fit.mu[nxt]), m_top],
            "logit_sd": [float(fit.sd[nxt]), s_top],
            "separation_D": sep,
            "dip_between_medians": {x: dip[x] for x in ("at", "depth", "contrast", "bandwidth")},
            "model_dip_depth": dip["model_depth"],
        }
    )
    below = f"; {1.0 - w_top - float(fit.w[nxt]):.1%} in {nxt} lower component{'s' if nxt > 1 else ''}" if nxt else ""
    groups = (
        f"a top group of {w_top:.1%} of the scores around {_fmt(top_median)}"
        f"{f' ({k - first} components)' if k - first > 1 else ''} and the next, {float(fit.w[nxt]):.1%} around "
        f"{_fmt(float(med[nxt]))}{below}"
    )
    n_top, n_rest = w_top * n_cont, (1.0 - w_top) * n_cont
    dens_f = smoothed(fine, float(dip["bandwidth"]), _start(low))
    t_cross, crossing = _gap_crossing(fit, first, dip, dens_f, low, high)
    if sep < MIN_SEPARATION:
        return mix_fall(f"{groups}: they overlap (separation D {sep:.2f} < {MIN_SEPARATION:g}): no clear top group", first)
    if n_top < MIN_GROUP:
        return mix_fall(f"{groups}: the top group holds about {n_top:.0f} scores, fewer than {MIN_GROUP}", first)
    if n_rest < MIN_REST:
        return mix_fall(f"{groups}: about {n_rest:.0f} scores lie below the top group, fewer than {MIN_REST}", first)
    if not (low <= float(dip["at"]) <= high):
        evidence["crossing_outside"] = float(dip["at"])
        return mix_fall(f"{groups}: they split at {_fmt(float(dip['at']))}, outside [{_fmt(low)}, {_fmt(high)}]", first)
    share = _share_near(every, ones, t_cross)
    evidence.update(
        {
            "posterior_high_at_threshold": 0.5 if crossing else None,
            "share_within_002": share,
            "share_below": float(every[: int(t_cross * GRID_BINS)].sum()) / n_all,
        }
    )
    how = (
        f"the top group is the more likely from {_fmt(t_cross)}"
        if crossing
        else f"the threshold at the dip, {_fmt(t_cross)} (the groups' posterior crossing lies outside the gap)"
    )
    others = sum(1 for g in split["gaps"] if g["kept"]) - 1
    more = f", the clearest of {others + 1} gaps" if others > 0 else ""
    reason = (
        f"mixture of {k} logit-normal components (chosen by BIC): {groups} (separation D {sep:.1f}, density dip at "
        f"{_fmt(float(dip['at']))}, {dip['depth']:.0%} of the smaller side{more}); {how}; {share:.1%} of the "
        f"scores within ±{NEAR:g}"
    )
    res = ThresholdFit(
        t_cross,
        "mixture",
        True,
        reason,
        n_all,
        edges,
        counts,
        grid_x[::CURVE_STEP],
        (parts.sum(axis=0) * scale)[::CURVE_STEP],
        evidence,
        requested=method,
        low=low,
        high=high,
    )
    res.curve_low = (parts[:first].sum(axis=0) * scale)[::CURVE_STEP]
    res.curve_high = (parts[first:].sum(axis=0) * scale)[::CURVE_STEP]
    return res
