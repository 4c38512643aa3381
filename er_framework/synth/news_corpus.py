"""A harder news-page corpus with known truth: stories that share text, held-out template families.

:mod:`er_framework.synth.news` makes pages whose different stories share no
text. Real syndicated news is harder, and this module makes it so:

* **Template families** (:data:`FAMILIES`): eight styles of site, each
  published by 3-6 sites. A family has its own long, stop-word-rich chrome
  text - a cookie/consent banner, legal/privacy text, a newsletter blurb and
  an "about us" box, 70-170 words (``chrome_scale`` 1) - shared by its sites (each
  site adds its name and drops one legal sentence), and its own structure:
  how long each block is, where it sits (before the header, beside or after
  the article, in the footer, inside the article), and how the article is cut
  into paragraphs (some families print many 1-2 sentence paragraphs). Four
  families are the **tuning set** (:data:`TUNE_FAMILIES`), four are **held
  out** (:data:`HELDOUT_FAMILIES`). Their chrome and disclaimer sentences come
  from disjoint standard-library modules (:data:`TEXT_MODULES`), so nothing
  tuned on the TUNE families has seen the held-out texts.
* **Stories** (about one per three pages) are published on 1-6 sites (one
  story at most once per site). The first copy is whole; later copies are cut
  (the leading 35-95 % of the sentences kept) with probability ``cut_rate``,
  and copies are edited with probability ``edit_rate`` (a changed headline, a
  typo, a sentence dropped).
* **Text shared between different stories**, on purpose and recorded:
  (a) disclaimers (a pool of ``n_disclaimers`` per family set, 1-4 sentences
  each) that the wire attaches to ``wire_disclaimer_rate`` of the stories
  and each site to ``site_disclaimer_rate`` of its pages; (b) syndicated
  background: ``background_rate`` of the stories repeat 1-3 consecutive
  sentences of an earlier, different story; (c) the family chrome.

Text: real English sentences from Python standard-library docstrings and
comment blocks, read from the source files with :mod:`ast` (no module is
imported, nothing is downloaded), plus the prose of ``pydoc_data.topics``; the same for a given
Python version (a file that is missing is skipped). The chrome and
disclaimer sentences come only from :data:`TEXT_MODULES`; every other
library file gives story sentences (:func:`story_sentences`, about 19,000 on
CPython 3.11, test folders included; built in about 12 s, once per process). A corpus draws its story sentences without replacement in a
seeded order; only when a corpus needs more than the pool holds (beyond
about 3,500 pages) does it start a second pass over a new order, and the
stories sharing a recycled sentence are then recorded in
:attr:`Corpus.recycled_pairs`.

:func:`make_corpus` builds a :class:`Corpus`; :func:`write_corpus` writes
``pages/<site>/<story>.html``, ``truth.csv`` (``id,story,site,family,paragraphs,cut``)
and ``shared.csv`` (what each page carries of the shared text).
"""

from __future__ import annotations

import ast
import html
import math
import re
import sysconfig
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from random import Random

from er_framework.errors import InputError, os_problem
from er_framework.io.safe_write import FileKind
from er_framework.synth.files import check_targets, csv_kind, text_kind, write_csv, write_text
from er_framework.synth.news import AdSet, Article, Template, make_ads, make_page, make_template

__all__ = [
    "FAMILIES",
    "TUNE_FAMILIES",
    "HELDOUT_FAMILIES",
    "TEXT_MODULES",
    "Family",
    "Disclaimer",
    "FamilyText",
    "Story",
    "CorpusPage",
    "Corpus",
    "story_sentences",
    "split_sentences",
    "disclaimers",
    "family_text",
    "resolve_families",
    "make_corpus",
    "write_corpus",
    "PAGE_KIND",
    "table_targets",
]

# ----------------------------------------------------------------------------
# families


@dataclass(frozen=True)
class Family:
    """A style of news site, shared by its :attr:`sites`."""

    name: str
    split: str  # "tune" or "heldout"
    sites: tuple[str, ...]  # the sites' display names
    description: str
    para_sentences: tuple[int, int]  # sentences per article paragraph (min, max)
    cookie: int  # sentences of the cookie/consent banner
    legal: int  # sentences of the legal/privacy text
    newsletter: int  # sentences of the newsletter blurb
    about: int  # sentences of the "about us" box
    layout: int  # news.Template.layout: 0 sidebar after the article, 1 before it (cookie at the bottom), 2 none
    about_at: str  # "top" (before the header), "before_article", "after_article", "footer"
    legal_at: str  # "footer" or "consent" (a consent wall before the header: cookie + legal text)
    newsletter_inline: bool  # the newsletter blurb also inside the article, after its 2nd paragraph


