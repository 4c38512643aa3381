"""File-backed text columns (er_framework.io.filetext): the in-memory reader is the reference.

A JSON Lines source read with ``file_backed=True`` must give the same ids and
the same texts (read back from the file) as the in-memory reader, on every
kind of value and line; bad input must give the same problems; and a whole
job must give the same pairs and clusters.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from er_framework.config.resolve import parse_job
from er_framework.data import Records
from er_framework.engine.stages import reading
from er_framework.errors import InputError
from er_framework.executors import run_job
from er_framework.io import filetext
from er_framework.io.filetext import FileTexts
from er_framework.io.parallel_read import read_jsonl_parallel
from er_framework.io.source_files import read_source

ROOT = Path(__file__).resolve().parents[2]

# every kind of line the reader accepts: plain strings, escapes, non-ASCII, numbers, lists, null, a
# missing key, the key's name inside another value, spaces around the colon, CRLF, blank lines, a BOM
LINES = [
    '{"id": "a", "text": "plain words here"}',
    '{"id": "b", "text": "with \\"quotes\\" and \\\\ backslash"}',
    '{"id": "c", "text": "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e \U0001f600 end"}',
    '{"id": "d", "text": 12.5}',
    '{"id": "e", "text": ["x", 1, null]}',
    '{"id": "f", "text": null}',
    '{"id": "g"}',
    '{"id": "h \\"text\\": \\"h\\"", "text": "h"}',
    '{"note": "\\"text\\": \\"decoy\\"", "id": "i", "text"  :   "spaced out"}',
    '{"id": "j", "text": "tab\\tand\\nnewline escaped"}',
    '{"text": "key first \u00e9", "id": "k"}',
    '{"id": "l", "text": ""}',
    '{"id": "m", "text": "\\u00e9 escaped e-acute"}',
    '{"id": "n", "text": true}',
]


def write(path: Path, lines: list[str], *, bom: bool = False, crlf: bool = False, blank: bool = False) -> Path:
    end = "\r\n" if crlf else "\n"
    body = "".join(line + end + (end if blank else "") for line in lines)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8"))
    return path


def read_both(path: Path, fields: list[str] | None = None) -> tuple[Records, Records]:
    kw = {"id_column": "id", "fields": fields or ["text"], "name": "s"}
    return read_source(path, **kw), read_source(path, file_backed=True, **kw)


@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("blank", [False, True])
def test_file_backed_texts_equal_the_in_memory_ones(tmp_path: Path, bom: bool, crlf: bool, blank: bool) -> None:
    path = write(tmp_path / "d.jsonl", LINES, bom=bom, crlf=crlf, blank=blank)
    mem, fb = read_both(path)
    col = fb.fields["text"]
    assert isinstance(col, FileTexts)
    assert fb.ids == mem.ids
    want = list(mem.fields["text"])
    assert list(col) == want
    assert col[0 : len(col)] == want
    assert [col[i] for i in range(len(col))] == want
    assert col[-1] == want[-1]
    assert col[3:11:2] == want[3:11:2]
    assert col[::-3] == want[::-3] and col[-4:] == want[-4:] and col[5:2] == []
    assert fb.text() == mem.text()
    assert fb.text(rows=slice(2, 9)) == mem.text(rows=slice(2, 9))
    assert np.array_equal(fb.text_sizes(), mem.text_sizes())
    rows = np.asarray([7, 0, 13, 2, 2, 5], dtype=np.int64)
    assert col.read(rows) == [want[i] for i in rows]
    taken = fb.take(rows)
    assert isinstance(taken.fields["text"], FileTexts)
    assert taken.text() == mem.take(rows).text()
    assert Records.concat([fb]).text() == mem.text()
    # plain strings are read back as byte spans; the others by parsing their line again
    kinds = dict(zip(fb.ids, col.kind.tolist()))
    assert kinds["a"] == filetext.PLAIN and kinds["c"] == filetext.PLAIN and kinds["k"] == filetext.PLAIN
    assert kinds["b"] == filetext.LINE and kinds["d"] == filetext.LINE
    assert kinds["f"] == filetext.NONE and kinds["g"] == filetext.NONE


def test_reads_are_grouped_and_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny read runs and gaps (every value its own read, long runs cut) give the same values."""
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "d\u00e9lta", "\u03b5psilon"]
    rows = [{"id": str(i), "text": " ".join(rng.choice(words, size=int(rng.integers(0, 40))))} for i in range(300)]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=bool(i % 2)) + "\n" for i, r in enumerate(rows)), encoding="utf-8")
    mem, fb = read_both(path)
    want = list(mem.fields["text"])
    for gap, run in [(0, 1), (1, 64), (4096, 1 << 23), (10, 500)]:
        monkeypatch.setattr(filetext, "READ_GAP_BYTES", gap)
        monkeypatch.setattr(filetext, "READ_RUN_BYTES", run)
        assert list(fb.fields["text"]) == want
        order = rng.permutation(len(want))
        assert fb.fields["text"].read(order) == [want[i] for i in order]  # type: ignore[attr-defined]


