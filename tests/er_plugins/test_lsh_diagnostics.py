"""lsh_bands diagnostics (er_plugins.documents.LshBands.diagnostics): bounded work on any input (issue 18, case 19).

The measured S-curve probes sampled pairs with their exact Jaccard. A huge
record (a 50 MB JSON value) made it shingle and sort that record's tokens for
every pair it was in (past 4 GB). Now records over the per-record limits are
never shingled or probed, the pairs' tokens fit a budget, the output says
so, and without any of that the output is what it was.
"""

from __future__ import annotations

import random
import string
from typing import Any

import numpy as np
import pytest

import er_plugins.documents as docs
from er_framework.components import Context
from er_framework.data import Batch, Records, TokenSets
from er_plugins.documents import CharShingler, LshBands, MinHash
from er_plugins.oph import FastSimilaritySketch


def corpus(n: int, seed: int = 1) -> list[str]:
    """Families of near-copies (so that every similarity bin has pairs) and singletons."""
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 8))) for _ in range(3000)]
    texts: list[str] = []
    while len(texts) < n:
        base = rng.choices(words, k=rng.randint(30, 80))
        for _ in range(rng.randint(1, 4)):
            copy = [w if rng.random() > rng.choice([0.02, 0.1, 0.3]) else rng.choice(words) for w in base]
            texts.append(" ".join(copy))
    return texts[:n]


def make_batch(texts: list[str], *, keep_tokens: bool) -> tuple[Batch, list[int]]:
    """A batch as the pipeline makes it; with ``keep_tokens=False`` the token sets are recomputed on
    demand (streamed), and the returned list counts every token shingled that way."""
    records = Records(
        ids=[str(i) for i in range(len(texts))],
        source=np.zeros(len(texts), dtype=np.int32),
        source_names=["s"],
        fields={"text": list(texts)},
    )
    shingler = CharShingler(CharShingler.Params(k=4))
    tokens = shingler.shingle(records)
    sig = MinHash(MinHash.Params(num_perm=64), Context(seed=3)).build(tokens)
    shingled: list[int] = []

    def source(rows: np.ndarray) -> TokenSets:
        ts = shingler.shingle(records.take(rows))
        shingled.append(int(ts.sizes.sum()))
        return ts

    batch = Batch(records=records, tokens=tokens if keep_tokens else None, signatures=sig, token_source=None if keep_tokens else source)
    return batch, shingled


def blocker() -> LshBands:
    return LshBands(LshBands.Params(bands=16, rows=4), Context(seed=3, threshold=0.5))


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Tokens the diagnostics compare (|A| + |B| of every pair given to jaccard_pairs)."""
    seen: list[int] = []
    real = docs.jaccard_pairs

    def spy(ts: TokenSets, left: np.ndarray, right: np.ndarray, **kw: object) -> np.ndarray:
        seen.append(int(ts.sizes[left].sum() + ts.sizes[right].sum()))
        return real(ts, left, right, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(docs, "jaccard_pairs", spy)
    return seen


@pytest.fixture
def no_small_corpus_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The token budget's floor is PROBE_MIN_TOKENS, as for a corpus of 2 M characters or more (these test
    corpora are smaller: their own floor is PROBE_SMALL_FACTOR times their characters)."""
    monkeypatch.setattr(docs, "PROBE_SMALL_FACTOR", 10**9)


def test_ordinary_input_is_not_capped(no_small_corpus_floor: None) -> None:
    texts = corpus(400)
    kept = blocker().diagnostics(make_batch(texts, keep_tokens=True)[0], 300)
    streamed = blocker().diagnostics(make_batch(texts, keep_tokens=False)[0], 300)
    assert kept is not None and "capped" not in kept["s_curve"]
    assert kept == streamed


@pytest.mark.parametrize("keep_tokens", [True, False])
def test_a_huge_record_is_never_shingled_nor_compared(keep_tokens: bool, compared: list[int]) -> None:
    texts = corpus(400)
    rng = random.Random(7)
    huge = " ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(150_000))  # ~1 MB, ~1M tokens
    assert len(huge) > docs.PROBE_MAX_RECORD_CHARS
    batch, shingled = make_batch(texts + [huge], keep_tokens=keep_tokens)
    huge_tokens = int(CharShingler(CharShingler.Params(k=4)).shingle(batch.records.take([len(texts)])).sizes[0])
    d = blocker().diagnostics(batch, 300)
    assert d is not None
    capped = d["s_curve"]["capped"]
    assert capped["records_skipped_long_text"] == 1 and capped["max_record_chars"] == docs.PROBE_MAX_RECORD_CHARS
    # the huge record's ~1M tokens are neither shingled (streamed) nor compared
    small_total = sum(len(t) for t in texts)  # at most one token per character
    assert sum(shingled) <= 2 * small_total < huge_tokens  # the probe pass, then the records of the pairs
    assert sum(compared) == capped["tokens_compared"] <= docs.PROBE_MAX_TOKENS
    # the other records are measured as without the huge one
    alone = blocker().diagnostics(make_batch(texts, keep_tokens=True)[0], 300)
    assert alone is not None
    for key in ("pairs", "candidates", "measured_rate", "predicted_rate"):
        assert d["s_curve"][key] == alone["s_curve"][key]


