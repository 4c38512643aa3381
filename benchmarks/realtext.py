"""A corpus of documents made of real English sentences, with planted near-duplicates.

The sentences come from text that every Python installation carries, so the
corpus needs no download:

* the docstrings of the standard library's ``.py`` sources (module, class and
  function docstrings, read with :mod:`ast`; nothing is imported), without its
  test suites, ``idlelib`` and ``turtledemo``;
* the licence texts of ``/usr/share/common-licenses`` (Debian and Ubuntu),
  when that folder exists; skipped silently otherwise;
* any folder or file given with ``--sources`` (``.py``: docstrings; other
  files: the text).

Each text is split into paragraphs (blank lines), doctest lines (``>>>``,
``...``) are removed, and each paragraph is split into sentences; a sentence
is kept when it has 30-400 characters, at least 5 words, at least 75% letters
and spaces and no ``>>>`` or URL. Duplicates are dropped keeping the first occurrence, so
the pool keeps the order of its sources and consecutive sentences form real
paragraphs.

**Documents.** A document starts at a random sentence of the pool and takes the
following sentences (with probability 0.3 it jumps to a random sentence
before each next one) until it reaches a length drawn uniformly from
``chars`` (default 3,000-4,800 characters; the mean is ~4,000 as the last
sentence overshoots). With probability ``family_share`` (0.4) a document is
the base of a family and gets 1-3 copies, each with a word-edit rate drawn
uniformly from 0 to ``max_edit`` (0.05): ``round(rate * words)`` edits, each a
substitution (40%) by a word of the pool's vocabulary, a deletion (30%) or an
insertion (30%). Copies with no edit are exact duplicates (about 1.5% of
copies). Documents are then shuffled: members of a family are not adjacent.

**Determinism.** ``random.Random(seed)`` drives everything (default seed 15,
the issue's number). The same seed on the same sentence pool gives the same
bytes; the pool depends on the Python version and on the licences installed,
so :func:`pool_fingerprint` (count and SHA-256 of the pool) is written to
``meta.json`` with the corpus.

Run as a script::

    python benchmarks/realtext.py --docs 20000 --seed 15 --out /tmp/realtext

writes ``docs.jsonl`` (``{"id": "d<k>", "text": ...}`` per line, ``k`` the
line number), ``families.csv`` (``id,family``; singletons are families of
one) and ``meta.json`` (written last: the corpus is complete when it exists).
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import json
import random
import re
import sys
import sysconfig
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: parts of stdlib paths that are skipped (test suites, IDLE, demos, installed packages)
SKIP_PARTS = frozenset({"test", "tests", "idle_test", "idlelib", "turtledemo", "site-packages", "dist-packages"})
LICENCES = Path("/usr/share/common-licenses")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
#: at least this many sentences, or the pool is too small to make documents that are not all alike
MIN_POOL = 2000
DEFAULT_SEED = 15
DEFAULT_CHARS = (3000, 4800)


def default_sources() -> list[Path]:
    """The standard library's folder and, when present, /usr/share/common-licenses."""
    out = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if stdlib.is_dir():
        out.append(stdlib)
    if LICENCES.is_dir():
        out.append(LICENCES)
    return out


def _files(source: Path) -> Iterator[Path]:
    if source.is_file():
        yield source
        return
    python_tree = any(source.glob("*.py"))  # a Python tree: its .py files only; elsewhere every file
    for p in sorted(source.rglob("*")):
        if SKIP_PARTS.intersection(p.relative_to(source).parts) or not p.is_file():
            continue
        if p.suffix == ".py" or not python_tree:
            yield p


def texts_of(path: Path) -> list[str]:
    """The docstrings of a ``.py`` file, or the text of any other file as paragraphs ([] when unreadable)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if path.suffix == ".py":
        try:
            tree = ast.parse(raw)
        except (SyntaxError, ValueError):
            return []
        out = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                d = ast.get_docstring(node)
                if d:
                    out.append(d)
        return out
    return [p for p in re.split(r"\n\s*\n", raw) if p.strip()]


def good_sentence(s: str) -> bool:
    if not 30 <= len(s) <= 400 or len(s.split()) < 5 or ">>>" in s or "://" in s:
        return False
    letters = sum(1 for c in s if c.isalpha() or c == " ")
    return letters >= 0.75 * len(s)


def split_sentences(text: str) -> list[str]:
    """Sentences of each paragraph (blank-line separated), doctest lines (``>>>``, ``...``) removed first."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        lines = [line for line in para.splitlines() if not line.lstrip().startswith((">>>", "... "))]
        out.extend(s for s in SENTENCE_END.split(" ".join(" ".join(lines).split())) if good_sentence(s))
    return out


def harvest_sentences(sources: Iterable[Path] | None = None) -> list[str]:
    """Unique sentences of the sources, in the order met (files sorted by path)."""
    pool: dict[str, None] = {}
    for source in default_sources() if sources is None else sources:
        for f in _files(Path(source)):
            for text in texts_of(f):
                for s in split_sentences(text):
                    pool.setdefault(s, None)
    return list(pool)


def pool_fingerprint(sentences: list[str]) -> dict[str, Any]:
    return {
        "sentences": len(sentences),
        "sha256": hashlib.sha256("\n".join(sentences).encode("utf-8")).hexdigest()[:16],
        "chars": sum(len(s) for s in sentences),
    }


@dataclass
class Corpus:
    texts: list[str]
    family: list[int]  # family number of each text (a singleton is a family of one)
    edit_rate: list[float]  # the word-edit rate of each copy (0.0 for bases and singletons)


