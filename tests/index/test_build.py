"""Building and opening an index: the target is checked before the job runs, foreign or incompatible files are refused."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from index_docs import docs_job, small_index, write_docs

from er_framework.cli.main import main
from er_framework.config.resolve import parse_job
from er_framework.errors import ErError
from er_framework.index.build import build_index
from er_framework.index.lock import index_lock


def test_build_refuses_to_overwrite_and_errors_are_clear(tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = small_index(tmp_path, texts, 50)
    cfg = tmp_path / "job.yaml"
    assert main(["index", "build", str(cfg), "--index", str(path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["index", "build", str(cfg), "--index", str(path), "--force", "-q"]) == 0
    # not an index
    junk = tmp_path / "junk.erx"
    junk.write_text("hello")
    assert main(["index", "info", str(junk)]) == 2
    assert "not an er-framework index" in capsys.readouterr().err
    assert main(["query", str(tmp_path / "missing.erx"), "--text", "x"]) == 2
    assert "no such index" in capsys.readouterr().err
    # another format version
    conn = sqlite3.connect(str(path))
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'format_version'")
    conn.commit()
    conn.close()
    assert main(["index", "info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "format version 99" in err and "rebuild" in err
    # stored parameters that no longer resolve to the same job
    main(["index", "build", str(cfg), "--index", str(path), "--force", "-q"])
    conn = sqlite3.connect(str(path))
    conn.execute("UPDATE meta SET value = 'abc' WHERE key = 'config_hash'")
    conn.commit()
    conn.close()
    assert main(["index", "info", str(path)]) == 2
    assert "other component parameters" in capsys.readouterr().err


def test_an_index_of_format_1_is_refused_with_how_to_rebuild(tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Format 1 stored exact-text hashes of code points; format 2 stores BLAKE2b-64 of the UTF-8 bytes
    (kernels.digests): an old index's hashes would never match a new record's, so it is refused."""
    from er_framework.index.sqlite import FORMAT_VERSION
    from er_framework.kernels import normalize_text, text_digest_reference

    path, rows = small_index(tmp_path, texts, 30)
    assert FORMAT_VERSION == 2
    conn = sqlite3.connect(str(path))
    stored = dict(conn.execute("SELECT id, exact FROM records").fetchall())
    # the stored hash is the digest of the normalized text, as a signed 64-bit integer (SQLite's INTEGER)
    want = {i: text_digest_reference(normalize_text(t)) for i, t in rows}
    assert stored == {i: (h - 2**64 if h >= 2**63 else h) for i, h in want.items()}
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
    conn.commit()
    conn.close()
    for argv in (["index", "info", str(path)], ["query", str(path), "--text", "x"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "format version 1" in err and "reads version 2" in err and "rebuild it with: er index build" in err


def test_jobs_that_cannot_be_indexed_say_why(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text("id,name,zip\n1,ann,1\n2,bob,2\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        sources: [{{name: c, path: {tmp_path / "c.csv"}, id: id, fields: [name, zip]}}]
        blockers: [{{type: sorted_neighbourhood, key: [name], window: 3}}]
        verifier: {{type: fellegi_sunter, threshold: 0.9, fields: [{{field: name, levels: [100, 80]}}]}}
    """)
    )
    with pytest.raises(ErError) as exc:
        build_index(parse_job(cfg), tmp_path / "c.erx")
    text = exc.value.render()
    assert "sorted_neighbourhood" in text and "cannot look up a single item" in text
    assert "fellegi_sunter" not in text  # the index fits its weights (or applies --model FILE): no refusal
    assert not (tmp_path / "c.erx").exists()


def test_build_checks_the_target_before_the_job_runs(tmp_path: Path, texts: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    data = write_docs(tmp_path / "docs.jsonl", [(f"d{i}", t) for i, t in enumerate(texts[:20])])
    job = parse_job(docs_job(tmp_path, data))
    import er_framework.index.build as build

    def no_run(*a: Any, **k: Any) -> Any:
        raise AssertionError("the job ran")

    monkeypatch.setattr(build, "run_local", no_run)
    (tmp_path / "folder.erx").mkdir()
    (tmp_path / "foreign.erx").write_text("mine")
    cases = {
        tmp_path / "missing" / "x.erx": "the folder .* does not exist",
        data / "x.erx": "is a file, not a folder",
        tmp_path / "folder.erx": "is a folder",
        tmp_path / "foreign.erx": "already exists",
    }
    for target, message in cases.items():
        with pytest.raises(ErError, match=message):
            build_index(job, target)
    with pytest.raises(ErError, match="not an er-framework index; not replaced"):
        build_index(job, tmp_path / "foreign.erx", force=True)
    assert (tmp_path / "foreign.erx").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl", "folder.erx", "foreign.erx", "job.yaml"]


def test_a_build_removes_killed_builds_debris_and_refuses_while_another_build_holds_the_lock(tmp_path: Path, texts: list[str]) -> None:
    path, _ = small_index(tmp_path, texts)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # a process that is gone, as after kill -9
    debris = [tmp_path / f".{path.name}.building-{proc.pid}{end}" for end in ("", "-wal", "-shm")]
    for p in debris:
        p.write_bytes(b"x" * 100)
    job = parse_job(tmp_path / "job.yaml")
    build_index(job, path, force=True)[0].close()
    assert not [p for p in debris if p.exists()]
    held, release = threading.Event(), threading.Event()

    def other_build() -> None:
        with index_lock(path, "build"):
            held.set()
            release.wait(60)

    t = threading.Thread(target=other_build)
    t.start()
    try:
        assert held.wait(60)
        with pytest.raises(ErError, match="being rebuilt by process"):
            build_index(job, path, force=True)
    finally:
        release.set()
        t.join()
