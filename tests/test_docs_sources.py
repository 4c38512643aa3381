"""docs/sources.md: every source of its "Files" section is a valid source (tests/docs validates the whole jobs
of every page, those of the "Databases" section included)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from er_framework.config.spec import SourceSpec
from er_framework.config.yaml_load import load_yaml

DOC = Path(__file__).resolve().parents[1] / "docs" / "sources.md"


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
