"""io/labels_file: the one reader and writer of labels files (spreadsheet dialects, formula escapes)."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.errors import InputError
from er_framework.io.labels_file import (
    LABELS_HEADER,
    LABELS_KIND,
    LabelsFile,
    escape_formula,
    labels_header,
    read_labels_file,
    unescape_formula,
    write_labels_file,
)

HEADER = ",".join(LABELS_HEADER)


def test_a_spreadsheet_file_is_read_bom_semicolons_crlf_and_a_quoted_cr(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_bytes(
        "\ufeffLeft_Source;left_id;right_source;right_id;score;side;match;note\r\n"
        'A;"x\ry";B;\'-12;0,5;above;1;mine\r\n'
        "A;2;B;3\r\n"
        "\r\n".encode()
    )
    got = read_labels_file(path, fix="fix it")
    assert got.header == [*LABELS_HEADER, "note"]
    assert got.rows == [["A", "x\ry", "B", "-12", "0,5", "above", "1", "mine"], ["A", "2", "B", "3", "", "", "", ""]]
    assert (got.separator, got.bom, got.newline) == (";", True, "\r\n")
    assert got.lines[0] == 2
    assert got.records()[0]["note"] == "mine"


def test_tabs_and_any_column_order_are_read(tmp_path: Path) -> None:
    path = tmp_path / "l.tsv"
    path.write_text("match\tright_id\tright_source\tleft_id\tleft_source\n1\t2\tB\t1\tA\n", encoding="utf-8")
    got = read_labels_file(path, fix="f")
    assert got.separator == "\t" and got.records() == [
        {"match": "1", "right_id": "2", "right_source": "B", "left_id": "1", "left_source": "A"}
    ]


@pytest.mark.parametrize(
    "content",
    [b"SECRET=xyz123\x00PATH=/bin\x00", b"root:$6$xyz123:19000:0:99999:7:::\n", b"left_source,left_id\nxyz123,1\n", b"\xff\xfexyz123"],
)
def test_a_file_that_is_not_a_labels_file_is_refused_without_quoting_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "other"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        read_labels_file(path, fix="point training.labels to a labels file")
    text = info.value.render()
    assert "is not a labels file" in text and "xyz123" not in text
    assert not LABELS_KIND.recognizes(content)


def test_a_device_an_empty_file_and_bad_utf8(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="a character device, not a regular file"):
        read_labels_file("/dev/zero", fix="f")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_labels_file(fifo, fix="f")  # refused before it is opened: it would block
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert read_labels_file(empty, fix="f", allow_empty=True).rows == []
    with pytest.raises(InputError, match="empty"):
        read_labels_file(empty, fix="f")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(HEADER.encode() + b"\nA,1,B,\xff,0.5,above,1\n")
    with pytest.raises(InputError, match="not UTF-8") as info:
        read_labels_file(bad, fix="f")
    assert info.value.problems[0].where == f"{bad}:2"


def test_extra_values_and_a_repeated_column_are_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_text(HEADER + "\nA,1,B,2,0.5,above,1,,\nA,1,B,3,0.9,above,1,extra\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 3 has 8 values, the header 7 columns"):
        read_labels_file(path, fix="f")
    path.write_text(HEADER + ",match\n", encoding="utf-8")
    with pytest.raises(InputError, match="'match' twice"):
        read_labels_file(path, fix="f")


@pytest.mark.parametrize(
    ("value", "written"),
    [("=1+1", "'=1+1"), ("+1", "'+1"), ("-12", "'-12"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"),
     ("'=x", "''=x"), ("'x", "'x"), ("a=b", "a=b"), ("", "")],
)  # fmt: skip
def test_formula_escape_is_owasp_and_round_trips(value: str, written: str) -> None:
    assert escape_formula(value) == written
    assert unescape_formula(written) == value


def test_the_writer_quotes_escaped_values_and_keeps_the_dialect(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    labels = LabelsFile(rows=[["=cmd|' /C calc'!A0", "-1", "@x", "+2", "0.5", "above", ""]], separator=";", bom=True, newline="\r\n")
    write_labels_file(path, labels)
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfleft_source;") and raw.endswith(b"\r\n")
    row = raw.decode("utf-8-sig").split("\r\n")[1]
    # every cell a spreadsheet would evaluate starts with a quote character, inside quotes
    assert row.split(";")[:4] == ["\"'=cmd|' /C calc'!A0\"", '"\'-1"', '"\'@x"', '"\'+2"']
    assert read_labels_file(path, fix="f").rows == labels.rows


def test_the_writer_refuses_a_file_that_is_not_a_labels_file(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("id,name\n1,secret-value\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a labels file") as info:
        write_labels_file(path, LabelsFile())
    assert "secret-value" not in info.value.render()
    assert path.read_text(encoding="utf-8") == "id,name\n1,secret-value\n"
    job = tmp_path / "job.yaml"
    with pytest.raises(InputError, match="an input of the job"):
        write_labels_file(job, LabelsFile(), inputs=[job])
    assert not job.exists()


def test_labels_header_sniffs_the_separator() -> None:
    assert labels_header(HEADER.encode()) == ","
    assert labels_header(HEADER.replace(",", ";").encode()) == ";"
    assert labels_header(b'\xef\xbb\xbf"left_source"\t"left_id"\tright_source\tright_id\tmatch\r\n') == "\t"
    assert labels_header(b"left_source,left_id,right_source,right_id\n") is None


TEXT = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\r", "\n", ";", ",", '"', "=", "'", "\t", "\ufeff", "-", "@", "+"])),
    max_size=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.lists(TEXT, min_size=8, max_size=8), max_size=6),
    sep=st.sampled_from([",", ";", "\t"]),
    bom=st.booleans(),
    crlf=st.booleans(),
)
def test_written_labels_read_back_equal(tmp_path: Path, rows: list[list[str]], sep: str, bom: bool, crlf: bool) -> None:
    # a row of nothing but empty values is a blank line to a spreadsheet; the writer gives it one mark
    rows = [r for r in rows if any(r)]
    labels = LabelsFile(header=[*LABELS_HEADER, "=note"], rows=rows, separator=sep, bom=bom, newline="\r\n" if crlf else "\n")
    path = tmp_path / "round.csv"
    write_labels_file(path, labels)
    got = read_labels_file(path, fix="f")
    assert got.header == labels.header and got.rows == rows
    assert (got.separator, got.bom, got.newline) == (sep, bom, labels.newline)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=300),
    header=st.sampled_from([b"", HEADER.encode() + b"\n", b"\xef\xbb\xbf" + HEADER.replace(",", ";").encode() + b"\r\n"]),
)
def test_the_reader_gives_rows_or_an_input_error(tmp_path: Path, body: bytes, header: bytes) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(header + body)
    try:
        got = read_labels_file(path, fix="f", allow_empty=True)
    except InputError:
        return
    assert all(len(r) == len(got.header) for r in got.rows)


def test_a_csv_module_reading_agrees_on_a_plain_file(tmp_path: Path) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(LABELS_HEADER)
    w.writerows([["A", f"id {i}, with comma", "B", f'"q{i}"', "0.5", "below", str(i % 2)] for i in range(30)])
    path = tmp_path / "plain.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    got = read_labels_file(path, fix="f")
    assert got.records() == list(csv.DictReader(io.StringIO(buf.getvalue())))
