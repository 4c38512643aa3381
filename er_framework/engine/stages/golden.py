"""The golden stage: one merged record per cluster (``output: {golden: …}``), each field with its provenance.

From the records *as read* (the values a user knows, not the normalized keys), the cluster label of
every record, the job's sources and its :class:`~er_framework.config.spec.GoldenSpec`, the ``golden``
table holds per cluster ``cluster_id``, ``size``, then for every field of the job (the sources' fields,
first seen first) the chosen value, ``<field>_source`` and ``<field>_id``: the source and id of the
record the value came from (empty when no record of the cluster has a value).

The work is columnar: each field is dictionary-encoded once (Arrow), its rule
(:class:`~er_framework.components.GoldenRule`) chooses a row for every cluster in one call, and the
table is gathered from those rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from er_framework.components import GoldenRule, GoldenValues
from er_framework.config.resolve import Job
from er_framework.config.spec import GoldenFieldSpec
from er_framework.data import Records
from er_framework.kernels.arrow import ArrowValues, array_of
from er_framework.normalize import is_missing

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "FieldPlan",
    "GOLDEN_TABLE",
    "cluster_groups",
    "encode_column",
    "golden_plan",
    "golden_section",
    "golden_table",
    "golden_values",
    "job_fields",
    "parse_dates",
    "source_ranks",
]

Int64Array = npt.NDArray[np.int64]

#: the table's name (golden.csv, golden.parquet, Result.golden)
GOLDEN_TABLE = "golden"


@dataclass(frozen=True)
class FieldPlan:
    """How one field of the golden record is chosen: its rule (an instance), the ``by:`` field, the source order."""

    field: str
    rule: GoldenRule
    by: str | None = None
    order: tuple[str, ...] | None = None


def job_fields(job: Job) -> list[str]:
    """The job's fields: the union of the sources' fields, first seen first."""
    out: list[str] = []
    for src in job.spec.sources:
        out += [f for f in src.fields if f not in out]
    return out


def golden_plan(job: Job) -> list[FieldPlan]:
    """Per job field, its rule with ``by:`` and ``order:`` (``output.golden``; validated when the job was resolved)."""
    spec = job.spec.output.golden
    if spec is None:
        return []
    plans = []
    for name in job_fields(job):
        entry = spec.fields.get(name, spec.rule)
        fs = entry if isinstance(entry, GoldenFieldSpec) else GoldenFieldSpec(rule=entry)
        cls = job.registry.get("golden_rule", fs.rule).cls
        rule = cls(cls.Params(), job.context)
        assert isinstance(rule, GoldenRule)
        plans.append(FieldPlan(name, rule, fs.by, None if fs.order is None else tuple(fs.order)))
    return plans


def cluster_groups(labels: npt.ArrayLike) -> tuple[Int64Array, Int64Array, Int64Array]:
    """``(ids, starts, members)``: the distinct cluster labels ascending and their records as CSR, each
    cluster's records in input order."""
    lab = np.asarray(labels, dtype=np.int64)
    members = np.argsort(lab, kind="stable").astype(np.int64)
    sorted_lab = lab[members]
    first = np.ones(len(lab), dtype=bool)
    first[1:] = sorted_lab[1:] != sorted_lab[:-1]
    heads = np.flatnonzero(first)
    starts = np.append(heads, len(lab)).astype(np.int64)
    return sorted_lab[heads], starts, members


