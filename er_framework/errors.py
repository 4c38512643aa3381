"""User-facing errors: every problem says where, what, what was expected and a fix.

The CLI catches :class:`ErError`, prints every problem and exits with code 2;
a user never sees a traceback for bad configuration or bad input.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config or an input.

    ``where`` is a file (optionally ``file:line``), ``path`` the YAML path or
    the row/column, ``message`` what is wrong (with the bad value and what was
    expected) and ``fix`` how to fix it.
    """

    where: str
    message: str
    path: str = ""
    fix: str = ""

    def __str__(self) -> str:
        loc = self.where
        if self.path:
            loc = f"{loc}: {self.path}" if loc else self.path
        text = f"{loc}: {self.message}" if loc else self.message
        if self.fix:
            text += f"\n    fix: {self.fix}"
        return text


class ErError(Exception):
    """Base of the errors reported to users (exit code 2, no traceback)."""

    exit_code = 2
    kind = "error"

    def __init__(self, problems: Problem | Sequence[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem(where="", message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        n = len(self.problems)
        head = f"{self.kind}: {n} problem{'s' if n != 1 else ''} found"
        return head + "\n" + "\n".join(f"  - {p}".replace("\n", "\n  ") for p in self.problems)


class ConfigError(ErError):
    kind = "invalid config"


class InputError(ErError):
    kind = "invalid input"


class PluginError(ErError):
    kind = "plugin error"


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(str(value), list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def choices_text(choices: Iterable[str]) -> str:
    items = sorted(choices)
    return ", ".join(items) if items else "(none)"
