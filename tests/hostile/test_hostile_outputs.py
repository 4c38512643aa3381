"""Issue 18, cases 1-7 and the unwritable --out: the output folder is one transaction.

Every case runs the real ``er`` process. The consistency check used
throughout: a folder is "one run" when its report.json lists exactly the
output files present, report.html names the same config hash as report.json,
and pairs.csv is byte-identical to that config's reference pairs.csv.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from er_framework.io.outputs import JOURNAL, OUTPUT_NAMES, STAGE_PREFIX, OutputStage, recover
from tests.hostile.conftest import run_er


def docs(n: int = 80, seed: int = 3) -> list[dict[str, str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    rows = []
    for i in range(n):
        base = " ".join(rng.choice(words) for _ in range(60))
        rows.append({"id": f"d{i}", "text": base})
        if i % 4 == 0:  # a near copy: a few words changed
            copy = base.split()
            for k in rng.sample(range(len(copy)), 4):
                copy[k] = rng.choice(words)
            rows.append({"id": f"d{i}b", "text": " ".join(copy)})
    return rows


def make_job(folder: Path, threshold: float = 0.6, data: str = "data/docs.jsonl", extra: str = "") -> Path:
    (folder / data).parent.mkdir(parents=True, exist_ok=True)
    if not (folder / data).exists():
        (folder / data).write_text("".join(json.dumps(r) + "\n" for r in docs()), encoding="utf-8")
    job = folder / "job.yaml"
    job.write_text(
        f"""name: t
mode: dedup
seed: 1
threshold: {threshold}
sources:
  - {{name: docs, path: {data}, id: id, fields: [text]}}
shingler: {{type: char, k: 4}}
signature: {{type: minhash, num_perm: 64}}
blockers: [{{type: lsh_bands, target_recall: 0.95}}]
verifier: {{type: jaccard}}
cluster: {{type: connected_components}}
diagnostics: 0
{extra}""",
        encoding="utf-8",
    )
    return job


def snapshot(folder: Path) -> dict[str, str]:
    """File name -> sha256 of every file in ``folder`` (hidden er files aside)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.name.startswith(".er-")
    }


def one_run(folder: Path, references: dict[str, bytes]) -> str:
    """Assert the folder holds one run's complete outputs; return its config hash."""
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    present = {p.name for p in folder.iterdir() if p.name in OUTPUT_NAMES}
    assert present == set(report["outputs"]), (present, report["outputs"])
    h = report["config_hash"]
    assert h in (folder / "report.html").read_text(encoding="utf-8")
    assert (folder / "pairs.csv").read_bytes() == references[h]
    assert not (folder / JOURNAL).exists()
    return str(h)


# ------------------------------------------------------------------ cases 1-3: never overwrite what is not ours


def test_an_input_named_like_an_output_is_never_overwritten(tmp_path: Path) -> None:
    job = make_job(tmp_path, data="d/pairs.jsonl")
    # the input is a CSV named pairs.csv, in the folder given as --out
    rows = docs()
    csv_text = "id,text\n" + "".join(f"{r['id']},{r['text']}\n" for r in rows)
    (tmp_path / "d" / "pairs.csv").write_text(csv_text, encoding="utf-8")
    job.write_text(job.read_text().replace("d/pairs.jsonl", "d/pairs.csv"), encoding="utf-8")
    before = snapshot(tmp_path / "d")
    for force in ([], ["--force"]):
        r = run_er(["run", job, "--out", tmp_path / "d", *force])
        r.assert_clean_error(2, "pairs.csv is an input of this job", "overwrite")
        assert snapshot(tmp_path / "d") == before
    # the same through output: {dir: .} with the input beside the job file
    (tmp_path / "pairs.csv").write_text(csv_text, encoding="utf-8")
    job.write_text(job.read_text().replace("d/pairs.csv", "pairs.csv") + "output: {dir: .}\n", encoding="utf-8")
    before = snapshot(tmp_path)
    r = run_er(["run", job, "--force"])
    r.assert_clean_error(2, "is an input of this job")
    assert snapshot(tmp_path) == before


