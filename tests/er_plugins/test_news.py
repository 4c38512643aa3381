"""The `stopword` shingler: contract, stop lists, validation."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from er_framework.cli.main import main
from er_framework.components import Context
from er_framework.data import Records
from er_framework.kernels import word_ngrams
from er_framework.testing import check_shingler
from er_plugins.news import StopwordShingler, stop_list


@pytest.mark.parametrize("params", [{}, {"n": 1}, {"language": "spanish"}, {"stop_words": ["the", "a"]}])
def test_stopword_shingler_meets_the_contract(params: dict) -> None:
    check_shingler(StopwordShingler(StopwordShingler.Params(**params)))


def test_stop_lists_come_from_jusText() -> None:
    en, es = stop_list("english"), stop_list("spanish")
    assert {"the", "that", "you", "for"} <= set(en)
    assert {"el", "de", "que", "la"} <= set(es)
    assert all(w == w.casefold() and " " not in w for w in en)


def test_sudzo_with_the_english_list() -> None:
    recs = Records.from_columns(["a"], {"text": ["I recommend that you buy Sudzo for your laundry."]})
    got = set(StopwordShingler().shingle(recs).row(0).tolist())
    for shingle in ("i recommend that", "that you buy", "you buy sudzo", "for your laundry"):
        assert int(word_ngrams([shingle], 3).row(0)[0]) in got


def test_yaml_stop_words_override_language() -> None:
    recs = Records.from_columns(["a"], {"text": ["zorp blik flam zorp quux"]})
    assert StopwordShingler().shingle(recs).sizes.tolist() == [0]
    own = StopwordShingler(StopwordShingler.Params(stop_words=["zorp"])).shingle(recs)
    assert own.sizes.tolist() == [1]  # "zorp blik flam"; the last zorp has one word after it


def test_unknown_language_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d.jsonl").write_text(json.dumps({"id": "1", "text": "x"}) + "\n")
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent("""
        threshold: 0.5
        sources: [{name: d, path: d.jsonl, fields: [text]}]
        shingler: {type: stopword, language: englsh}
        signature: {type: minhash}
        blockers: [{type: lsh_bands}]
        verifier: {type: jaccard}
    """)
    )
    assert main(["validate", str(job)]) == 2
    err = capsys.readouterr().err
    assert "no stop list for language 'englsh'" in err and "did you mean 'english'?" in err
    assert StopwordShingler.check(StopwordShingler.Params(language="klingon"), Context())
