"""Hostile environments (issue 31): a full disk, a read-only folder, too many open files, a file size limit,
a closed or non-UTF-8 standard output, a tampered report.json, a job naming another file, absurd thresholds,
control characters in record values, ``er synth`` over a user's files. Whole ``er`` processes.

Every case: exit 2 with what, where and the fix (never exit 1 "internal error"), no traceback, no file
contents echoed, and no file changed that er did not create.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest


def _hostile_conftest() -> Any:
    """tests/hostile/conftest.py by its path (another folder's ``conftest`` may hold that module name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hostile_conftest", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


_conftest = _hostile_conftest()
TRACEBACK: str = _conftest.TRACEBACK
Ran = _conftest.Ran
run_er = _conftest.run_er

#: a marker that must never reach er's output (it stands for a secret in a file er was pointed at)
SECRET = "s3cr3t-MARKER-4711"

#: names with characters an ASCII terminal cannot show, one with an escape sequence (ESC [ 2 J clears the screen)
NAMES = ["José García", "Zoë Brontë", "Łukasz Żółw", "Renée Ça", "Mañana Ñú", "Ørsted Å\x1b[2Jx"]

JOB = """\
name: people
mode: dedup
seed: 3
sources: [{name: s, path: people.csv, id: id, fields: [name, city]}]
blockers: [{type: field_hash, fields: [city]}]
verifier: {type: fellegi_sunter, threshold: 0.5, fields: [{field: name, comparison: jaro_winkler, levels: [100, 90, 80]}]}
cluster: {type: connected_components}
"""


def people(folder: Path) -> Path:
    """A small job over names with accents and one escape sequence; returns the job file."""
    rows = ["id,name,city"]
    n = 0
    for name in NAMES:
        for k in range(3):
            n += 1
            rows.append(f'{n},"{name if k == 0 else name[:-1] + "xyz"[k]}",Kraków')
    (folder / "people.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    job = folder / "job.yaml"
    job.write_text(JOB, encoding="utf-8")
    return job


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of :func:`people` (its folder holds job.yaml, people.csv and out/)."""
    folder = tmp_path_factory.mktemp("env")
    job = people(folder)
    ran = run_er(["run", str(job), "--out", str(folder / "out"), "-q"], cwd=folder)
    assert ran.code == 0, ran.err
    return folder


def copy_run(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of the run's folder (the job, its data, out/) to tamper with."""
    dest = tmp_path / "run"
    shutil.copytree(run_dir, dest)
    return dest


def run_limited(
    args: list[str],
    cwd: Path,
    *,
    limits: Mapping[int, int] | None = None,
    close_stdout: bool = False,
    env: Mapping[str, str] | None = None,
) -> Ran:
    """``er ARGS`` in a process with resource limits (``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``) and optionally
    descriptor 1 closed; the limits are set in the child only."""

    def child() -> None:
        for res, n in (limits or {}).items():
            resource.setrlimit(res, (n, n))
        if close_stdout:
            os.close(1)

    full_env = {**os.environ, **(env or {})}
    full_env.pop("ER_DEBUG", None)
    res = subprocess.run(
        [sys.executable, "-m", "er_framework.cli.main", *args],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=None if close_stdout else subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=child,
        timeout=300,
    )
    out = res.stdout.decode("utf-8", "replace") if res.stdout is not None else ""
    return Ran(res.returncode, out, res.stderr.decode("utf-8", "replace"), 0.0)


def no_internal_error(ran: Ran) -> None:
    assert TRACEBACK not in ran.err and "internal error" not in ran.err, ran.err
    assert ran.code == 2, (ran.code, ran.out, ran.err)


# --------------------------------------------------------------------------
# a full disk, a file size limit, too many open files, a read-only folder
# --------------------------------------------------------------------------

FSIZE = resource.RLIMIT_FSIZE
NOFILE = resource.RLIMIT_NOFILE


@pytest.mark.parametrize(
    "verb",
    [
        ["run", "job.yaml", "--out", "big", "-q"],
        ["synth", "customers", "--n", "300", "--out", "synth"],
        ["index", "build", "job.yaml", "--index", "idx.er"],
        ["synth", "news", "--pages", "20", "--out", "news"],
    ],
    ids=lambda v: " ".join(v[:2]),
)
def test_a_file_size_limit_is_a_message(run_dir: Path, tmp_path: Path, verb: list[str]) -> None:
    folder = copy_run(run_dir, tmp_path)
    ran = run_limited(verb, folder, limits={FSIZE: 1500})
    no_internal_error(ran)
    assert "file too large" in ran.err.lower() or "index database" in ran.err, ran.err
    assert "fix:" in ran.err


@pytest.mark.parametrize(
    "verb",
    [["run", "job.yaml", "--out", "again", "-q"], ["index", "build", "job.yaml", "--index", "idx.er"]],
    ids=lambda v: " ".join(v[:2]),
)
def test_too_many_open_files_is_a_message(run_dir: Path, tmp_path: Path, verb: list[str]) -> None:
    folder = copy_run(run_dir, tmp_path)
    ran = run_limited(verb, folder, limits={NOFILE: 5})
    if ran.code == 0:  # pragma: no cover - an interpreter that opens fewer files reaches the end
        pytest.skip("the command needed fewer than 5 descriptors here")
    no_internal_error(ran)
    assert "too many open files" in ran.err.lower() or "ulimit -n" in ran.err, ran.err


@contextlib.contextmanager
def tmpfs(where: Path, size: str, *, read_only: bool = False) -> Iterator[Path]:
    """A small tmpfs mounted at ``where`` (skips the test where mounting is not allowed)."""
    where.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount permission)")
    try:
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, capture_output=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_read_only_folder_is_a_message(run_dir: Path, tmp_path: Path) -> None:
    folder = copy_run(run_dir, tmp_path)
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro:
        for verb in (
            ["run", "job.yaml", "--out", str(ro / "out"), "-q"],
            ["synth", "customers", "--n", "20", "--out", str(ro)],
            ["review", "out", "--labels", str(ro / "labels.csv")],
            ["index", "build", "job.yaml", "--index", str(ro / "idx.er")],
        ):
            ran = run_er(verb, cwd=folder)
            no_internal_error(ran)
            assert "read-only" in ran.err.lower() or "index database" in ran.err, (verb, ran.err)


def test_a_full_disk_is_a_message(run_dir: Path, tmp_path: Path) -> None:
    folder = copy_run(run_dir, tmp_path)
    with tmpfs(tmp_path / "full", "16k") as full:
        for verb in (
            ["synth", "customers", "--n", "2000", "--out", str(full)],
            ["run", "job.yaml", "--out", str(full / "o"), "-q"],
            ["index", "build", "job.yaml", "--index", str(full / "idx.er")],
        ):
            ran = run_er(verb, cwd=folder)
            if ran.code == 0:  # the run's outputs fit in 16 KB
                continue
            no_internal_error(ran)
            assert "no space left" in ran.err.lower() or "free space" in ran.err.lower(), (verb, ran.err)
            if verb[0] == "run":  # the file being written is named (a write() on a full disk names none itself)
                assert any(name in ran.err for name in ("pairs.csv", "clusters.csv", "report.json", "report.html", "model.json")), ran.err


# --------------------------------------------------------------------------
# standard output: closed, not UTF-8
# --------------------------------------------------------------------------


@pytest.mark.parametrize("verb", [["review", "out", "--labels", "l.csv"], ["schema"], ["run", "job.yaml", "--out", "o2", "-q"]])
def test_a_closed_stdout_is_a_message(run_dir: Path, tmp_path: Path, verb: list[str]) -> None:
    folder = copy_run(run_dir, tmp_path)
    ran = run_limited(verb, folder, close_stdout=True)
    no_internal_error(ran)
    assert "standard output is closed" in ran.err
    assert not (folder / "l.csv").exists() and not (folder / "o2").exists()  # refused before any work


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": ""}])
def test_stdout_that_cannot_encode_the_names(run_dir: Path, tmp_path: Path, env: dict[str, str]) -> None:
    folder = copy_run(run_dir, tmp_path)
    ran = run_er(["review", "out", "--labels", "l.csv"], cwd=folder, env=env)
    assert ran.code == 0, ran.err
    assert "Jos\\xe9" in ran.out or "José" in ran.out
    ran = run_er(["explain", "out", "--left", "1", "--right", "2"], cwd=folder, env=env)
    assert ran.code == 0, ran.err
    assert "Jos\\xe9" in ran.out or "José" in ran.out


def test_control_characters_in_values_are_escaped(run_dir: Path, tmp_path: Path) -> None:
    folder = copy_run(run_dir, tmp_path)
    ran = run_er(["explain", "out", "--left", "16", "--right", "17"], cwd=folder)
    assert ran.code == 0, ran.err
    assert "\x1b" not in ran.out and "\\x1b[2J" in ran.out
    ran = run_er(["explain", "out", "--left", "16", "--right", "17", "--json"], cwd=folder)
    assert ran.code == 0 and "\x1b" not in ran.out
    assert "Ørsted Å\x1b[2Jx" in strings(json.loads(ran.out))  # the JSON still holds the value


def strings(doc: Any) -> set[str]:
    """Every string in a JSON document."""
    if isinstance(doc, str):
        return {doc}
    if isinstance(doc, dict):
        return set().union(*(strings(v) for v in doc.values()), set())
    if isinstance(doc, list):
        return set().union(*(strings(v) for v in doc), set())
    return set()


# --------------------------------------------------------------------------
# a tampered or foreign report.json
# --------------------------------------------------------------------------


def tamper(report: dict[str, Any], how: str, secret: Path) -> Any:
    if how == "list":
        return [1, 2]
    if how == "string":
        return "report"
    if how == "threshold is text":
        return {**report, "threshold": "x"}
    if how == "threshold value is text":
        return {**report, "threshold": {"value": "x"}}
    if how == "sources is a number":
        return {**report, "sources": 5}
    if how == "review is a number":
        return {**report, "review": 3}
    if how == "clusters is text":
        return {**report, "clusters": "a"}
    if how == "huge number":
        return {**report, "seed": 10**400}
    if how == "infinite threshold":
        return {**report, "threshold": {"value": 1e400}}
    if how == "review pairs are null":
        return {**report, "review": {"threshold": 0.5, "above": None, "below": None}}
    if how == "per_field is text":
        return {**report, "verifier": {**report["verifier"], "per_field": "x"}}
    if how == "config is another file":
        return {**report, "config": str(secret), "config_resolved": None}
    if how == "config is the environment":
        return {**report, "config": "/proc/self/environ", "config_resolved": None}
    raise AssertionError(how)


TAMPERED = [
    "list",
    "string",
    "threshold is text",
    "threshold value is text",
    "sources is a number",
    "review is a number",
    "clusters is text",
    "huge number",
    "infinite threshold",
    "review pairs are null",
    "per_field is text",
    "config is another file",
    "config is the environment",
]

VERBS = {
    "explain": ["explain", "out", "--left", "1", "--right", "2"],
    "review": ["review", "out", "--labels", "l.csv"],
    "report": ["report", "out"],
}


@pytest.mark.parametrize("how", TAMPERED)
def test_a_tampered_report_is_a_message(run_dir: Path, tmp_path: Path, how: str) -> None:
    folder = copy_run(run_dir, tmp_path)
    secret = folder / "secret.txt"
    secret.write_text(f"root:{SECRET}:20228:0:99999:7:::\n", encoding="utf-8")
    report = json.loads((folder / "out" / "report.json").read_text(encoding="utf-8"))
    (folder / "out" / "report.json").write_text(json.dumps(tamper(report, how, secret)), encoding="utf-8")
    for name, verb in VERBS.items():
        ran = run_er(verb, cwd=folder, env={"ER_TEST_SECRET": SECRET})
        no_internal_error(ran)
        assert SECRET not in ran.err and SECRET not in ran.out, (name, ran.err)
        assert "not a report er wrote" in ran.err or "not an er job file" in ran.err, (name, ran.err)
    assert not (folder / "l.csv").exists()


def test_a_non_yaml_job_is_not_quoted(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(f"root:{SECRET}:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n", encoding="utf-8")
    for verb in (["run", str(secret), "--out", str(tmp_path / "o")], ["validate", str(secret)]):
        ran = run_er(verb, cwd=tmp_path)
        no_internal_error(ran)
        assert SECRET not in ran.err and SECRET not in ran.out, ran.err
        assert "not an er job file" in ran.err


# --------------------------------------------------------------------------
# absurd thresholds: refused by er validate and before any work by er run
# --------------------------------------------------------------------------

LSH_JOB = """\
name: docs
mode: dedup
threshold: {t}
sources: [{{name: docs, path: docs.jsonl, id: id, fields: [text]}}]
shingler: {{type: char, k: 4}}
signature: {{type: minhash, num_perm: 64}}
blockers: [{{type: lsh_bands}}]
verifier: {{type: jaccard}}
"""


@pytest.mark.parametrize(
    ("job", "t", "needle"),
    [
        ("lsh", "0.000001", "too low for lsh banding"),
        ("lsh", "1.0e-6", "too low for lsh banding"),
        ("lsh", "1e-6", "1.0e-6"),
        ("lsh", ".nan", "finite"),
        ("lsh", ".inf", "threshold"),
        ("lsh", "0", "above 0"),
        ("lsh", "-0.5", "above 0"),
        ("lsh", "1.5", "at most 1"),
        ("fs", ".nan", "finite"),
        ("fs", "0", "greater than 0"),
    ],
)
def test_an_absurd_threshold_is_refused_before_work(tmp_path: Path, job: str, t: str, needle: str) -> None:
    rows = [{"id": i, "text": f"document number {i} about {i % 7}"} for i in range(40)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if job == "lsh":
        text = LSH_JOB.format(t=t)
    else:
        people(tmp_path)
        text = JOB.replace("threshold: 0.5", f"threshold: {t}")
    (tmp_path / "t.yaml").write_text(text, encoding="utf-8")
    for verb in (["validate", "t.yaml"], ["run", "t.yaml", "--out", "o", "-q"]):
        ran = run_er(verb, cwd=tmp_path)
        no_internal_error(ran)
        assert needle in ran.err.lower() or needle in ran.err, ran.err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------
# er synth --out DIR over the user's files
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "verb",
    [
        ["synth", "customers", "--n", "30"],
        ["synth", "persons", "--n", "30", "--duplicates", "3"],
        ["synth", "persons", "--n", "30", "--duplicates", "3", "--format", "parquet"],
        ["synth", "inventors", "--n", "30"],
        ["synth", "fingerprints", "--fingers", "3"],
        ["synth", "news", "--pages", "4"],
    ],
    ids=lambda v: " ".join(v[1:2] + v[-1:]),
)
def test_synth_never_overwrites_a_users_file(tmp_path: Path, verb: list[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "truth.csv"
    mine.write_text("my,own\n1,2\n", encoding="utf-8")
    ran = run_er([*verb, "--out", str(out)])
    no_internal_error(ran)
    assert "did not write" in ran.err
    assert mine.read_text(encoding="utf-8") == "my,own\n1,2\n"
    assert sorted(p.name for p in out.iterdir()) == ["truth.csv"]  # nothing else written either
    mine.unlink()
    for _ in range(2):  # into a new folder, then again over its own files
        ran = run_er([*verb, "--out", str(out), *(["--force"] if "news" in verb and out.joinpath("pages").exists() else [])])
        assert ran.code == 0, ran.err


def test_synth_news_force_leaves_a_users_page(tmp_path: Path) -> None:
    out = tmp_path / "out"
    page = out / "pages" / "mine" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><body>my page</body></html>\n", encoding="utf-8")
    ran = run_er(["synth", "news", "--pages", "4", "--out", str(out), "--force"])
    no_internal_error(ran)
    assert page.read_text(encoding="utf-8") == "<html><body>my page</body></html>\n"
    assert not (out / "truth.csv").exists()


@pytest.mark.parametrize("verb", [["review", "out", "--labels", "l.csv"], ["schema"], ["explain", "out", "--left", "1", "--right", "2"]])
def test_a_reader_that_stops_early_is_not_an_error(run_dir: Path, tmp_path: Path, verb: list[str]) -> None:
    folder = copy_run(run_dir, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "ER_DEBUG"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "er_framework.cli.main", *verb], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # er ... | head -1
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    assert proc.wait(timeout=300) == 0, err
    assert "internal error" not in err and TRACEBACK not in err
