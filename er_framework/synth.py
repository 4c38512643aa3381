"""Generated test data with known truth (no download, seeded, reproducible).

``planted_documents`` makes families of near-duplicate documents: a base
text of Zipf-distributed words from a synthetic vocabulary, and copies in
which a chosen fraction of the words is replaced, deleted or inserted. The
edit rates are spread so that the exact Jaccard of (base, copy) pairs covers
the range around a threshold; ``family`` is the truth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_CONSONANTS = list("bcdfghjklmnprstvwz")
_VOWELS = list("aeiou")


def vocabulary(size: int, seed: int = 0) -> list[str]:
    """``size`` distinct pronounceable words of 1-4 syllables."""
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    out: list[str] = []
    while len(out) < size:
        syllables = int(rng.integers(1, 5))
        w = "".join(
            _CONSONANTS[int(rng.integers(len(_CONSONANTS)))] + _VOWELS[int(rng.integers(len(_VOWELS)))]
            for _ in range(syllables)
        )
        if w not in words:
            words.add(w)
            out.append(w)
    return out


@dataclass
class PlantedDocuments:
    ids: list[str]
    texts: list[str]
    family: list[int]  # documents of one family derive from one base text
    edit_rate: list[float]  # fraction of words edited relative to the base (0 for bases)


def planted_documents(
    n_families: int,
    copies_per_family: tuple[int, int] = (1, 3),
    words: tuple[int, int] = (80, 200),
    edit_rates: tuple[float, float] = (0.0, 0.12),
    n_singletons: int = 0,
    vocab_size: int = 20000,
    seed: int = 0,
) -> PlantedDocuments:
    """Families of near-duplicates plus unrelated singleton documents.

    Each copy edits ``round(rate * len)`` word positions of the base (rate
    uniform in ``edit_rates``): a third substitutions, a third deletions,
    a third insertions. The texts are space-separated words with a sentence
    full stop every 12 words.
    """
    rng = np.random.default_rng(seed)
    vocab = vocabulary(vocab_size, seed + 1)
    zipf_p = 1.0 / np.arange(1, vocab_size + 1) ** 1.05
    zipf_p /= zipf_p.sum()

    def draw(k: int) -> list[str]:
        return [vocab[i] for i in rng.choice(vocab_size, size=k, p=zipf_p)]

    def render(ws: list[str]) -> str:
        parts = []
        for i in range(0, len(ws), 12):
            sentence = " ".join(ws[i : i + 12])
            parts.append(sentence[:1].upper() + sentence[1:] + ".")
        return " ".join(parts)

    ids: list[str] = []
    texts: list[str] = []
    family: list[int] = []
    rates: list[float] = []
    for f in range(n_families + n_singletons):
        base = draw(int(rng.integers(words[0], words[1] + 1)))
        ids.append(f"d{len(ids)}")
        texts.append(render(base))
        family.append(f)
        rates.append(0.0)
        if f >= n_families:
            continue
        for _ in range(int(rng.integers(copies_per_family[0], copies_per_family[1] + 1))):
            rate = float(rng.uniform(*edit_rates))
            copy = list(base)
            n_edits = int(round(rate * len(base)))
            for _e in range(n_edits):
                op = int(rng.integers(3))
                pos = int(rng.integers(len(copy))) if copy else 0
                if op == 0 and copy:
                    copy[pos] = draw(1)[0]
                elif op == 1 and len(copy) > 1:
                    del copy[pos]
                else:
                    copy.insert(pos, draw(1)[0])
            ids.append(f"d{len(ids)}")
            texts.append(render(copy))
            family.append(f)
            rates.append(rate)
    order = rng.permutation(len(ids))
    return PlantedDocuments(
        ids=[f"d{i}" for i in range(len(ids))],
        texts=[texts[i] for i in order],
        family=[family[i] for i in order],
        edit_rate=[rates[i] for i in order],
    )
