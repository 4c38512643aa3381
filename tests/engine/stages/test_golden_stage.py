"""The golden stage: encoding columns as read, dates, source ranks, the table and its provenance."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from er_framework.components import GoldenRule, GoldenValues
from er_framework.data import Records
from er_framework.engine.stages.golden import (
    FieldPlan,
    cluster_groups,
    encode_column,
    golden_table,
    parse_date,
    parse_dates,
    source_ranks,
)
from er_framework.kernels.arrow import ArrowValues
from er_plugins.golden import Longest, MostFrequent, MostRecent, SourcePriority


def test_encode_column_codes_equal_values_and_drops_missing_ones() -> None:
    values, codes, lengths = encode_column(["Bob", None, "", "  ", "N/A", "Bob", "Zoë"])
    assert values.tolist() == ["Bob", None, None, None, None, "Bob", "Zoë"]
    assert codes[0] == codes[5] and codes[0] >= 0 and codes[6] >= 0 and codes[6] != codes[0]
    assert codes[1:5].tolist() == [-1, -1, -1, -1]
    assert lengths.tolist() == [3, 0, 0, 0, 0, 3, 3]
    # an Arrow column (what a large run keeps as read) reads the same
    again = encode_column(ArrowValues(pa.array(["Bob", None, "", "  ", "N/A", "Bob", "Zoë"]).dictionary_encode()))
    assert again[0].tolist() == values.tolist() and again[2].tolist() == lengths.tolist()
    empty = encode_column([])
    assert [len(a) for a in empty] == [0, 0, 0]
    assert encode_column([None, None])[1].tolist() == [-1, -1]


def test_dates_are_iso_8601_or_numbers_and_the_rest_is_nan() -> None:
    assert parse_date("2024-01-05") == datetime(2024, 1, 5, tzinfo=UTC).timestamp()
    assert parse_date("2024-01-05T10:00:00+02:00") == datetime(2024, 1, 5, 8, tzinfo=UTC).timestamp()
    assert parse_date(" 17.5 ") == 17.5
    for bad in (None, "", "N/A", "yesterday", "2024-13-45", "inf", "nan"):
        assert math.isnan(parse_date(bad)), bad
    got = parse_dates(["2024-01-05", None, "x", "2024-01-05", "3"])
    assert got[0] == got[3] and math.isnan(got[1]) and math.isnan(got[2]) and got[4] == 3.0


def test_source_ranks_put_the_listed_sources_first() -> None:
    assert source_ranks(["crm", "web", "shop"], None).tolist() == [0, 1, 2]
    assert source_ranks(["crm", "web", "shop"], ["shop", "crm"]).tolist() == [1, 2, 0]


def test_cluster_groups_are_csr_in_input_order() -> None:
    ids, starts, members = cluster_groups([5, 2, 5, 9, 2])
    assert ids.tolist() == [2, 5, 9] and starts.tolist() == [0, 2, 4, 5] and members.tolist() == [1, 4, 0, 2, 3]


def _records(n: int, seed: int) -> tuple[Records, np.ndarray]:
    rng = np.random.default_rng(seed)
    pool = ["Ann", "Anna", "Bob", "Robert", "", None, "N/A", "Zoë Saldaña"]
    fields = {
        "name": [pool[i] for i in rng.integers(0, len(pool), n)],
        "email": [pool[i] for i in rng.integers(0, len(pool), n)],
        "updated": [["2024-01-05", "2023-12-31T23:59:59", None, "garbage", "2024-01-05T00:00:01"][i] for i in rng.integers(0, 5, n)],
    }
    records = Records(
        ids=[f"r{i}" for i in range(n)], source=rng.integers(0, 3, n).astype(np.int32), source_names=["crm", "web", "shop"], fields=fields
    )
    return records, rng.integers(0, max(1, n // 3), n)


def _naive(records: Records, labels: np.ndarray, plan: FieldPlan) -> dict[int, str | None]:
    """The golden value of ``plan.field`` per cluster, one cluster at a time in Python."""
    ranks = source_ranks(records.source_names, plan.order)
    out: dict[int, str | None] = {}
    for c in sorted(set(labels.tolist())):
        rows = [r for r in range(len(records)) if labels[r] == c]
        col = records.fields[plan.field]
        present = [r for r in rows if col[r] not in (None, "", "N/A")]
        if not present:
            out[c] = None
            continue
        if plan.rule.name == "most_frequent":
            key = {r: -sum(col[q] == col[r] for q in present) for r in present}
        elif plan.rule.name == "longest":
            key = {r: -len(col[r]) for r in present}
        elif plan.rule.name == "most_recent":
            key = {
                r: -parse_date(records.fields[str(plan.by)][r]) if not math.isnan(parse_date(records.fields[str(plan.by)][r])) else math.inf
                for r in present
            }
        else:
            key = dict.fromkeys(present, 0)
        best = min(present, key=lambda r: (key[r], ranks[records.source[r]], r))
        out[c] = col[best]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_table_traces_every_value_to_a_record_and_equals_the_naive_reference(seed: int) -> None:
    records, labels = _records(300, seed)
    plans = [
        FieldPlan("name", MostFrequent()),
        FieldPlan("email", MostRecent(), by="updated"),
        FieldPlan("updated", Longest()),
        FieldPlan("name", SourcePriority(), order=("shop", "web")),
    ]
    for plan in plans:
        table = golden_table(records, labels, [plan])
        want = _naive(records, labels, plan)
        assert table["cluster_id"].tolist() == sorted(want)
        assert table[plan.field].tolist() == [want[c] for c in table["cluster_id"]]
        where = {(records.source_names[records.source[r]], records.ids[r]): r for r in range(len(records))}
        for c, value, src, rid in zip(table["cluster_id"], table[plan.field], table[f"{plan.field}_source"], table[f"{plan.field}_id"]):
            if value is None:
                assert src == "" and rid == ""
                continue
            r = where[(src, rid)]  # the provenance names a record of this cluster holding exactly this value
            assert labels[r] == c and records.fields[plan.field][r] == value
    sizes = golden_table(records, labels, plans)["size"]
    assert sizes.sum() == len(records)


def test_singletons_false_keeps_clusters_of_two_or_more() -> None:
    records, labels = _records(100, 7)
    full = golden_table(records, labels, [FieldPlan("name", MostFrequent())])
    some = golden_table(records, labels, [FieldPlan("name", MostFrequent())], singletons=False)
    keep = full["size"] >= 2
    assert some["cluster_id"].tolist() == full["cluster_id"][keep].tolist()
    assert some["name"].tolist() == full["name"][keep].tolist() and some["name_id"].tolist() == full["name_id"][keep].tolist()


def test_no_records_give_an_empty_table_with_every_column() -> None:
    records = Records(ids=[], source=np.zeros(0, dtype=np.int32), source_names=["a"], fields={"name": []})
    table = golden_table(records, np.zeros(0, dtype=np.int64), [FieldPlan("name", MostFrequent())])
    assert list(table) == ["cluster_id", "size", "name", "name_source", "name_id"]
    assert all(len(v) == 0 for v in table.values())


class _Broken(GoldenRule):
    name = "broken"

    def choose(self, values: GoldenValues) -> np.ndarray:
        return np.zeros(values.clusters, dtype=np.int64)  # row 0 for every cluster: not their member


class _Lazy(GoldenRule):
    name = "lazy"

    def choose(self, values: GoldenValues) -> np.ndarray:
        return np.full(values.clusters, -1, dtype=np.int64)


def test_a_plugin_rule_that_breaks_the_contract_is_named() -> None:
    records, labels = _records(60, 1)
    with pytest.raises(ValueError, match="golden rule 'broken' chose row 0 for cluster"):
        golden_table(records, labels, [FieldPlan("name", _Broken())])
    with pytest.raises(ValueError, match="golden rule 'lazy' chose no value for a cluster that has one"):
        golden_table(records, labels, [FieldPlan("name", _Lazy())])
