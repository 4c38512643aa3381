"""Tweet-sized documents of real English words with planted near-duplicates, streamed to disk.

The corpus of ``bench_scale.py`` (issue 30's measurements): ``n`` documents of
15-30 words each, 20% of them near-duplicates of another document, written as
JSONL (``{"id": "d<k>", "text": ...}``, ``k`` the line number) a chunk at a time,
so that 10 M documents need no more memory than one chunk.

**Words.** The vocabulary and its frequencies are those of the real English
sentences that ``realtext.py`` harvests from the standard library's docstrings
and the licence texts (no download): each token with its surrounding
punctuation removed, kept when it is made of letters. A document's words are
drawn independently by frequency (a unigram model of that text), so two
unrelated documents share few 5-shingles; windows of running text would make
10 M documents overlap by accident.

**Near-duplicates.** The documents are made in chunks of ``chunk`` (50,000):
in each chunk ``round(0.2 * m)`` documents are copies of a document of the same
chunk, each with ``round(rate * words)`` word edits, ``rate`` uniform in
``[0, max_edit]`` (0.1): a substitution by a word drawn by frequency (40%), a
deletion (30%) or an insertion (30%). About a fifth of the copies get no edit
(exact copies). With 5-shingles one edit of a 22-word text leaves a Jaccard of
about 0.85, two about 0.72: the pairs spread around ``configs/documents.yaml``'s
0.8. The chunk is then shuffled; families never cross chunks.

**Determinism.** ``numpy.random.default_rng((seed, chunk_index))`` and
``random.Random`` seeded the same way: the same seed and word pool give the same
bytes, whatever the chunk count. ``meta.json`` (written last: its presence marks a
complete corpus) holds the parameters, the pool's fingerprint and the counts.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import realtext  # noqa: E402

VERSION = 1
WORDS = (15, 30)
NEAR_DUPLICATE_SHARE = 0.2
MAX_EDIT = 0.1
CHUNK = 50_000
PUNCTUATION = ".,;:()[]{}\"'`!?*<>"


class Vocabulary:
    """Words and their cumulative frequencies, drawn by frequency with a numpy generator."""

    def __init__(self, counts: Counter[str]) -> None:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.words = np.array([w for w, _ in ranked], dtype=object)
        freq = np.array([c for _, c in ranked], dtype=np.float64)
        self.cum = np.cumsum(freq / freq.sum())
        self.cum[-1] = 1.0

    def draw(self, rng: np.random.Generator, k: int) -> np.ndarray:
        return np.searchsorted(self.cum, rng.random(k), side="right")

    def __len__(self) -> int:
        return len(self.words)


def word_counts(sentences: list[str]) -> Counter[str]:
    """Tokens of the sentences without surrounding punctuation, kept when made of letters."""
    counts: Counter[str] = Counter()
    for s in sentences:
        for token in s.split():
            w = token.strip(PUNCTUATION)
            if w.isalpha() and w.isascii():
                counts[w] += 1
    return counts


def edit_words(words: list[str], n_edits: int, rnd: random.Random, substitutes: list[str]) -> list[str]:
    """``n_edits`` edits: substitution (40%), deletion (30%, never of the last word) or insertion (30%)."""
    out = list(words)
    for i in range(n_edits):
        j = rnd.randrange(len(out))
        op = rnd.random()
        if op < 0.4:
            out[j] = substitutes[i]
        elif op < 0.7 and len(out) > 1:
            del out[j]
        else:
            out.insert(j, substitutes[i])
    return out


def make_chunk(vocab: Vocabulary, seed: int, index: int, m: int, max_edit: float = MAX_EDIT) -> tuple[list[str], list[int]]:
    """The ``m`` texts of chunk ``index`` (shuffled) and, per text, its family's number within the chunk."""
    rng = np.random.default_rng((seed, index))
    rnd = random.Random(seed * 1_000_003 + index)
    n_copies = round(NEAR_DUPLICATE_SHARE * m)
    n_bases = m - n_copies
    lengths = rng.integers(WORDS[0], WORDS[1] + 1, size=n_bases)
    idx = vocab.draw(rng, int(lengths.sum()))
    ends = np.cumsum(lengths)
    bases = [vocab.words[idx[e - n : e]].tolist() for n, e in zip(lengths.tolist(), ends.tolist())]
    texts = [" ".join(b) for b in bases]
    family = list(range(n_bases))
    of = rng.integers(0, n_bases, size=n_copies) if n_bases else np.zeros(0, dtype=np.int64)
    rates = rng.uniform(0.0, max_edit, size=n_copies)
    for b, rate in zip(of.tolist(), rates.tolist()):
        n_edits = round(rate * len(bases[b]))
        substitutes = vocab.words[vocab.draw(rng, n_edits)].tolist()
        texts.append(" ".join(edit_words(bases[b], n_edits, rnd, substitutes)))
        family.append(b)
    order = rng.permutation(m)
    return [texts[i] for i in order.tolist()], [family[i] for i in order.tolist()]


