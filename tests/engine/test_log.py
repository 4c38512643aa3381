"""er_framework.engine.log: the stage log tells the progress callback and the ``er_framework`` logger at every stage's
start and end and at batch boundaries; the progress line rewrites one line."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest

import er_framework as er
from er_framework.engine.log import LOGGER_NAME, Progress, ProgressLine, StageLog, stage_counts

ROOT = Path(__file__).resolve().parents[2]


def test_a_stage_tells_its_start_and_end() -> None:
    got: list[Progress] = []
    log = StageLog(progress=got.append)
    with log.stage("read") as info:
        log.batch(1, 2)
        log.batch(2, 2)
        info["records"] = 7
    assert [(p.stage, p.event, p.done, p.total) for p in got] == [
        ("read", "start", 0, None),
        ("read", "batch", 1, 2),
        ("read", "batch", 2, 2),
        ("read", "end", 1, 1),
    ]
    assert got[-1].seconds == pytest.approx(log.stages[0]["seconds"], abs=0.01)
    assert log.stages[0]["records"] == 7


def test_a_batch_outside_a_stage_is_not_told() -> None:
    got: list[Progress] = []
    log = StageLog(progress=got.append)
    log.batch(1, 3)
    with log.stage("x"):
        pass
    log.batch(1, 3)
    assert [p.event for p in got] == ["start", "end"]


def test_interleaved_stages_are_told_once_and_logged_each() -> None:
    got: list[Progress] = []
    log = StageLog(progress=got.append)
    with log.interleaved(["shingle", "signatures"]) as timer:
        with timer("shingle"):
            pass
        log.batch(1, None)
        with timer("signatures"):
            pass
    assert [(p.stage, p.event) for p in got] == [
        ("shingle+signatures", "start"),
        ("shingle+signatures", "batch"),
        ("shingle+signatures", "end"),
    ]
    assert [s["stage"] for s in log.stages] == ["shingle", "signatures"]


def test_log_records_have_the_counts_seconds_and_memory(caplog: pytest.LogCaptureFixture) -> None:
    log = StageLog()
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME), log.stage("block") as info:
        log.batch(3, 4)
        info["candidate_pairs"] = 12345
        info["enabled"] = True  # not a count
    messages = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert messages[0] == ("er_framework.stages", "INFO", "stage block started")
    assert messages[1][1] == "DEBUG" and messages[1][2].startswith("stage block: 3 of 4 batches, ")
    assert messages[2][1] == "INFO"
    end = messages[2][2]
    assert end.startswith("stage block done in ") and " s, peak memory " in end and " MB" in end
    assert end.endswith(", candidate_pairs=12,345")


def test_a_failed_stage_is_logged_and_raises(caplog: pytest.LogCaptureFixture) -> None:
    got: list[Progress] = []
    log = StageLog(progress=got.append)
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME), pytest.raises(KeyError), log.stage("verify"):
        raise KeyError("x")
    assert [p.event for p in got] == ["start"]
    assert "stage verify stopped after" in caplog.records[-1].getMessage()
    assert "KeyError" in caplog.records[-1].getMessage()
    assert log.stages == [] and log.current is None


def test_stage_counts() -> None:
    assert stage_counts({"stage": "x", "records": 1000, "ok": False, "share": 0.5}) == ", records=1,000"
    assert stage_counts({"stage": "x"}) == ""


def test_progress_texts() -> None:
    assert str(Progress("read", 0, None, 0.0, "start")) == "read: started"
    assert str(Progress("read", 3, 4, 1.25)) == "read: 3/4 (75%), 1.2 s"
    assert str(Progress("read", 3, None, 1.0)) == "read: 3 done, 1.0 s"
    assert str(Progress("read", 1, 1, 2.0, "end")) == "read: done in 2.0 s"


def test_the_progress_line_rewrites_one_line_and_erases_it() -> None:
    out = io.StringIO()
    line = ProgressLine(out, width=60, interval=0.0)
    line(Progress("normalize", 0, None, 0.0, "start"))
    line(Progress("normalize", 1, 1, 0.5, "end"))
    line(Progress("block", 0, None, 0.0, "start"))
    text = out.getvalue()
    assert "\n" not in text
    shown = text.split("\r")[1:]
    assert shown[0] == "er: [1] normalize: started"
    assert shown[1] == "er: [1] normalize: done in 0.5 s"
    # a shorter line pads over what the longer one left on screen
    assert shown[2] == "er: [2] block: started" + " " * (len(shown[1]) - len("er: [2] block: started"))
    line.close()
    assert out.getvalue().endswith("\r" + " " * len(shown[2].rstrip()) + "\r")


def test_the_progress_line_of_a_notebook_stays_with_a_newline() -> None:
    out = io.StringIO()
    line = ProgressLine(out, keep=True, width=200)
    line(Progress("read", 0, None, 0.0, "start"))
    line.close()
    last = out.getvalue().split("\r")[-1]
    assert last.startswith("er: 1 stages done in ") and last.endswith(" s\n")
    line.close()  # twice: nothing more
    assert out.getvalue().count("\n") == 1


def test_the_progress_line_is_cut_to_the_width_and_skips_frequent_batches() -> None:
    out = io.StringIO()
    line = ProgressLine(out, width=20, interval=60.0)
    line(Progress("a_very_long_stage_name_indeed", 0, None, 0.0, "start"))
    line(Progress("a_very_long_stage_name_indeed", 1, 9, 0.1))  # within the interval: skipped
    line(Progress("a_very_long_stage_name_indeed", 9, 9, 0.2))  # the last batch: shown
    parts = out.getvalue().split("\r")[1:]
    assert len(parts) == 2 and all(len(p) == 20 for p in parts)


def test_nothing_is_told_without_a_callback_or_a_handler() -> None:
    """Library use: the package's logger has a NullHandler only, and a run prints nothing on stderr."""
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger(LOGGER_NAME).handlers)
    code = "import er_framework as er\ner.run('configs/documents.yaml')\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "" and out.stdout == ""


def test_the_local_executor_tells_every_stage_in_order() -> None:
    got: list[Progress] = []
    result = er.run(ROOT / "configs" / "documents.yaml", progress=got.append)
    starts = [p.stage for p in got if p.event == "start"]
    ends = [p.stage for p in got if p.event == "end"]
    assert starts == ends
    logged = [s["stage"] for s in result.report["stages"]]
    assert [name for s in starts for name in s.split("+")] == logged
    # the shingle step loop is a batch boundary
    batches = [p for p in got if p.event == "batch"]
    assert batches and batches[-1].stage == "shingle+signatures" and batches[-1].done == batches[-1].total
    # every value is told between its stage's start and end
    open_stage = None
    for p in got:
        if p.event == "start":
            assert open_stage is None
            open_stage = p.stage
        else:
            assert p.stage == open_stage
            if p.event == "end":
                open_stage = None