def _sites(stem: str, places: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{p} {stem}" for p in places)


#: the eight families; the first four are the tuning set, the last four are held out
FAMILIES: tuple[Family, ...] = (
    Family(
        "broadsheet",
        "tune",
        _sites("Times", ["Avondale", "Brookfield", "Carlisle", "Dunmore", "Elmwood"]),
        "long legal footer, cookie banner at the top, 2-4 sentence paragraphs",
        (2, 4),
        cookie=2,
        legal=4,
        newsletter=1,
        about=1,
        layout=0,
        about_at="footer",
        legal_at="footer",
        newsletter_inline=False,
    ),
    Family(
        "tabloid",
        "tune",
        _sites("Post", ["Fairhaven", "Glenrock", "Hollister", "Ironbridge"]),
        "short paragraphs (1-2 sentences), cookie at the bottom, about box before the article",
        (1, 2),
        cookie=3,
        legal=2,
        newsletter=1,
        about=1,
        layout=1,
        about_at="before_article",
        legal_at="footer",
        newsletter_inline=True,
    ),
    Family(
        "regional",
        "tune",
        _sites("Record", ["Kingsbury", "Larkspur", "Millbrook", "Newhaven", "Oakridge", "Pinecrest"]),
        "medium chrome, about box after the article, 2-3 sentence paragraphs, no sidebar",
        (2, 3),
        cookie=1,
        legal=2,
        newsletter=1,
        about=1,
        layout=2,
        about_at="after_article",
        legal_at="footer",
        newsletter_inline=False,
    ),
    Family(
        "portal",
        "tune",
        _sites("Today", ["Queensport", "Redcliff", "Stonegate"]),
        "consent wall (cookie + privacy text) before the header, short paragraphs",
        (1, 2),
        cookie=3,
        legal=7,
        newsletter=1,
        about=1,
        layout=0,
        about_at="top",
        legal_at="consent",
        newsletter_inline=False,
    ),
    Family(
        "magazine",
        "heldout",
        _sites("Review", ["Ashford", "Bramley", "Clearwater", "Derwent"]),
        "long about text before the article, 3-5 sentence paragraphs, legal footer",
        (3, 5),
        cookie=1,
        legal=3,
        newsletter=1,
        about=5,
        layout=1,
        about_at="before_article",
        legal_at="footer",
        newsletter_inline=False,
    ),
    Family(
        "wiremirror",
        "heldout",
        _sites("Wire", ["Eastfield", "Foxley", "Greystone", "Hartwell", "Ivydale"]),
        "consent wall with a long legal text before the header, minimal chrome otherwise, short paragraphs",
        (1, 2),
        cookie=2,
        legal=8,
        newsletter=1,
        about=1,
        layout=2,
        about_at="footer",
        legal_at="consent",
        newsletter_inline=False,
    ),
    Family(
        "localblog",
        "heldout",
        _sites("Notes", ["Juniper", "Kestrel", "Linton"]),
        "newsletter blurb inside the article, about box at the top, 1-2 sentence paragraphs",
        (1, 2),
        cookie=2,
        legal=2,
        newsletter=2,
        about=1,
        layout=0,
        about_at="top",
        legal_at="footer",
        newsletter_inline=True,
    ),
    Family(
        "aggregator",
        "heldout",
        _sites("Digest", ["Marston", "Northwick", "Orchard", "Penrose", "Quarry", "Rosewood"]),
        "cookie at the bottom, sidebar and about box before the article, 2-3 sentence paragraphs",
        (2, 3),
        cookie=2,
        legal=2,
        newsletter=1,
        about=1,
        layout=1,
        about_at="after_article",
        legal_at="footer",
        newsletter_inline=False,
    ),
)
TUNE_FAMILIES: tuple[str, ...] = tuple(f.name for f in FAMILIES if f.split == "tune")
HELDOUT_FAMILIES: tuple[str, ...] = tuple(f.name for f in FAMILIES if f.split == "heldout")
_BY_NAME = {f.name: f for f in FAMILIES}

#: the library files (relative to the standard library folder) whose docstrings give the chrome and
#: disclaimer text of each family set; no story sentence comes from them
TEXT_MODULES: dict[str, tuple[str, ...]] = {
    "tune": ("_pydecimal.py", "mailbox.py", "tarfile.py"),
    "heldout": ("logging/__init__.py", "turtle.py", "smtplib.py"),
}

# ----------------------------------------------------------------------------
# text pools

# a word that looks like code: identifiers with _, calls, brackets, operators, dotted names, options
_CODE_WORD = re.compile(r"[_()\[\]{}=<>`*#|\\@$%^~]|\w\.\w|^-|\d")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences at ``.``, ``!`` or ``?`` followed by space and a capital letter."""
    return [s for s in _SENTENCE_END.split(" ".join(text.split())) if s]


def _prose_sentences(doc: str) -> list[str]:
    """The ordinary-prose sentences of a docstring: 6-60 words, a capital first, a full stop last, few code words."""
    out = []
    for para in re.split(r"\n\s*\n", doc):
        if any(line.startswith((" ", "\t")) for line in para.split("\n")):  # code, lists, tables
            continue
        for s in split_sentences(para):
            words = s.split()
            if not (6 <= len(words) <= 60 and s[0].isupper() and s.endswith(".")):
                continue
            if ">>>" in s or ".." in s or "e.g" in s or "i.e" in s:
                continue
            if sum(bool(_CODE_WORD.search(w)) for w in words) <= 0.1 * len(words):
                out.append(s)
    return out


def _stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


_COMMENT = re.compile(r"[ \t]*# ?(.*)$")


def _file_texts(path: Path) -> list[str]:
    """The docstrings of a source file (module, classes, functions), then its comment blocks
    (consecutive ``#`` lines, as one paragraph each); [] if the file is unreadable or not Python 3."""
    try:
        source = path.read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
        lines = source.decode("utf-8").split("\n")
    except (OSError, SyntaxError, ValueError):
        return []
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                texts.append(doc)
    block: list[str] = []
    for line in [*lines, ""]:
        m = _COMMENT.match(line)
        if m and not line.lstrip().startswith("#!") and m.group(1).strip() and not m.group(1).startswith((" ", "\t")):
            block.append(m.group(1))
        elif block:  # a blank or indented comment line (code, a list) or code ends the block
            texts.append(" ".join(block))
            block = []
    return texts


_SKIP_PARTS = frozenset({"site-packages", "dist-packages", "__pycache__", "lib-dynload"})


@cache
def _reserved(split: str) -> tuple[str, ...]:
    out: list[str] = []
    seen: set[str] = set()
    for rel in TEXT_MODULES[split]:
        for doc in _file_texts(_stdlib() / rel):
            for s in _prose_sentences(doc):
                if s not in seen:
                    seen.add(s)
                    out.append(s)
    return tuple(out)


@cache
def story_sentences() -> tuple[str, ...]:
    """The pool of story sentences: distinct prose sentences of the standard library's docstrings.

    Every ``.py`` file below the standard-library folder in path order (test
    folders included; ``site-packages`` and :data:`TEXT_MODULES` excepted):
    its docstrings, then its comment blocks; then the ``pydoc_data.topics``
    help texts. No sentence of :data:`TEXT_MODULES`.
    """
    root = _stdlib()
    reserved_files = {rel for rels in TEXT_MODULES.values() for rel in rels}
    banned = set(_reserved("tune")) | set(_reserved("heldout"))
    out: list[str] = []
    seen: set[str] = set(banned)

    def add(sentences: list[str]) -> None:
        for s in sentences:
            if s not in seen:
                seen.add(s)
                out.append(s)

    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.as_posix() in reserved_files or any(p in _SKIP_PARTS or p.startswith("config-") for p in rel.parts[:-1]):
            continue
        for doc in _file_texts(path):
            add(_prose_sentences(doc))
    try:
        from pydoc_data import topics as pydoc_topics

        help_texts: dict[str, str] = dict(pydoc_topics.topics)
    except ImportError:  # pragma: no cover - a Python without pydoc_data
        help_texts = {}
    for key in sorted(help_texts):
        paras = [p.strip("\n") for p in re.split(r"\n\s*\n", help_texts[key])]
        add(_prose_sentences("\n\n".join(p for p in (_dedent(x) for x in paras) if p)))
    return tuple(out)


def _dedent(para: str) -> str:
    lines = para.split("\n")
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    if lines and len(lines[0]) - len(lines[0].lstrip()) > indent:  # an indented block under a paragraph
        return ""
    return "\n".join(x[indent:] for x in lines)


@dataclass(frozen=True)
class Disclaimer:
    """A standard disclaimer paragraph: key ``"<split>:<k>"`` and its sentences."""

    key: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class FamilyText:
    """The chrome text blocks of a family (sentences of its set's :data:`TEXT_MODULES`)."""

    cookie: tuple[str, ...]
    legal: tuple[str, ...]
    newsletter: tuple[str, ...]
    about: tuple[str, ...]


@cache
def _allocate(split: str, n_disclaimers: int, chrome_scale: float = 1.0) -> tuple[tuple[Disclaimer, ...], dict[str, FamilyText]]:
    """The split's reserved sentences dealt out in a fixed shuffled order: the disclaimers, then each family's
    blocks (their :class:`Family` lengths times ``chrome_scale``, at least 1 sentence, 2 of legal text)."""
    pool = list(_reserved(split))
    Random(f"news-corpus-text:{split}").shuffle(pool)
    pos = 0

    def take(k: int, what: str) -> tuple[str, ...]:
        nonlocal pos
        if pos + k > len(pool):
            raise ValueError(
                f"the {split} text modules {TEXT_MODULES[split]} give {len(pool)} sentences, too few for {what}: "
                "use fewer disclaimers or a smaller chrome scale"
            )
        pos += k
        return tuple(pool[pos - k : pos])

    rng = Random(f"news-corpus-disclaimers:{split}")
    discl = tuple(Disclaimer(f"{split}:{k}", take(rng.randint(1, 4), f"{n_disclaimers} disclaimers")) for k in range(n_disclaimers))

    def scaled(k: int, least: int = 1) -> int:
        return max(least, round(k * chrome_scale))

    texts: dict[str, FamilyText] = {}
    for fam in FAMILIES:
        if fam.split == split:
            texts[fam.name] = FamilyText(
                cookie=take(scaled(fam.cookie), f"{fam.name}'s cookie banner"),
                legal=take(scaled(fam.legal, 2), f"{fam.name}'s legal text"),
                newsletter=take(scaled(fam.newsletter), f"{fam.name}'s newsletter blurb"),
                about=take(scaled(fam.about), f"{fam.name}'s about box"),
            )
    return discl, texts


def disclaimers(split: str, n: int = 20) -> tuple[Disclaimer, ...]:
    """The ``n`` disclaimers of a family set (``"tune"`` or ``"heldout"``)."""
    return _allocate(split, n)[0]


def family_text(family: str, n_disclaimers: int = 20, chrome_scale: float = 1.0) -> FamilyText:
    """The chrome text of a family (as :func:`make_corpus` uses it with these arguments)."""
    fam = _BY_NAME[family]
    return _allocate(fam.split, n_disclaimers, chrome_scale)[1][family]


def resolve_families(families: str | Sequence[str]) -> tuple[Family, ...]:
    """``"tune"``, ``"heldout"``, ``"all"``, family names, or a comma-separated string or list of them.

    Raises ``ValueError`` naming the unknown family.
    """
    raw = [x.strip() for x in families.split(",")] if isinstance(families, str) else list(families)
    names: list[str] = []
    for x in raw:
        if x == "all":
            names += [f.name for f in FAMILIES]
        elif x in ("tune", "heldout"):
            names += [f.name for f in FAMILIES if f.split == x]
        elif x:
            names.append(x)
    unknown = [x for x in names if x not in _BY_NAME]
    if unknown or not names:
        raise ValueError(
            f"unknown template family {unknown[0] if unknown else families!r}; choose tune, heldout, all or "
            f"names from {', '.join(_BY_NAME)}"
        )
    return tuple(_BY_NAME[x] for x in dict.fromkeys(names))


# ----------------------------------------------------------------------------
# stories and pages


@dataclass(frozen=True)
class Story:
    """A wire story: its sentences as (unit key, text); keys ``"s<i>"`` index :func:`story_sentences`."""

    story: str  # slug, the truth
    title: str
    byline: str
    units: tuple[tuple[str, str], ...]
    wire_disclaimer: int | None  # index into the page's family-set disclaimers
    background_from: str | None  # the earlier story whose sentences it repeats
    background_units: tuple[str, ...]  # those sentences' keys


@dataclass(frozen=True)
class CorpusPage:
    """One page and its truth."""

    page_id: str  # "<site>/<story>": the file's path below pages/ without .html
    story: str
    site: str
    family: str
    paragraphs: int  # paragraphs of the story on the page (disclaimers not counted)
    sentences: int  # story sentences on the page
    cut: bool  # the trailing sentences of the story were cut off
    units: tuple[str, ...]  # keys of every sentence of the article text: "s<i>" story sentences, "d:<split>:<k>" disclaimers
    wire_disclaimer: str | None  # disclaimer key
    site_disclaimer: str | None
    background_from: str | None  # the other story whose sentences this page carries (if any survived the cut)
    edits: tuple[str, ...]  # "headline", "typo", "dropped"
    html: str


@dataclass(frozen=True)
class Corpus:
    pages: tuple[CorpusPage, ...]
    stories: tuple[Story, ...]
    families: tuple[str, ...]
    seed: int
    params: dict[str, float | int]
    #: pairs of stories sharing a sentence because the pool was used up (empty up to about 3,500 pages)
    recycled_pairs: frozenset[tuple[str, str]]


_FIRST = [
    "Alma",
    "Bruno",
    "Carmen",
    "Desmond",
    "Esther",
    "Felix",
    "Greta",
    "Hugo",
    "Ilse",
    "Jamal",
    "Keiko",
    "Leon",
    "Mira",
    "Nils",
    "Oona",
    "Pietro",
    "Rania",
    "Soren",
    "Talia",
    "Umar",
    "Vera",
    "Wilbur",
    "Xenia",
    "Yara",
]
_LAST = [
    "Arkwright",
    "Bellamy",
    "Cho",
    "Delacroix",
    "Ekberg",
    "Fontaine",
    "Gunnarsson",
    "Hale",
    "Iqbal",
    "Jovanovic",
    "Kaur",
    "Lindgren",
    "Mbeki",
    "Novak",
    "Oyelaran",
    "Pereira",
    "Quaid",
    "Rahman",
    "Silva",
    "Thorne",
]
_AGENCIES = ["Associated Wire", "Newsline Agency", "Meridian Press", "Northstar Wire", "Atlas News Service"]


def _slug(text: str, max_words: int = 6) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:max_words]) or "story"


