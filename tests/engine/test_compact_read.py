"""Columns as read held compactly (er_framework.engine.columns, ArrowValues, normalize_column_keeping_input).

* :class:`ArrowValues` reads as the list it was made from (items, negative
  indices, slices, iteration, equality, errors);
* :func:`compact_read` keeps every value and id, converts only what Arrow
  holds exactly, and leaves the rest as lists;
* normalizing an Arrow column equals normalizing its list and the reference;
* a whole run with the columns compacted writes the same outputs and the same
  report.html examples as a run that keeps the lists, and its ``as_read`` holds
  the values as read.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import er_framework.engine.columns as columns
import er_framework.engine.shared as shared
import er_framework.normalize as normalize
from er_framework.components import Context, Normalizer
from er_framework.config.resolve import parse_job
from er_framework.data import Records
from er_framework.engine.columns import compact_read
from er_framework.engine.stages import reading
from er_framework.errors import InputError, PluginError
from er_framework.executors import run_job
from er_framework.kernels import parallel
from er_framework.kernels.arrow import ArrowValues, string_array
from er_framework.kernels.parallel import ForkedWorker
from er_framework.normalize import (
    FACTORIZE_MIN,
    normalize_column_keeping_input,
    normalize_column_with_stats,
    normalize_column_with_stats_reference,
)

ROOT = Path(__file__).resolve().parents[2]

VALUES = ["Main St", None, "", "é ß 日本", "a\x00b", "Main St", " ", None, "x" * 300]


def test_arrow_values_read_as_the_list() -> None:
    for arr in (string_array(VALUES), string_array(VALUES, large=True)):
        import pyarrow.compute as pc

        for view in (ArrowValues(arr), ArrowValues(pc.dictionary_encode(arr, null_encoding="encode"))):
            assert len(view) == len(VALUES)
            assert [view[i] for i in range(len(VALUES))] == VALUES
            assert [view[-i] for i in range(1, len(VALUES) + 1)] == [VALUES[-i] for i in range(1, len(VALUES) + 1)]
            assert view[np.int64(3)] == VALUES[3]
            assert view[2:7] == VALUES[2:7] and view[::-2] == VALUES[::-2] and view[5:2] == []
            assert list(view) == VALUES and view == VALUES and view == tuple(VALUES) and view == ArrowValues(arr)
            assert view != VALUES[:-1] and view != "Main St"
            with pytest.raises(IndexError):
                view[len(VALUES)]
            with pytest.raises(IndexError):
                view[-len(VALUES) - 1]
            with pytest.raises(TypeError):
                view["1"]
            with pytest.raises(TypeError):
                hash(view)


def _records(n: int, fields: dict[str, list[object]]) -> Records:
    return Records(ids=[f"r{i}" for i in range(n)], source=np.zeros(n, dtype=np.int32), source_names=["s"], fields=fields)  # type: ignore[arg-type]


def test_compact_read_keeps_every_value_and_id() -> None:
    n = FACTORIZE_MIN + 7
    names = [VALUES[i % len(VALUES)] for i in range(n)]
    numbers: list[object] = [i if i % 3 else str(i) for i in range(n)]  # not only strings: stays a list
    surrogate = ["\udc80x" if i == 5 else "y" for i in range(n)]  # Arrow cannot hold it: stays a list
    kept = ["k"] * n  # not named: stays the same list
    recs = _records(n, {"name": list(names), "number": numbers, "bad": surrogate, "kept": kept})
    ids = list(recs.ids)
    assert compact_read(recs, ["name", "number", "bad", "missing"]) is recs
    assert isinstance(recs.fields["name"], ArrowValues) and list(recs.fields["name"]) == names
    assert recs.fields["number"] is numbers and recs.fields["bad"] is surrogate and recs.fields["kept"] is kept
    assert recs.ids == ids  # not made again: lists are left


def test_compact_read_makes_the_ids_again_when_every_column_is_converted() -> None:
    n = FACTORIZE_MIN + 1
    names = [f"name {i % 17}" for i in range(n)]
    recs = _records(n, {"name": list(names)})
    ids = recs.ids
    compact_read(recs, ["name"])
    assert recs.ids == ids and recs.ids is not ids and all(type(i) is str for i in recs.ids)
    assert list(recs.fields["name"]) == names


def test_compact_read_leaves_short_inputs_alone() -> None:
    recs = _records(3, {"name": ["a", None, "b"]})
    before = recs.fields["name"]
    compact_read(recs, ["name"])
    assert recs.fields["name"] is before


@pytest.mark.parametrize(
    "field, steps",
    [("first_name", ["name", "nickname"]), ("address", "address"), ("phone", "phone"), ("dob", "date"), ("email", ["email", "text"])],
)
@pytest.mark.parametrize("size", [500, FACTORIZE_MIN + 500])
def test_normalizing_an_arrow_column_equals_its_list(field: str, steps: object, size: int) -> None:
    from er_framework.synth.customers import generate_customers

    data = generate_customers(size // 2 + 1, 0.5, 3)
    values: list[str | None] = [None if i % 11 == 0 else v for i, v in enumerate(data.a[field] + data.b[field])]
    values += ["N/A", "", " "]
    view = ArrowValues(string_array(values))
    got, stats, given = normalize_column_keeping_input(view, steps)
    want, want_stats = normalize_column_with_stats_reference(values, steps)
    assert (got, stats) == (want, want_stats) == normalize_column_with_stats(values, steps)
    assert list(given) == values
    got_list, stats_list, given_list = normalize_column_keeping_input(values, steps)
    assert (got_list, stats_list) == (want, want_stats) and list(given_list) == values


def _section(html: str, sid: str) -> str:
    m = re.search(f'<section id="{sid}".*?</section>', html, re.S)
    assert m is not None
    return m.group(0)


def test_a_run_with_compacted_columns_writes_what_a_run_with_lists_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = tmp_path / "job"
    shutil.copytree(ROOT / "configs", job_dir)
    job_file = job_dir / "customers.yaml"
    # 4,000 records: a low threshold makes every column take the Arrow path
    monkeypatch.setattr(normalize, "FACTORIZE_MIN", 100)
    monkeypatch.setattr(columns, "FACTORIZE_MIN", 100)
    monkeypatch.setattr(shared, "WORKER_MIN_BYTES", 0)  # a large job: compacted
    compacted = run_job(parse_job(job_file), tmp_path / "compact")
    assert all(isinstance(compacted.as_read.fields[f], ArrowValues) for f in compacted.report["normalize"])
    with monkeypatch.context() as m:
        m.setattr(shared, "WORKER_MIN_BYTES", 1 << 62)  # a small job: the lists as read are kept
        lists = run_job(parse_job(job_file), tmp_path / "lists")
    assert not any(isinstance(c, ArrowValues) for c in lists.as_read.fields.values())
    read, _ = reading.read(parse_job(job_file))
    assert compacted.as_read is not None and lists.as_read is not None
    assert compacted.as_read.ids == read.ids == lists.as_read.ids
    for f, col in read.fields.items():
        assert list(compacted.as_read.fields[f]) == col == list(lists.as_read.fields[f])
    for name in ("pairs.csv", "clusters.csv", "verified_pairs.csv"):
        assert (tmp_path / "compact" / name).read_bytes() == (tmp_path / "lists" / name).read_bytes()
    html = [(tmp_path / d / "report.html").read_text() for d in ("compact", "lists")]
    for sid in ("largest-clusters", "review", "waterfalls"):
        assert _section(html[0], sid) == _section(html[1], sid)
    assert "(not found in the source any more)" not in html[0]


# --------------------------------------------------------------------------- two processes


class Failing(Normalizer):
    name = "failing"
    summary = "returns one value too few (a plugin error)"

    def normalize(self, values: list[str]) -> list[str | None]:
        return list(values[1:])


def _customer_records(n: int) -> Records:
    from er_framework.synth.customers import generate_customers

    data = generate_customers(n, 0.5, 5)
    fields = {f: [None if i % 13 == 0 else v for i, v in enumerate(data.a[f] + data.b[f])] for f in data.a if f != "id"}
    m = len(next(iter(fields.values())))
    recs = Records(ids=[f"r{i}" for i in range(m)], source=np.zeros(m, dtype=np.int32), source_names=["s"], fields=fields)  # type: ignore[arg-type]
    return compact_read(recs, list(fields))


SPEC = {
    "first_name": ["name", "nickname"],
    "last_name": "name",
    "address": "address",
    "city": "text",
    "zip": "digits",
    "phone": "phone",
    "email": "email",
    "dob": "date",
}


def test_two_processes_normalize_as_one() -> None:
    recs = _customer_records(FACTORIZE_MIN // 2 + 100)
    assert all(isinstance(recs.fields[f], ArrowValues) for f in SPEC)
    serial = reading.normalize_fields(recs, SPEC, 1)
    with ForkedWorker() as worker:
        shared = columns.normalize_fields_shared(recs, SPEC, worker)
    assert list(shared) == list(serial) == list(SPEC)
    for f in SPEC:
        (got, stats, given), (want, want_stats, want_given) = shared[f], serial[f]
        assert got == want and stats == want_stats and list(given) == list(want_given) == list(recs.fields[f])
        assert (got, stats) == normalize_column_with_stats_reference(list(recs.fields[f]), SPEC[f])


def test_a_packed_result_is_the_column() -> None:
    values = [None if i % 7 == 0 else f"{i % 300} Main Street" for i in range(FACTORIZE_MIN + 3)]
    want = normalize_column_with_stats(values, "address")
    packed = columns.normalize_packed(values, "address")
    assert isinstance(packed[0], tuple)  # distinct results as an Arrow array, and the codes
    assert columns.unpacked(packed, values)[:2] == want and list(columns.unpacked(packed, values)[2]) == values
    view = ArrowValues(string_array(values))
    packed = columns.normalize_packed(view, "address")
    assert packed[2] is None  # the sender has the values
    assert columns.unpacked(packed, view)[:2] == want and columns.unpacked(packed, view)[2] is view
    short = columns.normalize_packed(values[:50], "address")
    assert isinstance(short[0], list)
    assert columns.unpacked(short, values[:50])[:2] == normalize_column_with_stats(values[:50], "address")


def test_an_error_in_the_worker_is_raised_here_and_the_worker_ends() -> None:
    recs = _customer_records(300)
    spec = {"first_name": "name", "last_name": [Failing(Failing.Params(), Context())], "city": "text"}
    with pytest.raises(PluginError, match="returned"), ForkedWorker() as worker:
        columns.normalize_fields_shared(recs, spec, worker)
    assert not worker.pool._processes  # killed and reaped on the way out


def test_the_largest_fields_go_first() -> None:
    repeated = ["Springfield"] * 5000
    distinct = [f"{i} Main St" for i in range(5000)]
    assert columns.normalize_cost(distinct) > columns.normalize_cost(repeated) > columns.normalize_cost(repeated[:10])
    assert columns.normalize_cost([]) == 0.0


def test_a_worker_only_for_large_jobs_on_several_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = tmp_path / "job"
    shutil.copytree(ROOT / "configs", job_dir)
    job_file = job_dir / "customers.yaml"
    job_file.write_text(job_file.read_text() + "\nworkers: 2\n")
    assert shared.start_worker(parse_job(job_file)) is None  # 4,000 records: below the size
    monkeypatch.setattr(shared, "WORKER_MIN_BYTES", 0)
    worker = shared.start_worker(parse_job(job_file))
    assert worker is not None and shared.forked_job is None
    worker.close()
    import multiprocessing

    with monkeypatch.context() as m:  # a system without fork (Windows): no worker
        m.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
        assert shared.start_worker(parse_job(job_file)) is None
    with monkeypatch.context() as m:  # macOS forks, but not safely once system frameworks are loaded: no worker
        m.setattr(parallel, "FORK_SAFE", False)
        assert shared.start_worker(parse_job(job_file)) is None
    job_file.write_text(job_file.read_text().replace("\nworkers: 2\n", "\nworkers: 1\n"))
    assert shared.start_worker(parse_job(job_file)) is None


def test_a_run_with_a_worker_writes_what_a_run_without_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_dir = tmp_path / "job"
    shutil.copytree(ROOT / "configs", job_dir)
    job_file = job_dir / "customers.yaml"
    job_file.write_text(job_file.read_text() + "\nworkers: 2\n")
    monkeypatch.setattr(normalize, "FACTORIZE_MIN", 100)
    monkeypatch.setattr(columns, "FACTORIZE_MIN", 100)
    alone = run_job(parse_job(job_file), tmp_path / "alone")
    calls: list[bool] = []
    original = columns.normalize_fields_shared

    def counted(*args: object) -> object:
        calls.append(True)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(shared, "WORKER_MIN_BYTES", 0)
    monkeypatch.setattr(reading, "normalize_fields_shared", counted)
    both = run_job(parse_job(job_file), tmp_path / "both")
    assert calls == [True]
    assert both.report["normalize"] == alone.report["normalize"]
    for name in ("pairs.csv", "clusters.csv", "verified_pairs.csv"):
        assert (tmp_path / "alone" / name).read_bytes() == (tmp_path / "both" / name).read_bytes()


def _two_sources(tmp_path: Path, extra: str = "") -> Path:
    job_dir = tmp_path / "job"
    shutil.copytree(ROOT / "configs", job_dir)
    job_file = job_dir / "customers.yaml"
    job_file.write_text(job_file.read_text() + "\nworkers: 2\n" + extra)
    return job_file


def test_reading_on_two_processes_reads_what_one_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = parse_job(_two_sources(tmp_path))
    monkeypatch.setattr(shared, "WORKER_MIN_BYTES", 0)
    monkeypatch.setattr(columns, "FACTORIZE_MIN", 100)
    want, want_stats = reading.read(job)
    with shared.start_worker(job) as worker:  # type: ignore[union-attr]
        got, stats = shared.read_shared(job, worker)
    alone, alone_stats = shared.read_shared(job, None)
    assert list(stats) == list(want_stats) == list(alone_stats) == ["A", "B"] and stats == want_stats == alone_stats
    for recs in (got, alone):
        assert recs.ids == want.ids and recs.source_names == want.source_names
        assert np.array_equal(recs.source, want.source)
        assert list(recs.fields) == list(want.fields)
        for f in want.fields:
            assert isinstance(recs.fields[f], ArrowValues) and list(recs.fields[f]) == want.fields[f]


def test_problems_of_both_processes_are_reported_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job_file = _two_sources(tmp_path)
    for name in ("a.csv", "b.csv"):  # a row of too many cells in each source
        path = job_file.parent / "data" / "customers" / name
        path.write_text(path.read_text() + "X1,a,b,c,d,e,f,g,h,i,j\n")
    job = parse_job(job_file)
    with pytest.raises(InputError) as want:
        reading.read(job)
    monkeypatch.setattr(shared, "WORKER_MIN_BYTES", 0)
    with pytest.raises(InputError) as got, shared.start_worker(job) as worker:  # type: ignore[union-attr]
        shared.read_shared(job, worker)
    assert [str(p) for p in got.value.problems] == [str(p) for p in want.value.problems]
    assert len(got.value.problems) == 2


def test_concat_compact_is_records_concat() -> None:
    a = _records(3, {"x": ["a", None, "b"], "y": ["1", "2", "3"]})
    b = Records(
        ids=["q", "r"],
        source=np.zeros(2, dtype=np.int32),
        source_names=["t"],
        fields={"x": ArrowValues(string_array(["c", None])), "z": ["z1", "z2"]},
    )  # type: ignore[dict-item]
    a.fields["x"] = ArrowValues(string_array(["a", None, "b"]))  # type: ignore[assignment]
    got = columns.concat_compact([a, b])
    want = Records.concat(
        [
            _records(3, {"x": ["a", None, "b"], "y": ["1", "2", "3"]}),
            Records(ids=["q", "r"], source=np.zeros(2, dtype=np.int32), source_names=["t"], fields={"x": ["c", None], "z": ["z1", "z2"]}),
        ]
    )
    assert got.ids == want.ids and got.source_names == want.source_names and np.array_equal(got.source, want.source)
    assert isinstance(got.fields["x"], ArrowValues)
    assert {k: list(v) for k, v in got.fields.items()} == want.fields
    large = ArrowValues(string_array(["d"], large=True))
    mixed = columns.concat_compact(
        [b, Records(ids=["s"], source=np.zeros(1, dtype=np.int32), source_names=["u"], fields={"x": large, "z": ["z3"]})]
    )  # type: ignore[dict-item]
    assert list(mixed.fields["x"]) == ["c", None, "d"]
