"""Tests for er_framework.io.jsonl_read: JSON Lines sources (through read_source)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.jsonl_read import split_lines
from er_framework.io.source_files import read_source

# ---------------------------------------------------------------- helpers


def write_jsonl(path: Path, objs: list[Any]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    return path


def problems_text(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


def read(path: Path, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return read_source(path, id_column=id_column, fields=fields, name="src", **kw)


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


def test_missing_column_jsonl_uses_union_of_keys(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "title": "x"}, {"id": "b", "author": "y"}])
    with pytest.raises(InputError) as exc:
        read(path, ["titles", "author"])
    assert len(exc.value.problems) == 1
    text = problems_text(exc)
    assert "column 'titles' not found" in text
    assert "did you mean 'title'?" in text
    assert "author, id, title" in text


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


def test_jsonl_lines_are_split_lazily_like_str_split() -> None:
    @given(st.text(alphabet="ab\n\r {}", max_size=40))
    def check(text: str) -> None:
        assert list(split_lines(text)) == text.split("\n")

    check()


def test_duplicate_key_and_lone_surrogate_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "a", "t": "x"}\n{"id": "b", "t": "y", "t": "z"}\n{"id": "c", "t": "\\udfff"}\n'
        '{"id": "d", "t": "\\ud83d\\ude00 ok"}\n{"id": "e", "n": {"k": 1, "k": 2}, "t": "w"}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as exc:
        read(path, ["t"])
    text = problems_text(exc)
    assert f"{path}:2: line 2: the key 't' appears twice" in text
    assert f"{path}:5: line 5: the key 'k' appears twice" in text
    assert f"{path}:3: line 3 holds a lone UTF-16 surrogate \\udfff" in text
    assert ":4" not in text.replace(f"{path}:", "§")  # the pair on line 4 is a character
