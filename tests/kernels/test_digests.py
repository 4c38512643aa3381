"""Whole-text digests and the exact-duplicate normalization: the vectorized kernels against per-text Python."""

from __future__ import annotations

import hashlib
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_framework.kernels import (
    normalize_text,
    normalized_digests,
    normalized_digests_reference,
    text_digest_reference,
    text_digests,
)
from er_framework.kernels.digests import SPACE_MAX, folded_texts, space_table

#: characters that exercise every branch: ASCII whitespace (including 0x1c-0x1f, which str.split takes and
#: bytes.split does not), Unicode whitespace (NBSP, U+2028, U+3000 …), letters NFKC or case folding change
#: (ﬁ, Ａ, ß, Ǆ, İ), characters of 2, 3 and 4 UTF-8 bytes, and a lone surrogate (a JSON "\ud800" escape)
ALPHABET = "aB Z\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000ﬁＡßǄİé€😀\ud800\udfff"
texts_strategy = st.lists(st.text(alphabet=ALPHABET, max_size=30), max_size=12)
ascii_strategy = st.lists(st.text(alphabet=st.characters(max_codepoint=127), max_size=40), max_size=12)


def test_the_digest_is_blake2b_64_of_the_utf8_bytes_little_endian() -> None:
    def spelled(s: str) -> int:
        return int.from_bytes(hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest(), "little")

    texts = ["", "abc", "héllo wörld"]
    assert text_digests(texts).tolist() == [spelled(t) for t in texts] == [text_digest_reference(t) for t in texts]
    # pinned: the keys an index stores (FORMAT_VERSION 2); a change here must bump it
    assert text_digests(texts).tolist() == [13020603013274838756, 6455300059550759896, 1394302091215309163]
    assert text_digests(texts).dtype == np.uint64 and len(text_digests([])) == 0
    # a lone surrogate has a digest (its three surrogatepass bytes), distinct from its neighbours
    odd = text_digests(["\ud800", "\udfff", "\ud800\udfff"]).tolist()
    assert odd == [text_digest_reference(t) for t in ["\ud800", "\udfff", "\ud800\udfff"]] and len(set(odd)) == 3


@settings(max_examples=300, deadline=None)
@given(texts=texts_strategy)
def test_normalized_digests_equal_the_per_text_reference(texts: list[str]) -> None:
    digests, nonempty = normalized_digests(texts)
    ref_digests, ref_nonempty = normalized_digests_reference(texts)
    assert digests.dtype == np.uint64 and digests.tolist() == ref_digests
    assert nonempty.tolist() == ref_nonempty
    assert folded_texts(texts, normalize=True) == [normalize_text(t) for t in texts]
    assert folded_texts(texts) == [" ".join(t.split()) for t in texts]


@settings(max_examples=300, deadline=None)
@given(texts=ascii_strategy)
def test_the_ascii_path_equals_nfkc_casefold_and_split(texts: list[str]) -> None:
    """ASCII texts skip NFKC (the identity on ASCII) and fold case with one str.lower of the whole batch."""
    assert all(t.isascii() for t in texts)
    assert [normalize_text(t) for t in texts] == [" ".join(unicodedata.normalize("NFKC", t).casefold().split()) for t in texts]
    digests, nonempty = normalized_digests(texts)
    assert digests.tolist() == [text_digest_reference(" ".join(t.lower().split())) for t in texts]
    assert nonempty.tolist() == [bool(t.split()) for t in texts]
    assert folded_texts(texts, normalize=True) == [" ".join(t.lower().split()) for t in texts]


def test_ascii_and_unicode_texts_mixed_in_one_batch_keep_their_order() -> None:
    texts = ["  A  b ", "Ａ  ｂ", "", "\t", "x\u3000y", "x y", "ﬁne", "fine", "FINE\n"]
    digests, nonempty = normalized_digests(texts)
    assert digests.tolist() == normalized_digests_reference(texts)[0]
    assert nonempty.tolist() == [True, True, False, False, True, True, True, True, True]
    # NFKC + case folding + whitespace make these equal
    assert digests[0] == digests[1] and digests[4] == digests[5] and digests[6] == digests[7] == digests[8]
    assert len(normalized_digests([])[0]) == 0 and folded_texts([]) == []


def test_the_whitespace_table_is_str_isspace_for_every_code_point() -> None:
    table = space_table()
    assert table.tolist() == [chr(c).isspace() for c in range(SPACE_MAX + 1)] + [False]
    assert table[SPACE_MAX]  # U+3000 is the last one
    assert not any(chr(c).isspace() for c in range(SPACE_MAX + 1, 0x110000))


@pytest.mark.parametrize("text", ["a" * 5000, " " * 3000 + "x", "x" + " \n" * 2000, "é" * 3000 + "  z "])
def test_long_texts_with_long_runs(text: str) -> None:
    texts = [text, text.upper(), "", text]
    assert normalized_digests(texts)[0].tolist() == normalized_digests_reference(texts)[0]
    assert folded_texts(texts) == [" ".join(t.split()) for t in texts]
