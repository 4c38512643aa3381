"""What the er commands share (er_framework.cli.common): --workers values, the progress bar."""

from __future__ import annotations

import argparse
import io
import logging
import sys

import pytest

from er_framework.cli.common import progress_bar, workers_arg


@pytest.mark.parametrize(("text", "value"), [("auto", "auto"), ("1", 1), ("16", 16), ("1024", 1024)])
def test_workers_arg_accepts(text: str, value: int | str) -> None:
    assert workers_arg(text) == value


@pytest.mark.parametrize("text", ["0", "1025", "-2", "two", "", "1.5"])
def test_workers_arg_refuses(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected a whole number from 1 to 1024 or 'auto'"):
        workers_arg(text)


def test_no_progress_bar_when_quiet() -> None:
    update, close = progress_bar(True)
    assert update is None
    close()


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_the_progress_line_is_shown_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.engine.log import Progress, ProgressLine

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_bar(False)[0] is None  # not a terminal: nothing (-v prints the records there)
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    update, close = progress_bar(False)
    assert isinstance(update, ProgressLine)
    update(Progress("read", 0, None, 0.0, "start"))
    close()
    assert term.getvalue().startswith("\rer: [1] read: started") and term.getvalue().endswith("\r")
    logger = logging.getLogger("er_framework")
    logger.setLevel(logging.INFO)
    try:
        assert progress_bar(False)[0] is None  # -v: the records say it, one line each
    finally:
        logger.setLevel(logging.NOTSET)


def test_log_level(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.cli.common import log_level
    from er_framework.errors import InputError

    monkeypatch.delenv("ER_LOG_LEVEL", raising=False)
    assert log_level(0) is None and log_level(1) == logging.INFO and log_level(2) == log_level(3) == logging.DEBUG
    for text, level in (("debug", logging.DEBUG), (" WARNING ", logging.WARNING), ("15", 15), ("", None)):
        monkeypatch.setenv("ER_LOG_LEVEL", text)
        assert log_level(0) == level, text
    assert log_level(1) == logging.INFO  # -v wins
    monkeypatch.setenv("ER_LOG_LEVEL", "chatty")
    with pytest.raises(InputError, match="'chatty' is not a log level"):
        log_level(0)


def test_stderr_logging_stamps_records_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.cli.common import stderr_logging

    for stream, stamped in ((io.StringIO(), True), (Terminal(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        with stderr_logging(logging.INFO):
            logging.getLogger("er_framework.stages").info("stage x started")
            logging.getLogger("er_framework.stages").debug("hidden")
        logging.getLogger("er_framework.stages").warning("after: not here")
        text = stream.getvalue()
        assert text.endswith("INFO er: stage x started\n" if stamped else "stage x started\n")
        assert text.startswith("er: stage x started") != stamped
        assert "hidden" not in text and "after" not in text


def test_terminal_text_escapes_control_characters() -> None:
    from er_framework.cli.common import terminal_text

    assert terminal_text("a\x1b[31mred\r\nb\tc\x07\x9b\u202e") == "a\\x1b[31mred\\x0d\nb\tc\\x07\\x9b\\u202e"
    assert terminal_text("plain é ü 名前") == "plain é ü 名前"


def test_json_terminal_text_keeps_the_json() -> None:
    import json

    from er_framework.cli.common import json_terminal_text

    value = {"name": "Ørsted\x1b[2J\x85\u202eend", "n": 1}
    text = json_terminal_text(json.dumps(value, ensure_ascii=False))
    assert "\x1b" not in text and "\x85" not in text and "\u202e" not in text
    assert json.loads(text) == value
    assert "Ørsted" in text


def test_say_escapes_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    from er_framework.cli.common import say

    say("a\x1b]0;title\x07b\tc")
    assert capsys.readouterr().out == "a\\x1b]0;title\\x07b\tc\n"
