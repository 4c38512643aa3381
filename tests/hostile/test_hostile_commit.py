"""Issue 31, the output transaction and the index under failures, concurrency and kills: whole ``er`` processes.

- a commit that fails halfway (a folder put in the way of one output after the journal is written) leaves
  the previous outputs byte for byte, and says so;
- a labels file or a model file named like an output in ``--out`` is an input: the run is refused before work;
- ``er index add``/``remove`` while ``er index build --force`` runs on the same index: exit 2 naming the
  build's process, nothing reported as added;
- ``kill -9`` during ``er index build`` leaves ``.NAME.building-PID``: the next writer of that index removes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from er_framework.index.sqlite import PAUSE_ENV
from er_framework.io.outputs import JOURNAL, STAGE_PREFIX
from tests.engine.stages.test_writing import trained_job
from tests.hostile.conftest import run_er

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi"]


def text_of(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * (i % 5 + 1)) % len(WORDS)] + str((i + j) % 13) for j in range(25))


def write_docs(path: Path, ids: range, prefix: str = "d") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "text": text_of(i)}) + "\n" for i in ids), encoding="utf-8")
    return path


def docs_job(folder: Path, threshold: float = 0.6, extra: str = "") -> Path:
    if not (folder / "docs.jsonl").exists():
        write_docs(folder / "docs.jsonl", range(200))
    job = folder / f"job-{threshold}.yaml"
    job.write_text(
        f"""name: docs
mode: dedup
seed: 1
threshold: {threshold}
sources:
  - {{name: docs, path: docs.jsonl, id: id, fields: [text]}}
