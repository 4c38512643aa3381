"""``er run`` (er_framework.cli.run): the summary, --quiet, a bad job."""

from __future__ import annotations

import os
import subprocess
import sys
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


def _dates_job(tmp: Path, strict: bool) -> Path:
    """A link job over two CSV files whose date column holds values the ``date`` normalizer cannot read."""
    (tmp / "a.csv").write_text("id,name,dob\na1,Ann Lee,19151111\na2,Bob Roy,1980-03-05\na3,Cy Day,2001-01-01\n", encoding="utf-8")
    (tmp / "b.csv").write_text("id,name,dob\nb1,Ann Lee,19151111.0x\nb2,Bob Roy,31/02/1999\nb3,Cy Day,N/A\n", encoding="utf-8")
    job = tmp / "job.yaml"
    job.write_text(
        "mode: link\n"
        "sources:\n"
        "  - {name: a, path: a.csv, id: id, fields: [name, dob]}\n"
        "  - {name: b, path: b.csv, id: id, fields: [name, dob]}\n"
        "normalize: {name: name, dob: date}\n"
        f"normalize_strict: {'true' if strict else 'false'}\n"
        "exact_duplicates: false\n"
        "blockers: [{type: field_hash, fields: [name]}]\n"
        "verifier: {type: field_score, threshold: 100, fields: [{field: name, scorer: ratio}, {field: dob, scorer: exact}]}\n",
        encoding="utf-8",
    )
    return job


def _run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "er_framework", "run", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_run_warns_of_values_a_normalizer_could_not_read(tmp_path: Path) -> None:
    done = _run_cli("job.yaml", "--out", "out", cwd=_dates_job(tmp_path, strict=False).parent)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: dob: 2 of 5 values (40.0%) could not be read by [date] and became missing, e.g. '19151111.0x', "
        "'31/02/1999'; fix the values or the field's normalizers (er plugins lists their options), or set "
        "normalize_strict: true to stop on them"
    ]
    assert (tmp_path / "out" / "pairs.csv").exists()


def test_run_strict_stops_on_values_a_normalizer_could_not_read(tmp_path: Path) -> None:
    done = _run_cli("job.yaml", "--out", "out", cwd=_dates_job(tmp_path, strict=True).parent)
    assert done.returncode == 2
    err = done.stderr
    assert "job.yaml: normalize.dob: 2 of 5 values (40.0%) could not be read by [date]" in err
    assert "'19151111.0x', '31/02/1999'" in err and "fix: fix the values" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
