"""The `er` command: tune, schema, plugins, help, summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from er_framework.cli.main import main
from er_framework.kernels import candidate_probability

ROOT = Path(__file__).resolve().parents[2]


def test_tune_prints_choice_and_s_curve(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--threshold", "0.8", "--num-perm", "128"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    b = int(first.split("bands b = ")[1].split(",")[0])
    r = int(first.split("rows r = ")[1].split()[0])
    assert b * r <= 128 and candidate_probability(0.8, b, r) >= 0.95
    rows = [line.split() for line in out.splitlines() if line.strip()[:3] in {f"{i / 10:.1f}"[:3] for i in range(1, 11)}]
    assert len(rows) == 10
    for s, p in rows:
        assert abs(float(p) - candidate_probability(float(s), b, r)) < 1e-4


def test_tune_with_explicit_bands_reproduces_the_seed_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--threshold", "0.8", "--num-perm", "100", "--bands", "20", "--rows", "5"]) == 0
    out = capsys.readouterr().out
    table = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip().startswith("0.")}
    assert table["0.5"] == "0.4701" and table["0.6"] == "0.8019" and table["0.7"] == "0.9748" and table["0.8"] == "0.9996" and table["0.2"] == "0.0064"


def test_schema_lists_components(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    names = {opt["properties"]["type"]["const"] for opt in schema["properties"]["shingler"]["anyOf"]}
    assert {"char", "word"} <= names
    blocker = schema["properties"]["blockers"]["items"]["anyOf"][0]
    assert blocker["additionalProperties"] is False


def test_plugins_text_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "documents" in out and "er-framework" in out
    assert "num_perm" in out and "default 128" in out
    # the normalizers a job's normalize: section may name, with their options
    assert "normalizers" in out and "nickname" in out and "default_region" in out


def test_plugins_json_lists_normalizers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_name = {n["name"]: n for n in data["normalizers"]}
    assert {"name", "nickname", "phone", "address", "email", "date"} <= set(by_name)
    assert {o["name"] for o in by_name["phone"]["options"]} >= {"default_region", "min_digits"}


@pytest.mark.parametrize("cmd", [[], ["run"], ["validate"], ["plugins"], ["tune"], ["schema"]])
def test_help_everywhere(cmd: list[str]) -> None:
    res = subprocess.run([sys.executable, "-m", "er_framework", *cmd, "--help"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "usage: er" in res.stdout


def test_run_prints_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "configs/documents.yaml"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "records read" in out and "verified pairs" in out and "clusters" in out
    assert (tmp_path / "report.json").exists()
