"""Built-in plugin: fingerprints as grid-cell bit vectors (SEEDS §6; MMDS ch. 3.8).

Components:

* shingler ``grid_cells`` — a record's minutiae (a JSON list of ``[x, y]`` or
  ``[x, y, angle, type]``) -> the set of grid cells holding a minutia, with
  optional spill into the adjacent cells near a boundary;
* signature ``bitvector`` — the cell sets packed into uint64 words (``kind="bits"``);
* blocker ``grid_bits`` — ``M`` random sets of ``c`` cells; prints having all
  ``c`` bits of a set share its bucket; sharing any bucket -> candidate;
* verifier ``cell_overlap`` — Jaccard, agreement (Dice) or overlap of the cell sets.

The kernels are in :mod:`er_framework.kernels.bits`, :mod:`~er_framework.kernels.bits_candidates` and
:mod:`~er_framework.kernels.bits_probabilities`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from er_framework import hookimpl
from er_framework.capabilities import Blocked, LimitedKeys, Partitionable, Reporting, Tokenized
from er_framework.components import (
    Blocker,
    Context,
    FieldRef,
    Params,
    Shingler,
    SignatureBuilder,
    Verifier,
)
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets
from er_framework.errors import ConfigError, InputError, Problem
from er_framework.kernels.bits import bool_from_bits, grid_cells, n_words, pack_bits, row_popcount
from er_framework.kernels.bits_candidates import TooManyPairs, cell_overlap, cell_sets, grid_bit_candidates
from er_framework.kernels.bits_probabilities import candidate_probabilities, candidate_probabilities_exact
from er_framework.kernels.hashing import mix64

__all__ = [
    "BitVector",
    "CellOverlap",
    "GridBits",
    "GridCells",
    "parse_minutiae",
    "set_members",
]

FRAME_FIX = "declare width/height of the frame, or normalized: true"
#: mixed into the bucket id of every cell set (:meth:`GridBits.lookup_keys`)
SET_KEY_TAG = 0x47524944534554  # "GRIDSET"
#: booleans unpacked at a time when listing the sets each print holds
MEMBER_CHUNK = 1 << 24
_SHOWN = 10


def _labels(records: Records, index: npt.NDArray[np.int64]) -> str:
    """``'a', 'b', … (and N more)`` for the records at ``index`` (source-qualified with several sources)."""
    multi = len(records.source_names) > 1

    def one(i: int) -> str:
        rid = records.ids[i]
        return f"{records.source_names[records.source[i]]}:{rid}" if multi else rid

    shown = ", ".join(repr(one(int(i))) for i in index[:_SHOWN])
    more = f" (and {len(index) - _SHOWN} more)" if len(index) > _SHOWN else ""
    return shown + more


def zip_coordinates(xs: Any, ys: Any) -> list[list[float]] | None:
    """``[[x, y], …]`` from two JSON lists of numbers (or numeric strings, as CSV cells are), or ``None``."""
    try:
        xl = json.loads(xs) if isinstance(xs, str) else (xs if xs is not None else [])
        yl = json.loads(ys) if isinstance(ys, str) else (ys if ys is not None else [])
        if not isinstance(xl, list) or not isinstance(yl, list) or len(xl) != len(yl):
            return None
        return [[float(x), float(y)] for x, y in zip(xl, yl)]
    except (ValueError, TypeError):
        return None


def parse_minutiae(value: Any) -> npt.NDArray[np.float64] | None:
    """``(k, 2)`` float64 coordinates of one record's minutiae, or ``None`` if malformed.

    Accepted: a JSON text or a Python list/tuple of minutiae, each a list of
    at least two numbers ``[x, y, …]`` (further entries such as angle and
    type are ignored). ``None``, ``""`` and ``[]`` give no minutiae. Booleans
    and strings are not numbers.
    """
    if value is None:
        return np.zeros((0, 2), dtype=np.float64)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return np.zeros((0, 2), dtype=np.float64)
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        no_bools = "true" not in text and "false" not in text
        has_strings = '"' in text  # e.g. a minutia type: numpy would turn the rows into strings
    elif isinstance(value, (list, tuple)):
        obj, no_bools, has_strings = value, False, True
    else:
        return None
    if not isinstance(obj, list):
        return None
    if len(obj) == 0:
        return np.zeros((0, 2), dtype=np.float64)
    # no_bools: a JSON text without true/false holds no booleans, which numpy would turn into 0/1
    if no_bools and not has_strings:
        try:
            arr = np.asarray(obj)
        except (ValueError, TypeError):
            arr = None
        if arr is not None and arr.dtype.kind in "iuf" and arr.ndim == 2 and arr.shape[1] >= 2:
            return arr[:, :2].astype(np.float64)
    # ragged rows (e.g. a string minutia type): keep the first two entries of each minutia
    try:
        sub = [m[:2] for m in obj if isinstance(m, (list, tuple)) and len(m) >= 2]
    except TypeError:
        return None
    if len(sub) != len(obj):
        return None
    if no_bools:
        try:
            arr = np.asarray(sub)
        except (ValueError, TypeError):
            return None
        ok = arr.dtype.kind in "iuf" and arr.shape == (len(sub), 2)
        return arr.astype(np.float64) if ok else None
    if not all(type(x) in (int, float) for m in sub for x in m):
        return None
    return np.asarray(sub, dtype=np.float64).reshape(-1, 2)


# --------------------------------------------------------------------------- shingler


class GridParams(Params):
    field: FieldRef = Field(
        default="minutiae",
        min_length=1,
        description="column holding the minutiae: a JSON list of [x, y] or [x, y, angle, type]",
    )
    y_field: FieldRef | None = Field(
        default=None,
        description="with CSV rows id,x,y read with layout: long — field is the x column and this the y column "
        "(each a JSON list of numbers per print)",
    )
    width: float | None = Field(default=None, gt=0, description="frame width in coordinate units (x lies in [0, width))")
    height: float | None = Field(default=None, gt=0, description="frame height in coordinate units (y lies in [0, height))")
    normalized: bool = Field(default=False, description="coordinates are normalized: the frame is [0, 1) x [0, 1)")
    grid_x: int = Field(default=20, ge=1, le=4096, description="grid columns")
    grid_y: int = Field(default=20, ge=1, le=4096, description="grid rows")
    margin: float = Field(
        default=0.0,
        ge=0.0,
        description="a minutia closer than this (frame units) to a cell boundary also marks the cell across it (0: no spill)",
    )

    @model_validator(mode="after")
    def _frame(self) -> GridParams:
        if self.normalized and (self.width is not None or self.height is not None):
            raise ValueError("set either width and height, or normalized: true, not both")
        if not self.normalized and (self.width is None or self.height is None):
            raise ValueError(f"the frame is unknown: {FRAME_FIX}")
        return self

    @property
    def frame(self) -> tuple[float, float]:
        return (1.0, 1.0) if self.normalized else (float(self.width), float(self.height))  # type: ignore[arg-type]

    @property
    def n_cells(self) -> int:
        return self.grid_x * self.grid_y


class GridCells(Partitionable, Shingler[GridParams]):
    """Minutiae -> the set of grid cells holding one (cell = row * grid_x + col).

    The frame ``[0, width) x [0, height)`` is cut into ``grid_x x grid_y`` cells;
    a minutia within ``margin`` of a cell boundary also marks the adjacent cell
    (and the diagonal one near a corner). Coordinates outside the frame, and
    values that are not a list of ``[x, y, …]`` numbers, are errors naming the
    records; a print without minutiae gives an empty set.
    """

    name = "grid_cells"
    summary = "fingerprint minutiae -> set of occupied grid cells (boundary spill optional)"
    Params = GridParams
    # Partitionable: one call with every print (bad prints are all reported at once and the
    # report's occupancy covers every record), but a print's cells depend on that print alone:
    # partitions may be shingled apart, and their counts summed give the same report (merge_reports)

    def shingle_reported(self, records: Records) -> Tokenized:
        """The prints' cell sets and their counts (records, minutiae, empty prints, missing values, occupied cells)."""
        p = self.params
        col: Sequence[object] | None = records.fields.get(p.field)  # minutiae: JSON text, or [[x, y], ...] from x/y
        if col is None:
            raise InputError(
                Problem(
                    where="shingler grid_cells",
                    path="field",
                    message=f"the records have no column {p.field!r}; columns: {sorted(records.fields)}",
                    fix="set field: to the column holding the minutiae, and list it under the source's fields",
                )
            )
        if p.y_field is not None:
            ycol = records.fields.get(p.y_field)
            if ycol is None:
                raise InputError(
                    Problem(
                        where="shingler grid_cells",
                        path="y_field",
                        message=f"the records have no column {p.y_field!r}; columns: {sorted(records.fields)}",
                        fix="list the y column under the source's fields",
                    )
                )
            col = [zip_coordinates(x, y) if (x is not None or y is not None) else None for x, y in zip(col, ycol)]
            col = [v if v is not None or x is None else "malformed x/y lists" for v, x in zip(col, records.fields[p.field])]
        n = len(records)
        counts = np.zeros(n, dtype=np.int64)
        parts: list[npt.NDArray[np.float64]] = []
        malformed: list[int] = []
        missing = 0
        for i, value in enumerate(col):  # one json.loads per record
            if value is None or (isinstance(value, str) and not value.strip()):
                missing += 1
            arr = parse_minutiae(value)
            if arr is None:
                malformed.append(i)
                continue
            counts[i] = len(arr)
            parts.append(arr)
        pts = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.float64)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        width, height = p.frame
        cells, invalid = grid_cells(
            pts[:, 0],
            pts[:, 1],
            offsets,
            width=width,
            height=height,
            grid_x=p.grid_x,
            grid_y=p.grid_y,
            margin=p.margin,
        )
        problems: list[Problem] = []
        if malformed:
            bad = np.asarray(malformed, dtype=np.int64)
            problems.append(
                Problem(
                    where="shingler grid_cells",
                    path=f"field {p.field!r}",
                    message=f"{len(bad)} record(s) hold no valid list of minutiae: {_labels(records, bad)}; "
                    f"first value: {str(col[malformed[0]])[:80]!r}",
                    fix="write each value as a JSON list of [x, y] (or [x, y, angle, type]) numbers, e.g. [[12.5, 40.0], [30, 7]]",
                )
            )
        if invalid.any():
            owner = np.repeat(np.arange(n, dtype=np.int64), counts)
            bad_rec = np.unique(owner[invalid])
            first = pts[np.flatnonzero(invalid)[0]]
            finite = pts[np.all(np.isfinite(pts), axis=1)]
            span = (
                f"; the coordinates span x in [{finite[:, 0].min():g}, {finite[:, 0].max():g}], "
                f"y in [{finite[:, 1].min():g}, {finite[:, 1].max():g}]"
                if len(finite)
                else ""
            )
            problems.append(
                Problem(
                    where="shingler grid_cells",
                    path=f"field {p.field!r}",
                    message=f"{len(bad_rec)} record(s) have minutiae outside the frame [0, {width:g}) x [0, {height:g}) "
                    f"or not finite ({int(invalid.sum())} minutiae): {_labels(records, bad_rec)}; "
                    f"first: ({first[0]:g}, {first[1]:g}){span}",
                    fix=FRAME_FIX,
                )
            )
        if problems:
            raise InputError(problems)
        counted = {
            "records": n,
            "minutiae": len(pts),
            "prints_without_minutiae": int((counts == 0).sum()),
            "missing_values": missing,
            "cells": int(cells.sizes.sum()),
        }
        return Tokenized(cells, counted)

    def merge_reports(self, reports: list[dict[str, Any]]) -> dict[str, Any]:
        """The report of one call over every print, from the counts of calls over parts of them."""
        p = self.params
        keys = ["records", "minutiae", "prints_without_minutiae", "missing_values", "cells"]
        tot = {k: sum(int(r.get(k, 0)) for r in reports) for k in keys}
        n = tot["records"]
        mean = tot["cells"] / n if n else 0.0  # = sizes.mean(): an exact integer sum over n
        return {
            "n_cells": p.n_cells,
            "records": n,
            "minutiae": tot["minutiae"],
            "prints_without_minutiae": tot["prints_without_minutiae"],
            "missing_values": tot["missing_values"],
            "mean_cells": round(mean, 3) if n else 0.0,
            "occupancy": round(mean / p.n_cells, 4) if n else 0.0,
        }


