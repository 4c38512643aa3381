"""Tests for er_framework.io.output_write: writing outputs atomically."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from er_framework.errors import InputError
from er_framework.io import output_write as eio
from er_framework.io.output_read import read_clusters_csv, read_pairs_csv
from er_framework.io.output_write import write_outputs

# ---------------------------------------------------------------- helpers


def listing(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` (relative name -> content), hidden ones included."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()} | {
        str(p.relative_to(d)) + "/": b"" for p in d.rglob("*") if p.is_dir()
    }


def test_write_csv_and_json(tmp_path: Path) -> None:
    out = tmp_path / "out" / "nested"
    paths = write_outputs(
        out,
        {
            "pairs": {
                "left_source": ["a", "a"],
                "left_id": ["1", "x,y"],
                "right_source": ["b", "b"],
                "right_id": np.array([2, 3]),
                "score": np.array([0.8, 1 / 3], dtype=np.float32),
            },
            "clusters": {"source": ["a", "b"], "id": ["1", "2"], "cluster_id": ["c0", "c0"]},
        },
        {"report": {"n": np.int64(3), "recall": np.float64(0.75), "names": ["é"]}},
    )
    assert paths == {
        "pairs": out / "pairs.csv",
        "clusters": out / "clusters.csv",
        "report": out / "report.json",
    }
    text = (out / "pairs.csv").read_bytes().decode("utf-8")
    assert text.splitlines()[0] == "left_source,left_id,right_source,right_id,score"
    assert "0.8\r\n" in text and "0.800000011920929" not in text
    assert read_pairs_csv(out / "pairs.csv") == [
        ("a", "1", "b", "2", 0.8),
        ("a", "x,y", "b", "3", pytest.approx(1 / 3, rel=1e-6)),
    ]
    assert read_clusters_csv(out / "clusters.csv") == [("a", "1", "c0"), ("b", "2", "c0")]
    report = (out / "report.json").read_text(encoding="utf-8")
    assert json.loads(report) == {"n": 3, "recall": 0.75, "names": ["é"]}
    assert report.startswith('{\n  "n": 3')  # indent=2, keys in the given order
    assert sorted(os.listdir(out)) == ["clusters.csv", "pairs.csv", "report.json"]


def test_write_float64_precision(tmp_path: Path) -> None:
    write_outputs(tmp_path, {"t": {"x": np.array([0.1, 0.1 + 0.2]), "y": [0.8, 1e-7]}}, {})
    rows = list(csv.reader(open(tmp_path / "t.csv", newline="", encoding="utf-8")))
    assert rows == [["x", "y"], ["0.1", "0.8"], ["0.30000000000000004", "1e-07"]]


def test_write_parquet_round_trip(tmp_path: Path) -> None:
    paths = write_outputs(
        tmp_path,
        {"pairs": {"left_source": ["a"], "left_id": ["1"], "right_source": ["b"], "right_id": ["2"], "score": np.array([0.5])}},
        {"report": {}},
        fmt="parquet",
    )
    assert paths["pairs"] == tmp_path / "pairs.parquet"
    table = pq.read_table(paths["pairs"])
    assert table.column_names == ["left_source", "left_id", "right_source", "right_id", "score"]
    assert read_pairs_csv(paths["pairs"]) == [("a", "1", "b", "2", 0.5)]


def test_write_replaces_existing_outputs(tmp_path: Path) -> None:
    write_outputs(tmp_path, {"t": {"a": [1]}}, {"r": {"v": 1}})
    write_outputs(tmp_path, {"t": {"a": [2]}}, {"r": {"v": 2}})
    assert (tmp_path / "t.csv").read_bytes() == b"a\r\n2\r\n"
    assert json.loads((tmp_path / "r.json").read_text()) == {"v": 2}
    assert sorted(os.listdir(tmp_path)) == ["r.json", "t.csv"]


def test_write_validation_errors_leave_dir_untouched(tmp_path: Path) -> None:
    write_outputs(tmp_path, {"t": {"a": [1]}}, {"r": {"v": 1}})
    before = listing(tmp_path)
    with pytest.raises(ValueError, match="different lengths"):
        write_outputs(tmp_path, {"t": {"a": [1, 2], "b": [1]}}, {})
    with pytest.raises(ValueError, match="r.json"):
        write_outputs(tmp_path, {"t": {"a": [5]}}, {"r": {"v": math.nan}})
    with pytest.raises(ValueError, match="invalid table name"):
        write_outputs(tmp_path, {"../t": {"a": [5]}}, {})
    with pytest.raises(ValueError, match="format"):
        write_outputs(tmp_path, {"t": {"a": [5]}}, {}, fmt="xlsx")
    assert listing(tmp_path) == before


def test_failure_while_writing_temp_files_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_outputs(tmp_path, {"t": {"a": [1]}}, {"r": {"v": 1}})
    before = listing(tmp_path)

    def boom(target: Path, columns: Any, *rest: Any) -> None:
        Path(target).write_text("partial")
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(eio, "_write_csv", boom)
    with pytest.raises(InputError) as exc:
        write_outputs(tmp_path, {"t": {"a": [2]}}, {"r": {"v": 2}})
    assert "No space left on device" in str(exc.value)
    assert listing(tmp_path) == before  # no partial files, no temp dir


def test_failure_on_second_rename_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_outputs(out, {"pairs": {"a": [1]}}, {"report": {"v": 1}})
    before = listing(out)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src: Any, dst: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(5, "Input/output error", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(InputError) as exc:
        write_outputs(out, {"pairs": {"a": [2]}, "clusters": {"b": [3]}}, {"report": {"v": 2}})
    assert "Input/output error" in str(exc.value)
    assert listing(out) == before  # old pairs.csv restored, no clusters.csv, no temp dir


def test_failure_in_new_dir_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError(5, "EIO", dst)))
    with pytest.raises(InputError):
        write_outputs(tmp_path / "new", {"t": {"a": [1]}}, {})
    assert not (tmp_path / "new").exists()


def test_out_dir_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("I am a file")
    with pytest.raises(InputError) as exc:
        write_outputs(tmp_path / "out", {"t": {"a": [1]}}, {})
    assert "is not a directory" in str(exc.value)
    assert (tmp_path / "out").read_text() == "I am a file"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores permissions")
def test_out_dir_not_writable(tmp_path: Path) -> None:
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        with pytest.raises(InputError) as exc:
            write_outputs(out, {"t": {"a": [1]}}, {})
        assert "permission denied" in str(exc.value)
    finally:
        out.chmod(0o755)


def test_permission_denied_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(**kw: Any) -> str:
        raise PermissionError(13, "Permission denied", str(kw.get("dir")))

    monkeypatch.setattr(eio.tempfile, "mkdtemp", denied)
    with pytest.raises(InputError) as exc:
        write_outputs(tmp_path, {"t": {"a": [1]}}, {})
    assert "permission denied" in str(exc.value) and str(tmp_path) in str(exc.value)
    assert os.listdir(tmp_path) == []


def test_a_killed_writers_temporary_folder_is_removed_by_the_next_call(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    out = tmp_path / "out"
    dead = out / f".er-tmp-w{proc.pid}-abc123"
    dead.mkdir(parents=True)
    (dead / "persons.csv").write_bytes(b"x" * 4096)  # what kill -9 leaves mid-write
    live = out / f".er-tmp-w{os.getpid()}-def456"
    live.mkdir()
    other = out / ".er-tmp-wnotapid"
    other.mkdir()
    write_outputs(out, {"t": {"a": [1]}}, {})
    assert not dead.exists()
    assert live.exists() and other.exists()  # a live writer's, and a name that is not a writer's, stay
    assert (out / "t.csv").read_bytes() == b"a\r\n1\r\n"
