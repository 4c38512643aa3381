"""Built-in plugin: pair scorers for structured (customer) records.

Two verifiers for records with fields such as ``first_name``, ``last_name``,
``address``, ``city``, ``zip``, ``phone``, ``email``, ``dob`` (values
already normalized by the engine; a missing value is ``None``):

``field_score``
    The seed's scheme (SEEDS §5): every field is compared with a string
    similarity on a 0..100 scale, weighted, and summed; with the default
    fields (name, address, phone) a pair scores out of 300. Its threshold is
    on that total scale, so it must be set on the verifier itself.
``fellegi_sunter``
    Unsupervised probabilistic record linkage (Fellegi & Sunter 1969): the
    per-field similarities are cut into agreement levels, a two-class latent
    model (match / non-match, fields independent given the class) is fitted
    by EM on the candidate pairs (weights monotone in the level by default;
    or trained from labelled pairs), and each pair is scored with its posterior
    match probability in [0, 1] (ordinary verifier threshold semantics).

Both explain a score (``comparisons``: per-field levels and weights in bits,
or similarities and points).

Both compare strings with :func:`rapidfuzz.process.cpdist` on whole arrays of
pairs (a chunk of up to :data:`CHUNK_PAIRS` pairs at a time). The values of
the records taking part are joined, reduced to digits and factorized with
Arrow compute kernels, never one Python step per pair (nor per record);
equal values score 100 without a call, and for fields with few distinct
values (names, dates) only distinct ``(left value, right value)``
combinations are scored. ``fellegi_sunter`` needs only each pair's level:
a pair whose bag-of-characters bound
(:mod:`er_framework.kernels.records_bounds`) is below the field's lowest
level is at the last level without a call (on 2 x 1M generated customers
about 95% of the location and 80% of the email comparisons), and its chunks
of pairs run on ``context.workers`` threads, one field per thread while the
fields are prepared.

Comparisons (``scorer`` / ``comparison``), all on 0..100:

=================== ==========================================================
``ratio``            :func:`rapidfuzz.fuzz.ratio` (normalized InDel similarity)
``partial_ratio``    :func:`rapidfuzz.fuzz.partial_ratio` (best substring alignment)
``token_sort_ratio`` :func:`rapidfuzz.fuzz.token_sort_ratio` (words sorted first)
``token_set_ratio``  :func:`rapidfuzz.fuzz.token_set_ratio`
``jaro_winkler``     ``rapidfuzz.distance.JaroWinkler.normalized_similarity * 100``
``levenshtein``      ``rapidfuzz.distance.Levenshtein.normalized_similarity * 100``
``exact``            100 when the values are equal, else 0
``digits``           ``exact`` on the digits 0-9 of the values only ("(555) 123-4567"
                     equals "555.123.4567"); with ``last_digits: N`` only the last N
                     digits ("+1 555 123 4567" equals "555-123-4567" with N = 10);
                     a value without digits is missing
=================== ==========================================================

A field is ``field: name`` or ``field: [first_name, last_name]`` (several
columns joined by one space, missing parts skipped). A value that is ``None``,
empty or only whitespace is *missing*; a pair's field is missing when either
side's value is.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field as dc_field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Sequence

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator
from rapidfuzz import fuzz, process
from rapidfuzz.distance import JaroWinkler, Levenshtein

from er_framework import hookimpl
from er_framework.components import Context, FieldRef, Params, Verifier
from er_framework.components import Params as ParamsBase
from er_framework.data import Batch, Pairs, Records
from er_framework.kernels.arrow import ARROW_MIN_VALUES, coded_parts, numeric_array, scalar, string_array, to_numpy
from er_framework.kernels.parallel import map_ordered
from er_framework.kernels.records_memory import release_free_memory
from er_framework.kernels.records_bounds import (
    BOUNDED_SCORERS,
    BagSignatures,
    bag_overlap,
    bag_signatures,
    similarity_upper_bound,
)

if TYPE_CHECKING:  # pyarrow (~35 ms) is imported where it is used (start-up)
    import pyarrow as pa

__all__ = [
    "BOUND_MARGIN",
    "CHUNK_PAIRS",
    "SCORERS",
    "FieldRule",
    "FieldScoreParams",
    "FieldScore",
    "FSField",
    "FellegiSunterParams",
    "FellegiSunter",
    "FieldColumn",
    "EMFit",
    "fit_em",
    "isotonic_decreasing",
    "isotonic_decreasing_reference",
    "monotone_m_step",
    "pattern_counts",
    "pattern_radix",
    "field_columns",
    "rows_of",
    "level_of",
    "sigmoid",
]

#: pairs compared per chunk (bounds the temporaries: about 100 bytes per pair and field)
CHUNK_PAIRS = 1 << 20
#: a pair is left uncompared only when its similarity bound is this far below the lowest level
#: (0..100 scale; far above the rounding error of the bound and of rapidfuzz's scores)
BOUND_MARGIN = 1e-6

Scorer = Literal[
    "ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "jaro_winkler", "levenshtein", "exact", "digits"
]

#: scorer name -> (rapidfuzz scorer, multiplier to reach 0..100); None: exact comparison of codes
SCORERS: dict[str, tuple[Callable[..., float] | None, float]] = {
    "ratio": (fuzz.ratio, 1.0),
    "partial_ratio": (fuzz.partial_ratio, 1.0),
    "token_sort_ratio": (fuzz.token_sort_ratio, 1.0),
    "token_set_ratio": (fuzz.token_set_ratio, 1.0),
    "jaro_winkler": (JaroWinkler.normalized_similarity, 100.0),
    "levenshtein": (Levenshtein.normalized_similarity, 100.0),
    "exact": (None, 1.0),
    "digits": (None, 1.0),
}


def field_columns(f: str | list[str]) -> list[str]:
    return [f] if isinstance(f, str) else list(f)


def _label(f: str | list[str], name: str | None) -> str:
    return name if name is not None else "+".join(field_columns(f))


# ---------------------------------------------------------------------------
# one compared field over the records taking part


class FieldColumn:
    """A field's values factorized: ``codes[i]`` is record ``i``'s value id (-1: missing).

    Only the records in ``rows`` are prepared (joined, reduced to digits,
    factorized - in Arrow, no Python step per record; fewer than
    :data:`~er_framework.kernels.arrow.ARROW_MIN_VALUES` rows in Python, with
    the same codes and dictionary); others keep code -1 and must not be
    compared. ``bounds``: also keep the values' character
    signatures (:func:`~er_framework.kernels.records_bounds.bag_signatures`)
    for :meth:`levels` to skip pairs that cannot reach a level (scorers of
    :data:`~er_framework.kernels.records_bounds.BOUNDED_SCORERS` only).
    """

    def __init__(
        self,
        records: Records,
        columns: Sequence[str],
        scorer: str,
        rows: npt.NDArray[np.int64],
        last_digits: int | None = None,
        bounds: bool = False,
    ) -> None:
        missing_cols = [c for c in columns if c not in records.fields]
        if missing_cols:
            raise ValueError(
                f"field(s) {missing_cols} not in the records; available: {sorted(records.fields)}"
            )
        self.scorer = scorer
        if len(rows) < ARROW_MIN_VALUES:
            self._prepare_in_python(records, columns, scorer, rows, last_digits, bounds)
        else:
            self._prepare_in_arrow(records, columns, scorer, rows, last_digits, bounds)

    def _prepare_in_python(
        self, records: Records, columns: Sequence[str], scorer: str, rows: npt.NDArray[np.int64],
        last_digits: int | None, bounds: bool,
    ) -> None:
        """:meth:`_prepare_in_arrow`'s codes and dictionary (same values, same order) for a few rows, in Python."""
        single = coded_parts(records.fields[columns[0]]) if len(columns) == 1 else None
        if single is not None and not _few(len(rows), len(records), single):
            distinct = _prepared_values(_blanks_to_none(single[0]), scorer, last_digits)
            dictionary, distinct_codes = _encoded(distinct)
            gathered = np.array(distinct_codes, dtype=np.int32)[single[1][rows]]
            self._finish(dictionary, len(records), rows, gathered, scorer, bounds)
            return
        whole = len(rows) == len(records)
        idx = rows.tolist()

        def part_of(c: str) -> list[str | None]:
            col = records.fields[c]
            return _blanks_to_none(col if whole else map(col.__getitem__, idx))

        v = part_of(columns[0])
        for c in columns[1:]:
            v = [a + " " + b if a is not None and b is not None else a if a is not None else b for a, b in zip(v, part_of(c))]
        dictionary, codes = _encoded(_prepared_values(v, scorer, last_digits))
        self._finish(dictionary, len(records), rows, codes, scorer, bounds)

    def _prepare_in_arrow(
        self, records: Records, columns: Sequence[str], scorer: str, rows: npt.NDArray[np.int64],
        last_digits: int | None, bounds: bool,
    ) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        whole = len(rows) == len(records)

        def part_of(c: str) -> pa.Array:
            col = records.fields[c]
            # (string_array: pa.array's conversion would import pandas)
            coded = coded_parts(col)  # a normalized column: its distinct values gathered by code
            if whole:
                a = string_array(col, large=None)
            elif few(coded):
                # a few rows (fewer than an eighth of the records, and of the distinct values of a normalized
                # column): taken in Python, the column is not converted
                a = string_array(list(map(col.__getitem__, rows.tolist())), large=None)
            elif coded is not None:
                a = string_array(coded[0], large=None).take(numeric_array(coded[1][rows]))
            else:
                a = string_array(col, large=None).take(numeric_array(rows.astype(np.int64, copy=False)))
            return _blank_to_null(a)

        def few(coded: tuple[list[Any], npt.NDArray[np.integer[Any]]] | None) -> bool:
            return _few(len(rows), len(records), coded)

        single = coded_parts(records.fields[columns[0]]) if len(columns) == 1 else None
        if single is not None and not few(single):
            # one normalized column: its distinct values are prepared and encoded, and each row takes its
            # value's code (no column of every row's text, no hash table over millions of rows)
            enc = _dictionary_encoded(_blank_to_null(string_array(single[0], large=None)), scorer, last_digits)
            distinct_codes = to_numpy(enc.indices, null=-1).astype(np.int32)
            self._finish(enc.dictionary, len(records), rows, distinct_codes[single[1][rows]], scorer, bounds)
            return

        # the columns one at a time, each joined as soon as it is made (one column's text in memory besides)
        v = part_of(columns[0])
        for c in columns[1:]:
            part = part_of(c)
            if part.type != v.type:  # over 2 GiB of text in one column: both large_string
                v, part = v.cast(pa.large_string()), part.cast(pa.large_string())
            # "a b" when both present, else the one present (binary_join's "skip" mode is not
            # used: pyarrow 26 drops the rows where every input is null)
            joined = pc.binary_join_element_wise(v, part, scalar(" ", v.type))
            v = pc.coalesce(joined, v, part)
            del joined, part
            pa.default_memory_pool().release_unused()
        enc = _dictionary_encoded(v, scorer, last_digits)
        del v
        self._finish(enc.dictionary, len(records), rows, to_numpy(enc.indices, null=-1), scorer, bounds)

    def _finish(
        self, dictionary: pa.Array | list[str], n: int, rows: npt.NDArray[np.int64],
        row_codes: npt.NDArray[np.integer[Any]] | list[int], scorer: str, bounds: bool,
    ) -> None:
        """Codes of every record (``row_codes`` for ``rows``, -1 elsewhere), the distinct values, and the bounds."""
        codes = np.full(n, -1, dtype=np.int32)  # int32: half the memory that the pairs gather from
        codes[rows] = row_codes
        self.codes = codes
        #: the distinct values (Arrow, or a list of str when prepared in Python); as Python strings only where
        #: compared (:attr:`values`, :meth:`compare`)
        self.dictionary: pa.Array | list[str] = dictionary
        self._values: npt.NDArray[np.object_] | None = None
        # few distinct values (names, dates): a chunk's pairs repeat value combinations, compared once each
        self.dedup = len(dictionary) * 4 <= max(len(rows), 1)
        self.bounds: BagSignatures | None = None
        if bounds and scorer in BOUNDED_SCORERS and len(dictionary):
            self.bounds = bag_signatures(*_utf8_buffers(dictionary))

    @property
    def values(self) -> npt.NDArray[np.object_]:
        """The distinct values as Python strings (made on first use)."""
        if self._values is None:
            values = np.empty(len(self.dictionary), dtype=object)
            values[:] = self.dictionary if isinstance(self.dictionary, list) else self.dictionary.to_pylist()
            self._values = values
        return self._values

    def scores(self, left: npt.NDArray[np.int64], right: npt.NDArray[np.int64], workers: int) -> npt.NDArray[np.float64]:
        """Similarity 0..100 of every pair (one chunk); NaN where the field is missing.

        Equal values score 100 without a call; with few distinct values only
        distinct (left value, right value) combinations are compared. With
        ``workers > 1`` the comparisons are cut into ``workers`` slices
        compared on threads (same result).
        """
        cl, cr = self.codes[left], self.codes[right]
        out = np.full(len(cl), np.nan)
        present = (cl >= 0) & (cr >= 0)
        equal = present & (cl == cr)
        out[equal] = 100.0
        todo = present & ~equal
        if SCORERS[self.scorer][0] is None:
            out[todo] = 0.0
            return out
        if not todo.any():
            return out
        out[todo] = self.compare(cl[todo], cr[todo], workers)
        return out

    def levels(
        self, left: npt.NDArray[np.int64], right: npt.NDArray[np.int64], thresholds: Sequence[float], workers: int
    ) -> npt.NDArray[np.int64]:
        """``level_of(self.scores(left, right, workers), thresholds)``, the same levels with less work: a pair
        whose similarity bound (:attr:`bounds`) is below the lowest threshold is at the last level without
        being compared."""
        cl, cr = self.codes[left], self.codes[right]
        out = np.full(len(cl), -1, dtype=np.int64)
        present = (cl >= 0) & (cr >= 0)
        equal = present & (cl == cr)
        out[equal] = level_of(np.array([100.0]), thresholds)[0]
        todo = np.flatnonzero(present & ~equal)
        if len(todo) == 0:
            return out
        if SCORERS[self.scorer][0] is None:
            out[todo] = level_of(np.array([0.0]), thresholds)[0]
            return out
        a, b = cl[todo], cr[todo]
        bs = self.bounds
        if bs is not None:
            ub = similarity_upper_bound(self.scorer, bag_overlap(bs.sig, a, b), bs.lengths[a], bs.lengths[b])
            far = ub < min(thresholds) - BOUND_MARGIN
            if bs.exact_only.any():
                far &= ~(bs.exact_only[a] | bs.exact_only[b])
            out[todo[far]] = len(thresholds)
            near = ~far
            todo, a, b = todo[near], a[near], b[near]
            if len(todo) == 0:
                return out
        out[todo] = level_of(self.compare(a, b, workers), thresholds)
        return out

    def compare(
        self, a: npt.NDArray[np.integer[Any]], b: npt.NDArray[np.integer[Any]], workers: int
    ) -> npt.NDArray[np.float64]:
        """Similarity 0..100 of the value pairs ``(values[a[k]], values[b[k]])`` (rapidfuzz, on ``workers`` threads)."""

        fn, mult = SCORERS[self.scorer]
        assert fn is not None
        inverse = None
        if self.dedup:
            nv = np.int64(max(len(self.dictionary), 1))
            keys, inverse = np.unique(a * nv + b, return_inverse=True)
            a, b = keys // nv, keys % nv
            va, vb = self.values[a].tolist(), self.values[b].tolist()
        elif isinstance(self.dictionary, list):
            va, vb = list(map(self.dictionary.__getitem__, a.tolist())), list(map(self.dictionary.__getitem__, b.tolist()))
        else:  # many distinct values: only those of these pairs become Python strings
            va = self.dictionary.take(numeric_array(a)).to_pylist()
            vb = self.dictionary.take(numeric_array(b)).to_pylist()

        def compare(ab: tuple[int, int]) -> npt.NDArray[np.float64]:
            lo, hi = ab
            return np.asarray(
                process.cpdist(va[lo:hi], vb[lo:hi], scorer=fn, score_multiplier=mult, dtype=np.float64),
                dtype=np.float64,
            )

        k = len(va)
        w = max(1, min(int(workers), k // 10000 + 1))
        bounds = np.linspace(0, k, w + 1).astype(np.int64)
        s = np.concatenate(map_ordered(compare, list(zip(bounds[:-1].tolist(), bounds[1:].tolist())), w))
        return s if inverse is None else s[inverse.reshape(-1)]


def _few(n_rows: int, n_records: int, coded: tuple[list[Any], npt.NDArray[np.integer[Any]]] | None) -> bool:
    """Fewer rows than an eighth of the records (and of a normalized column's distinct values): the rows' values
    are taken one by one, rather than the column's distinct values prepared."""
    return n_rows < n_records and n_rows * 8 < n_records and (coded is None or n_rows * 8 < len(coded[0]))


def _blanks_to_none(values: Iterable[str | None]) -> list[str | None]:
    """:func:`_blank_to_null` in Python: empty or whitespace-only -> ``None`` (``str.isspace`` is Arrow's
    ``utf8_is_space`` on every code point)."""
    return [None if not v or v.isspace() else v for v in values]


_NOT_DIGITS = re.compile(r"[^0-9]+")


def _prepared_values(values: list[str | None], scorer: str, last_digits: int | None) -> list[str | None]:
    """:func:`_dictionary_encoded`'s preparation in Python: only the digits for ``digits`` (the last
    ``last_digits``), blank -> ``None``; other scorers' values unchanged."""
    if scorer != "digits":
        return values
    out = [None if v is None else _NOT_DIGITS.sub("", v) for v in values]
    if last_digits is not None:
        out = [None if v is None else v[-last_digits:] for v in out]
    return [v or None for v in out]


def _encoded(values: list[str | None]) -> tuple[list[str], list[int]]:
    """Arrow's ``dictionary_encode`` in Python: the distinct present values in order of first appearance, and each
    value's index among them (-1 for ``None``)."""
    distinct = dict.fromkeys(values)
    distinct.pop(None, None)
    index: dict[str | None, int] = {v: i for i, v in enumerate(distinct)}
    index[None] = -1
    return list(distinct), list(map(index.__getitem__, values))


def _utf8_buffers(strings: pa.Array | list[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The UTF-8 bytes and the offsets of an Arrow string array (no copy of the bytes), or of a list of str."""
    if isinstance(strings, list):
        encoded = [v.encode("utf-8") for v in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets
    import pyarrow as pa

    if not pa.types.is_large_string(strings.type):
        strings = strings.cast(pa.large_string())
    _, off_buf, data_buf = strings.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[strings.offset : strings.offset + len(strings) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    return data, offsets


def _dictionary_encoded(v: pa.Array, scorer: str, last_digits: int | None) -> pa.DictionaryArray:
    """The dictionary encoding of a field's prepared values ``v`` (only their digits for ``digits``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if scorer == "digits":
        v = pc.replace_substring_regex(v, r"[^0-9]+", "")
        if last_digits is not None:
            v = pc.utf8_slice_codeunits(v, start=-last_digits)
        v = _blank_to_null(v)
    enc = pc.dictionary_encode(v)
    del v
    pa.default_memory_pool().release_unused()  # the hash table's memory, kept by the pool once freed
    return enc


def _blank_to_null(a: pa.Array) -> pa.Array:
    """Empty and whitespace-only strings -> null (missing); ``a`` itself when it holds none (no copy).

    ``utf8_is_space`` (non-empty, only whitespace) or empty is exactly "trimmed of whitespace, empty"
    (``utf8_trim_whitespace``, the same Unicode whitespace), without a trimmed copy of the strings."""
    import pyarrow.compute as pc

    blank = pc.fill_null(pc.or_(pc.utf8_is_space(a), pc.equal(pc.binary_length(a), scalar(0))), scalar(False))
    if not pc.any(blank).as_py():
        return a
    return pc.if_else(blank, scalar(None, a.type), a)


def rows_of(n: int, *index_arrays: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Sorted distinct record indices appearing in the arrays (O(n + pairs), no sort)."""
    mask = np.zeros(n, dtype=bool)
    for a in index_arrays:
        mask[a] = True
    return np.flatnonzero(mask).astype(np.int64)


def _chunks(n: int) -> list[tuple[int, int]]:
    size = CHUNK_PAIRS  # read at call time
    return [(a, min(a + size, n)) for a in range(0, n, size)]


# ---------------------------------------------------------------------------
# field_score


class FieldRule(Params):
    field: FieldRef | list[FieldRef] = Field(description="a column, or several joined by one space (missing parts skipped)")
    name: str | None = Field(default=None, description="label in the report (default: the columns joined by '+')")
    scorer: Scorer = Field(default="ratio", description="comparison, 0..100 (see the module docstring)")
    weight: float = Field(default=1.0, gt=0.0, description="the field contributes at most 100 * weight")
    missing: Literal["neutral", "penalize", "zero"] = Field(
        default="neutral",
        description="neutral: left out, total rescaled to the full scale; zero: contributes 0; "
        "penalize: contributes missing_score * weight",
    )
    missing_score: float = Field(
        default=0.0, ge=-100.0, le=100.0, description="with missing: penalize, the field's score (0..100 scale, may be negative)"
    )
    last_digits: int | None = Field(
        default=None, ge=1, description="scorer digits only: compare the last N digits (10 drops a +1 country code)"
    )

    @model_validator(mode="after")
    def _check(self) -> "FieldRule":
        if isinstance(self.field, list) and (not self.field or len(set(self.field)) != len(self.field)):
            raise ValueError("field must be a column name or a non-empty list of distinct column names")
        if self.last_digits is not None and self.scorer != "digits":
            raise ValueError("last_digits is used only with scorer: digits")
        if self.missing_score != 0.0 and self.missing != "penalize":
            raise ValueError("missing_score is used only with missing: penalize")
        return self

    @property
    def label(self) -> str:
        return _label(self.field, self.name)


DEFAULT_FIELD_RULES: list[dict[str, Any]] = [
    {"field": ["first_name", "last_name"], "name": "name", "scorer": "token_sort_ratio"},
    {"field": "address", "scorer": "ratio"},
    {"field": "phone", "scorer": "digits", "last_digits": 10},
]


class FieldScoreParams(Params):
    fields: list[FieldRule] = Field(
        default_factory=lambda: [dict(r) for r in DEFAULT_FIELD_RULES],
        validate_default=True,
        min_length=1,
        description="compared fields; default name (first_name + last_name, token_sort_ratio), address (ratio), phone (digits)",
    )
    threshold: float | None = Field(
        default=None,
        description="keep pairs whose total >= threshold, on the total scale 0 .. 100 * sum(weights) "
        "(300 with the default fields); required: the job's top-level fraction is not used",
    )

    @model_validator(mode="after")
    def _unique(self) -> "FieldScoreParams":
        labels = [r.label for r in self.fields]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"field labels must be unique; repeated: {dup} (set 'name' to tell them apart)")
        return self

    @property
    def scale(self) -> float:
        return 100.0 * sum(r.weight for r in self.fields)


class FieldScore(Verifier):
    """Weighted sum of per-field similarities, 100 per field (SEEDS §5: a pair scores out of 300).

    Field f with weight w_f and similarity s_f in 0..100 contributes
    w_f * s_f. When the field is missing in a pair (either side):

    * ``neutral`` - the field is left out and the total is rescaled to the full
      scale: total = (sum of the kept contributions) * W / W_kept, where W is
      the sum of all weights and W_kept that of the kept fields (present ones
      and missing ones in ``zero``/``penalize`` mode). Equivalently the field
      gets the weighted mean score of the kept fields. A pair with every
      field missing and neutral scores 0.
    * ``zero`` - contributes 0 (as if the values were completely different).
    * ``penalize`` - contributes ``missing_score * weight`` (``missing_score`` in
      -100..100, default 0 = the same as ``zero``; e.g. 50 for "half credit", a
      negative value pulls the total below a total disagreement).

    The threshold is on the total (0 .. 100 * W) and must be set on the
    verifier: the job's top-level threshold is a fraction in (0, 1] and
    is ignored here. No default: SEEDS §5 gives two example totals (about 290
    for a misspelt name, 240 for very different names) but not where the cut
    lies for a given data set. With the default fields, 200 means "two of the
    three fields' worth of agreement"; on generated customers (20,000 per
    company, truth pairs plus 200,000 random pairs) F1 is 0.992 / 0.995 /
    0.985 / 0.965 / 0.930 at 160 / 180 / 200 / 220 / 240.
    """

    name = "field_score"
    summary = "weighted sum of field similarities (rapidfuzz), 100 per field; threshold on the total (e.g. out of 300)"
    Params = FieldScoreParams
    needs = frozenset({"fields"})
    explainable = True

    @classmethod
    def check(cls, params: ParamsBase, context: Context) -> list[str]:
        assert isinstance(params, FieldScoreParams)
        scale = params.scale
        t = params.threshold
        if t is None:
            return [
                f"field_score needs verifier.threshold on its total scale 0..{scale:g} (e.g. {0.8 * scale:g}); "
                "the top-level threshold is a fraction and is not used"
            ]
        if t > scale:
            return [f"field_score threshold {t:g} exceeds the highest possible total {scale:g} (100 * sum of weights)"]
        if t <= 1.0 and scale >= 10.0:
            return [
                f"field_score threshold {t:g} looks like a fraction; it is on the total scale 0..{scale:g} "
                f"(e.g. {t * scale:g})"
            ]
        return []

    @property
    def threshold(self) -> float:
        p = self.params
        assert isinstance(p, FieldScoreParams)
        if p.threshold is None:
            raise ValueError(f"field_score has no threshold: set verifier.threshold on the scale 0..{p.scale:g}")
        return float(p.threshold)

    def field_scores(self, batch: Batch, pairs: Pairs) -> dict[str, npt.NDArray[np.float64]]:
        """Per-field similarity 0..100 of every pair (NaN: missing), keyed by field label."""
        p = self.params
        assert isinstance(p, FieldScoreParams)
        rows = rows_of(len(batch.records), pairs.left, pairs.right)
        out: dict[str, npt.NDArray[np.float64]] = {}
        for r in p.fields:
            col = FieldColumn(batch.records, field_columns(r.field), r.scorer, rows, r.last_digits)
            s = np.empty(len(pairs))
            for a, b in _chunks(len(pairs)):
                s[a:b] = col.scores(pairs.left[a:b], pairs.right[a:b], self.context.workers)
            out[r.label] = s
        return out

    def comparisons(self, batch: Batch, pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
        """Per pair and field: ``similarity_<f>`` (0..100, NaN = missing) and ``points_<f>``, the field's share
        of the total in the total's unit; ``score`` = the total of :meth:`score` (the points sum to it).

        A kept field (present, or missing in ``zero`` / ``penalize`` mode) scores
        ``c_f = w_f * s_f`` (``w_f * missing_score`` or 0 when missing), and the total is
        ``sum c_f * W / W_kept`` (:class:`FieldScore`): so ``points_f = c_f * W / W_kept``; a missing
        ``neutral`` field gets 0 points (its weight is spread over the kept fields by the rescaling),
        and every field 0 when none is kept."""
        p = self.params
        assert isinstance(p, FieldScoreParams)
        sims = self.field_scores(batch, pairs)
        n = len(pairs)
        total_w = sum(r.weight for r in p.fields)
        contrib: list[npt.NDArray[np.float64]] = []
        kept_w = np.zeros(n)
        num = np.zeros(n)
        for r in p.fields:
            s = sims[r.label]
            miss = np.isnan(s)
            if r.missing == "neutral":
                c = np.where(miss, 0.0, s * r.weight)
                kept_w += np.where(miss, 0.0, r.weight)
            else:
                fill = r.missing_score if r.missing == "penalize" else 0.0
                c = np.where(miss, fill, s) * r.weight
                kept_w += r.weight
            num += c
            contrib.append(c)
        none_kept = kept_w == 0
        scale = np.where(none_kept, 0.0, total_w / np.where(none_kept, 1.0, kept_w))
        out: dict[str, npt.NDArray[Any]] = {}
        for r, c in zip(p.fields, contrib):
            out[f"similarity_{r.label}"] = sims[r.label]
            out[f"points_{r.label}"] = c * scale
        # the same expression as score(), so the column equals it exactly
        out["score"] = np.where(none_kept, 0.0, num * total_w / np.where(none_kept, 1.0, kept_w))
        return out

    def restore(self, described: dict[str, Any]) -> None:
        """Nothing to take back: the total depends on the pair's two records and the parameters alone."""

    def score(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
        p = self.params
        assert isinstance(p, FieldScoreParams)
        n = len(pairs)
        rows = rows_of(len(batch.records), pairs.left, pairs.right)
        cols = [FieldColumn(batch.records, field_columns(r.field), r.scorer, rows, r.last_digits) for r in p.fields]
        total_w = sum(r.weight for r in p.fields)
        total = np.empty(n)
        sums = np.zeros(len(p.fields))
        present_n = np.zeros(len(p.fields), dtype=np.int64)
        missing_n = np.zeros(len(p.fields), dtype=np.int64)
        all_missing = 0
        for a, b in _chunks(n):
            num = np.zeros(b - a)
            kept_w = np.zeros(b - a)
            for j, (r, col) in enumerate(zip(p.fields, cols)):
                s = col.scores(pairs.left[a:b], pairs.right[a:b], self.context.workers)
                miss = np.isnan(s)
                missing_n[j] += int(miss.sum())
                present_n[j] += int((~miss).sum())
                sums[j] += float(s[~miss].sum())
                if r.missing == "neutral":
                    num += np.where(miss, 0.0, s * r.weight)
                    kept_w += np.where(miss, 0.0, r.weight)
                else:
                    fill = r.missing_score if r.missing == "penalize" else 0.0
                    num += np.where(miss, fill, s) * r.weight
                    kept_w += r.weight
            none_kept = kept_w == 0
            all_missing += int(none_kept.sum())
            total[a:b] = np.where(none_kept, 0.0, num * total_w / np.where(none_kept, 1.0, kept_w))
        t = p.threshold
        self._report: dict[str, Any] = {
            "scale": p.scale,
            "pairs_scored": int(n),
            "mean_total": round(float(total.mean()), 4) if n else None,
            "pairs_at_or_above_threshold": None if t is None else int((total >= t).sum()),
            "pairs_with_every_field_missing": all_missing,
            "per_field": {
                r.label: {
                    "columns": field_columns(r.field),
                    "scorer": r.scorer,
                    "weight": r.weight,
                    "missing_mode": r.missing,
                    "mean_score": round(float(sums[j] / present_n[j]), 4) if present_n[j] else None,
                    "missing_pairs": int(missing_n[j]),
                    "distinct_values": len(cols[j].dictionary),
                }
                for j, r in enumerate(p.fields)
            },
        }
        return total

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **getattr(self, "_report", {})}


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
    return ((np.asarray(levels, dtype=np.int64) + 1) * pattern_radix(n_levels)).sum(axis=1)


def _decode(codes: npt.NDArray[np.int64], n_levels: Sequence[int]) -> npt.NDArray[np.int64]:
    radix = pattern_radix(n_levels)
    base = np.asarray(n_levels, dtype=np.int64) + 1
    return (codes[:, None] // radix[None, :]) % base[None, :] - 1


def _count_codes(codes: npt.NDArray[np.signedinteger[Any]], space: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
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
    return _decode(uniq, n_levels), counts.astype(np.float64), inverse.reshape(-1).astype(np.int64)


#: floor of every m and u probability (and of lambda, 1 - lambda): a level never seen
#: in one class gets a large finite weight instead of an infinite one
EPS = 1e-10


def _floor_normalize(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    p = np.maximum(p, EPS)
    return p / p.sum()


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

    def weights(self) -> list[npt.NDArray[np.float64]]:
        """Match weight log2(m / u) per field and level."""
        return [np.log2(m / u) for m, u in zip(self.m, self.u)]

    def logit(self, patterns: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Natural-log posterior odds of a match per pattern (a missing level adds 0)."""
        z = np.full(len(patterns), math.log(self.lam) - math.log1p(-self.lam))
        for f, (m, u) in enumerate(zip(self.m, self.u)):
            lv = patterns[:, f]
            ok = lv >= 0
            z += np.where(ok, np.log(m / u)[np.where(ok, lv, 0)], 0.0)
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


def _class_logs(
    patterns: npt.NDArray[np.int64], probs: list[npt.NDArray[np.float64]]
) -> npt.NDArray[np.float64]:
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
        out[k] = min(
            max(float((w[i : j + 1] * y[i : j + 1]).sum() / w[i : j + 1].sum()) for j in range(k, n))
            for i in range(k + 1)
        )
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
    m = [_floor_normalize(np.asarray(x, dtype=np.float64)) for x in m0]
    u = [_floor_normalize(np.asarray(x, dtype=np.float64)) for x in u0]
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
                uf = u[f] if fix_u else (_floor_normalize(au / au.sum()) if au.sum() > 0 else u[f])
            elif monotone and am.sum() > 0 and (fix_u or au.sum() > 0):
                mf, uf = monotone_m_step(am, au, u[f] if fix_u else None)
            else:
                mf = _floor_normalize(am / am.sum()) if am.sum() > 0 else m[f]
                uf = u[f] if fix_u else (_floor_normalize(au / au.sum()) if au.sum() > 0 else u[f])
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
# fellegi_sunter


class FSField(Params):
    field: FieldRef | list[FieldRef] = Field(description="a column, or several joined by one space (missing parts skipped)")
    name: str | None = Field(default=None, description="label in the report (default: the columns joined by '+')")
    comparison: Scorer = Field(default="jaro_winkler", description="similarity 0..100 cut into levels (scorers as field_score)")
    last_digits: int | None = Field(
        default=None, ge=1, description="comparison digits only: compare the last N digits (10 drops a +1 country code)"
    )
    levels: list[float] | None = Field(
        default=None,
        description="strictly decreasing thresholds in (0, 100]: level k = similarity >= levels[k] (first that holds), "
        "then an 'else' level; missing is separate. Default [100, 90, 75]; exact/digits: [100]",
    )

    @model_validator(mode="after")
    def _check(self) -> "FSField":
        if isinstance(self.field, list) and (not self.field or len(set(self.field)) != len(self.field)):
            raise ValueError("field must be a column name or a non-empty list of distinct column names")
        if self.last_digits is not None and self.comparison != "digits":
            raise ValueError("last_digits is used only with comparison: digits")
        lv = self.levels
        if lv is not None:
            if not lv or any(not (0.0 < x <= 100.0) for x in lv) or any(a <= b for a, b in zip(lv, lv[1:])):
                raise ValueError(f"levels must be strictly decreasing thresholds in (0, 100], got {lv}")
            if self.comparison in ("exact", "digits") and lv != [100.0]:
                raise ValueError(f"comparison {self.comparison!r} scores 0 or 100: levels must be [100]")
        return self

    @property
    def label(self) -> str:
        return _label(self.field, self.name)

    @property
    def thresholds(self) -> list[float]:
        if self.levels is not None:
            return list(self.levels)
        return [100.0] if self.comparison in ("exact", "digits") else [100.0, 90.0, 75.0]

    def level_names(self) -> list[str]:
        t = self.thresholds
        names = ["=100" if x >= 100.0 else f">={x:g}" for x in t]
        return names + [f"<{t[-1]:g}"]


DEFAULT_FS_FIELDS: list[dict[str, Any]] = [
    {"field": "first_name", "comparison": "jaro_winkler", "levels": [100, 92, 80]},
    {"field": "last_name", "comparison": "jaro_winkler", "levels": [100, 92, 80]},
    # one field: a move changes all three together, and as three fields they would break the
    # model's conditional independence and count a move three times (see FellegiSunter)
    {"field": ["address", "city", "zip"], "name": "location", "comparison": "ratio", "levels": [100, 85, 70]},
    {"field": "phone", "comparison": "digits", "last_digits": 10},
    {"field": "email", "comparison": "ratio", "levels": [100, 80]},
    {"field": "dob", "comparison": "levenshtein", "levels": [100, 80]},
]


class FellegiSunterParams(Params):
    fields: list[FSField] = Field(
        default_factory=lambda: [dict(r) for r in DEFAULT_FS_FIELDS],
        validate_default=True,
        min_length=1,
        description="compared fields and their agreement levels; default: the customer fields first_name, last_name, "
        "location (address + city + zip), phone, email, dob",
    )
    threshold: float | None = Field(
        default=None, gt=0.0, le=1.0, description="keep pairs with match probability >= threshold (default: the job threshold)"
    )
    max_iter: int = Field(default=500, ge=1, le=100000, description="EM iterations at most")
    tol: float = Field(default=1e-7, ge=0.0, description="EM stops when no parameter (lambda, m, u) moves by more than tol")
    prior: float | None = Field(
        default=None, gt=0.0, lt=1.0,
        description="initial lambda = P(match) among the candidates (default: from the initial m and u, see docs)",
    )
    smoothing: float = Field(
        default=1.0, ge=0.0,
        description="pseudo-pairs added to every level of every field in both classes in EM's M-step "
        "(a level never seen in a class keeps a moderate weight); 0: maximum likelihood",
    )
    u_from_random_pairs: int = Field(
        default=20000, ge=0,
        description="random record pairs (cross-source in link mode) whose level frequencies estimate u; 0: none. "
        "Without fix_u they only initialise EM, which re-estimates u (20,000 and 100,000 gave the same pairs "
        "on the 100k-customer benchmark); raise it with fix_u",
    )
    fix_u: bool = Field(
        default=False,
        description="hold u at the random-pair estimate (EM fits lambda and m only); default: it only initialises u",
    )
    monotone: bool = Field(
        default=True,
        description="every field's match weight log2(m/u) non-increasing from the closest level to the last "
        "(EM's M-step is the maximum likelihood under that order: pool adjacent violators); false: unconstrained EM",
    )
    labels_fit: Literal["em", "labels"] = Field(
        default="em",
        description="with the job's training labels: em - EM on the candidates started from the labels' m and u, "
        "every labelled pair held at its label (semi-supervised); labels - m and u from the labelled pairs alone "
        "(their level frequencies), only lambda fitted. fix_u and prior are not used with labels",
    )
    seed: int | None = Field(default=None, ge=0, description="seed of the random pairs (default: the job seed)")

    @model_validator(mode="after")
    def _check(self) -> "FellegiSunterParams":
        labels = [r.label for r in self.fields]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"field labels must be unique; repeated: {dup} (set 'name' to tell them apart)")
        if self.fix_u and self.u_from_random_pairs == 0:
            raise ValueError("fix_u needs u_from_random_pairs > 0")
        return self


class FellegiSunter(Verifier):
    """Unsupervised Fellegi-Sunter scoring: EM on the candidates' comparison patterns.

    Each field's similarity (0..100) is cut into levels by ``levels`` (e.g.
    [100, 90, 70]: exact / >= 90 / >= 70 / else), plus a *missing* level
    (either side missing) that is in neither m nor u and contributes weight 0.
    A two-class latent model with fields independent given the class is
    fitted by EM (:func:`fit_em`) on the counts of distinct patterns of the
    candidate pairs, so an iteration costs O(patterns), not O(pairs).

    u (level frequencies among non-matches): estimated from
    ``u_from_random_pairs`` random record pairs (in link mode pairs of
    different sources), which are almost all non-matches, with 0.5 added to
    every level count. By default this is only EM's *initial* u and EM
    re-estimates u on the candidates: the pairs being scored come from a
    blocker, and their non-matches agree on the blocked fields far more often
    than random pairs do (a pair blocked on phone shares the phone), so u of
    random pairs would overrate exactly those agreements. ``fix_u: true`` keeps
    the random-pair u (the classic "u from random sampling" estimate; right
    when the candidates are close to random pairs, or no field is blocked on);
    EM then fits lambda and m only. Without random pairs, u starts at
    ``8**(k - K + 1)`` (normalized) over the K levels of each field.

    EM's M-step adds ``smoothing`` (default 1) pseudo-pairs to every level
    of both classes: on the generated customers no true match falls in the
    location level ">= 70" (a move gives < 70, an abbreviation >= 85), and the
    maximum-likelihood m = 0 would make that level a -23 bit veto.

    Initial m: ``8**-k`` over the levels (normalized; most mass on level 0).
    Initial lambda: ``prior``, or else the mean posterior of the candidates
    under the initial m and u with lambda = 0.5, clipped to [0.001, 0.5].

    Fields should be close to independent given the class. The default fields
    join address, city and zip into one ``location`` field: a customer who
    moved differs in all three, and as three fields EM learns "all three
    differ" as a sure sign of a non-match (m = 0) and rejects the movers. On
    candidates of the seed's blocking (one of name, address, phone identical)
    of 20,000 generated customers per company this took F1 from 0.942 to
    0.996 (tests/test_records_scoring.py).

    Monotone weights (``monotone: true``, default): a closer level never
    weighs less than a looser one. Each M-step is the maximum likelihood
    under the order log(m_0/u_0) >= log(m_1/u_1) >= ... (:func:`monotone_m_step`:
    the share of matches per level, a_k / (a_k + b_k), made non-increasing by
    pool adjacent violators with weights a_k + b_k; a pooled run of levels
    gets one weight). Unconstrained EM on blocked candidates can invert the
    order (Febrl4: given_name exact +0.98 bits, >= 92 +1.55) because the
    blocks make exact agreement common among non-matches; on Febrl3, Febrl4
    and generated customers the constraint kept F1 (benchmarks/README.md,
    bench_fs_weights.py). ``monotone: false`` is the EM of before.

    Training (``trainable``): with :attr:`labelled` set (the job's
    ``training: {labels: FILE}``), :meth:`train` estimates m and u from the
    labelled pairs' levels and, by default (``labels_fit: em``), continues
    with EM on the candidates, every labelled pair held at its label; lambda
    from the labels' share or by EM (``labelled.lam``).

    Explanations (``explainable``): :meth:`comparisons` gives every pair's
    level and weight (bits) per field, the prior weight, their sum and the
    probability; :meth:`restore` rebuilds the fit from report.json.

    Score = match probability lam * prod m / (lam * prod m + (1 - lam) * prod u)
    over the fields present; the match weight log2(m / u) of each field and
    level is in the report, with ``estimation`` (how m, u and lambda were
    estimated) and ``weights_monotone``. After unconstrained EM the classes
    are exchanged when most fields have m < u at level 0 (label switching).
    """

    # m/u weights are trained by EM on all candidate pairs of the run
    pairwise = False
    explainable = True
    trainable = True
    #: :meth:`pair_codes` of ``labelled.pairs`` (set by :meth:`score`; an executor calling
    #: :meth:`fit_counts` itself sets it from the codes of the labelled pairs)
    labelled_codes: npt.NDArray[np.int64] | None = None
    name = "fellegi_sunter"
    summary = ("Fellegi-Sunter: EM over comparison-pattern counts (weights monotone in the level; or trained from "
               "labelled pairs), score = match probability")
    Params = FellegiSunterParams
    needs = frozenset({"fields"})

    def _random_pairs(
        self, src: npt.NDArray[np.int32], cross_source_only: bool, k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``k`` uniform random pairs of distinct records (``src``: each record's source); of different sources in link mode."""
        n = len(src)
        rng = np.random.default_rng(self.seed)
        left = rng.integers(0, n, size=k)
        if cross_source_only and len(np.unique(src)) > 1:
            order = np.argsort(src, kind="stable")
            sizes = np.bincount(src, minlength=int(src.max()) + 1)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            s = src[left]
            others = n - sizes[s]
            ok = others > 0
            left, s, others = left[ok], s[ok], others[ok]
            r = (rng.random(len(left)) * others).astype(np.int64)
            r = np.where(r >= starts[s], r + sizes[s], r)  # skip the block of the left record's source
            right = order[r]
        else:
            right = (left + 1 + rng.integers(0, n - 1, size=k)) % n
        return left.astype(np.int64), right.astype(np.int64)

    #: the model fitted by the last :meth:`score` call
    fit: EMFit | None = None

    def _pattern_codes(
        self, batch: Batch, pair_sets: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]
    ) -> list[npt.NDArray[np.signedinteger[Any]]]:
        """Pattern code of every pair of each ``(left, right)`` of ``pair_sets`` (mixed radix over the fields'
        states; int32 when they fit).

        Field by field: a field's :class:`FieldColumn` (with the signatures of
        :meth:`FieldColumn.levels`) is prepared over the records of all the
        pairs, its levels added to every set's codes, and dropped before the
        next field, so one field's values are in memory at a time. Chunks of
        pairs run on ``context.workers`` threads (numpy and rapidfuzz release
        the GIL); a pair's code depends on the pair alone, so the result is the
        same for any chunking and any number of threads.
        """
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        n_levels = [len(f.thresholds) + 1 for f in p.fields]
        radix = pattern_radix(n_levels)
        space = int(np.prod(np.asarray(n_levels, dtype=np.float64) + 1))
        dtype = np.int32 if space < 2**31 else np.int64
        outs: list[npt.NDArray[np.signedinteger[Any]]] = [np.zeros(len(left), dtype=dtype) for left, _ in pair_sets]
        rows = rows_of(len(batch.records), *[x for pair in pair_sets for x in pair])
        workers = max(1, int(self.context.workers))
        for f, fld in enumerate(p.fields):
            col = FieldColumn(batch.records, field_columns(fld.field), fld.comparison, rows, fld.last_digits,
                              bounds=True)
            release_free_memory()  # the preparation's temporaries (the allocators keep freed memory)
            for (left, right), out in zip(pair_sets, outs):
                self._add_levels(col, fld.thresholds, int(radix[f]), left, right, out, workers)
            del col
            release_free_memory()  # the field's values and the temporaries of its comparisons
        return outs

    @staticmethod
    def _add_levels(
        col: FieldColumn, thresholds: Sequence[float], place: int, left: npt.NDArray[np.int64],
        right: npt.NDArray[np.int64], out: npt.NDArray[np.signedinteger[Any]], workers: int,
    ) -> None:
        """``out += (level + 1) * place`` for the pairs ``(left, right)`` of one field, a chunk per thread step."""
        chunks = _chunks(len(left))
        if 1 < len(left) and len(chunks) < 2 * workers:  # small inputs: still one chunk per thread
            size = -(-len(left) // workers)
            chunks = [(a, min(a + size, len(left))) for a in range(0, len(left), size)]
        inner = 1 if len(chunks) > 1 else workers

        def chunk(ab: tuple[int, int]) -> None:
            a, b = ab
            out[a:b] += ((col.levels(left[a:b], right[a:b], thresholds, inner) + 1) * place).astype(out.dtype)

        map_ordered(chunk, chunks, workers)

    def comparison_levels(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.int64]:
        """``(n_pairs, n_fields)`` agreement level of every pair and field (0 = closest, -1 = missing)."""
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        return _decode(self.pair_codes(batch, pairs), [len(f.thresholds) + 1 for f in p.fields])

    def pair_codes(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.int64]:
        """Comparison pattern of every pair, as one int64 code (mixed radix over the fields' states)."""
        return np.asarray(self._pattern_codes(batch, [(pairs.left, pairs.right)])[0], dtype=np.int64)

    def sample_pairs(self, source: npt.NDArray[np.int32], cross_source_only: bool) -> Pairs:
        """``u_from_random_pairs`` random pairs (:meth:`_random_pairs`, seeded): their level frequencies estimate u."""
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        if p.u_from_random_pairs == 0 or len(source) < 2:
            return Pairs.empty()
        left, right = self._random_pairs(np.asarray(source), bool(cross_source_only), p.u_from_random_pairs)
        return Pairs(left, right)

    def score(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
        """The match probability of every pair: codes, their counts, EM (:meth:`fit_counts`), a lookup by code.

        An executor working partition by partition runs the same steps apart
        (codes where the records are, counts summed, one fit): same scores.
        """
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        if len(pairs) == 0:
            self._report: dict[str, Any] = {"pairs_scored": 0}
            return np.zeros(0)
        sample = self.sample_pairs(batch.records.source, batch.cross_source_only)
        # the fields prepared once for the candidates and the random pairs; int32 codes when the space fits
        codes, s_codes = self._pattern_codes(batch, [(pairs.left, pairs.right), (sample.left, sample.right)])
        space = self._space()
        uniq, counts = _count_codes(codes, space)
        s_uniq, s_counts = _count_codes(s_codes, space) if len(sample) else (np.zeros(0, np.int64), np.zeros(0))
        lab = self.labelled
        if lab is not None:
            self.labelled_codes = self.pair_codes(batch, lab.pairs) if len(lab.pairs) else np.zeros(0, np.int64)
        table = self.fit_counts(uniq, counts, s_uniq, s_counts)
        # pair -> its pattern's probability: a table over the code space when it is small, else through the
        # (sorted) distinct codes
        if space <= 1 << 22:
            by_code = np.zeros(space, dtype=np.float64)
            by_code[uniq] = table
            return np.asarray(by_code[codes], dtype=np.float64)
        return np.asarray(table[np.searchsorted(uniq, codes)], dtype=np.float64)

    def _space(self) -> int:
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        return int(np.prod(np.asarray([len(f.thresholds) + 2 for f in p.fields], dtype=np.float64)))

    def fit_counts(
        self, codes: npt.NDArray[np.int64], counts: npt.NDArray[np.float64],
        sample_codes: npt.NDArray[np.int64], sample_counts: npt.NDArray[np.float64],
    ) -> npt.NDArray[np.float64]:
        """EM (:func:`fit_em`) on the candidates' distinct patterns and counts, u initialised (or fixed) from
        the random pairs' level frequencies; or, with :attr:`labelled` (and :attr:`labelled_codes`, the
        labelled pairs' :meth:`pair_codes`), m and u from the labels (:meth:`train`). The match
        probability of each pattern. Keeps the report."""
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        n = int(counts.sum())
        if n == 0:
            self._report = {"pairs_scored": 0}
            return np.zeros(0)
        n_levels = [len(f.thresholds) + 1 for f in p.fields]
        F = len(p.fields)
        uniq = np.asarray(codes, dtype=np.int64)
        patterns = _decode(uniq, n_levels)

        # u from random pairs (with 0.5 added to every level count)
        u_random: list[npt.NDArray[np.float64]] | None = None
        n_random = int(np.asarray(sample_counts).sum())
        if n_random:
            rpat = _decode(np.asarray(sample_codes, dtype=np.int64), n_levels)
            u_random = []
            for f in range(F):
                lv = rpat[:, f]
                ok = lv >= 0
                # counts are whole numbers: the weighted sums are exact, whatever their order
                acc = np.bincount(lv[ok], weights=sample_counts[ok], minlength=n_levels[f]).astype(np.float64) + 0.5
                u_random.append(acc / acc.sum())
        training: dict[str, Any] | None = None
        if self.labelled is not None:
            fit, lam0, training = self.train(patterns, counts)
        else:
            m0 = [_floor_normalize(8.0 ** -np.arange(K, dtype=np.float64)) for K in n_levels]
            u0 = u_random if u_random is not None else [
                _floor_normalize(8.0 ** (np.arange(K, dtype=np.float64) - K + 1)) for K in n_levels
            ]
            if p.prior is not None:
                lam0 = float(p.prior)
            else:
                g = EMFit(lam=0.5, m=m0, u=u0).probability(patterns)
                lam0 = float(np.clip((counts @ g) / counts.sum(), 1e-3, 0.5))
            fit = fit_em(
                patterns, counts, n_levels, lam0, m0, u0, fix_u=p.fix_u, monotone=p.monotone,
                max_iter=p.max_iter, tol=p.tol, smoothing=p.smoothing,
            )
        table = fit.probability(patterns)

        weights = fit.weights()
        t = p.threshold if p.threshold is not None else self.context.threshold
        if training is not None:
            u_mode = "from labelled non-matches" if training["fit"] == "labels" else (
                "EM, started from labelled non-matches, labelled pairs held")
        elif p.fix_u:
            u_mode = "fixed from random pairs"
        else:
            u_mode = "EM, initialised from random pairs" if u_random is not None else "EM"
        self._report = {
            "pairs_scored": n,
            "patterns": int(len(uniq)),
            "lambda": float(fit.lam),
            "lambda_initial": lam0,
            "expected_matches": round(float(fit.lam) * n, 1),
            "iterations": fit.iterations,
            "converged": fit.converged,
            "label_swapped": fit.swapped,
            "estimation": self.estimation(training),
            "weights_monotone": all(bool(np.all(np.diff(w) <= 1e-12)) for w in weights),
            "u_mode": u_mode,
            "training": training,
            "random_pairs": n_random,
            "loglik": [round(x, 6) for x in fit.loglik],
            "pairs_at_or_above_threshold": None if t is None else int(counts[table >= t].sum()),
            "per_field": {
                fld.label: {
                    "columns": field_columns(fld.field),
                    "comparison": fld.comparison,
                    "levels": fld.level_names(),
                    "m": [float(x) for x in fit.m[f]],
                    "u": [float(x) for x in fit.u[f]],
                    "weight_log2": [round(float(x), 6) for x in weights[f]],
                    "u_random_pairs": None if u_random is None else [float(x) for x in u_random[f]],
                    "missing_pairs": int(counts[patterns[:, f] < 0].sum()),
                    "missing_weight": 0.0,
                }
                for f, fld in enumerate(p.fields)
            },
        }
        self.fit = fit
        return table

    def estimation(self, training: dict[str, Any] | None) -> str:
        """One line for the report: how m, u and lambda were estimated and whether the weights are monotone."""
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        order = ("weights monotone in the level (constrained maximum likelihood, pool adjacent violators)"
                 if p.monotone else "weights unconstrained (a looser level may weigh more than a closer one)")
        if training is not None:
            lam = ("lambda = the labels' share of matches" if training["lambda"] == "labels"
                   else "lambda by EM on the candidates")
            labels = f"{training['matches']} labelled matches and {training['non_matches']} labelled non-matches"
            if training["fit"] == "labels":
                how = f"m and u from {labels} (held)"
            else:
                how = f"m and u by EM on the candidates, started from {labels}, each labelled pair held at its label"
            return f"trained: {how}; {lam}; {order}"
        u = "u fixed from random pairs" if p.fix_u else "u by EM"
        return f"unsupervised EM on the candidates (m by EM, {u}); {order}"

    def train(
        self, patterns: npt.NDArray[np.int64], counts: npt.NDArray[np.float64]
    ) -> tuple[EMFit, float, dict[str, Any]]:
        """The fit from the labelled pairs (:attr:`labelled`, :attr:`labelled_codes`) and the candidates' ``patterns``.

        Per field, ``a_k`` / ``b_k`` = labelled matches / non-matches at level
        k plus ``smoothing`` (pairs where the field is missing are skipped);
        the labels' estimate is m = a / sum a and u = b / sum b, or with
        ``monotone`` the constrained estimate of :func:`monotone_m_step` on the
        same counts (their maximum likelihood under the order).

        ``labels_fit: labels`` holds m and u there. ``labels_fit: em`` (default)
        starts :func:`fit_em` from them and fits m, u (and lambda) on the
        candidates, every labelled pair entering the M-step with its class
        known (``known``): semi-supervised, the labels and every candidate's
        comparison pattern in one likelihood.

        Lambda (``labelled.lam``): ``"labels"`` holds it at the labels' share of
        matches (right for a random sample of the candidates); ``"em"`` fits it
        on the candidates (with m and u held, under ``labels_fit: labels``),
        right for pairs chosen near the threshold, whose share of matches says
        nothing of the candidates'. Raises ValueError when the labels hold no
        match or no non-match.
        """
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        lab = self.labelled
        assert lab is not None
        codes = self.labelled_codes
        if codes is None or len(codes) != len(lab.pairs):
            raise ValueError(
                "fellegi_sunter: labelled pairs were set without their codes (labelled_codes = pair_codes of "
                "labelled.pairs; score() sets them, an executor calling fit_counts itself must)"
            )
        y = np.asarray(lab.match, dtype=bool)
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        if n_pos == 0 or n_neg == 0:
            raise ValueError(
                f"training labels hold {n_pos} match(es) and {n_neg} non-match(es): fellegi_sunter estimates m from "
                "labelled matches and u from labelled non-matches, so it needs at least one of each; label more pairs "
                "(er review writes pairs on both sides of the threshold)"
            )
        n_levels = [len(f.thresholds) + 1 for f in p.fields]
        lpat = _decode(np.asarray(codes, dtype=np.int64), n_levels)
        m: list[npt.NDArray[np.float64]] = []
        u: list[npt.NDArray[np.float64]] = []
        per_field: dict[str, dict[str, list[int]]] = {}
        for f, fld in enumerate(p.fields):
            lv = lpat[:, f]
            ok = lv >= 0
            cm = np.bincount(lv[ok & y], minlength=n_levels[f]).astype(np.float64)
            cu = np.bincount(lv[ok & ~y], minlength=n_levels[f]).astype(np.float64)
            per_field[fld.label] = {"matches": cm.astype(int).tolist(), "non_matches": cu.astype(int).tolist()}
            a, b = cm + p.smoothing, cu + p.smoothing
            if a.sum() <= 0 or b.sum() <= 0:
                # no labelled pair shows this field in one class (and no smoothing): it starts at weight 0
                mf = uf = np.full(n_levels[f], 1.0 / n_levels[f])
            elif p.monotone:
                mf, uf = monotone_m_step(a, b)
            else:
                mf, uf = _floor_normalize(a / a.sum()), _floor_normalize(b / b.sum())
            m.append(mf)
            u.append(uf)
        lam_labels = float(np.clip(n_pos / (n_pos + n_neg), EPS, 1 - EPS))
        if lab.lam == "labels":
            lam0 = lam_labels
            fit = EMFit(lam=lam_labels, m=m, u=u, converged=True)
        else:
            lam0 = lam_labels
            fit = fit_em(
                patterns, counts, n_levels, lam0, m, u, fix_m=True, fix_u=True,
                max_iter=p.max_iter, tol=p.tol, smoothing=p.smoothing,
            )
        if p.labels_fit == "em":
            # the labelled pairs by distinct pattern: how many matches and non-matches show each
            lcodes = np.asarray(codes, dtype=np.int64)
            uniq, inv = np.unique(lcodes, return_inverse=True)
            inv = inv.reshape(-1)
            pos = np.bincount(inv, weights=y.astype(np.float64), minlength=len(uniq)).astype(np.float64)
            neg = np.bincount(inv, weights=(~y).astype(np.float64), minlength=len(uniq)).astype(np.float64)
            fit = fit_em(
                patterns, counts, n_levels, fit.lam, fit.m, fit.u, monotone=p.monotone, fix_lam=lab.lam == "labels",
                known=(_decode(uniq, n_levels), pos, neg), max_iter=p.max_iter, tol=p.tol, smoothing=p.smoothing,
            )
        training = {
            "labelled_pairs": n_pos + n_neg,
            "matches": n_pos,
            "non_matches": n_neg,
            "lambda": lab.lam,
            "fit": p.labels_fit,
            "level_counts": per_field,
        }
        return fit, lam0, training

    # -- explanations ------------------------------------------------------------

    def comparisons(self, batch: Batch, pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
        """Per pair: ``prior_weight`` = log2(lambda / (1 - lambda)); per field ``level_<f>`` (0 = closest,
        -1 = missing) and ``weight_<f>`` = log2(m / u) of that level (0 when missing); ``match_weight`` =
        their sum; ``score`` = 2**match_weight / (1 + 2**match_weight), the match probability of :meth:`score`.

        Uses the fitted model (:attr:`fit`, from :meth:`score` or :meth:`restore`)."""
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        fit = self.fit
        if fit is None:
            raise ValueError("fellegi_sunter has no fitted model: call score() or restore() first")
        levels = self.comparison_levels(batch, pairs) if len(pairs) else np.zeros((0, len(p.fields)), np.int64)
        prior = math.log2(fit.lam) - math.log2(1.0 - fit.lam)
        out: dict[str, npt.NDArray[Any]] = {"prior_weight": np.full(len(pairs), prior)}
        total = np.full(len(pairs), prior)
        for f, (fld, w) in enumerate(zip(p.fields, fit.weights())):
            lv = levels[:, f]
            ok = lv >= 0
            wf = np.where(ok, w[np.where(ok, lv, 0)], 0.0)
            out[f"level_{fld.label}"] = lv.astype(np.int64)
            out[f"weight_{fld.label}"] = wf
            total = total + wf
        out["match_weight"] = total
        out["score"] = fit.probability(levels)
        return out

    def restore(self, described: dict[str, Any]) -> None:
        """Rebuild :attr:`fit` (lambda, m and u per field) from :meth:`describe`'s output (report.json's
        ``verifier`` section), so that :meth:`comparisons` works without fitting again. A report of a run
        that scored no pair restores nothing. Raises ValueError when the report's fields or levels are not
        this verifier's."""
        p = self.params
        assert isinstance(p, FellegiSunterParams)
        if "lambda" not in described:
            self.fit = None
            return
        per_field = described.get("per_field") or {}
        labels = [f.label for f in p.fields]
        if list(per_field) != labels:
            raise ValueError(f"the report's fields {list(per_field)} are not this verifier's {labels}")
        m, u = [], []
        for fld in p.fields:
            rep = per_field[fld.label]
            k = len(fld.thresholds) + 1
            mf = np.asarray(rep["m"], dtype=np.float64)
            uf = np.asarray(rep["u"], dtype=np.float64)
            if mf.shape != (k,) or uf.shape != (k,):
                raise ValueError(f"field {fld.label!r}: the report has {len(mf)} levels, this verifier {k}")
            m.append(mf)
            u.append(uf)
        self.fit = EMFit(
            lam=float(described["lambda"]), m=m, u=u, iterations=int(described.get("iterations", 0)),
            converged=bool(described.get("converged", False)), swapped=bool(described.get("label_swapped", False)),
        )
        self._report = {k: v for k, v in described.items() if k not in self.params.model_dump(mode="json") and k != "type"}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **getattr(self, "_report", {})}


@hookimpl
def er_register_verifiers() -> list[type[Verifier]]:
    return [FieldScore, FellegiSunter]
