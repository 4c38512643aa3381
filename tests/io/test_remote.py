"""Sources named by URL (issue 30), read through fsspec: ``memory://`` and ``file://`` only (no network)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import LocalCluster

from er_framework.config.resolve import parse_job
from er_framework.errors import ConfigError, InputError
from er_framework.executors import run_job
from er_framework.io.fingerprint import changed_inputs, fingerprint
from er_framework.io.remote import expand_url, is_url, local_path, open_url, url_filesystem, url_info, url_protocol
from er_framework.io.source_files import read_source
from er_framework.synth.documents import planted_documents


@pytest.fixture
def memfs() -> Iterator[fsspec.AbstractFileSystem]:
    fs = fsspec.filesystem("memory")
    yield fs
    fs.rm("/er-test", recursive=True) if fs.exists("/er-test") else None


def test_what_is_a_url() -> None:
    assert url_protocol("s3://bucket/a.csv") == "s3" and url_protocol("GS://b/x") == "gs"
    assert not is_url("data/a.csv") and not is_url("C:/data/a.csv") and not is_url("C://data") and not is_url(Path("/x"))
    assert local_path("file:///tmp/a%20b.csv") == Path("/tmp/a b.csv")
    assert local_path("memory://x/a.csv") is None and local_path("a.csv") == Path("a.csv")


def test_a_missing_protocol_package_names_the_package() -> None:
    with pytest.raises(InputError) as e:
        url_filesystem("s3://bucket/a.csv", "job.yaml: sources[0].path")
    p = e.value.problems[0]
    assert p.where == "job.yaml: sources[0].path" and "needs the package s3fs" in p.message and p.fix == "pip install s3fs"
    with pytest.raises(InputError, match="gcsfs"):
        read_source("gs://bucket/a.parquet", id_column="id", fields=["x"], name="s")
    with pytest.raises(InputError, match="unknown URL protocol 'nope'"):
        read_source("nope://bucket/a.csv", id_column="id", fields=["x"], name="s")


def test_a_job_naming_a_url_is_checked_when_it_is_loaded(tmp_path: Path, memfs: fsspec.AbstractFileSystem) -> None:
    job = tmp_path / "job.yaml"
    base = "sources: [{name: s, path: '%s', id: id, fields: [text]}]\nshingler: {type: word}\nsignature: {type: minhash}\n"
    base += "blocker: {type: lsh_bands}\nverifier: {type: jaccard}\nthreshold: 0.5\n"
    job.write_text(base % "s3://bucket/docs.jsonl")
    with pytest.raises(ConfigError) as e:
        parse_job(job)
    assert [p.fix for p in e.value.problems] == ["pip install s3fs"] and "job.yaml:1" in e.value.problems[0].where
    job.write_text(base % "memory://er-test/missing.jsonl")
    with pytest.raises(ConfigError, match="cannot read 'memory://er-test/missing.jsonl'"):
        parse_job(job)
    job.write_text(base % "memory://er-test/none-*.jsonl")
    with pytest.raises(ConfigError, match="matches no file"):
        parse_job(job)


def test_urls_read_like_the_local_file(tmp_path: Path, memfs: fsspec.AbstractFileSystem) -> None:
    local = tmp_path / "a.csv"
    local.write_text("id,name\n1,ann\n2,\n3,bob\n", encoding="utf-8")
    memfs.pipe("/er-test/a.csv", local.read_bytes())
    want = read_source(local, id_column="id", fields=["name"], name="s")
    for url in ("memory://er-test/a.csv", f"file://{local}"):
        got = read_source(url, id_column="id", fields=["name"], name="s")
        assert (got.ids, got.fields) == (want.ids, want.fields), url
    pq.write_table(pa.table({"id": [1, 2], "name": ["ann", None]}), tmp_path / "a.parquet")
    memfs.pipe("/er-test/a.parquet", (tmp_path / "a.parquet").read_bytes())
    got = read_source("memory://er-test/a.parquet", id_column="id", fields=["name"], name="s")
    assert got.ids == ["1", "2"] and got.fields["name"] == ["ann", None]
    with pytest.raises(InputError, match="no such file"):
        read_source("memory://er-test/b.csv", id_column="id", fields=["name"], name="s")
    memfs.pipe("/er-test/bad.csv", b"id,name\n1,\xff\n")
    with pytest.raises(InputError, match="not valid UTF-8"):
        read_source("memory://er-test/bad.csv", id_column="id", fields=["name"], name="s")
    with pytest.raises(InputError, match="is a folder"):
        open_url("memory://er-test", "memory://er-test", "")


def test_globs_on_urls_and_fingerprints(memfs: fsspec.AbstractFileSystem) -> None:
    for k in (2, 0, 1):
        memfs.pipe(f"/er-test/g/part-{k}.jsonl", json.dumps({"id": f"r{k}", "text": "x"}).encode() + b"\n")
    memfs.pipe("/er-test/g/other.txt", b"")
    found = expand_url("memory://er-test/g/part-*.jsonl")
    assert found == [f"memory:///er-test/g/part-{k}.jsonl" for k in range(3)]
    then = fingerprint(found[0])
    assert then["kind"] == "url" and then["size"] > 0 and then["version"] and then["path"] == found[0]
    assert changed_inputs([then], [found[0]]) == []
    memfs.pipe("/er-test/g/part-0.jsonl", b'{"id": "r0", "text": "changed"}\n')
    assert changed_inputs([then], [found[0]])
    memfs.rm("/er-test/g/part-0.jsonl")
    assert "cannot be read now" in changed_inputs([then], [found[0]])[0][1]
    assert "error" in url_info("s3://bucket/x.csv")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = planted_documents(60, copies_per_family=(1, 3), words=(20, 40), edit_rates=(0.0, 0.1), n_singletons=150, seed=5)
    path = tmp_path_factory.mktemp("remote") / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(d.texts)), encoding="utf-8")
    return path


def _job(tmp: Path, path: str, executor: str, tag: str) -> Path:
    cfg = tmp / f"{tag}.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 7
        threshold: 0.6
        sources: [{{name: docs, path: '{path}', id: id, fields: [text]}}]
        shingler: {{type: char, k: 4}}
        signature: {{type: fss, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        """)
        + (f"executor: {executor}\n" if executor else "")
    )
    return cfg


