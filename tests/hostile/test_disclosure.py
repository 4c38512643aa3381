"""Issue 31, disclosure: er never echoes the content of a file that is not the kind it expected.

A path in a job, a truth option or a symbolic link may point at a file that holds secrets (the process
environment, a password file, a ``.env``). Messages about such a file say what is wrong without quoting
it; a file that is the expected kind (a CSV with a header of column names, JSON Lines) may still be
quoted where that helps the user find the bad line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from er_framework.errors import columns_text, looks_like_column_names
from tests.hostile.test_readers import job, run

Er = Any

SECRET = "s3cr3t-value-31"
SHADOW = f"root:$6$salt${SECRET}:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n"


def secret_env() -> dict[str, str]:
    return {**os.environ, "ER_TEST_SECRET": SECRET}


def finished_run(er: Er, tmp: Path) -> Path:
    data = tmp / "docs.csv"
    data.write_text("id,text\n1,the quick brown fox\n2,the quick brown fox!\n3,something else entirely\n", encoding="utf-8")
    ran = run(er, job(tmp, data))
    assert ran.code == 0, ran.err
    return tmp / "out"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_truth_linked_to_the_environment_is_not_echoed(er: Er, tmp_path: Path) -> None:
    out = finished_run(er, tmp_path)
    link = tmp_path / "truth.csv"
    link.symlink_to("/proc/self/environ")
    ran = er(["evaluate", out, "--truth", link], env=secret_env())
    ran.assert_clean_error(2, "not shown")
    assert SECRET not in ran.err + ran.out and "ER_TEST_SECRET" not in ran.err + ran.out


@pytest.mark.parametrize("name", ["truth.csv", "truth.jsonl"])
def test_truth_that_is_a_password_file_is_not_echoed(er: Er, tmp_path: Path, name: str) -> None:
    out = finished_run(er, tmp_path)
    (tmp_path / name).write_text(SHADOW, encoding="utf-8")
    ran = er(["evaluate", out, "--truth", tmp_path / name])
    assert ran.code == 2 and "Traceback" not in ran.err
    assert SECRET not in ran.err + ran.out and "daemon" not in ran.err + ran.out


@pytest.mark.parametrize("name", ["data.csv", "data.jsonl"])
def test_source_that_is_a_password_file_is_not_echoed(er: Er, tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(SHADOW, encoding="utf-8")
    ran = run(er, job(tmp_path, tmp_path / name))
    assert ran.code == 2 and "Traceback" not in ran.err
    assert SECRET not in ran.err + ran.out and "daemon" not in ran.err + ran.out


def test_a_bad_line_of_a_real_jsonl_source_is_still_quoted(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "1", "text": "a b c"}\nnot json here\n', encoding="utf-8")
    ran = run(er, job(tmp_path, data))
    ran.assert_clean_error(2, "line 2", "not json here")


def test_a_real_header_is_still_listed(er: Er, tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("ident,body\n1,x\n", encoding="utf-8")
    ran = run(er, job(tmp_path, data))
    ran.assert_clean_error(2, "columns present: body, ident")


def test_column_names_rule() -> None:
    assert looks_like_column_names(["id", "first name", "dob (yyyy-mm-dd)", "Straße", "名前", "a/b", "#", "x.y"])
    for bad in (["root:x:0:0"], ["SECRET=abc"], ["a\x00b"], ["x" * 65], ["${HOME}"], []):
        assert not looks_like_column_names(bad)
    assert columns_text(["b", "a"]) == "a, b"
    assert "not shown" in columns_text(["KEY=value"]) and "value" not in columns_text(["KEY=value"])
