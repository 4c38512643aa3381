"""The HTML report: one self-contained page per run (er_framework.report.page)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from er_framework.config.resolve import parse_job
from er_framework.errors import InputError
from er_framework.executors import run_job
from er_framework.report.page import wilson_interval, write_report

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ["summary", "blocking", "scores", "cluster-sizes", "largest-clusters", "stages", "components"]


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


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("shipped")
    return {name: run(ROOT / "configs" / f"{name}.yaml", base / name) for name in ("documents", "news", "fingerprints")}


@pytest.mark.parametrize("name", ["documents", "news", "fingerprints"])
def test_report_of_shipped_jobs(shipped: dict[str, Path], name: str) -> None:
    out = shipped[name]
    path = write_report(out)
    assert path == out / "report.html"
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in page, sid
    assert f"Entity-resolution report: {name}" in page
    report = json.loads((out / "report.json").read_text())
    assert report["config_hash"] in page
    assert_self_contained(page)
    assert "could not be read" not in page and "was not found" not in page
    assert path.stat().st_size < 400_000
    assert not [p for p in out.iterdir() if p.name.startswith(".report-")]  # temp file replaced


def test_lsh_report_shows_measured_s_curve(shipped: dict[str, Path]) -> None:
    page = write_report(shipped["documents"]).read_text(encoding="utf-8")
    assert "95% Wilson interval" in page and "measured rate per similarity bin" in page
    assert "Every candidate&#x27;s score" in page and "Verified pair scores" not in page  # below the threshold too
    assert re.search(r"cluster \d+: 3 records", page)  # the largest clusters, with their records
    assert "Execute file with arguments" in page


def test_news_report_shows_titles_and_grid_bits_text(shipped: dict[str, Path]) -> None:
    news = write_report(shipped["news"]).read_text(encoding="utf-8")
    assert "page title" in news and "visible text" in news
    prints = write_report(shipped["fingerprints"]).read_text(encoding="utf-8")
    assert "Grid-bit blocking" in prints and "S-curve does not apply" in prints
    assert "points of the records" in prints  # minutiae drawn
    assert "Only the theoretical curve" not in prints


def test_without_diagnostics_only_theoretical_curve(shipped: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "old"
    out.mkdir()
    for f in ("pairs.csv", "clusters.csv"):
        (out / f).write_bytes((shipped["news"] / f).read_bytes())
    report = json.loads((shipped["news"] / "report.json").read_text())
    report.pop("diagnostics", None)
    (out / "report.json").write_text(json.dumps(report))
    page = write_report(out).read_text(encoding="utf-8")
    assert "Only the theoretical curve is shown" in page
    assert "measured rate per similarity bin" not in page
    assert_self_contained(page)


def test_a_bounded_probe_is_said_on_the_page(shipped: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "capped"
    out.mkdir()
    for f in ("pairs.csv", "clusters.csv"):
        (out / f).write_bytes((shipped["documents"] / f).read_bytes())
    report = json.loads((shipped["documents"] / "report.json").read_text())
    # the shipped job's probe is bounded by its token budget (a small corpus: PROBE_SMALL_FACTOR), and says so
    shipped_page = write_report(shipped["documents"]).read_text(encoding="utf-8")
    assert report["diagnostics"]["s_curve"]["capped"]["token_budget"] > 0
    assert "The probe was bounded" in shipped_page
    report["diagnostics"]["s_curve"].pop("capped")
    (out / "report.json").write_text(json.dumps(report))
    assert "The probe was bounded" not in write_report(out).read_text(encoding="utf-8")
    report["diagnostics"]["s_curve"]["capped"] = {
        "records_skipped_long_text": 2, "max_record_chars": 800_000, "records_skipped_many_tokens": 0,
        "max_record_tokens": 100_000, "pairs_before_token_budget": 9000, "tokens_compared": 19_000_000,
        "token_budget": 20_000_000, "note": "…"}
    (out / "report.json").write_text(json.dumps(report))
    page = write_report(out).read_text(encoding="utf-8")
    assert "The probe was bounded: 2 records longer than 800,000 characters" in page


def small_job(tmp: Path, rows: list[dict], fmt: str = "csv") -> Path:
    (tmp / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = tmp / "job.yaml"
    cfg.write_text(textwrap.dedent(f"""
        name: <b>tricky</b>
        threshold: 0.5
        sources: [{{name: src, path: a.jsonl, fields: [text]}}]
        shingler: {{type: char, k: 3}}
        signature: {{type: minhash, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        output: {{format: {fmt}}}
    """))
    return cfg


EVIL = "<script>alert('x')</script> a record that must stay text & never run"
ROWS = [
    {"id": "1", "text": EVIL},
    {"id": "2", "text": EVIL + "!"},
    {"id": "<3>", "text": "something else entirely, unrelated"},
]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_escapes_records_and_names(tmp_path: Path, fmt: str) -> None:
    out = run(small_job(tmp_path, ROWS, fmt), tmp_path / "o")
    page = write_report(out).read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<b>tricky</b>" not in page and "&lt;b&gt;tricky&lt;/b&gt;" in page
    assert "cluster 0: 2 records" in page
    assert_self_contained(page)


def test_unreadable_sources_are_noted_not_fatal(tmp_path: Path) -> None:
    out = run(small_job(tmp_path, ROWS), tmp_path / "o")
    (tmp_path / "a.jsonl").unlink()
    page = write_report(out).read_text(encoding="utf-8")
    assert "could not be read again" in page
    assert "cluster 0: 2 records" in page  # ids are still listed


def test_config_not_found_then_given(tmp_path: Path) -> None:
    cfg = small_job(tmp_path, ROWS)
    out = run(cfg, tmp_path / "o")
    moved = cfg.with_name("moved.yaml")  # the job file moved since the run
    cfg.rename(moved)
    page = write_report(out).read_text(encoding="utf-8")
    assert "job file was not found" in page
    page = write_report(out, config_path=moved, max_examples=1).read_text(encoding="utf-8")
    assert "job file was not found" not in page
    assert "… and 1 more records" in page


def test_missing_report_json_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        write_report(tmp_path)
    assert "no report.json" in str(exc.value) and "er run" in str(exc.value)
    (tmp_path / "report.json").write_text("{not json")
    with pytest.raises(InputError, match="cannot read report.json"):
        write_report(tmp_path)
    with pytest.raises(InputError, match="no such output folder"):
        write_report(tmp_path / "nope")
    assert not (tmp_path / "report.html").exists()


def test_wilson_interval() -> None:
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and 0.25 < hi < 0.35
    lo, hi = wilson_interval(10, 10)
    assert 0.65 < lo < 0.75 and hi == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("config", ["documents.yaml", "customers.yaml", "fingerprints.yaml"])
def test_report_from_memory_equals_report_from_files(tmp_path: Path, config: str) -> None:
    """er run draws report.html from memory; er report reads the files back: same clusters, scores and records."""
    import re

    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job
    from er_framework.report.page import RunData, render_report

    root = Path(__file__).resolve().parents[2]
    job = parse_job(root / "configs" / config)
    res = run_job(job, tmp_path)
    from_files = render_report(tmp_path)
    as_read = run_job(job, write=False)  # same seed, same result; records as read for the display
    from er_framework.engine.stages.reading import read as read_records

    records, _ = read_records(job)
    written = res.answer.pairs if res.answer is not None else res.pairs  # the pairs of pairs.csv
    from_memory = render_report(tmp_path, run=RunData(records, written, res.labels))
    assert np.array_equal(as_read.labels, res.labels)

    def headings(text: str) -> list[str]:
        return re.findall(r"<h3>cluster [^<]*</h3>", text)

    def cells(text: str) -> list[str]:
        return re.findall(r'<span class="rec">([^<]*)</span>', text)

    assert headings(from_files) and headings(from_files) == headings(from_memory)
    assert cells(from_files) == cells(from_memory)
    quartiles = re.compile(r"min / median / max</th><td[^>]*>([^<]*)<")
    assert quartiles.findall(from_files) == quartiles.findall(from_memory)


@pytest.mark.parametrize("config", ["customers.yaml", "documents.yaml", "fingerprints.yaml"])
def test_er_run_draws_the_page_without_matplotlib(tmp_path: Path, config: str) -> None:
    """The charts are SVG written directly: a whole `er run` (report.html included) never imports matplotlib."""
    import subprocess
    import sys

    code = ("import sys\nfrom er_framework.cli.main import main\n"
            f"assert main(['run', {str(ROOT / 'configs' / config)!r}, '--out', {str(tmp_path)!r}, '-q']) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count('<svg class="chart"') >= 2
    assert_self_contained(page)
