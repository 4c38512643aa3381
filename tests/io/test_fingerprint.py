"""Fingerprints of input files and page folders (er_framework/io/fingerprint.py), and what changed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

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
