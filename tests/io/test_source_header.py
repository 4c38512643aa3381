"""io/source_header.py: a data file's columns, read without its data rows."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from er_framework.errors import InputError
from er_framework.io import source_header
from er_framework.io.csv_dialect import CsvDialect
from er_framework.io.source_header import HEADER_OBJECTS, file_format, other_separator_fix, read_header


def test_csv_and_tsv_headers_in_their_dialect(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text('\n\nid,"given, name",zip\n1,2,3\n')
    assert read_header(tmp_path / "a.csv", "id").columns == ["id", "given, name", "zip"]
    (tmp_path / "b.tsv").write_text("id\tname\n")
    assert read_header(tmp_path / "b.tsv", "id").columns == ["id", "name"]
    (tmp_path / "c.csv").write_bytes("id;'nom; prénom'\n1;x\n".encode("latin-1"))
    h = read_header(tmp_path / "c.csv", "id", CsvDialect(delimiter=";", quote="'", encoding="latin-1"))
    assert h.columns == ["id", "nom; prénom"] and h.fmt == "csv" and h.complete
    (tmp_path / "d.csv.gz").write_bytes(gzip.compress(b"id,x\n1,2\n"))
    assert read_header(tmp_path / "d.csv.gz", "id").columns == ["id", "x"]


def test_a_header_is_read_without_the_rows_after_it(tmp_path: Path) -> None:
    p = tmp_path / "a.csv"
    p.write_bytes(b"id,name\n" + b"1,\xff\xfe broken\n" * 10 + b"\n" * (1 << 17) + b"2,\xff\n")
    # bytes that are not UTF-8 in the first rows read with the header are reported; later rows are not read
    with pytest.raises(InputError, match="not valid utf-8"):
        read_header(p, "id")
    p.write_bytes(b"id,name\n" + b"1,ok\n" * 20000 + b"2,\xff\n")
    assert read_header(p, "id").columns == ["id", "name"]


def test_jsonl_keys_of_the_first_objects_and_whether_that_was_the_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text('not json\n{"id": 1, "a": 2}\n[1]\n{"b": null, "id": 3}\n')
    h = read_header(p, "id")
    assert h.columns == ["id", "a", "b"] and h.complete
    lines = [json.dumps({"id": i}) for i in range(HEADER_OBJECTS)] + ['{"id": 0, "late": 1}']
    p.write_text("\n".join(lines) + "\n")
    h = read_header(p, "id")
    assert h.columns == ["id"] and not h.complete


def test_parquet_schema_and_page_folders(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["1"], "x": [1.5]}), tmp_path / "a.parquet")
    assert read_header(tmp_path / "a.parquet", "id").columns == ["id", "x"]
    (tmp_path / "pages").mkdir()
    h = read_header(tmp_path / "pages", "url")
    assert h.columns == ["url", "html"] and h.fmt == "pages"
    with pytest.raises(ValueError):
        read_header(tmp_path / "a.txt", "id")
    assert file_format(Path("x.ndjson.gz")) == ("jsonl", True) and file_format(Path("x.txt")) is None


def test_a_header_not_found_within_the_budget_is_not_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_header, "HEADER_BYTES", 1000)
    p = tmp_path / "a.csv"
    p.write_text("\n" * 5000 + "id,x\n")
    h = read_header(p, "id")
    assert h.columns == [] and not h.complete
    p.write_text("\n" * 10 + "id,x\n")
    assert read_header(p, "id").columns == ["id", "x"]
    q = tmp_path / "a.jsonl"
    q.write_text('{"id": 1, "text": "' + "x" * 5000 + '"}\n')
    assert not read_header(q, "id").complete


def test_the_other_separator_fix() -> None:
    assert 'csv: {delimiter: ";"}' in other_separator_fix(["id;name"], ",", True)
    assert 'csv: {delimiter: "\\t"}' in other_separator_fix(["id\tname"], ",", True)
    assert 'csv: {delimiter: ","}' in other_separator_fix(["id,name"], ";", True)
    assert "comma-separated" in other_separator_fix(["id;name"], ",", False)
    assert other_separator_fix(["id", "name"], ",", True) == ""
