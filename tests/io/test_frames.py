"""Tests for er_framework.io.frames: tables given as objects (pandas, polars, Arrow) read as sources,
result tables in the kind of the input.

The reference for every source is the Parquet round trip: the same data written to a Parquet file
and read with ``read_source`` must give the same records and the same problems."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.data import Records
from er_framework.errors import InputError, Problem
from er_framework.io import (
    arrow_table,
    as_kind,
    frame_kind,
    frame_to_arrow,
    read_source,
    records_from_frame,
)

WHERE = "sources['people']"


# ---------------------------------------------------------------- helpers


def from_frame(obj: Any, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return records_from_frame(obj, id_column=id_column, fields=fields, name="people", where=WHERE, **kw)


def from_parquet(path: Path, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return read_source(path, id_column=id_column, fields=fields, name="people", **kw)


def write_parquet(obj: Any, path: Path) -> Path:
    """``obj`` written to a Parquet file by its own library."""
    if isinstance(obj, pd.DataFrame):
        obj.to_parquet(path)
    elif isinstance(obj, pl.DataFrame):
        obj.write_parquet(path)
    else:
        pq.write_table(obj, path)
    return path


def assert_same_records(a: Records, b: Records) -> None:
    assert a.ids == b.ids
    assert a.fields == b.fields
    assert a.source_names == b.source_names
    assert a.source.tolist() == b.source.tolist()


def problems_of(call: Any) -> list[Problem]:
    with pytest.raises(InputError) as exc:
        call()
    return exc.value.problems


def same_problems(frame_problems: list[Problem], file_problems: list[Problem], file: str) -> None:
    """The problems of a table object are those of its Parquet file, with ``WHERE`` for the file."""
    assert [(p.where, p.path, p.message, p.fix) for p in frame_problems] == [
        (p.where.replace(file, WHERE), p.path, p.message, p.fix) for p in file_problems
    ]


def people_pandas() -> pd.DataFrame:
    """Febrl-like: the id is the named index; missing values as None and NaN; a number column."""
    return pd.DataFrame(
        {
            # object columns as written (pandas 3 would otherwise infer its own "str" dtype)
            "given_name": pd.Series(
                ["ann", None, "bob", np.nan], dtype=object, index=["rec-1-org", "rec-2-org", "rec-3-dup-0", "rec-4-org"]
            ),
            "surname": pd.Series(
                ["smith", "jones", "müller", "o'neil"], dtype=object, index=["rec-1-org", "rec-2-org", "rec-3-dup-0", "rec-4-org"]
            ),
            "age": [31, 45, 27, 60],
            "score": [0.5, np.nan, 2.0, 1e20],
        },
        index=pd.Index(["rec-1-org", "rec-2-org", "rec-3-dup-0", "rec-4-org"], name="rec_id", dtype=object),
    )


FIELDS = ["given_name", "surname", "age", "score"]


# ---------------------------------------------------------------- sources: same as the Parquet round trip


def test_pandas_object_strings_named_index_as_id(tmp_path: Path) -> None:
    df = people_pandas()
    assert df["surname"].dtype == object
    recs = from_frame(df, FIELDS, id_column="rec_id")
    assert recs.ids == ["rec-1-org", "rec-2-org", "rec-3-dup-0", "rec-4-org"]
    assert recs.source_names == ["people"]
    assert recs.fields == {
        "given_name": ["ann", None, "bob", None],
        "surname": ["smith", "jones", "müller", "o'neil"],
        "age": ["31", "45", "27", "60"],
        "score": ["0.5", None, "2.0", "1e+20"],
    }
    assert_same_records(recs, from_parquet(write_parquet(df, tmp_path / "d.parquet"), FIELDS, id_column="rec_id"))


@pytest.mark.parametrize("dtype", ["string[pyarrow]", "string[python]", pd.ArrowDtype(pa.string())])
def test_pandas_string_dtypes(tmp_path: Path, dtype: Any) -> None:
    df = people_pandas()
    df["given_name"] = df["given_name"].astype(dtype)
    df["surname"] = df["surname"].astype(dtype)
    df.index = df.index.astype(dtype)
    recs = from_frame(df, FIELDS, id_column="rec_id")
    assert recs.fields["given_name"] == ["ann", None, "bob", None]
    assert recs.ids[2] == "rec-3-dup-0"
    assert_same_records(recs, from_parquet(write_parquet(df, tmp_path / "d.parquet"), FIELDS, id_column="rec_id"))


def test_pandas_pyarrow_strings_are_not_copied() -> None:
    df = pd.DataFrame({"id": pd.array(["a", "b"], dtype=pd.ArrowDtype(pa.large_string()))})
    table = frame_to_arrow(df, WHERE)
    source = df["id"].array._pa_array  # the Arrow data pandas holds
    assert table.column("id").chunk(0).buffers()[2].address == source.chunk(0).buffers()[2].address


def test_pandas_other_value_types_as_parquet(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "id": [1, 2, 3],  # integer ids become text
            "flag": [True, False, True],
            "when": pd.to_datetime(["2020-01-02", None, "2021-03-04 05:06:07"], format="ISO8601"),
            "day": [dt.date(2020, 1, 2), None, dt.date(1999, 12, 31)],
            "cat": pd.Categorical(["x", None, "y"]),
            "nullable": pd.array([7, None, 9], dtype="Int64"),
            "tags": [["a", "b"], [], None],
        }
    )
    fields = ["flag", "when", "day", "cat", "nullable", "tags"]
    recs = from_frame(df, fields)
    assert recs.ids == ["1", "2", "3"]
    assert recs.fields == {
        "flag": ["true", "false", "true"],
        "when": ["2020-01-02T00:00:00", None, "2021-03-04T05:06:07"],
        "day": ["2020-01-02", None, "1999-12-31"],
        "cat": ["x", None, "y"],
        "nullable": ["7", None, "9"],
        "tags": ['["a", "b"]', "[]", None],
    }
    assert_same_records(recs, from_parquet(write_parquet(df, tmp_path / "d.parquet"), fields))


def test_pandas_index_rules() -> None:
    df = pd.DataFrame({"id": ["a", "b", "c"], "t": ["x", "y", "z"]})
    # a RangeIndex is dropped, and so is an unnamed index left by a filter
    assert frame_to_arrow(df, WHERE).column_names == ["id", "t"]
    assert frame_to_arrow(df[df["t"] != "y"], WHERE).column_names == ["id", "t"]
    assert from_frame(df[df["t"] != "y"], ["t"]).ids == ["a", "c"]
    # every named level of a MultiIndex is a column, before the columns
    multi = df.set_index(["id", "t"])
    multi["n"] = [1, 2, 3]
    assert frame_to_arrow(multi, WHERE).column_names == ["id", "t", "n"]
    assert from_frame(multi, ["t", "n"]).fields == {"t": ["x", "y", "z"], "n": ["1", "2", "3"]}
    # column labels become text
    numbered = pd.DataFrame({0: ["a", "b"], 1: ["x", "y"]})
    assert from_frame(numbered, ["1"], id_column="0").fields == {"1": ["x", "y"]}


def test_pandas_only_wanted_columns_are_converted() -> None:
    converted: list[int] = []

    class Thing:
        """An object Arrow cannot hold: read as its text, counted."""

        def __str__(self) -> str:
            converted.append(1)
            return "thing"

    df = pd.DataFrame({"id": ["a", "b"], "t": ["x", "y"], "junk": [Thing(), Thing()]})
    assert from_frame(df, ["t"]).fields == {"t": ["x", "y"]}
    assert converted == []
    assert frame_to_arrow(df, WHERE).column("junk").to_pylist() == ["thing", "thing"]
    assert len(converted) == 2


def test_pandas_mixed_object_column_read_value_by_value() -> None:
    # Arrow (and Parquet) cannot hold a column of str and int: read with the JSON Lines rules
    df = pd.DataFrame({"id": ["a", 7, "c", "d"], "zip": ["02139", 2139, None, True]})
    recs = from_frame(df, ["zip"])
    assert recs.ids == ["a", "7", "c", "d"]
    assert recs.fields == {"zip": ["02139", "2139", None, "true"]}
    assert frame_to_arrow(df, WHERE).column("zip").to_pylist() == ["02139", "2139", None, "true"]


def test_polars(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "name": ["ann", None, "ç"],
            "n": [1, None, 3],
            "x": [0.25, float("nan"), None],
            "cat": pl.Series(["u", "v", "u"], dtype=pl.Categorical),
            "day": [dt.date(2020, 1, 2), None, dt.date(2021, 1, 1)],
        }
    )
    fields = ["name", "n", "x", "cat", "day"]
    recs = from_frame(df, fields)
    assert recs.ids == ["a", "b", "c"]
    assert recs.fields == {
        "name": ["ann", None, "ç"],
        "n": ["1", None, "3"],
        "x": ["0.25", None, None],  # NaN is missing, as in every format
        "cat": ["u", "v", "u"],
        "day": ["2020-01-02", None, "2021-01-01"],
    }
    assert_same_records(recs, from_parquet(write_parquet(df, tmp_path / "d.parquet"), fields))


def test_polars_string_view_through_the_stream_interface(tmp_path: Path) -> None:
    # pa.table(polars frame) goes through __arrow_c_stream__ and gives string_view columns
    df = pl.DataFrame({"id": ["a", "b"], "t": ["x" * 40, None]})
    table = pa.table(df)
    assert str(table.schema.field("t").type) == "string_view"
    assert from_frame(table, ["t"]).fields == {"t": ["x" * 40, None]}
    # the size of a row counts its string views too: 41 bytes (id and t) > 30
    problems = problems_of(lambda: from_frame(table, ["t"], max_record_mb=30 / 2**20))
    assert problems[0].where == f"{WHERE}:1" and "the record on row 1 is" in problems[0].message


def test_arrow_table_batch_reader_and_stream(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array([10, 11, 12], pa.int64()),
            "name": pa.array(["ä", None, "c"]),
            "cat": pa.array(["x", "y", "x"]).dictionary_encode(),
            "blob": pa.array([b"raw", None, b"t"], pa.binary()),
        }
    )
    fields = ["name", "cat", "blob"]
    expected = from_parquet(write_parquet(table, tmp_path / "d.parquet"), fields)
    assert expected.ids == ["10", "11", "12"]
    assert expected.fields["blob"] == ["raw", None, "t"]

    class Stream:
        """Only the Arrow PyCapsule interface, as DuckDB and others offer it."""

        def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
            return table.__arrow_c_stream__(requested_schema)

    batch = table.to_batches()[0]
    for obj in (table, batch, pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), Stream()):
        assert frame_kind(obj) == "arrow"
        assert_same_records(from_frame(obj, fields), expected)
        assert frame_to_arrow(obj if not isinstance(obj, pa.RecordBatchReader) else table, WHERE).equals(table)


def test_a_record_batch_reader_is_read_once() -> None:
    table = pa.table({"id": ["a"]})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert from_frame(reader, []).ids == ["a"]
    problems = problems_of(lambda: from_frame(reader, []))
    assert problems[0].message == "the Arrow stream has no rows (source 'people'): a source without any record"
    assert "read once: pass a new one" in problems[0].fix


def test_long_layout_as_parquet(tmp_path: Path) -> None:
    df = pd.DataFrame({"id": ["f1", "f1", "f2", "f1"], "x": [1, 2, 3, None], "y": ["a", "b", "c", "d"]})
    recs = from_frame(df, ["x", "y"], layout="long")
    assert recs.ids == ["f1", "f2"]
    # x is a float column in pandas (1.0, 2.0, 3.0, NaN): whole numbers, read as integers
    assert recs.fields == {"x": ['["1", "2", null]', '["3"]'], "y": ['["a", "b", "d"]', '["c"]']}
    assert_same_records(recs, from_parquet(write_parquet(df, tmp_path / "d.parquet"), ["x", "y"], layout="long"))


_cell = st.one_of(st.none(), st.text(max_size=12), st.integers(-(10**6), 10**6).map(str))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_cell, _cell), min_size=1, max_size=12))
def test_random_text_frames_as_parquet(tmp_path: Path, rows: list[tuple[str | None, str | None]]) -> None:
    df = pd.DataFrame({"id": [f"r{i}" for i in range(len(rows))], "a": [r[0] for r in rows], "b": [r[1] for r in rows]})
    path = write_parquet(df, tmp_path / "d.parquet")
    for obj in (df, pl.from_pandas(df), pa.Table.from_pandas(df)):
        assert_same_records(from_frame(obj, ["a", "b"]), from_parquet(path, ["a", "b"]))


# ---------------------------------------------------------------- problems: the same as the Parquet file's


def test_missing_columns_with_did_you_mean(tmp_path: Path) -> None:
    df = people_pandas()
    problems = problems_of(lambda: from_frame(df, ["surnme", "given_name"], id_column="recid"))
    assert [p.path for p in problems] == ["column 'recid'", "column 'surnme'"]
    assert problems[0].where == WHERE
    assert "id column 'recid' not found (source 'people'); columns present: age, given_name, rec_id" in problems[0].message
    assert problems[0].fix.startswith("did you mean 'rec_id'?")
    assert problems[1].fix.startswith("did you mean 'surname'?")
    assert "add the column to the DataFrame" in problems[1].fix
    path = write_parquet(df, tmp_path / "d.parquet")
    file_problems = problems_of(lambda: from_parquet(path, ["surnme", "given_name"], id_column="recid"))
    assert [p.message for p in problems] == [p.message for p in file_problems]
    # polars and Arrow tables name what they are
    assert "add the column to the DataFrame" in problems_of(lambda: from_frame(pl.from_pandas(df), ["x"]))[0].fix
    assert "add the column to the table" in problems_of(lambda: from_frame(pa.table({"id": ["a"]}), ["x"]))[0].fix


def test_id_problems_all_at_once_as_parquet(tmp_path: Path) -> None:
    data = {"id": ["a", "", None, "a", "   ", "b"], "t": ["x"] * 6}
    path = write_parquet(pa.table(data), tmp_path / "d.parquet")
    file_problems = problems_of(lambda: from_parquet(path, ["t"]))
    for obj in (pd.DataFrame(data), pl.DataFrame(data), pa.table(data)):
        problems = problems_of(lambda: from_frame(obj, ["t"]))  # noqa: B023 (called at once)
        same_problems(problems, file_problems, str(path))
    text = "\n".join(map(str, problems))
    assert "sources['people']: row 2, column 'id': row 2: the id is empty" in text
    assert "row 3: the id is missing" in text
    assert "row 5: the id is blank ('   ')" in text
    assert "1 duplicated id: id 'a' appears on rows 1 and 4" in text


def test_float_ids_are_refused_as_parquet(tmp_path: Path) -> None:
    # an integer column with a missing value is float in pandas: the ids 1.0, 2.0 are refused
    df = pd.DataFrame({"id": [1, 2, None], "t": ["x", "y", "z"]})
    path = write_parquet(df, tmp_path / "d.parquet")
    problems = problems_of(lambda: from_frame(df, ["t"]))
    same_problems(problems, problems_of(lambda: from_parquet(path, ["t"])), str(path))
    assert "row 1: the id '1.0' is a float, expected a string or an integer" in "\n".join(map(str, problems))


def test_no_rows_is_an_error_as_parquet(tmp_path: Path) -> None:
    df = people_pandas().iloc[:0]
    problems = problems_of(lambda: from_frame(df, ["surname"], id_column="rec_id"))
    assert len(problems) == 1
    assert problems[0].message == "the pandas DataFrame has no rows (source 'people'): a source without any record"
    path = write_parquet(df, tmp_path / "d.parquet")
    assert (
        problems_of(lambda: from_parquet(path, ["surname"], id_column="rec_id"))[0].message
        == "the Parquet file has no rows (source 'people'): a source without any record"
    )
    assert "the polars DataFrame has no rows" in str(problems_of(lambda: from_frame(pl.DataFrame({"id": []}), []))[0])
    empty = pa.table({"id": pa.array([], pa.string())})
    assert "the Arrow table has no rows" in problems_of(lambda: from_frame(empty, []))[0].message


def test_columns_named_twice() -> None:
    df = pd.DataFrame([["a", "x", "y"]], columns=["id", "t", "t"])
    problems = problems_of(lambda: from_frame(df, ["t"]))
    assert [(p.path, p.message) for p in problems] == [
        ("column 't'", "column 't' appears more than once (source 'people') (columns 2 and 3)")
    ]
    # an index named like a column
    clash = pd.DataFrame({"id": ["a"]}, index=pd.Index(["b"], name="id"))
    assert "column 'id' appears more than once" in problems_of(lambda: from_frame(clash, []))[0].message
    # the same in an Arrow table, and in a Parquet file (which once failed as unreadable)
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["x"]), pa.array(["y"])], names=["id", "t", "t"])
    assert problems_of(lambda: from_frame(table, ["t"]))[0].message == problems[0].message


def test_parquet_file_with_a_column_named_twice(tmp_path: Path) -> None:
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["x"]), pa.array(["y"])], names=["id", "t", "t"])
    pq.write_table(table, tmp_path / "d.parquet")
    problems = problems_of(lambda: from_parquet(tmp_path / "d.parquet", ["t"]))
    assert [p.message for p in problems] == ["column 't' appears more than once (source 'people') (columns 2 and 3)"]
    assert from_parquet(tmp_path / "d.parquet", []).ids == ["a"]  # the columns not read do not matter


def test_invalid_text() -> None:
    # a lone surrogate cannot be UTF-8: reported with its row, as invalid UTF-8 in a Parquet file
    df = pd.DataFrame({"id": ["a", "b"], "t": ["ok", "bad \ud800"]}, dtype=object)  # (pandas 3's str dtype refuses it)
    problems = problems_of(lambda: from_frame(df, ["t"]))
    assert [(p.where, p.path) for p in problems] == [(WHERE, "row 2, column 't'")]
    assert "column 't' holds a string that is not valid UTF-8 (row 2)" in problems[0].message
    # binary values that are not text
    table = pa.table({"id": ["a"], "b": pa.array([b"\xff"], pa.binary())})
    assert "holds binary values that are not valid UTF-8 text" in problems_of(lambda: from_frame(table, ["b"]))[0].message


def test_record_size_limit(tmp_path: Path) -> None:
    data = {"id": ["a", "b"], "t": ["x" * 10, "y" * 100]}
    path = write_parquet(pa.table(data), tmp_path / "d.parquet")
    limit = 50 / 2**20
    file_problems = problems_of(lambda: from_parquet(path, ["t"], max_record_mb=limit))
    for obj in (pd.DataFrame(data), pl.DataFrame(data), pa.table(data)):
        problems = problems_of(lambda: from_frame(obj, ["t"], max_record_mb=limit))  # noqa: B023 (called at once)
        same_problems(problems, file_problems, str(path))
        assert len(from_frame(obj, ["t"], max_record_mb=None)) == 2
    assert "the record on row 2 is" in file_problems[0].message


def test_not_a_table() -> None:
    problems = problems_of(lambda: from_frame({"id": ["a"]}, []))
    assert problems[0].where == WHERE
    assert problems[0].message.startswith("a dict is not a table; expected a pandas DataFrame, a polars DataFrame")
    assert "__arrow_c_stream__" in problems[0].message
    assert "numpy.ndarray is not a table" in problems_of(lambda: frame_to_arrow(np.zeros(3), WHERE))[0].message
    lazy = pl.DataFrame({"id": ["a"]}).lazy()
    problems = problems_of(lambda: from_frame(lazy, []))
    assert problems[0].message == "a polars LazyFrame is a query, not a table"
    assert ".collect()" in problems[0].fix
    for series in (pd.Series(["a"]), pl.Series(["a"])):
        problem = problems_of(lambda: frame_to_arrow(series, WHERE))[0]  # noqa: B023 (called at once)
        assert (problem.message, "series.to_frame()" in problem.fix) == ("a Series is one column, not a table", True)


def test_arrow_tables_need_neither_pandas_nor_polars() -> None:
    code = (
        "import sys\n"
        "class NotInstalled:  # as if pandas and polars were not installed\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pandas', 'polars'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NotInstalled())\n"
        "import pyarrow as pa\n"
        "from er_framework.io import records_from_frame, frame_kind, arrow_table, as_kind\n"
        "t = pa.table({'id': ['a', 'b'], 'n': [1, 2]})\n"
        "r = records_from_frame(t, id_column='id', fields=['n'], name='s', where='w')\n"
        "assert r.fields == {'n': ['1', '2']}, r\n"
        "assert frame_kind(t) == 'arrow' and frame_kind(object()) == 'arrow'\n"
        "as_kind(arrow_table({'x': ['a']}), 'arrow')\n"
        "assert not {'pandas', 'polars'} & set(sys.modules)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr
    # importing the package imports neither
    code = "import sys, er_framework, er_framework.io; print(sorted({'pandas', 'polars'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- result tables


def test_arrow_table_types() -> None:
    left = np.array([3, 1, 2], dtype=np.int64)
    table = arrow_table(
        {
            "left_id": np.array(["a", "b", None], dtype=object),
            "left": left,
            "score": np.array([0.5, 1.0, 0.25]),
            "flag": np.array([True, False, True]),
            "names": ["x", "y", "z"],
            "units": np.array(["u", "v", "w"]),
        }
    )
    assert [str(t) for t in table.schema.types] == ["string", "int64", "double", "bool", "string", "string"]
    assert table.column("left_id").to_pylist() == ["a", "b", None]
    assert table.column("left").chunk(0).buffers()[1].address == left.ctypes.data  # not copied
    empty = arrow_table({"id": np.array([], dtype=object), "n": np.zeros(0, dtype=np.int32)})
    assert [str(t) for t in empty.schema.types] == ["string", "int32"] and empty.num_rows == 0
    assert arrow_table({"n": [1, 2]}).column("n").type == pa.int64()
    with pytest.raises(ValueError, match="different lengths"):
        arrow_table({"a": [1, 2], "b": ["x"]})
    with pytest.raises(ValueError, match="1-D"):
        arrow_table({"a": np.zeros((2, 2))})


def test_as_kind_round_trips() -> None:
    table = arrow_table({"id": np.array(["a", None, "c"], dtype=object), "n": np.array([1, 2, 3]), "score": np.array([0.5, 0.75, 1.0])})
    assert as_kind(table, "arrow") is table
    pandas_frame = as_kind(table, "pandas")
    assert isinstance(pandas_frame, pd.DataFrame) and frame_kind(pandas_frame) == "pandas"
    # missing is None (pandas 2, object) or NaN (pandas 3, str)
    assert [None if pd.isna(x) else x for x in pandas_frame["id"].tolist()] == ["a", None, "c"]
    assert frame_to_arrow(pandas_frame, WHERE).cast(table.schema).equals(table)
    polars_frame = as_kind(table, "polars")
    assert isinstance(polars_frame, pl.DataFrame) and frame_kind(polars_frame) == "polars"
    assert polars_frame["score"].to_list() == [0.5, 0.75, 1.0]
    assert frame_to_arrow(polars_frame, WHERE).cast(table.schema).equals(table)
    with pytest.raises(ValueError, match="unknown table kind 'spark'"):
        as_kind(table, "spark")


def test_float_columns_of_whole_numbers_are_read_as_integers(tmp_path: Path) -> None:
    # pandas.read_csv of a year / YYYYMMDD column with an empty cell: float64 with NaN
    df = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "year": [1999.0, np.nan, 2001.0],
            "dob": [19151111.0, 1.9151111e7, np.nan],
            "score": [0.5, 1.0, np.nan],
            "nullable": pd.array([1.0, None, 3.0], dtype="Float64"),
        }
    )
    want = {
        "year": ["1999", None, "2001"],
        "dob": ["19151111", "19151111", None],
        "score": ["0.5", "1.0", None],
        "nullable": ["1", None, "3"],
    }
    fields = list(want)
    assert from_frame(df, fields).fields == want
    assert from_frame(pl.from_pandas(df), fields).fields == want
    assert from_frame(pa.Table.from_pandas(df, preserve_index=False), fields).fields == want
    assert_same_records(from_frame(df, fields), from_parquet(write_parquet(df, tmp_path / "d.parquet"), fields))


# ---------------------------------------------------------------- columns: (issue 33)


def test_a_mapped_frame_reads_as_the_frame_with_its_columns_renamed_by_hand() -> None:
    df = pd.DataFrame({"id": ["1", "2"], "given": ["Ann", None], "postcode": [1010, 2020], "city": ["X", "Y"]})
    mapping = {"first_name": "given", "zip": "postcode"}
    mapped = from_frame(df, ["first_name", "zip", "city"], columns=mapping)
    by_hand = from_frame(df.rename(columns={"given": "first_name", "postcode": "zip"}), ["first_name", "zip", "city"])
    assert_same_records(mapped, by_hand)
    assert mapped.fields["zip"] == ["1010", "2020"] and mapped.fields["first_name"] == ["Ann", None]
    assert_same_records(from_frame(pl.from_pandas(df), ["first_name", "zip", "city"], columns=mapping), by_hand)


def test_a_missing_mapped_column_of_a_frame_names_the_field() -> None:
    df = pd.DataFrame({"id": ["1"], "given_name": ["Ann"]})
    with pytest.raises(InputError) as exc:
        from_frame(df, ["first_name"], columns={"first_name": "given"})
    text = str(exc.value)
    assert "column 'given' (field first_name, via columns:) not found" in text and "did you mean 'given_name'?" in text
