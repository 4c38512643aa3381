"""Tests for er_framework.io.source_files: reading a source's file into Records (ids, fields, every problem in
one pass, the long layout, byte ranges)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.output_write import write_outputs
from er_framework.io.source_files import partition_ranges, read_source

# ---------------------------------------------------------------- helpers


def write_csv(path: Path, rows: list[list[Any]], delimiter: str = ",") -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


def write_jsonl(path: Path, objs: list[Any]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    return path


def problems_text(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


def read(path: Path, fields: list[str], id_column: str = "id", **kw: Any) -> Records:
    return read_source(path, id_column=id_column, fields=fields, name="src", **kw)


def test_id_column_may_also_be_a_field(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", [["id", "t"], ["1", "a"]])
    assert read(path, ["id", "t"]).fields == {"id": ["1"], "t": ["a"]}


_cell = st.text(max_size=20)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_cell, min_size=1, max_size=15))
def test_property_csv_and_jsonl_round_trip(tmp_path: Path, values: list[str]) -> None:
    ids = [f"r{i}" for i in range(len(values))]
    out = tmp_path / "prop"
    write_outputs(out, {"t": {"id": ids, "v": values}}, {})
    assert read(out / "t.csv", ["v"]).fields["v"] == [v if v != "" else None for v in values]
    write_jsonl(out / "t.jsonl", [{"id": i, "v": v} for i, v in zip(ids, values)])
    assert read(out / "t.jsonl", ["v"]).fields["v"] == values


def test_empty_files(tmp_path: Path) -> None:
    (tmp_path / "e.csv").write_text("")
    (tmp_path / "e.jsonl").write_text("\n\n")
    for name in ("e.csv", "e.jsonl"):
        with pytest.raises(InputError) as exc:
            read(tmp_path / name, ["t"])
        assert len(exc.value.problems) == 1
        assert "empty" in problems_text(exc) and name in problems_text(exc)


def test_missing_and_invalid_ids(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [{"id": "a"}, {"id": None}, {"x": 1}, {"id": ""}, {"id": 1.5}, {"id": [1]}, {"id": True}],
    )
    with pytest.raises(InputError) as exc:
        read(path, [])
    by_where = {p.where: p.message for p in exc.value.problems}
    assert "id is missing" in by_where[f"{path}:2"]
    assert "id is missing" in by_where[f"{path}:3"]
    assert "id is empty" in by_where[f"{path}:4"]
    assert "1.5" in by_where[f"{path}:5"] and "expected a string or an integer" in by_where[f"{path}:5"]
    assert "[1]" in by_where[f"{path}:6"]
    assert "true" in by_where[f"{path}:7"]


def test_duplicate_ids_rows_and_count(tmp_path: Path) -> None:
    rows = [["id", "t"]] + [[f"d{i % 13}", "x"] for i in range(26)] + [["u", "x"]]
    path = write_csv(tmp_path / "d.csv", rows)
    with pytest.raises(InputError) as exc:
        read(path, ["t"])
    [problem] = exc.value.problems
    assert problem.where == str(path)
    assert "13 duplicated ids" in problem.message
    assert "id 'd0' appears on rows 2 and 15" in problem.message
    assert "id 'd9' appears on rows 11 and 24" in problem.message
    assert "'d10'" not in problem.message  # only the first 10 are listed
    assert "3 further duplicated ids (6 rows)" in problem.message
    assert "ids must be unique within a source" in problem.fix


def test_all_problems_in_one_pass(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,title\n1,a\n1,b\n,c\n4,d,e\n")
    with pytest.raises(InputError) as exc:
        read(path, ["title", "year"])
    text = problems_text(exc)
    assert len(exc.value.problems) == 4
    assert "'year' not found" in text
    assert "d.csv:5" in text  # too many cells
    assert "d.csv:4" in text  # empty id
    assert "id '1' appears on rows 2 and 3" in text


def test_long_layout_groups_rows_by_id(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("id,x,y\nf1,1.5,2\nf2,3,4\nf1,5,\n")
    recs = read_source(p, id_column="id", fields=["x", "y"], name="prints", layout="long")
    assert recs.ids == ["f1", "f2"]
    assert recs.fields["x"] == ['["1.5", "5"]', '["3"]']
    assert recs.fields["y"] == ['["2", null]', '["4"]']
    # wide layout still rejects the repeated id
    with pytest.raises(InputError, match="f1"):
        read_source(p, id_column="id", fields=["x", "y"], name="prints")


def test_csv_partition_ranges_cut_at_even_quote_parity(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_bytes(b'id,t\na,"1\n2\n3"\nb,x\nc,"y\n"\n')
    ranges = partition_ranges(path, 1)
    assert ranges is not None
    starts = [a for a, _ in ranges]
    data = path.read_bytes()
    # every range starts a record: after the header line, after line 'a' (3 lines), after 'b'
    assert starts == [0, data.index(b"a,"), data.index(b"b,"), data.index(b"c,")]
    assert ranges[-1][1] == len(data)


# ---------------------------------------------------------------- columns: and csv: (issue 33)

CUSTOMERS = [
    ["id", "given", "sur", "postcode", "note"],
    ["1", "Zoë", "Ölz", "1010", 'says "hi"; then, bye'],
    ["2", "Ærø", "", "2020", "line one\nline two"],
    ["3", "Bob", "Smith", "", ""],
]
MAPPING = {"first_name": "given", "last_name": "sur", "zip": "postcode"}
JOB_FIELDS = ["first_name", "last_name", "zip", "note"]


def renamed_by_hand(rows: list[list[Any]]) -> list[list[Any]]:
    """The reference: the header renamed as a user would before er read the file."""
    back = {c: f for f, c in MAPPING.items()}
    return [[back.get(c, c) for c in rows[0]], *rows[1:]]


def same(a: Records, b: Records) -> None:
    assert a.ids == b.ids and list(a.fields) == list(b.fields) and a.fields == b.fields and a.source_names == b.source_names


def test_a_mapped_csv_reads_as_the_same_file_with_its_columns_renamed_by_hand(tmp_path: Path) -> None:
    mapped = read(write_csv(tmp_path / "a.csv", CUSTOMERS), JOB_FIELDS, columns=MAPPING)
    by_hand = read(write_csv(tmp_path / "b.csv", renamed_by_hand(CUSTOMERS)), JOB_FIELDS)
    same(mapped, by_hand)
    assert mapped.fields["first_name"] == ["Zoë", "Ærø", "Bob"] and mapped.fields["last_name"] == ["Ölz", None, "Smith"]


def test_a_mapped_jsonl_and_parquet_read_as_renamed_by_hand(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    objs = [dict(zip(CUSTOMERS[0], r)) for r in CUSTOMERS[1:]]
    hand = [dict(zip(renamed_by_hand(CUSTOMERS)[0], r)) for r in CUSTOMERS[1:]]
    same(
        read(write_jsonl(tmp_path / "a.jsonl", objs), JOB_FIELDS, columns=MAPPING),
        read(write_jsonl(tmp_path / "b.jsonl", hand), JOB_FIELDS),
    )
    pq.write_table(pa.Table.from_pylist(objs), tmp_path / "a.parquet")
    pq.write_table(pa.Table.from_pylist(hand), tmp_path / "b.parquet")
    same(read(tmp_path / "a.parquet", JOB_FIELDS, columns=MAPPING), read(tmp_path / "b.parquet", JOB_FIELDS))
    # file-backed JSON Lines: the columns read again from the file keep the job's names
    backed = read(tmp_path / "a.jsonl", JOB_FIELDS, columns=MAPPING, file_backed=True)
    assert list(backed.fields) == JOB_FIELDS and list(backed.fields["first_name"]) == ["Zoë", "Ærø", "Bob"]


def test_a_mapped_long_layout_and_a_page_folder(tmp_path: Path) -> None:
    write_csv(tmp_path / "m.csv", [["id", "px", "py"], ["a", "1", "2"], ["a", "3", "4"], ["b", "5", "6"]])
    long = read(tmp_path / "m.csv", ["x", "y"], layout="long", columns={"x": "px", "y": "py"})
    assert long.ids == ["a", "b"] and long.fields == {"x": ['["1", "3"]', '["5"]'], "y": ['["2", "4"]', '["6"]']}
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "p1.html").write_text("<p>hello</p>")
    pages = read(tmp_path / "pages", ["page"], columns={"page": "html"})
    assert pages.ids == ["p1"] and pages.fields == {"page": ["<p>hello</p>"]}
    with pytest.raises(InputError) as exc:
        read(tmp_path / "pages", ["page"], columns={"page": "body"})
    assert "column 'body' (field page, via columns:) not found" in problems_text(exc)


def test_two_fields_may_read_one_column(tmp_path: Path) -> None:
    r = read(write_csv(tmp_path / "a.csv", CUSTOMERS), ["given", "first_name"], columns={"first_name": "given"})
    assert r.fields["given"] == r.fields["first_name"] == ["Zoë", "Ærø", "Bob"]
    assert r.fields["given"] is not r.fields["first_name"]


def test_a_missing_mapped_column_names_the_column_and_the_field(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "a.csv", CUSTOMERS)
    with pytest.raises(InputError) as exc:
        read(path, JOB_FIELDS, columns={**MAPPING, "first_name": "givn"})
    text = problems_text(exc)
    assert "column 'givn' (field first_name, via columns:) not found" in text
    assert "did you mean 'given'?" in text and "columns present: given, id, note, postcode, sur" in text


def test_a_semicolon_latin1_file_reads_as_its_comma_utf8_twin(tmp_path: Path) -> None:
    from er_framework.io.csv_dialect import CsvDialect

    twin = write_csv(tmp_path / "utf8.csv", CUSTOMERS)
    with open(tmp_path / "latin.csv", "w", encoding="latin-1", newline="") as f:
        csv.writer(f, delimiter=";").writerows(CUSTOMERS)
    latin = read(tmp_path / "latin.csv", JOB_FIELDS, columns=MAPPING, dialect=CsvDialect(delimiter=";", encoding="latin-1"))
    same(latin, read(twin, JOB_FIELDS, columns=MAPPING))
    # utf-16 with its byte order mark, tab-separated, quotes '
    with open(tmp_path / "u16.csv", "w", encoding="utf-16", newline="") as f:
        csv.writer(f, delimiter="\t", quotechar="'").writerows(CUSTOMERS)
    u16 = read(tmp_path / "u16.csv", JOB_FIELDS, columns=MAPPING, dialect=CsvDialect(delimiter="\t", quote="'", encoding="utf-16"))
    same(u16, read(twin, JOB_FIELDS, columns=MAPPING))


def test_the_wrong_encoding_or_separator_says_which_csv_setting_to_write(tmp_path: Path) -> None:
    from er_framework.io.csv_dialect import CsvDialect

    with open(tmp_path / "latin.csv", "w", encoding="latin-1", newline="") as f:
        csv.writer(f, delimiter=";").writerows(CUSTOMERS)
    with pytest.raises(InputError) as exc:
        read(tmp_path / "latin.csv", ["given"])
    assert "not valid UTF-8" in problems_text(exc) and "csv: {encoding: cp1252}" in problems_text(exc)
    with pytest.raises(InputError) as exc:
        read(tmp_path / "latin.csv", ["given"], dialect=CsvDialect(encoding="latin-1"))
    assert "looks ';'-separated: set csv: {delimiter: \";\"} on the source" in problems_text(exc)
    with pytest.raises(InputError) as exc:
        read(tmp_path / "latin.csv", ["given"], dialect=CsvDialect(delimiter=";", encoding="utf-16"))
    assert "cannot be read as utf-16: UTF-16 stream does not start with BOM" in problems_text(exc)


def test_csv_settings_on_a_file_that_is_not_csv_are_refused(tmp_path: Path) -> None:
    from er_framework.io.csv_dialect import CsvDialect

    path = write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "x": "y"}])
    with pytest.raises(InputError, match="csv: describes a CSV or TSV file, and this source is a JSON Lines file"):
        read(path, ["x"], dialect=CsvDialect(delimiter=";"))


@pytest.mark.parametrize("step", [1, 16, 50, 10**9])
def test_partitions_of_a_semicolon_file_with_another_quote(tmp_path: Path, step: int) -> None:
    from er_framework.io.csv_dialect import CsvDialect

    rows = [["id", "name", "note"]] + [[f"r{i}", f"n;{i}" if i % 3 else f"n{i}", "a\nb" if i % 5 == 0 else f"x'{i}'"] for i in range(60)]
    path = tmp_path / "s.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=";", quotechar="'").writerows(rows)
    d = CsvDialect(delimiter=";", quote="'")
    whole = read(path, ["name", "note"], dialect=d)
    assert whole.fields["name"][1] == "n;1" and whole.fields["note"][0] == "a\nb"
    ranges = partition_ranges(path, step, d)
    assert ranges is not None
    ids: list[str] = []
    names: list[str | None] = []
    for r in ranges:
        part = read(path, ["name", "note"], dialect=d, byte_range=r)
        ids += part.ids
        names += part.fields["name"]
    assert ids == whole.ids and names == whole.fields["name"]


def test_a_file_of_another_encoding_is_one_partition(tmp_path: Path) -> None:
    from er_framework.io.csv_dialect import CsvDialect

    path = write_csv(tmp_path / "a.csv", CUSTOMERS)
    assert partition_ranges(path, 10, CsvDialect(encoding="latin-1")) is None
    assert partition_ranges(path, 10, CsvDialect(delimiter="§")) is None
    assert partition_ranges(path, 10, CsvDialect()) is not None
    with pytest.raises(ValueError, match="cannot be read by byte range"):
        read(path, ["given"], dialect=CsvDialect(encoding="latin-1"), byte_range=(0, 10))