shingler: {{type: char, k: 4}}
signature: {{type: minhash, num_perm: 64}}
blockers: [{{type: lsh_bands}}]
verifier: {{type: jaccard}}
cluster: {{type: connected_components}}
diagnostics: 0
{extra}""",
        encoding="utf-8",
    )
    return job


def snapshot(folder: Path) -> dict[str, str]:
    """Every visible file of ``folder`` (er's hidden stage and journal aside) and the sha256 of its bytes."""
    files = [p for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")]
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the pause point"
        time.sleep(0.05)


# ------------------------------------------------------------------ a commit that fails halfway


def test_a_commit_failing_halfway_leaves_the_previous_outputs_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = run_er(["run", docs_job(tmp_path, 0.6), "--out", out, "-q"])
    assert ran.code == 0, ran.err
    before = snapshot(out)
    assert "candidates.csv" not in before
    marker = tmp_path / "paused"
    job = docs_job(tmp_path, 0.3, "output: {candidates: true}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "er_framework.cli.main", "run", str(job), "--out", str(out)],
        env={**os.environ, "ER_TEST_PAUSE": f"in_commit:{marker}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_for(marker, proc)  # backups kept, journal written, nothing moved yet
    (out / "candidates.csv").mkdir()  # a folder in the way of the third file the commit moves
    (out / "candidates.csv" / "mine.txt").write_text("keep\n", encoding="utf-8")
    marker.unlink()  # go on
    _, err = proc.communicate(timeout=120)
    text = err.decode()
    assert proc.returncode == 2, text
    assert "Traceback" not in text and "cannot write outputs" in text and "previous outputs were left as they were" in text, text
    assert snapshot(out) == before  # pairs.csv and clusters.csv, already moved, were put back
    assert (out / "candidates.csv" / "mine.txt").read_text(encoding="utf-8") == "keep\n"
    assert not (out / JOURNAL).exists() and not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    ran = run_er(["report", out])
    assert ran.code == 0, ran.err


# ------------------------------------------------------------------ inputs named like outputs


def test_labels_named_like_an_output_in_the_out_folder_are_refused_before_work(tmp_path: Path) -> None:
    for name in ("pairs.csv", "report.json"):
        folder = tmp_path / name
        job = trained_job(folder, f"out/{name}")
        before = (folder / "out" / name).read_bytes()
        for force in ([], ["--force"]):
            ran = run_er(["run", job, "--out", folder / "out", "-q", *force])
            ran.assert_clean_error(2, "is an input of this job (training.labels)", "choose another output folder")
            assert (folder / "out" / name).read_bytes() == before
            assert sorted(os.listdir(folder / "out")) == [name]


def test_a_model_file_named_like_an_output_in_the_out_folder_is_refused(tmp_path: Path) -> None:
    job = trained_job(tmp_path, "labels.csv")
    out = tmp_path / "out"
    ran = run_er(["run", job, "--out", out, "-q"])
    assert ran.code == 0, ran.err
    before = snapshot(out)
    ran = run_er(["run", job, "--model", out / "model.json", "--out", out, "-q"])
    ran.assert_clean_error(2, "is an input of this job (the model file")
    assert snapshot(out) == before


# ------------------------------------------------------------------ the index: one writer lock, debris


def _records(index: Path) -> int:
    ran = run_er(["index", "info", index, "--json"], timeout=120)
    assert ran.code == 0, ran.err
    return int(json.loads(ran.out)["records"])


def test_writers_during_a_rebuild_are_refused_and_a_killed_builds_debris_is_removed(tmp_path: Path) -> None:
    job = docs_job(tmp_path)
    index = tmp_path / "docs.erx"
    ran = run_er(["index", "build", job, "--index", index, "-q"])
    assert ran.code == 0, ran.err
    items = write_docs(tmp_path / "items.jsonl", range(1000, 1040), "n")
    build = subprocess.Popen(
        [sys.executable, "-m", "er_framework.cli.main", "index", "build", str(job), "--index", str(index), "--force", "-q"],
        env={**os.environ, PAUSE_ENV: "120"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert build.stderr is not None
        assert "paused before commit" in build.stderr.readline()  # the new file is written, not yet in place
        debris = tmp_path / f".docs.erx.building-{build.pid}"
        assert debris.exists()
        for args in (["index", "add", index, items], ["index", "remove", index, "d1"], ["index", "refit", index]):
            ran = run_er(args, timeout=120)
            ran.assert_clean_error(2, f"the index is being rebuilt by process {build.pid}", "nothing was written")
            assert "added" not in ran.out and "removed" not in ran.out
        ran = run_er(["index", "build", job, "--index", index, "--force", "-q"], timeout=120)
        ran.assert_clean_error(2, f"the index is being rebuilt by process {build.pid}")
    finally:
        os.kill(build.pid, signal.SIGKILL)
        build.wait()
    assert debris.exists()  # kill -9: nothing of the build ran after
    (tmp_path / f".docs.erx.building-{build.pid}-wal").write_bytes(b"x" * 1000)  # as SQLite leaves them mid-build
    (tmp_path / f".docs.erx.building-{build.pid}-shm").write_bytes(b"x" * 1000)
    assert _records(index) == 200  # the old index, whole
    ran = run_er(["index", "add", index, items], timeout=120)
    assert ran.code == 0, ran.err
    assert "added 40 records" in ran.out
    assert not [p.name for p in tmp_path.iterdir() if ".building-" in p.name]  # the next writer removed the debris
    assert _records(index) == 240
    # a killed build's debris is also removed by the next build
    (tmp_path / f".docs.erx.building-{build.pid}").write_bytes(b"x" * 1000)
    ran = run_er(["index", "build", job, "--index", index, "--force", "-q"], timeout=120)
    assert ran.code == 0, ran.err
    assert not [p.name for p in tmp_path.iterdir() if ".building-" in p.name]
    assert _records(index) == 200


def test_an_immutable_output_makes_the_commit_roll_back_to_the_previous_set(tmp_path: Path) -> None:
    """The case of the issue: one target file made immutable (chattr +i, refused even to root)."""
    out = tmp_path / "out"
    ran = run_er(["run", docs_job(tmp_path, 0.6), "--out", out, "-q"])
    assert ran.code == 0, ran.err
    before = snapshot(out)
    target = out / "report.html"  # the last file the commit moves: the others are in place by then
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(target)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available on this file system")
    try:
        ran = run_er(["run", docs_job(tmp_path, 0.3), "--out", out, "-q"])
        ran.assert_clean_error(2, "cannot write outputs", "the previous outputs were left as they were")
        assert snapshot(out) == before
        assert not (out / JOURNAL).exists() and not [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    finally:
        subprocess.run(["chattr", "-i", str(target)], check=False)
    ran = run_er(["run", docs_job(tmp_path, 0.3), "--out", out, "-q"])
    assert ran.code == 0, ran.err
    assert snapshot(out) != before
