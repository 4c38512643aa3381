"""Plugin: blockers for structured (customer) records.

Components:

* ``field_hash`` – standard blocking: one bucket per distinct value of a key
  (a field, or several fields taken together, in order or ``{any_order:
  [fields]}`` as a set of values); records sharing the value of any key are
  candidates. Oversized buckets (a placeholder phone, a very
  common name) are purged and reported.
* ``sorted_neighbourhood`` – sort the records by a key (fields, optionally
  cut to a prefix) and pair every record with the next ``window - 1``
  records in that order (Hernández & Stolfo); several keys = multi-pass,
  candidates unioned; a key ``{any_order: [fields]}`` takes the record's values
  of its fields in sorted order (swapped first and last names sort together).

Both read the record fields (``needs = {"fields"}``): values are compared as
given (the engine normalizes them before blocking); a missing value is
``None``, and the empty string is treated as missing too (there is never a
``""`` bucket).

Exactness. Values are grouped exactly, never by a hash alone: every field
column is factorized by Arrow's hash table (which compares the strings
themselves) and its distinct values are sorted, so that each value gets a
dense, order-preserving integer code (the rank of the value among the
column's distinct values, in code-point order),
and a key of several fields is the lexicographic tuple of its fields' codes,
packed into one int64 (re-ranked when the packing would overflow). So a
bucket is exactly one distinct value (tuple), with no collisions, and the
sort order of ``sorted_neighbourhood`` is the lexicographic order of the
field tuple (= the order of the fields' concatenation with a separator below
every character).

Link mode (``batch.cross_source_only``): records are sorted by source inside
each bucket, and each record is paired only with the members of the later
source runs of its bucket — within-source pairs of a bucket are never
materialized. In ``sorted_neighbourhood`` the window pairs of each offset are
masked by source before they are gathered.

Everything is whole-array numpy (one pass per field, key and window offset,
never a Python loop per record, bucket or pair); pairs are packed into uint64
(``left << 32 | right``), so a batch holds fewer than 2**32 records.

Bounded memory. Both blockers count the pairs a setting will create before
making any (exactly for ``field_hash``: the kept buckets' sizes; at most
``n (window - 1)`` per key for ``sorted_neighbourhood``) and stop with an
:class:`~er_framework.errors.InputError` giving the estimate and a fix when
the count exceeds ``max_pairs`` or when the pairs (about
:data:`BYTES_PER_PAIR` bytes each while blocking) would not fit in the
memory still available to the process (:func:`available_memory`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.dtypes import StringDType
from pydantic import Field, ValidationError, field_validator, model_validator

from er_framework import hookimpl
from er_framework.capabilities import Blocked, GroupedKeys, LimitedKeys, Reporting, Windowed
from er_framework.components import Blocker, FieldRef, Params
from er_framework.data import Batch, Pairs, Records
from er_framework.errors import InputError, Problem
from er_framework.kernels.arrow import ARROW_MIN_VALUES, coded_parts, string_array, to_numpy
from er_framework.kernels.groups import pack_pairs, sort_unique, unpack_pairs
from er_framework.kernels.hashing import hash_strings, mix64
from er_framework.kernels.parallel import map_ordered
from er_framework.kernels.records_memory import release_free_memory
from er_framework.memory import available_memory, size_text

__all__ = [
    "FieldHashParams",
    "FieldHash",
    "SortedNeighbourhoodParams",
    "AnyOrderKey",
    "KeySpec",
    "key_spec",
    "key_values",
    "any_order_codes",
    "any_order_values",
    "SortedNeighbourhood",
    "BYTES_PER_PAIR",
    "DEFAULT_MAX_PAIRS",
    "MAX_WINDOW",
    "PairLimit",
    "available_memory",
    "field_codes",
    "field_codes_numpy",
    "key_codes",
    "sort_strings",
    "window_pairs",
    "er_register_blockers",
]

Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]

#: pairs generated per step when enumerating a key's buckets (bounds temporary memory: ~60 bytes per pair)
PAIR_CHUNK = 1 << 21
#: largest fixed-width (``U``) copy of a column, in bytes, used for the sort;
#: above it the variable-width StringDType array is sorted instead (same order)
FIXED_WIDTH_BUDGET = 1 << 29
#: characters of a purged bucket's value shown in the report
VALUE_CHARS = 40
#: purged buckets listed in the report (largest first)
TOP_PURGED = 10

#: default ``max_pairs`` of both blockers (as grid_bits): pairs generated, with repeats across keys; about 4 GB
#: while blocking (the customers job at 2 x 200k records generates 1.2 M)
DEFAULT_MAX_PAIRS = 50_000_000
#: memory one generated pair takes while blocking: packed (8 B), concatenated (8 B), sorted and made unique,
#: unpacked into left and right (16 B), the union with other blockers' pairs … (measured: a peak of 6.1 GB
#: for 77 M pairs, field_hash on city of 2 x 200k customers)
BYTES_PER_PAIR = 80
#: share of the memory still available that the pairs may take
MEMORY_SHARE = 0.5
#: largest ``window`` of sorted_neighbourhood (windows are typically 3 to 50)
MAX_WINDOW = 10_000

_PACK_LIMIT = 1 << 62
#: how a value's U+0000 and U+0001 are written where numpy sorts strings (order kept: U+0000 < U+0001 < U+0002 ...;
#: one-to-one; no NUL left, which numpy's StringDType sort does not order)
ESCAPES = {"\x00": "\x01\x02", "\x01": "\x01\x03"}


# ---------------------------------------------------------------------------
# kernels


def _column(records: Records, name: str, who: str) -> Sequence[str | None]:
    col = records.fields.get(name)
    if col is None:
        have = ", ".join(sorted(records.fields)) or "none"
        raise ValueError(f"{who}: the records have no field {name!r} (fields: {have})")
    return col


def field_codes(values: Sequence[str | None], prefix: int | None = None) -> tuple[Int64Array, int]:
    """Dense order-preserving codes of a column: ``(codes, n_distinct)``.

    ``codes[i]`` is the rank of ``values[i]`` (cut to its first ``prefix``
    characters when given) among the column's distinct present values in
    code-point order, or -1 when the value is missing (``None`` or ``""``).
    Equal strings get equal codes and different strings different codes
    (no hash collision can merge two values).

    A column of :data:`ARROW_MIN_VALUES` strings and ``None`` or more is
    factorized by Arrow (its hash table compares the bytes: exact) and only the
    distinct values are sorted (UTF-8 byte order is code-point order); their
    ranks are then the codes. A shorter column, any other column or one Arrow
    cannot hold (such as a lone surrogate) takes :func:`field_codes_numpy`,
    the same codes by sorting the whole column.
    """
    coded = field_codes_arrow(values, prefix) if len(values) >= ARROW_MIN_VALUES else None
    return coded if coded is not None else field_codes_numpy(values, prefix)


def field_codes_arrow(values: Sequence[str | None], prefix: int | None = None) -> tuple[Int64Array, int] | None:
    """:func:`field_codes` by Arrow's factorization, or ``None`` for a column Arrow cannot hold."""
    n = len(values)
    if n == 0:
        return None
    import pyarrow as pa  # here, not at the top: er validate and start-up stay light
    import pyarrow.compute as pc

    parts = coded_parts(values)  # a normalized column: the distinct values are ranked, then gathered by code
    if parts is not None and np.count_nonzero(np.bincount(parts[1], minlength=len(parts[0]))) != len(parts[0]):
        parts = None  # a distinct value no row has would count as one: the dense codes need every one used
    try:  # list -> Arrow without pyarrow's pandas-importing conversion; TypeError for a value not str/None
        arr = string_array(values if parts is None else parts[0], large=None)
    except (pa.ArrowException, TypeError, UnicodeError):
        return None
    if prefix is not None:
        arr = pc.utf8_slice_codeunits(arr, 0, int(prefix))
    enc = pc.dictionary_encode(arr)
    dictionary = enc.dictionary
    k = len(dictionary)
    if k == 0:
        return np.full(n, -1, dtype=np.int64), 0
    order = to_numpy(pc.array_sort_indices(dictionary))  # ascending, in UTF-8 byte (= code-point) order
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k, dtype=np.int64)
    first = dictionary[int(order[0])].as_py()
    if first == "":  # the empty string is missing, and the smallest value: the others move down by one
        rank -= 1
        k -= 1
    codes = np.append(rank, np.int64(-1))[to_numpy(enc.indices, null=-1)]
    if parts is not None:
        codes = codes[parts[1]]
    del arr, enc, dictionary
    release_free_memory()  # the allocators keep freed memory (the strings, the hash table)
    return codes.astype(np.int64, copy=False), k