@pytest.mark.parametrize("gap", [0, 3, 4096])
def test_prefetch_advises_ranges_that_cover_every_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gap: int) -> None:
    """The advised byte ranges are disjoint, in file order, and cover each asked value's bytes (checked
    byte by byte against the values' spans); values in memory, missing values and empty ones (an advice of
    length 0 would be the whole file) are not advised; the
    texts read afterwards are the same."""
    monkeypatch.setattr(filetext, "READ_GAP_BYTES", gap)
    path = write(tmp_path / "d.jsonl", [x.replace('"id": "', f'"id": "{k}') for k in range(3) for x in LINES])
    mem, fb = read_both(path)
    col = fb.fields["text"]
    assert isinstance(col, FileTexts)
    advised: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, lo, n, how: advised.append((lo, lo + n)), raising=False)
    rng = np.random.default_rng(5)
    for rows in [rng.permutation(len(col)), np.asarray([5, 5, 40, 0], dtype=np.int64), np.asarray([5, 6], dtype=np.int64)]:
        advised.clear()
        fb.prefetch(rows)
        mem.prefetch(rows)  # in memory: nothing to advise
        assert all(a < b for a, b in advised) and all(b1 < a2 for (_, b1), (a2, _) in zip(advised, advised[1:]))
        covered = {x for a, b in advised for x in range(a, b)}
        wanted = [int(r) for r in rows if col.kind[r] != filetext.NONE and col.size[r] > 0]
        assert all(set(range(int(col.at[r]), int(col.at[r] + col.size[r]))) <= covered for r in wanted)
        assert bool(advised) == bool(wanted)
        if gap == 0:  # no gap: nothing but the values' own bytes (LINE values: their whole line)
            assert covered == {x for r in wanted for x in range(int(col.at[r]), int(col.at[r] + col.size[r]))}
        assert col.read(rows) == [mem.fields["text"][int(r)] for r in rows]


