"""SEEDS §1 claims about edits: local changes change only nearby shingles."""

from __future__ import annotations

from er_framework.kernels import char_shingles

TEXT = (
    "Minhashing compresses large sets into short signatures. Banding then finds candidate pairs. "
    "Candidates are verified with exact Jaccard similarity before clustering groups them."
)


def shingles(text: str, k: int) -> set[int]:
    return set(char_shingles([text], k).row(0).tolist())


def test_changing_one_word_changes_only_shingles_within_k_of_it() -> None:
    k = 5
    old, new = "large", "giant"
    pos = TEXT.index(old)
    edited = TEXT[:pos] + new + TEXT[pos + len(old) :]
    a, b = shingles(TEXT, k), shingles(edited, k)
    # windows that overlap the word: starts in [pos - k + 1, pos + len - 1]
    touched = len(old) + k - 1
    assert 0 < len(a - b) <= touched and 0 < len(b - a) <= touched
    # every shingle that does not overlap the word survives
    far = {TEXT[i : i + k] for i in range(len(TEXT) - k + 1) if i + k <= pos or i >= pos + len(old)}
    far_tokens = char_shingles(sorted(far), k)
    assert set(far_tokens.tokens.tolist()) <= b


def test_reordering_paragraphs_changes_about_2k_shingles_per_boundary() -> None:
    k = 5
    p1, p2, p3 = TEXT.split(". ")[:3]
    original = f"{p1}. {p2}. {p3}"
    reordered = f"{p3}. {p1}. {p2}"
    a, b = shingles(original, k), shingles(reordered, k)
    boundaries = 2  # '. ' joints in each text
    assert len(a ^ b) <= 2 * boundaries * (k - 1) + 2 * (k - 1)
    assert len(a & b) / len(a | b) > 0.8