def _headline(sentence: str, max_words: int = 9) -> str:
    words = re.split(r"[.;:?!](?:\s|$)", sentence, maxsplit=1)[0].split()[:max_words]
    return " ".join(words).rstrip(",;:")


def _typo(text: str, rng: Random) -> str:
    """``text`` with two neighbouring letters of one longer word swapped."""
    words = text.split(" ")
    cands = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if not cands:
        return text
    i = rng.choice(cands)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def _site_id(name: str) -> str:
    return _slug(name, 4)


def _site_template(fam: Family, name: str, text: FamilyText) -> tuple[Template, str]:
    """The site's news.Template with the family's text, its about box and (for a consent wall) the consent text."""
    seed = sum(ord(c) * 31**i for i, c in enumerate(name)) % 2**32
    t = make_template(seed, name)
    rng = Random(f"news-corpus-site:{name}")
    legal = list(text.legal)
    del legal[rng.randrange(len(legal))]  # the per-site variation: one sentence dropped, the name added
    legal_text = f"{name}: privacy and legal notice. " + " ".join(legal)
    cookie_text = " ".join(text.cookie)
    if fam.legal_at == "consent":
        cookie_text = f"{cookie_text} {legal_text}"
        legal_text = f"© {name}."
    t = replace(t, cookie=cookie_text, legal=legal_text, newsletter=" ".join(text.newsletter), layout=fam.layout)
    about = f"About {name}. " + " ".join(text.about)
    return t, about


