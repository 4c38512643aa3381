"""Issue 31, labels files: ``er review OUT --labels PATH`` writes only a labels file it may write, in a form a
spreadsheet neither mangles nor runs; ``training: {labels: FILE}`` reads what a spreadsheet saves, refuses
what is not a labels file without quoting it, refuses contradicting labels before the work, and says so when
the labels are too few.

Every case runs the real ``er`` process on a copy of the shipped customers job whose ids start with the
characters a spreadsheet runs as a formula (``=``, ``-``, ``@``, ``+``) and whose addresses hold terminal
escape sequences.
"""

from __future__ import annotations

import csv
import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import run_er

ROOT = Path(__file__).resolve().parents[2]
TRACEBACK = "Traceback (most recent call last)"
DATA = ROOT / "configs" / "data" / "customers"
PREFIX = ("", "=", "-", "@", "+")
#: an escape sequence that would retitle the terminal window, and one that clears the screen
ESCAPES = "\x1b]0;pwned\x07\x1b[2J"


def hostile_id(old: str) -> str:
    return PREFIX[int(old[1:]) % len(PREFIX)] + old


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_job(folder: Path, extra: str = "") -> Path:
    """The customers job in ``folder``, its ids made formula-like and its addresses holding escapes."""
    data = folder / "data"
    if not data.exists():
        data.mkdir(parents=True)
        for name in ("a.csv", "b.csv"):
            with (DATA / name).open(encoding="utf-8", newline="") as src, (data / name).open("w", encoding="utf-8", newline="") as dst:
                rows = list(csv.DictReader(src))
                w = csv.DictWriter(dst, fieldnames=list(rows[0]))
                w.writeheader()
                for r in rows:
                    w.writerow({**r, "id": hostile_id(r["id"]), "address": r["address"] + ESCAPES})
        with (
            (DATA / "truth.csv").open(encoding="utf-8", newline="") as src,
            (data / "truth.csv").open("w", encoding="utf-8", newline="") as dst,
        ):
            w = csv.writer(dst)
            w.writerow(["a_id", "b_id"])
            for r in csv.DictReader(src):
                w.writerow([hostile_id(r["a_id"]), hostile_id(r["b_id"])])
    text = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8")
    text = text.replace("path: data/customers/", "path: data/").replace("dir: ../out/customers", "dir: out")
    job = folder / "job.yaml"
    job.write_text(text + extra, encoding="utf-8")
    return job


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the hostile customers job: the folder holding job.yaml, data/ and out/."""
    folder = tmp_path_factory.mktemp("labels")
    job = make_job(folder)
    ran = run_er(["run", job, "--out", folder / "out", "-q"])
    assert ran.code == 0, ran.err
    return folder


def labels_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def review(run: Path, labels: Path | str, *more: str, env: dict[str, str] | None = None) -> object:
    return run_er(["review", run / "out", "--labels", labels, *more], cwd=run, env=env)


def test_a_device_or_fifo_is_refused_and_stays_what_it_was(run: Path, tmp_path: Path) -> None:
    # a private node of the null device, not /dev/null itself: a regression must not break the machine
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:  # not root: no device node to test with (the FIFO below is refused the same way)
        device = Path("")
    if device.name:
        ran = review(run, device)
        ran.assert_clean_error(2, "character device", "not a regular file")  # type: ignore[attr-defined]
        assert stat.S_ISCHR(os.stat(device).st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    ran = review(run, fifo)
    ran.assert_clean_error(2, "FIFO")  # type: ignore[attr-defined]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("target", ["data/a.csv", "data/b.csv", "job.yaml"])
def test_the_jobs_data_and_yaml_are_refused_and_unchanged(run: Path, target: str) -> None:
    before = digest(run / target)
    ran = review(run, run / target)
    ran.assert_clean_error(2, "an input of the job")  # type: ignore[attr-defined]
    assert digest(run / target) == before
    assert not [p for p in (run / target).parent.iterdir() if ".er-tmp-" in p.name]


def evaluate(run: Path) -> str:
    ran = run_er(["evaluate", run / "out", "--truth", run / "data" / "truth.csv"], cwd=run)
    assert ran.code == 0, ran.err
    return ran.out


@pytest.mark.parametrize("target", ["report.json", "pairs.csv", "clusters.csv", "model.json"])
def test_the_runs_outputs_are_refused_and_evaluate_is_unchanged(run: Path, target: str) -> None:
    scores = evaluate(run)
    before = digest(run / "out" / target)
    ran = review(run, run / "out" / target)
    ran.assert_clean_error(2, "output")  # type: ignore[attr-defined]
    assert digest(run / "out" / target) == before
    assert evaluate(run) == scores


def test_a_file_that_is_not_a_labels_file_is_refused_unquoted(run: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.csv"
    notes.write_text("name,password\nalice,xyz123\n", encoding="utf-8")
    ran = review(run, notes)
    ran.assert_clean_error(2, "not a labels file")  # type: ignore[attr-defined]
    assert "xyz123" not in ran.out + ran.err  # type: ignore[attr-defined]
    assert notes.read_text(encoding="utf-8") == "name,password\nalice,xyz123\n"


def test_formula_like_ids_are_escaped_and_values_reach_the_terminal_escaped(run: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    ran = review(run, labels)
    assert ran.code == 0, ran.err  # type: ignore[attr-defined]
    out = ran.out  # type: ignore[attr-defined]
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;pwned\\x07" in out
    raw = labels.read_text(encoding="utf-8")
    cells = [c for line in raw.splitlines()[1:] for c in next(csv.reader([line]))]
    ids = [c for c in cells if c[:1] in "AB'"]
    assert any(c.startswith("'") for c in ids)  # the data has formula-like ids: they are in the file, escaped
    for line in raw.splitlines()[1:]:
        for cell in line.split(","):
            # nothing a spreadsheet evaluates: every cell starting with a formula character is quoted and escaped
            assert not cell.startswith(("=", "+", "-", "@")), line
            if cell.startswith("\"'"):
                assert cell[2] in "=+-@", cell
    # the escaped ids are the data's: training reads them back
    got = labels_rows(labels)
    originals = {r["id"] for name in ("a.csv", "b.csv") for r in labels_rows(run / "data" / name)}
    assert all(r["left_id"].lstrip("'") in originals or r["left_id"] in originals for r in got)


def label_from_truth(run: Path, labels: Path) -> list[dict[str, str]]:
    truth = {(r["a_id"], r["b_id"]) for r in labels_rows(run / "data" / "truth.csv")}
    rows = []
    with labels.open(encoding="utf-8", newline="") as fh:
        for r in csv.DictReader(fh):
            ids = (r["left_id"][1:] if r["left_id"][:2] in ("'=", "'-", "'@", "'+") else r["left_id"],
                   r["right_id"][1:] if r["right_id"][:2] in ("'=", "'-", "'@", "'+") else r["right_id"])  # fmt: skip
            rows.append({**r, "match": "1" if ids in truth or ids[::-1] in truth else "0"})
    return rows


def test_a_spreadsheet_saved_labels_file_round_trips_and_trains(run: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    assert review(run, labels).code == 0  # type: ignore[attr-defined]
    rows = label_from_truth(run, labels)
    assert {r["match"] for r in rows} == {"0", "1"}
    # as a spreadsheet in a decimal-comma locale saves it: BOM, ';', CRLF, a column of notes, and a row the
    # user added by hand whose id holds a line end (the escapes a spreadsheet keeps as they are)
    header = [*rows[0], "note"]
    lines = [";".join(header)]
    for r in rows:
        lines.append(";".join([*(f'"{v}"' if v.startswith("'") else v for v in r.values()), "checked"]))
    lines.append('A;"x\ry";B;other' + ";" * (len(header) - 4) + "hand made")
    (labels).write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8"))
    before = labels.read_bytes()
    ran = review(run, labels)
    assert ran.code == 0, ran.err  # type: ignore[attr-defined]
    assert "20 new pairs (41 in the file)" in ran.out  # type: ignore[attr-defined]
    assert labels.read_bytes().startswith(before)  # same rows, labels, notes and dialect; a new round after them
    # and training reads it: the hand-made row has no label and is skipped
    job = make_job(run, f"\ntraining: {{labels: {labels}}}\n")
    try:
        ran = run_er(["run", job, "--out", tmp_path / "trained", "-q"], cwd=run)
    finally:
        make_job(run)
    assert ran.code == 0, ran.err
    report = (tmp_path / "trained" / "report.json").read_text(encoding="utf-8")
    assert '"unlabelled_rows": 21' in report


@pytest.mark.parametrize("where", ["/proc/self/environ", "/etc/shadow", "shadow-like"])
def test_a_labels_path_to_another_file_is_never_echoed(run: Path, tmp_path: Path, where: str) -> None:
    if where == "shadow-like":
        where = str(tmp_path / "shadow")
        Path(where).write_text("root:$6$xyz123$abc:19000:0:99999:7:::\n", encoding="utf-8")
    elif not os.access(where, os.R_OK):
        pytest.skip(f"{where} is not readable here")
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "data").symlink_to(run / "data")
    job = make_job(folder, f"\ntraining: {{labels: {where}}}\n")
    ran = run_er(["run", job, "--out", tmp_path / "out", "-q"], env={"SECRET": "xyz123"})
    ran.assert_clean_error(2, "is not a labels file")
    assert "xyz123" not in ran.out + ran.err
    head = Path(where).read_bytes()[:40].decode("utf-8", "replace")
    assert not any(len(part) > 4 and part in ran.err for part in head.replace("\x00", ":").split(":"))
    assert not (tmp_path / "out").exists()


def test_a_pair_labelled_both_ways_is_refused_before_the_work(run: Path, tmp_path: Path) -> None:
    truth = [(r["a_id"], r["b_id"]) for r in labels_rows(run / "data" / "truth.csv")]
    (a, b), (c, d) = truth[0], truth[1]
    labels = tmp_path / "labels.csv"
    with labels.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        w.writerows([["A", a, "B", b, "1"], ["A", c, "B", d, "0"], ["B", b, "A", a, "0"]])
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "data").symlink_to(run / "data")
    job = make_job(folder, f"\ntraining: {{labels: {labels}}}\n")
    ran = run_er(["run", job, "--out", tmp_path / "out"])
    ran.assert_clean_error(2, "labels.csv:4", "labels.csv:2", "labelled a non-match here and a match")
    assert "internal error" not in ran.err
    assert not (tmp_path / "out").exists()


def test_too_few_labels_are_loud(run: Path, tmp_path: Path) -> None:
    truth = [(r["a_id"], r["b_id"]) for r in labels_rows(run / "data" / "truth.csv")]
    (a, b), (_, d) = truth[0], truth[1]
    labels = tmp_path / "labels.csv"
    with labels.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["left_source", "left_id", "right_source", "right_id", "match"])
        w.writerows([["A", a, "B", b, "1"], ["A", a, "B", d, "0"]])
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "data").symlink_to(run / "data")
    job = make_job(folder, f"\ntraining: {{labels: {labels}}}\n")
    text = job.read_text(encoding="utf-8").replace("type: fellegi_sunter ", "type: fellegi_sunter\n  labels_fit: labels\n ")
    job.write_text(text, encoding="utf-8")
    ran = run_er(["run", job, "--out", tmp_path / "out", "-q"])
    assert ran.code == 0, ran.err
    assert "trained from 1 labelled matches and 1 labelled non-matches" in ran.err
    assert '"few_labels"' in (tmp_path / "out" / "report.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_review_into_a_closed_pipe_writes_the_labels_and_exits_0(run: Path, tmp_path: Path, reader: str) -> None:
    labels = tmp_path / "labels.csv"
    command = f"{sys.executable} -m er_framework.cli.main review out --labels {labels} | {reader}; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", command], cwd=run, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert TRACEBACK not in done.stderr and "internal error" not in done.stderr
    assert len(labels_rows(labels)) == 20
    if reader == "head -1":
        assert done.stdout.startswith("round 1: ")
