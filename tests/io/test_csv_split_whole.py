"""The CSV reader's whole-piece split against ``csv.reader`` reading every row (``split_whole=False``).

Texts are cut into pieces at line ends (as the file reader cuts them) and read
both ways: the columns, the line of every row and the problems (malformed rows,
rows with too few or too many cells, a header without rows) are the same, and a
record over the size limit raises the same error naming the same line. The
texts mix plain pieces (split whole) with pieces holding quotes, quoted line
breaks, carriage returns, NUL, blank lines and rows of the wrong length (read
by ``csv.reader`` from there on).
"""

from __future__ import annotations

import random

import pytest

from er_framework.errors import InputError
from er_framework.io.csv_read import read_csv_columns

HEADER = ["id", "name", "city", "note"]


def _cell(rng: random.Random, delimiter: str, plain: bool) -> str:
    words = ["Ann", "Bob", "Zoë", "日本", "", " ", "x y", "a-b", "O'Neil", "1.5", "—", "\t" if delimiter == "," else ";"]
    if not plain:
        words += ['"quoted, value"', '"two\nlines"', '"say ""hi"""', 'bad"quote', "\r", "\x00", "cr\rlf"]
    return rng.choice(words)


def _text(seed: int, delimiter: str, rows: int = 300) -> tuple[str, list[int]]:
    """A CSV text and the line ends where it may be cut into pieces."""
    rng = random.Random(seed)
    lines = [delimiter.join(HEADER)]
    for i in range(rows):
        # seed % 4: 0 plain only, 1 and 2 the last third mixed, 3 mixed from the start
        plain = (seed % 4 == 0 or (seed % 4 < 3 and i < 2 * rows // 3)) or rng.random() > 0.1
        r = rng.random()
        if r < 0.02:
            lines.append("")  # blank line
            continue
        cells = [f"r{i}"] + [_cell(rng, delimiter, plain) for _ in HEADER[1:]]
        if r < 0.03 and seed % 2:
            cells = cells[:-1]  # too few
        elif r < 0.04 and seed % 2:
            cells = cells + ["extra"]  # too many
        lines.append(delimiter.join(cells))
    text = "\n".join(lines) + ("\n" if seed % 3 else "")
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return text, ends


def _pieces(text: str, ends: list[int], rng: random.Random) -> list[tuple[str, int]]:
    cuts = sorted(rng.sample(ends, min(len(ends), rng.randrange(0, 8))))
    out, start = [], 0
    for c in cuts + [len(text)]:
        if c > start:
            out.append((text[start:c], 0))
            start = c
    return out


def _read(text: str, pieces: list[tuple[str, int]] | None, delimiter: str, split_whole: bool, limit: int | None = None):
    src = pieces if pieces is not None else text
    try:
        cols, loc, problems = read_csv_columns(
            src, "f.csv", delimiter, ["id", "name", "note", "city"], "id", "", max_record_bytes=limit, split_whole=split_whole
        )
    except InputError as exc:
        return ("error", [str(p) for p in exc.problems])
    return cols, loc.numbers, problems


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_split_whole_reads_what_csv_reader_reads(seed: int, delimiter: str) -> None:
    text, ends = _text(seed, delimiter)
    rng = random.Random(seed)
    for pieces in (
        None,
        _pieces(text, ends, rng),
        _pieces(text, ends, rng),
        [(text[:e], 0) for e in ends[:1]] + [(text[ends[0] :], 0)] if ends else None,
    ):
        assert _read(text, pieces, delimiter, True) == _read(text, pieces, delimiter, False)


@pytest.mark.parametrize("seed", range(8))
def test_records_over_the_limit_raise_the_same_error(seed: int) -> None:
    text, ends = _text(seed, ",")
    rng = random.Random(seed)
    pieces = _pieces(text, ends, rng)
    for limit in (20, 30, 45, 1000):
        assert _read(text, pieces, ",", True, limit) == _read(text, pieces, ",", False, limit)


def test_plain_files_are_split_whole() -> None:
    text = "id,name,city,note\n" + "".join(f"r{i},n{i},c,\n" for i in range(1000))
    cols, numbers, problems = _read(text, [(text, 1)], ",", True)
    assert problems == [] and numbers == list(range(2, 1002))
    assert cols["id"][:2] == ["r0", "r1"] and cols["note"][0] == "" and len(cols["city"]) == 1000


@pytest.mark.parametrize(
    "text",
    [
        "id,name,city,note\n",
        "id,name,city,note\n\n\n",
        "id,name,city,note",
        "\n\nid,name,city,note\nr1,a,b,c\n",
        "id,name,city,note\nr1,a,b,c",
        "id,name,city,note\r\nr1,a,b,c\r\n",
        "id\nr1\n\nr2\n",
        "id,name\nr1,a\n",
    ],
)
def test_small_texts(text: str) -> None:
    assert _read(text, None, ",", True) == _read(text, None, ",", False)
