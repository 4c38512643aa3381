"""The code blocks of README.md and docs/**/*.md, parsed, and how each kind is checked.

The convention (every page follows it; tests/docs/test_code_blocks.py runs it):

* ```console blocks: each line starting with "$ " is a shell command, run with bash in a scratch folder that
  holds a copy of the repository's configs/; the lines after it, up to the next "$ " line, are its expected
  output (stdout and stderr), compared exactly after stripping trailing spaces; a line that is exactly "..."
  stands for any number of lines. Commands of one page run in order in the same scratch folder.
* ```python blocks run in order in one namespace per page, in that scratch folder; a ```text block right
  after a python block is the output that block prints (same comparison rules).
* ```yaml blocks that are whole jobs are validated as jobs (as if saved in the scratch folder's configs/:
  the schema, the components, the fields; a `${VAR}` it names is set to a placeholder); fragments start
  with a comment "# fragment" and must be valid YAML.
* ```toml blocks must parse.
* a block that cannot run in a test is preceded by the HTML comment <!-- not run: REASON --> on its own line
  (blank lines between are allowed); the harness lists every reason as a skipped test.

Any other block (a ```bash block, a ```text block that follows no python block, a block without a
language) is an error: write it as one of the kinds above or mark it not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")
FENCE = re.compile(r"^```(\S*)\s*$")
WILDCARD = "..."
KINDS = ("console", "python", "yaml", "toml", "text")

__all__ = ["ROOT", "Block", "pages", "parse", "blocks_of", "console_steps", "matches", "mismatch"]


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, body, first line (1-based) and what precedes it."""

    page: str
    line: int
    lang: str
    body: str
    not_run: str | None  # the reason of a <!-- not run: REASON --> right before it
    after_python: bool  # only blank lines since the end of a python block

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/, in name order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def parse(text: str, page: str) -> list[Block]:
    """The fenced blocks of a Markdown text (fences at the start of a line; an indented fence is an error)."""
    blocks: list[Block] = []
    lines = text.split("\n")
    reason: str | None = None
    python_ended = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```") and not line.startswith("```"):
            raise ValueError(f"{page}:{i + 1}: an indented code fence: start fences at the line's start")
        fence = FENCE.match(line)
        if fence is None:
            marker = NOT_RUN.match(line.strip())
            if marker:
                reason = marker.group(1).strip()
            elif line.strip():
                reason, python_ended = None, False
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        if end is None:
            raise ValueError(f"{page}:{i + 1}: a code block that never closes")
        lang = fence.group(1)
        blocks.append(Block(page, i + 1, lang, "\n".join(lines[i + 1 : end]) + "\n", reason, python_ended))
        python_ended = lang == "python"
        reason = None
        i = end + 1
    return blocks


def blocks_of(path: Path) -> list[Block]:
    return parse(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


def console_steps(block: Block) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for each "$ " line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif not steps:
            raise ValueError(f"{block.where}: a console block starts with a '$ ' command line, not {line!r}")
        else:
            steps[-1][1].append(line)
    return steps


def _clean(lines: list[str]) -> list[str]:
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Do the lines match (trailing spaces and trailing blank lines ignored; "..." is any number of lines)?"""
    want, got = _clean(expected), _clean(actual)
    # ok[i][j]: want[i:] matches got[j:]
    ok = [[False] * (len(got) + 1) for _ in range(len(want) + 1)]
    ok[len(want)][len(got)] = True
    for i in range(len(want) - 1, -1, -1):
        for j in range(len(got), -1, -1):
            if want[i] == WILDCARD:
                ok[i][j] = ok[i + 1][j] or (j < len(got) and ok[i][j + 1])
            else:
                ok[i][j] = j < len(got) and want[i] == got[j] and ok[i + 1][j + 1]
    return ok[0][0]


def mismatch(where: str, what: str, expected: list[str], actual: list[str]) -> str:
    """The failure message: both texts in full, so the page can be corrected from it."""
    return (
        f"{where}: the output of {what} is not the one the page shows\n--- shown ---\n"
        + "\n".join(_clean(expected))
        + "\n--- printed ---\n"
        + "\n".join(_clean(actual))
    )
