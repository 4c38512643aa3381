"""er_framework.io.part_tables: tables written in parts (by workers), assembled in the stage, committed as one set.

The reference is :func:`~er_framework.io.output_write.write_files` on the concatenated rows: CSV byte for byte,
Parquet the same rows and schema read back with pyarrow.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from distributed import Client, LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.errors import ErError, InputError
from er_framework.executors import run_job
from er_framework.io import output_write
from er_framework.io.output_names import DATASET_MANIFEST, is_dataset_dir
from er_framework.io.output_read import find_table, read_manifest, read_output_columns, read_output_table
from er_framework.io.output_write import write_files
from er_framework.io.outputs import JOURNAL, STAGE_PREFIX, OutputStage, publish, recover
from er_framework.io.part_tables import PARTS_SUFFIX, PartInfo, assemble_tables, parts_dir, write_table_part

ROOT = Path(__file__).resolve().parents[2]

Columns = dict[str, Any]

#: a pairs table whose cells need quoting (commas, quotes, CR/LF), with unicode, empty strings and None
PAIRS: Columns = {
    "left_source": ["a", "a", "a", "b", "a", "b", "a"],
    "left_id": ["1", 'quo"te', "com,ma", "naïve ☃", "", "line\nbreak", "cr\rlf"],
    "right_source": ["b", "b", "b", "b", "b", "b", None],
    "right_id": ["2", "3", "4", "日本", "x", "y", "z"],
    "score": np.array([0.1, 1 / 3, 0.5, 1e-300, 2.0, float("inf"), 0.7]),
}
#: a clusters table with no cell to quote (the fast path), int labels
CLUSTERS: Columns = {
    "source": ["a"] * 9,
    "id": [f"r{i}" for i in range(9)],
    "cluster_id": np.array([0, 0, 1, 2, 2, 2, 3, 4, 5], dtype=np.int64),
}
#: float32 values (numpy's shortest text for the dtype), bools, a column of one empty cell per row
COMPARISONS: Columns = {
    "left_id": ["1", "2", "3", "4"],
    "f": np.array([0.8, 0.1, 1.5, -0.0], dtype=np.float32),
    "ok": [True, False, True, None],
    "score": [0.25, 0.5, 1.0, 0.125],
}
ONE_COLUMN: Columns = {"id": ["", "a", "", "b"]}  # csv.writer writes a row of one empty cell as ""


def rows_of(columns: Columns, lo: int, hi: int) -> Columns:
    return {c: v[lo:hi] for c, v in columns.items()}


def length(columns: Columns) -> int:
    return len(next(iter(columns.values())))


def split_at(columns: Columns, cuts: Sequence[int]) -> list[Columns]:
    """The rows cut at ``cuts`` (a cut repeated gives an empty part)."""
    bounds = [0, *cuts, length(columns)]
    return [rows_of(columns, lo, hi) for lo, hi in zip(bounds, bounds[1:])]


TABLES: dict[str, Columns] = {"pairs": PAIRS, "clusters": CLUSTERS, "comparisons": COMPARISONS, "golden": ONE_COLUMN}
SPLITS = {
    "one part": lambda n: [],
    "every row": lambda n: list(range(1, n)),
    "empty parts": lambda n: [0, 0, 2, 2, n, n],
    "two": lambda n: [n // 2],
}


def written_in_parts(stage: Path, tables: dict[str, Columns], cuts: Any, fmt: str) -> tuple[dict[str, int], dict[str, list[PartInfo]]]:
    n_parts: dict[str, int] = {}
    infos: dict[str, list[PartInfo]] = {}
    for name, columns in tables.items():
        parts = split_at(columns, cuts(length(columns)))
        infos[name] = [write_table_part(stage, name, k, part, fmt) for k, part in reversed(list(enumerate(parts)))]
        n_parts[name] = len(parts)
    return n_parts, infos


@pytest.mark.parametrize("split", list(SPLITS))
def test_csv_assembled_from_parts_is_byte_for_byte_what_write_files_writes(tmp_path: Path, split: str) -> None:
    reference = tmp_path / "ref"
    reference.mkdir()
    write_files(reference, TABLES, {}, fmt="csv")
    stage = tmp_path / "stage"
    stage.mkdir()
    n_parts, infos = written_in_parts(stage, TABLES, SPLITS[split], "csv")
    done = assemble_tables(stage, {n: list(t) for n, t in TABLES.items()}, n_parts, "csv", parts=infos)
    for name, columns in TABLES.items():
        assert (stage / f"{name}.csv").read_bytes() == (reference / f"{name}.csv").read_bytes(), name
        assert done[name].entry == f"{name}.csv" and done[name].rows == length(columns) and done[name].parts == n_parts[name]
        assert done[name].bytes == (stage / f"{name}.csv").stat().st_size
        assert not parts_dir(stage, name).exists()
    assert sorted(os.listdir(stage)) == sorted(f"{n}.csv" for n in TABLES)


def test_csv_rows_are_the_same_across_write_steps_and_for_an_empty_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output_write, "CSV_ROWS_PER_WRITE", 2)  # the joined fast path, a few rows at a time
    empty = {"source": [], "id": [], "cluster_id": np.array([], dtype=np.int64)}
    tables = {"clusters": CLUSTERS, "candidates": rows_of(PAIRS, 0, 0)}
    (tmp_path / "ref").mkdir()
    write_files(tmp_path / "ref", {**tables, "golden": empty}, {}, fmt="csv")
    (tmp_path / "stage").mkdir()
    n_parts, infos = written_in_parts(tmp_path / "stage", tables, SPLITS["empty parts"], "csv")
    assemble_tables(tmp_path / "stage", {n: list(t) for n, t in tables.items()}, n_parts, "csv")
    assemble_tables(tmp_path / "stage", {"golden": list(empty)}, 0, "csv")  # a table of no parts: its header
    for name in (*tables, "golden"):
        assert (tmp_path / "stage" / f"{name}.csv").read_bytes() == (tmp_path / "ref" / f"{name}.csv").read_bytes(), name


@pytest.mark.parametrize("split", list(SPLITS))
def test_a_parquet_dataset_holds_the_rows_and_schema_write_files_gives(tmp_path: Path, split: str) -> None:
    tables = {"pairs": PAIRS, "clusters": CLUSTERS, "comparisons": COMPARISONS}
    reference = tmp_path / "ref"
    reference.mkdir()
    write_files(reference, tables, {}, fmt="parquet")
    stage = tmp_path / "stage"
    stage.mkdir()
    n_parts, infos = written_in_parts(stage, tables, SPLITS[split], "parquet")
    done = assemble_tables(stage, {n: list(t) for n, t in tables.items()}, n_parts, "parquet", parts=infos)
    for name, columns in tables.items():
        assert is_dataset_dir(stage / name) and done[name].entry == name and done[name].rows == length(columns)
        want = pq.read_table(reference / f"{name}.parquet")
        got = pq.read_table(stage / name)  # pyarrow's own dataset reading: the manifest is ignored (a "_" file)
        assert got.schema.remove_metadata().equals(want.schema.remove_metadata()), (name, got.schema, want.schema)
        assert got.to_pylist() == want.to_pylist(), name
        manifest = json.loads((stage / name / DATASET_MANIFEST).read_text())
        assert manifest["rows"] == length(columns) and len(manifest["parts"]) == n_parts[name]
        assert [c["name"] for c in manifest["columns"]] == list(columns)
        cols = list(columns)
        assert read_output_columns(stage / name, cols).keys() == read_output_columns(reference / f"{name}.parquet", cols).keys()
        for c in cols:
            a = read_output_columns(stage / name, [c])[c].to_pylist()
            assert a == read_output_columns(reference / f"{name}.parquet", [c])[c].to_pylist(), (name, c)
        assert [v for _, v in read_output_table(stage / name, cols)] == [
            v for _, v in read_output_table(reference / f"{name}.parquet", cols)
        ]


def test_a_parquet_table_of_no_rows_or_no_parts_reads_back_empty(tmp_path: Path) -> None:
    empty = rows_of(PAIRS, 0, 0)
    (tmp_path / "ref").mkdir()
    write_files(tmp_path / "ref", {"pairs": empty}, {}, fmt="parquet")
    for n in (0, 3):
        stage = tmp_path / f"stage{n}"
        stage.mkdir()
        for k in range(n):
            write_table_part(stage, "pairs", k, empty, "parquet")
        assemble_tables(stage, {"pairs": list(PAIRS)}, n, "parquet")
        got, want = (
            pq.read_table(stage / "pairs", schema=read_manifest(stage / "pairs").schema),
            pq.read_table(tmp_path / "ref" / "pairs.parquet"),
        )
        assert got.num_rows == 0 and got.schema.names == want.schema.names
        assert read_output_columns(stage / "pairs", ["left_id"])["left_id"].to_pylist() == []


def test_a_retried_part_overwrites_the_first_attempt_whole(tmp_path: Path) -> None:
    for fmt in ("csv", "parquet"):
        stage = tmp_path / fmt
        stage.mkdir()
        write_table_part(stage, "clusters", 0, CLUSTERS, fmt)
        (parts_dir(stage, "clusters") / f".part-00000.{fmt}.tmp-killed").write_bytes(b"half")  # a killed attempt
        info = write_table_part(stage, "clusters", 0, rows_of(CLUSTERS, 0, 2), fmt)
        assert info == PartInfo("clusters", 0, 2, info.bytes, f"part-00000.{fmt}", ("source", "id", "cluster_id"))
        assemble_tables(stage, {"clusters": list(CLUSTERS)}, 1, fmt, parts={"clusters": [info]})
        assert [v for _, v in read_output_table(find_table(stage, "clusters") or stage, ["id"])] == [["r0"], ["r1"]]
        assert not parts_dir(stage, "clusters").exists()


def test_missing_extra_or_foreign_parts_are_errors_naming_the_part(tmp_path: Path) -> None:
    for fmt in ("csv", "parquet"):
        stage = tmp_path / fmt
        stage.mkdir()
        infos = [write_table_part(stage, "pairs", k, part, fmt) for k, part in enumerate(split_at(PAIRS, [2, 4]))]
        (parts_dir(stage, "pairs") / f"part-00001.{fmt}").unlink()  # a lost write
        with pytest.raises(ErError, match=r"table 'pairs': part 1 \(part-00001\.\w+\) is missing") as err:
            assemble_tables(stage, {"pairs": list(PAIRS)}, 3, fmt)
        assert "run the job again" in str(err.value)
        infos[1] = write_table_part(stage, "pairs", 1, split_at(PAIRS, [2, 4])[1], fmt)
        with pytest.raises(ErError, match=r"part-00002\.\w+ is not one of its 2 part\(s\)"):
            assemble_tables(stage, {"pairs": list(PAIRS)}, 2, fmt)  # an extra part
        with pytest.raises(ErError, match="no worker reported part 2"):
            assemble_tables(stage, {"pairs": list(PAIRS)}, 3, fmt, parts={"pairs": infos[:2]})
        bad = PartInfo("pairs", 0, 2, infos[0].bytes, infos[0].file, ("left_id",))
        with pytest.raises(ErError, match=r"part 0 \(part-00000\.\w+\) has the columns \['left_id'\]"):
            assemble_tables(stage, {"pairs": list(PAIRS)}, 3, fmt, parts={"pairs": [bad, *infos[1:]]})
        assert sorted(os.listdir(stage)) == [f"pairs{PARTS_SUFFIX}"]  # nothing assembled
        assemble_tables(stage, {"pairs": list(PAIRS)}, 3, fmt, parts={"pairs": infos})
    stage = tmp_path / "cols"
    stage.mkdir()
    write_table_part(stage, "pairs", 0, {"left_id": ["1"]}, "parquet")
    with pytest.raises(ErError, match=r"part 0 \(part-00000\.parquet\) has the columns \['left_id'\]"):
        assemble_tables(stage, {"pairs": list(PAIRS)}, 1, "parquet")


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown output table 'notes'"):
        write_table_part(tmp_path, "notes", 0, CLUSTERS, "csv")
    with pytest.raises(ValueError, match="unknown output format 'xlsx'"):
        write_table_part(tmp_path, "pairs", 0, PAIRS, "xlsx")
    with pytest.raises(ValueError, match="part_no must be an integer >= 0"):
        write_table_part(tmp_path, "pairs", -1, PAIRS, "csv")
    with pytest.raises(ValueError, match="columns have different lengths"):
        write_table_part(tmp_path, "pairs", 0, {"a": [1], "b": [1, 2]}, "csv")
    with pytest.raises(ValueError, match="needs the table's columns"):
        write_table_part(tmp_path, "pairs", 0, {}, "csv")
    with pytest.raises(InputError, match="the run's stage folder is not there"):
        write_table_part(tmp_path / "gone", "pairs", 0, PAIRS, "csv")
    with pytest.raises(ValueError, match="n_parts of table 'pairs' must be an integer >= 0"):
        assemble_tables(tmp_path, {"pairs": list(PAIRS)}, {"clusters": 1}, "csv")


# ------------------------------------------------------------------ written by a LocalCluster's workers, committed as one set


def reference_set(out: Path, tables: dict[str, Columns], report: dict[str, Any], fmt: str) -> None:
    with OutputStage(out) as stage:
        write_files(stage.path, tables, {"report": report}, fmt=fmt)
        stage.commit([f"{n}.{fmt}" for n in tables] + ["report.json"], replace_all=True)


def worker_set(client: Client, out: Path, tables: dict[str, Columns], report: dict[str, Any], fmt: str) -> dict[str, Path]:
    """The tables written in parts by the cluster's workers into the stage, assembled and committed with report.json."""
    with OutputStage(out) as stage:
        futures = {
            name: [
                client.submit(write_table_part, str(stage.path), name, k, part, fmt, pure=False)
                for k, part in enumerate(split_at(t, [1, 1, 3]))
            ]
            for name, t in tables.items()
        }
        infos = {name: client.gather(fs) for name, fs in futures.items()}
        done = assemble_tables(stage, {n: list(t) for n, t in tables.items()}, 4, fmt, parts=infos)
        write_files(stage.path, {}, {"report": report}, fmt=fmt)
        return stage.commit([d.entry for d in done.values()] + ["report.json"], replace_all=True)


