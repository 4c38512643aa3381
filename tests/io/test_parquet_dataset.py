"""Parquet datasets as sources (issue 30): folders of Parquet files with hive partitions, local and on Dask, give the
answer of the same rows as one CSV file; bad datasets are clear errors naming the file."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.errors import ErError, InputError
from er_framework.executors import run_job
from er_framework.io.fingerprint import changed_inputs, fingerprint
from er_framework.io.parquet_dataset import DatasetFile, dataset_files, dataset_header, hive_partitions, is_parquet_dataset
from er_framework.io.source_files import read_source

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ["given_name", "surname", "street_number", "address_1", "suburb", "postcode", "state", "date_of_birth", "soc_sec_id"]
ROWS = 1200


def _febrl_rows(name: str) -> tuple[list[str], list[list[str]]]:
    """The first :data:`ROWS` rows of a Febrl4 file, sorted by state (the order of the dataset's folders)."""
    with open(ROOT / "configs" / "data" / "febrl" / f"febrl4_{name}.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1 : ROWS + 1]
    at = header.index("state")
    for r in body:  # few folders (few Dask partitions): the other states missing, in the CSV as in the dataset
        r[at] = r[at] if r[at] in ("nsw", "vic", "qld") else ""
    body.sort(key=lambda r: r[at] or "__HIVE_DEFAULT_PARTITION__")  # the order of the folders, state=VALUE
    return header, body


def write_pair(tmp: Path, name: str) -> tuple[Path, Path]:
    """One Febrl4 file as a CSV and as a hive-partitioned Parquet dataset by ``state`` (the same rows, same order)."""
    header, body = _febrl_rows(name)
    csv_path = tmp / f"{name}.csv"
    with open(csv_path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header, *body])
    at = header.index("state")
    root = tmp / f"{name}_dataset"
    groups: dict[str, list[list[str]]] = {}
    for r in body:
        groups.setdefault(r[at] or "__HIVE_DEFAULT_PARTITION__", []).append(r)
    for state, rows in groups.items():
        folder = root / f"state={state}"
        folder.mkdir(parents=True)
        cols = {h: [r[j] or None for r in rows] for j, h in enumerate(header) if h != "state"}
        half = (len(rows) + 1) // 2  # two files per folder: part-0 before part-1
        pq.write_table(pa.table({k: v[:half] for k, v in cols.items()}), folder / "part-0.parquet")
        pq.write_table(pa.table({k: v[half:] for k, v in cols.items()}), folder / "part-1.parquet")
    (root / "_SUCCESS").write_text("")
    return csv_path, root


def febrl_job(tmp: Path, paths: tuple[str, str], executor: dict[str, Any] | None, tag: str) -> Path:
    """configs/febrl4.yaml on ``paths`` (without address_2; ``state`` is the datasets' hive partition column)."""
    data = yaml.safe_load((ROOT / "configs" / "febrl4.yaml").read_text(encoding="utf-8"))
    for src, path in zip(data["sources"], paths):
        src["path"] = path
        src["fields"] = FIELDS
    data["normalize"].pop("address_2", None)
    data["verifier"]["fields"] = [f for f in data["verifier"]["fields"] if f["field"] != "address_2"]
    data.pop("output", None)
    if executor is not None:
        data["executor"] = executor
    path = tmp / f"{tag}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def outputs(cfg: Path, out: Path) -> tuple[bytes, bytes]:
    run_job(parse_job(cfg), out)
    return (out / "pairs.csv").read_bytes(), (out / "clusters.csv").read_bytes()


@pytest.fixture(scope="module")
def febrl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[Path, Path], tuple[Path, Path], tuple[bytes, bytes]]:
    tmp = tmp_path_factory.mktemp("dataset")
    a_csv, a_ds = write_pair(tmp, "a")
    b_csv, b_ds = write_pair(tmp, "b")
    plain = outputs(febrl_job(tmp, (str(a_csv), str(b_csv)), None, "csv"), tmp / "csv_out")
    assert plain[0].count(b"\n") > 100  # a real answer: many pairs
    return tmp, (a_csv, b_csv), (a_ds, b_ds), plain


def test_hive_partitions_of_a_relative_path() -> None:
    assert hive_partitions("year=2024/m=1/part-0.parquet") == (("year", "2024"), ("m", "1"))
    assert hive_partitions("x/a%2Fb=c%20d/f.parquet") == (("a/b", "c d"),)
    assert hive_partitions("state=__HIVE_DEFAULT_PARTITION__/f.parquet") == (("state", None),)
    assert hive_partitions("f.parquet") == ()


def test_a_dataset_reads_as_its_csv_with_partition_columns_as_text(febrl: Any) -> None:
    _, (a_csv, _), (a_ds, _), _ = febrl
    assert is_parquet_dataset(a_ds) and not is_parquet_dataset(a_csv) and not is_parquet_dataset(a_ds / "nothing")
    files = dataset_files(a_ds)
    assert [f.location for f in files] == sorted(f.location for f in files) and not any("_SUCCESS" in f.location for f in files)
    assert files[0].partitions[0][0] == "state"
    want = read_source(a_csv, id_column="rec_id", fields=FIELDS, name="a")
    got = read_source(a_ds, id_column="rec_id", fields=FIELDS, name="a")
    assert got.ids == want.ids and got.fields == want.fields
    assert "state" in dataset_header(a_ds)
    # one file of the dataset, as the Dask executor reads a partition
    one = read_source(files[0].location, id_column="rec_id", fields=["surname", "state"], name="a", hive=files[0].partitions)
    assert set(one.fields["state"]) == {files[0].partitions[0][1]}