def _insert_after(page: str, marker: str, block: str) -> str:
    i = page.find(marker)
    if i < 0:  # pragma: no cover - news.make_page always writes the markers
        raise RuntimeError(f"marker {marker!r} not in the page")
    return page[: i + len(marker)] + block + page[i + len(marker) :]


def _family_page(fam: Family, t: Template, about: str, newsletter: str, article: Article, ads: AdSet, seed: int) -> str:
    page = make_page(article, t, ads, seed)
    c = t.css
    box = f'<section class="{c}-about"><h3>About us</h3><p>{html.escape(about)}</p></section>'
    if fam.about_at == "top":
        page = _insert_after(page, "<body>\n", box + "\n")
    elif fam.about_at == "before_article":
        i = page.find(f'<article class="{c}-story">')
        page = page[:i] + box + page[i:]
    elif fam.about_at == "after_article":
        page = _insert_after(page, "</article>", box)
    else:
        page = _insert_after(page, f'<footer class="{c}-footer">', box)
    if fam.newsletter_inline and len(article.paragraphs) >= 3:
        promo = f'<aside class="{c}-promo"><p>{html.escape(newsletter)}</p></aside>'
        start = page.find(f'<article class="{c}-story">')
        pos = start
        for _ in range(3):  # the byline, then the first two paragraphs
            pos = page.find("</p>", pos) + len("</p>")
        page = page[:pos] + promo + page[pos:]
    return page


