"""er_framework.engine.stages.writing: the inputs of a job (every file it reads) and the output folder check."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from er_framework.config import parse_job
from er_framework.engine.model import Model, load_model
from er_framework.engine.stages.writing import job_inputs, require_out_dir
from er_framework.errors import InputError
from er_framework.executors import run_job
from er_framework.io.outputs import OutputDir

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "configs" / "data" / "customers"


def trained_job(tmp: Path, labels: str) -> Path:
    """configs/customers.yaml with ``training: {labels: LABELS}`` (relative to the job's folder), labels written there."""
    with (DATA / "truth.csv").open(encoding="utf-8") as fh:
        truth = [(r["a_id"], r["b_id"]) for r in csv.DictReader(fh)][:40]
    path = tmp / labels
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        w.writerows(["A", a, "B", b, "1"] for a, b in truth)
        w.writerows(["A", a, "B", b2, "0"] for (a, _), (_, b2) in zip(truth[:30], truth[1:31]))
    text = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8").replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    job = tmp / "job.yaml"
    job.write_text(text + f"\ntraining: {{labels: {labels}}}\n", encoding="utf-8")
    return job


def test_job_inputs_name_the_job_sources_labels_and_model(tmp_path: Path) -> None:
    job = parse_job(trained_job(tmp_path, "labels.csv"))
    whats = {what: path for what, path in job_inputs(job)}
    assert whats["the job file"] == job.config_path
    assert sum(1 for w in whats if w.startswith("sources[")) == 2
    assert whats["training.labels"] == (tmp_path / "labels.csv").resolve()
    assert "the model file (--model)" not in whats
    fitted = run_job(job, write=False).model
    assert isinstance(fitted, Model) and fitted.origin == "fitted"
    assert "the model file (--model)" not in {w for w, _ in job_inputs(job, fitted)}  # fitted: no file
    saved = fitted.save(tmp_path / "m.json")
    whats = {what: path for what, path in job_inputs(job, load_model(saved))}
    assert whats["the model file (--model)"] == saved


@pytest.mark.parametrize("name", ["pairs.csv", "report.json", "candidates.csv"])
def test_labels_named_like_an_output_in_the_folder_are_refused_even_with_force(tmp_path: Path, name: str) -> None:
    job = parse_job(trained_job(tmp_path, f"out/{name}"))
    before = (tmp_path / "out" / name).read_bytes()
    for out in (tmp_path / "out", OutputDir(tmp_path / "out", force=True)):
        with pytest.raises(InputError, match=r"is an input of this job \(training.labels\)"):
            require_out_dir(job, out, True)
    assert (tmp_path / "out" / name).read_bytes() == before


def test_a_model_file_named_like_an_output_in_the_folder_is_refused(tmp_path: Path) -> None:
    job = parse_job(trained_job(tmp_path, "labels.csv"))
    model = run_job(job, write=False).model
    assert model is not None
    (tmp_path / "out").mkdir()
    saved = model.save(tmp_path / "out" / "model.json")
    with pytest.raises(InputError, match=r"is an input of this job \(the model file"):
        require_out_dir(job, OutputDir(tmp_path / "out", force=True), True, load_model(saved))
    assert require_out_dir(job, tmp_path / "elsewhere", True, load_model(saved)) == tmp_path / "elsewhere"
