"""configs/inventors.yaml as shipped: `er run` and `er evaluate` as processes give the F1 its header documents,
and its sample is the generator's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from er_framework.synth.inventors import generate_inventors, write_inventors

ROOT = Path(__file__).resolve().parents[2]


def _er(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's er_framework, also in the subprocess
    return subprocess.run([sys.executable, "-m", "er_framework", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def _documented() -> tuple[float, float, int]:
    """(pairs F1, clusters F1, true pairs) as the job's header comment states them."""
    text = (ROOT / "configs" / "inventors.yaml").read_text(encoding="utf-8")
    m = re.search(r"pairwise F1 ([0-9.]+) of pairs\.csv .*?\n# ([0-9.]+) of the clusters .*? against ([0-9,]+) true pairs", text)
    assert m, "configs/inventors.yaml no longer states its F1"
    return float(m.group(1)), float(m.group(2)), int(m.group(3).replace(",", ""))


def test_shipped_inventors_job_gives_the_documented_f1(tmp_path: Path) -> None:
    pairs_f1, clusters_f1, true_pairs = _documented()
    out = tmp_path / "out"
    run = _er("run", "configs/inventors.yaml", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "records read             3,000" in run.stdout
    ev = _er("evaluate", str(out), "--truth", "configs/data/inventors/truth.csv", "--id-column", "id", "--cluster-column", "entity")
    assert ev.returncode == 0, ev.stderr
    doc = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))["pairwise"]
    assert doc["verified_pairs"]["true"] == true_pairs == doc["cluster_pairs"]["true"]
    assert round(doc["verified_pairs"]["f1"], 4) == pairs_f1
    assert round(doc["cluster_pairs"]["f1"], 4) == clusters_f1


def test_shipped_sample_is_the_generators(tmp_path: Path) -> None:
    """configs/data/inventors is `er synth inventors --n 3000 --seed 0` (the comment in the job)."""
    write_inventors(generate_inventors(3000, 0), tmp_path)
    for name in ("inventors.csv", "truth.csv"):
        assert (tmp_path / name).read_bytes() == (ROOT / "configs" / "data" / "inventors" / name).read_bytes(), name
