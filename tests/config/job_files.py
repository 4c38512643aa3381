"""Job files for the tests of :mod:`er_framework.config`: a good job (:data:`GOOD`), written next to its
data (:func:`setup`), run through the ``er`` command (:func:`run_cli`, :func:`expect_error`)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from er_framework.cli.main import main

GOOD = """\
mode: dedup
seed: 1
threshold: 0.8
sources:
  - name: docs
    path: docs.jsonl
    id: id
    fields: [text]
shingler:
  type: char
  k: 5
signature:
  type: minhash
  num_perm: 128
blockers:
  - type: lsh_bands
verifier:
  type: jaccard
cluster:
  type: connected_components
"""


def setup(tmp_path: Path, yaml_text: str, rows: list[dict] | None = None) -> Path:
    rows = rows if rows is not None else [{"id": f"r{i}", "text": f"document number {i} with some text"} for i in range(5)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(yaml_text))
    return job


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def expect_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml_text: str, *needles: str, rows: list[dict] | None = None, command: str = "run"
) -> str:
    job = setup(tmp_path, yaml_text, rows)
    out = tmp_path / "out"
    args = [command, str(job)] + (["--out", str(out), "--quiet"] if command == "run" else [])
    code, _, err = run_cli(args, capsys)
    assert code == 2, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, f"{needle!r} not in:\n{err}"
    assert not out.exists() or not any(out.iterdir()), "a failed run must leave no outputs"
    return err