def field_codes_numpy(values: Sequence[str | None], prefix: int | None = None) -> tuple[Int64Array, int]:
    """:func:`field_codes` by sorting the whole column with numpy (``StringDType``); any column of values."""
    n = len(values)
    codes = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return codes, 0
    # `not v` is True for None and "" (C-level map, no Python loop body)
    missing = np.fromiter(map(operator.not_, values), dtype=bool, count=n)
    present = np.flatnonzero(~missing)
    if len(present) == 0:
        return codes, 0
    if "\x00" in "".join(filter(None, values)):
        # numpy neither sorts nor slices NUL characters in StringDType right (distinct values were
        # merged) nor keeps a trailing one in U strings: rank the values with U+0000 and U+0001 escaped
        # (:data:`ESCAPES`, one-to-one and order-preserving); rare, so in Python
        table = str.maketrans(ESCAPES)
        cut = prefix if prefix is not None else None
        arr = np.array([str(values[i])[:cut].translate(table) for i in present.tolist()], dtype=StringDType(na_object=None))
    else:
        arr = np.array(values, dtype=StringDType(na_object=None))[present]
        if prefix is not None:
            arr = np.strings.slice(arr, 0, int(prefix))
    width = int(np.strings.str_len(arr).max())
    # a fixed-width copy sorts ~2x faster in the same code-point order
    if len(arr) * width * 4 <= FIXED_WIDTH_BUDGET:
        arr = arr.astype(f"U{width}")
    order = np.argsort(arr, kind="stable")
    s = arr[order]
    new = np.empty(len(s), dtype=bool)
    new[0] = False
    np.not_equal(s[1:], s[:-1], out=new[1:])
    ranks = np.cumsum(new, dtype=np.int64)
    codes[present[order]] = ranks
    return codes, int(ranks[-1]) + 1


def _dense_rank(keys: Int64Array) -> tuple[Int64Array, int]:
    """Order-preserving dense ranks of non-negative int64 keys (-1 stays -1)."""
    out = np.full(len(keys), -1, dtype=np.int64)
    present = np.flatnonzero(keys >= 0)
    if len(present) == 0:
        return out, 0
    k = keys[present]
    order = np.argsort(k, kind="stable")
    s = k[order]
    new = np.empty(len(s), dtype=bool)
    new[0] = False
    np.not_equal(s[1:], s[:-1], out=new[1:])
    ranks = np.cumsum(new, dtype=np.int64)
    out[present[order]] = ranks
    return out, int(ranks[-1]) + 1


