"""Tests for er_framework.io.table_file: one reader of a user's table file (header, columns by name, problems
naming the file and line), in every format."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from er_framework.errors import InputError
from er_framework.io.table_file import HEADER_OBJECTS, FileRole, no_such_path_problem, open_table

ROLE = FileRole(what="test file", path_fix="check --test", dir_fix="pass a file with --test", header_fix="write a header such as id,x")


def test_csv_header_columns_by_name_and_rows_where_they_are(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('\nid,x,y\n1,"two\nlines",\n\n2,b,c\n', encoding="utf-8")
    table = open_table(path, ROLE)
    assert (table.fmt, table.compressed, table.header) == ("csv", False, ["id", "x", "y"])
    columns, loc = table.read(["y", "id"])
    assert columns == {"y": ["", "c"], "id": ["1", "2"]}
    assert [loc.where(i) for i in range(2)] == [f"{path}:3", f"{path}:6"]
    assert table.texts(columns["y"]) == [None, "c"]


def test_every_format(tmp_path: Path) -> None:
    (tmp_path / "t.tsv").write_text("id\tx\n1\ta,b\n", encoding="utf-8")
    with gzip.open(tmp_path / "t.csv.gz", "wt", encoding="utf-8") as f:
        f.write("id,x\n1,a\n")
    (tmp_path / "t.jsonl").write_text('{"id": 1, "x": 0.5}\n{"id": 2, "z": true}\n', encoding="utf-8")
    pq.write_table(pa.table({"id": [1], "x": ["a"]}), tmp_path / "t.parquet")
    assert open_table(tmp_path / "t.tsv").read(["x"])[0] == {"x": ["a,b"]}
    assert open_table(tmp_path / "t.csv.gz").read(["x"])[0] == {"x": ["a"]}
    jsonl = open_table(tmp_path / "t.jsonl")
    assert jsonl.header == ["id", "x", "z"]  # the keys of the objects, in order of first appearance
    columns, loc = jsonl.read(["id", "x"])
    assert columns == {"id": [1, 2], "x": [0.5, None]} and jsonl.texts(columns["x"]) == ["0.5", None]
    assert loc.where(1) == f"{tmp_path / 't.jsonl'}:2"
    parquet = open_table(tmp_path / "t.parquet")
    assert parquet.header == ["id", "x"] and parquet.read(["id"])[0] == {"id": [1]}
    assert parquet.texts([1, None]) == ["1", None]


def test_jsonl_header_is_the_keys_of_the_first_objects(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = ["not json", "[1]"] + [json.dumps({"id": i}) for i in range(HEADER_OBJECTS)] + ['{"id": 0, "late": 1}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert open_table(path).header == ["id"]  # "late" comes after the first HEADER_OBJECTS values
    with pytest.raises(InputError) as exc:
        open_table(path).read(["id"])
    assert f"{path}:1: line 1 is not valid JSON" in str(exc.value) and f"{path}:2: line 2 holds an array" in str(exc.value)


def test_problems_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,name\n1,a\n2,b,extra\n", encoding="utf-8")
    table = open_table(path, ROLE)
    with pytest.raises(InputError) as exc:
        table.read(["nmae"])
    missing, row = exc.value.problems  # every problem at once
    assert missing.where == f"{path}:1" and "column 'nmae' not found (test file)" in missing.message
    assert "did you mean 'name'?" in missing.fix
    assert row.where == f"{path}:3" and "row 3 has 3 cells but the header has 2 columns" in row.message
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,name\n1,Gen\xe8ve\n".encode("latin-1"))
    with pytest.raises(InputError) as exc:
        open_table(latin, ROLE).read(["name"])
    assert exc.value.problems[0].where == f"{latin}:2"
    bad_header = tmp_path / "h.csv"
    bad_header.write_text('id,"open\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        open_table(bad_header, ROLE)
    assert exc.value.problems[0].where == f"{bad_header}:1" and "the header row cannot be parsed" in str(exc.value)


def test_path_problems_follow_the_role(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("id\n1\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        open_table(tmp_path / "dta.csv", ROLE)
    [problem] = exc.value.problems
    assert "no such test file" in problem.message and problem.fix == "did you mean 'data.csv'? check --test"
    assert no_such_path_problem(tmp_path / "no" / "x.csv", "file", "fix").message.endswith("does not exist either)")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(InputError, match="is a directory, expected a test file"):
        open_table(tmp_path / "d.csv", ROLE)
    (tmp_path / "t.xlsx").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="unsupported file type '.xlsx' for a test file"):
        open_table(tmp_path / "t.xlsx", ROLE)
    os.mkfifo(tmp_path / "p.csv")
    with pytest.raises(InputError, match=r"is a named pipe \(FIFO\), not a regular file"):
        open_table(tmp_path / "p.csv", ROLE)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="cannot read the Parquet file"):
        open_table(tmp_path / "bad.parquet", ROLE)


def test_empty_files(tmp_path: Path) -> None:
    empty = tmp_path / "e.csv"
    empty.write_text("\n", encoding="utf-8")
    header_only = tmp_path / "h.csv"
    header_only.write_text("id,x\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        open_table(empty, ROLE)
    assert "the test file is empty" in str(exc.value) and "write a header such as id,x" in str(exc.value)
    with pytest.raises(InputError, match="has a header but no rows"):
        open_table(header_only, ROLE).read(["x"])
    # allowed: a table of no rows
    assert open_table(empty, ROLE, allow_empty=True).read(["x"])[0] == {"x": []}
    assert open_table(header_only, ROLE, allow_empty=True).read(["x"])[0] == {"x": []}


def test_a_format_given_is_read_whatever_the_name(tmp_path: Path) -> None:
    path = tmp_path / "labels.txt"
    path.write_text("id,x\n1,a\n", encoding="utf-8")
    table = open_table(path, fmt="csv")
    assert table.fmt == "csv" and table.read(["x"])[0] == {"x": ["a"]}


def test_a_table_file_in_another_dialect(tmp_path: Path) -> None:
    from er_framework.io.csv_dialect import CsvDialect

    path = tmp_path / "t.csv"
    path.write_bytes("id;x\n1;'é;è'\n2;b\n".encode("cp1252"))
    table = open_table(path, ROLE, dialect=CsvDialect(delimiter=";", quote="'", encoding="cp1252"))
    assert table.header == ["id", "x"]
    columns, _ = table.read(["id", "x"])
    assert columns == {"id": ["1", "2"], "x": ["é;è", "b"]}