def test_a_set_written_by_the_workers_is_what_write_files_gives(tmp_path: Path, dask_cluster: LocalCluster) -> None:
    tables = {"pairs": PAIRS, "clusters": CLUSTERS, "comparisons": COMPARISONS}
    report = {"job": "t", "config_hash": "h", "versions": {}}
    with Client(dask_cluster) as client:
        for fmt in ("csv", "parquet"):
            reference_set(tmp_path / f"ref-{fmt}", tables, report, fmt)
            written = worker_set(client, tmp_path / f"out-{fmt}", tables, report, fmt)
            ref, out = tmp_path / f"ref-{fmt}", tmp_path / f"out-{fmt}"
            assert (out / "report.json").read_bytes() == (ref / "report.json").read_bytes()
            for name in tables:
                found = find_table(out, name)
                assert found is not None and found == written[found.name]
                if fmt == "csv":
                    assert found.read_bytes() == (ref / f"{name}.csv").read_bytes(), name
                else:
                    got, want = pq.read_table(found), pq.read_table(ref / f"{name}.parquet")
                    assert got.schema.remove_metadata().equals(want.schema.remove_metadata()) and got.to_pylist() == want.to_pylist()
            assert not [e for e in os.listdir(out) if e.startswith(".")]
        # the next run in the other format replaces the set: no pairs/ beside pairs.csv, and back
        worker_set(client, tmp_path / "out-csv", tables, report, "parquet")
        assert sorted(os.listdir(tmp_path / "out-csv")) == ["clusters", "comparisons", "pairs", "report.json"]
        worker_set(client, tmp_path / "out-csv", {"pairs": PAIRS}, report, "csv")
        assert sorted(os.listdir(tmp_path / "out-csv")) == ["pairs.csv", "report.json"]