# --------------------------------------------------------------------------- signature


def _grid_bits_of(context: Context) -> int | None:
    sh = context.peers.get("shingler")
    gx, gy = getattr(sh, "grid_x", None), getattr(sh, "grid_y", None)
    return int(gx) * int(gy) if gx is not None and gy is not None else None


class BitParams(Params):
    n_bits: int | None = Field(
        default=None, ge=1, le=1 << 24, description="bits per print (default: grid_x * grid_y of the grid_cells shingler)"
    )


class BitVector(SignatureBuilder[BitParams]):
    """Cell sets -> packed bit vectors: ``(n, ceil(n_bits / 64))`` uint64, cell k = bit k % 64 of word k // 64."""

    name = "bitvector"
    summary = "cell sets packed into uint64 bit vectors (kind 'bits')"
    Params = BitParams

    @classmethod
    def check(cls, params: BitParams, context: Context) -> list[str]:
        if params.n_bits is None and _grid_bits_of(context) is None:
            return ["bitvector needs n_bits: set signature.n_bits, or use the grid_cells shingler (n_bits = grid_x * grid_y)"]
        return []

    @property
    def n_bits(self) -> int:
        p = self.params
        nb = p.n_bits if p.n_bits is not None else _grid_bits_of(self.context)
        if nb is None:
            raise ConfigError(
                Problem(
                    where="signature bitvector",
                    path="n_bits",
                    message="the number of bits is unknown",
                    fix="set n_bits, or use the grid_cells shingler (n_bits = grid_x * grid_y)",
                )
            )
        return int(nb)

    def build(self, tokens: TokenSets) -> Signatures:
        nb = self.n_bits
        if len(tokens.tokens) and int(tokens.tokens.max()) >= nb:
            raise ConfigError(
                Problem(
                    where="signature bitvector",
                    path="n_bits",
                    message=f"token {int(tokens.tokens.max())} does not fit in n_bits = {nb}: the tokens are not grid cells",
                    fix="use the grid_cells shingler, or raise n_bits to the number of cells",
                )
            )
        values = pack_bits(tokens, nb)
        return Signatures(values=values, kind="bits", empty=tokens.sizes == 0, meta={"n_bits": nb, "words": n_words(nb)})

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "n_bits_effective": self.n_bits}