def jsonl_line(k: int, text: str) -> str:
    """``json.dumps({"id": f"d{k}", "text": text}) + "\\n"`` for a text of ASCII letters and spaces (nothing to escape)."""
    return f'{{"id": "d{k}", "text": "{text}"}}\n'


def chunks(n_docs: int, chunk: int) -> Iterator[tuple[int, int]]:
    """``(index, size)`` of the chunks of ``n_docs`` documents."""
    for index, start in enumerate(range(0, n_docs, chunk)):
        yield index, min(chunk, n_docs - start)


def corpus_dir(data_dir: Path, n_docs: int, seed: int) -> Path:
    return Path(data_dir) / f"tweets-{n_docs}-s{seed}-v{VERSION}"


def read_meta(folder: Path) -> dict[str, Any] | None:
    """The corpus's meta.json when the corpus is complete (``None`` otherwise)."""
    try:
        meta: dict[str, Any] = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    data = folder / "docs.jsonl"
    return meta if data.is_file() and data.stat().st_size == meta.get("bytes") else None


def write_corpus(folder: Path, n_docs: int, seed: int, chunk: int = CHUNK, sentences: list[str] | None = None) -> dict[str, Any]:
    """Write ``docs.jsonl`` a chunk at a time (through a temporary name), then ``meta.json``."""
    t0 = time.perf_counter()
    pool = realtext.harvest_sentences() if sentences is None else sentences
    vocab = Vocabulary(word_counts(pool))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").unlink(missing_ok=True)
    tmp = folder / "docs.jsonl.tmp"
    families = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for index, m in chunks(n_docs, chunk):
            texts, family = make_chunk(vocab, seed, index, m)
            start = index * chunk
            f.write("".join(jsonl_line(start + k, t) for k, t in enumerate(texts)))
            families += len(set(family))
    os.replace(tmp, folder / "docs.jsonl")
    meta = {
        "generator": "benchmarks/scale_corpus.py",
        "version": VERSION,
        "docs": n_docs,
        "seed": seed,
        "words": list(WORDS),
        "near_duplicate_share": NEAR_DUPLICATE_SHARE,
        "max_edit": MAX_EDIT,
        "chunk": chunk,
        "families": families,
        "vocabulary": len(vocab),
        "pool": realtext.pool_fingerprint(pool),
        "bytes": (folder / "docs.jsonl").stat().st_size,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def ensure_corpus(data_dir: Path, n_docs: int, seed: int, chunk: int = CHUNK) -> tuple[Path, dict[str, Any]]:
    """The corpus's docs.jsonl and meta, generated once and reused while meta.json matches."""
    folder = corpus_dir(data_dir, n_docs, seed)
    meta = read_meta(folder)
    if meta is None or meta.get("chunk") != chunk:
        meta = write_corpus(folder, n_docs, seed, chunk)
    return folder / "docs.jsonl", meta