# ------------------------------------------------------------------ killed between the parts and the commit

_WRITER = textwrap.dedent(
    """
    import sys
    from er_framework.io.outputs import OutputStage
    from er_framework.io.part_tables import assemble_tables, write_table_part
    from er_framework.io.output_write import write_files

    out, fmt = sys.argv[1], sys.argv[2]
    pairs = {"left_source": ["a"] * 4, "left_id": ["1", "2", "3", "4"], "right_source": ["b"] * 4,
             "right_id": ["5", "6", "7", "8"], "score": [0.5, 0.6, 0.7, 0.8]}
    with OutputStage(out) as stage:
        for k in range(2):
            write_table_part(stage.path, "pairs", k, {c: v[2 * k : 2 * k + 2] for c, v in pairs.items()}, fmt)
        done = assemble_tables(stage, {"pairs": list(pairs)}, 2, fmt)
        write_files(stage.path, {}, {"report": {"job": "new", "config_hash": "h", "versions": {}}})
        stage.commit([done["pairs"].entry, "report.json"], replace_all=True)
    """
)


def snapshot(folder: Path) -> dict[str, Any]:
    return {p.name: (snapshot(p) if p.is_dir() else p.read_bytes()) for p in sorted(folder.iterdir()) if not p.name.startswith(".")}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("point", ["before_commit", "in_commit"])
