"""benchmarks/realtext.py: the real-text corpus of bench_whole.py is deterministic, sized and planted as documented."""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


realtext = _load("realtext")
STDLIB = Path(sysconfig.get_paths()["stdlib"])
FILES = [STDLIB / f for f in ("argparse.py", "subprocess.py", "typing.py", "pathlib.py", "threading.py", "inspect.py")]


@pytest.fixture(scope="module")
def pool() -> list[str]:
    if not all(f.is_file() for f in FILES):
        pytest.skip("this Python has no standard-library sources")
    sentences = realtext.harvest_sentences(FILES)
    assert len(sentences) > 300
    return sentences


def test_harvest_keeps_docstring_sentences_in_order_and_drops_code(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        '"""The module reads the files given on the command line. It keeps every line that matches.\n\n'
        '>>> run("a", "b") == 1 and more doctest text here\n"""\n'
        "def f():\n    '''Return the number of lines that were read from all of the files.'''\n"
        "x = 'Not a docstring: this string is never harvested from the module.'\n",
        encoding="utf-8",
    )
    (tmp_path / "notes.txt").write_text("Short.\n\nThis paragraph is plain prose and it is long enough to be kept.\n", encoding="utf-8")
    got = realtext.harvest_sentences([tmp_path / "m.py", tmp_path / "notes.txt"])
    assert got == [
        "The module reads the files given on the command line.",
        "It keeps every line that matches.",
        "Return the number of lines that were read from all of the files.",
        "This paragraph is plain prose and it is long enough to be kept.",
    ]
    # a folder with .py files at its top is a Python tree: only its .py files are read
    assert realtext.harvest_sentences([tmp_path]) == got[:3]


def test_missing_licence_folder_is_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(realtext, "LICENCES", tmp_path / "absent")
    assert all(p != tmp_path / "absent" for p in realtext.default_sources())


def test_corpus_is_deterministic_in_the_seed(pool: list[str]) -> None:
    a = realtext.make_corpus(300, 15, pool, min_pool=100)
    b = realtext.make_corpus(300, 15, pool, min_pool=100)
    c = realtext.make_corpus(300, 16, pool, min_pool=100)
    assert a.texts == b.texts and a.family == b.family
    assert a.texts != c.texts


def test_documents_have_the_documented_sizes_and_families(pool: list[str]) -> None:
    chars = (3000, 4800)
    corpus = realtext.make_corpus(400, 7, pool, chars=chars, min_pool=100)
    assert len(corpus.texts) == 400
    bases = [t for t, r in zip(corpus.texts, corpus.edit_rate) if r == 0.0]
    # bases stop at the first sentence that reaches the drawn length (sentences have <= 400 characters)
    assert all(chars[0] <= len(t) <= chars[1] + 401 for t in bases)
    members: dict[int, list[int]] = {}
    for i, f in enumerate(corpus.family):
        members.setdefault(f, []).append(i)
    assert all(1 <= len(m) <= 4 for m in members.values())
    assert any(len(m) > 1 for m in members.values()) and any(len(m) == 1 for m in members.values())
    for m in members.values():
        base = next(i for i in m if corpus.edit_rate[i] == 0.0) if any(corpus.edit_rate[i] == 0.0 for i in m) else None
        if base is None:  # the family's base was cut off by n_docs
            continue
        n_words = len(corpus.texts[base].split())
        for i in m:
            rate = corpus.edit_rate[i]
            assert 0.0 <= rate <= 0.05
            # each edit changes the number of words by at most one
            assert abs(len(corpus.texts[i].split()) - n_words) <= round(rate * n_words)
    # members of a family are not adjacent by construction: the order is shuffled
    assert sorted(corpus.family) != corpus.family


def test_too_small_a_pool_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.txt").write_text("Only one sentence of prose lives in this small file.\n", encoding="utf-8")
    assert realtext.main(["--docs", "5", "--sources", str(tmp_path / "a.txt"), "--out", str(tmp_path / "out")]) == 2
    assert "only 1 sentences harvested" in capsys.readouterr().err
    assert realtext.main(["--docs", "5", "--sources", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2
    assert "no such source" in capsys.readouterr().err


def test_written_corpus_round_trips(pool: list[str], tmp_path: Path) -> None:
    import csv
    import json

    corpus = realtext.make_corpus(50, 3, pool, min_pool=100)
    realtext.write_corpus(tmp_path, corpus, {"docs": 50})
    lines = [json.loads(x) for x in (tmp_path / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [x["id"] for x in lines] == [f"d{k}" for k in range(50)] and [x["text"] for x in lines] == corpus.texts
    with open(tmp_path / "families.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["id", "family"] and [int(r[1]) for r in rows[1:]] == corpus.family
    assert json.loads((tmp_path / "meta.json").read_text()) == {"docs": 50}