def key_codes(parts: Sequence[tuple[Int64Array, int]]) -> Int64Array:
    """Codes of a key of several fields: the lexicographic tuple of their codes.

    ``parts`` holds each field's ``(codes, n_distinct)`` (:func:`field_codes`).
    The result is -1 where any field is missing; otherwise equal exactly when
    every field is equal, and ordered like the tuples (``k * n_next + c``,
    re-ranked densely first whenever the product could exceed 2**62).
    """
    key, size = parts[0]
    key = key.copy()
    for codes, n_next in parts[1:]:
        if size * max(n_next, 1) >= _PACK_LIMIT:
            key, size = _dense_rank(key)
        missing = (key < 0) | (codes < 0)
        key = key * max(n_next, 1) + codes
        key[missing] = -1
        size = size * max(n_next, 1)
    return key


def _runs(sorted_keys: npt.NDArray[Any]) -> tuple[Int64Array, Int64Array]:
    """Starts and sizes of runs of equal values in a sorted array."""
    m = len(sorted_keys)
    if m == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy()
    new = np.empty(m, dtype=bool)
    new[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
    starts = np.flatnonzero(new).astype(np.int64)
    sizes = np.diff(np.append(starts, np.int64(m))).astype(np.int64, copy=False)  # int64 already: no copy
    return starts, sizes


def _source_order(rows: Int64Array, source: npt.NDArray[np.int32]) -> Int64Array:
    """``rows`` stably sorted by source (unchanged when already in source order)."""
    src = source[rows]
    if len(src) < 2 or bool(np.all(src[1:] >= src[:-1])):
        return rows
    return rows[np.argsort(src, kind="stable")]


def _emit_pairs(members: Int64Array, first: Int64Array, count: Int64Array, chunk: int = PAIR_CHUNK) -> list[UInt64Array]:
    """Packed pairs ``(members[p], members[first[p] + j])`` for ``j < count[p]``.

    Every element ``p`` of ``members`` is paired with the ``count[p]``
    consecutive members starting at ``first[p]``; pairs come out packed
    (``min << 32 | max``), produced ``chunk`` pairs at a time (whole elements
    per step, so a step may exceed ``chunk`` by less than one element's pairs).
    """
    out: list[UInt64Array] = []
    total = int(count.sum())
    if total == 0:
        return out
    cum = np.cumsum(count)
    # element boundaries so that each step holds about `chunk` pairs
    cuts = np.searchsorted(cum, np.arange(chunk, total, chunk, dtype=np.int64), side="left") + 1
    bounds = np.unique(np.concatenate([[0], cuts, [len(count)]]))
    for e0, e1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        c = count[e0:e1]
        p = int(c.sum())
        if p == 0:
            continue
        excl = np.cumsum(c) - c
        left_pos = np.repeat(np.arange(e0, e1, dtype=np.int64), c)
        right_pos = np.repeat(first[e0:e1] - excl, c) + np.arange(p, dtype=np.int64)
        a = members[left_pos]
        b = members[right_pos]
        out.append(pack_pairs(np.minimum(a, b), np.maximum(a, b)))
    return out


def _union(packed: list[UInt64Array]) -> Pairs:
    """Normalized pairs from packed keys of several keys/offsets (sorted, unique); empties ``packed``
    (the parts are freed as soon as they are joined: memory for the keys about twice, not four times)."""
    if not packed:
        return Pairs.empty()
    keys = np.concatenate(packed) if len(packed) > 1 else packed[0].copy()
    packed.clear()
    return Pairs(*unpack_pairs(sort_unique(keys)))


# ---------------------------------------------------------------------------
# the pair limit


@dataclass
class PairLimit:
    """Counts the pairs a blocker is about to make and refuses, before they exist, more than ``max_pairs``
    or more than :data:`MEMORY_SHARE` of :func:`available_memory` (at :data:`BYTES_PER_PAIR` each)."""

    blocker: str
    max_pairs: int | None
    total: int = 0

    def add(self, pairs: int, what: str, path: str, fix: str) -> None:
        """``pairs`` more pairs for ``what`` (e.g. "key 'last_name'"); raise :class:`InputError` over the limit."""
        self.total += int(pairs)
        need = self.total * BYTES_PER_PAIR
        head = f"{self.blocker} {what} would create about {self.total:.2g} candidate pairs (~{size_text(need)})"
        if self.max_pairs is not None and self.total > self.max_pairs:
            raise InputError(
                Problem(
                    where=f"blocker {self.blocker}",
                    path=path,
                    message=f"{head}, more than max_pairs = {self.max_pairs:,}",
                    fix=f"{fix}; or raise max_pairs if the memory allows (~{BYTES_PER_PAIR} bytes per pair)",
                )
            )
        avail = available_memory()
        if avail is not None and need > MEMORY_SHARE * avail:
            raise InputError(
                Problem(
                    where=f"blocker {self.blocker}",
                    path=path,
                    message=f"{head}, more than this process can hold ({size_text(avail)} of memory available)",
                    fix=fix,
                )
            )


# ---------------------------------------------------------------------------
# keys


class AnyOrderKey(Params):
    """A key whose fields are taken in any order: each record's values of them are sorted first."""

    any_order: list[FieldRef] = Field(
        min_length=2,
        description="fields whose values form the key in sorted order, whichever field holds which value "
        "(e.g. [given_name, surname]: 'smith john' and 'john smith' get one key)",
    )

    @field_validator("any_order")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if any(not f for f in v):
            raise ValueError("field names must not be empty")
        if len(set(v)) != len(v):
            raise ValueError(f"key {v!r} names a field twice")
        return v


@dataclass(frozen=True)
class KeySpec:
    """One blocking key: its fields, taken in this order or (``any_order``) as the sorted tuple of the
    record's values of them."""

    fields: tuple[str, ...]
    any_order: bool = False

    @property
    def label(self) -> str:
        joined = "+".join(self.fields)
        return f"any_order({joined})" if self.any_order else joined


def key_spec(key: str | list[str] | AnyOrderKey) -> KeySpec:
    """A key as configured (a field, a list of fields, or ``{any_order: [fields]}``) as a :class:`KeySpec`."""
    if isinstance(key, AnyOrderKey):
        return KeySpec(tuple(key.any_order), True)
    return KeySpec((key,) if isinstance(key, str) else tuple(key))


def any_order_checked(v: Any) -> Any:
    """Validate every mapping of ``v`` (a key or a list of keys) as an :class:`AnyOrderKey` first, so that a
    wrong one gets its own message and not also "expected a list" from the other arms of the union."""

    def one(k: Any) -> Any:
        if not isinstance(k, dict):
            return k
        try:
            return AnyOrderKey.model_validate(k)
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'key'}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"an any-order key is {{any_order: [two or more fields]}} ({detail})") from None

    return [one(k) for k in v] if isinstance(v, list) else one(v)