def _bits_of(batch: Batch, who: str) -> tuple[Signatures, int]:
    sig = batch.signatures
    if sig is None or sig.kind != "bits":
        got = "none" if sig is None else repr(sig.kind)
        raise ConfigError(
            Problem(
                where=who,
                message=f"{who} needs bit-vector signatures, got {got}",
                fix="set signature: {type: bitvector} (with the grid_cells shingler)",
            )
        )
    return sig, int(sig.meta.get("n_bits", 64 * sig.values.shape[1]))


# --------------------------------------------------------------------------- blocker


class GridBitsParams(Params):
    sets: int = Field(default=1024, ge=1, le=1 << 20, description="M, the number of random cell sets (buckets)")
    cells: int = Field(default=3, ge=1, le=64, description="c, cells per set: a print is in a set's bucket if it has all c")
    seed: int | None = Field(default=None, ge=0, description="seed of the cell sets (default: the job seed)")
    max_bucket_size: int | None = Field(default=None, ge=2, description="buckets larger than this are skipped and reported (null: no cap)")
    agreement: float = Field(
        default=0.8,
        gt=0.0,
        le=1.0,
        description="assumed share of a print's occupied cells that another impression of the finger also has "
        "(only for the probabilities in the report)",
    )
    max_pairs: int | None = Field(
        default=50_000_000,
        ge=1,
        description="stop with an error when the buckets hold more pairs than this (counted with repeats, "
        "before any pair is made); null: no limit",
    )


