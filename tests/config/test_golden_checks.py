"""``output.golden`` checked when the job is resolved (:func:`er_framework.config.resolve.golden_problems`): unknown
rules, ``by:``, ``order:``, fields no source reads, column clashes, the dask executor. Each: the line, the path,
the fix, exit code 2, no output."""

from __future__ import annotations

from pathlib import Path

import pytest
from job_files import GOOD, expect_error, run_cli, setup

ROWS = [{"id": f"r{i}", "text": f"document number {i} with some text", "updated": f"2024-01-0{1 + i % 9}"} for i in range(6)]
WITH_DATES = GOOD.replace("fields: [text]", "fields: [text, updated]")


def _golden(block: str, base: str = WITH_DATES) -> str:
    return base + "output:\n  golden:\n" + "".join(f"    {line}\n" for line in block.strip("\n").split("\n"))


def test_a_good_golden_section_validates_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = setup(tmp_path, _golden("rule: longest\nfields:\n  text: {rule: most_recent, by: updated}\n  updated: most_frequent"), ROWS)
    code, out, err = run_cli(["run", str(job), "--out", str(tmp_path / "o"), "-q"], capsys)
    assert code == 0, err
    assert (tmp_path / "o" / "golden.csv").is_file()


def test_an_unknown_rule_suggests_and_lists_the_installed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        _golden("rule: most_frequnt\nfields:\n  text: {rule: longst}"),
        "output.golden.rule",
        "no golden rule named 'most_frequnt'",
        "did you mean 'most_frequent'?",
        "output.golden.fields.text.rule",
        "no golden rule named 'longst'",
        "installed: longest, most_frequent, most_recent, source_priority",
        rows=ROWS,
    )


def test_a_field_no_source_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        _golden("fields:\n  txet: longest"),
        "job.yaml:24:",  # the line of output.golden.fields.txet
        "output.golden.fields.txet",
        "field 'txet' is not read by any source",
        "did you mean 'text'?",
        rows=ROWS,
    )


def test_by_must_be_a_field_and_most_recent_needs_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        _golden("fields:\n  text: {rule: most_recent, by: updatd}\n  updated: most_recent"),
        "output.golden.fields.text.by",
        "by: field 'updatd' is not read by any source",
        "did you mean 'updated'?",
        "output.golden.fields.updated",
        "rule 'most_recent' needs by:",
        rows=ROWS,
    )
    expect_error(tmp_path, capsys, _golden("rule: most_recent"), "output.golden.rule", "rule 'most_recent' needs by:", rows=ROWS)


def test_order_names_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path,
        capsys,
        _golden("fields:\n  text: {rule: source_priority, order: [dcos, docs, docs]}"),
        "output.golden.fields.text.order[0]",
        "order: 'dcos' is not a source of the job",
        "did you mean 'docs'?",
        "output.golden.fields.text.order[2]",
        "listed twice",
        rows=ROWS,
    )


def test_a_field_whose_columns_clash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(
        tmp_path, capsys, _golden("rule: longest", GOOD.replace("fields: [text]", "fields: [text, size]")), "two columns named 'size'"
    )


def test_the_dask_executor_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Golden records are built on the workers (executors/dask_golden.py): a dask job with output.golden validates."""
    job = setup(tmp_path, _golden("rule: longest", WITH_DATES + "executor: {type: dask, address: 'tcp://h:8786'}\n"), ROWS)
    code, out, err = run_cli(["validate", str(job)], capsys)
    assert code == 0, err
