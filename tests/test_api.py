"""er_framework.run / validate / Result: the notebook example of docs/python.md, DataFrames in and out, explanations."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest

import er_framework as er
from er_framework.errors import ConfigError, ErError

ROOT = Path(__file__).resolve().parents[1]
FEBRL = ROOT / "configs" / "data" / "febrl"


def python_page_example() -> str:
    """The first ```python block of docs/python.md (tests/docs runs it too and compares what it prints; here
    its tables are checked)."""
    text = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, "docs/python.md opens with a python block"
    return match.group(1)


@pytest.fixture(scope="module")
def python_page_run() -> dict[str, Any]:
    """The example of docs/python.md, executed as written, from the repository root."""
    import os

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        scope: dict[str, Any] = {}
        exec(compile(python_page_example(), "docs/python.md", "exec"), scope)  # noqa: S102 - our own docs
    finally:
        os.chdir(here)
    return scope


def f1_of(pairs: set[tuple[str, str]]) -> float:
    truth = pd.read_csv(FEBRL / "febrl4_truth.csv")
    true = set(zip(truth.a_id, truth.b_id))
    tp = len(pairs & true)
    p, r = tp / len(pairs), tp / len(true)
    return 2 * p * r / (p + r)


def test_python_page_example_links_febrl4_from_pandas(python_page_run: dict[str, Any]) -> None:
    links = python_page_run["links"]
    assert isinstance(links, pd.DataFrame)
    assert list(links.columns) == ["left_source", "left_id", "right_source", "right_id", "score"]
    assert python_page_run["f1"] >= 0.999
    assert f1_of(set(zip(links.left_id, links.right_id))) == pytest.approx(python_page_run["f1"])
    # one-to-one: every record in at most one link, and each link inside a cluster
    assert links.left_id.is_unique and links.right_id.is_unique
    result = python_page_run["result"]
    clusters = result.clusters
    assert isinstance(clusters, pd.DataFrame) and len(clusters) == 10_000
    cid = dict(zip(zip(clusters.source, clusters.id), clusters.cluster_id))
    assert all(cid[("A", x)] == cid[("B", y)] for x, y in zip(links.left_id, links.right_id))


def job_dict(python_page_run: dict[str, Any]) -> dict[str, Any]:
    return python_page_run["job"]


def test_polars_in_polars_out(python_page_run: dict[str, Any]) -> None:
    a = pl.read_csv(FEBRL / "febrl4_a.csv", infer_schema=False)
    b = pl.read_csv(FEBRL / "febrl4_b.csv", infer_schema=False)
    result = er.run(job_dict(python_page_run), sources={"A": a, "B": b})
    links = result.pairs
    assert isinstance(links, pl.DataFrame)
    assert f1_of(set(zip(links["left_id"].to_list(), links["right_id"].to_list()))) >= 0.999
    # the same answer as from pandas
    pd_links = python_page_run["links"]
    assert sorted(zip(links["left_id"].to_list(), links["right_id"].to_list())) == sorted(zip(pd_links.left_id, pd_links.right_id))


def test_arrow_tables_and_a_job_file(python_page_run: dict[str, Any], tmp_path: Path) -> None:
    a = pa_csv.read_csv(
        FEBRL / "febrl4_a.csv",
        convert_options=pa_csv.ConvertOptions(
            column_types={c: pa.string() for c in ["rec_id", *python_page_run["fields"]]}, strings_can_be_null=False
        ),
    )
    result = er.run(ROOT / "configs" / "febrl4.yaml", sources={"A": a})  # B read from the file the YAML names
    assert isinstance(result.pairs, pa.Table)
    assert f1_of(set(zip(result.pairs["left_id"].to_pylist(), result.pairs["right_id"].to_pylist()))) >= 0.999
    again = result.table("pairs", kind="pandas")
    from_files = er.run(ROOT / "configs" / "febrl4.yaml").table("pairs", kind="pandas")  # A from its file too
    assert list(again.left_id) == list(from_files.left_id) and list(again.right_id) == list(from_files.right_id)
    assert np.allclose(again.score, from_files.score)


def test_the_tables_are_the_written_files(python_page_run: dict[str, Any], tmp_path: Path) -> None:
    result = python_page_run["result"]
    written = result.write(tmp_path / "out")
    assert {"pairs", "clusters", "verified_pairs", "report", "report_html"} <= set(written)
    pairs = pd.read_csv(written["pairs"], dtype={"left_id": str, "right_id": str})
    links = python_page_run["links"]
    assert list(pairs.left_id) == list(links.left_id) and np.allclose(pairs.score, links.score)
    verified = pd.read_csv(written["verified_pairs"])
    assert len(verified) == len(result.verified_pairs) >= len(links)
    # writing again needs force, as er run does
    with pytest.raises(ErError):
        result.write(tmp_path / "out" / "pairs.csv")


def test_yaml_text_and_out(tmp_path: Path) -> None:
    text = (ROOT / "configs" / "documents.yaml").read_text(encoding="utf-8")
    text = text.replace("path: data/docs.jsonl", f"path: {ROOT / 'configs' / 'data' / 'docs.jsonl'}")
    result = er.run(text, out=tmp_path / "o", report=False)
    assert (tmp_path / "o" / "pairs.csv").is_file() and not (tmp_path / "o" / "report.html").exists()
    assert isinstance(result.pairs, pa.Table)
    assert result.pairs.num_rows == result.report["pairs"]["pairs_listed"]
    comp = result.comparisons
    assert comp.column_names[-4:] == ["shared", "left_only", "right_only", "score"]
    assert comp.num_rows == result.report["candidate_pairs"]


def test_output_report_false_is_the_default_of_run_and_write(tmp_path: Path) -> None:
    """``output: {report: false}`` skips report.html in er_framework.run and Result.write as in er run;
    the ``report`` argument overrides it either way; report.json is always written."""
    import yaml

    job = yaml.safe_load((ROOT / "configs" / "documents.yaml").read_text(encoding="utf-8"))
    job["sources"][0]["path"] = str(ROOT / "configs" / "data" / "docs.jsonl")
    job["output"] = {"report": False}
    result = er.run(job, out=tmp_path / "a")
    assert (tmp_path / "a" / "report.json").is_file() and not (tmp_path / "a" / "report.html").exists()
    assert "report_html" not in result.outputs
    assert "report_html" in result.write(tmp_path / "b", report=True) and (tmp_path / "b" / "report.html").is_file()
    assert "report_html" not in result.write(tmp_path / "c") and not (tmp_path / "c" / "report.html").exists()
    job["output"] = {"report": True}
    er.run(job, out=tmp_path / "d", report=False)
    assert (tmp_path / "d" / "report.json").is_file() and not (tmp_path / "d" / "report.html").exists()
    er.run(job, out=tmp_path / "e")
    assert (tmp_path / "e" / "report.html").is_file()


def test_validate_returns_the_problems() -> None:
    assert er.validate(ROOT / "configs" / "customers.yaml") == []
    # a one-line string without "key: value" is a path: a missing file is named as such
    assert "no such file" in str(er.validate("jobs/missing_job")[0])
    problems = er.validate({"sources": [{"name": "d", "fields": ["text"]}], "verifier": {"type": "jacard"}})
    text = "\n".join(str(p) for p in problems)
    assert "has no path" in text and "jacard" in text
    # a source given in memory needs no path
    assert not [
        p
        for p in er.validate(
            {
                "sources": [{"name": "d", "fields": ["text"]}],
                "shingler": {"type": "char"},
                "signature": {"type": "minhash"},
                "blockers": [{"type": "lsh_bands"}],
                "verifier": {"type": "jaccard"},
                "threshold": 0.8,
            },
            sources={"d": pd.DataFrame({"id": ["1"], "text": ["x"]})},
        )
    ]


def test_bad_sources_are_clear_errors() -> None:
    job = {
        "sources": [{"name": "d", "fields": ["text"]}],
        "shingler": {"type": "char"},
        "signature": {"type": "minhash"},
        "blockers": [{"type": "lsh_bands"}],
        "verifier": {"type": "jaccard"},
        "threshold": 0.8,
    }
    with pytest.raises(ConfigError, match="no source named"):
        er.run(job, sources={"docs": pd.DataFrame({"id": ["1"], "text": ["x"]})})
    with pytest.raises(ErError, match="duplicate|twice|more than once"):
        er.run(job, sources={"d": pd.DataFrame({"id": ["1", "1"], "text": ["x", "y"]})})
    with pytest.raises(ErError, match="text"):
        er.run(job, sources={"d": pd.DataFrame({"id": ["1"], "body": ["x"]})})


def test_explain_weights_sum_to_the_score(python_page_run: dict[str, Any]) -> None:
    ex = python_page_run["result"].explain("rec-1070-org", "rec-1070-dup-0")
    assert ex.kind == "weights" and len(ex.fields) == 10
    total = ex.prior_weight + sum(f.weight for f in ex.fields)
    assert total == pytest.approx(ex.match_weight, abs=1e-9)
    assert 1 / (1 + 2**-total) == pytest.approx(ex.score, abs=1e-12)
    links = python_page_run["links"]
    assert ex.score == pytest.approx(float(links.score[links.left_id == "rec-1070-org"].iloc[0]))
    assert "soc_sec_id" in str(ex) and "probability" in str(ex)
    with pytest.raises(ErError, match="no record"):
        python_page_run["result"].explain("nobody", "rec-1070-dup-0")
    assert ex.candidate is True and ex.verified
    other = python_page_run["result"].explain("rec-1070-org", "rec-1-dup-0")  # two people no blocker paired
    assert other.candidate is False and not other.verified and "not a candidate" in str(other)


# ---------------------------------------------------------------- notebooks: progress, repr, _repr_html_


def test_progress_true_shows_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    result = er.run(ROOT / "configs" / "documents.yaml", progress=True)
    got = capsys.readouterr()
    assert got.out == ""
    assert got.err.count("\n") == 1 and got.err.endswith("\n") and got.err.rstrip().endswith(" s")
    shown = got.err.split("\r")[1:]
    assert shown[0].startswith("er: [1] read: started")
    assert re.match(r"er: \d+ stages done in \d+\.\d s *\n$", shown[-1])
    assert len([s for s in shown if s.rstrip().endswith(": started")]) == len(
        {s["stage"] for s in result.report["stages"]} - {"signatures"}  # shingle+signatures: one stage shown
    )


def test_progress_callback_and_fit(capsys: pytest.CaptureFixture[str]) -> None:
    from er_framework.engine.log import Progress

    got: list[Progress] = []
    model = er.fit(ROOT / "configs" / "febrl4.yaml", progress=got.append)
    assert model.verifier is not None
    assert ("fit", "end") in [(p.stage, p.event) for p in got]
    assert all(isinstance(p.seconds, float) and p.seconds >= 0 for p in got)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="progress='yes': expected True"):
        er.run(ROOT / "configs" / "documents.yaml", progress="yes")  # type: ignore[arg-type]


def test_a_result_shows_a_line_and_a_small_view() -> None:
    result = er.run(ROOT / "configs" / "documents.yaml")
    text = repr(result)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("<Result (arrow tables): 270 records, ") and "verifier jaccard, threshold 0.8" in text
    html = result._repr_html_()
    assert html == result.run._repr_html_() and len(html) < 50_000 and "pairs (" in html
