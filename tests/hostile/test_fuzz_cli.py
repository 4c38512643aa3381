"""Hypothesis fuzzing of every ``er`` verb's arguments (issue 31): whatever the arguments, a command ends
with exit 0 or 2 (argparse's usage error is 2 too), never 1 ("internal error") or an uncaught exception.

The verbs and their options are read from the parser itself, so a new verb or option is fuzzed without a
change here. The values come from a small pool: paths to a finished run, its job, its data, a truth file,
files and folders of the wrong kind, numbers at and beyond every edge (0, negative, NaN, infinity, huge),
and short random text. Sizes are kept small (no synth of millions of records, at most 2 workers), and every
path lies in a temporary folder (the commands run there).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_framework.cli.main import build_parser, main
from tests.hostile.test_hostile_env import JOB

DOCS_JOB = """\
name: docs
mode: dedup
threshold: 0.6
sources: [{name: docs, path: docs.jsonl, id: id, fields: [text]}]
shingler: {type: char, k: 4}
signature: {type: minhash, num_perm: 64}
blockers: [{type: lsh_bands}]
verifier: {type: jaccard}
"""


def verbs() -> dict[str, argparse.ArgumentParser]:
    """Every verb as typed (``run``, ``index build``, ``synth news``) and its parser."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(prefix: str, parser: argparse.ArgumentParser) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if prefix:
            found[prefix] = parser
        for action in subs:
            for name, child in action.choices.items():
                walk(f"{prefix} {name}".strip(), child)

    walk("", build_parser())
    return found


