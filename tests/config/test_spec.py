"""The job schema (pass 2): unknown keys, wrong types, out-of-range values, numbers and booleans as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from job_files import GOOD, expect_error

from er_framework.config.spec import JobSpec, type_problems


def test_unknown_top_level_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        GOOD.replace("threshold: 0.8", "treshold: 0.8\nthreshold: 0.8"),
        "job.yaml:3",
        "unknown key 'treshold'",
        "did you mean 'threshold'?",
    )


def test_threshold_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("threshold: 0.8", "threshold: 1.5"), "job.yaml:3", "threshold", "at most 1", "(got 1.5)")


def test_unknown_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(tmp_path, capsys, GOOD.replace("mode: dedup", "mode: dedupe"), "job.yaml:1", "mode", "'dedup'")


def test_type_problems_refuse_bools_and_strings_for_numbers_only() -> None:
    lines: dict = {}
    assert [p.path for p in type_problems({"threshold": True, "seed": "1", "chunk_records": 5.0}, JobSpec, (), "j", lines)] == [
        "threshold",
        "seed",
    ]
    assert type_problems({"threshold": 1, "workers": "auto", "name": "x", "mode": "link"}, JobSpec, (), "j", lines) == []
    found = type_problems({"exact_duplicates": {"enabled": 0}, "sources": [{"max_record_mb": "2"}]}, JobSpec, (), "j", lines)
    assert [(p.path, p.message) for p in found] == [
        ("exact_duplicates.enabled", "0 is a whole number; expected true or false"),
        ("sources[0].max_record_mb", '"2" is a string; expected a number'),
    ]
