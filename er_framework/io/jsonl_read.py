"""Reading JSON Lines text into raw columns (:func:`read_jsonl_columns`), the reader of every JSON Lines file.

The input rules (values as text, problems naming ``file:LINE``, nothing dropped but blank lines) are
those of :mod:`er_framework.io.source_files`. Besides lines that are not JSON objects, an object
naming a key twice and a lone UTF-16 surrogate escape are problems.
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Iterable, Iterator
from typing import Any

from er_framework.errors import InputError, Problem
from er_framework.io.data_file import (
    Capped,
    Locator,
    RecordIds,
    gc_paused,
    missing_columns,
    pieces_of,
    snippet,
    too_big_problem,
)
from er_framework.io.filetext import SpanCollector

__all__ = ["read_jsonl_columns", "split_lines"]

_JSONL_CHUNK = 65536


def split_lines(text: str) -> Iterator[str]:
    """``text.split("\n")`` one line at a time: no list of every line beside the text
    (a 4 GB file would need 4 GB more)."""
    start = 0
    find = text.find
    while True:
        end = find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


class _DuplicateKey(Exception):
    """Raised by :func:`_unique_keys` for a JSON object that names a key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of the JSON Lines reader: a dict, or :class:`_DuplicateKey`."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


#: A ``\uD800``-``\uDFFF`` escape (high surrogates: ``D800``-``DBFF``).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate_escape(line: str) -> str:
    """The first surrogate escape of ``line`` that is not half of a pair (for the message)."""
    pending = ""
    end = -1
    for m in _SURROGATE_ESCAPE.finditer(line):
        text = m.group()
        high = text[3].lower() in "89ab"
        if pending:
            if not high and m.start() == end:
                pending = ""
                continue
            return pending
        if not high:
            return text
        pending, end = text, m.end()
    return pending


