"""The one rule that places a labels file, for ``training:`` and ``er review`` (config/resolve.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from er_framework.config.resolve import DEFAULT_LABELS, job_labels_path, labels_path, parse_job

ROOT = Path(__file__).resolve().parents[2]


def test_the_rule(tmp_path: Path) -> None:
    base = tmp_path / "jobs"
    base.mkdir()
    here = tmp_path / "cwd"
    here.mkdir()
    assert labels_path(base) == labels_path(base, None) and labels_path(base).path == base / DEFAULT_LABELS
    assert labels_path(base).in_job == "labels.csv"
    got = labels_path(base, "lab/l.csv")
    assert got.path == base / "lab" / "l.csv" and got.in_job == "lab/l.csv"
    given = labels_path(base, "lab/l.csv", "mine.csv", cwd=here)  # --labels wins, relative to the current folder
    assert given.path == here / "mine.csv" and given.in_job == "../cwd/mine.csv"
    assert labels_path(base, None, tmp_path / "abs.csv").in_job == "../abs.csv"


def test_review_and_training_place_the_labels_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8")
    job = job.replace("path: data/", f"path: {ROOT / 'configs' / 'data'}/")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "job.yaml").write_text(job, encoding="utf-8")
    plain = parse_job(tmp_path / "sub" / "job.yaml")
    assert plain.training_path() is None
    assert job_labels_path(plain).path == tmp_path / "sub" / "labels.csv"  # beside the job file, not the current folder
    (tmp_path / "sub" / "mine.csv").write_text("left_source,left_id,right_source,right_id,match\n", encoding="utf-8")
    (tmp_path / "sub" / "job.yaml").write_text(job + "\ntraining: {labels: mine.csv}\n", encoding="utf-8")
    trained = parse_job(tmp_path / "sub" / "job.yaml")
    assert job_labels_path(trained).path == trained.training_path() == tmp_path / "sub" / "mine.csv"
    monkeypatch.chdir(tmp_path)
    given = job_labels_path(trained, "sub/mine.csv")
    assert given.path == trained.training_path() and given.in_job == "mine.csv"  # as the job writes it