def key_values(records: Records, spec: KeySpec, row: int) -> list[str]:
    """The values of one record's key in the key's order (sorted for an any-order key); a report shows
    them joined by `` | ``."""
    vals = [str(records.fields[name][row]) for name in spec.fields]
    return sorted(vals) if spec.any_order else vals


# ---------------------------------------------------------------------------
# field_hash


class FieldHashParams(Params):
    fields: list[FieldRef | list[FieldRef] | AnyOrderKey] = Field(
        min_length=1,
        description=(
            "blocking keys: a field, a list of fields whose values together form one key (e.g. [last_name, zip]), "
            "or {any_order: [fields]} (their values as a set: swapped names share a bucket); records sharing "
            "any key's value are candidates"
        ),
    )
    max_block_size: int | None = Field(
        default=500,
        ge=2,
        description="buckets with more records than this are purged (not paired) and reported; null: no cap",
    )
    max_pairs: int | None = Field(
        default=DEFAULT_MAX_PAIRS,
        ge=1,
        description="stop with an error, before any pair is made, when the kept buckets of all keys hold more "
        "pairs than this (~80 bytes each while blocking); null: no limit (the pairs must still fit in memory)",
    )

    @field_validator("fields", mode="before")
    @classmethod
    def _any_order_keys(cls, v: Any) -> Any:
        return any_order_checked(v)

    @field_validator("fields")
    @classmethod
    def _keys_named(cls, v: list[Any]) -> list[Any]:
        for key in v:
            names = list(key_spec(key).fields)
            if not names:
                raise ValueError("a key of several fields needs at least one field")
            if any(not name for name in names):
                raise ValueError("field names must not be empty")
            if len(set(names)) != len(names):
                raise ValueError(f"key {names!r} names a field twice")
        return v

    def keys(self) -> list[KeySpec]:
        return [key_spec(k) for k in self.fields]


