"""configs/persons.yaml as shipped: `er run` and `er evaluate` as processes, and its sample is the generator's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from er_framework.synth.persons import generate_persons, write_persons

ROOT = Path(__file__).resolve().parents[2]


def _er(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's er_framework, also in the subprocess
    return subprocess.run([sys.executable, "-m", "er_framework", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def test_shipped_persons_job_runs_and_evaluates(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _er("run", "configs/persons.yaml", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "records read             2,000" in run.stdout
    ev = _er("evaluate", str(out), "--truth", "configs/data/persons/truth.csv", "--id-column", "id", "--cluster-column", "entity")
    assert ev.returncode == 0, ev.stderr
    doc = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    pairs = doc["pairwise"]["verified_pairs"]
    assert pairs["true"] == 200 and pairs["predicted"] > 0
    assert 0.0 < pairs["recall"] <= 1.0 and 0.0 < pairs["precision"] <= 1.0
    assert pairs["true_positives"] == round(pairs["recall"] * 200)


def test_shipped_sample_is_the_generators(tmp_path: Path) -> None:
    """configs/data/persons is `er synth persons --n 2000 --duplicates 200 --seed 0` (the comment in the job)."""
    write_persons(generate_persons(2000, 200, 0), tmp_path)
    for name in ("persons.csv", "truth.csv"):
        assert (tmp_path / name).read_bytes() == (ROOT / "configs" / "data" / "persons" / name).read_bytes(), name
