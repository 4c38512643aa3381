"""io/column_map.py: the job's field names onto a source's own columns."""

from __future__ import annotations

import numpy as np
import pytest

from er_framework.data import Records
from er_framework.errors import InputError, Problem
from er_framework.io.column_map import ColumnMap


def recs(fields: dict[str, list[str | None]]) -> Records:
    n = len(next(iter(fields.values())))
    return Records(ids=[str(i) for i in range(n)], source=np.zeros(n, dtype=np.int32), source_names=["s"], fields=fields)


def test_without_a_mapping_nothing_changes() -> None:
    m = ColumnMap(["a", "b"])
    assert m.identity and m.read == ["a", "b"]
    r = recs({"a": ["1"], "b": ["2"]})
    assert m.records(r) is r
    assert m.problems([Problem(where="f", message="column 'a' not found")])[0].message == "column 'a' not found"


def test_fields_read_their_columns_and_get_the_jobs_names() -> None:
    m = ColumnMap(["first_name", "zip", "city"], {"first_name": "given", "zip": "postcode"})
    assert m.read == ["given", "postcode", "city"] and not m.identity
    out = m.records(recs({"given": ["Ann"], "postcode": ["123"], "city": ["X"]}))
    assert list(out.fields) == ["first_name", "zip", "city"]
    assert out.fields["first_name"] == ["Ann"] and out.fields["zip"] == ["123"]


def test_a_swap_of_two_columns_is_read_as_written() -> None:
    m = ColumnMap(["a", "b"], {"a": "b", "b": "a"})
    out = m.records(recs({"b": ["B"], "a": ["A"]}))
    assert out.fields == {"a": ["B"], "b": ["A"]}


def test_two_fields_may_read_one_column_and_get_their_own_lists() -> None:
    m = ColumnMap(["name", "name_again"], {"name_again": "name"})
    assert m.read == ["name"]
    out = m.records(recs({"name": ["Ann", None]}))
    assert out.fields["name"] == out.fields["name_again"] == ["Ann", None]
    assert out.fields["name"] is not out.fields["name_again"]


def test_messages_name_the_field_of_a_mapped_column() -> None:
    m = ColumnMap(["first_name", "x", "y"], {"first_name": "given", "x": "both", "y": "both"})
    assert m.label("given") == "'given' (field first_name, via columns:)"
    assert m.label("both") == "'both' (fields x and y, via columns:)"
    assert m.label("other") == "'other'"
    p = Problem(where="a.csv:1", path="column 'given'", message="column 'given' not found (source 'a'); columns present: id, given_name")
    (q,) = m.problems([p])
    assert q.message == "column 'given' (field first_name, via columns:) not found (source 'a'); columns present: id, given_name"
    assert q.where == p.where and q.path == p.path
    with pytest.raises(InputError) as exc, m.named():
        raise InputError(p)
    assert exc.value.problems == [q]