class FieldHash(Reporting, GroupedKeys, LimitedKeys, Blocker[FieldHashParams]):
    """Standard blocking on exact key values (one bucket per distinct value).

    Each entry of ``fields`` is one key ("hash function"): a field, a list
    of fields combined into one value, or ``{any_order: [fields]}``: the
    fields' values as a sorted tuple (a record with given name and surname
    swapped shares the bucket). A record whose value of any field of
    a key is missing is not bucketed for that key. Pairs of a bucket of size
    ``m`` are all ``m (m-1)/2`` pairs (dedup) or its cross-source pairs (link
    mode, generated across sources only); buckets larger than
    ``max_block_size`` are purged, and the report lists per key the distinct
    values, buckets, pairs generated and the purged buckets (count, records,
    the pairs they would have produced, and the largest ten with their value).
    Candidates of all keys are unioned.
    """

    name = "field_hash"
    summary = "standard blocking: records sharing the exact value of any key (field or field tuple); oversized buckets purged"
    Params = FieldHashParams
    needs = frozenset({"fields"})

    @classmethod
    def agreement_keys(cls, params: Any) -> list[list[str]]:
        """Every key's fields (an ``any_order`` key's too: a pair equal on them shares its bucket)."""
        assert isinstance(params, FieldHashParams)
        return [[k] if isinstance(k, str) else list(k.any_order) if isinstance(k, AnyOrderKey) else list(k) for k in params.fields]

    def block(self, batch: Batch) -> Blocked:
        p = self.params
        records = batch.records
        n = len(records)
        link = bool(batch.cross_source_only)
        # codes of every field used, one thread per field (the string sorts release the GIL)
        used = list(dict.fromkeys(name for key in p.keys() if not key.any_order for name in key.fields))
        columns = [_column(records, name, self.name) for name in used]
        cache = dict(zip(used, map_ordered(field_codes, columns, self.context.workers)))
        release_free_memory()  # what the threads' conversions freed while another was still running
        packed: list[UInt64Array] = []
        per_key: list[dict[str, Any]] = []
        limit = PairLimit(self.name, p.max_pairs)
        for key in p.keys():
            if key.any_order:
                cols = [_column(records, name, self.name) for name in key.fields]
                codes = key_codes(any_order_codes(cols, [None] * len(cols)))
            else:
                codes = key_codes([cache[name] for name in key.fields])
            out, stats = self._block(records, key, codes, link, p.max_block_size, limit)
            packed.extend(out)
            per_key.append({"key": key.label, **stats})
        raw = int(sum(len(x) for x in packed))
        pairs = _union(packed)
        release_free_memory()  # the sorting and enumerating temporaries, before the next stage's
        report: dict[str, Any] = {
            "records": n,
            "mode": "link" if link else "dedup",
            "per_key": per_key,
            "raw_pairs": raw,
            "candidates": len(pairs),
        }
        return Blocked(pairs, report)

    @staticmethod
    def _block(
        records: Records, key: KeySpec, codes: Int64Array, link: bool, cap: int | None, limit: PairLimit | None = None
    ) -> tuple[list[UInt64Array], dict[str, Any]]:
        names = list(key.fields)
        rows = np.flatnonzero(codes >= 0).astype(np.int64)
        if link:
            rows = _source_order(rows, records.source)
        order = rows[np.argsort(codes[rows], kind="stable")]  # by key, then source, then index
        k = codes[order]
        m = len(order)
        starts, sizes = _runs(k)
        ends_elem = np.repeat(starts + sizes, sizes)  # end of each element's bucket
        if link:
            src = records.source[order].astype(np.int64)
            # runs of (key, source): an element pairs with the later source runs of its bucket
            new = np.empty(m, dtype=bool)
            if m:
                new[0] = True
                new[1:] = (k[1:] != k[:-1]) | (src[1:] != src[:-1])
            sub_starts = np.flatnonzero(new).astype(np.int64)
            sub_sizes = np.diff(np.append(sub_starts, np.int64(m))).astype(np.int64, copy=False)
            first = np.repeat(sub_starts + sub_sizes, sub_sizes)
        else:
            first = np.arange(1, m + 1, dtype=np.int64)
        count = ends_elem - first
        bucket_pairs = np.add.reduceat(count, starts) if len(starts) else np.zeros(0, dtype=np.int64)
        purged = sizes > cap if cap is not None else np.zeros(len(sizes), dtype=bool)
        if purged.any():
            count = count.copy()
            count[np.repeat(purged, sizes)] = 0
        if limit is not None:  # the exact count of this key's pairs, before any is made
            kept = sizes[~purged]
            largest = int(kept.max()) if len(kept) else 0
            g = int(np.argmax(np.where(purged, -1, sizes))) if len(sizes) else 0
            value = " | ".join(key_values(records, key, int(order[starts[g]]))) if len(sizes) else ""
            now = f"now {cap:,}" if cap is not None else "now null: no cap"
            limit.add(
                int(count.sum()),
                f"key {key.label!r}",
                "max_block_size",
                f"its largest kept bucket holds {largest:,} records ({value[:VALUE_CHARS]!r}); set max_block_size "
                f"({now}) to purge large buckets, or make the key more selective (add a field: [{names[0]}, ...])",
            )
        out = _emit_pairs(order, first, count)
        # report
        top: list[dict[str, Any]] = []
        purged_idx = np.flatnonzero(purged)
        if len(purged_idx):
            # largest first; ties in key order (the values' lexicographic order)
            pick = purged_idx[np.argsort(-sizes[purged_idx], kind="stable")[:TOP_PURGED]]
            for g in pick.tolist():
                value = " | ".join(key_values(records, key, int(order[starts[g]])))
                top.append({"value": value[:VALUE_CHARS], "size": int(sizes[g])})
        stats = {
            "fields": list(names),
            "records_keyed": int(m),
            "records_missing": int(len(codes) - m),
            "distinct_values": int(len(sizes)),
            "buckets": int(np.count_nonzero(sizes >= 2)),
            "largest_bucket": int(sizes.max()) if len(sizes) else 0,
            "pairs_generated": int(count.sum()),
            "purged": {
                "buckets": int(len(purged_idx)),
                "records": int(sizes[purged_idx].sum()),
                "pairs_cost": int(bucket_pairs[purged_idx].sum()),
                "largest": top,
            },
        }
        return out, stats

    def _keyed(self, records: Records) -> list[tuple[KeySpec, list[Sequence[str | None]], list[int]]]:
        """Per key: the key, its fields' columns and the rows whose key fields are all present (whole-array:
        lookup_keys, lookup_groups and partition_report each compute it, nothing is kept between calls)."""
        n = len(records)
        out = []
        for key in self.params.keys():
            cols = [_column(records, name, self.name) for name in key.fields]
            present = np.ones(n, dtype=bool)
            for col in cols:
                present &= np.fromiter(map(bool, col), dtype=bool, count=n)
            out.append((key, cols, np.flatnonzero(present).tolist()))
        return out

    def lookup_keys(self, batch: Batch) -> tuple[Int64Array, npt.NDArray[np.uint64]]:
        """One bucket id per key and record whose key fields are all present.

        The id is a 64-bit hash of the key's number and its values joined by
        U+001F, so different values share a bucket with probability ~2**-64
        (``candidates`` groups the strings themselves: no collisions at all).
        """
        rows_out: list[Int64Array] = []
        keys_out: list[npt.NDArray[np.uint64]] = []
        for j, (key, cols, rows) in enumerate(self._keyed(batch.records)):
            arrange = sorted if key.any_order else list
            text = [f"{j}\x1e" + "\x1f".join(arrange(str(col[i]) for col in cols)) for i in rows]
            rows_out.append(np.asarray(rows, dtype=np.int64))
            keys_out.append(mix64(hash_strings(text)) if text else np.zeros(0, dtype=np.uint64))
        return np.concatenate(rows_out), np.concatenate(keys_out)

    def lookup_groups(self, batch: Batch) -> Int64Array:
        """The key (its number in ``fields``) of every entry of :meth:`lookup_keys`."""
        keyed = self._keyed(batch.records)
        return np.repeat(np.arange(len(keyed), dtype=np.int64), [len(rows) for _, _, rows in keyed])

    def partition_report(self, batch: Batch) -> dict[str, Any]:
        """The partition's records, and per key those keyed (every key field present)."""
        keyed = [len(rows) for _, _, rows in self._keyed(batch.records)]
        return {"records": len(batch.records), "link": bool(batch.cross_source_only), "keyed": keyed}

    def merge_reports(self, reports: list[dict[str, Any]], buckets: dict[str, Any]) -> dict[str, Any]:
        """The report of :meth:`block` from the partitions' counts and the statistics of every bucket
        of :meth:`lookup_keys` per key (group): the same numbers, and the largest purged buckets with
        their value (the first member's, in the key's order, ties in the values' order, as locally)."""
        n = sum(int(r["records"]) for r in reports)
        link = any(bool(r["link"]) for r in reports) if reports else self.context.mode == "link"
        groups: dict[int, dict[str, int]] = buckets.get("groups", {})
        per_key: list[dict[str, Any]] = []
        for j, key in enumerate(self.params.keys()):
            keyed = sum(int(r["keyed"][j]) for r in reports)
            g = groups.get(j, {})
            purged = [(-int(o["size"]), key_values(o["record"], key, 0)) for o in buckets.get("oversized", []) if int(o["group"]) == j]
            purged.sort()
            per_key.append(
                {
                    "key": key.label,
                    "fields": list(key.fields),
                    "records_keyed": keyed,
                    "records_missing": n - keyed,
                    "distinct_values": int(g.get("distinct", 0)),
                    "buckets": int(g.get("buckets", 0)),
                    "largest_bucket": int(g.get("largest_bucket", 0)),
                    "pairs_generated": int(g.get("pairs", 0)),
                    "purged": {
                        "buckets": int(g.get("oversized_buckets", 0)),
                        "records": int(g.get("oversized_records", 0)),
                        "pairs_cost": int(g.get("oversized_pairs", 0)),
                        "largest": [{"value": " | ".join(vals)[:VALUE_CHARS], "size": -neg} for neg, vals in purged[:TOP_PURGED]],
                    },
                }
            )
        return {
            "records": n,
            "mode": "link" if link else "dedup",
            "per_key": per_key,
            "raw_pairs": sum(int(k["pairs_generated"]) for k in per_key),
            "candidates": int(buckets.get("distinct_pairs", 0)),
        }

    def lookup_cap(self) -> int | None:
        return self.params.max_block_size

    def check_lookup_pairs(self, pairs: int, largest_bucket: int) -> None:
        """The limit of :meth:`candidates` on the pairs of every kept bucket (an executor's lookup path)."""
        p = self.params
        now = f"now {p.max_block_size:,}" if p.max_block_size is not None else "now null: no cap"
        PairLimit(self.name, p.max_pairs).add(
            pairs,
            "(all keys)",
            "max_block_size",
            f"its largest kept bucket holds {largest_bucket:,} records; set max_block_size ({now}) to purge large "
            "buckets, or make the keys more selective",
        )


