"""One compared field of structured records over the records taking part: :class:`FieldColumn`.

The comparison code of the verifiers of :mod:`er_plugins.records_scoring` (``field_score``,
``fellegi_sunter``; the scorers and the field syntax are described there).

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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz, process
from rapidfuzz.distance import JaroWinkler, Levenshtein

from er_framework.data import Records
from er_framework.kernels.arrow import ARROW_MIN_VALUES, coded_parts, numeric_array, scalar, string_array, to_numpy
from er_framework.kernels.em import level_of
from er_framework.kernels.parallel import map_ordered
from er_framework.kernels.records_bounds import (
    BOUNDED_SCORERS,
    BagSignatures,
    bag_overlap,
    bag_signatures,
    similarity_upper_bound,
)
from er_plugins.normalize_text import float_integer

if TYPE_CHECKING:  # pyarrow (~35 ms) is imported where it is used (start-up)
    import pyarrow as pa

__all__ = [
    "BOUND_MARGIN",
    "CHUNK_PAIRS",
    "SCORERS",
    "Scorer",
    "FieldColumn",
    "field_columns",
    "field_label",
    "pair_chunks",
    "rows_of",
]

#: pairs compared per chunk (bounds the temporaries: about 100 bytes per pair and field)
CHUNK_PAIRS = 1 << 20
#: a pair is left uncompared only when its similarity bound is this far below the lowest level
#: (0..100 scale; far above the rounding error of the bound and of rapidfuzz's scores)
BOUND_MARGIN = 1e-6

Scorer = Literal["ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "jaro_winkler", "levenshtein", "exact", "digits"]

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


def field_label(f: str | list[str], name: str | None) -> str:
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
            raise ValueError(f"field(s) {missing_cols} not in the records; available: {sorted(records.fields)}")
        self.scorer = scorer
        if len(rows) < ARROW_MIN_VALUES:
            self._prepare_in_python(records, columns, scorer, rows, last_digits, bounds)
        else:
            self._prepare_in_arrow(records, columns, scorer, rows, last_digits, bounds)

    def _prepare_in_python(
        self,
        records: Records,
        columns: Sequence[str],
        scorer: str,
        rows: npt.NDArray[np.int64],
        last_digits: int | None,
        bounds: bool,
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
        self,
        records: Records,
        columns: Sequence[str],
        scorer: str,
        rows: npt.NDArray[np.int64],
        last_digits: int | None,
        bounds: bool,
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
        self,
        dictionary: pa.Array | list[str],
        n: int,
        rows: npt.NDArray[np.int64],
        row_codes: npt.NDArray[np.integer[Any]] | list[int],
        scorer: str,
        bounds: bool,
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

    def bag_bounds(self) -> BagSignatures | None:
        """The values' character signatures (:attr:`bounds`, or made now whatever the column's scorer: a comparison
        ladder bounds each of its scorers with them); None without values."""
        if self.bounds is None and len(self.dictionary):
            self.bounds = bag_signatures(*_utf8_buffers(self.dictionary))
        return self.bounds

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
        self, a: npt.NDArray[np.integer[Any]], b: npt.NDArray[np.integer[Any]], workers: int, scorer: str | None = None
    ) -> npt.NDArray[np.float64]:
        """Similarity 0..100 of the value pairs ``(values[a[k]], values[b[k]])`` (rapidfuzz, on ``workers`` threads),
        by the column's scorer or another similarity scorer of :data:`SCORERS` (``scorer``; a comparison ladder
        compares one column with several)."""

        fn, mult = SCORERS[self.scorer if scorer is None else scorer]
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
    ``last_digits``; a whole number written as a float is its integer: ``1999.0`` -> ``1999``, see
    :func:`~er_plugins.normalize_text.float_integer`), blank -> ``None``; other scorers' values unchanged."""
    if scorer != "digits":
        return values
    out = [None if v is None else _NOT_DIGITS.sub("", _integer_text(v)) for v in values]
    if last_digits is not None:
        out = [None if v is None else v[-last_digits:] for v in out]
    return [v or None for v in out]


#: where a value may be a float literal (a digit next to a point or an exponent): those are checked in Python
_MAYBE_FLOAT = r"[0-9][.eE]|\.[0-9]"


def _integer_text(v: str) -> str:
    """``v``, or the integer it stands for when it is a whole number written as a float (``1999.0``)."""
    if "." in v or "e" in v or "E" in v:
        return float_integer(v) or v
    return v


def _encoded(values: list[str | None]) -> tuple[list[str], list[int]]:
    """Arrow's ``dictionary_encode`` in Python: the distinct present values in order of first appearance, and each
    value's index among them (-1 for ``None``)."""
    distinct = dict.fromkeys(values)
    distinct.pop(None, None)
    index: dict[str | None, int] = {v: i for i, v in enumerate(distinct)}
    index[None] = -1
    return cast(list[str], list(distinct)), list(map(index.__getitem__, values))  # None popped above


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
        maybe = pc.fill_null(pc.match_substring_regex(v, _MAYBE_FLOAT), scalar(False))
        if pc.any(maybe).as_py():  # whole numbers written as floats (1999.0): their integer, as in Python
            v = pc.replace_with_mask(v, maybe, pa.array([_integer_text(x) for x in pc.filter(v, maybe).to_pylist()], v.type))
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


def pair_chunks(n: int) -> list[tuple[int, int]]:
    size = CHUNK_PAIRS  # read at call time
    return [(a, min(a + size, n)) for a in range(0, n, size)]
