"""``er schema`` (er_framework.cli.schema): the JSON Schema of job files."""

from __future__ import annotations

import json

import pytest

from er_framework.cli.main import main


def test_schema_lists_components(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    names = {opt["properties"]["type"]["const"] for opt in schema["properties"]["shingler"]["anyOf"]}
    assert {"char", "word"} <= names
    blocker = schema["properties"]["blockers"]["items"]["anyOf"][0]
    assert blocker["additionalProperties"] is False


def test_schema_describes_the_executors_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    executor = json.loads(capsys.readouterr().out)["properties"]["executor"]
    dask = next(o for o in executor["anyOf"] if o["properties"]["type"]["const"] == "dask")
    assert dask["properties"]["partition_mb"]["exclusiveMinimum"] == 0