# ---------------------------------------------------------------------------
# sorted_neighbourhood


class SortedNeighbourhoodParams(Params):
    key: list[FieldRef] | AnyOrderKey | None = Field(
        default=None,
        description="sort key: fields in order (compared field by field), or {any_order: [fields]} (the record's "
        "values of the fields sorted first, so their order does not matter); set this or 'keys'",
    )
    keys: list[list[FieldRef] | AnyOrderKey] | None = Field(
        default=None,
        min_length=1,
        description="several sort keys (multi-pass), each a list of fields or {any_order: [fields]}: each sorted "
        "and windowed on its own, candidates unioned",
    )
    prefix: dict[FieldRef, int] = Field(
        default_factory=dict,
        description="optional per-field prefix length: the field's first N characters enter the key (in an "
        "any_order key each value is cut to its field's prefix before the values are sorted)",
    )
    window: int = Field(
        default=10,
        ge=2,
        description=f"each record is paired with the next window - 1 records in sorted order (at most {MAX_WINDOW:,})",
    )
    max_pairs: int | None = Field(
        default=DEFAULT_MAX_PAIRS,
        ge=1,
        description="stop with an error, before any pair is made, when the keys' windows hold more pairs than "
        "this (records x (window - 1) per key; ~80 bytes each while blocking); null: no limit (the pairs must "
        "still fit in memory)",
    )

    @field_validator("key", "keys", mode="before")
    @classmethod
    def _any_order_keys(cls, v: Any) -> Any:
        return any_order_checked(v)

    @field_validator("window")
    @classmethod
    def _sane_window(cls, v: int) -> int:
        if v > MAX_WINDOW:
            raise ValueError(
                f"window {v:,} is above the maximum {MAX_WINDOW:,}: each record is paired with the next window - 1 "
                f"records, so n records make about n x {v - 1:,} candidate pairs; windows are typically 3 to 50 "
                "(for more candidates add sort keys: keys: [[...], [...]])"
            )
        return v

    @field_validator("prefix")
    @classmethod
    def _positive(cls, v: dict[str, int]) -> dict[str, int]:
        bad = {k: x for k, x in v.items() if x < 1}
        if bad:
            raise ValueError(f"prefix lengths must be >= 1, got {bad}")
        return v

    @model_validator(mode="after")
    def _one_of(self) -> SortedNeighbourhoodParams:
        if (self.key is None) == (self.keys is None):
            raise ValueError("set exactly one of 'key' (one sort key) and 'keys' (several)")
        for k in self.sort_keys():
            if not k.fields:
                raise ValueError("a sort key needs at least one field")
            if any(not f for f in k.fields):
                raise ValueError("field names must not be empty")
        used = {f for k in self.sort_keys() for f in k.fields}
        unknown = sorted(set(self.prefix) - used)
        if unknown:
            raise ValueError(f"prefix names fields that are in no key: {unknown}")
        return self

    def sort_keys(self) -> list[KeySpec]:
        return [key_spec(k) for k in ([self.key] if self.key is not None else list(self.keys or []))]