def test_a_folder_holding_an_input_is_refused_unless_forced(tmp_path: Path) -> None:
    job = make_job(tmp_path)
    r = run_er(["run", job, "--out", tmp_path / "data"])
    r.assert_clean_error(2, "holds an input of this job", "--force")
    assert sorted(os.listdir(tmp_path / "data")) == ["docs.jsonl"]
    r = run_er(["run", job, "--out", tmp_path / "data", "--force", "-q"])
    assert r.code == 0, r.err
    assert (tmp_path / "data" / "pairs.csv").exists() and (tmp_path / "data" / "docs.jsonl").exists()


def test_files_er_did_not_write_are_not_overwritten(tmp_path: Path) -> None:
    job = make_job(tmp_path)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "pairs.csv").write_text("my own pairs\n", encoding="utf-8")
    (out / "report.html").write_text("<p>my own page</p>\n", encoding="utf-8")
    (out / "notes.txt").write_text("keep me\n", encoding="utf-8")
    before = snapshot(out)
    r = run_er(["run", job, "--out", out])
    r.assert_clean_error(2, "not written by er", "--force")
    assert snapshot(out) == before
    # only unrelated files: refused too (a folder of the user's), named
    (out / "pairs.csv").unlink()
    (out / "report.html").unlink()
    r = run_er(["run", job, "--out", out])
    r.assert_clean_error(2, "files er did not write: notes.txt")
    r = run_er(["run", job, "--out", out, "--force", "-q"])
    assert r.code == 0, r.err
    assert (out / "notes.txt").read_text(encoding="utf-8") == "keep me\n"
    assert (out / "pairs.csv").exists()
    # a folder er wrote is rewritten without --force
    r = run_er(["run", job, "--out", tmp_path / "fresh", "-q"])
    assert r.code == 0, r.err
    r = run_er(["run", job, "--out", tmp_path / "fresh", "-q"])
    assert r.code == 0, r.err


def test_an_empty_out_is_refused(tmp_path: Path) -> None:
    job = make_job(tmp_path)
    work = tmp_path / "cwd"
    work.mkdir()
    r = run_er(["run", job, "--out", ""], cwd=work)
    r.assert_clean_error(2, "empty string", "unset shell variable")
    assert os.listdir(work) == []


def test_an_unwritable_out_is_refused_before_the_job(tmp_path: Path) -> None:
    job = make_job(tmp_path)
    # line 3 of the input is broken: if the data were read first, that would be the error
    lines = (tmp_path / "data" / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "data" / "docs.jsonl").write_text("".join(lines[:2]) + "{broken\n" + "".join(lines[2:]), encoding="utf-8")
    r = run_er(["run", job, "--out", "/sys/er-out"])
    r.assert_clean_error(2, "cannot write into /sys")
    assert "broken" not in r.err and "line 3" not in r.err
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    r = run_er(["run", job, "--out", tmp_path / "a-file" / "out"])
    r.assert_clean_error(2, "is a file, not a folder")


# ------------------------------------------------------------------ cases 4-7: one set, swapped in as a unit


