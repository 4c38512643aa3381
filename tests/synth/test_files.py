"""er_framework.synth.files: every synth file through io/safe_write, every target checked before any is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from er_framework.errors import InputError
from er_framework.synth.files import (
    check_targets,
    csv_kind,
    jsonl_kind,
    parquet_kind,
    table_targets,
    text_kind,
    write_csv,
    write_text,
)


def test_write_csv_replaces_its_own_file_and_refuses_another(tmp_path: Path) -> None:
    kind = csv_kind("truth file", ("id", "entity"))
    path = tmp_path / "truth.csv"
    write_csv(path, "truth file", kind, ("id", "entity"), [("1", "a"), ("2", "b")])
    assert path.read_bytes() == b"id,entity\r\n1,a\r\n2,b\r\n"
    write_csv(path, "truth file", kind, ("id", "entity"), [("3", "c")], lineterminator="\n")  # its own: replaced
    assert path.read_bytes() == b"id,entity\n3,c\n"
    path.write_text("name,phone\nAnn,555\n", encoding="utf-8")
    with pytest.raises(InputError, match="did not write"):
        write_csv(path, "truth file", kind, ("id", "entity"), [("1", "a")])
    assert path.read_text(encoding="utf-8") == "name,phone\nAnn,555\n"


def test_jsonl_kind_reads_the_first_lines_keys() -> None:
    kind = jsonl_kind("prints file", ("id", "minutiae"))
    assert kind.recognizes(b'{"id": "f0-0", "minutiae": [[1.0, 2.0]]}\n{"id": 2}')
    assert not kind.recognizes(b'{"id": "f0-0"}\n')
    assert not kind.recognizes(b"id,minutiae\n")
    assert not kind.recognizes(b"\xff\xfe")


def test_text_kind_and_write_text(tmp_path: Path) -> None:
    kind = text_kind("page", b"<!DOCTYPE html>\n", b"synth-mark")
    page = tmp_path / "p.html"
    write_text(page, "page", kind, "<!DOCTYPE html>\n<p>synth-mark</p>\n")
    write_text(page, "page", kind, "<!DOCTYPE html>\n<p>synth-mark again</p>\n")
    assert page.read_text(encoding="utf-8").endswith("again</p>\n")
    page.write_text("<!DOCTYPE html>\n<p>mine</p>\n", encoding="utf-8")
    with pytest.raises(InputError):
        write_text(page, "page", kind, "<!DOCTYPE html>\n<p>synth-mark</p>\n")


def test_parquet_kind_compares_the_columns(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["1"], "name": ["a"]}), path)
    head = path.read_bytes()[:64]
    assert parquet_kind("table", path, ["id", "name"]).recognizes(head)
    assert not parquet_kind("table", path, ["id", "other"]).recognizes(head)
    assert not parquet_kind("table", path, ["id", "name"]).recognizes(b"id,name\n")


def test_check_targets_reports_every_refusal_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "persons.csv").write_text("mine\n", encoding="utf-8")
    (tmp_path / "truth.csv").write_text("also,mine\n", encoding="utf-8")
    targets = table_targets(tmp_path, "persons", "person records", ["id", "name"], "csv")
    with pytest.raises(InputError) as e:
        check_targets(targets)
    assert len(e.value.problems) == 2
    assert (tmp_path / "persons.csv").read_text(encoding="utf-8") == "mine\n"
    check_targets(table_targets(tmp_path / "new", "persons", "person records", ["id"], "csv"))  # a new folder: nothing to check


def test_check_targets_refuses_a_folder_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "truth.csv").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        check_targets([(tmp_path / "truth.csv", "truth file", csv_kind("truth file", ("id",)))])


def test_the_prints_file_is_byte_identical_to_the_old_writer(tmp_path: Path) -> None:
    import numpy as np

    from er_framework.synth.fingerprints import write_prints_jsonl

    pts = [np.array([[1.23456, 2.0]]), np.zeros((0, 2))]
    write_prints_jsonl(tmp_path / "p.jsonl", ["a", "b"], pts, tmp_path / "t.csv", finger=[0, 0])
    lines = (tmp_path / "p.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == [{"id": "a", "minutiae": [[1.234, 2.0]]}, {"id": "b", "minutiae": []}]
    assert (tmp_path / "t.csv").read_bytes() == b"id,finger\r\na,0\r\nb,0\r\n"
    write_prints_jsonl(tmp_path / "p.jsonl", ["a"], pts[:1], tmp_path / "t.csv", finger=[1])  # again: its own files
    (tmp_path / "t.csv").write_text("mine\n", encoding="utf-8")
    with pytest.raises(InputError):
        write_prints_jsonl(tmp_path / "p.jsonl", ["z"], pts[:1], tmp_path / "t.csv", finger=[1])
    assert json.loads((tmp_path / "p.jsonl").read_text(encoding="utf-8"))["id"] == "a"  # checked before any write