class SortedNeighbourhood(Reporting, Windowed, Blocker[SortedNeighbourhoodParams]):
    """Sorted neighbourhood: sort by a key, pair records within a sliding window.

    The key of a record is the tuple of its key fields (each cut to
    ``prefix[field]`` characters when given), compared field by field in
    code-point order — the order of the fields' concatenation with a
    separator below every character. A record missing any key field is left
    out of that key's sort. Ties keep record order (stable sort). Each record
    is paired with the next ``window - 1`` records of the sorted order; in
    link mode only the cross-source ones among those (the window slides over
    the merged order of all sources). ``keys`` runs several passes, one per
    key, and unions their candidates. A key ``{any_order: [given_name,
    surname]}`` sorts by the record's values of those fields in sorted order
    (its smallest value first), so a record whose given name and surname are
    swapped gets the same key (Christen 2012, ch. 4: swapped name fields are
    among the commonest errors).
    """

    name = "sorted_neighbourhood"
    summary = "sorted neighbourhood: sort by a (prefix) key, pair each record with the next window-1 records; multi-pass via keys"
    Params = SortedNeighbourhoodParams
    needs = frozenset({"fields"})

    def block(self, batch: Batch) -> Blocked:
        p = self.params
        records = batch.records
        link = bool(batch.cross_source_only)
        cache: dict[str, tuple[Int64Array, int]] = {}
        packed: list[UInt64Array] = []
        per_key: list[dict[str, Any]] = []
        keyed: list[Int64Array] = []
        for sk in p.sort_keys():
            if sk.any_order:
                cols = [_column(records, name, self.name) for name in sk.fields]
                keyed.append(key_codes(any_order_codes(cols, [p.prefix.get(name) for name in sk.fields])))
                continue
            for name in sk.fields:
                if name not in cache:
                    cache[name] = field_codes(_column(records, name, self.name), p.prefix.get(name))
            keyed.append(key_codes([cache[name] for name in sk.fields]))
        # the windows' pairs, counted before any is made (in link mode the cross-source ones are fewer)
        self.check_window_pairs([int(np.count_nonzero(codes >= 0)) for codes in keyed])
        for sk, codes in zip(p.sort_keys(), keyed):
            rows = np.flatnonzero(codes >= 0).astype(np.int64)
            order = rows[np.argsort(codes[rows], kind="stable")]
            src = records.source[order]
            generated = 0
            for d in range(1, min(p.window, len(order))):  # one whole-array step per offset
                a, b = order[:-d], order[d:]
                if link:
                    cross = src[:-d] != src[d:]
                    a, b = a[cross], b[cross]
                generated += len(a)
                if len(a):
                    packed.append(pack_pairs(np.minimum(a, b), np.maximum(a, b)))
            per_key.append(
                {
                    "key": sk.label,
                    "fields": list(sk.fields),
                    "records_sorted": int(len(order)),
                    "records_missing": int(len(codes) - len(order)),
                    "distinct_keys": int(len(_runs(codes[order])[0])),
                    "pairs_generated": int(generated),
                }
            )
        raw = int(sum(len(x) for x in packed))
        pairs = _union(packed)
        release_free_memory()  # the sorting and enumerating temporaries, before the next stage's
        report: dict[str, Any] = {
            "records": len(records),
            "mode": "link" if link else "dedup",
            "window": p.window,
            "per_key": per_key,
            "raw_pairs": raw,
            "candidates": len(pairs),
        }
        return Blocked(pairs, report)

    def check_window_pairs(self, rows_per_pass: list[int]) -> None:
        """At most ``max_pairs`` (and half the available memory) of window pairs over the passes' sorted records."""
        p = self.params
        PairLimit(self.name, p.max_pairs).add(
            sum(window_pairs(m, p.window) for m in rows_per_pass),
            f"(window {p.window:,})",
            "window",
            f"lower window to {self._fitting_window(rows_per_pass, p.max_pairs)} or less, or block with "
            "field_hash on a selective key instead",
        )

    @staticmethod
    def _fitting_window(sorted_rows: list[int], max_pairs: int | None) -> int:
        """The largest window whose pairs stay within ``max_pairs`` and half the available memory (at least 2)."""
        bound = max_pairs if max_pairs is not None else 1 << 62
        avail = available_memory()
        if avail is not None:
            bound = min(bound, int(MEMORY_SHARE * avail) // BYTES_PER_PAIR)
        total = max(sum(sorted_rows), 1)
        return max(2, min(MAX_WINDOW, bound // total + 1))

    def window_keys(self, batch: Batch) -> list[tuple[Int64Array, npt.NDArray[Any]]]:
        """Per sort key: the records having every key field, and their key as one string (:func:`sort_strings`).

        Sorting the strings orders the records as :meth:`candidates` does (the
        fields' tuple, field by field in code-point order); ties keep record
        order there, which is the ``(key, row)`` order of the contract.
        """
        p = self.params
        out: list[tuple[Int64Array, npt.NDArray[Any]]] = []
        for sk in p.sort_keys():
            cols: Sequence[Sequence[str | None]] = [_column(batch.records, name, self.name) for name in sk.fields]
            prefixes = [p.prefix.get(name) for name in sk.fields]
            if sk.any_order:
                cols, prefixes = any_order_values(cols, prefixes), [None] * len(cols)
            out.append(sort_strings(cols, prefixes))
        return out

    def window_size(self) -> int:
        return self.params.window


def window_pairs(m: int, window: int) -> int:
    """Pairs of a window of ``window`` over ``m`` sorted records: each with the next ``window - 1``
    (``sum(m - d for d in 1 .. window - 1)``, fewer at the end)."""
    w = min(window, m)
    return max(0, (w - 1) * m - (w - 1) * w // 2)


def _cut(col: Sequence[str | None], prefix: int | None) -> Sequence[str | None]:
    return col if prefix is None else [v[:prefix] if v else v for v in col]


def any_order_codes(columns: Sequence[Sequence[str | None]], prefixes: Sequence[int | None]) -> list[tuple[Int64Array, int]]:
    """The parts (:func:`key_codes`) of an any-order key: each record's values of ``columns`` (each cut to its
    prefix), smallest first; every part -1 where any value is missing (``None`` or ``""``).

    Whole-array: the values of all the columns get codes in one shared code-point order
    (:func:`field_codes` of their concatenation), and each record's codes are sorted. The same key as
    :func:`any_order_values` (the record's values sorted in Python), which :meth:`SortedNeighbourhood.window_keys`
    uses.
    """
    n = len(columns[0]) if columns else 0
    joined = list(chain.from_iterable(_cut(col, prefix) for col, prefix in zip(columns, prefixes)))
    codes, size = field_codes(joined)
    table = codes.reshape(len(columns), n)
    missing = (table < 0).any(axis=0)
    table = np.sort(table, axis=0)
    table[:, missing] = -1
    return [(table[j].copy(), size) for j in range(len(columns))]


def any_order_values(columns: Sequence[Sequence[str | None]], prefixes: Sequence[int | None]) -> list[list[str | None]]:
    """Each record's values of ``columns`` (each cut to its prefix) in sorted order, as columns: column ``j``
    holds every record's ``j``-th smallest value; ``None`` in every column where any value is missing."""
    rows = [
        tuple(sorted(t)) if all(t) else (None,) * len(columns) for t in zip(*(_cut(col, prefix) for col, prefix in zip(columns, prefixes)))
    ]
    return [list(col) for col in zip(*rows)] if rows else [[] for _ in columns]


#: ends every field of a :func:`sort_strings` key: below every character of a key's values
FIELD_END = "\x01\x01"


def sort_strings(columns: Sequence[Sequence[str | None]], prefixes: Sequence[int | None]) -> tuple[Int64Array, npt.NDArray[Any]]:
    """``(rows, keys)``: the rows where every column has a value (not ``None`` nor ``""``) and one string per row
    whose code-point order is the order of the rows' value tuples (each value cut to its prefix).

    A key is every value followed by :data:`FIELD_END` (U+0001 U+0001), with
    the value's U+0000 written U+0001 U+0002 and U+0001 written U+0001 U+0003
    (:data:`ESCAPES`): the map keeps the order of characters, and a field
    that ends sorts before any longer value with the same start, so
    comparing two keys compares the tuples field by field. Keys hold no NUL
    (numpy's ``StringDType`` sort does not order NUL characters) and are
    ``StringDType`` (whole-array string operations; the rare values holding
    U+0000 or U+0001 are escaped in Python).
    """
    n = len(columns[0]) if columns else 0
    present = np.ones(n, dtype=bool)
    for col in columns:
        present &= ~np.fromiter(map(operator.not_, col), dtype=bool, count=n)
    rows = np.flatnonzero(present).astype(np.int64)
    dtype = StringDType(na_object=None)
    key: npt.NDArray[Any] = np.full(len(rows), "", dtype=dtype)
    for col, prefix in zip(columns, prefixes):
        joined = "".join(filter(None, col))
        if "\x00" in joined or "\x01" in joined:  # rare: numpy slices and replaces NUL wrongly, so in Python
            table = str.maketrans(ESCAPES)
            arr = np.array([str(col[i])[:prefix].translate(table) for i in rows.tolist()], dtype=dtype)
        else:
            arr = np.array(col, dtype=dtype)[rows]
            if prefix is not None:
                arr = np.strings.slice(arr, 0, int(prefix))
        key = np.strings.add(np.strings.add(key, arr), FIELD_END)
    return rows, key


@hookimpl
def er_register_blockers() -> list[type[Blocker]]:
    return [FieldHash, SortedNeighbourhood]