class GridBits(Reporting, LimitedKeys, Blocker[GridBitsParams]):
    """Random cell sets (SEEDS §6): a print is in set j's bucket if it has all c cells of the set.

    With occupancy p and agreement q: P(candidate | same finger) = 1 - (1 - (p q)**c)**M,
    P(candidate | different) = 1 - (1 - p**(2c))**M (set hits taken as
    independent; the report adds the finite-grid values, see
    :func:`~er_framework.kernels.bits_probabilities.candidate_probabilities_exact`).
    """

    name = "grid_bits"
    summary = "random sets of c grid cells; prints having all c bits share a bucket"
    Params = GridBitsParams
    needs = frozenset({"signatures"})

    @classmethod
    def check(cls, params: GridBitsParams, context: Context) -> list[str]:
        sig = context.peers.get("signature")
        nb = getattr(sig, "n_bits", None)
        nb = int(nb) if nb is not None else _grid_bits_of(context)
        if nb is not None and params.cells > nb:
            return [f"cells = {params.cells} exceeds the {nb} cells of the grid; fix: lower cells or use a finer grid"]
        return []

    def block(self, batch: Batch) -> Blocked:
        p = self.params
        sig, nb = _bits_of(batch, "blocker grid_bits")
        if p.cells > nb:
            raise ConfigError(f"grid_bits: cells = {p.cells} exceeds the {nb} cells of the grid")
        assert sig.empty is not None
        sets = cell_sets(p.sets, p.cells, nb, self.seed)
        ids = np.flatnonzero(~sig.empty).astype(np.int64)  # an empty print falls in no bucket anyway
        try:
            left, right, stats = grid_bit_candidates(sig.values[ids], ids, sets, p.max_bucket_size, max_raw_pairs=p.max_pairs)
        except TooManyPairs as exc:
            raise self._too_many(exc.raw_pairs, exc.stats["largest_bucket"]) from None
        report = self._reported(len(sig), int(row_popcount(sig.values).sum()), nb, len(ids), int(sig.empty.sum()), stats)
        return Blocked(batch.allowed(Pairs(left, right)), report)

    def _reported(self, n: int, bits_set: int, nb: int, bucketed: int, skipped: int, stats: dict[str, int]) -> dict[str, Any]:
        p = self.params
        occ = float(bits_set) / (n * nb) if n else 0.0
        same, diff = candidate_probabilities(occ, p.agreement, p.cells, p.sets)
        g_same, g_diff = candidate_probabilities_exact(occ, p.agreement, p.cells, p.sets, nb)
        return {
            "sets": p.sets,
            "cells": p.cells,
            "seed": self.seed,
            "n_bits": nb,
            "occupancy": round(occ, 4),
            "agreement_assumed": p.agreement,
            "p_candidate_same": round(same, 6),
            "p_candidate_different": round(diff, 6),
            "p_candidate_same_finite_grid": round(g_same, 6),
            "p_candidate_different_finite_grid": round(g_diff, 6),
            "records_bucketed": bucketed,
            "records_skipped_empty": skipped,
            **stats,
        }

    def partition_report(self, batch: Batch) -> dict[str, Any]:
        """The partition's prints, set bits (for the occupancy) and empty prints."""
        sig, nb = _bits_of(batch, "blocker grid_bits")
        assert sig.empty is not None
        return {"records": len(sig), "bits_set": int(row_popcount(sig.values).sum()), "n_bits": nb, "empty": int(sig.empty.sum())}

    def merge_reports(self, reports: list[dict[str, Any]], buckets: dict[str, Any]) -> dict[str, Any]:
        """The report of :meth:`block` from the partitions' counts and the buckets of :meth:`lookup_keys`."""
        n = sum(int(r["records"]) for r in reports)
        empty = sum(int(r["empty"]) for r in reports)
        nb = next((int(r["n_bits"]) for r in reports), 0)
        stats = {k: int(buckets.get(k, 0)) for k in ("buckets", "largest_bucket", "oversized_buckets", "pairs_skipped", "raw_pairs")}
        return self._reported(n, sum(int(r["bits_set"]) for r in reports), nb, n - empty, empty, stats)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "seed": self.seed}

    def lookup_keys(self, batch: Batch) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """One bucket id per print and cell set ``j`` whose ``c`` cells the print all has.

        The id is ``mix64(j XOR SET_KEY_TAG)``: set ``j``'s bucket holds exactly
        the prints having all of its cells, as in :meth:`candidates` (two
        identical sets are still two buckets there, and here: the set number,
        not its cells, names the bucket). An empty print holds no set.
        """
        p = self.params
        sig, nb = _bits_of(batch, "blocker grid_bits")
        if p.cells > nb:
            raise ConfigError(f"grid_bits: cells = {p.cells} exceeds the {nb} cells of the grid")
        rows, which = set_members(sig.values, cell_sets(p.sets, p.cells, nb, self.seed))
        return rows, mix64(which.astype(np.uint64) ^ np.uint64(SET_KEY_TAG))

    def lookup_cap(self) -> int | None:
        return self.params.max_bucket_size

    def check_lookup_pairs(self, pairs: int, largest_bucket: int) -> None:
        """``max_pairs`` on the buckets of :meth:`lookup_keys`: the error :meth:`candidates` raises."""
        p = self.params
        if p.max_pairs is not None and pairs > p.max_pairs:
            raise self._too_many(pairs, largest_bucket)

    def _too_many(self, raw_pairs: int, largest_bucket: int) -> InputError:
        p = self.params
        return InputError(
            Problem(
                where="blocker grid_bits",
                path="max_pairs",
                message=f"the {p.sets} buckets hold {raw_pairs:,} pairs (with repeats; largest bucket "
                f"{largest_bucket:,} prints), more than max_pairs = {p.max_pairs:,}",
                fix="raise cells (each extra cell divides the pairs by about 1/occupancy**2), "
                "set max_bucket_size, or raise max_pairs if the memory allows (~24 bytes per pair)",
            )
        )


