"""Every code block of README.md and docs/**/*.md runs, and what a page shows as output is what is printed.

The convention is in tests/docs/doc_blocks.py (and COMMON to every page): console blocks run with bash in a
scratch folder holding a copy of configs/, python blocks in one namespace per page, yaml jobs are validated,
blocks that cannot run are marked <!-- not run: REASON --> and listed here as skipped tests with the reason.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from er_framework.config.resolve import resolve_job
from er_framework.config.yaml_load import load_yaml
from tests.docs.doc_blocks import ROOT, Block, blocks_of, console_steps, matches, mismatch, pages, parse

PAGES = pages()


def page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def scratch_folder(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A folder with a copy of configs/, and the environment its commands run in: `er` and `python` are
    this interpreter with this checkout's package first on the path (not an installed copy)."""
    work = tmp / "work"
    shutil.copytree(ROOT / "configs", work / "configs")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name, command in (("er", f'exec "{sys.executable}" -m er_framework "$@"'), ("python", f'exec "{sys.executable}" "$@"')):
        shim = bin_dir / name
        shim.write_text(f"#!/bin/sh\n{command}\n", encoding="utf-8")
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ER_DEBUG", "PYTEST_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", HOME=str(tmp))
    return work, env


def run_console(block: Block, work: Path, env: dict[str, str]) -> None:
    for command, expected in console_steps(block):
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if not matches(expected, done.stdout.split("\n")):
            pytest.fail(mismatch(block.where, f"$ {command}", expected, done.stdout.split("\n")), pytrace=False)


def run_python(block: Block, scope: dict[str, Any], expected: Block | None) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.body, block.where, "exec"), scope)  # noqa: S102 - the page's own example
    if expected is not None:
        want, got = expected.body.split("\n"), printed.getvalue().split("\n")
        if not matches(want, got):
            pytest.fail(mismatch(block.where, "the python block", want, got), pytrace=False)


def check_yaml(block: Block, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.body.lstrip().startswith("# fragment"):
        yaml.safe_load(block.body)  # a fragment: valid YAML
        return
    for var in re.findall(r"\$\{(\w+)\}", block.body):
        monkeypatch.setenv(var, "placeholder")
    data, lines, problems = load_yaml(block.body, f"{block.where} (yaml)")
    assert problems == [], f"{block.where}: {problems}"
    resolve_job(data, lines, block.where, work / "configs", check_files=False)  # raises ConfigError naming every problem


def unexpected(block: Block) -> str:
    if block.lang == "text":
        return f"{block.where}: a ```text block that follows no python block: mark it <!-- not run: REASON --> or make it an output"
    return f"{block.where}: a ```{block.lang or '(no language)'} block: write console/python/yaml/toml, or mark it <!-- not run: REASON -->"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_page_code_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = blocks_of(page)
    if not any(b.not_run is None for b in blocks):
        return  # nothing to run: no scratch folder
    work, env = scratch_folder(tmp_path)
    monkeypatch.chdir(work)
    scope: dict[str, Any] = {"__name__": "__doc_page__"}
    for i, block in enumerate(blocks):
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        output = nxt if nxt is not None and nxt.lang == "text" and nxt.after_python and nxt.not_run is None else None
        if block.not_run is not None or (block.lang == "text" and block.after_python):
            continue
        if block.lang == "console":
            run_console(block, work, env)
        elif block.lang == "python":
            run_python(block, scope, output)
        elif block.lang == "yaml":
            check_yaml(block, work, monkeypatch)
        elif block.lang == "toml":
            tomllib.loads(block.body)
        else:
            pytest.fail(unexpected(block))


NOT_RUN_BLOCKS = [b for p in PAGES for b in blocks_of(p) if b.not_run is not None]


@pytest.mark.parametrize("block", NOT_RUN_BLOCKS, ids=[b.where for b in NOT_RUN_BLOCKS])
def test_not_run_block(block: Block) -> None:
    """Each block a page marks as not run, listed with its reason (pytest -ra prints them)."""
    assert len(block.not_run or "") >= 10, f"{block.where}: say why the block cannot run"
    pytest.skip(f"{block.where}: not run: {block.not_run}")


def test_readme_set_up_commands_are_what_ci_runs() -> None:
    """The README's two set-up commands are the ones .ci/run runs (install, then the tests)."""
    readme = blocks_of(ROOT / "README.md")
    first = next(b for b in readme if b.lang == "console")
    commands = [c for c, _ in console_steps(first)]
    assert commands == ['pip install -e ".[test]"', "python -m pytest -q"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^pip install -e \"\.\[test\]\"$", ci, re.M)
    assert re.search(r"^(\w+=\S+ )*python -m pytest -q$", ci, re.M)


# ------------------------------------------------------------------ the harness itself


def test_parse_marks_not_run_and_outputs() -> None:
    text = (
        "a\n\n<!-- not run: needs a cluster -->\n\n```yaml\nx: 1\n```\n\n"
        "```python\nprint(1)\n```\n\n```text\n1\n```\ntext\n```text\n2\n```\n"
    )
    blocks = parse(text, "p.md")
    assert [(b.lang, b.not_run, b.after_python, b.line) for b in blocks] == [
        ("yaml", "needs a cluster", False, 5),
        ("python", None, False, 9),
        ("text", None, True, 13),
        ("text", None, False, 17),
    ]
    with pytest.raises(ValueError, match="indented code fence"):
        parse("- item\n  ```python\n  x = 1\n  ```\n", "p.md")
    with pytest.raises(ValueError, match="never closes"):
        parse("```python\nx = 1\n", "p.md")


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a", "b"], ["a  ", "b", ""], True),
        (["a", "...", "d"], ["a", "b", "c", "d"], True),
        (["a", "...", "d"], ["a", "d"], True),
        (["...", "c"], ["a", "b"], False),
        (["a"], ["a", "b"], False),
        (["a", "b"], ["a"], False),
        ([], [""], True),
    ],
)
def test_matching_rules(expected: list[str], actual: list[str], ok: bool) -> None:
    assert matches(expected, actual) is ok


def test_a_wrong_output_fails(tmp_path: Path) -> None:
    """A console block whose shown output is not printed fails, naming the page line and both texts."""
    work, env = scratch_folder(tmp_path)
    block = parse("```console\n$ echo hello\nhullo\n```\n", "p.md")[0]
    with pytest.raises(pytest.fail.Exception, match=r"(?s)p\.md:1.*--- shown ---\nhullo\n--- printed ---\nhello"):
        run_console(block, work, env)
    run_console(parse("```console\n$ echo hello; echo there\n...\nthere\n```\n", "p.md")[0], work, env)
