"""Tests for er_framework.io.data_file: the checks of a path, gzip, UTF-8, regular files only, problems capped
per kind (through read_source, as a source's file meets them)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import pytest

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.formats import MAX_ROW_PROBLEMS
from er_framework.io.source_files import read_source

# ---------------------------------------------------------------- helpers


def problems_text(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


def read(path: Path, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return read_source(path, id_column=id_column, fields=fields, name="src", **kw)


def test_gzip_csv_and_jsonl(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "d.csv.gz", "wt", encoding="utf-8", newline="") as f:
        f.write("id,name\n1,é\n")
    with gzip.open(tmp_path / "d.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write('{"id": 1, "name": "é"}\n')
    for name in ("d.csv.gz", "d.jsonl.gz"):
        recs = read(tmp_path / name, ["name"])
        assert recs.ids == ["1"] and recs.fields["name"] == ["é"]


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


def test_fifo_source_is_refused_before_opening(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    os.mkfifo(path)
    with pytest.raises(InputError, match=r"is a named pipe \(FIFO\), not a regular file"):
        read(path, ["t"])


def test_row_problems_are_capped_with_a_count(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,t\n" + ",x\n" * 25)
    with pytest.raises(InputError) as exc:
        read(path, ["t"])
    problems = exc.value.problems
    assert len(problems) == MAX_ROW_PROBLEMS + 1
    assert "15 more rows with a missing id" in problems[-1].message
