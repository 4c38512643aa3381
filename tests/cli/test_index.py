"""``er index build|add|remove|info`` and ``er query`` (er_framework.cli.index) on the shipped documents job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from er_framework.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def docs() -> list[dict[str, str]]:
    lines = (ROOT / "configs/data/docs.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_build_query_remove_info(tmp_path: Path, docs: list[dict[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "docs.erx"
    assert main(["index", "build", str(ROOT / "configs/documents.yaml"), "--index", str(path)]) == 0
    assert f"index {path}: {len(docs)} records" in capsys.readouterr().out

    first = docs[0]
    assert main(["query", str(path), "--text", first["text"], "--top-k", "1"]) == 0
    (match,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert match["id"] == first["id"] and match["score"] == 1.0

    assert main(["index", "remove", str(path), first["id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == 1
    assert main(["index", "info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == len(docs) - 1


def test_query_needs_exactly_one_kind_of_item(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", str(tmp_path / "any.erx")]) == 2
    assert "give exactly one of --text, --record, --file" in capsys.readouterr().err
    assert main(["index", "remove", str(tmp_path / "any.erx")]) == 2
    assert "no ids given" in capsys.readouterr().err


def test_item_files_are_relative_to_the_working_directory(
    tmp_path: Path, docs: list[dict[str, str]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "docs.erx"
    assert main(["index", "build", str(ROOT / "configs/documents.yaml"), "--index", str(path), "-q"]) == 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(json.dumps(docs[0]) + "\n", encoding="utf-8")
    assert main(["query", "docs.erx", "--file", "items.jsonl", "--top-k", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == docs[0]["id"]
    for argv in (["query", "docs.erx", "--file", "nope.jsonl"], ["index", "add", "docs.erx", "nope.jsonl"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "no such file: nope.jsonl" in err and f"relative to the current directory ({tmp_path})" in err
        assert "job file" not in err
    assert main(["index", "info", "docs.erx", "--check"]) == 0
    assert "integrity        ok (SQLite quick_check)" in capsys.readouterr().out


def test_an_index_of_a_mapped_source_reads_items_in_the_sources_own_columns(
    tmp_path: Path, docs: list[dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    # the documents job with its file's "text" column named "body": the job maps text onto it
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": d["id"], "body": d["text"]}) + "\n" for d in docs), encoding="utf-8")
    job = (ROOT / "configs/documents.yaml").read_text(encoding="utf-8")
    job = job.replace("path: data/docs.jsonl", "path: docs.jsonl\n    columns: {text: body}")
    assert "columns: {text: body}" in job
    (tmp_path / "job.yaml").write_text(job, encoding="utf-8")
    path = tmp_path / "docs.erx"
    assert main(["index", "build", str(tmp_path / "job.yaml"), "--index", str(path), "-q"]) == 0
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "new", "body": docs[0]["text"]}) + "\n", encoding="utf-8")
    assert main(["query", str(path), "--file", str(items), "--top-k", "1"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["id"] == docs[0]["id"]
    assert main(["index", "add", str(path), str(items)]) == 0
    capsys.readouterr()
    assert main(["index", "info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == len(docs) + 1
