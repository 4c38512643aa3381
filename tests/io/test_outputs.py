"""er_framework.io.outputs: the checks before a job and the staged commit, in-process."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from er_framework.errors import InputError
from er_framework.io.outputs import (
    JOURNAL,
    STAGE_PREFIX,
    OutputStage,
    check_output_dir,
    is_er_output,
    publish,
    recover,
)


def er_report(folder: Path, outputs: list[str] | None = None) -> None:
    doc = {"job": "t", "config_hash": "abc", "versions": {}}
    if outputs is not None:
        doc["outputs"] = outputs
    (folder / "report.json").write_text(json.dumps(doc), encoding="utf-8")


def test_a_new_or_empty_folder_passes(tmp_path: Path) -> None:
    assert check_output_dir(tmp_path / "new" / "deeper", []) == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # checked, not created
    (tmp_path / "empty").mkdir()
    assert check_output_dir(tmp_path / "empty", []) == tmp_path / "empty"


@pytest.mark.parametrize("value", ["", "  ", None])
def test_an_empty_name_is_refused(value: str | None) -> None:
    with pytest.raises(InputError, match="empty string"):
        check_output_dir(value, [])


def test_a_symlinked_folder_is_seen_through(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "clusters.csv").write_text("id,text\n1,a\n", encoding="utf-8")
    (tmp_path / "link").symlink_to(data)
    with pytest.raises(InputError, match="is an input of this job"):
        check_output_dir(tmp_path / "link", [("sources[0]", data / "clusters.csv")], force=True)
    (data / "clusters.csv").rename(data / "x.csv")
    with pytest.raises(InputError, match="holds an input"):
        check_output_dir(tmp_path / "link", [("sources[0]", data / "x.csv")])
    check_output_dir(tmp_path / "link", [("sources[0]", data / "x.csv")], force=True)


def test_what_er_wrote_is_recognized_by_its_report(tmp_path: Path) -> None:
    (tmp_path / "pairs.csv").write_text("x\n", encoding="utf-8")
    assert is_er_output(tmp_path) == set()
    with pytest.raises(InputError, match="pairs.csv was not written by er"):
        check_output_dir(tmp_path, [])
    er_report(tmp_path)  # a report of an older version: the tool's names are its own
    check_output_dir(tmp_path, [])
    (tmp_path / "review.csv").write_text("x\n", encoding="utf-8")
    with pytest.raises(InputError, match="review.csv"):
        check_output_dir(tmp_path, [])
    (tmp_path / "report.json").write_text('{"something": "else"}', encoding="utf-8")
    with pytest.raises(InputError, match="not written by er"):
        check_output_dir(tmp_path, [])
    (tmp_path / f"{STAGE_PREFIX}x").mkdir()  # er's own hidden files never count
    er_report(tmp_path, ["pairs.csv", "review.csv"])
    assert "review.csv" in is_er_output(tmp_path)
    check_output_dir(tmp_path, [])


def test_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output_dir(tmp_path / "f", [])
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output_dir(tmp_path / "f" / "sub", [])


def test_a_stage_commits_one_set_and_removes_stale_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    publish(out, {"pairs.csv": "old\n", "candidates.csv": "old\n", "report.json": "{}\n"})
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    with OutputStage(out) as stage:
        stage.write_text("pairs.csv", "new\n")
        stage.write_text("report.json", "{}\n")
        assert (out / "pairs.csv").read_text() == "old\n"  # nothing visible before the commit
        stage.commit(["pairs.csv", "report.json"], replace_all=True)
    assert (out / "pairs.csv").read_text() == "new\n"
    assert not (out / "candidates.csv").exists()
    assert (out / "notes.txt").read_text() == "mine\n"
    assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    with pytest.raises(ValueError):
        publish(out, {"../escape.txt": "x"})


def test_a_failed_run_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(RuntimeError), OutputStage(out) as stage:
        stage.write_text("pairs.csv", "new\n")
        raise RuntimeError("the job failed")
    assert not out.exists()  # created by the stage, removed again
    publish(out, {"pairs.csv": "old\n"})
    (out / "clusters.csv").mkdir()  # a folder in the way of an output file
    with pytest.raises(InputError, match="cannot write outputs"), OutputStage(out) as stage:
        stage.write_text("pairs.csv", "new\n")
        stage.write_text("clusters.csv", "new\n")
        stage.commit(["pairs.csv", "clusters.csv"], replace_all=True)
    assert (out / "pairs.csv").read_text() == "old\n"


def test_recover_rolls_an_interrupted_commit_forward(tmp_path: Path) -> None:
    out = tmp_path / "out"
    publish(out, {"pairs.csv": "old\n", "candidates.csv": "old\n"})
    stage = out / f"{STAGE_PREFIX}killed"
    stage.mkdir()
    (stage / "pairs.csv").write_text("new\n", encoding="utf-8")
    (out / JOURNAL).write_text(json.dumps({"stage": stage.name, "files": ["pairs.csv"], "remove": ["candidates.csv"]}))
    recover(out)
    assert (out / "pairs.csv").read_text() == "new\n"
    assert not (out / "candidates.csv").exists() and not (out / JOURNAL).exists()
    recover(out)  # idempotent
    assert (out / "pairs.csv").read_text() == "new\n"


def test_commit_fsyncs_every_committed_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files are written into the stage unsynced (write_text, write_files) and fsynced together by commit,
    before the journal: each committed file exactly once, nothing else of the stage."""
    from er_framework.io import outputs
    from er_framework.io.output_write import write_files

    synced: list[list[str]] = []
    real = outputs.sync_files
    monkeypatch.setattr(outputs, "sync_files", lambda paths: (synced.append(sorted(p.name for p in paths)), real(paths)))
    out = tmp_path / "out"
    with OutputStage(out) as stage:
        written = write_files(stage.path, {"pairs": {"a": [1, 2]}}, {"report": {"v": 1}})
        assert sorted(p.name for p in written.values()) == ["pairs.csv", "report.json"]
        stage.write_text("report.html", "<html></html>")
        stage.commit(["pairs.csv", "report.json", "report.html"], replace_all=True)
    assert synced == [["pairs.csv", "report.html", "report.json"]]
    assert (out / "pairs.csv").read_bytes() == b"a\r\n1\r\n2\r\n" and json.loads((out / "report.json").read_text()) == {"v": 1}


