"""Generated fingerprints with known truth (SEEDS §6): grid-cell bit vectors and minutiae.

Two levels:

* :func:`simulate_cells` — prints directly as sets of grid cells (packed bit
  vectors), in the seed's probability model, for checking the blocking maths;
* :func:`simulate_minutiae` — prints as lists of minutiae ``(x, y)`` in a frame,
  for end-to-end jobs (:func:`write_prints_jsonl` writes them as JSON Lines).

Cell models (``N`` cells, occupancy ``p``, agreement ``q``)
-----------------------------------------------------------

The seed's numbers need, for a fixed set of ``c`` cells::

    P(two impressions of one finger both have all c)  = (p q)**c
    P(prints of two different fingers both have all c) = p**(2 c)

i.e. every print occupies each cell with probability ``p``, two impressions
of one finger *both* occupy a cell with probability ``p q`` (so that, given one
has it, the other has it with probability ``q``: "agreeing on 80% of
occupied cells"), and cells are independent. Note that "each impression keeps
each master cell with probability ``q``" from a master of occupancy ``p`` does
*not* give this: both impressions then share a cell with probability
``p q**2`` and each has occupancy ``p q``. Two models that do:

``model="latent"`` (default; exact for every pair of impressions)
    A finger has a latent master set: each cell with probability ``p / q``
    (requires ``p <= q``). Each impression keeps each master cell
    independently with probability ``q``. Then every impression occupies a
    cell with probability ``(p / q) q = p``, two impressions of one finger
    share it with probability ``(p / q) q**2 = p q``, and
    ``P(B has it | A has it) = q``; cells are independent. All pairs of
    impressions, not only (first, second), follow the seed. (The simpler
    "first impression = master with occupancy p, the others keep each of its
    cells with probability q" gives ``(p q)**c`` for pairs with the first
    impression only, and the others have occupancy ``p q``.)

``model="fixed"`` (exact counts)
    Every impression has exactly ``K = round(p N)`` cells, and any two
    impressions of one finger share exactly ``A = round(q K)``: a uniformly
    random core of ``A`` cells common to all impressions of the finger, plus
    ``K - A`` cells private to each impression (disjoint from the core and
    from each other; needs ``A + impressions (K - A) <= N``). Each impression
    is a uniform random ``K``-subset.

In the latent model the per-set probabilities are exactly the seed's, but the
candidate probability over ``M`` sets is *not* ``1 - (1 - (p q)**c)**M``: the
``M`` set hits of a pair are not independent (a pair sharing more cells than
average hits many sets). With ``N = 400`` it is 0.967 instead of 0.985 (see
:func:`er_framework.kernels.bits_probabilities.candidate_probabilities_exact`). The fixed
model removes the spread of the shared-cell count for same-finger pairs and
gives 0.982 and 0.059, within 0.01 of the seed's 0.985 and 0.063.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from er_framework.kernels.bits import bits_from_bool
from er_framework.synth.files import check_targets, csv_kind, jsonl_kind, write_csv, write_text

__all__ = ["simulate_cells", "simulate_minutiae", "write_prints_jsonl"]

Int64Array = npt.NDArray[np.int64]


def simulate_cells(
    n_fingers: int,
    impressions: int,
    n_cells: int,
    occupancy: float,
    agreement: float,
    seed: int = 0,
    model: Literal["latent", "fixed"] = "latent",
) -> tuple[npt.NDArray[np.uint64], Int64Array]:
    """Prints as packed grid-cell bit vectors, ``impressions`` per finger.

    Returns ``(bits, finger)``: ``bits`` is ``(n_fingers * impressions,
    ceil(n_cells / 64))`` uint64 (cell ``k`` = bit ``k % 64`` of word
    ``k // 64``; :func:`~er_framework.kernels.bits.unpack_bits` gives token
    sets), rows finger-major (impression ``i`` of finger ``f`` is row
    ``f * impressions + i``); ``finger`` is the int64 finger of every row.
    ``model`` is ``"latent"`` or ``"fixed"`` (see the module docstring).
    Seeded with ``numpy.random.default_rng(seed)``; fingers are generated
    in blocks, so memory stays about ``n_cells`` bytes per print.
    """
    if n_fingers < 0 or impressions < 1 or n_cells < 1:
        raise ValueError("need n_fingers >= 0, impressions >= 1, n_cells >= 1")
    p, q = float(occupancy), float(agreement)
    if not (0.0 <= p <= 1.0 and 0.0 < q <= 1.0):
        raise ValueError(f"occupancy must lie in [0, 1] and agreement in (0, 1], got {p}, {q}")
    rng = np.random.default_rng(seed)
    finger = np.repeat(np.arange(n_fingers, dtype=np.int64), impressions)
    parts: list[npt.NDArray[np.uint64]] = []
    block = max(1, (1 << 22) // (n_cells * impressions))
    if model == "latent":
        if p > q:
            raise ValueError(f"the latent model needs occupancy <= agreement (master occupancy p/q <= 1), got {p} > {q}")
        for a in range(0, n_fingers, block):  # one step per block of fingers
            f = min(block, n_fingers - a)
            master = rng.random((f, 1, n_cells)) < p / q
            keep = rng.random((f, impressions, n_cells)) < q
            parts.append(bits_from_bool((master & keep).reshape(f * impressions, n_cells)))
    elif model == "fixed":
        k = int(round(p * n_cells))
        shared = int(round(q * k))
        if shared + impressions * (k - shared) > n_cells:
            raise ValueError(
                f"the fixed model needs round(q K) + impressions (K - round(q K)) <= n_cells: "
                f"{shared} + {impressions} * {k - shared} > {n_cells}"
            )
        for a in range(0, n_fingers, block):
            f = min(block, n_fingers - a)
            perm = np.argsort(rng.random((f, n_cells)), axis=1)  # a random order of the cells per finger
            m = np.zeros((f, impressions, n_cells), dtype=bool)
            fi = np.arange(f)[:, None]
            for i in range(impressions):  # one step per impression
                cells = np.concatenate([perm[:, :shared], perm[:, shared + i * (k - shared) : shared + (i + 1) * (k - shared)]], axis=1)
                m[fi, i, cells] = True
            parts.append(bits_from_bool(m.reshape(f * impressions, n_cells)))
    else:
        raise ValueError(f"model must be 'latent' or 'fixed', got {model!r}")
    if not parts:
        return np.zeros((0, max(1, -(-n_cells // 64))), dtype=np.uint64), finger
    return np.concatenate(parts), finger


def simulate_minutiae(
    n_fingers: int,
    impressions: int,
    width: float,
    height: float,
    minutiae_per_print: tuple[int, int] = (60, 100),
    sigma: float = 3.0,
    drop_rate: float = 0.1,
    add_rate: float = 0.1,
    seed: int = 0,
) -> tuple[list[npt.NDArray[np.float64]], Int64Array]:
    """Impressions of fingers as minutiae in the frame ``[0, width) x [0, height)``.

    Each finger has a master set of ``m`` minutiae (``m`` uniform in
    ``minutiae_per_print``, inclusive), uniform in the frame. An impression
    keeps each master minutia with probability ``1 - drop_rate``, displaces
    it by independent ``Normal(0, sigma)`` offsets on both axes (prints are
    assumed registered: no global shift or rotation), drops the ones pushed
    out of the frame (the sensor crops them), and adds
    ``Poisson(add_rate * m)`` spurious minutiae uniform in the frame.

    Returns ``(minutiae, finger)``: one ``(k, 2)`` float64 array per print,
    finger-major (impression ``i`` of finger ``f`` at ``f * impressions + i``),
    and the int64 finger of every print. Seeded with
    ``numpy.random.default_rng(seed)``.
    """
    lo, hi = minutiae_per_print
    if n_fingers < 0 or impressions < 1 or not (0 <= lo <= hi):
        raise ValueError("need n_fingers >= 0, impressions >= 1, 0 <= min <= max minutiae")
    if not (0.0 <= drop_rate <= 1.0) or add_rate < 0 or sigma < 0:
        raise ValueError("need 0 <= drop_rate <= 1, add_rate >= 0, sigma >= 0")
    rng = np.random.default_rng(seed)
    size = np.array([width, height], dtype=np.float64)
    prints: list[npt.NDArray[np.float64]] = []
    for _ in range(n_fingers):  # one step per finger and impression (a data generator)
        m = int(rng.integers(lo, hi + 1))
        master = rng.random((m, 2)) * size
        for _ in range(impressions):
            kept = master[rng.random(m) >= drop_rate]
            moved = kept + rng.normal(0.0, sigma, kept.shape) if sigma > 0 else kept.copy()
            inside = np.all((moved >= 0) & (moved < size), axis=1)
            extra = rng.random((int(rng.poisson(add_rate * m)), 2)) * size
            pts = np.concatenate([moved[inside], extra])
            prints.append(pts[rng.permutation(len(pts))])
    return prints, np.repeat(np.arange(n_fingers, dtype=np.int64), impressions)


def _floor_decimals(a: npt.NDArray[np.float64], decimals: int) -> npt.NDArray[np.float64]:
    """Round down to ``decimals`` digits: a coordinate below ``width`` stays below it."""
    f = 10.0**decimals
    return np.floor(a * f) / f


def write_prints_jsonl(
    path: str | Path,
    ids: Sequence[str],
    minutiae: Sequence[npt.NDArray[np.float64]],
    truth_path: str | Path | None = None,
    finger: Sequence[int] | npt.NDArray[np.integer] | None = None,
    decimals: int = 3,
) -> None:
    """Write ``{"id": …, "minutiae": [[x, y], …]}`` lines, and a truth CSV ``id,finger``.

    Coordinates are rounded *down* to ``decimals`` digits (so they stay in
    the frame). The truth file needs ``finger``. Files are written through
    :mod:`er_framework.io.safe_write` (atomically; an existing file is
    replaced only when it is one synth wrote; both are checked first).
    """
    if len(ids) != len(minutiae):
        raise ValueError(f"{len(ids)} ids for {len(minutiae)} prints")
    if truth_path is not None and (finger is None or len(finger) != len(ids)):
        raise ValueError("the truth file needs one finger per id")
    prints_kind = jsonl_kind("prints file", ("id", "minutiae"))
    truth_kind = csv_kind("truth file (id,finger)", ("id", "finger"))
    targets = [(Path(path), "prints file", prints_kind)]
    if truth_path is not None:
        targets.append((Path(truth_path), "truth file (id,finger)", truth_kind))
    check_targets(targets)
    lines = []
    for i, pts in zip(ids, minutiae):
        r = _floor_decimals(np.asarray(pts, dtype=np.float64).reshape(-1, 2), decimals)
        lines.append(json.dumps({"id": str(i), "minutiae": r.tolist()}) + "\n")
    write_text(Path(path), "prints file", prints_kind, "".join(lines))
    if truth_path is not None:
        assert finger is not None
        rows = ([str(i), int(g)] for i, g in zip(ids, finger))
        write_csv(Path(truth_path), "truth file (id,finger)", truth_kind, ["id", "finger"], rows)
