"""docs/sources.md: every YAML block of its "Databases" section is a valid job (the schema and the components;
the databases it names are not there to connect to)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from er_framework.config.resolve import resolve_job
from er_framework.config.spec import SourceSpec
from er_framework.config.yaml_load import load_yaml

DOC = Path(__file__).resolve().parents[1] / "docs" / "sources.md"


def _blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Databases", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, flags=re.S)


def test_the_databases_section_shows_yaml() -> None:
    assert len(_blocks()) >= 2


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_every_yaml_block_is_a_valid_job(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRM_PASSWORD", "x")
    data, lines, problems = load_yaml(_blocks()[index], "block.yaml")
    assert problems == []
    job = resolve_job(data, lines, "block.yaml", tmp_path, check_files=False)
    assert any(s.database for s in job.spec.sources)


def _files_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Files", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, flags=re.S)


@pytest.mark.parametrize("index", range(len(_files_blocks())))
def test_every_source_of_the_files_section_is_valid(index: int) -> None:
    """The "Files" section shows sources only: each is a valid source of a job."""
    data, _lines, problems = load_yaml(_files_blocks()[index], "block.yaml")
    assert problems == [] and data is not None
    assert data["sources"]
    for source in data["sources"]:
        SourceSpec.model_validate(source)
