"""write_outputs' CSV files are byte for byte what csv.writer (comma, QUOTE_MINIMAL, CRLF) writes, whether the
cells are joined directly (no cell needs quoting: io.output_write.csv_texts) or csv.writer writes them (commas,
quotes, CR, LF, NUL, a one-column row with an empty cell, other value types)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import er_framework.io.output_write as output_write
from er_framework.io.output_write import csv_texts, write_outputs


def reference_csv(columns: dict[str, Any]) -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\r\n")
    names = list(columns)
    w.writerow(names)
    cols = [c.tolist() if isinstance(c, np.ndarray) else list(c) for c in columns.values()]
    w.writerows(zip(*cols))
    return buf.getvalue().encode("utf-8")


def written(tmp_path: Path, columns: dict[str, Any]) -> bytes:
    out = tmp_path / "out"
    write_outputs(out, {"t": columns}, {}, fmt="csv")
    return (out / "t.csv").read_bytes()


def test_typical_output_tables(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 5000
    cols = {
        "left_source": np.array(["A"] * n, dtype=object),
        "left_id": np.array([f"a{i}" for i in range(n)], dtype=object),
        "right_id": [f"b{i}é" for i in range(n)],
        "score": rng.random(n) ** 7,
        "cluster_id": rng.integers(0, 10**9, n),
        "flag": (rng.random(n) > 0.5).tolist(),
        "maybe": [None if i % 7 == 0 else str(i) for i in range(n)],
    }
    cols["score"][:6] = [0.0, 1.0, 1e-300, 1e300, 0.9999999999999996, 5e-324]
    assert written(tmp_path, cols) == reference_csv(cols)
    assert csv_texts([list(c) if not isinstance(c, np.ndarray) else c.tolist() for c in cols.values()]) is not None


@pytest.mark.parametrize("special", [",", '"', "\r", "\n", "\r\n", "\x00", "a,b", 'say "hi"'])
def test_cells_that_need_quoting(tmp_path: Path, special: str) -> None:
    cols = {"id": ["x", special, "y"], "n": [1, 2, 3]}
    assert csv_texts([cols["id"], cols["n"]]) is None
    assert written(tmp_path, cols) == reference_csv(cols)


def test_one_column_with_an_empty_cell_and_other_types(tmp_path: Path) -> None:
    for cols in (
        {"id": ["a", "", "b"]},
        {"id": ["a", None]},
        {"x": [1.5, float("nan"), math.inf, -math.inf]},
        {"x": [np.float32(0.5), 1]},
        {"x": [object(), "a"]},
        {"x": []},
        {"x": [], "y": []},
        {"a": ["", ""], "b": [None, ""]},
    ):
        (tmp_path / "o").mkdir(exist_ok=True)
        assert written(tmp_path / "o", cols) == reference_csv(cols), cols


def test_writes_in_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output_write, "CSV_ROWS_PER_WRITE", 7)
    cols = {"a": [str(i) for i in range(50)], "b": list(range(50))}
    assert written(tmp_path, cols) == reference_csv(cols)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=6)), st.integers(), st.floats()), max_size=30), st.booleans())
def test_random_tables(rows: list[tuple[Any, int, float]], one: bool) -> None:
    import tempfile

    cols: dict[str, Any] = {"s": [r[0] for r in rows]}
    if not one:
        cols["i"] = [r[1] for r in rows]
        cols["f"] = [r[2] for r in rows]
    try:
        "".join(filter(None, cols["s"])).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate cannot be written either way
    with tempfile.TemporaryDirectory() as d:
        assert written(Path(d), cols) == reference_csv(cols)