def test_write_files_refuses_before_writing(tmp_path: Path) -> None:
    from er_framework.io.output_write import write_files

    with pytest.raises(ValueError, match="different lengths"):
        write_files(tmp_path, {"pairs": {"a": [1], "b": [1, 2]}}, {"report": {"v": 1}})
    assert list(tmp_path.iterdir()) == []


def test_sync_files_on_threads_reports_a_missing_file(tmp_path: Path) -> None:
    from er_framework.io.outputs import sync_files

    paths = [tmp_path / f"f{i}" for i in range(5)]
    for p in paths:
        p.write_text("x")
    sync_files(paths)
    with pytest.raises(FileNotFoundError):
        sync_files([*paths, tmp_path / "missing"])


# ------------------------------------------------------------------ rollback: a failure or a kill at every step


class _Killed(BaseException):
    """A simulated kill -9: nothing after it runs in the process (no rollback, no cleanup)."""


def _files(folder: Path) -> dict[str, bytes]:
    """The visible files of a folder and their bytes (er's hidden stage and journal aside)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.startswith(".") and p.is_file()}


_OLD = {
    "pairs.csv": "old pairs\n",
    "clusters.csv": "old clusters\n",
    "candidates.csv": "old cand\n",
    "report.json": "{}\n",
    "report.html": "old\n",
}
_NEW = {"pairs.csv": "new pairs\n", "clusters.csv": "new clusters\n", "report.json": '{"new": 1}\n', "model.json": "{}\n"}


def _fresh(tmp_path: Path, k: int) -> Path:
    out = tmp_path / f"out-{k}"
    publish(out, _OLD)
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    return out


def _faulty(monkeypatch: pytest.MonkeyPatch, plan: dict[int, BaseException]) -> list[int]:
    """Make the n-th call of os.replace / os.unlink / os.link (counted together) raise ``plan[n]``."""
    calls = [0]
    for name in ("replace", "unlink", "link"):
        real = getattr(os, name)

        def fake(*args: object, _real: object = real, **kw: object) -> object:
            calls[0] += 1
            if calls[0] in plan:
                raise plan[calls[0]]
            return _real(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(os, name, fake)
    return calls


def _stage_new(out: Path) -> OutputStage:
    stage = OutputStage(out).__enter__()
    for name, text in _NEW.items():
        stage.write_text(name, text)
    return stage


def _count_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    out = _fresh(tmp_path, 0)
    stage = _stage_new(out)
    with monkeypatch.context() as m:
        calls = _faulty(m, {})
        stage.commit(list(_NEW), replace_all=True)
        n = calls[0]
    stage.__exit__(None, None, None)
    assert _files(out) == {**{k: v.encode() for k, v in _NEW.items()}, "notes.txt": b"mine\n"}
    return n


def test_a_commit_failing_at_any_step_leaves_the_folder_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _count_steps(tmp_path, monkeypatch)
    assert steps >= len(_NEW) + 2  # backups, journal, removals, moves
    new_set = {**{k: v.encode() for k, v in _NEW.items()}, "notes.txt": b"mine\n"}
    failed = 0
    for k in range(1, steps + 1):
        out = _fresh(tmp_path, k)
        before = _files(out)
        stage = _stage_new(out)
        with monkeypatch.context() as m:
            _faulty(m, {k: PermissionError(1, "Operation not permitted", str(out / "x"))})
            try:
                stage.commit(list(_NEW), replace_all=True)
            except InputError as err:
                assert "previous outputs were left as they were" in str(err), (k, err)
                assert _files(out) == before, k
                failed += 1
            else:  # a refused hard link is replaced by a copy; a journal that cannot be deleted is a no-op
                assert _files(out) == new_set, k
        stage.__exit__(None, None, None)
        after = _files(out)
        recover(out)  # the next command (a journal that could not be deleted is removed)
        assert _files(out) == after, k
        assert not (out / JOURNAL).exists(), k
        assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)], k
    assert failed >= steps - 6, (failed, steps)


def test_a_kill_at_any_step_of_a_commit_or_its_rollback_recovers_to_one_whole_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _count_steps(tmp_path, monkeypatch)
    old_set = {**{k: v.encode() for k, v in _OLD.items()}, "notes.txt": b"mine\n"}
    new_set = {**{k: v.encode() for k, v in _NEW.items()}, "notes.txt": b"mine\n"}
    seen = set()
    cases = [{k: _Killed()} for k in range(1, steps + 1)]  # killed in the commit
    # failed, then killed in the rollback
    cases += [{k: OSError(5, "Input/output error"), j: _Killed()} for k in range(1, steps + 1) for j in range(k + 1, k + 12)]
    for i, plan in enumerate(cases):
        out = _fresh(tmp_path, 1000 + i)
        stage = _stage_new(out)
        with monkeypatch.context() as m:
            _faulty(m, plan)
            with contextlib.suppress(_Killed, InputError):
                stage.commit(list(_NEW), replace_all=True)
        assert stage._alive is not None
        stage._alive.close()  # the process is gone: its stage's lock is free, its stage stays
        recover(out)
        after = _files(out)
        assert after in (old_set, new_set), (plan, sorted(after))
        seen.add("new" if after == new_set else "old")
        assert not (out / JOURNAL).exists(), plan
        assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)], plan
    assert seen == {"old", "new"}


def test_a_rollback_that_fails_too_names_the_files_of_each_run_and_the_next_command_undoes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _fresh(tmp_path, 0)
    before = _files(out)
    stage = _stage_new(out)
    real = os.replace
    broken = {"on": True}

    def replace(src: object, dst: object) -> None:
        # clusters.csv cannot be replaced (as if immutable): the commit fails there; putting pairs.csv back fails too
        if broken["on"] and str(dst).endswith("clusters.csv") and str(src).endswith("clusters.csv"):
            raise PermissionError(1, "Operation not permitted", str(dst))
        if broken["on"] and Path(str(src)).name == ".old-pairs.csv":
            raise PermissionError(1, "Operation not permitted", str(dst))
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(InputError) as err:
        stage.commit(list(_NEW), replace_all=True)
    stage.__exit__(None, None, None)
    text = str(err.value)
    assert "pairs.csv from this run" in text and "from the previous run" in text and "completes or undoes" in text, text
    assert (out / JOURNAL).exists() and (out / "pairs.csv").read_text() == "new pairs\n"
    recover(out)  # still broken: nothing changes, the journal stays
    assert (out / JOURNAL).exists()
    broken["on"] = False
    recover(out)  # the next command finishes it
    assert _files(out) in (before, {**{k: v.encode() for k, v in _NEW.items()}, "notes.txt": b"mine\n"})
    assert not (out / JOURNAL).exists() and not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]


# --------------------------------------------------------------------------
# report.json read back: a report er wrote, or a message (issue 31)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"[1]", b"{", b"\xff\xfe", b"[" * 100000 + b"]" * 100000])
def test_read_report_refuses_what_is_not_a_report(tmp_path: Path, content: bytes) -> None:
    from er_framework.io.outputs import read_report

    (tmp_path / "report.json").write_bytes(content)
    with pytest.raises(InputError, match="is not a report er wrote"):
        read_report(tmp_path)


def test_find_job_file_refuses_a_named_file_that_is_not_a_job(tmp_path: Path) -> None:
    from er_framework.io.outputs import find_job_file

    secret = tmp_path / "shadow"
    secret.write_text("root:TOPSECRET:1:2\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        find_job_file({"config": str(secret)}, tmp_path / "out", None)
    assert "is not an er job file" in str(e.value) and "TOPSECRET" not in str(e.value)
    job = tmp_path / "job.yaml"
    job.write_text("sources: []\n", encoding="utf-8")
    assert find_job_file({"config": str(job)}, tmp_path / "out", None)[0] == job.resolve()
    assert find_job_file({"config": str(secret)}, tmp_path / "out", job)[0] == job.resolve()  # --config wins


# ------------------------------------------------------------------ dataset folders in the transaction (issue 30)

#: an output set: a file's text, or a dataset folder's files (name -> text)
_Set = dict[str, "str | dict[str, str]"]

_DATASET_OLD: _Set = {
    "pairs": {"_manifest.json": "{}\n", "part-00000.parquet": "old p0\n", "part-00001.parquet": "old p1\n"},
    "clusters.parquet": "old clusters\n",
    "candidates": {"_manifest.json": "{}\n", "part-00000.parquet": "old c0\n"},
    "report.json": "{}\n",
}
_DATASET_NEW: _Set = {
    "pairs": {"_manifest.json": '{"new": 1}\n', "part-00000.parquet": "new p0\n"},
    "clusters": {"_manifest.json": '{"new": 1}\n', "part-00000.parquet": "new c0\n", "part-00001.parquet": "new c1\n"},
    "candidates.csv": "new cand\n",
    "report.json": '{"new": 1}\n',
}


def _tree(folder: Path) -> dict[str, object]:
    """The visible files and folders of an output folder, with their bytes (er's hidden entries aside)."""
    out: dict[str, object] = {}
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        out[p.name] = _tree(p) if p.is_dir() else p.read_bytes()
    return out


def _as_tree(spec: _Set) -> dict[str, object]:
    return {k: (v.encode() if isinstance(v, str) else {n: t.encode() for n, t in v.items()}) for k, v in spec.items()}


def _stage_set(out: Path, spec: _Set) -> OutputStage:
    stage = OutputStage(out).__enter__()
    for name, value in spec.items():
        if isinstance(value, str):
            stage.write_text(name, value)
        else:
            (stage.path / name).mkdir()
            for file, text in value.items():
                (stage.path / name / file).write_text(text, encoding="utf-8")
    return stage


def _dataset_fresh(tmp_path: Path, k: int, old: _Set) -> Path:
    out = tmp_path / f"ds-{k}"
    stage = _stage_set(out, old)
    stage.commit(list(old), replace_all=True)
    stage.__exit__(None, None, None)
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    return out


_SCENARIOS = [(_DATASET_OLD, _DATASET_NEW), (_DATASET_NEW, _DATASET_OLD), (_OLD, _DATASET_NEW)]


_IDS = ["datasets-over-datasets", "files-over-datasets", "datasets-over-files"]


@pytest.mark.parametrize("old, new", _SCENARIOS, ids=_IDS)
def test_a_commit_of_dataset_folders_replaces_the_set_and_removes_stale_outputs_of_either_kind(
    tmp_path: Path, old: _Set, new: _Set
) -> None:
    out = _dataset_fresh(tmp_path, 0, old)
    assert _tree(out) == {**_as_tree(old), "notes.txt": b"mine\n"}
    stage = _stage_set(out, new)
    stage.commit(list(new), replace_all=True)
    stage.__exit__(None, None, None)
    assert _tree(out) == {**_as_tree(new), "notes.txt": b"mine\n"}
    assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)] and not (out / JOURNAL).exists()


