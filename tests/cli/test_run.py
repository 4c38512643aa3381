"""``er run`` (er_framework.cli.run): the summary, --quiet, a bad job."""

from __future__ import annotations

from pathlib import Path

import pytest

from er_framework.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_run_prints_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "configs/documents.yaml"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "records read" in out and "verified pairs" in out and "clusters" in out
    assert (tmp_path / "report.json").exists()


def test_run_quiet_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "configs/documents.yaml"), "--out", str(tmp_path), "--quiet", "--workers", "1"]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / "pairs.csv").exists() and (tmp_path / "clusters.csv").exists()


def test_run_of_a_missing_job_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "none.yaml" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_run_refuses_a_bad_workers_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "job.yaml", "--workers", "0"])
    assert exc.value.code == 2
    assert "expected a whole number from 1 to 1024 or 'auto'" in capsys.readouterr().err


def _job_with_output(tmp: Path, output: str) -> Path:
    """configs/documents.yaml with its source path made absolute and ``output:`` replaced (YAML flow text)."""
    import yaml

    job = yaml.safe_load((ROOT / "configs/documents.yaml").read_text(encoding="utf-8"))
    job["sources"][0]["path"] = str(ROOT / "configs" / job["sources"][0]["path"])
    job["output"] = yaml.safe_load(output)
    cfg = tmp / f"job{len(list(tmp.glob('job*.yaml')))}.yaml"
    cfg.write_text(yaml.safe_dump(job), encoding="utf-8")
    return cfg


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_report_false_skips_report_html_and_keeps_the_rest(tmp_path: Path) -> None:
    on = tmp_path / "on"
    off = tmp_path / "off"
    assert main(["run", str(_job_with_output(tmp_path, "{report: true}")), "--out", str(on), "-q"]) == 0
    assert main(["run", str(_job_with_output(tmp_path, "{report: false}")), "--out", str(off), "-q"]) == 0
    with_page, without = _files(on), _files(off)
    assert "report.html" in with_page and "report.html" not in without
    assert set(with_page) - set(without) == {"report.html"}
    for name in ("pairs.csv", "clusters.csv"):
        assert without[name] == with_page[name], name
    import json

    a, b = json.loads(with_page["report.json"]), json.loads(without["report.json"])
    assert a["outputs"] == [*b["outputs"], "report.html"]  # report.json lists what was written
    assert a["config_hash"] == b["config_hash"]  # an output switch, not a change of the job
    # the other commands read report.json: er report draws the page afterwards
    assert main(["report", str(off)]) == 0 and (off / "report.html").is_file()


def test_no_report_flag_overrides_the_yaml(tmp_path: Path) -> None:
    job = _job_with_output(tmp_path, "{report: true}")
    out = tmp_path / "o"
    assert main(["run", str(job), "--out", str(out), "-q"]) == 0
    assert (out / "report.html").is_file()
    # --no-report over report: true; the page of the earlier run is removed with its other outputs (not left stale)
    assert main(["run", str(job), "--out", str(out), "-q", "--no-report"]) == 0
    assert not (out / "report.html").exists() and (out / "report.json").is_file() and (out / "pairs.csv").is_file()
    # --report over report: false
    assert main(["run", str(_job_with_output(tmp_path, "{report: false}")), "--out", str(out), "-q", "--report"]) == 0
    assert (out / "report.html").is_file()


def test_report_must_be_a_boolean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(_job_with_output(tmp_path, "{report: sometimes}"))]) == 2
    err = capsys.readouterr().err
    assert "output.report" in err and "Traceback" not in err
