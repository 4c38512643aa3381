"""Helpers of the report page tests (test_page.py, test_sections.py): running a job and what a self-contained
page is."""

from __future__ import annotations

import re
from pathlib import Path

from er_framework.config.resolve import parse_job
from er_framework.executors import run_job

ROOT = Path(__file__).resolve().parents[2]


def run(config: Path, out: Path) -> Path:
    run_job(parse_job(config), out, write=True)
    return out


def assert_self_contained(page: str) -> None:
    """The charts are inline SVG (no image files, no data URIs); nothing is loaded from elsewhere; no script."""
    assert '<svg class="chart"' in page, "no charts"
    assert "<img" not in page and "data:image" not in page
    for attr in re.findall(r'(?:src|href|action|data)\s*=\s*"([^"]*)"', page):
        assert attr.startswith(("data:", "#")), attr
    lowered = page.lower()
    for bad in ("<script", "<link", "<iframe", "@import", "url(", "http://", "https://"):
        assert bad not in lowered, bad