def test_a_folder_that_is_not_an_er_dataset_is_never_removed_and_is_in_the_way(tmp_path: Path) -> None:
    out = _dataset_fresh(tmp_path, 0, _OLD)
    (out / "golden").mkdir()
    (out / "golden" / "mine.txt").write_text("keep\n", encoding="utf-8")
    stage = _stage_set(out, _DATASET_NEW)
    stage.commit(list(_DATASET_NEW), replace_all=True)  # golden/ holds a file of the user's: not a stale output
    stage.__exit__(None, None, None)
    assert (out / "golden" / "mine.txt").read_text() == "keep\n"
    (out / "clusters" / "notes.txt").write_text("mine\n", encoding="utf-8")  # no longer a dataset er wrote
    before = _tree(out)
    stage = _stage_set(out, _DATASET_NEW)
    with pytest.raises(InputError, match="not a dataset folder er wrote is in the way"):
        stage.commit(list(_DATASET_NEW), replace_all=True)
    stage.__exit__(None, None, None)
    assert _tree(out) == before
    with pytest.raises(ValueError, match="not a dataset folder"), OutputStage(out) as stage:
        stage.write_text("pairs", "a file named like a dataset\n")
        stage.commit(["pairs"], replace_all=False)


def _dataset_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: _Set, new: _Set) -> int:
    out = _dataset_fresh(tmp_path, 0, old)
    stage = _stage_set(out, new)
    with monkeypatch.context() as m:
        calls = _faulty(m, {})
        stage.commit(list(new), replace_all=True)
        n = calls[0]
    stage.__exit__(None, None, None)
    return n


