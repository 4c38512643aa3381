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
    Two Gaussians fitted to ``logit(score)`` by EM on the fine histogram
    (binned EM: a few thousand bins whatever the number of scores), started
    from several splits (Otsu's, quantiles, the density valley), the best
    likelihood kept. The threshold is where the posterior probability of the
    high component reaches 0.5. It must describe two groups: Ashman's
    separation ``D = |mu1 - mu2| sqrt(2 / (s1^2 + s2^2))`` at least :data:`MIN_SEPARATION`
    and at least :data:`MIN_GROUP` scores in the smaller group.

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
MIN_SCORES = 50
#: the smaller group must hold at least this many scores (valley: in the ±h window around its peak)
MIN_GROUP = 16
#: a valley's density over the smaller neighbouring peak must be at most this
MAX_DEPTH = 0.5
#: (peak count - valley count) / sqrt(peak count + valley count) in windows of ±h must be at least this
MIN_CONTRAST = 4.0
#: mixture: the density must dip between the two component medians, at least this deep (valley / smaller peak) …
DIP_DEPTH = 0.8
#: … with at least this contrast (a model of two groups is no evidence of two groups: a skewed or flat
#: single group is fitted by two Gaussians too)
DIP_CONTRAST = 1.5
#: mixture: Ashman's D of the two components must be at least this (2: two clearly separated groups)
MIN_SEPARATION = 2.0
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
    so both can be drawn on one axis; for ``mixture`` ``curve_low`` and ``curve_high``
    are the two weighted components on the same scale (empty otherwise).
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
        part = s[start:start + _CHUNK]
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
        out.append({"index": i, "density": float(fi[j]), "peak": float(peak[j]), "depth": float(fi[j] / peak[j]),
                    "contrast": float(contrast[j]), "peak_count": float(c_peak[j]), "bandwidth": h})
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


def _dip_between(fine: Int64Array, low: float, a: float, b: float, bandwidth: str | float) -> dict[str, float] | None:
    """The clearest dip of the density strictly between scores ``a`` and ``b`` (None: none as deep as
    :data:`DIP_DEPTH` with a contrast of :data:`DIP_CONTRAST`)."""
    n = int(fine.sum())
    i_lo, i_hi = _index_range(max(a, low), min(b, 1.0))
    best: dict[str, float] | None = None
    for h in _bandwidths(fine, bandwidth):
        for v in _valleys(smoothed(fine, h, _start(low)), n, h, i_lo + 1, i_hi - 1):
            if v["depth"] <= DIP_DEPTH and v["contrast"] >= DIP_CONTRAST and (best is None or v["contrast"] > best["contrast"]):
                best = {"at": float((v["index"] + 0.5) / GRID_BINS), "depth": v["depth"], "contrast": v["contrast"], "bandwidth": h}
    return best


# --------------------------------------------------------------------------- mixture


def _logit(x: FloatArray) -> FloatArray:
    return np.log(x) - np.log1p(-x)


def _normal(y: FloatArray, mu: float, sd: float) -> FloatArray:
    return np.exp(-0.5 * ((y - mu) / sd) ** 2) / (sd * math.sqrt(2.0 * math.pi))


def _em(y: FloatArray, c: FloatArray, split: float, sd_min: float, iters: int = 500) -> dict[str, Any] | None:
    """Binned EM of two Gaussians on points ``y`` with counts ``c``, started from the hard split at ``split``."""
    n = float(c.sum())
    r = (y > split).astype(np.float64)  # responsibility of the high component
    loglik_prev = -math.inf
    params: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    loglik = -math.inf
    it = 0
    for step in range(1, iters + 1):
        it = step
        w_hi = float((c * r).sum())
        w_lo = n - w_hi
        if w_hi < 1.0 or w_lo < 1.0:
            return None
        mu_lo = float((c * (1 - r) * y).sum() / w_lo)
        mu_hi = float((c * r * y).sum() / w_hi)
        sd_lo = max(math.sqrt(float((c * (1 - r) * (y - mu_lo) ** 2).sum() / w_lo)), sd_min)
        sd_hi = max(math.sqrt(float((c * r * (y - mu_hi) ** 2).sum() / w_hi)), sd_min)
        params = (w_hi / n, mu_lo, sd_lo, mu_hi, sd_hi)
        p_lo = (1 - params[0]) * _normal(y, mu_lo, sd_lo)
        p_hi = params[0] * _normal(y, mu_hi, sd_hi)
        tot = np.maximum(p_lo + p_hi, 1e-300)
        loglik = float((c * np.log(tot)).sum())
        r = p_hi / tot
        if loglik - loglik_prev < 1e-9 * abs(loglik) + 1e-12:
            break
        loglik_prev = loglik
    w, mu_lo, sd_lo, mu_hi, sd_hi = params
    if mu_lo > mu_hi:  # keep "high" the component of the higher scores
        w, mu_lo, sd_lo, mu_hi, sd_hi = 1 - w, mu_hi, sd_hi, mu_lo, sd_lo
    return {"w_high": w, "mu_low": mu_lo, "sd_low": sd_lo, "mu_high": mu_hi, "sd_high": sd_hi,
            "loglik": loglik, "iterations": it}


def _otsu(y: FloatArray, c: FloatArray) -> float:
    """Otsu's split of weighted points: the cut between ``y[i]`` and ``y[i+1]`` maximising the between-class variance."""
    n = c.sum()
    w0 = np.cumsum(c)[:-1]
    m0 = np.cumsum(c * y)[:-1]
    w1 = n - w0
    total = float((c * y).sum())
    ok = (w0 > 0) & (w1 > 0)
    between = np.zeros(len(w0))
    between[ok] = (m0[ok] * n - w0[ok] * total) ** 2 / (w0[ok] * w1[ok])
    i = int(np.argmax(between))
    return float(0.5 * (y[i] + y[i + 1]))


def _fit_mixture(fine: Int64Array, valley_at: float | None) -> dict[str, Any] | None:
    centres = (np.arange(GRID_BINS) + 0.5) / GRID_BINS
    nz = fine > 0
    y = _logit(centres[nz])
    c = fine[nz].astype(np.float64)
    if len(y) < 2:
        return None
    sd_min = 0.5 * float(np.min(np.diff(_logit(centres))))  # about half a bin on the logit scale
    cum = np.cumsum(c) / c.sum()
    starts = [_otsu(y, c)] + [float(y[min(int(np.searchsorted(cum, q)), len(y) - 2)]) for q in (0.5, 0.8, 0.95, 0.99)]
    if valley_at is not None:
        starts.append(float(_logit(np.array([valley_at]))[0]))
    best: dict[str, Any] | None = None
    for s in starts:
        fit = _em(y, c, s, sd_min)
        if fit is not None and (best is None or fit["loglik"] > best["loglik"] + 1e-9 * abs(best["loglik"])):
            best = dict(fit, start=s)
    if best is None:
        return None
    # one Gaussian, for the likelihood-ratio evidence
    n = c.sum()
    mu = float((c * y).sum() / n)
    sd = max(math.sqrt(float((c * (y - mu) ** 2).sum() / n)), sd_min)
    best["loglik_one"] = float((c * np.log(np.maximum(_normal(y, mu, sd), 1e-300))).sum())
    best["separation"] = abs(best["mu_high"] - best["mu_low"]) * math.sqrt(2.0 / (best["sd_low"] ** 2 + best["sd_high"] ** 2))
    return best


def _mixture_parts(fit: dict[str, Any], x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The two weighted component densities at scores ``x`` in (0, 1) (on the score scale: Jacobian included)."""
    y = _logit(x)
    jac = 1.0 / (x * (1.0 - x))
    lo = (1 - fit["w_high"]) * _normal(y, fit["mu_low"], fit["sd_low"]) * jac
    hi = fit["w_high"] * _normal(y, fit["mu_high"], fit["sd_high"]) * jac
    return lo, hi


def _posterior_crossing(fit: dict[str, Any]) -> float | None:
    """The score between the two component medians where the high component's posterior reaches 0.5."""
    y = np.linspace(fit["mu_low"], fit["mu_high"], 4001)
    lo = np.log(1 - fit["w_high"]) - np.log(fit["sd_low"]) - 0.5 * ((y - fit["mu_low"]) / fit["sd_low"]) ** 2
    hi = np.log(fit["w_high"]) - np.log(fit["sd_high"]) - 0.5 * ((y - fit["mu_high"]) / fit["sd_high"]) ** 2
    d = hi - lo  # log odds of "high"
    up = np.flatnonzero((d[:-1] < 0) & (d[1:] >= 0))
    if len(up) == 0:
        return None
    i = int(up[0])
    t = y[i] + (y[i + 1] - y[i]) * (-d[i]) / (d[i + 1] - d[i])
    return float(1.0 / (1.0 + math.exp(-t)))


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
    evidence: dict[str, Any] = {"scores": n_all, "below_low": n_all - n_cont - ones, "fitted": n_cont, "exact_ones": ones,
                                "low": low, "high": high}

    def fall(why: str, curve_y: FloatArray | None = None, extra: dict[str, Any] | None = None) -> ThresholdFit:
        ev = dict(evidence, **(extra or {}))
        x = grid_x[::CURVE_STEP] if curve_y is not None else np.zeros(0)
        y = curve_y[::CURVE_STEP] if curve_y is not None else np.zeros(0)
        src = "given fallback" if fallback is not None else "the floor low"
        return ThresholdFit(fb, "fallback", False, f"{why}; threshold {_fmt(fb)} ({src})",
                            n_all, edges, counts, x, y, ev, requested=method, low=low, high=high)

    if n_cont < MIN_SCORES:
        more = f" (and {ones} exact 1.0s)" if ones else ""
        return fall(f"only {n_cont} candidate scores in [{_fmt(low)}, 1){more}, fewer than {MIN_SCORES}: too few to see two groups")
    if np.count_nonzero(fine) == 1:
        return fall(f"all {n_cont} scores in [{_fmt(low)}, 1) are equal ({_fmt(float(grid_x[np.flatnonzero(fine)[0]]))}): one group only")

    valley = _fit_valley(fine, low, high, bandwidth)
    evidence["silverman_bandwidth"] = valley["silverman"]
    if method == "valley":
        v = valley["found"]
        if v is None:
            f0 = smoothed(fine, valley["silverman"], _start(low))
            curve = f0 * n_cont * bin_w
            w = valley["anywhere"]
            if w is not None:
                at = float(grid_x[w["index"]])
                return fall(f"the density valley at {_fmt(at)} lies outside [{_fmt(low)}, {_fmt(high)}]", curve,
                            {"valley_outside": at, "valley_contrast": w["contrast"], "valley_depth": w["depth"]})
            return fall("the scores form one group (no density valley with a clear dip between two peaks)", curve)
        f = v["f"]
        i_lo, i_hi = _index_range(low, high)
        i = _floor_middle(f, v["index"], i_lo, i_hi)
        t = float(min(max(grid_x[i], low), high))
        a, b = _modes_around(f, v["index"])
        m_lo, m_hi = float(grid_x[a]), float(grid_x[b])
        share = _share_near(every, ones, t)
        evidence.update({
            "bandwidth": v["bandwidth"], "modes": [m_lo, m_hi], "mode_density": [float(f[a]), float(f[b])],
            "valley_density": v["density"], "valley_depth_ratio": v["depth"], "valley_contrast": v["contrast"],
            "share_below": float(every[: int(t * GRID_BINS)].sum()) / n_all, "share_within_002": share,
        })
        reason = (f"density valley at {_fmt(t)} between modes at {_fmt(m_lo)} and {_fmt(m_hi)} "
                  f"(valley {v['depth']:.0%} of the smaller peak); {share:.1%} of the scores within ±{NEAR:g}")
        return ThresholdFit(t, "valley", True, reason, n_all, edges, counts, grid_x[::CURVE_STEP],
                            (f * n_cont * bin_w)[::CURVE_STEP], evidence,
                            requested=method, low=low, high=high)

    vf = valley["found"]
    fit = _fit_mixture(fine, float(grid_x[vf["index"]]) if vf is not None else None)
    if fit is None:
        return fall("the mixture fit found no second group")
    lo_c, hi_c = _mixture_parts(fit, grid_x)
    scale = n_cont * bin_w
    ev = {"w_high": fit["w_high"], "w_low": 1 - fit["w_high"],
          "median_low": 1 / (1 + math.exp(-fit["mu_low"])), "median_high": 1 / (1 + math.exp(-fit["mu_high"])),
          "logit_mu": [fit["mu_low"], fit["mu_high"]], "logit_sd": [fit["sd_low"], fit["sd_high"]],
          "separation_D": fit["separation"], "loglik_two": fit["loglik"], "loglik_one": fit["loglik_one"],
          "em_iterations": fit["iterations"]}
    evidence.update(ev)
    small = min(fit["w_high"], 1 - fit["w_high"]) * n_cont
    t_cross = _posterior_crossing(fit)
    groups = (f"{1 - fit['w_high']:.1%} of the scores around {_fmt(ev['median_low'])} and {fit['w_high']:.1%} "
              f"around {_fmt(ev['median_high'])}")

    def mix_fall(why: str) -> ThresholdFit:
        r = fall(why, (lo_c + hi_c) * scale)
        r.curve_low, r.curve_high = (lo_c * scale)[::CURVE_STEP], (hi_c * scale)[::CURVE_STEP]
        return r

    if fit["separation"] < MIN_SEPARATION:
        return mix_fall(f"the two fitted groups ({groups}) overlap (separation D {fit['separation']:.2f} < {MIN_SEPARATION:g}): "
                        "no clear second group")
    dip = _dip_between(fine, low, ev["median_low"], ev["median_high"], bandwidth)
    evidence["dip_between_medians"] = dip
    if dip is None:
        return mix_fall(f"the fitted groups ({groups}) have no dip in the density between them: one group only")
    if small < MIN_GROUP:
        return mix_fall(f"the smaller fitted group holds about {small:.0f} scores, fewer than {MIN_GROUP}")
    if t_cross is None:
        return mix_fall(f"the high group never becomes the more likely one between the groups ({groups})")
    if not (low <= t_cross <= high):
        evidence["crossing_outside"] = t_cross
        return mix_fall(f"the two groups ({groups}) split at {_fmt(t_cross)}, outside [{_fmt(low)}, {_fmt(high)}]")
    share = _share_near(every, ones, t_cross)
    evidence.update({"posterior_high_at_threshold": 0.5, "share_within_002": share,
                     "share_below": float(every[: int(t_cross * GRID_BINS)].sum()) / n_all})
    reason = (f"two-group mixture: {groups} (logit-normal, separation D {fit['separation']:.1f}); the high group is the "
              f"more likely from {_fmt(t_cross)}; {share:.1%} of the scores within ±{NEAR:g}")
    res = ThresholdFit(t_cross, "mixture", True, reason, n_all, edges, counts, grid_x[::CURVE_STEP],
                       ((lo_c + hi_c) * scale)[::CURVE_STEP], evidence, requested=method, low=low, high=high)
    res.curve_low, res.curve_high = (lo_c * scale)[::CURVE_STEP], (hi_c * scale)[::CURVE_STEP]
    return res
