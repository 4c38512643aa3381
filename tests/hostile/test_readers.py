"""Issue 18, hostile data files (cases 10, 11, 12, 13, 19 and parts of 22), each as a whole ``er run``.

Every case checks the exit code, that no traceback is printed, the message
(file:line, the fix) and, for the bombs, the process's own peak RSS (under an
address-space limit, so that a regression fails fast instead of swapping).
The inputs are generated in ``tmp_path`` and small on disk: a gzip bomb is a
few concatenated gzip members of one repeated byte.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import stat
import textwrap
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.errors import InputError
from er_framework.io.html import extract_text
from er_framework.io.source_files import partition_ranges, read_source

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX files (FIFOs, /dev/zero)")

MB = 1 << 20


def job(tmp: Path, path: str | Path, *, fields: str = "[text]", extra: str = "", source_extra: str = "", name: str = "job.yaml") -> Path:
    """A small dedup job over one source; returns the YAML's path."""
    cfg = tmp / name
    cfg.write_text(
        textwrap.dedent(f"""
        name: hostile
        mode: dedup
        seed: 1
        threshold: 0.5
        sources:
          - name: docs
            path: {json.dumps(str(path))}
            id: id
            fields: {fields}
        """)
        + textwrap.indent(source_extra, "    ")
        + textwrap.dedent("""
        shingler: {type: char, k: 3}
        signature: {type: minhash, num_perm: 32}
        blockers: [{type: lsh_bands}]
        verifier: {type: jaccard}
        cluster: {type: connected_components}
        """)
        + extra,
        encoding="utf-8",
    )
    return cfg


Er = Any  # the fixture ``er`` of tests/hostile/conftest.py: er(args, ...) -> Ran


def run(er: Er, cfg: Path, **kw: Any) -> Any:
    return er(["run", cfg, "--out", cfg.parent / "out", "--quiet"], **kw)


def gzip_bomb(path: Path, head: bytes, byte: bytes, total: int, tail: bytes = b"") -> None:
    """``head`` + ``total`` bytes of ``byte`` + ``tail``, gzip-compressed as concatenated members
    (gzip reads them as one stream): a few MB on disk, ``total`` bytes decompressed."""
    block = 16 * MB
    member = gzip.compress(byte * block, compresslevel=9)
    with open(path, "wb") as f:
        f.write(gzip.compress(head))
        for _ in range(total // block):
            f.write(member)
        f.write(gzip.compress(tail))


def docs_jsonl(path: Path, n: int = 4) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"document number {i} about things"}) + "\n" for i in range(n)), encoding="utf-8"
    )
    return path


# ---------------------------------------------------------------- case 10: decompression bombs