def _string_dictionary(column: Sequence[Any]) -> tuple[pa.Array, Int64Array]:
    """A column as ``(distinct values, code per row)`` (a null: code ``-1``)."""
    import pyarrow as pa  # only when golden records are built: a run without them does not load pyarrow
    import pyarrow.compute as pc

    arr: Any = column.array if isinstance(column, ArrowValues) else array_of(column if isinstance(column, list) else list(column))
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_dictionary(arr.type):
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = arr.cast(pa.string())
        arr = pc.dictionary_encode(arr)
    dictionary = arr.dictionary
    if not (pa.types.is_string(dictionary.type) or pa.types.is_large_string(dictionary.type)):
        dictionary = dictionary.cast(pa.string())
    codes = np.asarray(arr.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return dictionary, codes


def _gather(table: npt.NDArray[Any], codes: Int64Array, missing: Any) -> npt.NDArray[Any]:
    """``table[codes]``, ``missing`` where a code is -1 (``table`` may be empty)."""
    ext = np.empty(len(table) + 1, dtype=table.dtype)
    ext[: len(table)] = table
    ext[len(table)] = missing
    return ext[np.where(codes >= 0, codes, len(table))]


def encode_column(column: Sequence[Any]) -> tuple[npt.NDArray[np.object_], Int64Array, Int64Array]:
    """``(values, codes, lengths)`` of :class:`~er_framework.components.GoldenValues` for one column as read:
    missing values (null, blank, placeholders such as "N/A": :func:`~er_framework.normalize.is_missing`)
    are ``None`` with code ``-1`` and length 0; equal values share a code."""
    import pyarrow.compute as pc

    dictionary, codes = _string_dictionary(column)
    distinct = np.empty(len(dictionary), dtype=object)
    distinct[:] = dictionary.to_pylist()
    gone = np.fromiter((is_missing(v) or not v.strip() for v in distinct), dtype=bool, count=len(distinct))
    codes = _gather(np.where(gone, -1, np.arange(len(distinct), dtype=np.int64)), codes, -1)
    dict_len = np.asarray(pc.utf8_length(dictionary).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return _gather(distinct, codes, None), codes, _gather(dict_len, codes, 0)


def parse_date(text: str | None) -> float:
    """One ``by:`` value as a number: a number as it is, an ISO 8601 date or datetime as POSIX seconds
    (without a zone: UTC); NaN when missing or unparsable."""
    if text is None or is_missing(text):
        return math.nan
    t = text.strip()
    try:
        x = float(t)
    except ValueError:
        pass
    else:
        return x if math.isfinite(x) else math.nan
    try:
        d = datetime.fromisoformat(t)
    except ValueError:
        return math.nan
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    return d.timestamp()


def parse_dates(column: Sequence[Any]) -> npt.NDArray[np.float64]:
    """:func:`parse_date` of every row of a column, each distinct value parsed once."""
    dictionary, codes = _string_dictionary(column)
    table = np.fromiter((parse_date(v) for v in dictionary.to_pylist()), dtype=np.float64, count=len(dictionary))
    return _gather(table, codes, math.nan)


def source_ranks(source_names: Sequence[str], order: Sequence[str] | None) -> Int64Array:
    """Per source index, its rank: the sources of ``order`` first (in that order), the others after them in
    the job's order."""
    first = [s for s in (order or []) if s in source_names]
    ranked = first + [s for s in source_names if s not in first]
    return np.asarray([ranked.index(s) for s in source_names], dtype=np.int64)


def golden_values(
    records: Records, starts: Int64Array, members: Int64Array, plan: FieldPlan, dates: npt.NDArray[np.float64] | None = None
) -> GoldenValues:
    """What the rule of ``plan`` chooses from (``dates``: the ``by:`` column parsed, when it has one)."""
    column = records.fields.get(plan.field)
    if column is None:
        column = [None] * len(records)
    values, codes, lengths = encode_column(column)
    priority = source_ranks(records.source_names, plan.order)[records.source]
    return GoldenValues(starts, members, values, codes, lengths, priority, dates)


def _checked_choice(rule: GoldenRule, gv: GoldenValues, cluster_of: Int64Array) -> Int64Array:
    """The rule's rows, checked: one per cluster, a member of that cluster holding a value, or -1
    (``cluster_of``: each row's cluster, -1 for a row in none)."""
    rows = np.asarray(rule.choose(gv))
    k = gv.clusters
    who = f"golden rule {rule.name!r}"
    if rows.shape != (k,) or rows.dtype.kind not in "iu":
        raise ValueError(f"{who} returned {rows.dtype} of shape {rows.shape}; one integer row per cluster ({k}) is needed")
    rows = rows.astype(np.int64)
    chosen = rows >= 0
    n = len(gv.codes)
    if (rows >= n).any() or (rows < -1).any():
        raise ValueError(f"{who} returned a row outside 0..{n - 1} (or below -1)")
    bad = chosen & (cluster_of[np.maximum(rows, 0)] != np.arange(k))
    if bad.any():
        c = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{who} chose row {int(rows[c])} for cluster {c}, which is not one of its records")
    if (chosen & (gv.codes[np.maximum(rows, 0)] < 0)).any():
        raise ValueError(f"{who} chose a missing value")
    has_value = np.zeros(k, dtype=bool)
    present = gv.codes >= 0
    has_value[cluster_of[present & (cluster_of >= 0)]] = True
    if (has_value & ~chosen).any():
        raise ValueError(f"{who} chose no value for a cluster that has one")
    return rows


def golden_table(records: Records, labels: npt.ArrayLike, plans: Sequence[FieldPlan], *, singletons: bool = True) -> dict[str, Any]:
    """The golden table (columns by name): ``cluster_id``, ``size``, then per field of ``plans`` its value,
    ``<field>_source`` and ``<field>_id``. ``records`` are the records as read, ``labels`` their cluster
    ids; ``singletons=False`` keeps clusters of two or more records only."""
    ids, starts, members = cluster_groups(labels)
    sizes = np.diff(starts)
    if not singletons:
        keep = sizes >= 2
        ids, sizes = ids[keep], sizes[keep]
        kept_members = np.repeat(keep, np.diff(starts))
        members = members[kept_members]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    names = np.asarray(records.source_names, dtype=object)[records.source]
    rec_ids = np.asarray(records.ids, dtype=object)
    table: dict[str, Any] = {"cluster_id": ids, "size": sizes.astype(np.int64)}
    cluster_of = np.full(len(records), -1, dtype=np.int64)
    cluster_of[members] = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    parsed: dict[str, npt.NDArray[np.float64]] = {}
    for plan in plans:
        dates = None
        if plan.by is not None:
            if plan.by not in parsed:
                parsed[plan.by] = parse_dates(records.fields.get(plan.by) or [None] * len(records))
            dates = parsed[plan.by]
        gv = golden_values(records, starts, members, plan, dates)
        rows = _checked_choice(plan.rule, gv, cluster_of)
        table[plan.field] = _gather(gv.values, rows, None)
        table[f"{plan.field}_source"] = _gather(names, rows, "")
        table[f"{plan.field}_id"] = _gather(rec_ids, rows, "")
    return table


def golden_section(job: Job, table: dict[str, Any]) -> dict[str, Any]:
    """report.json's ``golden`` section: how many golden records, and the rule of each field."""
    spec = job.spec.output.golden
    assert spec is not None
    rules: dict[str, Any] = {}
    for plan in golden_plan(job):
        entry: dict[str, Any] = {"rule": plan.rule.name}
        if plan.by is not None:
            entry["by"] = plan.by
        if plan.order is not None:
            entry["order"] = list(plan.order)
        entry["filled"] = int((np.asarray(table[f"{plan.field}_source"], dtype=object) != "").sum())
        rules[plan.field] = entry
    return {"rows": int(len(table["cluster_id"])), "singletons": spec.singletons, "table": GOLDEN_TABLE, "fields": rules}