def make_corpus(
    n_docs: int,
    seed: int,
    sentences: list[str],
    chars: tuple[int, int] = DEFAULT_CHARS,
    family_share: float = 0.4,
    copies: tuple[int, int] = (1, 3),
    max_edit: float = 0.05,
    min_pool: int = MIN_POOL,
) -> Corpus:
    """``n_docs`` documents of real sentences (see the module docstring); deterministic in ``seed``.

    ``ValueError`` when the pool has fewer than ``min_pool`` sentences."""
    if len(sentences) < max(1, min_pool):
        raise ValueError(f"only {len(sentences)} sentences harvested (need {min_pool}): pass --sources with more text")
    if not 1 <= chars[0] <= chars[1]:
        raise ValueError(f"chars must be 1 <= min <= max, got {chars}")
    rng = random.Random(seed)
    vocab = sorted({w for s in sentences for w in s.split()})
    n_sent = len(sentences)

    def document() -> str:
        out: list[str] = []
        length = 0
        target = rng.randint(chars[0], chars[1])
        i = rng.randrange(n_sent)
        while length < target:
            s = sentences[i % n_sent]
            out.append(s)
            length += len(s) + 1
            i = rng.randrange(n_sent) if rng.random() < 0.3 else i + 1
        return " ".join(out)

    def edit(text: str, rate: float) -> str:
        words = text.split()
        for _ in range(round(len(words) * rate)):
            j = rng.randrange(len(words))
            op = rng.random()
            if op < 0.4:
                words[j] = rng.choice(vocab)
            elif op < 0.7 and len(words) > 1:
                del words[j]
            else:
                words.insert(j, rng.choice(vocab))
        return " ".join(words)

    docs: list[tuple[str, int, float]] = []
    fam = 0
    while len(docs) < n_docs:
        base = document()
        docs.append((base, fam, 0.0))
        if rng.random() < family_share:
            for _ in range(rng.randint(*copies)):
                rate = rng.uniform(0.0, max_edit)
                docs.append((edit(base, rate), fam, rate))
        fam += 1
    docs = docs[:n_docs]
    rng.shuffle(docs)
    return Corpus([d[0] for d in docs], [d[1] for d in docs], [d[2] for d in docs])


def corpus_stats(c: Corpus) -> dict[str, Any]:
    sizes: dict[int, int] = {}
    for f in c.family:
        sizes[f] = sizes.get(f, 0) + 1
    lengths = sorted(len(t) for t in c.texts)
    return {
        "documents": len(c.texts),
        "chars_min": lengths[0],
        "chars_mean": round(sum(lengths) / len(lengths), 1),
        "chars_max": lengths[-1],
        "total_chars": sum(lengths),
        "families_with_copies": sum(1 for s in sizes.values() if s > 1),
        "documents_in_families": sum(s for s in sizes.values() if s > 1),
        "within_family_pairs": sum(s * (s - 1) // 2 for s in sizes.values()),
        "exact_copies": sum(1 for t, r in zip(c.texts, c.edit_rate) if r > 0 and r * len(t.split()) < 0.5),
    }


def write_corpus(out: Path, c: Corpus, meta: dict[str, Any]) -> None:
    """docs.jsonl, families.csv, then meta.json (last: its presence marks a complete corpus)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "meta.json").unlink(missing_ok=True)
    with open(out / "docs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": f"d{k}", "text": t}) + "\n" for k, t in enumerate(c.texts))
    with open(out / "families.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "family"])
        w.writerows((f"d{k}", fam) for k, fam in enumerate(c.family))
    (out / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")


def _chars(text: str) -> tuple[int, int]:
    from common import min_max  # here: the tests load this file without benchmarks/ on sys.path

    return min_max(text, "3000,4800")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=20000, help="number of documents (default 20,000)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    p.add_argument(
        "--chars",
        type=_chars,
        default=DEFAULT_CHARS,
        metavar="MIN,MAX",
        help="length target per document, drawn uniformly (default 3000,4800: mean ~4,000)",
    )
    p.add_argument(
        "--sources",
        nargs="*",
        type=Path,
        default=None,
        help="folders/files of text instead of the defaults (stdlib docstrings + /usr/share/common-licenses)",
    )
    p.add_argument("--out", type=Path, required=True, help="output folder (docs.jsonl, families.csv, meta.json)")
    a = p.parse_args(argv)
    if a.docs < 1:
        p.error("--docs must be >= 1")
    t0 = time.perf_counter()
    sources = default_sources() if a.sources is None else a.sources
    missing = [str(s) for s in sources if not Path(s).exists()]
    if missing:
        print(f"error: no such source: {', '.join(missing)}", file=sys.stderr)
        return 2
    sentences = harvest_sentences(sources)
    t_harvest = time.perf_counter() - t0
    try:
        corpus = make_corpus(a.docs, a.seed, sentences, chars=a.chars)
    except ValueError as exc:
        print(f"error: {exc} (searched: {', '.join(map(str, sources)) or 'nothing'})", file=sys.stderr)
        return 2
    meta = {
        "generator": "benchmarks/realtext.py",
        "docs": a.docs,
        "seed": a.seed,
        "chars": list(a.chars),
        "sources": [str(s) for s in sources],
        "pool": pool_fingerprint(sentences),
        "python": sys.version.split()[0],
        **corpus_stats(corpus),
        "harvest_seconds": round(t_harvest, 2),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    write_corpus(a.out, corpus, meta)
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