def test_gzip_bomb_of_one_giant_line_is_refused_with_bounded_memory(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.jsonl.gz"
    gzip_bomb(data, b'{"id": "d1", "text": "ok"}\n{"id": "bomb", "text": "', b"a", 1 << 30, b'"}\n')
    assert data.stat().st_size < 5 * MB
    ran = run(er, job(tmp_path, data), limit_mb=3000, timeout=300)
    ran.assert_clean_error(
        2, f"{data}:2", "id 'bomb'", "larger than the limit of 16 MB", "max_record_mb", "raise sources[i].max_record_mb or split the record"
    )
    assert ran.peak_mb < 1000, ran.peak_mb


def test_gzip_bomb_of_blank_lines_keeps_memory_flat(er: Er, tmp_path: Path) -> None:
    # 1 GiB of newlines holds no record: read in a stream, memory stays that of the process
    data = tmp_path / "docs.jsonl.gz"
    gzip_bomb(data, b"", b"\n", 1 << 30)
    ran = run(er, job(tmp_path, data), limit_mb=3000, timeout=300)
    ran.assert_clean_error(2, str(data), "the file is empty")
    assert ran.peak_mb < 1000, ran.peak_mb


def test_gzip_bomb_csv_giant_quoted_value(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.csv.gz"
    gzip_bomb(data, b'id,text\nd1,ok\nbomb,"', b"a\n", 1 << 30, b'"\n')
    ran = run(er, job(tmp_path, data), limit_mb=3000, timeout=300)
    ran.assert_clean_error(2, f"{data}:3", "id 'bomb'", "max_record_mb", "split the record")
    assert ran.peak_mb < 1000, ran.peak_mb


# ---------------------------------------------------------------- case 19: one huge record


def test_huge_json_value_is_refused_at_read_time(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        f.write(json.dumps({"id": "small", "text": "hello"}) + "\n")
        f.write(json.dumps({"id": "huge", "text": "word " * (5 * MB)}) + "\n")  # 25 MB
    ran = run(er, job(tmp_path, data), limit_mb=3000, timeout=300)
    ran.assert_clean_error(
        2,
        f"{data}:2",
        "id 'huge'",
        "larger than the limit of 16 MB",
        "reading stopped",
        "raise sources[i].max_record_mb or split the record",
    )
    assert ran.peak_mb < 1000, ran.peak_mb


def test_huge_csv_field_is_refused_at_read_time(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.csv"
    with open(data, "w", encoding="utf-8") as f:
        f.write('id,text\nsmall,hello\nhuge,"' + "word\n" * (4 * MB) + '"\n')  # 20 MB over 4M lines
    ran = run(er, job(tmp_path, data), limit_mb=3000, timeout=300)
    ran.assert_clean_error(2, f"{data}:3", "id 'huge'", "larger than the limit of 16 MB", "max_record_mb")
    assert ran.peak_mb < 1000, ran.peak_mb


def test_records_under_the_limit_are_read_whole(tmp_path: Path) -> None:
    # a 12 MB CSV value spread over many lines, and a 12 MB JSON value: read, and exactly
    text = "lorem ipsum\n" * (MB + 1000)
    c = tmp_path / "big.csv"
    c.write_text('id,text\nbig,"' + text + '"\nsmall,x\n', encoding="utf-8")
    recs = read_source(c, id_column="id", fields=["text"], name="s")
    assert recs.ids == ["big", "small"] and recs.fields["text"][0] == text
    j = tmp_path / "big.jsonl"
    j.write_text(json.dumps({"id": "big", "text": text}) + "\n", encoding="utf-8")
    assert read_source(j, id_column="id", fields=["text"], name="s").fields["text"] == [text]
    with pytest.raises(InputError, match=r"line 1 \(id 'big'\) is larger than the limit of 10 MB"):
        read_source(j, id_column="id", fields=["text"], name="s", max_record_mb=10)
    with pytest.raises(InputError, match=r"big.csv:2: the record on line 2 \(id 'big'\) is larger than the limit of 10 MB"):
        read_source(c, id_column="id", fields=["text"], name="s", max_record_mb=10)
    # a complete line over the limit gives its exact size
    j.write_text(
        json.dumps({"id": "small", "text": "x"}) + "\n" + json.dumps({"id": "big", "text": "y" * 600_000}) + "\n", encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"line 2 \(id 'big'\) is 0.6 MB, larger than the limit of 0.5 MB"):
        read_source(j, id_column="id", fields=["text"], name="s", max_record_mb=0.5)


# ---------------------------------------------------------------- case 11: deep and huge HTML


def page_folder(tmp: Path, pages: dict[str, str]) -> Path:
    folder = tmp / "pages"
    folder.mkdir()
    for name, html in pages.items():
        (folder / name).write_text(html, encoding="utf-8")
    return folder


HTML_JOB = "html: {fields: [html], boilerplate: %s}\n"


def test_page_nested_100k_deep_is_read_in_linear_time(er: Er, tmp_path: Path) -> None:
    depth = 100_000
    deep = "<html><body>" + "<div>w%d " * depth + "</div>" * depth + "</body></html>"
    deep = deep.replace("%d", "")  # the same word at every level
    folder = page_folder(tmp_path, {"deep.html": deep, "other.html": "<p>a page about something else</p>"})
    for mode in ("keep", "drop"):
        cfg = job(tmp_path, folder, fields="[html]", source_extra=HTML_JOB % mode, name=f"{mode}.yaml")
        ran = run(er, cfg, timeout=120, limit_mb=3000)  # 38 s (keep) before the depth cap
        assert ran.code == 0, ran.err
        assert ran.peak_mb < 1500, ran.peak_mb
    (text,), _ = extract_text([deep])
    assert text.split() == ["w"] * depth  # every level's text, in order


def test_many_short_paragraphs_with_boilerplate_drop_are_bounded(er: Er, tmp_path: Path) -> None:
    # jusText's classification walked runs of short paragraphs: quadratic (> 5 min for 0.5 MB)
    page = "<html><body>" + "<p>x</p>" * 60_000 + "<p>" + "the story of the day is a long one " * 20 + "</p></body></html>"
    folder = page_folder(tmp_path, {"a.html": page, "b.html": "<p>another page entirely</p>"})
    ran = run(er, job(tmp_path, folder, fields="[html]", source_extra=HTML_JOB % "drop"), timeout=120)
    assert ran.code == 0, ran.err


def test_page_over_max_record_mb_is_refused_unread(er: Er, tmp_path: Path) -> None:
    folder = page_folder(tmp_path, {"ok.html": "<p>fine</p>"})
    with open(folder / "huge.html", "wb") as f:
        f.truncate(40 * MB)  # sparse: 40 MB of NULs
    ran = run(er, job(tmp_path, folder, fields="[html]", source_extra=HTML_JOB % "drop"), timeout=120, limit_mb=3000)
    ran.assert_clean_error(2, str(folder / "huge.html"), "40 MB", "larger than the limit of 16 MB", "max_record_mb")
    assert ran.peak_mb < 500, ran.peak_mb


# ---------------------------------------------------------------- case 12: symlinks, FIFOs, devices


def test_page_folder_skips_symlinks_fifos_and_devices(er: Er, tmp_path: Path) -> None:
    secret = tmp_path / "secret.html"
    secret.write_text("<p>TOPSECRET-PASSWORD text of another file</p>", encoding="utf-8")
    folder = page_folder(tmp_path, {"a.html": "<p>the first page of the site</p>", "b.html": "<p>the second page of the site</p>"})
    (folder / "leak.html").symlink_to(secret)
    (folder / "zero.html").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.html")
    cfg = job(tmp_path, folder, fields="[html]", source_extra=HTML_JOB % "keep")
    ran = run(er, cfg, timeout=120, limit_mb=3000)
    assert ran.code == 0, ran.err
    assert ran.peak_mb < 1000, ran.peak_mb
    out = tmp_path / "out"
    for f in out.iterdir():
        assert b"TOPSECRET" not in f.read_bytes(), f
    stats = json.loads((out / "report.json").read_text(encoding="utf-8"))
    text = json.dumps(stats)
    assert '"skipped_symlinks": 2' in text and "leak.html" in text and "zero.html" in text
    assert '"skipped_special_files": 1' in text and "pipe.html (a named pipe (FIFO))" in text


def test_page_folder_of_links_only_is_an_error(er: Er, tmp_path: Path) -> None:
    secret = tmp_path / "secret.html"
    secret.write_text("<p>elsewhere</p>", encoding="utf-8")
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "leak.html").symlink_to(secret)
    ran = run(er, job(tmp_path, folder, fields="[html]", source_extra=HTML_JOB % "keep"), timeout=120)
    ran.assert_clean_error(2, "could be read", "leak.html", "html.follow_symlinks: true")


def test_follow_symlinks_reads_links_to_regular_files_only(er: Er, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.html"
    other.write_text("<p>LINKED page text</p>", encoding="utf-8")
    folder = page_folder(tmp_path, {"a.html": "<p>the first page</p>"})
    (folder / "linked.html").symlink_to(other)
    (folder / "zero.html").symlink_to("/dev/zero")
    src = "html: {fields: [html], follow_symlinks: true}\n"
    ran = run(er, job(tmp_path, folder, fields="[html]", source_extra=src), timeout=120, limit_mb=3000)
    assert ran.code == 0, ran.err
    stats = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    text = json.dumps(stats)
    assert '"files": 2' in text and '"skipped_special_files": 1' in text and "zero.html" in text


def test_follow_symlinks_unit(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.html"
    other.write_text("<p>LINKED</p>", encoding="utf-8")
    folder = page_folder(tmp_path, {"a.html": "<p>first</p>"})
    (folder / "linked.html").symlink_to(other)
    (folder / "zero.html").symlink_to("/dev/zero")
    recs = read_source(folder, id_column="id", fields=["html"], name="w", follow_symlinks=True)
    assert recs.ids == ["a", "linked"] and "LINKED" in (recs.fields["html"][1] or "")
    recs = read_source(folder, id_column="id", fields=["html"], name="w")
    assert recs.ids == ["a"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_data_file_that_is_not_a_regular_file_is_refused(er: Er, tmp_path: Path, kind: str) -> None:
    data = tmp_path / "docs.jsonl"
    if kind == "fifo":
        os.mkfifo(data)
        needle = "named pipe (FIFO)"
    else:
        data.symlink_to("/dev/zero")
        needle = "character device"
    ran = run(er, job(tmp_path, data), timeout=120, limit_mb=3000)
    # (the job file's paths are resolved: a link is named by its target)
    ran.assert_clean_error(2, str(data) if kind == "fifo" else "/dev/zero", needle, "not a regular file")
    assert ran.peak_mb < 1000
    assert stat.S_ISFIFO(os.stat(data).st_mode) or kind != "fifo"


# ---------------------------------------------------------------- case 13: lone surrogates


def test_lone_surrogate_is_refused_at_read_time(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.jsonl"
    data.write_text('{"id": "a", "text": "fine \\ud83d\\ude00 pair"}\n{"id": "b", "text": "broken \\ud800 half"}\n', encoding="utf-8")
    ran = run(er, job(tmp_path, data), timeout=120)
    ran.assert_clean_error(2, f"{data}:2", "lone UTF-16 surrogate \\ud800", "fix:")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_lone_surrogate_in_index_build_is_refused(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.jsonl"
    data.write_text('{"id": "b", "text": "broken \\udc00 half"}\n', encoding="utf-8")
    ran = er(["index", "build", job(tmp_path, data), "--index", tmp_path / "x.erx"], timeout=120)
    ran.assert_clean_error(2, f"{data}:1", "surrogate")


def test_surrogate_bytes_in_csv_are_invalid_utf8(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.csv"
    data.write_bytes(b"id,text\na,ok\nb,bad \xed\xa0\x80 here\n")
    ran = run(er, job(tmp_path, data), timeout=120)
    ran.assert_clean_error(2, f"{data}:3", "not valid UTF-8")


def test_parquet_string_that_is_not_utf8(er: Er, tmp_path: Path) -> None:
    data = b"ok" + b"bad \xed\xa0\x80"
    offsets = pa.array([0, 2, len(data)], type=pa.int32())
    text = pa.Array.from_buffers(pa.string(), 2, [None, offsets.buffers()[1], pa.py_buffer(data)])
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": pa.array(["a", "b"]), "text": text}), path)
    ran = run(er, job(tmp_path, path), timeout=120)
    ran.assert_clean_error(2, str(path), "row 2", "not valid UTF-8")


# ---------------------------------------------------------------- case 22: empty sources, duplicate keys, partitions


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_source_without_records_is_an_error(er: Er, tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"docs.{kind}"
    if kind == "csv":
        path.write_text("id,text\n\n", encoding="utf-8")
        needle = "has a header but no rows"
    elif kind == "jsonl":
        path.write_text("\n\n", encoding="utf-8")
        needle = "the file is empty"
    else:
        pq.write_table(pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}), path)
        needle = "has no rows"
    ran = run(er, job(tmp_path, path), timeout=120)
    ran.assert_clean_error(2, str(path), needle)


def test_duplicated_json_key_is_a_problem(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "docs.jsonl"
    data.write_text('{"id": "a", "text": "one"}\n{"id": "b", "text": "first", "text": "second"}\n', encoding="utf-8")
    ran = run(er, job(tmp_path, data), timeout=120)
    ran.assert_clean_error(2, f"{data}:2", "the key 'text' appears twice", "name every key once")


def quoted_csv(path: Path, n: int = 300) -> Path:
    rows = ["id,text"]
    for i in range(n):
        body = f'line one of {i}\nline "two" ""quoted""\n\nend {i}' if i % 3 else f"plain {i}"
        rows.append(f'r{i},"{body.replace(chr(34), chr(34) * 2)}"')
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("step", [1, 7, 64, 1000, 10**9])
def test_csv_partitions_cut_only_between_records(tmp_path: Path, step: int) -> None:
    path = quoted_csv(tmp_path / "q.csv")
    whole = read_source(path, id_column="id", fields=["text"], name="s")
    ranges = partition_ranges(path, step)
    assert ranges is not None
    ids: list[str] = []
    texts: list[str | None] = []
    for r in ranges:
        part = read_source(path, id_column="id", fields=["text"], name="s", byte_range=r)
        ids += part.ids
        texts += part.fields["text"]
    assert ids == whole.ids and texts == whole.fields["text"]


def test_csv_partitions_with_a_stray_quote_are_cut_by_parsing(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text('id,text\nr0,5"6 tall\nr1,"two\nlines"\nr2,x\nr3,"a\nb"\n', encoding="utf-8")
    whole = read_source(path, id_column="id", fields=["text"], name="s")
    for step in (1, 5, 11):
        ranges = partition_ranges(path, step)
        assert ranges is not None
        got = [i for r in ranges for i in read_source(path, id_column="id", fields=["text"], name="s", byte_range=r).ids]
        assert got == whole.ids == ["r0", "r1", "r2", "r3"]


def test_dask_run_of_csv_with_quoted_newlines(er: Er, tmp_path: Path) -> None:
    data = quoted_csv(tmp_path / "docs.csv", 200)
    local = run(er, job(tmp_path, data, name="local.yaml"), timeout=300)
    assert local.code == 0, local.err
    expected = {f: (tmp_path / "out" / f).read_bytes() for f in ("pairs.csv", "clusters.csv")}
    cfg = job(tmp_path, data, name="dask.yaml", extra="executor: {type: dask, local_cluster: {n_workers: 2}, partition_mb: 0.001}\n")
    ran = er(["run", cfg, "--out", tmp_path / "dask_out", "--quiet"], timeout=300)
    assert ran.code == 0 and "Traceback" not in ran.err, ran.err
    for f, content in expected.items():
        assert (tmp_path / "dask_out" / f).read_bytes() == content, f


# ---------------------------------------------------------------- case 7 of the brief: fuzzing the readers


VALID_CSV = b'id,text\r\na,"x, ""y"""\r\nb,\r\nc,"multi\nline"\r\n'
VALID_JSONL = b'{"id": "a", "text": "x"}\n{"id": 2, "text": null}\n\n{"id": "c", "text": [1, {"k": "\\u00e9"}]}\n'


def _mutate(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(data)
    for pos, cut, insert in edits:
        p = pos % (len(out) + 1)
        out[p : p + cut] = insert
    return bytes(out)


_edits = st.lists(
    st.tuples(
        st.integers(0, 200),
        st.integers(0, 3),
        st.sampled_from([b"", b'"', b"\n", b",", b"{", b"}", b"\\", b"\xff", b"\xed\xa0\x80", b"\\ud800", b'"id"', b"\r", b"\x00", b"\t"]),
    ),
    max_size=6,
)


def _read_all_ways(path: Path) -> None:
    for kw in ({}, {"max_record_mb": 0.00002}):
        with contextlib.suppress(InputError):
            read_source(path, id_column="id", fields=["text"], name="s", **kw)  # type: ignore[arg-type]
    ranges = partition_ranges(path, 13)
    for r in ranges or []:
        with contextlib.suppress(InputError):
            read_source(path, id_column="id", fields=["text"], name="s", byte_range=r)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["csv", "tsv", "jsonl"]), edits=_edits, compress=st.booleans())
def test_fuzz_mutated_files_give_records_or_input_error(
    tmp_path: Path, kind: str, edits: list[tuple[int, int, bytes]], compress: bool
) -> None:
    base = VALID_JSONL if kind == "jsonl" else VALID_CSV.replace(b",", b"\t") if kind == "tsv" else VALID_CSV
    data = _mutate(base, edits)
    path = tmp_path / (f"f.{kind}.gz" if compress else f"f.{kind}")
    path.write_bytes(gzip.compress(data) if compress else data)
    _read_all_ways(path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["csv.gz", "jsonl.gz", "csv", "jsonl", "parquet"]), data=st.binary(max_size=300), gz_prefix=st.booleans())
def test_fuzz_random_bytes_give_records_or_input_error(tmp_path: Path, kind: str, data: bytes, gz_prefix: bool) -> None:
    if gz_prefix and kind.endswith(".gz"):  # a valid gzip header, a broken stream
        data = gzip.compress(data)[: max(10, len(data) // 2)] + data
    if kind == "parquet" and gz_prefix:
        data = b"PAR1" + data + b"PAR1"
    path = tmp_path / f"f.{kind}"
    path.write_bytes(data)
    with contextlib.suppress(InputError):
        read_source(path, id_column="id", fields=["text"], name="s")


def test_truncated_and_corrupt_gzip(tmp_path: Path) -> None:
    good = gzip.compress(docs_jsonl(tmp_path / "d.jsonl").read_bytes())
    for name, data in (
        ("cut.jsonl.gz", good[:-12]),
        ("flip.jsonl.gz", good[:20] + bytes([good[20] ^ 0xFF]) + good[21:]),
        ("raw.jsonl.gz", zlib.compress(b"{}")),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError, match="gzip|UTF-8|JSON"):
            read_source(path, id_column="id", fields=["text"], name="s")
