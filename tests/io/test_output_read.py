"""Tests for er_framework.io.output_read: reading er's outputs back."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from er_framework.errors import InputError
from er_framework.io.output_read import read_pairs_csv


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
