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
    # the keys of nested models (fellegi_sunter's fields and their ladder rules), with their descriptions
    assert "FSField:" in out and "Rule:" in out and "transposed_day_month" in out
    assert "swapped: the other column(s)" in out


def test_plugins_json_lists_normalizers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_name = {n["name"]: n for n in data["normalizers"]}
    assert {"name", "nickname", "phone", "address", "email", "date"} <= set(by_name)
    assert {o["name"] for o in by_name["phone"]["options"]} >= {"default_region", "min_digits"}


def test_plugins_list_each_components_abilities(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    abilities = {(c["family"], c["name"]): c["capabilities"] for c in data["components"]}
    assert abilities[("blocker", "lsh_bands")] == ["reporting", "keyed", "diagnostic"]
    assert abilities[("blocker", "field_hash")] == ["reporting", "keyed", "grouped_keys", "limited_keys"]
    assert abilities[("blocker", "sorted_neighbourhood")] == ["reporting", "windowed"]
    assert abilities[("shingler", "grid_cells")] == ["whole_corpus", "partitionable"]
    assert abilities[("shingler", "char")] == ["multiset"]
    assert abilities[("signature", "minhash")] == ["multiset_signing"]
    assert "signature_screen" in abilities[("verifier", "jaccard")]
    assert abilities[("clusterer", "connected_components")] == []
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    lsh = out[out.index("  lsh_bands ") :]
    assert lsh.splitlines()[1].split() == ["abilities", "reporting,", "keyed,", "diagnostic"]