def test_a_record_with_too_many_tokens_is_not_probed(monkeypatch: pytest.MonkeyPatch, compared: list[int]) -> None:
    texts = corpus(300)
    batch, _ = make_batch(texts, keep_tokens=True)
    assert batch.tokens is not None
    biggest = int(np.argmax(batch.tokens.sizes))
    monkeypatch.setattr(docs, "PROBE_MAX_RECORD_TOKENS", int(batch.tokens.sizes[biggest]) - 1)
    d = blocker().diagnostics(batch, 200)
    assert d is not None
    assert d["s_curve"]["capped"]["records_skipped_many_tokens"] == int((batch.tokens.sizes > docs.PROBE_MAX_RECORD_TOKENS).sum()) >= 1


@pytest.mark.parametrize("keep_tokens", [True, False])
def test_the_pairs_tokens_stay_within_the_budget(
    monkeypatch: pytest.MonkeyPatch, compared: list[int], keep_tokens: bool, no_small_corpus_floor: None
) -> None:
    texts = corpus(400)
    full = blocker().diagnostics(make_batch(texts, keep_tokens=keep_tokens)[0], 300)
    assert full is not None and compared
    all_tokens = compared[-1]
    budget = all_tokens // 5
    monkeypatch.setattr(docs, "PROBE_MAX_TOKENS", budget)
    compared.clear()
    batch, shingled = make_batch(texts, keep_tokens=keep_tokens)
    d = blocker().diagnostics(batch, 300)
    assert d is not None
    curve, capped = d["s_curve"], d["s_curve"]["capped"]
    assert sum(compared) == capped["tokens_compared"] <= budget
    assert capped["pairs_before_token_budget"] == full["s_curve"]["pairs_sampled"] > curve["pairs_sampled"] > 0
    # honest counts: the bins hold the pairs measured, the rates are theirs
    assert sum(curve["pairs"]) == curve["pairs_sampled"]
    for n, c, m in zip(curve["pairs"], curve["candidates"], curve["measured_rate"]):
        assert (m is None) == (n == 0) and (n == 0 or m == round(c / n, 4))
    if not keep_tokens:  # shingled: the probe pass over the corpus, then only the records of kept pairs
        assert sum(shingled) <= sum(len(t) for t in texts) + budget


def test_a_small_corpus_compares_at_most_a_few_times_its_characters(compared: list[int]) -> None:
    """A small corpus's probe compares at most PROBE_SMALL_FACTOR times its characters (the 4 M-token floor
    alone cost more than the rest of a small job); every similarity range keeps pairs, most of the cut is the
    random partners' (Jaccard ~0), and the counts are those of the pairs measured."""
    texts = corpus(400)
    chars = sum(len(t) for t in texts)
    d = blocker().diagnostics(make_batch(texts, keep_tokens=True)[0], 300)
    assert d is not None
    curve, capped = d["s_curve"], d["s_curve"]["capped"]
    assert capped["token_budget"] == docs.PROBE_SMALL_FACTOR * chars < docs.PROBE_MIN_TOKENS
    assert sum(compared) == capped["tokens_compared"] <= capped["token_budget"]
    assert capped["pairs_before_token_budget"] > curve["pairs_sampled"] > 0
    assert sum(curve["pairs"]) == curve["pairs_sampled"]
    for n, c, m in zip(curve["pairs"], curve["candidates"], curve["measured_rate"]):
        assert (m is None) == (n == 0) and (n == 0 or m == round(c / n, 4))
    with pytest.MonkeyPatch.context() as mp:  # the same probe without the floor
        mp.setattr(docs, "PROBE_SMALL_FACTOR", 10**9)
        full = blocker().diagnostics(make_batch(texts, keep_tokens=True)[0], 300)
    assert full is not None and "capped" not in full["s_curve"]
    # every similarity range the full probe measured keeps pairs; most of the cut is the lowest bin's
    assert [n > 0 for n in full["s_curve"]["pairs"]] == [n > 0 for n in curve["pairs"]]
    cut = [a - b for a, b in zip(full["s_curve"]["pairs"], curve["pairs"])]
    assert min(cut) >= 0 and cut[0] > sum(cut[1:])


# ---------------------------------------------------------------- the probe on spare signature columns (issue 15)


def spare_batch(texts: list[str], builder: Any = MinHash) -> tuple[Batch, list[int]]:
    """A streamed batch whose signature has more values than the 16 x 4 banding uses."""
    records = Records(
        ids=[str(i) for i in range(len(texts))],
        source=np.zeros(len(texts), dtype=np.int32),
        source_names=["s"],
        fields={"text": list(texts)},
    )
    shingler = CharShingler(CharShingler.Params(k=4))
    sig = builder(builder.Params(num_perm=128), Context(seed=3)).build(shingler.shingle(records))
    shingled: list[int] = []

    def source(rows: np.ndarray) -> TokenSets:
        ts = shingler.shingle(records.take(rows))
        shingled.append(int(ts.sizes.sum()))
        return ts

    return Batch(records=records, signatures=sig, token_source=source), shingled