@pytest.mark.parametrize("old, new", _SCENARIOS, ids=_IDS)
def test_a_failure_or_kill_at_any_step_of_a_dataset_commit_recovers_to_one_whole_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: _Set, new: _Set
) -> None:
    steps = _dataset_steps(tmp_path, monkeypatch, old, new)
    old_set = {**_as_tree(old), "notes.txt": b"mine\n"}
    new_set = {**_as_tree(new), "notes.txt": b"mine\n"}
    cases: list[dict[int, BaseException]] = [{k: PermissionError(1, "Operation not permitted")} for k in range(1, steps + 1)]
    cases += [{k: _Killed()} for k in range(1, steps + 1)]
    cases += [{k: OSError(5, "Input/output error"), j: _Killed()} for k in range(1, steps + 1, 2) for j in range(k + 1, k + 10)]
    seen = set()
    for i, plan in enumerate(cases):
        out = _dataset_fresh(tmp_path, 1 + i, old)
        stage = _stage_set(out, new)
        with monkeypatch.context() as m:
            _faulty(m, plan)
            with contextlib.suppress(_Killed, InputError):
                stage.commit(list(new), replace_all=True)
        assert stage._alive is not None
        stage._alive.close()  # the process is gone (or done): its stage's lock is free
        recover(out)
        after = _tree(out)
        assert after in (old_set, new_set), (plan, after)
        seen.add("new" if after == new_set else "old")
        assert not (out / JOURNAL).exists(), plan
        assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)], plan
    assert seen == {"old", "new"}