def test_a_dataset_gives_the_csv_answer_locally_and_on_dask(febrl: Any, dask_cluster: LocalCluster) -> None:
    tmp, _, (a_ds, b_ds), plain = febrl
    local = outputs(febrl_job(tmp, (str(a_ds), str(b_ds)), None, "ds_local"), tmp / "ds_local")
    assert local == plain
    executor = {"type": "dask", "address": dask_cluster.scheduler_address, "partition_mb": 0.01}
    assert outputs(febrl_job(tmp, (str(a_ds), str(b_ds)), executor, "ds_dask"), tmp / "ds_dask") == plain


def test_a_glob_of_parquet_files_gives_the_answer_of_one_file(tmp_path: Path, febrl: Any) -> None:
    _, (a_csv, b_csv), _, plain = febrl
    for name, path in (("a", a_csv), ("b", b_csv)):
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        for k in range(0, len(rows) - 1, 500):
            chunk = rows[1 + k : 1 + k + 500]
            pq.write_table(
                pa.table({h: [r[j] or None for r in chunk] for j, h in enumerate(rows[0])}), tmp_path / f"{name}-{k:05d}.parquet"
            )
    assert outputs(febrl_job(tmp_path, ("a-*.parquet", "b-*.parquet"), None, "glob"), tmp_path / "glob") == plain


def test_fingerprints_of_a_dataset_see_a_new_or_changed_file(tmp_path: Path) -> None:
    root = tmp_path / "d.parquet"
    (root / "k=1").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"], "x": ["1"]}), root / "k=1" / "f.parquet")
    then = fingerprint(root)
    assert then["kind"] == "dataset" and then["files"] == 1
    assert changed_inputs([then], [root]) == []
    pq.write_table(pa.table({"id": ["b"], "x": ["2"]}), root / "k=1" / "g.parquet")
    assert "Parquet files" in changed_inputs([then], [root])[0][1]


def _read(path: Path, fields: list[str] | None = None) -> Any:
    return read_source(path, id_column="id", fields=fields or ["x"], name="s")


def test_bad_datasets_are_clear_errors_naming_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    empty.mkdir()
    with pytest.raises(InputError, match="holds no .parquet file") as e:
        _read(empty)
    assert "point the path to a folder of .parquet files" in e.value.problems[0].fix
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pq.write_table(pa.table({"id": ["a"], "x": ["1"]}), mixed / "p0.parquet")
    pq.write_table(pa.table({"id": ["b"], "y": ["1"]}), mixed / "p1.parquet")
    with pytest.raises(InputError) as e:
        _read(mixed)
    assert e.value.problems[0].where == str(mixed / "p1.parquet") and "column 'x' not found" in e.value.problems[0].message
    assert "file 2 of the 2 of the Parquet dataset" in e.value.problems[0].message
    broken = tmp_path / "broken"
    broken.mkdir()
    pq.write_table(pa.table({"id": ["a"], "x": ["1"]}), broken / "p0.parquet")
    (broken / "p1.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="cannot read the Parquet file") as e:
        _read(broken)
    assert e.value.problems[0].where == str(broken / "p1.parquet") and "remove it from the dataset" in e.value.problems[0].fix
    dup = tmp_path / "dup"
    dup.mkdir()
    pq.write_table(pa.table({"id": ["a"], "x": ["1"]}), dup / "p0.parquet")
    pq.write_table(pa.table({"id": ["a"], "x": ["2"]}), dup / "p1.parquet")
    with pytest.raises(InputError, match="more than one file"):
        _read(dup)
    clash = tmp_path / "clash"
    (clash / "x=1").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"], "x": ["1"]}), clash / "x=1" / "p0.parquet")
    with pytest.raises(InputError, match="appears more than once"):
        _read(clash)
    rowless = tmp_path / "rowless"
    rowless.mkdir()
    pq.write_table(pa.table({"id": pa.array([], pa.string()), "x": pa.array([], pa.string())}), rowless / "p0.parquet")
    with pytest.raises(InputError, match="has no rows"):
        _read(rowless)


def test_a_job_on_a_dataset_checks_its_columns_before_reading(tmp_path: Path) -> None:
    root = tmp_path / "people"
    (root / "year=2024").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a", "b"], "name": ["anna", "anne"]}), root / "year=2024" / "f.parquet")
    job = tmp_path / "job.yaml"
    job.write_text(
        "sources: [{name: p, path: people, id: id, fields: [name, year]}]\n"
        "blockers: [{type: field_hash, fields: [year]}]\n"
        "verifier: {type: field_score, threshold: 5, fields: [{field: name, scorer: ratio}]}\n"
    )
    out = run_job(parse_job(job), tmp_path / "out")
    assert len(out.pairs) == 1
    job.write_text(job.read_text().replace("[name, year]", "[name, yeer]").replace("fields: [year]", "fields: [yeer]"))
    with pytest.raises(ErError, match="yeer"):
        parse_job(job)


def test_a_plain_folder_of_pages_is_not_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "a.html").write_text("<p>hi</p>")
    (tmp_path / "pages" / "b.parquet").write_bytes(b"")
    assert not is_parquet_dataset(tmp_path / "pages")
    assert DatasetFile(os.fspath(tmp_path / "x.parquet")).partitions == ()
