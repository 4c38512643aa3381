"""A saved model applied again gives the run's answer without fitting.

For the shipped jobs that learn something (Febrl3, Febrl4 and the customers: the Fellegi-Sunter
weights; news: the shingles ``prune_shingles:`` dropped), ``er train JOB --model M`` then
``er run JOB --model M`` writes pairs.csv and clusters.csv byte-identical to a plain ``er run``,
with no ``fit`` (or ``prune``) stage in its report; the same through Python
(``run_job(job, out, model=Model.load(M))``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from er_framework.config.resolve import parse_job
from er_framework.engine.model import Model, check_model
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]

#: config -> the stages a plain run has and a run applying the model skips
LEARNING = {
    "febrl4.yaml": ["fit"],
    "febrl3.yaml": ["fit"],
    "customers.yaml": ["fit"],
    "news.yaml": ["prune"],
}


def _er(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's er_framework, also in the subprocess
    res = subprocess.run([sys.executable, "-m", "er_framework", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr


def _stages(out: Path) -> list[str]:
    return [s["stage"] for s in json.loads((out / "report.json").read_text(encoding="utf-8"))["stages"]]


def _same_answer(a: Path, b: Path) -> None:
    for name in ("pairs.csv", "clusters.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize("name", list(LEARNING))
def test_train_then_run_with_the_model(tmp_path: Path, name: str) -> None:
    config = f"configs/{name}"
    plain, applied, model = tmp_path / "plain", tmp_path / "applied", tmp_path / "model.json"
    _er("run", config, "--out", str(plain), "--no-report", "-q")
    _er("train", config, "--model", str(model), "-q")
    _er("run", config, "--model", str(model), "--out", str(applied), "--no-report", "-q")
    _same_answer(plain, applied)
    skipped = LEARNING[name]
    assert set(skipped) <= set(_stages(plain))
    assert "fit" not in _stages(applied) and not set(skipped) & set(_stages(applied))
    # er train fits what er run fits; the run applying it writes the model it applied, unchanged
    assert Model.load(plain).to_json() == Model.load(model).to_json()
    assert (applied / "model.json").read_bytes() == model.read_bytes()
    report = json.loads((applied / "report.json").read_text(encoding="utf-8"))
    if "fit" in skipped:
        assert report["verifier"]["model"] == str(model)
        assert report["verifier"]["estimation"] == "applied from a saved model (no fitting in this run)"
        assert report["verifier"]["lambda"] == Model.load(model).verifier_state["lambda"]  # type: ignore[index]

    # the same through Python
    job = parse_job(ROOT / config)
    loaded = Model.load(model)
    check_model(loaded, job)
    res = run_job(job, tmp_path / "python", model=loaded)
    assert res.model is not None and res.model.origin == str(model)
    _same_answer(plain, tmp_path / "python")
    assert "fit" not in _stages(tmp_path / "python") and not set(skipped) & set(_stages(tmp_path / "python"))


def test_news_model_holds_the_pruned_shingles(tmp_path: Path) -> None:
    model = tmp_path / "news.json"
    _er("train", "configs/news.yaml", "--model", str(model), "-q")
    loaded = Model.load(model)
    assert loaded.pruned is not None and len(loaded.pruned) > 0 and loaded.verifier is None
    prune = json.loads(model.read_text(encoding="utf-8"))["prune"]
    assert prune["dropped"] == sorted(prune["dropped"]) and prune["report"]["shingles_pruned"] == len(loaded.pruned)