def _paragraphs(sentences: list[str], lo: int, hi: int, rng: Random) -> list[str]:
    out = []
    i = 0
    while i < len(sentences):
        k = rng.randint(lo, hi)
        out.append(" ".join(sentences[i : i + k]))
        i += k
    return out


#: how many sites publish a story: 1..6 with these weights (mean 3.2)
SITES_PER_STORY: tuple[float, ...] = (0.18, 0.2, 0.2, 0.17, 0.14, 0.11)


def make_corpus(
    n_pages: int,
    families: str | Sequence[str] = "tune",
    seed: int = 0,
    *,
    story_sentences_range: tuple[int, int] = (11, 21),
    cut_rate: float = 0.5,
    edit_rate: float = 0.15,
    wire_disclaimer_rate: float = 0.25,
    site_disclaimer_rate: float = 0.15,
    background_rate: float = 0.2,
    n_disclaimers: int = 20,
    chrome_scale: float = 1.0,
) -> Corpus:
    """``n_pages`` pages of the ``families`` (``"tune"``, ``"heldout"``, ``"all"`` or a list of names).

    Stories of ``story_sentences_range`` (min, max) sentences are published on
    1-6 distinct sites (:data:`SITES_PER_STORY`, at most the number of sites)
    until there are ``n_pages`` pages. The first copy of a story is whole;
    every later copy is cut with probability ``cut_rate`` (the leading
    35-95 % of its sentences kept, at least one). Each copy is edited with
    probability ``edit_rate`` (one of: a changed headline, a typo, a
    sentence other than the first dropped). ``wire_disclaimer_rate`` of the
    stories end with a disclaimer of the family set's pool on every copy;
    each site attaches its own disclaimer to ``site_disclaimer_rate`` of its
    pages; ``background_rate`` of the stories (not the first) repeat 1-3
    consecutive sentences of an earlier story as their 2nd or 3rd sentence.
    ``chrome_scale`` multiplies the lengths of the family chrome blocks
    (:class:`Family`; 1.0: 5-12 sentences, about 70-170 words, against
    stories of 11-21 sentences, about 220 words; 2.0 gives the "few hundred words"
    of long consent and legal texts).

    Deterministic for the arguments and the Python version. Raises
    ``ValueError`` for a bad argument.
    """
    fams = resolve_families(families)
    if n_pages < 1:
        raise ValueError(f"n_pages must be >= 1, got {n_pages}")
    for name, v in (
        ("cut_rate", cut_rate),
        ("edit_rate", edit_rate),
        ("wire_disclaimer_rate", wire_disclaimer_rate),
        ("site_disclaimer_rate", site_disclaimer_rate),
        ("background_rate", background_rate),
    ):
        if not (math.isfinite(v) and 0 <= v <= 1):
            raise ValueError(f"{name} must be in [0, 1], got {v!r}")
    lo, hi = story_sentences_range
    if not 1 <= lo <= hi:
        raise ValueError(f"story_sentences_range must be (min, max) with 1 <= min <= max, got {story_sentences_range}")
    if n_disclaimers < 1:
        raise ValueError(f"n_disclaimers must be >= 1, got {n_disclaimers}")
    splits = sorted({f.split for f in fams})
    if not (math.isfinite(chrome_scale) and 0 < chrome_scale <= 4):
        raise ValueError(f"chrome_scale must be in (0, 4], got {chrome_scale!r}")
    pools = {s: _allocate(s, n_disclaimers, chrome_scale) for s in splits}

    # sites
    sites: list[tuple[Family, str, Template, str, str, Disclaimer, AdSet]] = []
    for fam in fams:
        discl, texts = pools[fam.split]
        for name in fam.sites:
            srng = Random(f"news-corpus-site-discl:{name}")
            d = discl[srng.randrange(len(discl))]
            t, about = _site_template(fam, name, texts[fam.name])
            ads = make_ads(sum(ord(c) for c in name) * 7919 + srng.randrange(10**6))
            sites.append((fam, _site_id(name), t, about, " ".join(texts[fam.name].newsletter), d, ads))

    rng = Random(f"news-corpus:{seed}")
    pool = story_sentences()
    order = list(range(len(pool)))
    rng.shuffle(order)
    pos = 0
    epoch = 0
    used_by: dict[int, str] = {}
    recycled: set[tuple[str, str]] = set()

    stories: list[Story] = []
    pages: list[CorpusPage] = []
    slugs: set[str] = set()
    n_made = 0
    while n_made < n_pages:
        k_sent = rng.randint(lo, hi)
        idx: list[int] = []
        for _ in range(k_sent):
            if pos == len(order):
                epoch += 1
                order = list(range(len(pool)))
                Random(f"news-corpus:{seed}:{epoch}").shuffle(order)
                pos = 0
            idx.append(order[pos])
            pos += 1
        units = [(f"s{i}", pool[i]) for i in idx]
        title = _headline(units[0][1])
        slug = _slug(title)
        if slug in slugs:
            slug = f"{slug}-{len(stories)}"
        slugs.add(slug)
        for i in idx:
            if i in used_by and used_by[i] != slug:
                recycled.add((used_by[i], slug))
            used_by[i] = slug
        bg_from: str | None = None
        bg_units: tuple[str, ...] = ()
        if stories and rng.random() < background_rate:
            src = stories[rng.randrange(len(stories))]
            own = [u for u in src.units if u[0] not in src.background_units]
            m = min(rng.randint(1, 3), len(own))
            start = rng.randrange(len(own) - m + 1)
            bg = own[start : start + m]
            at = min(rng.randint(1, 2), len(units))
            units[at:at] = bg
            bg_from, bg_units = src.story, tuple(u[0] for u in bg)
        wire_d = rng.randrange(n_disclaimers) if rng.random() < wire_disclaimer_rate else None
        byline = f"By {rng.choice(_FIRST)} {rng.choice(_LAST)}, {rng.choice(_AGENCIES)}"
        story = Story(slug, title, byline, tuple(units), wire_d, bg_from, bg_units)
        stories.append(story)

        k_sites = min(rng.choices(range(1, 7), weights=SITES_PER_STORY)[0], len(sites), n_pages - n_made)
        chosen = rng.sample(range(len(sites)), k_sites)
        for rank, s in enumerate(chosen):
            fam, site_id, t, about, newsletter, site_d, ads = sites[s]
            prng = Random(f"news-corpus-page:{seed}:{slug}:{site_id}")
            kept = list(units)
            if rank > 0 and prng.random() < cut_rate and len(kept) > 1:
                keep = max(1, min(len(kept) - 1, round(prng.uniform(0.35, 0.95) * len(kept))))
                kept = kept[:keep]
            cut = len(kept) < len(units)
            edits: list[str] = []
            title_here = title
            if prng.random() < edit_rate:
                kind = prng.choice(["headline", "typo", "dropped"])
                if kind == "headline" and len(kept) > 1:
                    title_here = _headline(kept[1][1])
                elif kind == "typo":
                    j = prng.randrange(len(kept))
                    kept[j] = (kept[j][0], _typo(kept[j][1], prng))
                elif kind == "dropped" and len(kept) > 2:
                    del kept[prng.randrange(1, len(kept))]
                else:
                    kind = ""
                if kind:
                    edits.append(kind)
            paras = _paragraphs([u[1] for u in kept], *fam.para_sentences, prng)
            discl = pools[fam.split][0]
            extra: list[Disclaimer] = []
            if wire_d is not None:
                extra.append(discl[wire_d])
            has_site_d = prng.random() < site_disclaimer_rate
            if has_site_d:
                extra.append(site_d)
            article = Article(story=slug, title=title_here, byline=byline, paragraphs=tuple(paras) + tuple(d.text for d in extra))
            page_html = _family_page(fam, t, about, newsletter, article, ads, prng.randrange(2**31))
            unit_keys = tuple(u[0] for u in kept) + tuple(f"d:{d.key}:{j}" for d in extra for j in range(len(d.sentences)))
            carries_bg = bg_from is not None and any(u[0] in bg_units for u in kept)
            pages.append(
                CorpusPage(
                    page_id=f"{site_id}/{slug}",
                    story=slug,
                    site=site_id,
                    family=fam.name,
                    paragraphs=len(paras),
                    sentences=len(kept),
                    cut=cut,
                    units=unit_keys,
                    wire_disclaimer=discl[wire_d].key if wire_d is not None else None,
                    site_disclaimer=site_d.key if has_site_d else None,
                    background_from=bg_from if carries_bg else None,
                    edits=tuple(edits),
                    html=page_html,
                )
            )
        n_made += k_sites
    params: dict[str, float | int] = {
        "n_pages": n_pages,
        "cut_rate": cut_rate,
        "edit_rate": edit_rate,
        "wire_disclaimer_rate": wire_disclaimer_rate,
        "site_disclaimer_rate": site_disclaimer_rate,
        "background_rate": background_rate,
        "n_disclaimers": n_disclaimers,
        "story_sentences_min": lo,
        "story_sentences_max": hi,
        "chrome_scale": chrome_scale,
    }
    return Corpus(
        pages=tuple(sorted(pages, key=lambda p: p.page_id)),
        stories=tuple(stories),
        families=tuple(f.name for f in fams),
        seed=seed,
        params=params,
        recycled_pairs=frozenset(recycled),
    )


