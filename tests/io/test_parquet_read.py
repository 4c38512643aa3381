"""Tests for er_framework.io.parquet_read: Parquet sources (through read_source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.source_files import read_source

# ---------------------------------------------------------------- helpers


def problems_text(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


def read(path: Path, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return read_source(path, id_column=id_column, fields=fields, name="src", **kw)


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


def test_missing_column_parquet(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["a"], "name": ["x"]}), tmp_path / "d.parquet")
    with pytest.raises(InputError) as exc:
        read(tmp_path / "d.parquet", ["nmae"])
    assert "did you mean 'name'?" in problems_text(exc)


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
