"""``er validate`` (er_framework.cli.validate): a valid job is summed up, a bad one is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from er_framework.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_validate_shipped_job(capsys: pytest.CaptureFixture[str]) -> None:
    job = ROOT / "configs/documents.yaml"
    assert main(["validate", str(job)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{job}: valid (dedup, 1 source(s), blockers: lsh_bands, verifier: jaccard")


def test_validate_bad_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("sources: []\nverifier: {type: jaccard}\nbogus: 1\n", encoding="utf-8")
    assert main(["validate", str(job)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "bogus" in captured.err and "Traceback" not in captured.err