def _outputs(cfg: Path, out: Path) -> tuple[bytes, bytes]:
    run_job(parse_job(cfg), out)
    return (out / "pairs.csv").read_bytes(), (out / "clusters.csv").read_bytes()


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_url_sources_give_the_local_answer_locally_and_on_dask(tmp_path: Path, corpus: Path, memfs: fsspec.AbstractFileSystem) -> None:
    plain = _outputs(_job(tmp_path, str(corpus), "", "plain"), tmp_path / "plain")
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    for k in range(0, len(lines), 100):
        memfs.pipe(f"/er-test/docs/part-{k // 100:02d}.jsonl", "".join(lines[k : k + 100]).encode())
    url = "memory://er-test/docs/part-*.jsonl"
    assert _outputs(_job(tmp_path, url, "", "mem"), tmp_path / "mem") == plain
    assert _outputs(_job(tmp_path, f"file://{corpus}", "", "file"), tmp_path / "file") == plain
    report = json.loads((tmp_path / "mem" / "report.json").read_text())
    assert [r["path"] for r in report["inputs"] if r.get("source") == "docs"] == expand_url(url)
    # memory:// is this process's: the workers of an in-process cluster share it
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=None) as lc:
        executor = f"{{type: dask, address: '{lc.scheduler_address}'}}"
        assert _outputs(_job(tmp_path, url, executor, "mem_dask"), tmp_path / "mem_dask") == plain
        assert _outputs(_job(tmp_path, f"file://{corpus}", executor, "file_dask"), tmp_path / "file_dask") == plain
