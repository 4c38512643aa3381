"""io/csv_dialect.py: a source's CSV dialect, and text of another encoding decoded in a stream."""

from __future__ import annotations

import io

import pytest

from er_framework.errors import InputError
from er_framework.io.csv_dialect import DEFAULT_DIALECT, CsvDialect, codec_name, decoded_chunks, is_utf8, separator_name


def chunks(data: bytes, encoding: str, chunk: int = 7, limit: int | None = None) -> list[tuple[str, int]]:
    return list(decoded_chunks(io.BytesIO(data), "f.csv", False, "", limit, encoding, chunk=chunk))


def test_defaults_read_what_the_extension_says() -> None:
    assert DEFAULT_DIALECT.delimiter_for("csv") == ","
    assert DEFAULT_DIALECT.delimiter_for("tsv") == "\t"
    assert CsvDialect(delimiter=";").delimiter_for("tsv") == ";"
    assert DEFAULT_DIALECT.utf8 and CsvDialect(encoding="UTF8").utf8 and CsvDialect(encoding="utf-8-sig").utf8
    assert not CsvDialect(encoding="latin-1").utf8 and not is_utf8("utf-16")
    assert codec_name("latin1") == "iso8859-1"
    assert separator_name("\t") == "tab" and separator_name(";") == "';'"


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"encoding": "klingon"}, "unknown encoding 'klingon'"),
        ({"delimiter": ";;"}, "one character"),
        ({"quote": ""}, "one character"),
        ({"delimiter": "'", "quote": "'"}, "must differ"),
        ({"delimiter": "\n"}, "line end"),
    ],
)
def test_a_dialect_that_cannot_be_read_is_a_value_error_naming_the_setting(kwargs: dict[str, str], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        CsvDialect(**kwargs)


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "utf-16", "utf-16-le", "utf-8", "utf-32"])
@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64, 1 << 20])
def test_decoded_text_is_the_text_in_pieces_ending_on_line_ends(encoding: str, chunk: int) -> None:
    text = "id;name\n1;Zoë Ölz\n2;Ærø €\n\n3;last line without end"
    if encoding == "latin-1":
        text = text.replace("€", "e")
    data = text.encode(encoding)
    pieces = chunks(data, encoding, chunk)
    assert "".join(p for p, _ in pieces) == text
    for p, _ in pieces[:-1]:
        assert p.endswith("\n")
    # each piece's first line number is the number of line ends before it, plus one
    seen = 0
    for p, line in pieces:
        assert line == seen + 1
        seen += p.count("\n")


def test_a_byte_order_mark_is_dropped() -> None:
    assert chunks(b"\xef\xbb\xbfid\n1\n", "utf-8", chunk=64) == [("id\n1\n", 1)]
    assert "".join(p for p, _ in chunks("id\n1\n".encode("utf-16"), "utf-16")) == "id\n1\n"
    assert "".join(p for p, _ in chunks(b"\xff\xfe" + "id\n".encode("utf-16-le"), "utf-16-le")) == "id\n"


def test_a_byte_that_does_not_decode_names_its_line_and_offset() -> None:
    data = "id,name\n1,Ann\n2,B".encode("cp1252") + b"\x81" + b"b\n"
    with pytest.raises(InputError) as exc:
        chunks(data, "cp1252", chunk=4)
    p = exc.value.problems[0]
    assert p.where == "f.csv:3"
    at = data.index(b"\x81")
    assert f"byte b'\\x81' at byte offset {at}" in p.message and "not valid cp1252" in p.message
    assert "csv: {encoding: utf-8}" in p.fix


def test_a_truncated_utf16_file_is_an_error_not_a_silent_loss() -> None:
    data = "id\n1\n".encode("utf-16") + b"\x00"  # an odd byte at the end
    with pytest.raises(InputError, match="not valid utf-16"):
        chunks(data, "utf-16")


def test_a_line_longer_than_the_limit_is_refused_as_it_is_read() -> None:
    data = ("id,text\n1," + "é" * 5000 + "\n").encode("latin-1")
    with pytest.raises(InputError, match="larger than the limit"):
        chunks(data, "latin-1", chunk=100, limit=1000)
    assert chunks(data, "latin-1", chunk=100, limit=20000)[-1][0].endswith("é\n")