def set_members(bits: npt.NDArray[np.uint64], sets: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(rows, sets)``: print ``rows[i]`` has every cell of set ``sets[i]`` (sorted by row, then set).

    Whole-array: a chunk of prints is unpacked to ``(rows, 64 W)`` booleans and
    the ``c`` columns of every set AND-ed into a ``(rows, M)`` hit matrix
    (:data:`MEMBER_CHUNK` booleans at a time).
    """
    n = bits.shape[0]
    m_sets = sets.shape[0]
    step = max(1, MEMBER_CHUNK // max(m_sets, 64 * bits.shape[1], 1))
    rows_out: list[npt.NDArray[np.int64]] = []
    sets_out: list[npt.NDArray[np.int64]] = []
    for a in range(0, n, step):  # one step per chunk of prints
        cells = bool_from_bits(bits[a : a + step])
        hit = cells[:, sets[:, 0]]
        for i in range(1, sets.shape[1]):  # one step per cell of a set
            hit &= cells[:, sets[:, i]]
        r, j = np.nonzero(hit)
        rows_out.append(r.astype(np.int64) + a)
        sets_out.append(j.astype(np.int64))
    if not rows_out:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(rows_out), np.concatenate(sets_out)


# --------------------------------------------------------------------------- verifier


class OverlapParams(Params):
    kind: Literal["jaccard", "agreement", "overlap"] = Field(
        default="agreement",
        description="jaccard |A∧B|/|A∨B|; agreement 2|A∧B|/(|A|+|B|) (share of occupied cells the other print has); "
        "overlap |A∧B|/min(|A|,|B|) (partial prints)",
    )
    threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="keep pairs scoring >= threshold (default: the job threshold)"
    )


class CellOverlap(Verifier[OverlapParams]):
    """Overlap of the two prints' cell sets, by popcount on the bit vectors (two empty prints score 0)."""

    name = "cell_overlap"
    summary = "Jaccard / agreement (Dice) / overlap of grid-cell bit vectors"
    Params = OverlapParams
    needs = frozenset({"signatures"})

    def score(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
        sig, _ = _bits_of(batch, "verifier cell_overlap")
        return cell_overlap(sig.values, pairs.left, pairs.right, self.params.kind)


@hookimpl
def er_register_shinglers() -> list[type[Shingler]]:
    return [GridCells]


@hookimpl
def er_register_signature_builders() -> list[type[SignatureBuilder]]:
    return [BitVector]


@hookimpl
def er_register_blockers() -> list[type[Blocker]]:
    return [GridBits]


@hookimpl
def er_register_verifiers() -> list[type[Verifier]]:
    return [CellOverlap]
