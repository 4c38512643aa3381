"""Tests for er_framework.io.tables: reading sources, writing outputs atomically."""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.io import tables as eio
from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.tables import (
    MAX_ROW_PROBLEMS,
    partition_ranges,
    read_clusters_csv,
    read_pairs_csv,
    read_source,
    write_outputs,
)


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


def listing(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` (relative name -> content), hidden ones included."""
    return {
        str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
    } | {str(p.relative_to(d)) + "/": b"" for p in d.rglob("*") if p.is_dir()}


# ---------------------------------------------------------------- reading: round trips


def test_csv_round_trip_unicode_newlines_commas_and_empty(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "docs.csv",
        [
            ["id", "title", "body", "unused"],
            ["a1", "Zürich 東京 🚀", 'line one\nline two, with "quotes"', "x"],
            ["a2", "", "plain", "y"],
            ["a3", "t3", "a,b,c", ""],
        ],
    )
    recs = read(path, ["body", "title"])
    assert recs.ids == ["a1", "a2", "a3"]
    assert list(recs.fields) == ["body", "title"]  # only the requested fields, in order
    assert recs.fields["title"] == ["Zürich 東京 🚀", None, "t3"]
    assert recs.fields["body"] == ['line one\nline two, with "quotes"', "plain", "a,b,c"]
    assert recs.source_names == ["src"]
    assert recs.source.dtype == np.int32 and recs.source.tolist() == [0, 0, 0]


def test_csv_int_ids_are_strings_and_empty_cells_are_missing(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,a,b\n7,x,y\n8,z,\n\n9,,w\n", encoding="utf-8")
    recs = read(path, ["a", "b"])
    assert recs.ids == ["7", "8", "9"]  # the blank line is not a record
    assert recs.fields["a"] == ["x", "z", None]
    assert recs.fields["b"] == ["y", None, "w"]


def test_csv_short_rows_are_errors_never_guessed(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,a,b\n7,x,y\n8,z\n9\n10,u,v\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read(path, ["a", "b"])
    text = str(exc.value)
    assert "d.csv:3" in text and "row 3 has 2 cells but the header has 3 columns (b missing)" in text
    assert "d.csv:4" in text and "row 4 has 1 cell but the header has 3 columns (a, b missing)" in text
    assert "empty cell" in text


def test_csv_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes(b"\xef\xbb\xbfid,name\r\n1,Ann\r\n2,\"Bo\r\nb\"\r\n")
    recs = read(path, ["name"])
    assert recs.ids == ["1", "2"]
    assert recs.fields["name"] == ["Ann", "Bo\r\nb"]


def test_tsv(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.tsv", [["id", "name"], ["1", "a, b"], ["2", "tab\there"]], "\t")
    recs = read(path, ["name"])
    assert recs.ids == ["1", "2"]
    assert recs.fields["name"] == ["a, b", "tab\there"]


def test_gzip_csv_and_jsonl(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "d.csv.gz", "wt", encoding="utf-8", newline="") as f:
        f.write("id,name\n1,é\n")
    with gzip.open(tmp_path / "d.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write('{"id": 1, "name": "é"}\n')
    for name in ("d.csv.gz", "d.jsonl.gz"):
        recs = read(tmp_path / name, ["name"])
        assert recs.ids == ["1"] and recs.fields["name"] == ["é"]


def test_jsonl_values(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [
            {"id": 1, "s": "Ωmega\nnew line", "n": 42, "f": 0.8, "b": True, "nested": {"k": [1, "ä"]}},
            {"id": "x2", "s": None, "n": -1, "f": 7.0, "b": False, "nested": [1, 2]},
            {"id": 3, "f": float("nan")},
        ],
    )
    recs = read(path, ["s", "n", "f", "b", "nested"])
    assert recs.ids == ["1", "x2", "3"]
    assert recs.fields["s"] == ["Ωmega\nnew line", None, None]  # null and absent key -> None
    assert recs.fields["n"] == ["42", "-1", None]
    assert recs.fields["f"] == ["0.8", "7.0", None]  # NaN is missing
    assert recs.fields["b"] == ["true", "false", None]
    assert recs.fields["nested"] == ['{"k": [1, "ä"]}', "[1, 2]", None]


def test_jsonl_blank_lines_skipped_and_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "d.ndjson"
    path.write_text('{"id": "a"}\n\n   \n{"id": "b"}\r\n{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read(path, [])
    # blank lines are not records but still count as lines
    assert "id 'a' appears on lines 1 and 5" in problems_text(exc)


def test_jsonl_field_absent_on_some_lines_is_missing_value(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "t": "x"}, {"id": "b"}])
    assert read(path, ["t"]).fields["t"] == ["x", None]


def test_jsonl_field_null_on_every_line_is_present(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "t": None}, {"id": "b", "t": None}])
    assert read(path, ["t"]).fields["t"] == [None, None]


def test_parquet_round_trip(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array([7, 8, 9], pa.int64()),
            "name": pa.array(["ä", None, "c"]),
            "score": pa.array([0.5, float("nan"), 2.0]),
            "cat": pa.array(["x", "y", "x"]).dictionary_encode(),
            "other": pa.array([1, 2, 3]),
        }
    )
    pq.write_table(table, tmp_path / "d.parquet")
    recs = read(tmp_path / "d.parquet", ["name", "score", "cat"])
    assert recs.ids == ["7", "8", "9"]
    assert recs.fields == {"name": ["ä", None, "c"], "score": ["0.5", None, "2.0"], "cat": ["x", "y", "x"]}


def test_id_column_may_also_be_a_field(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", [["id", "t"], ["1", "a"]])
    assert read(path, ["id", "t"]).fields == {"id": ["1"], "t": ["a"]}


def test_header_only_csv_is_an_error(tmp_path: Path) -> None:
    # issue 18 case 22: a source without any record is an error, not an empty result
    path = write_csv(tmp_path / "d.csv", [["id", "t"]])
    with pytest.raises(InputError, match="has a header but no rows"):
        read(path, ["t"])
    # one partition of a file may hold no row: that is not an error
    recs = read_source(path, id_column="id", fields=["t"], name="src", byte_range=(0, 3))
    assert len(recs) == 0 and recs.fields == {"t": []}


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


# ---------------------------------------------------------------- reading: errors


def test_missing_file_names_absolute_path_and_yaml_location(tmp_path: Path) -> None:
    (tmp_path / "docs.csv").write_text("id\n1\n")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "doc.csv", ["t"], where="job.yaml: sources[0].path")
    text = problems_text(exc)
    assert "no such file" in text
    assert str((tmp_path / "doc.csv").absolute()) in text
    assert "job.yaml: sources[0].path" in text
    assert "did you mean 'docs.csv'" in text


def test_unknown_extension_lists_supported(tmp_path: Path) -> None:
    (tmp_path / "d.xlsx").write_text("x")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "d.xlsx", [])
    text = problems_text(exc)
    assert "d.xlsx" in text and "'.xlsx'" in text
    for ext in (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".csv.gz", ".jsonl.gz"):
        assert ext in text


def test_json_extension_suggests_jsonl(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text("[]")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "d.json", [])
    assert "JSON Lines" in problems_text(exc) and "jq -c" in problems_text(exc)


def test_missing_columns_all_reported_with_did_you_mean(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", [["ID", "title", "body"], ["1", "a", "b"]])
    with pytest.raises(InputError) as exc:
        read(path, ["titel", "body", "year"])
    problems = exc.value.problems
    assert [p.path for p in problems] == ["column 'id'", "column 'titel'", "column 'year'"]
    assert all("d.csv" in p.where for p in problems)
    text = problems_text(exc)
    assert "did you mean 'title'?" in text
    assert "columns present: ID, body, title" in text


def test_missing_column_jsonl_uses_union_of_keys(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "title": "x"}, {"id": "b", "author": "y"}])
    with pytest.raises(InputError) as exc:
        read(path, ["titles", "author"])
    assert len(exc.value.problems) == 1
    text = problems_text(exc)
    assert "column 'titles' not found" in text
    assert "did you mean 'title'?" in text
    assert "author, id, title" in text


def test_missing_column_parquet(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["a"], "name": ["x"]}), tmp_path / "d.parquet")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "d.parquet", ["nmae"])
    assert "did you mean 'name'?" in problems_text(exc)


def test_semicolon_csv_hint(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id;name\n1;a\n")
    with pytest.raises(InputError) as exc:
        read(path, ["name"])
    assert "';'-separated" in problems_text(exc)


def test_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("id,name\n1,ok\n2,Gen\xe8ve\n".encode("latin-1"))
    with pytest.raises(InputError) as exc:
        read(path, ["name"])
    [problem] = exc.value.problems
    assert problem.where == f"{path}:3"
    text = problems_text(exc)
    assert "not valid UTF-8" in text and "b'\\xe8'" in text
    assert "byte offset 18" in text  # 0-based
    assert "iconv -f latin1 -t utf-8" in text


def test_empty_files(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text("")
    (tmp_path / "e.jsonl").write_text("\n\n")
    for name in ("e.csv", "e.jsonl"):
        with pytest.raises(InputError) as exc:
            read(tmp_path / name, ["t"])
        assert len(exc.value.problems) == 1
        assert "empty" in problems_text(exc) and name in problems_text(exc)


def test_csv_too_many_cells_reports_row(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,name\n1,a\n2,b,EXTRA\n3,c\n")
    with pytest.raises(InputError) as exc:
        read(path, ["name"])
    [problem] = exc.value.problems
    assert problem.where == f"{path}:3"
    assert "has 3 cells but the header has 2 columns" in problem.message
    assert "'EXTRA'" in problem.message
    assert "double quotes" in problem.fix


def test_csv_row_numbers_follow_physical_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,name\n1,"two\nlines"\n,empty id\n')
    with pytest.raises(InputError) as exc:
        read(path, ["name"])
    [problem] = exc.value.problems
    assert problem.where == f"{path}:4"
    assert "id is empty" in problem.message
    assert "non-empty id in column 'id'" in problem.fix


def test_csv_unterminated_quote(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,name\n1,a\n2,"never closed\n3,c\n')
    with pytest.raises(InputError) as exc:
        read(path, ["name"])
    [problem] = exc.value.problems
    assert problem.where == f"{path}:3"
    assert "never closed" in problem.message


def test_jsonl_bad_lines_all_reported(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b",}\n[1, 2]\n{"id": "c"} x\n"str"\n{"id": "d"}\n')
    with pytest.raises(InputError) as exc:
        read(path, [])
    wheres = [p.where for p in exc.value.problems]
    assert wheres == [f"{path}:2", f"{path}:4", f"{path}:3", f"{path}:5"]
    text = problems_text(exc)
    assert "line 2 is not valid JSON" in text and "column 12" in text
    assert "line 3 holds an array, expected a JSON object" in text
    assert "Extra data" in text
    assert "each line must hold one JSON object" in text


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


def test_row_problems_are_capped_with_a_count(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,t\n" + ",x\n" * 25)
    with pytest.raises(InputError) as exc:
        read(path, ["t"])
    problems = exc.value.problems
    assert len(problems) == MAX_ROW_PROBLEMS + 1
    assert "15 more rows with a missing id" in problems[-1].message


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


def test_parquet_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "bad.parquet", [])
    assert "cannot read the Parquet file" in problems_text(exc)
    pq.write_table(pa.table({"id": ["a", None, "a"]}), tmp_path / "d.parquet")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "d.parquet", [])
    text = problems_text(exc)
    assert "row 2, column 'id'" in text
    assert "id 'a' appears on rows 1 and 3" in text


def test_bad_gzip(tmp_path: Path) -> None:
    (tmp_path / "d.csv.gz").write_bytes(b"id,t\n1,a\n")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "d.csv.gz", [])
    assert "not a valid gzip file" in problems_text(exc)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(InputError) as exc:
        read(tmp_path / "d.csv", [])
    assert "is a directory" in problems_text(exc)


# ---------------------------------------------------------------- writing


def test_write_csv_and_json(tmp_path: Path) -> None:
    out = tmp_path / "out" / "nested"
    paths = write_outputs(
        out,
        {
            "pairs": {
                "left_source": ["a", "a"],
                "left_id": ["1", "x,y"],
                "right_source": ["b", "b"],
                "right_id": np.array([2, 3]),
                "score": np.array([0.8, 1 / 3], dtype=np.float32),
            },
            "clusters": {"source": ["a", "b"], "id": ["1", "2"], "cluster_id": ["c0", "c0"]},
        },
        {"report": {"n": np.int64(3), "recall": np.float64(0.75), "names": ["é"]}},
    )
    assert paths == {
        "pairs": out / "pairs.csv",
        "clusters": out / "clusters.csv",
        "report": out / "report.json",
    }
    text = (out / "pairs.csv").read_bytes().decode("utf-8")
    assert text.splitlines()[0] == "left_source,left_id,right_source,right_id,score"
    assert "0.8\r\n" in text and "0.800000011920929" not in text
    assert read_pairs_csv(out / "pairs.csv") == [
        ("a", "1", "b", "2", 0.8),
        ("a", "x,y", "b", "3", pytest.approx(1 / 3, rel=1e-6)),
    ]
    assert read_clusters_csv(out / "clusters.csv") == [("a", "1", "c0"), ("b", "2", "c0")]
    report = (out / "report.json").read_text(encoding="utf-8")
    assert json.loads(report) == {"n": 3, "recall": 0.75, "names": ["é"]}
    assert report.startswith('{\n  "n": 3')  # indent=2, keys in the given order
    assert sorted(os.listdir(out)) == ["clusters.csv", "pairs.csv", "report.json"]


def test_write_float64_precision(tmp_path: Path) -> None:
    write_outputs(tmp_path, {"t": {"x": np.array([0.1, 0.1 + 0.2]), "y": [0.8, 1e-7]}}, {})
    rows = list(csv.reader(open(tmp_path / "t.csv", newline="", encoding="utf-8")))
    assert rows == [["x", "y"], ["0.1", "0.8"], ["0.30000000000000004", "1e-07"]]


def test_write_parquet_round_trip(tmp_path: Path) -> None:
    paths = write_outputs(
        tmp_path,
        {"pairs": {"left_source": ["a"], "left_id": ["1"], "right_source": ["b"],
                   "right_id": ["2"], "score": np.array([0.5])}},
        {"report": {}},
        fmt="parquet",
    )
    assert paths["pairs"] == tmp_path / "pairs.parquet"
    table = pq.read_table(paths["pairs"])
    assert table.column_names == ["left_source", "left_id", "right_source", "right_id", "score"]
    assert read_pairs_csv(paths["pairs"]) == [("a", "1", "b", "2", 0.5)]


def test_write_replaces_existing_outputs(tmp_path: Path) -> None:
    write_outputs(tmp_path, {"t": {"a": [1]}}, {"r": {"v": 1}})
    write_outputs(tmp_path, {"t": {"a": [2]}}, {"r": {"v": 2}})
    assert (tmp_path / "t.csv").read_bytes() == b"a\r\n2\r\n"
    assert json.loads((tmp_path / "r.json").read_text()) == {"v": 2}
    assert sorted(os.listdir(tmp_path)) == ["r.json", "t.csv"]


def test_write_validation_errors_leave_dir_untouched(tmp_path: Path) -> None:
    write_outputs(tmp_path, {"t": {"a": [1]}}, {"r": {"v": 1}})
    before = listing(tmp_path)
    with pytest.raises(ValueError, match="different lengths"):
        write_outputs(tmp_path, {"t": {"a": [1, 2], "b": [1]}}, {})
    with pytest.raises(ValueError, match="r.json"):
        write_outputs(tmp_path, {"t": {"a": [5]}}, {"r": {"v": math.nan}})
    with pytest.raises(ValueError, match="invalid table name"):
        write_outputs(tmp_path, {"../t": {"a": [5]}}, {})
    with pytest.raises(ValueError, match="format"):
        write_outputs(tmp_path, {"t": {"a": [5]}}, {}, fmt="xlsx")
    assert listing(tmp_path) == before


def test_failure_while_writing_temp_files_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_outputs(tmp_path, {"t": {"a": [1]}}, {"r": {"v": 1}})
    before = listing(tmp_path)

    def boom(target: Path, columns: Any, *rest: Any) -> None:
        Path(target).write_text("partial")
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(eio, "_write_csv", boom)
    with pytest.raises(InputError) as exc:
        write_outputs(tmp_path, {"t": {"a": [2]}}, {"r": {"v": 2}})
    assert "No space left on device" in str(exc.value)
    assert listing(tmp_path) == before  # no partial files, no temp dir


def test_failure_on_second_rename_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_outputs(out, {"pairs": {"a": [1]}}, {"report": {"v": 1}})
    before = listing(out)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src: Any, dst: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(5, "Input/output error", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(InputError) as exc:
        write_outputs(out, {"pairs": {"a": [2]}, "clusters": {"b": [3]}}, {"report": {"v": 2}})
    assert "Input/output error" in str(exc.value)
    assert listing(out) == before  # old pairs.csv restored, no clusters.csv, no temp dir


def test_failure_in_new_dir_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError(5, "EIO", dst)))
    with pytest.raises(InputError):
        write_outputs(tmp_path / "new", {"t": {"a": [1]}}, {})
    assert not (tmp_path / "new").exists()


def test_out_dir_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("I am a file")
    with pytest.raises(InputError) as exc:
        write_outputs(tmp_path / "out", {"t": {"a": [1]}}, {})
    assert "is not a directory" in str(exc.value)
    assert (tmp_path / "out").read_text() == "I am a file"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores permissions")
def test_out_dir_not_writable(tmp_path: Path) -> None:
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        with pytest.raises(InputError) as exc:
            write_outputs(out, {"t": {"a": [1]}}, {})
        assert "permission denied" in str(exc.value)
    finally:
        out.chmod(0o755)


def test_permission_denied_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(**kw: Any) -> str:
        raise PermissionError(13, "Permission denied", str(kw.get("dir")))

    monkeypatch.setattr(eio.tempfile, "mkdtemp", denied)
    with pytest.raises(InputError) as exc:
        write_outputs(tmp_path, {"t": {"a": [1]}}, {})
    assert "permission denied" in str(exc.value) and str(tmp_path) in str(exc.value)
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- reading outputs back


def test_read_pairs_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_pairs_csv(tmp_path / "pairs.csv")
    path = write_csv(tmp_path / "p.csv", [["left_source", "left_id", "right_source", "right_id", "scor"]])
    with pytest.raises(InputError, match="did you mean 'scor'"):
        read_pairs_csv(path)
    path = write_csv(
        tmp_path / "p2.csv",
        [["left_source", "left_id", "right_source", "right_id", "score"], ["a", "1", "b", "2", "high"]],
    )
    with pytest.raises(InputError) as exc:
        read_pairs_csv(path)
    assert "p2.csv:2" in str(exc.value) and "'high' is not a number" in str(exc.value)


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


def test_jsonl_lines_are_split_lazily_like_str_split() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from er_framework.io.tables import split_lines

    @given(st.text(alphabet="ab\n\r {}", max_size=40))
    def check(text: str) -> None:
        assert list(split_lines(text)) == text.split("\n")

    check()


# ---------------------------------------------------------------- hostile files (issue 18)


def test_fifo_source_is_refused_before_opening(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    os.mkfifo(path)
    with pytest.raises(InputError, match=r"is a named pipe \(FIFO\), not a regular file"):
        read(path, ["t"])


def test_duplicate_key_and_lone_surrogate_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "t": "x"}\n{"id": "b", "t": "y", "t": "z"}\n{"id": "c", "t": "\\udfff"}\n'
                    '{"id": "d", "t": "\\ud83d\\ude00 ok"}\n{"id": "e", "n": {"k": 1, "k": 2}, "t": "w"}\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read(path, ["t"])
    text = problems_text(exc)
    assert f"{path}:2: line 2: the key 't' appears twice" in text
    assert f"{path}:5: line 5: the key 'k' appears twice" in text
    assert f"{path}:3: line 3 holds a lone UTF-16 surrogate \\udfff" in text
    assert ":4" not in text.replace(f"{path}:", "§")  # the pair on line 4 is a character


def test_record_limit_counts_utf8_bytes(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,t\na,\"" + "é" * 600 + "\"\n", encoding="utf-8")  # 600 characters, 1200 bytes
    with pytest.raises(InputError, match="larger than the limit"):
        read(path, ["t"], max_record_mb=1000 / 2**20)
    assert read(path, ["t"], max_record_mb=1300 / 2**20).fields["t"] == ["é" * 600]


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
