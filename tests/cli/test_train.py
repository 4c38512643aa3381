"""``er train`` (er_framework.cli.train): the model written and summed up, --quiet, errors; ``er run --model``
refusing a model that does not fit the job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from er_framework.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FEBRL4 = str(ROOT / "configs/febrl4.yaml")


def test_train_writes_the_model_and_sums_it_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.json"
    assert main(["train", FEBRL4, "--model", str(model)]) == 0
    out = capsys.readouterr().out
    assert "model of" in out and "febrl4.yaml" in out and "verifier fellegi_sunter: fitted, lambda" in out
    assert f"wrote {model}" in out
    doc = json.loads(model.read_text(encoding="utf-8"))
    assert doc["format"] == "er-framework model" and doc["verifier"]["type"] == "fellegi_sunter"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no outputs, no temporary files


def test_train_quiet_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", FEBRL4, "--model", str(tmp_path / "m.json"), "-q", "--workers", "1"]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / "m.json").is_file()


def test_train_needs_a_model_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["train", FEBRL4])
    assert exc.value.code == 2 and "--model" in capsys.readouterr().err


def test_train_of_a_missing_job_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", str(tmp_path / "none.yaml"), "--model", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "none.yaml" in err and "Traceback" not in err
    assert not (tmp_path / "m.json").exists()


def test_run_refuses_a_model_of_another_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    # febrl3's job is febrl4's in dedup mode: one change
    model = tmp_path / "febrl3.json"
    assert main(["train", str(ROOT / "configs/febrl3.yaml"), "--model", str(model), "-q"]) == 0
    assert main(["run", FEBRL4, "--model", str(model), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "1 problem found" in err
    assert 'the model does not fit this job (febrl4.yaml): mode: "dedup" in the model, "link" in the job' in err
    assert "er train JOB --model FILE" in err and "Traceback" not in err
    assert not out.exists()
    # the customers' job: other normalizers, blockers and verifier fields, each named (20 at most, then a count)
    model = tmp_path / "customers.json"
    assert main(["train", str(ROOT / "configs/customers.yaml"), "--model", str(model), "-q"]) == 0
    assert main(["run", FEBRL4, "--model", str(model), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "21 problems found" in err and "normalize.first_name: " in err and "blockers[0].fields: " in err
    assert "... and 2 more" in err and "Traceback" not in err
    assert not out.exists()
    assert main(["run", FEBRL4, "--model", str(tmp_path / "none.json"), "--out", str(out), "-q"]) == 2
    assert "no such model file" in capsys.readouterr().err and not out.exists()