def _has_lone_surrogate(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _line_shown(line: str, parsed: list[int]) -> str:
    """``": LINE"`` (a snippet) when quoting the line is safe: it starts like JSON, or earlier lines of the
    file were JSON objects (the file is JSON Lines with a bad line). A file of no JSON at all (a password
    file, an environment dump given a .jsonl name) is never quoted."""
    stripped = line.strip()
    if parsed or stripped[:1] in ("{", "["):
        return f": {snippet(stripped)}"
    return " (the line is not shown: no line before it was JSON)"


def read_jsonl_columns(
    text: str | Iterable[tuple[str, int]],
    file: str,
    wanted: list[str],
    id_column: str,
    hint: str,
    *,
    max_record_bytes: int | None = None,
    whole: bool = True,
    ids: RecordIds | None = None,
    spans: SpanCollector | None = None,
) -> tuple[dict[str, list[Any]], Locator, list[Problem]]:
    """Raw value columns of a JSON Lines text (absent keys are ``None``).

    ``spans``: the pieces come through :meth:`SpanCollector.pieces` of this collector, which records
    where each record's values of its fields lie in the file and drops them (their columns hold
    ``None``; :func:`~er_framework.io.source_files.read_source` with ``file_backed``).

    ``text``: the whole text, or pieces ``(text, first line)`` ending on line ends (as
    :func:`~er_framework.io.data_file.text_chunks` yields them; read one at a time). A line larger than
    ``max_record_bytes`` raises InputError. ``whole``: the text is a whole file, so a file
    without any JSON line is a problem (not one partition of a file). Besides lines that are
    not JSON objects, an object naming a key twice (JSON readers keep one of the values, at
    random for the user) and a lone UTF-16 surrogate escape (``"\\ud800"``: not a character,
    it cannot be written as UTF-8) are problems.
    """
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    decode = decoder.decode
    scan = json.scanner.make_scanner(decoder)  # type: ignore[arg-type]  # the C scanner
    decode_error = json.JSONDecodeError
    example = "{" + ", ".join(f'"{c}": "…"' for c in wanted) + "}"
    one_object = f"each line must hold one JSON object, e.g. {example}"
    bad_json = Capped(file, "lines that are not valid JSON", one_object)
    not_object = Capped(file, "lines that are not JSON objects", one_object)
    duplicated = Capped(file, "lines with a key given twice", "name every key once per object: rename or merge the repeated key")
    surrogates = Capped(
        file,
        "lines with a lone surrogate",
        "a \\ud800-\\udfff escape must be half of a surrogate pair (e.g. \\ud83d\\ude00 for 😀); "
        "write the character itself in UTF-8, or replace the lone escape with \\ufffd",
    )
    columns: dict[str, list[Any]] = {c: [] for c in wanted}
    keys: set[str] = set()
    lines: list[int] = []
    chunk: list[dict[str, Any]] = []
    nonblank = 0
    limit = max_record_bytes
    quarter = -1 if limit is None else limit // 4  # a line of fewer characters fits in any case

    def flush() -> None:
        if not chunk:
            return
        keys.update(*chunk)
        for c in wanted:
            columns[c].extend([o.get(c) for o in chunk])
        chunk.clear()

    kinds = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}
    with gc_paused():
        for piece, first in pieces_of(text):
            if piece.isspace():
                continue  # blank lines only: no data
            at = spans.offset if spans is not None else 0  # byte offset of the next line (file-backed)
            ascii_piece = spans.ascii if spans is not None else True
            for number, line in enumerate(split_lines(piece), first):
                line_at = at
                if spans is not None:
                    at += (len(line) if ascii_piece else _utf8_len(line)) + 1
                if quarter >= 0 and len(line) > quarter and limit is not None:
                    size = _utf8_len(line)
                    if size > limit:
                        raise InputError(too_big_problem(file, number, size, limit, hint, "line", ids(line) if ids else None))
                # Fast path: the C scanner on a line without leading whitespace;
                # anything unusual goes through the full decoder for its message.
                try:
                    try:
                        obj, end = scan(line, 0)
                        if end != len(line) and not line[end:].isspace():
                            raise StopIteration
                    except (StopIteration, decode_error):
                        if not line or line.isspace():
                            continue  # blank line: no data
                        obj = decode(line)
                except decode_error as e:
                    nonblank += 1
                    bad_json.add(
                        f"{file}:{number}",
                        f"line {number} is not valid JSON: {e.msg} (column {e.colno}){_line_shown(line, lines)}",
                    )
                    continue
                except RecursionError:
                    nonblank += 1
                    bad_json.add(f"{file}:{number}", f"line {number} is nested too deeply to parse")
                    continue
                except _DuplicateKey as e:
                    nonblank += 1
                    duplicated.add(f"{file}:{number}", _duplicate_message(number, e, line))
                    continue
                nonblank += 1
                if obj.__class__ is not dict:
                    kind = kinds.get(type(obj), type(obj).__name__)
                    not_object.add(
                        f"{file}:{number}",
                        f"line {number} holds {kind}, expected a JSON object{_line_shown(line, lines)}",
                    )
                    continue
                if ("\\ud" in line or "\\uD" in line) and _has_lone_surrogate(obj):
                    escape = _lone_surrogate_escape(line)
                    escape = f" {escape}" if escape else ""
                    surrogates.add(
                        f"{file}:{number}",
                        f"line {number} holds a lone UTF-16 surrogate{escape} (half of an escaped pair, "
                        f"not a character; it cannot be written as UTF-8): {snippet(line.strip())}",
                    )
                    continue
                chunk.append(obj)
                lines.append(number)
                if spans is not None:
                    spans.add(obj, line, line_at, ascii_piece)
                if len(chunk) >= _JSONL_CHUNK:
                    flush()
    flush()

    problems: list[Problem] = []
    if nonblank == 0:
        if not whole:
            return {c: [] for c in wanted}, Locator(file, [], "line"), problems
        problems.append(
            Problem(
                where=file,
                message=f"the file is empty: no JSON lines{hint}",
                fix=f"write one JSON object per line, e.g. {example}",
            )
        )
        return {}, Locator(file, [], "line"), problems
    problems += bad_json.problems() + not_object.problems() + duplicated.problems() + surrogates.problems()
    if lines:
        missing = [c for c in wanted if c not in keys]
        problems += missing_columns(missing, sorted(keys), file, id_column, hint, " (the key is absent on every line)")
        for c in missing:
            del columns[c]
    else:
        columns = {}
    return columns, Locator(file, lines, "line"), problems


def _duplicate_message(number: int, e: _DuplicateKey, line: str) -> str:
    return (
        f"line {number}: the key {e.args[0]!r} appears twice in one object (a JSON reader keeps "
        f"only one of its values): {snippet(line.strip())}"
    )