def test_a_kill_between_the_parts_and_the_commit_leaves_one_whole_set(tmp_path: Path, fmt: str, point: str) -> None:
    out = tmp_path / "out"
    publish(out, {"pairs.csv": "old pairs\r\n", "clusters.csv": "old clusters\r\n", "report.json": '{"job": "old"}\n'})
    before = snapshot(out)
    marker = tmp_path / "paused"
    env = {**os.environ, "ER_TEST_PAUSE": f"{point}:{marker}", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(out), fmt], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the writer never reached the pause point"
        time.sleep(0.05)
    stages = [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    assert len(stages) == 1 and (out / stages[0] / (f"pairs.{fmt}" if fmt == "csv" else "pairs")).exists()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    recover(out)  # what the next er command does first
    after = snapshot(out)
    if point == "before_commit":
        assert after == before  # the parts and the assembled table never reached the folder
    else:  # the journal was written: the commit is completed
        assert json.loads(after["report.json"])["job"] == "new" and "clusters.csv" not in after
        rows = [v for _, v in read_output_table(find_table(out, "pairs") or out, ["left_id", "right_id"])]
        assert rows == [["1", "5"], ["2", "6"], ["3", "7"], ["4", "8"]]
    assert not (out / JOURNAL).exists() and not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]


# ------------------------------------------------------------------ a run's folder with its tables as dataset folders


