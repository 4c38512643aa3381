"""The shinglers' text preparation (er_plugins.documents.prepare) equals its per-text reference for every setting."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from er_plugins.documents import TextParams, prepare, prepare_reference

TEXT = st.text(alphabet=st.sampled_from(list("abcXYZ ,.;\t\n\r\u00a0\u2003\u3000\u00c5\u212b\ufb01\u00df\u0130é-_!?19")), max_size=40)
SETTINGS = [
    dict(zip(("nfkc", "lowercase", "fold_whitespace", "remove_punctuation"), flags)) for flags in itertools.product([True, False], repeat=4)
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(TEXT, st.text(max_size=30)), max_size=12))
def test_prepare_equals_the_reference_for_every_setting(texts: list[str]) -> None:
    for flags in SETTINGS:
        p = TextParams(**flags)
        assert prepare(texts, p) == prepare_reference(texts, p), flags


def test_prepare_folds_and_normalizes() -> None:
    p = TextParams()
    assert prepare(["  Ｆｉｌｅ\u00a0 NAME\t\tX ", "ǅ ß", ""], p) == ["file name x", "d\u017e ss", ""]
    assert prepare(["a,b  c"], TextParams(remove_punctuation=True)) == ["a b c"]
    assert prepare([" A  b "], TextParams(preset="raw")) == [" A  b "]
