"""Tables given in memory read in partitions (issue 30): Dask DataFrames and pandas DataFrames as sources, with the
local executor and on Dask, give the answer of the same rows as a CSV file."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
import pytest
from distributed import LocalCluster

import er_framework
from er_framework.api import load_job
from er_framework.errors import ErError, InputError
from er_framework.executors.dask import plan_parts
from er_framework.io.frame_parts import frame_chunks, is_dask_frame, read_frame_source, records_from_chunk
from er_framework.io.frames import records_from_frame
from er_framework.synth.documents import planted_documents


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    d = planted_documents(60, copies_per_family=(1, 3), words=(20, 40), edit_rates=(0.0, 0.1), n_singletons=150, seed=11)
    df = pd.DataFrame({"id": [f"d{i}" for i in range(len(d.texts))], "text": d.texts, "n": range(len(d.texts))})
    path = tmp_path_factory.mktemp("frames") / "docs.csv"
    df.to_csv(path, index=False)
    return path, df


def _job(tmp: Path, path: str | None, executor: str, tag: str) -> Path:
    cfg = tmp / f"{tag}.yaml"
    where = f"path: '{path}', " if path else ""
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 7
        threshold: 0.6
        sources: [{{name: docs, {where}id: id, fields: [text, n]}}]
        shingler: {{type: char, k: 4, fields: [text]}}
        signature: {{type: fss, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        """)
        + (f"executor: {executor}\n" if executor else "")
    )
    return cfg


def _answer(cfg: Path, out: Path, sources: dict[str, Any] | None = None) -> tuple[bytes, bytes]:
    er_framework.run(cfg, sources=sources, out=out)
    return (out / "pairs.csv").read_bytes(), (out / "clusters.csv").read_bytes()


def test_chunks_of_a_table_and_of_a_dask_frame_read_as_the_whole(corpus: tuple[Path, pd.DataFrame]) -> None:
    _, df = corpus
    opts: dict[str, Any] = {"id_column": "id", "fields": ["text", "n"], "name": "s"}
    whole = records_from_frame(df, where="sources['s']", **opts)
    for obj in (df, dd.from_pandas(df, npartitions=4, sort=False)):
        chunks = frame_chunks(obj, "sources['s']", 2000)
        assert len(chunks) >= 4
        parts = [records_from_chunk(c, where=w, **opts) for w, c in chunks]
        assert [i for p in parts for i in p.ids] == whole.ids
        assert [v for p in parts for v in p.fields["text"]] == whole.fields["text"] and parts[0].fields["n"][:2] == ["0", "1"]
        got = read_frame_source(obj, where="sources['s']", **opts)
        assert (got.ids, got.fields) == (whole.ids, whole.fields)
    assert is_dask_frame(dd.from_pandas(df, npartitions=2)) and not is_dask_frame(df)
    # an Arrow table: the same chunks
    assert len(frame_chunks(pa.Table.from_pandas(df, preserve_index=False), "t", 10**9)) == 1


def test_bad_dask_frames_are_clear_errors(corpus: tuple[Path, pd.DataFrame]) -> None:
    _, df = corpus
    opts: dict[str, Any] = {"id_column": "id", "fields": ["text"], "name": "s", "where": "sources['s']"}
    dup = dd.from_pandas(pd.concat([df.iloc[:5], df.iloc[:5]]), npartitions=2, sort=False)
    with pytest.raises(InputError, match="d0"):
        read_frame_source(dup, **opts)
    with pytest.raises(InputError, match="has no rows"):
        read_frame_source(dd.from_pandas(df.iloc[:0], npartitions=1), **opts)
    with pytest.raises(InputError, match="column 'txt' not found") as e:
        read_frame_source(dd.from_pandas(df, npartitions=2), **{**opts, "fields": ["txt"]})
    assert "partition 1 of 2" in e.value.problems[0].where


def test_frame_sources_give_the_csv_answer_locally_and_on_dask(
    tmp_path: Path, corpus: tuple[Path, pd.DataFrame], dask_cluster: LocalCluster
) -> None:
    path, df = corpus
    plain = _answer(_job(tmp_path, str(path), "", "plain"), tmp_path / "plain")
    ddf = dd.from_pandas(df, npartitions=5, sort=False)
    assert _answer(_job(tmp_path, None, "", "ddf_local"), tmp_path / "ddf_local", {"docs": ddf}) == plain
    executor = f"{{type: dask, address: '{dask_cluster.scheduler_address}', partition_mb: 0.01}}"
    cfg = _job(tmp_path, None, executor, "frames_dask")
    assert _answer(cfg, tmp_path / "ddf_dask", {"docs": ddf}) == plain
    assert _answer(cfg, tmp_path / "pandas_dask", {"docs": df}) == plain
    report = json.loads((tmp_path / "ddf_dask" / "report.json").read_text())
    assert report["executor"]["partitions"] == 5
    assert json.loads((tmp_path / "pandas_dask" / "report.json").read_text())["executor"]["partitions"] > 1


def test_plan_parts_holds_no_computed_partition(tmp_path: Path, corpus: tuple[Path, pd.DataFrame]) -> None:
    _, df = corpus
    ddf = dd.from_pandas(df, npartitions=3, sort=False)
    job = load_job(_job(tmp_path, None, "{type: dask, address: 'tcp://127.0.0.1:1'}", "plan"), sources={"docs": ddf})
    parts = plan_parts(job, 1.0)
    assert len(parts) == 3 and all(hasattr(p.data, "dask") for p in parts)  # the partitions' graphs, not their rows
    assert [p.path for p in parts][0] == "sources[0] 'docs' (given in memory), partition 1 of 3"


def test_an_id_in_two_partitions_of_a_frame_is_an_error_on_dask(
    tmp_path: Path, corpus: tuple[Path, pd.DataFrame], dask_cluster: LocalCluster
) -> None:
    _, df = corpus
    dup = dd.from_pandas(pd.concat([df.iloc[:50], df.iloc[:1]]), npartitions=2, sort=False)
    executor = f"{{type: dask, address: '{dask_cluster.scheduler_address}'}}"
    with pytest.raises(ErError, match="d0"):
        er_framework.run(_job(tmp_path, None, executor, "dup"), sources={"docs": dup}, out=tmp_path / "dup")
