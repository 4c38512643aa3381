"""Tests of er_framework.synth.news_corpus: determinism, families kept apart, shared text only as planned, files."""

from __future__ import annotations

import csv
import itertools
import re
from collections import Counter
from pathlib import Path

import pytest

from er_framework.io.html import extract_text
from er_framework.synth.news_corpus import (
    FAMILIES,
    HELDOUT_FAMILIES,
    TUNE_FAMILIES,
    Corpus,
    disclaimers,
    family_text,
    make_corpus,
    resolve_families,
    split_sentences,
    story_sentences,
    write_corpus,
)

N = 600


@pytest.fixture(scope="module")
def tune() -> Corpus:
    return make_corpus(N, "tune", 1)


@pytest.fixture(scope="module")
def heldout() -> Corpus:
    return make_corpus(N, "heldout", 101)


def test_families_split_four_and_four() -> None:
    assert len(FAMILIES) >= 8 and len(TUNE_FAMILIES) == 4 and len(HELDOUT_FAMILIES) == 4
    assert not set(TUNE_FAMILIES) & set(HELDOUT_FAMILIES)
    assert all(3 <= len(f.sites) <= 6 for f in FAMILIES)
    sites = [s for f in FAMILIES for s in f.sites]
    assert len(sites) == len(set(sites))
    # families differ in structure, not only in text
    assert len({(f.para_sentences, f.layout, f.about_at, f.legal_at, f.newsletter_inline) for f in FAMILIES}) == 8
    assert [f.name for f in resolve_families("all")] == [f.name for f in FAMILIES]
    assert [f.name for f in resolve_families("portal,magazine")] == ["portal", "magazine"]
    with pytest.raises(ValueError, match="unknown template family 'nope'"):
        resolve_families("tune,nope")


def test_deterministic_per_seed_and_seeds_differ(tune: Corpus) -> None:
    again = make_corpus(N, "tune", 1)
    assert [(p.page_id, p.html) for p in again.pages] == [(p.page_id, p.html) for p in tune.pages]
    other = make_corpus(N, "tune", 2)
    assert {p.page_id for p in other.pages} != {p.page_id for p in tune.pages}


def test_counts_ids_and_stories(tune: Corpus, heldout: Corpus) -> None:
    for c, fams in ((tune, TUNE_FAMILIES), (heldout, HELDOUT_FAMILIES)):
        assert len(c.pages) == N
        ids = [p.page_id for p in c.pages]
        assert len(set(ids)) == N  # a story at most once per site
        assert all(p.page_id == f"{p.site}/{p.story}" for p in c.pages)
        assert {p.family for p in c.pages} == set(fams)
        per_story = Counter(p.story for p in c.pages)
        assert max(per_story.values()) <= 6 and min(per_story.values()) == 1  # singletons included
        assert 2.5 <= N / len(per_story) <= 4  # about one story per three pages
        assert not c.recycled_pairs
        cut = [p for p in c.pages if p.cut]
        assert 0.15 * N < len(cut) < 0.5 * N
        fractions = [p.sentences / len(s.units) for s in c.stories for p in c.pages if p.story == s.story and p.cut]
        assert min(fractions) >= 0.3 and max(fractions) < 1


def test_short_paragraph_families(tune: Corpus) -> None:
    by_family: dict[str, list[float]] = {}
    for p in tune.pages:
        by_family.setdefault(p.family, []).append(p.sentences / p.paragraphs)
    assert max(by_family["tabloid"]) <= 2 and max(by_family["portal"]) <= 2
    assert sum(by_family["broadsheet"]) / len(by_family["broadsheet"]) > 2


def _sentences(corpus: Corpus) -> set[str]:
    texts, _ = extract_text([p.html for p in corpus.pages], boilerplate="keep")
    # sentences of 4+ words ending in . ! or ? (button labels such as "Accept all Reject all" are not sentences)
    return {s for t in texts for s in split_sentences(t or "") if len(s.split()) >= 4 and s[-1] in ".!?"}


def test_tune_and_heldout_share_no_chrome_or_disclaimer_sentence(tune: Corpus, heldout: Corpus) -> None:
    pool = set(story_sentences())
    a, b = _sentences(tune), _sentences(heldout)
    # the family chrome and the disclaimers are on the pages ...
    for fam, sents in (("broadsheet", a), ("magazine", b)):
        text = family_text(fam)
        assert all(any(x in s for s in sents) for x in text.cookie + text.about)
    assert any(d.text in s or d.sentences[0] in s for d in disclaimers("heldout") for s in b)
    # ... and apart from story sentences (drawn from one pool by every corpus), no sentence is on both sides
    common = {s for s in a & b if not any(x in s for x in pool)}
    assert not common, sorted(common)[:5]
    tune_text = {s for f in TUNE_FAMILIES for blk in vars(family_text(f)).values() for s in blk}
    tune_text |= {s for d in disclaimers("tune") for s in d.sentences}
    held_text = {s for f in HELDOUT_FAMILIES for blk in vars(family_text(f)).values() for s in blk}
    held_text |= {s for d in disclaimers("heldout") for s in d.sentences}
    assert not tune_text & held_text and not (tune_text | held_text) & pool


