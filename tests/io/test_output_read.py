"""Tests for er_framework.io.output_read: reading er's outputs back."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from er_framework.errors import InputError
from er_framework.io.output_read import large_strings, read_output_columns, read_pairs_csv
from er_framework.io.output_write import write_outputs

# ---------------------------------------------------------------- helpers


def write_csv(path: Path, rows: list[list[Any]], delimiter: str = ",") -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


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


def test_read_output_columns_csv_and_parquet(tmp_path: Path) -> None:
    table = {"source": ["s", "s", "t"], "id": ["a", "b,c", ""], "cluster_id": np.array([0, 0, 7])}
    for fmt in ("csv", "parquet"):
        write_outputs(tmp_path / fmt, {"clusters": table}, {}, fmt=fmt)
        cols = read_output_columns(tmp_path / fmt / f"clusters.{fmt}", ("source", "id", "cluster_id"))
        assert {c: a.to_pylist() for c, a in cols.items()} == {
            "source": ["s", "s", "t"],
            "id": ["a", "b,c", ""],
            "cluster_id": ["0", "0", "7"],
        }
        assert all(a.type == pa.large_string() for a in cols.values())
    assert large_strings(pa.chunked_array([], pa.string())).to_pylist() == []
    assert large_strings(np.array(["x", "y"])).to_pylist() == ["x", "y"]


def test_read_output_columns_names_the_line_of_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "clusters.csv"
    path.write_text('source,id,cluster_id\ns,a,0\ns,"b\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"clusters\.csv:3: cannot parse the CSV file"):
        read_output_columns(path, ("source", "id", "cluster_id"))
    path.write_text("source,idd,cluster_id\ns,a,0\n", encoding="utf-8")
    with pytest.raises(InputError, match="did you mean 'idd'"):
        read_output_columns(path, ("source", "id", "cluster_id"))
