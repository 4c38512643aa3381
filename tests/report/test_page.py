"""The HTML report: one self-contained page per run (er_framework.report.page)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from report_pages import ROOT, assert_self_contained, run

from er_framework.config.resolve import parse_job
from er_framework.data import Pairs, Records
from er_framework.errors import InputError
from er_framework.report.page import RunData, largest_clusters, values_from_run, write_report

SECTIONS = ["summary", "blocking", "scores", "cluster-sizes", "largest-clusters", "stages", "components"]


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


def small_job(tmp: Path, rows: list[dict], fmt: str = "csv") -> Path:
    (tmp / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = tmp / "job.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        name: <b>tricky</b>
        threshold: 0.5
        sources: [{{name: src, path: a.jsonl, fields: [text]}}]
        shingler: {{type: char, k: 3}}
        signature: {{type: minhash, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        output: {{format: {fmt}}}
    """)
    )
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


@pytest.mark.parametrize("config", ["documents.yaml", "customers.yaml", "fingerprints.yaml"])
def test_report_from_memory_equals_report_from_files(tmp_path: Path, config: str) -> None:
    """er run draws report.html from memory; er report reads the files back: same clusters, scores and records."""
    import re

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

    code = (
        "import sys\nfrom er_framework.cli.main import main\n"
        f"assert main(['run', {str(ROOT / 'configs' / config)!r}, '--out', {str(tmp_path)!r}, '-q']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count('<svg class="chart"') >= 2
    assert_self_contained(page)


# -------------------------------------------------------------------------- the largest clusters, in linear time


@pytest.mark.parametrize("seed", range(40))
def test_largest_clusters_equal_a_full_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 6, int(rng.integers(0, 60))).astype(np.int64)
    top = int(rng.integers(0, 9))
    order = np.lexsort((np.arange(len(sizes)), -sizes))
    assert largest_clusters(sizes, top) == [int(c) for c in order[:top] if sizes[c] > 1]


def test_run_data_values_are_those_of_the_wanted_records() -> None:
    recs = Records(
        ids=["1", "2", "1", "3"], source=np.array([0, 0, 1, 1]), source_names=["A", "B"], fields={"name": ["ann", "bob", None, "cy"]}
    )
    run = RunData(recs, Pairs(np.array([0]), np.array([2]), np.array([0.9])), np.array([0, 1, 0, 3]))
    wanted = {("B", "1"), ("A", "2"), ("A", "9")}  # an id of the other source, one of none
    values, fields, problem = values_from_run(run, wanted)
    assert fields == ["name"] and problem is None
    assert values == {("B", "1"): {"name": None}, ("A", "2"): {"name": "bob"}}


class CountingList(list):  # type: ignore[type-arg]
    """A list that counts the passes over it (a search of every id is one)."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountingList.passes += 1
        return super().__iter__()


def test_hinted_rows_are_checked_and_spare_the_search() -> None:
    ids = CountingList(["1", "2", "1", "3"])
    recs = Records(ids=ids, source=np.array([0, 0, 1, 1]), source_names=["A", "B"], fields={"name": ["ann", "bob", None, "cy"]})
    run = RunData(recs, Pairs(np.array([0]), np.array([2]), np.array([0.9])), np.array([0, 1, 0, 3]))
    wanted = {("B", "1"), ("A", "2")}
    CountingList.passes = 0
    values, _, _ = values_from_run(run, wanted, {("B", "1"): 2, ("A", "2"): 1})
    assert values == {("B", "1"): {"name": None}, ("A", "2"): {"name": "bob"}} and CountingList.passes == 0
    # a wrong hint (another record there, or out of range) is not trusted: the record is searched for
    values, _, _ = values_from_run(run, wanted, {("B", "1"): 0, ("A", "2"): 99})
    assert values == {("B", "1"): {"name": None}, ("A", "2"): {"name": "bob"}} and CountingList.passes == 1


def test_the_review_rows_of_a_run_point_at_its_records() -> None:
    from pathlib import Path

    from er_framework.executors import run_job
    from er_framework.report.review import review_rows

    res = run_job(parse_job(Path(__file__).resolve().parents[2] / "configs" / "customers.yaml"), write=False)
    rows = review_rows(res.report)
    assert len(rows) >= 10
    names = res.records.source_names
    for (source, rid), row in rows.items():
        assert (names[res.records.source[row]], res.records.ids[row]) == (source, rid)
    assert (
        review_rows(
            {"review": {"above": [{"left": {"source": "A", "id": "1", "row": True}, "right": {"source": "B", "id": "2", "row": -1}}]}}
        )
        == {}
    )


def test_the_example_records_of_a_mapped_latin1_source_are_read_again_with_its_settings(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_bytes(
        "id;body\n1;Zoë's tricky record about things\n2;Zoë's tricky record about things!\n3;unrelated\n".encode("latin-1")
    )
    cfg = small_job(tmp_path, ROWS)
    cfg.write_text(
        cfg.read_text().replace(
            "sources: [{name: src, path: a.jsonl, fields: [text]}]",
            "sources: [{name: src, path: a.csv, fields: [text], columns: {text: body}, csv: {delimiter: ';', encoding: latin-1}}]",
        )
    )
    page = write_report(run(cfg, tmp_path / "o")).read_text(encoding="utf-8")
    assert "cluster 0: 2 records" in page and "could not be read again" not in page
    assert "Zoë&#x27;s tricky record about things!" in page


def test_the_page_of_a_run_whose_tables_are_dataset_folders_is_the_page_of_its_files(tmp_path: Path) -> None:
    import re

    from er_framework.report.page import render_report
    from tests.io.test_part_tables import as_datasets, documents_run

    out = documents_run(tmp_path)
    before = render_report(out)
    as_datasets(out)
    after = render_report(out)
    for pattern in (r"<h3>cluster [^<]*</h3>", r'<span class="rec">([^<]*)</span>', r"min / median / max</th><td[^>]*>([^<]*)<"):
        assert re.findall(pattern, after) == re.findall(pattern, before), pattern
    assert re.findall(r"<h3>cluster [^<]*</h3>", after) and "could not be read" not in after
