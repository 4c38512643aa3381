"""Tests for er_framework.io.csv_read: CSV and TSV sources (through read_source)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.source_files import read_source

# ---------------------------------------------------------------- helpers


def write_csv(path: Path, rows: list[list[Any]], delimiter: str = ",") -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


def problems_text(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


def read(path: Path, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return read_source(path, id_column=id_column, fields=fields, name="src", **kw)


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
    path.write_bytes(b'\xef\xbb\xbfid,name\r\n1,Ann\r\n2,"Bo\r\nb"\r\n')
    recs = read(path, ["name"])
    assert recs.ids == ["1", "2"]
    assert recs.fields["name"] == ["Ann", "Bo\r\nb"]


def test_tsv(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.tsv", [["id", "name"], ["1", "a, b"], ["2", "tab\there"]], "\t")
    recs = read(path, ["name"])
    assert recs.ids == ["1", "2"]
    assert recs.fields["name"] == ["a, b", "tab\there"]


def test_header_only_csv_is_an_error(tmp_path: Path) -> None:
    # issue 18 case 22: a source without any record is an error, not an empty result
    path = write_csv(tmp_path / "d.csv", [["id", "t"]])
    with pytest.raises(InputError, match="has a header but no rows"):
        read(path, ["t"])
    # one partition of a file may hold no row: that is not an error
    recs = read_source(path, id_column="id", fields=["t"], name="src", byte_range=(0, 3))
    assert len(recs) == 0 and recs.fields == {"t": []}


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


def test_semicolon_csv_hint(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id;name\n1;a\n")
    with pytest.raises(InputError) as exc:
        read(path, ["name"])
    assert "';'-separated" in problems_text(exc)


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


def test_record_limit_counts_utf8_bytes(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,t\na,"' + "é" * 600 + '"\n', encoding="utf-8")  # 600 characters, 1200 bytes
    with pytest.raises(InputError, match="larger than the limit"):
        read(path, ["t"], max_record_mb=1000 / 2**20)
    assert read(path, ["t"], max_record_mb=1300 / 2**20).fields["t"] == ["é" * 600]


# ---------------------------------------------------------------- csv: quote and separator (issue 33)


def test_another_quote_character_whole_split_and_reference_agree() -> None:
    from er_framework.io.csv_read import read_csv_columns

    text = "id|name|note\n1|'a|b'|x\"y\n2|'it''s'|'two\nlines'\n3|c|\n"
    fast = read_csv_columns(text, "f.csv", "|", ["id", "name", "note"], "id", "", quote="'")
    slow = read_csv_columns(text, "f.csv", "|", ["id", "name", "note"], "id", "", quote="'", split_whole=False)
    assert fast[0] == slow[0] == {"id": ["1", "2", "3"], "name": ["a|b", "it's", "c"], "note": ['x"y', "two\nlines", ""]}
    assert fast[1].numbers == slow[1].numbers == [2, 3, 5]
    plain = 'id|name\n1|say "hi"\n2|b\n'  # a double quote is a plain character when ' quotes
    assert read_csv_columns(plain, "f.csv", "|", ["name"], "id", "", quote="'")[0] == {"name": ['say "hi"', "b"]}


def test_a_sources_header_of_another_separator_names_the_csv_setting() -> None:
    from er_framework.io.csv_read import read_csv_columns

    _, _, problems = read_csv_columns("id;name\n1;a\n", "f.csv", ",", ["id", "name"], "id", "", dialect_option=True)
    assert all('set csv: {delimiter: ";"} on the source' in p.fix for p in problems) and len(problems) == 2
    _, _, problems = read_csv_columns("id,name\n1,a\n", "f.csv", ";", ["id", "name"], "id", "", dialect_option=True)
    assert 'set csv: {delimiter: ","} on the source' in problems[0].fix
