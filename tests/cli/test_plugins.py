"""``er plugins`` (er_framework.cli.plugins): installed plugins, components and normalizers."""

from __future__ import annotations

import json

import pytest

from er_framework.cli.main import main


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
