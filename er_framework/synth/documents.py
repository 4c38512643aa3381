"""Generated test data with known truth (no download, seeded, reproducible).

``planted_documents`` makes families of near-duplicate documents: a base
text of Zipf-distributed words from a synthetic vocabulary, and copies in
which a chosen fraction of the words is replaced, deleted or inserted. The
edit rates are spread so that the exact Jaccard of (base, copy) pairs covers
the range around a threshold; ``family`` is the truth.

``chained_records`` makes entities whose near-duplicates chain (each copy
edits an earlier copy, so the ends of a chain drift apart), pairs of
look-alike "sibling" entities, and bridging records that resemble both
siblings: the data on which connected components merges entities and
community detection or splitting is meant to help; ``entity`` is the truth.
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
        w = "".join(_CONSONANTS[int(rng.integers(len(_CONSONANTS)))] + _VOWELS[int(rng.integers(len(_VOWELS)))] for _ in range(syllables))
        if w not in words:
            words.add(w)
            out.append(w)
    return out


class _Words:
    """Seeded Zipf-distributed words from a synthetic vocabulary, and word-level edits."""

    def __init__(self, rng: np.random.Generator, vocab_size: int, seed: int) -> None:
        self.rng = rng
        self.vocab = vocabulary(vocab_size, seed + 1)
        p = 1.0 / np.arange(1, vocab_size + 1) ** 1.05
        self.p = p / p.sum()

    def draw(self, k: int) -> list[str]:
        return [self.vocab[i] for i in self.rng.choice(len(self.vocab), size=k, p=self.p)]

    @staticmethod
    def render(ws: list[str]) -> str:
        """Words as sentences of 12, capitalized, with full stops."""
        parts = []
        for i in range(0, len(ws), 12):
            sentence = " ".join(ws[i : i + 12])
            parts.append(sentence[:1].upper() + sentence[1:] + ".")
        return " ".join(parts)

    def edit(self, ws: list[str], rate: float) -> list[str]:
        """``round(rate * len)`` random edits: substitution, deletion or insertion, equally likely."""
        out = list(ws)
        for _ in range(int(round(rate * len(ws)))):
            op = int(self.rng.integers(3))
            pos = int(self.rng.integers(len(out))) if out else 0
            if op == 0 and out:
                out[pos] = self.draw(1)[0]
            elif op == 1 and len(out) > 1:
                del out[pos]
            else:
                out.insert(pos, self.draw(1)[0])
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
    words_ = _Words(rng, vocab_size, seed)
    draw, render = words_.draw, words_.render

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
            copy = words_.edit(base, rate)
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


@dataclass
class ChainedRecords:
    ids: list[str]
    texts: list[str]
    entity: list[int]  # the truth: records of one entity derive from one base text
    kind: list[str]  # "base", "copy", "bridge" or "singleton"
    other_entity: list[int]  # for a bridge: the second entity it resembles; -1 otherwise


def chained_records(
    n_entities: int,
    records_per_entity: tuple[int, int] = (2, 6),
    words: tuple[int, int] = (60, 120),
    step_edit_rate: tuple[float, float] = (0.05, 0.12),
    chain_prob: float = 0.8,
    sibling_fraction: float = 0.4,
    sibling_edit_rate: float = 0.3,
    n_bridges: int | None = None,
    bridge_mix: tuple[float, float] = (0.35, 0.5),
    n_singletons: int = 0,
    vocab_size: int = 20000,
    seed: int = 0,
) -> ChainedRecords:
    """Dedup data whose near-duplicates chain, with records that bridge two entities.

    * **Chains.** An entity's first record is its base text (Zipf words, as in
      :func:`planted_documents`); every further record is an edited copy of an
      earlier record of the entity — of the previous one with probability
      ``chain_prob`` (a chain A~B~C… whose ends drift apart), else of a random
      earlier one. Each copy edits ``step_edit_rate`` of the words of its parent
      (substitutions, deletions, insertions in equal parts).
    * **Siblings.** ``sibling_fraction`` of the entities come in pairs (2i, 2i+1)
      whose bases share the word positions except ``sibling_edit_rate`` of them
      (substitutions only): two different entities that look alike but stay
      below a sensible threshold.
    * **Bridges.** ``n_bridges`` records (default ``n_entities // 10``) belong to
      the first entity A of a sibling pair but take the word of the second
      entity B at a fraction ``bridge_mix`` (<= 0.5) of the positions where the
      two bases differ, then get one ordinary edit step: a record similar to
      both, so connected components merges A and B through it.
    * ``n_singletons`` unrelated one-record entities.

    ``entity`` is the truth; the order of the records is shuffled.
    """
    if not 0 <= bridge_mix[0] <= bridge_mix[1] <= 0.5:
        raise ValueError("bridge_mix must lie in [0, 0.5]: a bridge belongs to the entity it is closer to")
    rng = np.random.default_rng(seed)
    words_ = _Words(rng, vocab_size, seed)
    draw, render, edit = words_.draw, words_.render, words_.edit

    n_sibling_pairs = min(int(round(sibling_fraction * n_entities / 2)), n_entities // 2)
    bases: list[list[str]] = []
    for e in range(n_entities):
        if e % 2 == 1 and e // 2 < n_sibling_pairs:
            twin = list(bases[e - 1])
            for pos in rng.choice(len(twin), size=int(round(sibling_edit_rate * len(twin))), replace=False):
                twin[int(pos)] = draw(1)[0]
            bases.append(twin)
        else:
            bases.append(draw(int(rng.integers(words[0], words[1] + 1))))

    texts: list[list[str]] = []
    entity: list[int] = []
    kind: list[str] = []
    other: list[int] = []
    for e, base in enumerate(bases):
        members = [base]
        for _ in range(int(rng.integers(records_per_entity[0], records_per_entity[1] + 1)) - 1):
            parent = members[-1] if rng.random() < chain_prob else members[int(rng.integers(len(members)))]
            members.append(edit(parent, float(rng.uniform(*step_edit_rate))))
        for j, ws in enumerate(members):
            texts.append(ws)
            entity.append(e)
            kind.append("base" if j == 0 else "copy")
            other.append(-1)
    if n_bridges is None:
        n_bridges = n_entities // 10
    if n_bridges and n_sibling_pairs == 0:
        raise ValueError("bridges need sibling entities: set sibling_fraction > 0")
    for _ in range(n_bridges):
        i = int(rng.integers(n_sibling_pairs))
        a, b = bases[2 * i], bases[2 * i + 1]
        mix = float(rng.uniform(*bridge_mix))
        ws = [wb if wa != wb and rng.random() < mix else wa for wa, wb in zip(a, b)]
        texts.append(edit(ws, float(rng.uniform(*step_edit_rate))))
        entity.append(2 * i)
        kind.append("bridge")
        other.append(2 * i + 1)
    for s in range(n_singletons):
        texts.append(draw(int(rng.integers(words[0], words[1] + 1))))
        entity.append(n_entities + s)
        kind.append("singleton")
        other.append(-1)
    order = rng.permutation(len(texts))
    return ChainedRecords(
        ids=[f"r{i}" for i in range(len(texts))],
        texts=[render(texts[i]) for i in order],
        entity=[entity[i] for i in order],
        kind=[kind[i] for i in order],
        other_entity=[other[i] for i in order],
    )
