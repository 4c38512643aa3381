"""Stop-word shingles (SEEDS §7): fast kernel == reference; the Sudzo example."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.kernels import hash_strings, stopword_shingles, stopword_shingles_reference, word_ngrams

STOPS = ["i", "that", "you", "for", "your", "the", "a", "of"]


def test_sudzo_example() -> None:
    text = "i recommend that you buy sudzo for your laundry"
    got = set(stopword_shingles([text], STOPS, 2).row(0).tolist())
    expected = ["i recommend that", "that you buy", "you buy sudzo", "for your laundry"]
    # a stop-word shingle is the word 3-gram it spells
    assert got == {int(word_ngrams([e], 3).row(0)[0]) for e in expected}
    # "your laundry" has only one word after "your": no shingle starts there
    assert len(got) == 4


def test_no_stop_words_no_shingles_and_empty_texts() -> None:
    ts = stopword_shingles(["buy sudzo now best price", "", "the"], STOPS, 2)
    assert ts.sizes.tolist() == [0, 0, 0]
    assert len(hash_strings([])) == 0


words = st.sampled_from(STOPS + ["cat", "dog", "sudzo", "buy", "now", "ñandú", "日本"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(words, max_size=20).map(" ".join), max_size=8), st.integers(0, 3))
def test_fast_matches_reference(texts: list[str], n: int) -> None:
    fast = stopword_shingles(texts, STOPS, n)
    ref = stopword_shingles_reference(texts, STOPS, n)
    assert [fast.row(i).tolist() for i in range(len(texts))] == ref