TRUTH_COLUMNS = ("id", "story", "site", "family", "paragraphs", "cut")
SHARED_COLUMNS = ("id", "story", "wire_disclaimer", "site_disclaimer", "background_from", "edits", "sentences")


#: what a page er synth news wrote starts with and holds (:func:`er_framework.synth.news.make_page`'s frame):
#: only such a page is written over (or removed by ``er synth news --force``)
PAGE_KIND = text_kind(
    "news page",
    b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>',
    b'<script>window.dataLayer=window.dataLayer||[];dataLayer.push({"site":"',
)


def table_targets(out: Path) -> list[tuple[Path, str, FileKind]]:
    """``truth.csv`` and ``shared.csv`` of a corpus in ``out``: (path, what, the kind an existing file must be)."""
    return [
        (out / "truth.csv", "truth file of a news corpus", csv_kind("truth file of a news corpus", TRUTH_COLUMNS)),
        (out / "shared.csv", "shared-text file of a news corpus", csv_kind("shared-text file of a news corpus", SHARED_COLUMNS)),
    ]


def write_corpus(corpus: Corpus, out_dir: str | Path) -> dict[str, Path]:
    """Write ``out_dir/pages/<site>/<story>.html``, ``out_dir/truth.csv`` and ``out_dir/shared.csv``.

    ``truth.csv``: ``id,story,site,family,paragraphs,cut`` (``cut`` 0/1), one
    row per page, ``id`` the page's path below ``pages/`` without ``.html``
    (the id ``er run`` gives a page of a folder source). ``shared.csv``: per
    page, the keys of the disclaimers it carries, the story whose background
    sentences it repeats, its edits and its number of story sentences.
    Returns the paths (``pages``, ``truth``, ``shared``).
    """
    out = Path(out_dir)
    pages_dir = out / "pages"
    tables = table_targets(out)
    pages = [(pages_dir / f"{p.page_id}.html", p) for p in corpus.pages]
    check_targets([(target, "news page", PAGE_KIND) for target, _ in pages] + tables)
    (_, truth_what, truth_kind), (_, shared_what, shared_kind) = tables
    for target, p in pages:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(os_problem(exc, str(target.parent), "create the folder")) from None
        write_text(target, "news page", PAGE_KIND, p.html)
    truth_rows = ([p.page_id, p.story, p.site, p.family, p.paragraphs, int(p.cut)] for p in corpus.pages)
    write_csv(out / "truth.csv", truth_what, truth_kind, TRUTH_COLUMNS, truth_rows)
    shared_rows = (
        [
            p.page_id,
            p.story,
            p.wire_disclaimer or "",
            p.site_disclaimer or "",
            p.background_from or "",
            ";".join(p.edits),
            p.sentences,
        ]
        for p in corpus.pages
    )
    write_csv(out / "shared.csv", shared_what, shared_kind, SHARED_COLUMNS, shared_rows)
    return {"pages": pages_dir, "truth": out / "truth.csv", "shared": out / "shared.csv"}
