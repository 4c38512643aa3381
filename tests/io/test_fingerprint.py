"""Fingerprints of input files and page folders (er_framework/io/fingerprint.py), and what changed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from er_framework.io import fingerprint as fp
from er_framework.io.fingerprint import changed_inputs, fingerprint


def test_a_small_file_is_hashed_whole_and_a_touch_is_no_change(tmp_path: Path) -> None:
    f = tmp_path / "a.csv"
    f.write_bytes(b"id,x\n1,a\n")
    got = fingerprint(f)
    assert got["kind"] == "file" and got["hashed"] == "whole" and got["size"] == 9
    assert got["sha256"] == hashlib.sha256(b"id,x\n1,a\n").hexdigest()
    os.utime(f, ns=(5, 5))
    assert changed_inputs([got], [f]) == []
    f.write_bytes(b"id,x\n1,b\n")
    assert changed_inputs([got], [f]) == [(str(f), "its content differs")]


def test_a_large_file_is_hashed_at_both_ends_and_a_moved_mtime_is_a_change(tmp_path: Path) -> None:
    f = tmp_path / "big.jsonl"
    body = bytearray(os.urandom(3 * fp.EDGE_BYTES))
    f.write_bytes(bytes(body))
    got = fingerprint(f)
    want = hashlib.sha256(bytes(body[: fp.EDGE_BYTES]) + bytes(body[-fp.EDGE_BYTES :])).hexdigest()
    assert got["hashed"] == "first and last MB" and got["sha256"] == want
    body[len(body) // 2] ^= 0xFF  # the middle, not hashed: found by the modification time
    f.write_bytes(bytes(body))
    os.utime(f, ns=(got["mtime_ns"] + 10**9, got["mtime_ns"] + 10**9))
    [(path, what)] = changed_inputs([got], [f])
    assert "modification time moved" in what


def test_a_page_folder_by_its_listing(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text("<p>a</p>", encoding="utf-8")
    got = fingerprint(tmp_path)
    assert got["kind"] == "folder" and got["pages"] == 1
    assert changed_inputs([got], [tmp_path]) == []
    (tmp_path / "b.html").write_text("<p>b</p>", encoding="utf-8")
    [(_, what)] = changed_inputs([got], [tmp_path])
    assert "size" in what or "pages" in what


def test_missing_and_unknown_inputs(tmp_path: Path) -> None:
    f = tmp_path / "a.csv"
    f.write_text("id\n1\n", encoding="utf-8")
    got = fingerprint(f)
    f.unlink()
    [(_, what)] = changed_inputs([got], [f])
    assert "cannot be read now" in what
    other = tmp_path / "b.csv"
    other.write_text("id\n1\n", encoding="utf-8")
    [(_, what)] = changed_inputs([got], [other])
    assert "did not read it" in what


def test_a_tampered_record_is_a_change_never_a_crash(tmp_path: Path) -> None:
    f = tmp_path / "a.csv"
    f.write_text("id\n1\n", encoding="utf-8")
    for then in ({"path": str(f), "kind": "file", "size": "big"}, {"path": str(f), "kind": ["x"]}, {"path": str(f)}):
        [(_, what)] = changed_inputs([then], [f])
        assert what
    assert changed_inputs(["not a mapping", 3], [f]) == [(str(f), "the run did not read it (the job's sources changed since the run)")]


# ------------------------------------------------------------------ database sources: RowsDigest


def _naive_digest(columns: list[str], rows: list[tuple[str | None, ...]]) -> str:
    """The reference of :class:`RowsDigest`: every value escaped on its own, the words summed as Python ints."""
    sums = [0, 0, 0, 0]
    for row in rows:
        parts = ["\x01" if v is None else v.replace("\x01", "\x01\x01").replace("\x00", "\x01\x02") for v in row]
        h = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).digest()
        for k in range(4):
            sums[k] = (sums[k] + int.from_bytes(h[8 * k : 8 * k + 8], "little")) % 2**64
    out = hashlib.sha256(fp.ROWS_DIGEST_VERSION.encode())
    for name in columns:
        out.update(b"\x00" + name.encode())
    out.update(b"\x00\x00" + str(len(rows)).encode() + b"\x00" + b"".join(s.to_bytes(8, "little") for s in sums))
    return out.hexdigest()


def _digest(rows: list[tuple[str | None, ...]], batch: int = 1000, columns: tuple[str, ...] = ("id", "name", "zip")) -> str:
    d = fp.RowsDigest(columns)
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        d.update([list(c) for c in zip(*part)] if part else [[] for _ in columns])
    assert d.rows == len(rows)
    return d.hexdigest()


ROWS: list[tuple[str | None, ...]] = [
    ("A1", "ann", "12345"),
    ("A2", None, "12345"),
    ("A3", "bob", None),
    ("A4", "zoë \x00 nul", "\x01"),
    ("A5", "carl", "99999"),
]


def test_the_rows_digest_equals_the_naive_reference_whatever_the_batches() -> None:
    want = _naive_digest(["id", "name", "zip"], ROWS)
    assert all(_digest(ROWS, batch) == want for batch in (1, 2, 3, 5, 100))
    clean = [r for r in ROWS if r[0] != "A4"]  # no escaping needed: the columns' shortcut
    assert _digest(clean) == _naive_digest(["id", "name", "zip"], clean)
    assert _digest([]) == _naive_digest(["id", "name", "zip"], [])


def test_the_rows_digest_is_free_of_the_row_order() -> None:
    base = _digest(ROWS)
    assert _digest(list(reversed(ROWS))) == base
    assert _digest([ROWS[2], ROWS[0], ROWS[4], ROWS[1], ROWS[3]], batch=2) == base


def test_the_rows_digest_changes_on_a_changed_value_an_added_or_removed_row() -> None:
    base = _digest(ROWS)
    changed = [("A1", "ann", "99999"), *ROWS[1:]]
    assert _digest(changed) != base
    assert _digest([*ROWS, ("A6", "dora", "1")]) != base
    assert _digest(ROWS[:-1]) != base
    assert _digest([*ROWS, ROWS[0]]) != base  # a row read twice counts (a sum, not an XOR)
    assert _digest([*ROWS, ROWS[0], ROWS[0]]) != base
    # a value moved between rows (the same multiset of values, other rows) is a change
    assert _digest([("A1", "bob", "12345"), ROWS[1], ("A3", "ann", None), *ROWS[3:]]) != base
    # other columns read (columns: changed) are another digest
    assert _digest(ROWS, columns=("id", "name", "postcode")) != base


def test_the_rows_digest_tells_apart_what_a_plain_join_would_mix_up() -> None:
    one = _digest([("A1", "a\x00", "b")])
    assert one != _digest([("A1", "a", "\x00b")])
    assert len({_digest([("A1", v, "x")]) for v in (None, "\x01", "\x01\x01", "\x01\x02", "\x00", "None", "")}) == 7
    assert _digest([("A1", "a", None)]) != _digest([("A1", "a\x00\x01", "")])
    with pytest.raises(ValueError, match="2 columns given, 3 expected"):
        fp.RowsDigest(["id", "name", "zip"]).update([["A1"], ["x"]])


def test_database_difference_names_what_changed_never_the_values() -> None:
    stats = {"database": "sqlite:///crm.db", "rows": 5, "sha256": _digest(ROWS)}
    then = fp.database_fingerprint("crm", stats, table="customers")
    assert then == {
        "source": "crm",
        "kind": "database",
        "database": "sqlite:///crm.db",
        "table": "customers",
        "rows": 5,
        "sha256": stats["sha256"],
    }
    assert fp.database_difference(then, dict(then)) is None
    assert fp.database_difference(then, {**then, "sha256": _digest(ROWS[::-1])}) is None
    changed = fp.database_difference(then, {**then, "sha256": _digest([("A1", "ann", "99999"), *ROWS[1:]])})
    assert changed is not None and "values of its rows differ" in changed and "99999" not in changed
    assert fp.database_difference(then, {**then, "rows": 6}) == "it held 5 rows and now holds 6"
    assert "sqlite:///other.db" in str(fp.database_difference(then, {**then, "database": "sqlite:///other.db"}))
    now = fp.database_fingerprint("crm", stats, query="SELECT * FROM customers")
    assert fp.database_difference(then, now) == "the run read table 'customers', the job now reads a query instead"
