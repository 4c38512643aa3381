"""SEEDS §7 evidence: stop-word shingles see the article through page chrome and ads.

For 300 generated comparisons (article A, article B, ad sets X, Y, site
templates T1, T2; :mod:`er_framework.synth.news`) the pages
page(A, X, T1), page(A', Y, T2) (A' = A, or A cut on 30 % of them) and
page(B, X, T1) are rendered as HTML, their visible text is extracted with
the chrome and the ads kept, and each shingler (the ``er_plugins``
components, default text options) must tell
J(same article, different ads and site) > J(same ads and site, different article).

Measured on CPython 3.11.7 (deterministic for a given Python version: the
prose comes from its standard-library docstrings), ``pytest -s`` prints:

    stopword n=2 english   rate 1.000   mean J same article 0.546, same ads 0.159
    char k=5               rate 0.333   mean J same article 0.428, same ads 0.461
    word n=2               rate 0.427   mean J same article 0.327, same ads 0.348

(over seeds 0-19 of the same generator: stopword 0.997-1.000, char 0.20-0.47,
word 0.26-0.55).

The page text is about 65 % chrome and ads, so character shingles and word
bigrams mostly compare the chrome; stop-word shingles mostly compare the prose.

The last test runs ``configs/news.yaml`` on the shipped pages
(``configs/data/news``) and checks its clusters against ``truth.csv``.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from er_framework.data import Records
from er_framework.kernels import jaccard_pairs
from er_framework.synth.news import (
    make_ads,
    make_articles,
    make_page,
    make_quadruples,
    make_template,
    prose_paragraphs,
    quadruple,
    sample_pages,
)
from er_plugins.documents import CharShingler, WordShingler
from er_plugins.news import StopwordShingler, stop_list

ROOT = Path(__file__).resolve().parents[2]
N_QUADRUPLES = 300
SEED = 11


def visible_text(pages: list[str]) -> list[str]:
    """Visible text of HTML pages, chrome and ads kept (the framework's extractor when present)."""
    try:
        from er_framework.io.html import extract_text
    except ImportError:  # the HTML input is not in this checkout: same rules, locally
        from selectolax.lexbor import LexborHTMLParser

        out = []
        for page in pages:
            tree = LexborHTMLParser(page)
            tree.strip_tags(["script", "style", "noscript", "template", "svg", "head", "iframe", "object"])
            for node in tree.body.css("p,div,li,ul,h1,h2,h3,h4,aside,section,nav,header,footer,main,article,button,img,form,input"):
                node.insert_before(" ")
                node.insert_after(" ")
            out.append(" ".join(tree.body.text().split()))
        return out
    texts, _ = extract_text(pages, boilerplate="keep")
    return [t or "" for t in texts]


SHINGLERS = {
    "stopword n=2 english": lambda: StopwordShingler(StopwordShingler.Params(n=2, language="english")),
    "char k=5": lambda: CharShingler(CharShingler.Params(k=5)),
    "word n=2": lambda: WordShingler(WordShingler.Params(n=2)),
}


def comparison_jaccards(texts: list[str], shingler) -> tuple[np.ndarray, np.ndarray]:
    """J(same article, different ads) and J(same ads, different article) per quadruple.

    ``texts`` are the three pages of each quadruple in order (A-X-T1, A-Y-T2, B-X-T1).
    """
    recs = Records.from_columns([str(i) for i in range(len(texts))], {"text": texts})
    tokens = shingler.shingle(recs)
    first = np.arange(0, len(texts), 3, dtype=np.int64)
    return jaccard_pairs(tokens, first, first + 1), jaccard_pairs(tokens, first, first + 2)


@pytest.fixture(scope="module")
def quads_and_texts():
    quads = make_quadruples(N_QUADRUPLES, seed=SEED)
    pages = [p for q in quads for p in (q.a_x_t1, q.a_y_t2, q.b_x_t1)]
    return quads, visible_text(pages)


@pytest.fixture(scope="module")
def rates(quads_and_texts):
    _, texts = quads_and_texts
    out = {}
    for name, make in SHINGLERS.items():
        same_article, same_ads = comparison_jaccards(texts, make())
        out[name] = (float(np.mean(same_article > same_ads)), same_article, same_ads)
    return out


# ----------------------------------------------------------------------------
# the generator


def test_prose_is_real_ordinary_english() -> None:
    paras = prose_paragraphs()
    assert len(paras) >= 400 and len(set(paras)) == len(paras)
    stops = set(stop_list("english"))
    for p in paras:
        assert len(p) >= 150 and p[0].isupper() and p.endswith(".")
        words = re.findall(r"\w+", p.lower())
        assert sum(w in stops for w in words) >= 0.2 * len(words), p  # prose, not code or lists


def test_articles_are_disjoint_and_seeded() -> None:
    arts = make_articles(60, seed=3)
    assert arts == make_articles(60, seed=3) and arts != make_articles(60, seed=4)
    assert all(4 <= len(a.paragraphs) <= 8 for a in arts)
    paras = [p for a in arts for p in a.paragraphs]
    assert len(paras) == len(set(paras))
    assert len({a.story for a in arts}) == 60
    assert arts[0].cut(2).paragraphs == arts[0].paragraphs[:2]
    with pytest.raises(ValueError, match="prose paragraphs"):
        make_articles(500, seed=0)


def test_pages_are_seeded_and_same_template_same_ads_same_chrome() -> None:
    a, b = make_articles(2, seed=1)
    t, x = make_template(5), make_ads(5)
    assert make_page(a, t, x, 9) == make_page(a, t, x, 9)
    q = quadruple(a, b, x, make_ads(6), t, make_template(6), seed=2, a_cut=len(a.paragraphs) - 1)
    p1, p2, p3 = visible_text([q.a_x_t1, q.a_y_t2, q.b_x_t1])
    for ad in x.ads:  # ads of X on both X pages, not on the Y page
        assert ad.headline in p1 and ad.headline in p3 and ad.headline not in p2
    for para in a.paragraphs[:-1]:
        assert para in p1 and para in p2 and para not in p3
    assert a.paragraphs[-1] in p1 and a.paragraphs[-1] not in p2  # the cut
    assert t.name in p1 and t.name in p3 and "<" not in p1 and "dataLayer" not in p1  # no markup, no script


def test_ads_are_stop_word_poor_and_chrome_is_most_of_the_page(quads_and_texts) -> None:
    quads, texts = quads_and_texts
    stops = set(stop_list("english"))

    def stop_share(text: str) -> float:
        words = re.findall(r"\w+", text.casefold())
        return sum(w in stops for w in words) / max(1, len(words))

    ad_text = " ".join(ad.text for q in quads[:50] for ad in q.x.ads)
    article_text = " ".join(q.a.text for q in quads[:50])
    ads, article = stop_share(ad_text), stop_share(article_text)
    print(f"\nstop words: {ads:.0%} of the ad words, {article:.0%} of the article words")
    assert ads < 0.15 and article > 0.4  # jusText's English list is broad: "best", "new", "now", "off" are on it
    article_chars = np.array([len(q.a.text) for q in quads])
    page_chars = np.array([len(texts[3 * i]) for i in range(len(quads))])
    chrome_share = 1 - article_chars.sum() / page_chars.sum()
    print(
        f"\nchrome and ads: {chrome_share:.0%} of the visible text "
        f"(article {article_chars.mean():.0f} chars, page {page_chars.mean():.0f} chars)"
    )
    assert chrome_share >= 0.5  # chrome + ads at least as long as the article


# ----------------------------------------------------------------------------
# the seed's claim


def test_stop_word_shingles_see_the_article_through_chrome_and_ads(rates) -> None:
    print(f"\n{N_QUADRUPLES} quadruples (seed {SEED}): rate = share with J(same article, other ads+site) > J(same ads+site, other article)")
    for name, (rate, same_article, same_ads) in rates.items():
        print(f"  {name:22s} rate {rate:.3f}   mean J same article {same_article.mean():.3f}, same ads {same_ads.mean():.3f}")
    assert rates["stopword n=2 english"][0] >= 0.99


def test_character_shingles_are_fooled_by_the_chrome(rates) -> None:
    assert rates["char k=5"][0] < 0.99
    assert 0.0 <= rates["word n=2"][0] <= 1.0  # computed and reported only


# ----------------------------------------------------------------------------
# the shipped sample and the job


def _truth() -> dict[str, str]:
    with open(ROOT / "configs" / "data" / "news" / "truth.csv", newline="", encoding="utf-8") as f:
        return {row["id"]: row["story"] for row in csv.DictReader(f)}


def test_shipped_sample_matches_truth_and_is_small() -> None:
    folder = ROOT / "configs" / "data" / "news" / "pages"
    files = sorted(p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.html"))
    truth = _truth()
    assert files == sorted(truth)
    stories = set(truth.values())
    assert len(stories) == 8 and all(3 <= list(truth.values()).count(s) <= 4 for s in stories)
    assert sum(p.stat().st_size for p in folder.rglob("*")) < 1_000_000


def test_sample_generator_matches_the_shipped_truth() -> None:
    # the prose pool depends on the Python version; the sample was made with CPython 3.11
    got = {p.page_id: p.story for p in sample_pages()}
    if got != _truth():
        pytest.skip("this Python's docstrings give another prose pool than the one the sample was made with")


def _html_source_supported() -> str | None:
    from er_framework.config.spec import SourceSpec

    if "html" not in SourceSpec.model_fields:
        return "the source option `html:` is not in er_framework/config.py yet"
    try:
        import er_framework.io.html  # noqa: F401
    except ImportError:
        return "er_framework/html.py (folder sources, visible text) is not in this checkout yet"
    return None


def test_news_job_clusters_the_shipped_pages_by_story(tmp_path: Path) -> None:
    reason = _html_source_supported()
    if reason:
        pytest.skip(reason)
    from er_framework.config.resolve import parse_job
    from er_framework.executors import run_job

    run_job(parse_job(ROOT / "configs" / "news.yaml"), tmp_path)
    truth = _truth()
    with open(tmp_path / "clusters.csv", newline="", encoding="utf-8") as f:
        clusters = {row["id"]: row["cluster_id"] for row in csv.DictReader(f)}
    assert set(clusters) == set(truth)
    story_of_cluster: dict[str, set[str]] = {}
    cluster_of_story: dict[str, set[str]] = {}
    for page, cluster in clusters.items():
        story_of_cluster.setdefault(cluster, set()).add(truth[page])
        cluster_of_story.setdefault(truth[page], set()).add(cluster)
    assert all(len(s) == 1 for s in story_of_cluster.values()), "two stories merged"
    assert all(len(c) == 1 for c in cluster_of_story.values()), "a story split"
    report = json.loads((tmp_path / "report.json").read_text())
    assert "shingler:stopword" in report["versions"]["components"]
    if "shingler" in report:
        assert report["shingler"]["type"] == "stopword"
