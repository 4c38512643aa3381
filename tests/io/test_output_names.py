"""Recognizing an er output folder (io/output_names): by its report.json, bounded, never trusting a foreign one."""

from __future__ import annotations

import json
import os
from pathlib import Path

from er_framework.io.output_names import OUTPUT_NAMES, is_er_output


def test_an_er_report_names_its_outputs(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(json.dumps({"config_hash": "h", "versions": {}, "outputs": ["pairs.csv", "x/y", 3]}))
    assert is_er_output(tmp_path) == set(OUTPUT_NAMES)
    (tmp_path / "report.json").write_text(json.dumps({"config_hash": "h", "versions": {}, "outputs": ["extra.csv"]}))
    assert "extra.csv" in is_er_output(tmp_path)


def test_foreign_or_broken_reports_are_not_er_outputs(tmp_path: Path) -> None:
    assert is_er_output(tmp_path) == set()
    for text in ("[1, 2]", '{"outputs": ["pairs.csv"]}', "not json", "[" * 100_000):
        (tmp_path / "report.json").write_text(text)
        assert is_er_output(tmp_path) == set(), text
    (tmp_path / "report.json").unlink()
    os.mkfifo(tmp_path / "report.json")  # never opened: a FIFO would block the reader
    assert is_er_output(tmp_path) == set()