def as_datasets(out: Path, n_parts: int = 3) -> list[str]:
    """Rewrite the tables of the run in ``out`` (``NAME.csv`` / ``NAME.parquet``) as dataset folders ``NAME/`` of
    ``n_parts`` parts (as a Dask run writes them), committed with a copy of its report.json; returns the tables."""
    names = [p.name.rsplit(".", 1)[0] for p in sorted(out.iterdir()) if p.suffix in (".csv", ".parquet") and p.is_file()]
    with OutputStage(out) as stage:
        for name in names:
            path = find_table(out, name)
            assert path is not None
            table = pq.read_table(path) if path.suffix == ".parquet" else None
            cols = read_output_columns(path, table.schema.names if table is not None else _csv_header(path))
            values = {c: (table.column(c).to_pylist() if table is not None else a.to_pylist()) for c, a in cols.items()}
            size = length(values)
            for k in range(n_parts):
                write_table_part(stage.path, name, k, rows_of(values, k * size // n_parts, (k + 1) * size // n_parts), "parquet")
        assemble_tables(stage, {n: list(_columns_of(out, n)) for n in names}, n_parts, "parquet")
        (stage.path / "report.json").write_bytes((out / "report.json").read_bytes())
        stage.commit([*names, "report.json"], replace_all=True)
    return names


def _csv_header(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as f:
        return next(csv.reader(f))


def _columns_of(out: Path, name: str) -> list[str]:
    path = out / f"{name}.parquet"
    return list(pq.read_schema(path).names) if path.is_file() else _csv_header(out / f"{name}.csv")


def test_find_table_finds_a_dataset_only_with_its_manifest_and_read_manifest_checks_its_parts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    reference_set(out, {"clusters": CLUSTERS}, {"job": "t", "config_hash": "h", "versions": {}}, "csv")
    assert find_table(out, "clusters") == out / "clusters.csv" and find_table(out, "pairs") is None
    (out / "pairs").mkdir()
    (out / "pairs" / "part-00000.parquet").write_bytes(b"")
    assert find_table(out, "pairs") is None  # no manifest: an unfinished write, not a table
    assert as_datasets(out, 2) == ["clusters"]
    assert find_table(out, "clusters") == out / "clusters" and not (out / "clusters.csv").exists()
    rows = [v for _, v in read_output_table(out / "clusters", ["id", "cluster_id"])]
    assert rows == [[f"r{i}", str(c)] for i, c in enumerate(CLUSTERS["cluster_id"].tolist())]  # as read from clusters.csv
    assert read_manifest(out / "clusters").rows == [4, 5]
    part = out / "clusters" / "part-00001.parquet"
    kept = part.read_bytes()
    part.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="part-00001.parquet is not a Parquet file"):
        read_manifest(out / "clusters")
    pq.write_table(pq.read_table(out / "clusters" / "part-00000.parquet"), part)  # a part of other rows
    with pytest.raises(InputError, match="part-00001.parquet holds 4 rows, its manifest says 5"):
        read_output_columns(out / "clusters", ["id"])
    part.unlink()
    with pytest.raises(InputError, match="the part part-00001.parquet its manifest lists is missing"):
        list(read_output_table(out / "clusters", ["id"]))
    part.write_bytes(kept)
    (out / "clusters" / DATASET_MANIFEST).write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not a complete dataset folder er wrote: _manifest.json cannot be read"):
        read_manifest(out / "clusters")


def documents_run(tmp_path: Path) -> Path:
    """configs/documents.yaml run with every candidate written (``output: {candidates: true}``): its output folder."""
    job = yaml.safe_load((ROOT / "configs" / "documents.yaml").read_text(encoding="utf-8"))
    job["sources"][0]["path"] = str(ROOT / "configs" / "data" / "docs.jsonl")
    job["output"] = {"format": "csv", "candidates": True}
    path = tmp_path / "documents.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    out = tmp_path / "documents-out"
    run_job(parse_job(path), out)
    return out
