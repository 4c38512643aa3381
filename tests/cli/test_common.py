"""What the er commands share (er_framework.cli.common): --workers values, the progress bar."""

from __future__ import annotations

import argparse

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
