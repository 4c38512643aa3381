"""Tests for er_framework.io.source_files: reading a source's file into Records (ids, fields, every problem in
one pass, the long layout, byte ranges)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.output_write import write_outputs
from er_framework.io.source_files import partition_ranges, read_source

# ---------------------------------------------------------------- helpers


def write_csv(path: Path, rows: list[list[Any]], delimiter: str = ",") -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


def write_jsonl(path: Path, objs: list[Any]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    return path


def problems_text(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


def read(path: Path, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return read_source(path, id_column=id_column, fields=fields, name="src", **kw)


def test_id_column_may_also_be_a_field(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", [["id", "t"], ["1", "a"]])
    assert read(path, ["id", "t"]).fields == {"id": ["1"], "t": ["a"]}


_cell = st.text(max_size=20)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_cell, min_size=1, max_size=15))
def test_property_csv_and_jsonl_round_trip(tmp_path: Path, values: list[str]) -> None:
    ids = [f"r{i}" for i in range(len(values))]
    out = tmp_path / "prop"
    write_outputs(out, {"t": {"id": ids, "v": values}}, {})
    assert read(out / "t.csv", ["v"]).fields["v"] == [v if v != "" else None for v in values]
    write_jsonl(out / "t.jsonl", [{"id": i, "v": v} for i, v in zip(ids, values)])
    assert read(out / "t.jsonl", ["v"]).fields["v"] == values


def test_empty_files(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text("")
    (tmp_path / "e.jsonl").write_text("\n\n")
    for name in ("e.csv", "e.jsonl"):
        with pytest.raises(InputError) as exc:
            read(tmp_path / name, ["t"])
        assert len(exc.value.problems) == 1
        assert "empty" in problems_text(exc) and name in problems_text(exc)


def test_missing_and_invalid_ids(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [{"id": "a"}, {"id": None}, {"x": 1}, {"id": ""}, {"id": 1.5}, {"id": [1]}, {"id": True}],
    )
    with pytest.raises(InputError) as exc:
        read(path, [])
    by_where = {p.where: p.message for p in exc.value.problems}
    assert "id is missing" in by_where[f"{path}:2"]
    assert "id is missing" in by_where[f"{path}:3"]
    assert "id is empty" in by_where[f"{path}:4"]
    assert "1.5" in by_where[f"{path}:5"] and "expected a string or an integer" in by_where[f"{path}:5"]
    assert "[1]" in by_where[f"{path}:6"]
    assert "true" in by_where[f"{path}:7"]


def test_duplicate_ids_rows_and_count(tmp_path: Path) -> None:
    rows = [["id", "t"]] + [[f"d{i % 13}", "x"] for i in range(26)] + [["u", "x"]]
    path = write_csv(tmp_path / "d.csv", rows)
    with pytest.raises(InputError) as exc:
        read(path, ["t"])
    [problem] = exc.value.problems
    assert problem.where == str(path)
    assert "13 duplicated ids" in problem.message
    assert "id 'd0' appears on rows 2 and 15" in problem.message
    assert "id 'd9' appears on rows 11 and 24" in problem.message
    assert "'d10'" not in problem.message  # only the first 10 are listed
    assert "3 further duplicated ids (6 rows)" in problem.message
    assert "ids must be unique within a source" in problem.fix


def test_all_problems_in_one_pass(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,title\n1,a\n1,b\n,c\n4,d,e\n")
    with pytest.raises(InputError) as exc:
        read(path, ["title", "year"])
    text = problems_text(exc)
    assert len(exc.value.problems) == 4
    assert "'year' not found" in text
    assert "d.csv:5" in text  # too many cells
    assert "d.csv:4" in text  # empty id
    assert "id '1' appears on rows 2 and 3" in text


def test_long_layout_groups_rows_by_id(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("id,x,y\nf1,1.5,2\nf2,3,4\nf1,5,\n")
    recs = read_source(p, id_column="id", fields=["x", "y"], name="prints", layout="long")
    assert recs.ids == ["f1", "f2"]
    assert recs.fields["x"] == ['["1.5", "5"]', '["3"]']
    assert recs.fields["y"] == ['["2", null]', '["4"]']
    # wide layout still rejects the repeated id
    with pytest.raises(InputError, match="f1"):
        read_source(p, id_column="id", fields=["x", "y"], name="prints")


def test_csv_partition_ranges_cut_at_even_quote_parity(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_bytes(b'id,t\na,"1\n2\n3"\nb,x\nc,"y\n"\n')
    ranges = partition_ranges(path, 1)
    assert ranges is not None
    starts = [a for a, _ in ranges]
    data = path.read_bytes()
    # every range starts a record: after the header line, after line 'a' (3 lines), after 'b'
    assert starts == [0, data.index(b"a,"), data.index(b"b,"), data.index(b"c,")]
    assert ranges[-1][1] == len(data)
