"""Tests for er_framework.io.parquet_read: Parquet sources (through read_source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.parquet_read import integral_floats_as_integers
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


def _naive_texts(values: list[Any]) -> list[str | None]:
    """The reference reading of a float column: integers' text when every present value is a whole number that
    fits 64 bits, else each value's JSON text (``json.dumps``); NaN and null missing."""
    import json
    import math

    present = [v for v in values if v is not None and not math.isnan(v)]
    whole = all(math.isfinite(v) and v.is_integer() and -(2**63) <= v < 2**63 for v in present)
    return [None if v is None or math.isnan(v) else str(int(v)) if whole else json.dumps(v) for v in values]


@pytest.mark.parametrize(
    "values",
    [
        [1999.0, float("nan"), 2001.0, None],
        [19151111.0, 1.9151111e7, -3.0, -0.0],
        [1999.0, 12.5, None],
        [1.0, float("inf")],
        [1.0, 1e20],
        [float("nan"), None],
    ],
)
def test_float_columns_of_whole_numbers_read_as_integers(tmp_path: Path, values: list[Any]) -> None:
    for typ in (pa.float64(), pa.float32()):
        if typ == pa.float32() and any(v is not None and abs(v) == 1.9151111e7 for v in values):
            continue  # not exact in 32 bits
        table = pa.table({"id": [str(i) for i in range(len(values))], "x": pa.array(values, typ)})
        pq.write_table(table, tmp_path / "d.parquet")
        got = read(tmp_path / "d.parquet", ["x"]).fields["x"]
        assert got == _naive_texts([None if v is None else float(pa.scalar(v, typ).as_py()) for v in values])
    assert integral_floats_as_integers(
        pa.table({"x": [1.0, 2.0], "y": [1.5, 2.0], "s": ["1.0", "2.0"]}), ["x", "y", "s", "gone"]
    ).to_pydict() == {
        "x": [1, 2],
        "y": [1.5, 2.0],
        "s": ["1.0", "2.0"],
    }
    # the id column is left alone (a float id is refused as before)
    pq.write_table(pa.table({"id": [1.0, 2.0], "x": ["a", "b"]}), tmp_path / "f.parquet")
    with pytest.raises(InputError, match="is a float"):
        read(tmp_path / "f.parquet", ["x"])