def test_different_stories_share_sentences_only_as_planned(tune: Corpus) -> None:
    c = tune
    stories = {s.story: s for s in c.stories}
    shared_by_disclaimer = shared_by_background = 0
    for p, q in itertools.combinations(c.pages, 2):
        if p.story == q.story:
            continue
        common = set(p.units) & set(q.units)
        if not common:
            continue
        story_units = {u for u in common if not u.startswith("d:")}
        disc_units = common - story_units
        if disc_units:
            shared_by_disclaimer += 1
            keys = {u.rsplit(":", 1)[0][2:] for u in disc_units}
            assert keys <= {p.wire_disclaimer, p.site_disclaimer} & {q.wire_disclaimer, q.site_disclaimer}
        if story_units:
            shared_by_background += 1
            sp, sq = stories[p.story], stories[q.story]
            # one repeats sentences of the other (or both repeat a third story's)
            assert story_units <= set(sp.background_units) | set(sq.background_units), (p.page_id, q.page_id)
    assert shared_by_disclaimer > 100 and shared_by_background > 10
    # the rates: stories with a wire disclaimer, background sentences; pages with a site disclaimer
    n = len(c.stories)
    wire = sum(s.wire_disclaimer is not None for s in c.stories) / n
    bg = sum(s.background_from is not None for s in c.stories) / n
    site = sum(p.site_disclaimer is not None for p in c.pages) / len(c.pages)
    assert 0.15 < wire < 0.35 and 0.1 < bg < 0.3 and 0.08 < site < 0.22
    # several different stories carry each used wire disclaimer
    stories_per_disclaimer = Counter(d for _, d in {(p.story, p.wire_disclaimer) for p in c.pages if p.wire_disclaimer})
    assert len(stories_per_disclaimer) >= 10 and sorted(stories_per_disclaimer.values())[-5] >= 3


def test_recorded_units_are_the_page_text(tune: Corpus) -> None:
    pool = story_sentences()
    discl = {d.key: d for d in disclaimers("tune")}
    for p in tune.pages[:80]:
        (text,), _ = extract_text([p.html], boilerplate="keep")
        assert text is not None
        for u in p.units:
            if u.startswith("d:"):
                key, j = u[2:].rsplit(":", 1)
                assert discl[key].sentences[int(j)] in text
            elif "typo" not in p.edits:
                assert pool[int(u[1:])] in text


def test_rates_are_parameters() -> None:
    plain = make_corpus(200, "heldout", 3, wire_disclaimer_rate=0, site_disclaimer_rate=0, background_rate=0, cut_rate=0, edit_rate=0)
    assert not any(p.cut or p.wire_disclaimer or p.site_disclaimer or p.background_from or p.edits for p in plain.pages)
    for p, q in itertools.combinations(plain.pages, 2):
        if p.story != q.story:
            assert not set(p.units) & set(q.units)
        else:
            assert p.units == q.units
    with pytest.raises(ValueError, match="cut_rate"):
        make_corpus(10, cut_rate=1.5)
    with pytest.raises(ValueError, match="n_pages"):
        make_corpus(0)


def test_edits_happen() -> None:
    c = make_corpus(400, "tune", 5, edit_rate=1.0)
    kinds = Counter(e for p in c.pages for e in p.edits)
    assert set(kinds) == {"headline", "typo", "dropped"}
    first = {p.story: p for p in c.pages}
    changed = [p for p in c.pages if "headline" in p.edits]
    assert any(re.search(r"<h1>(.*?)</h1>", p.html) and first[p.story].html != p.html for p in changed)


def test_write_corpus(tmp_path: Path) -> None:
    c = make_corpus(40, "all", 7)
    paths = write_corpus(c, tmp_path)
    files = sorted(p.relative_to(paths["pages"]).as_posix()[: -len(".html")] for p in paths["pages"].rglob("*.html"))
    with open(paths["truth"], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["id", "story", "site", "family", "paragraphs", "cut"]
    assert sorted(r["id"] for r in rows) == files == sorted(p.page_id for p in c.pages)
    assert all(r["cut"] in ("0", "1") and int(r["paragraphs"]) >= 1 for r in rows)
    with open(paths["shared"], newline="", encoding="utf-8") as f:
        shared = list(csv.DictReader(f))
    assert [r["id"] for r in shared] == [r["id"] for r in rows]