def test_other_fields_and_the_id_column_stay_in_memory(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", ['{"id": "1", "a": "x y", "b": "z"}', '{"id": "2", "a": "p", "b": null}'])
    mem, fb = read_both(path, ["id", "a", "b"])
    assert isinstance(fb.fields["id"], list)
    assert isinstance(fb.fields["a"], FileTexts) and isinstance(fb.fields["b"], FileTexts)
    assert {k: list(v) for k, v in fb.fields.items()} == {k: list(v) for k, v in mem.fields.items()}


@pytest.mark.parametrize(
    "lines",
    [
        ['{"id": "1", "text": "ok"}', '{"id": "2", "text": "bad', '{"id": "3", "text": "ok"}'],  # bad JSON
        ['{"id": "1", "txt": "a"}', '{"id": "2", "txt": "b"}'],  # the field on no line
        ['{"id": "1", "text": "a"}', '{"id": "1", "text": "b"}'],  # a repeated id
        ['{"id": "1", "text": "a", "text": "b"}'],  # a key given twice
        ['["not", "an", "object"]', '{"id": "2", "text": "b"}'],
        ['{"id": "1", "text": "\\ud800 lone"}'],
    ],
)
def test_bad_input_gives_the_same_problems(tmp_path: Path, lines: list[str]) -> None:
    path = write(tmp_path / "d.jsonl", lines)
    errors = []
    for fb in (False, True):
        with pytest.raises(InputError) as exc:
            read_source(path, id_column="id", fields=["text"], name="s", file_backed=fb)
        errors.append([(p.where, p.message, p.fix) for p in exc.value.problems])
    assert errors[0] == errors[1]


def test_a_changed_file_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", LINES)
    fb = read_source(path, id_column="id", fields=["text"], name="s", file_backed=True)
    with open(path, "ab") as f:
        f.write(b'{"id": "z", "text": "added"}\n')
    with pytest.raises(InputError, match="changed after the job read it"):
        fb.text()


def test_compressed_and_csv_files_are_read_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,text\n1,a b\n2,c\n", encoding="utf-8")
    recs = read_source(path, id_column="id", fields=["text"], name="s", file_backed=True)
    assert isinstance(recs.fields["text"], list)


def test_a_file_backed_job_gives_the_in_memory_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped documents job (exact copies, near-duplicates, a streamed verification) read file-backed
    gives byte-identical pairs and clusters."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    job_path = tmp_path / "configs" / "documents.yaml"
    # token_memory_mb 0: nothing kept after signing, so verification reads the candidates' texts again
    job_path.write_text(job_path.read_text() + "token_memory_mb: 0\n")
    job_path.write_text(job_path.read_text() + "workers: 2\n")  # the file-backed read on two processes
    outs = []
    hinted: list[int] = []  # the rows the windowed verification asked of the page cache ahead (FileTexts.prefetch)
    prefetch = FileTexts.prefetch
    monkeypatch.setattr(FileTexts, "prefetch", lambda self, rows: (hinted.extend(np.asarray(rows).tolist()), prefetch(self, rows))[1])
    for limit in (2**62, 0):
        monkeypatch.setattr(reading, "FILE_BACKED_MIN_BYTES", limit)
        out = tmp_path / f"out{limit}"
        res = run_job(parse_job(job_path), out)
        col = res.records.fields["text"]
        assert isinstance(col, FileTexts) == (limit == 0)
        assert bool(hinted) == (limit == 0)
        outs.append({name: (out / name).read_bytes() for name in ("pairs.csv", "clusters.csv")})
    assert outs[0] == outs[1]
    assert os.path.getsize(tmp_path / "out0" / "pairs.csv") > 100


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_the_parallel_read_equals_the_one_pass_read(tmp_path: Path, workers: int) -> None:
    lines = [
        json.dumps({"id": f"r{i}", "text": f"text {i} " * (i % 7) + "\u00e9" * (i % 3)}, ensure_ascii=bool(i % 2)) for i in range(200)
    ] + LINES
    path = write(tmp_path / "d.jsonl", lines, bom=True, crlf=workers == 3)
    one = read_source(path, id_column="id", fields=["text"], name="s", file_backed=True)
    many = read_jsonl_parallel(path, workers, id_column="id", fields=["text"], name="s")
    assert many is not None
    assert many.ids == one.ids and isinstance(many.fields["text"], FileTexts)
    assert list(many.fields["text"]) == list(one.fields["text"])
    assert np.array_equal(many.text_sizes(), one.text_sizes())


@pytest.mark.parametrize(
    "bad",
    [
        '{"id": "x", "text": "bad',  # bad JSON near the end: that range fails
        '{"id": "r1", "text": "the id of line 2"}',  # an id repeated across ranges
    ],
)
def test_the_parallel_read_leaves_problems_to_the_one_pass_read(tmp_path: Path, bad: str) -> None:
    lines = [json.dumps({"id": f"r{i}", "text": f"text {i}"}) for i in range(100)] + [bad]
    path = write(tmp_path / "d.jsonl", lines)
    assert read_jsonl_parallel(path, 2, id_column="id", fields=["text"], name="s") is None
    assert read_jsonl_parallel(path, 1, id_column="id", fields=["text"], name="s") is None  # one worker: not used


def test_reads_without_pread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where os has no pread (Windows), a seek and a read give the same values."""
    path = write(tmp_path / "d.jsonl", LINES)
    mem, fb = read_both(path)
    monkeypatch.delattr(os, "pread")
    assert list(fb.fields["text"]) == list(mem.fields["text"])


def test_which_sources_are_file_backed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large JSON Lines source of a shingling job; not when its texts are normalized first."""
    monkeypatch.setattr(reading, "FILE_BACKED_MIN_BYTES", 0)
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    job_path = tmp_path / "configs" / "documents.yaml"
    job = parse_job(job_path)
    assert reading.file_backed(job, 0, job.source_paths(0)[0])
    job_path.write_text(job_path.read_text() + "normalize: {text: text}\n")
    job = parse_job(job_path)
    assert not reading.file_backed(job, 0, job.source_paths(0)[0])
    monkeypatch.setattr(reading, "FILE_BACKED_MIN_BYTES", 2**62)
    assert not reading.file_backed(
        parse_job(ROOT / "configs" / "documents.yaml"), 0, parse_job(ROOT / "configs" / "documents.yaml").source_paths(0)[0]
    )
