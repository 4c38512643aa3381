"""The fixture of the report page tests: the outputs of the shipped jobs (test_page.py, test_sections.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_pages import ROOT, run


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("shipped")
    return {name: run(ROOT / "configs" / f"{name}.yaml", base / name) for name in ("documents", "news", "fingerprints")}