def _paused_run(job: Path, out: Path, point: str, marker: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ER_TEST_PAUSE": f"{point}:{marker}"}
    return subprocess.Popen(
        [sys.executable, "-m", "er_framework.cli.main", "run", str(job), "--out", str(out), "-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for(marker: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the pause point"
        time.sleep(0.05)


def _references(tmp_path: Path, thresholds: list[float]) -> dict[str, bytes]:
    refs: dict[str, bytes] = {}
    for t in thresholds:
        folder = tmp_path / f"ref-{t}"
        folder.mkdir()
        job = make_job(folder, threshold=t)
        r = run_er(["run", job, "--out", folder / "out", "-q"])
        assert r.code == 0, r.err
        refs[json.loads((folder / "out" / "report.json").read_text())["config_hash"]] = (folder / "out" / "pairs.csv").read_bytes()
    assert len(set(refs.values())) == len(thresholds), "the variants must differ"
    return refs


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_run_killed_before_its_commit_leaves_the_previous_outputs(tmp_path: Path, sig: int) -> None:
    refs = _references(tmp_path, [0.6, 0.3])
    job = make_job(tmp_path, threshold=0.6)
    out = tmp_path / "out"
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    before = snapshot(out)
    job = make_job(tmp_path, threshold=0.3)
    marker = tmp_path / "paused"
    proc = _paused_run(job, out, "before_commit", marker)
    _wait_for(marker, proc)  # report.html is drawn, nothing committed
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err
    if sig == signal.SIGINT:
        assert proc.returncode == 130
    assert snapshot(out) == before
    one_run(out, refs)
    if sig == signal.SIGKILL:  # its stage is left behind: the next run clears it
        assert [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    else:
        assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    one_run(out, refs)
    assert snapshot(out) != before


def test_a_run_killed_inside_its_commit_is_completed_by_the_next_command(tmp_path: Path) -> None:
    refs = _references(tmp_path, [0.6, 0.3])
    job = make_job(tmp_path, threshold=0.6, extra="output: {candidates: true}\n")
    out = tmp_path / "out"
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    assert (out / "candidates.csv").exists()
    job = make_job(tmp_path, threshold=0.3)
    marker = tmp_path / "paused"
    proc = _paused_run(job, out, "in_commit", marker)
    _wait_for(marker, proc)  # the journal is written, no file moved
    proc.send_signal(signal.SIGINT)  # held back during the commit...
    time.sleep(0.5)
    assert proc.poll() is None
    proc.kill()  # ...but SIGKILL is not
    proc.communicate(timeout=60)
    assert (out / JOURNAL).exists()
    r = run_er(["report", out])  # any command that opens the folder completes the commit
    assert r.code == 0, r.err
    one_run(out, refs)
    assert not (out / "candidates.csv").exists()  # the new run wrote none: the stale one went with the commit
    assert (
        json.loads((out / "report.json").read_text())["config_hash"]
        != json.loads((tmp_path / "ref-0.6" / "out" / "report.json").read_text())["config_hash"]
    )


def test_concurrent_runs_into_one_folder_leave_one_complete_run(tmp_path: Path) -> None:
    refs = _references(tmp_path, [0.6, 0.3])
    out = tmp_path / "out"
    jobs = []
    for t in (0.6, 0.3):
        folder = tmp_path / f"job-{t}"
        folder.mkdir()
        jobs.append(make_job(folder, threshold=t))
    seen = set()
    for _ in range(4):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "er_framework.cli.main", "run", str(j), "--out", str(out), "-q"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for j in jobs
        ]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        seen.add(one_run(out, refs))
        assert not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    assert seen <= set(refs)


def test_stale_outputs_of_an_earlier_run_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = make_job(tmp_path, extra="output: {candidates: true}\n")
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    assert (out / "candidates.csv").exists()
    job = make_job(tmp_path)
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    assert not (out / "candidates.csv").exists()  # er evaluate would otherwise use the old run's candidates
    job = make_job(tmp_path, extra="output: {format: parquet}\n")
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    names = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert names == {"pairs.parquet", "clusters.parquet", "report.json", "report.html", "model.json"}


def test_dead_stages_are_cleared_and_live_ones_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = make_job(tmp_path)
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    dead = out / f"{STAGE_PREFIX}dead"
    dead.mkdir()
    (dead / ".alive").write_text("")
    (dead / "pairs.csv").write_bytes(b"x" * 100_000)
    with OutputStage(out) as live:  # a run in progress holds its stage's lock
        assert not dead.exists()
        recover(out)
        assert live.path.exists()
    assert not live.path.exists()
    assert not [e for e in os.listdir(out) if e.startswith(".")]  # no lock file, no stage left


def test_a_damaged_journal_moves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = make_job(tmp_path)
    assert run_er(["run", job, "--out", out, "-q"]).code == 0
    before = snapshot(out)
    (out / JOURNAL).write_text('{"stage": "../../etc", "files": ["../../x"], "remove": ["report.json"]}')
    recover(out)
    assert snapshot(out) == before and not (out / JOURNAL).exists()
    (out / JOURNAL).write_text("{not json")
    recover(out)
    assert snapshot(out) == before and not (out / JOURNAL).exists()
