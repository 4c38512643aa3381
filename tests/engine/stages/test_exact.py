"""The exact-duplicate keys: digests of the normalized text, the same for any chunk size and workers."""

from __future__ import annotations

import numpy as np
import pytest

from er_framework.data import Records
from er_framework.engine.stages import exact
from er_framework.kernels import normalize_text, text_digest_reference

TITLES = ["Hello", None, "", "ＨＥＬＬＯ", "hello", "x", None, "ﬁne", "\ud800", "a  b"]
BODIES = ["World  ", "world", None, "\tworld", " WORLD", "", None, "FINE", "z", "c\u3000d"]


def _records() -> Records:
    rng = np.random.default_rng(3)
    titles = TITLES + [None if rng.random() < 0.1 else "T " * int(rng.integers(0, 30)) for _ in range(90)]
    bodies = BODIES + ["Body text  " * int(rng.integers(0, 200)) for _ in range(90)]
    return Records.from_columns([f"r{i}" for i in range(len(titles))], {"title": titles, "body": bodies})


def test_text_of_a_slice_and_text_sizes() -> None:
    recs = _records()
    whole = recs.text()
    assert whole[:3] == ["Hello World  ", "world", ""]  # missing and empty values contribute nothing
    for a, b in [(0, 0), (0, 5), (3, 40), (95, 100), (0, 100)]:
        assert recs.text(rows=slice(a, b)) == whole[a:b]
        assert recs.text(["body"], rows=slice(a, b)) == recs.text(["body"])[a:b]
    assert recs.text([], rows=slice(2, 5)) == ["", "", ""]
    sizes = recs.text_sizes()
    assert sizes.tolist() == [len(t or "") + len(u or "") for t, u in zip(recs.fields["title"], recs.fields["body"])]


@pytest.mark.parametrize("normalize", [True, False])
def test_keys_are_the_digests_for_any_chunk_size_and_workers(normalize: bool) -> None:
    recs = _records()
    texts = recs.text()
    want = [text_digest_reference(normalize_text(t) if normalize else t) for t in texts]
    nonempty = [bool(normalize_text(t)) if normalize else bool(t) for t in texts]
    for chunk in (1, 50, 700, exact.EXACT_CHUNK_CHARS):
        for workers in (1, 2):
            keys, ne = exact.exact_keys(recs, normalize, workers=workers, chunk_chars=chunk)
            assert keys.dtype == np.uint64 and keys.tolist() == want, (chunk, workers)
            assert ne.tolist() == nonempty
    keys, ne = exact.exact_keys(recs.take(np.zeros(0, dtype=np.int64)), normalize)
    assert len(keys) == 0 and len(ne) == 0


def test_copies_that_differ_in_case_width_and_spacing_are_one_group() -> None:
    recs = _records()
    keys, nonempty = exact.exact_keys(recs, True)
    found = exact.exact_groups_from_keys(keys, nonempty, recs.source, collapse=True)
    pairs = set(zip(found.pairs.left.tolist(), found.pairs.right.tolist()))
    # "Hello World", "ＨＥＬＬＯ\tworld", "hello WORLD" (NFKC, case folding, whitespace); "world" alone
    assert {(0, 3), (0, 4)} <= pairs and not any(1 in p for p in pairs)
    # empty texts (records 2 and 6) are nobody's duplicate
    assert not any(2 in p or 6 in p for p in pairs) and not nonempty[2] and not nonempty[6]
    # "ﬁne FINE" folds to "fine fine"; "a  b c\u3000d" to "a b c d"
    assert normalize_text(recs.text()[7]) == "fine fine" and normalize_text(recs.text()[9]) == "a b c d"