VERBS = verbs()


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a finished run (out/), its job and data, a jaccard job, a truth file, a plain file, a folder."""
    folder = tmp_path_factory.mktemp("fuzz")
    rows = ["id,name,city"] + [f"{i},name{i % 5} x{i % 3},town{i % 2}" for i in range(30)]
    (folder / "people.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "job.yaml").write_text(JOB, encoding="utf-8")
    docs = [{"id": i, "text": f"document {i} about subject {i % 4}"} for i in range(30)]
    (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "docs.yaml").write_text(DOCS_JOB, encoding="utf-8")
    (folder / "truth.csv").write_text("id,entity\n" + "".join(f"{i},{i % 5}\n" for i in range(30)), encoding="utf-8")
    (folder / "plain.txt").write_text("not a job\n", encoding="utf-8")
    (folder / "folder").mkdir()
    with contextlib.chdir(folder), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", "job.yaml", "--out", "out", "-q"]) == 0
        assert main(["index", "build", "job.yaml", "--index", "idx.er", "-q"]) == 0
    return folder


PATHS = ["out", "job.yaml", "docs.yaml", "people.csv", "docs.jsonl", "truth.csv", "plain.txt", "folder", "nope", "out/report.json", "new"]
WORDS = ["nan", "inf", "-inf", "-1", "0", "1", "2", "0.5", "1e-6", "1.5", "1e9", "99999999999999999999", "", "auto", "csv", "parquet"]
WORDS += ["x\x1b[31m", "name", "city", "id", "entity", "s", "20x20", "cells", "geometric", "heldout", "-", "--"]

VALUES = st.one_of(
    st.sampled_from(PATHS),
    st.sampled_from(WORDS),
    st.integers(-3, 60).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=8),
)
WORKERS = st.sampled_from(["1", "2", "0", "-1", "auto", "x", "1025"])
#: values that make sense for an option (so that examples get past the first check); mixed with :data:`VALUES`
GOOD = {
    "--out": ["o", "out2"],
    "--truth": ["truth.csv"],
    "--left": ["1", "2", "3"],
    "--right": ["1", "6", "11"],
    "--source": ["s"],
    "--index": ["idx.er", "idx2.er"],
    "--labels": ["l.csv"],
    "--model": ["out/model.json"],
    "--config": ["job.yaml"],
    "--n": ["20"],
    "--duplicates": ["3"],
    "--pages": ["4"],
    "--fingers": ["3"],
    "--impressions": ["2"],
    "--text": ["name1 x1"],
    "--record": ['{"id": "n1", "name": "name1 x1", "city": "town1"}'],
    "--file": ["people.csv"],
    "--id-column": ["id"],
    "--cluster-column": ["entity"],
    "--threshold": ["0.8"],
    "--num-perm": ["64"],
    "--top-k": ["3"],
}
#: the positionals that fit each verb (in order), mixed with :data:`VALUES`
POSITIONALS = {
    "run": ["job.yaml"],
    "train": ["job.yaml"],
    "validate": ["docs.yaml"],
    "index build": ["job.yaml"],
    "evaluate": ["out"],
    "explain": ["out"],
    "review": ["out"],
    "report": ["out"],
    "index add": ["idx.er", "people.csv"],
    "index remove": ["idx.er", "1"],
    "index refit": ["idx.er"],
    "index info": ["idx.er"],
    "query": ["idx.er"],
}


def options(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings if s.startswith("--") and s not in ("--help", "--debug")]


def value(draw: st.DrawFn, flag: str) -> str:
    """A value for ``flag``: mostly one that fits it, else anything of :data:`VALUES`."""
    if flag == "--workers":
        return draw(WORKERS)
    if flag in GOOD and draw(st.integers(0, 2)):
        return draw(st.sampled_from(GOOD[flag]))
    return draw(VALUES)


@st.composite
def argv_for(draw: st.DrawFn, verb: str) -> list[str]:
    """The verb, a value for each positional and required option (mostly: now and then one is left out),
    then up to six options or loose values."""
    parser = VERBS[verb]
    flags = options(parser)
    argv = verb.split()
    fitting = iter(POSITIONALS.get(verb, []))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS or not draw(st.integers(0, 9)):
            continue
        if not action.option_strings:
            good = next(fitting, None)
            argv.append(good if good is not None and draw(st.integers(0, 2)) else draw(VALUES))
        elif action.required:
            argv += [action.option_strings[0], value(draw, action.option_strings[0])]
    for _ in range(draw(st.integers(0, 5))):
        if flags and draw(st.integers(0, 4)):  # mostly an option, now and then a loose value
            flag = draw(st.sampled_from(flags))
            argv.append(flag)
            if draw(st.integers(0, 9)):  # now and then a flag without its value
                argv.append(value(draw, flag))
        else:
            argv.append(draw(VALUES))
    return argv


@contextlib.contextmanager
def quiet(folder: Path) -> Iterator[None]:
    with contextlib.chdir(folder), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            yield
        finally:
            LAST_ERR[0] = err.getvalue()


LAST_ERR = [""]

#: the verbs that run a command (``tune`` does, ``index`` only holds actions)
LEAF_VERBS = [v for v, p in VERBS.items() if p.get_default("func") is not None]
#: how many examples of each verb ended with 0 (reached the end of the command): printed with -s
ENDED = dict.fromkeys(LEAF_VERBS, 0)


@pytest.mark.parametrize("verb", LEAF_VERBS)
def test_every_verb_ends_with_0_or_2(place: Path, tmp_path_factory: pytest.TempPathFactory, verb: str) -> None:
    work = tmp_path_factory.mktemp("verb")

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(argv=argv_for(verb))
    def check(argv: list[str]) -> None:
        folder = work / "w"
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(place, folder)
        code: object
        with quiet(folder):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: 2 for a usage error, 0 for --help
                code = exc.code
        assert code in (0, 2, None), (argv, code, LAST_ERR[0])
        ENDED[verb] += code in (0, None)
        assert "internal error" not in LAST_ERR[0] and "Traceback" not in LAST_ERR[0], (argv, LAST_ERR[0])

    check()
    print(f"{verb}: {ENDED[verb]} of the examples ended with 0")
    assert os.path.exists("/dev/null") and not Path("/dev/null").is_file()