def test_spare_columns_probe_shingles_only_the_records_of_measured_pairs() -> None:
    batch, shingled = spare_batch(corpus(600))
    d = blocker().diagnostics(batch, 400)
    assert d is not None
    curve = d["s_curve"]
    assert curve["probe"] == "spare columns 64..79"
    # no probe pass over the corpus: only the records of the measured pairs are shingled, once
    assert 0 < sum(shingled) <= curve["tokens_compared"]
    assert sum(curve["pairs"]) == curve["pairs_sampled"] > 0


@pytest.mark.parametrize("builder", [MinHash, FastSimilaritySketch])
def test_spare_columns_probe_follows_the_s_curve(builder: Any) -> None:
    """With the probe on spare columns the measured rate per bin still matches 1 - (1 - s^r)^b
    (for FSS too, whose columns are bins of one hash rather than independent hash functions)."""
    batch, _ = spare_batch(corpus(3000, seed=4), builder)
    d = blocker().diagnostics(batch, 1500)
    assert d is not None
    curve = d["s_curve"]
    checked = 0
    for n, c, pred in zip(curve["pairs"], curve["candidates"], curve["predicted_rate"]):
        if n >= 40 and pred is not None:
            se = (pred * (1 - pred) / n) ** 0.5
            assert abs(c / n - pred) <= 4 * se + 0.02, (n, c, pred)
            checked += 1
    assert checked >= 3


def test_the_budget_is_a_share_of_the_corpus(monkeypatch: pytest.MonkeyPatch, compared: list[int]) -> None:
    texts = corpus(600)
    monkeypatch.setattr(docs, "PROBE_MIN_TOKENS", 1000)
    batch, shingled = spare_batch(texts)
    d = blocker().diagnostics(batch, 400)
    assert d is not None
    curve, capped = d["s_curve"], d["s_curve"]["capped"]
    budget = int(docs.PROBE_TOKEN_SHARE * sum(len(t) for t in texts))
    assert capped["token_budget"] == budget
    assert sum(compared) == curve["tokens_compared"] <= budget and sum(shingled) <= budget
    assert capped["pairs_before_token_budget"] > curve["pairs_sampled"] > 0


def round_robin_reference(strata: np.ndarray, cost: np.ndarray, budget: int, seed: int) -> list[int]:
    """Loop version of round_robin_within (the same random order within each stratum)."""
    shuffled = np.random.default_rng(seed).permutation(len(strata)).tolist()
    queues = {int(s): [i for i in shuffled if strata[i] == s] for s in sorted(set(strata.tolist()))}
    taken, total, depth = [], 0, 0
    while any(depth < len(q) for q in queues.values()):
        for s in sorted(queues):
            q = queues[s]
            if depth < len(q):
                if total + int(cost[q[depth]]) > budget:
                    return sorted(taken)
                total += int(cost[q[depth]])
                taken.append(q[depth])
        depth += 1
    return sorted(taken)


@pytest.mark.parametrize("seed", range(20))
def test_round_robin_within_matches_a_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    strata = rng.integers(0, 5, n).astype(np.int64)
    cost = rng.integers(1, 20, n).astype(np.int64)
    budget = int(rng.integers(0, 400))
    got = docs.round_robin_within(strata, cost, budget, np.random.default_rng(seed + 100))
    assert got.tolist() == round_robin_reference(strata, cost, budget, seed + 100)
    assert int(cost[got].sum()) <= budget


def _round_robin_reference(strata, cost, budget, rng):
    """round_robin_within as first written (np.lexsort by rank, then stratum): the fast path's reference."""
    n = len(strata)
    shuffled = rng.permutation(n)
    order = shuffled[np.argsort(strata[shuffled], kind="stable")]
    st = strata[order]
    rank = np.arange(n) - np.searchsorted(st, st, side="left")
    visit = order[np.lexsort((st, rank))]
    return np.sort(visit[np.cumsum(cost[visit]) <= budget])


def test_round_robin_within_equals_the_lexsort_reference() -> None:
    from er_plugins.documents import round_robin_within

    for seed in range(200):
        r = np.random.default_rng(seed)
        n = int(r.integers(0, 300))
        strata = r.integers(-3, 9, n).astype(np.int64)
        cost = r.integers(1, 50, n).astype(np.int64)
        budget = int(r.integers(0, 3000))
        got = round_robin_within(strata, cost, budget, np.random.default_rng(seed + 1))
        assert np.array_equal(got, _round_robin_reference(strata, cost, budget, np.random.default_rng(seed + 1)))


def test_probe_partners_counts_the_shared_probe_bands() -> None:
    """The shared count (one probe band at a time) against comparing whole rows."""
    from er_plugins.documents import probe_partners

    r = np.random.default_rng(4)
    probe = r.integers(0, 5, (300, 8)).astype(np.uint64)
    local, shared = probe_partners(probe, r.choice(300, 40, replace=False), np.random.default_rng(1))
    assert len(local) > 100
    assert np.array_equal(shared, (probe[local.left] == probe[local.right]).sum(axis=1))
