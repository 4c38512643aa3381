"""Generated news pages with known truth (SEEDS §7): no download, seeded, reproducible.

The same wire story is published on many sites, each wrapping it in its own
chrome (logo, navigation menu, "related stories", cookie banner, newsletter
box, footer with links and legal text) and its own ads. Here:

* **articles** are real English prose: 4-8 paragraphs of Python
  standard-library docstrings (PSF licence, always installed). The paragraph
  pool is a fixed list of modules read in a fixed order, so it is identical
  for a given Python version; ordinary prose only (>= 150 characters, few
  code-like words). Articles made by one call never share a paragraph.
* **templates** (:class:`Template`) are sites: a name and logo, a nav menu of
  10-20 section links, header extras, lists of "related" and "most read"
  a market ticker, trending topics, headlines ("related", "most read"), a
  cookie banner, a newsletter box, footer sections, links and legal text, and
  a layout (where the sidebar, the ads and the banner go).
* **ad sets** (:class:`AdSet`) are 6-10 ad blocks of stop-word-poor marketing
  copy: "SUDZO Ultra Laundry Pods — 40% OFF — Free Shipping — Shop Now".

Chrome and ads together are longer than the article (about 63 % of a page's
visible text, ~2,500 of ~4,000 characters), as on real news pages, so
character shingles of the whole page mostly see the chrome — the point of the
seed. The chrome has some stop words (cookie banner, legal text, headlines);
the ads have few (11 % of their words are on jusText's English list, against
53 % of the article's).

:func:`make_page` renders one page as HTML; :func:`quadruple` builds the
comparison of the seed: page(A, X, T1), page(A, Y, T2) (possibly cut),
page(B, X, T1); :func:`make_quadruples` makes many of them.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
import warnings
from dataclasses import dataclass, replace
from functools import cache
from random import Random

from er_framework.synth.news_ads import Ad, AdSet, make_ads

__all__ = [
    "PROSE_MODULES",
    "prose_paragraphs",
    "Article",
    "make_articles",
    "Template",
    "make_template",
    "make_templates",
    "Ad",
    "AdSet",
    "make_ads",
    "make_page",
    "Quadruple",
    "quadruple",
    "make_quadruples",
    "SamplePage",
    "SAMPLE_SITES",
    "sample_pages",
]

# ----------------------------------------------------------------------------
# article prose

#: modules whose docstrings give the prose, read in this order (a module that
#: does not import on this Python is skipped)
PROSE_MODULES: tuple[str, ...] = (
    "ast",
    "asyncio.events",
    "asyncio.locks",
    "asyncio.tasks",
    "base64",
    "bdb",
    "builtins",
    "bz2",
    "cmd",
    "code",
    "codecs",
    "collections",
    "configparser",
    "difflib",
    "dis",
    "doctest",
    "email.base64mime",
    "email.feedparser",
    "email.header",
    "email.headerregistry",
    "email.message",
    "email.parser",
    "email.policy",
    "email.utils",
    "fileinput",
    "ftplib",
    "graphlib",
    "gzip",
    "http.client",
    "http.cookiejar",
    "http.cookies",
    "http.server",
    "imaplib",
    "importlib.abc",
    "inspect",
    "io",
    "json.encoder",
    "locale",
    "logging",
    "logging.config",
    "logging.handlers",
    "multiprocessing.shared_memory",
    "optparse",
    "os",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "platform",
    "py_compile",
    "re",
    "sched",
    "site",
    "smtplib",
    "socket",
    "socketserver",
    "statistics",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "timeit",
    "tokenize",
    "traceback",
    "typing",
    "unittest.case",
    "unittest.mock",
    "urllib.parse",
    "urllib.request",
    "uuid",
    "weakref",
    "wsgiref.handlers",
    "wsgiref.headers",
    "xml.dom.pulldom",
    "xml.etree.ElementTree",
    "xml.sax.expatreader",
    "xml.sax.handler",
    "xml.sax.saxutils",
    "xml.sax.xmlreader",
    "xmlrpc.server",
    "zipimport",
)

# a word that looks like code: identifiers with _, calls, brackets, operators, dotted names, options
_CODE_WORD = re.compile(r"[_()\[\]{}=<>`*#|\\]|\w\.\w|^-")


def _is_prose(para: str, min_chars: int, max_chars: int) -> bool:
    if any(line.startswith(" ") for line in para.split("\n")):  # indented: code, lists, tables
        return False
    text = " ".join(para.split())
    if not (min_chars <= len(text) <= max_chars) or ">>>" in text or "..." in text:
        return False
    if not (text[0].isupper() and text.endswith(".")):
        return False
    words = text.split()
    return sum(bool(_CODE_WORD.search(w)) for w in words) <= 0.04 * len(words)


@cache
def prose_paragraphs(min_chars: int = 150, max_chars: int = 1200) -> tuple[str, ...]:
    """Distinct paragraphs of ordinary English prose from the stdlib docstrings.

    Module docstrings, then the docstrings of the module's own classes and
    functions and of the classes' methods, in name order; whitespace folded.
    The same tuple for a given Python version (511 paragraphs of ~240
    characters on CPython 3.11).
    """
    out: list[str] = []
    seen: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in PROSE_MODULES:
            try:
                mod = importlib.import_module(name)
            except Exception:  # noqa: BLE001 - optional module not built on this Python
                continue
            docs = [inspect.getdoc(mod) or ""]
            for _, obj in sorted(vars(mod).items()):
                if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", "") == mod.__name__:
                    docs.append(inspect.getdoc(obj) or "")
                    if inspect.isclass(obj):
                        docs.extend(inspect.getdoc(m) or "" for _, m in sorted(vars(obj).items()) if inspect.isfunction(m))
            for doc in docs:
                for para in re.split(r"\n\s*\n", doc):
                    if _is_prose(para, min_chars, max_chars):
                        text = " ".join(para.split())
                        if text not in seen:
                            seen.add(text)
                            out.append(text)
    return tuple(out)


@dataclass(frozen=True)
class Article:
    """One wire story: a title, a byline and its paragraphs."""

    story: str  # story id (slug), the truth
    title: str
    byline: str
    paragraphs: tuple[str, ...]

    def cut(self, keep: int) -> Article:
        """The story as a site that drops the last paragraphs publishes it."""
        if not 1 <= keep <= len(self.paragraphs):
            raise ValueError(f"keep must be in 1..{len(self.paragraphs)}, got {keep}")
        return replace(self, paragraphs=self.paragraphs[:keep])

    @property
    def text(self) -> str:
        return " ".join(self.paragraphs)


_FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemi",
    "Lars",
    "Maya",
    "Nikhil",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Yusuf",
]
_LAST = [
    "Abbott",
    "Brandt",
    "Castro",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Gallo",
    "Haddad",
    "Ivanova",
    "Jansen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quispe",
    "Rossi",
    "Sato",
    "Tanaka",
    "Ueda",
    "Varga",
    "Weber",
    "Yilmaz",
    "Zhou",
]
_WIRES = ["Global Wire", "Press Union", "Newswire International", "Metro Press Agency", "Continental Wire"]


def _title_of(paragraph: str) -> str:
    first = re.split(r"[.;:?!](?:\s|$)", paragraph, maxsplit=1)[0]
    return " ".join(first.split()[:10]).rstrip(",;:")


def _slug(text: str, max_words: int = 6) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:max_words])


def make_articles(n: int, seed: int = 0, paragraphs: tuple[int, int] = (4, 8), pool: tuple[str, ...] | None = None) -> list[Article]:
    """``n`` articles of ``paragraphs`` (min, max) paragraphs each; no paragraph is in two articles.

    Raises ``ValueError`` when the paragraph pool is too small for ``n``.
    """
    pool = prose_paragraphs() if pool is None else pool
    rng = Random(f"articles:{seed}")
    order = list(range(len(pool)))
    rng.shuffle(order)
    out: list[Article] = []
    pos = 0
    slugs: set[str] = set()
    for i in range(n):
        k = rng.randint(*paragraphs)
        if pos + k > len(order):
            raise ValueError(
                f"{n} articles need more than the {len(pool)} prose paragraphs available; made {i}: ask for fewer or shorter articles"
            )
        paras = tuple(pool[j] for j in order[pos : pos + k])
        pos += k
        title = _title_of(paras[0])
        slug = _slug(title)
        while slug in slugs:
            slug += f"-{i}"
        slugs.add(slug)
        byline = f"By {rng.choice(_FIRST)} {rng.choice(_LAST)}, {rng.choice(_WIRES)}"
        out.append(Article(story=slug, title=title, byline=byline, paragraphs=paras))
    return out


# ----------------------------------------------------------------------------
# site templates (page chrome)

_SITE_A = [
    "Daily",
    "Morning",
    "Evening",
    "Weekly",
    "Metro",
    "Valley",
    "Harbor",
    "Capital",
    "Northern",
    "Coastal",
    "Lakeside",
    "Summit",
    "Prairie",
    "Riverside",
    "Bay",
    "Highland",
]
_SITE_B = [
    "Herald",
    "Gazette",
    "Chronicle",
    "Courier",
    "Tribune",
    "Observer",
    "Ledger",
    "Sentinel",
    "Dispatch",
    "Bulletin",
    "Beacon",
    "Examiner",
    "Register",
    "Monitor",
    "Star",
    "Journal",
]
_TAGLINES = [
    "Independent journalism since 1887",
    "Your city. Your news.",
    "Trusted reporting, every day",
    "News that matters to you",
    "Breaking news, analysis and opinion",
    "Local news first",
    "Award-winning journalism",
    "Reporting without fear or favour",
]
_SECTIONS = [
    "Home",
    "World",
    "US",
    "Politics",
    "Business",
    "Markets",
    "Tech",
    "Science",
    "Health",
    "Climate",
    "Sports",
    "Football",
    "Basketball",
    "Tennis",
    "Entertainment",
    "Culture",
    "Music",
    "Movies",
    "Books",
    "Arts",
    "Style",
    "Food",
    "Travel",
    "Real Estate",
    "Autos",
    "Opinion",
    "Editorials",
    "Letters",
    "Obituaries",
    "Weather",
    "Traffic",
    "Video",
    "Podcasts",
    "Photos",
    "Puzzles",
    "Crosswords",
    "Horoscopes",
    "Education",
    "Jobs",
    "Classifieds",
    "Local",
    "Crime",
    "Lifestyle",
    "Wellness",
]
_HEADER_EXTRAS = [
    ["Subscribe", "Sign In", "Search"],
    ["Log in", "Subscribe now", "E-paper"],
    ["Newsletters", "Account", "Search"],
    ["Register", "Sign in", "Today's Paper"],
    ["Support us", "Sign in", "Menu"],
]
_FOOTER_LINKS = [
    "About Us",
    "Contact",
    "Careers",
    "Advertise",
    "Terms of Use",
    "Privacy Policy",
    "Cookie Settings",
    "Accessibility",
    "Corrections",
    "Site Map",
    "Help Center",
    "Newsletters",
    "RSS Feeds",
    "Licensing",
    "Ethics Policy",
    "Manage Subscription",
    "Do Not Sell My Info",
    "Contact the Newsroom",
    "Apps",
    "Archive",
]
_COOKIE = [
    "We use cookies to personalise content and ads and to analyse our traffic.",
    "This site uses cookies. You can change your choice at any time in Cookie Settings.",
    "Your privacy matters: we and our partners use cookies for ads and measurement.",
    "We value your privacy. Cookies help us deliver our services.",
]
_COOKIE_BUTTONS = [["Accept all", "Reject all", "Manage options"], ["I agree", "More options"], ["OK", "Settings"]]
_NEWSLETTER = [
    "Get the morning briefing in your inbox every weekday.",
    "Sign up for our free newsletter. Unsubscribe anytime.",
    "Stay informed with our editors' daily picks.",
    "The weekend read: long stories, big ideas, every Saturday.",
]
_LEGAL = [
    "© {year} {site} Media Group. All rights reserved.",
    "Copyright {year} {site}. Use of this site constitutes acceptance of our User Agreement.",
    "{site} is published by {site} Publishing Ltd. © {year}. Market data delayed 15 minutes.",
]
_TOPICS = [
    "Climate Change",
    "Elections 2024",
    "Housing Crisis",
    "Inflation",
    "Artificial Intelligence",
    "Ukraine",
    "Middle East",
    "Premier League",
    "NBA Playoffs",
    "Interest Rates",
    "Heatwave",
    "Olympics",
    "Cost of Living",
    "Cybersecurity",
    "Space",
    "Electric Cars",
    "Gaza",
    "Wildfires",
    "Supreme Court",
    "Stock Markets",
    "Crypto",
    "Vaccines",
    "Immigration",
    "Oil Prices",
    "Tariffs",
    "Royal Family",
    "Oscars",
    "Streaming",
]
_INDICES = [
    "DOW",
    "S&P 500",
    "NASDAQ",
    "FTSE 100",
    "DAX",
    "NIKKEI",
    "HANG SENG",
    "CAC 40",
    "EUR/USD",
    "GBP/USD",
    "USD/JPY",
    "BRENT",
    "WTI",
    "GOLD",
    "BITCOIN",
    "10Y YIELD",
]
_TICKER_BASE = {sym: Random(f"ticker:{sym}").uniform(1, 40000) for sym in _INDICES}
_WEATHER = ["Sunny", "Cloudy", "Light Rain", "Showers", "Partly Cloudy", "Fog", "Windy", "Thunderstorms", "Clear"]
_RELATED_TITLES = ["Related stories", "More from {site}", "Recommended for you", "You may also like", "Read next"]
_MOST_TITLES = ["Most read", "Trending now", "Popular this week", "Most shared", "Editors' picks"]

# headline parts: some stop words, as real headlines have
_H_SUBJ = [
    "City council",
    "Central bank",
    "School board",
    "State senate",
    "Transit authority",
    "Tech giant",
    "Hospital union",
    "Farm lobby",
    "Airline",
    "Mayor",
    "Union boss",
    "Research team",
    "Police chief",
    "Regulator",
    "Housing agency",
    "Port authority",
    "Startup",
    "Teachers' union",
    "Fan group",
    "Water utility",
]
_H_VERB = [
    "approves",
    "rejects",
    "delays",
    "unveils",
    "weighs",
    "backs",
    "slams",
    "cuts",
    "doubles",
    "probes",
    "halts",
    "expands",
    "defends",
    "launches",
    "scraps",
    "eyes",
    "wins",
    "loses",
]
_H_OBJ = [
    "budget plan",
    "new stadium deal",
    "rate hike",
    "bike lane network",
    "housing tax",
    "strike vote",
    "merger talks",
    "flood defences",
    "school lunch menu",
    "ferry schedule",
    "solar farm",
    "speed cameras",
    "night market",
    "pension reform",
    "bridge repairs",
    "youth league",
    "data centre",
    "parking fees",
]
_H_TAIL = ["amid protests", "after long debate", "as costs soar", "despite warnings", "over safety fears", "", "", "", "", "", "", ""]


def _headline(rng: Random) -> str:
    h = f"{rng.choice(_H_SUBJ)} {rng.choice(_H_VERB)} {rng.choice(_H_OBJ)}"
    tail = rng.choice(_H_TAIL)
    return f"{h} {tail}" if tail else h


@dataclass(frozen=True)
class Template:
    """One news site's page chrome."""

    site: str  # short id, e.g. "valley-herald"
    name: str  # "Valley Herald"
    tagline: str
    nav: tuple[str, ...]
    header_extras: tuple[str, ...]
    cookie: str
    cookie_buttons: tuple[str, ...]
    newsletter: str
    related_title: str
    related: tuple[str, ...]
    most_title: str
    most_read: tuple[str, ...]
    topics: tuple[str, ...]  # "Trending topics" tag links
    tickers: tuple[str, ...]  # market-data strip symbols (values vary per page)
    city: str  # weather widget
    footer_links: tuple[str, ...]
    legal: str
    layout: int  # 0: sidebar after the article, 1: sidebar before it, 2: no sidebar, lists below
    css: str  # class-name prefix (differs between sites, invisible)


def make_template(seed: int, name: str | None = None) -> Template:
    """A site template; ``name`` (e.g. "Valley Herald") is drawn when not given."""
    rng = Random(f"template:{seed}")
    if name is None:
        name = f"{rng.choice(_SITE_A)} {rng.choice(_SITE_B)}"
    year = rng.choice([2023, 2024, 2025])
    return Template(
        site=_slug(name, 4),
        name=name,
        tagline=rng.choice(_TAGLINES),
        nav=tuple(rng.sample(_SECTIONS, rng.randint(10, 20))),
        header_extras=tuple(rng.choice(_HEADER_EXTRAS)),
        cookie=rng.choice(_COOKIE),
        cookie_buttons=tuple(rng.choice(_COOKIE_BUTTONS)),
        newsletter=rng.choice(_NEWSLETTER),
        related_title=rng.choice(_RELATED_TITLES).format(site=name),
        related=tuple(_headline(rng) for _ in range(rng.randint(5, 8))),
        most_title=rng.choice(_MOST_TITLES),
        most_read=tuple(_headline(rng) for _ in range(rng.randint(4, 6))),
        topics=tuple(rng.sample(_TOPICS, rng.randint(8, 14))),
        tickers=tuple(rng.sample(_INDICES, rng.randint(6, 10))),
        city=name.split()[0] + rng.choice(["ville", " City", "port", "ton", " Falls", " Springs"]),
        footer_links=tuple(rng.sample(_FOOTER_LINKS, rng.randint(10, 15))),
        legal=rng.choice(_LEGAL).format(site=name, year=year),
        layout=rng.randrange(3),
        css=rng.choice(["nx", "site", "pg", "c", "np", "ed"]) + str(rng.randrange(100)),
    )


def make_templates(n: int, seed: int = 0) -> list[Template]:
    """``n`` templates with distinct site names."""
    rng = Random(f"templates:{seed}")
    names = [f"{a} {b}" for a in _SITE_A for b in _SITE_B]
    if n > len(names):
        raise ValueError(f"at most {len(names)} distinct site names, asked for {n}")
    return [make_template(rng.randrange(2**32), nm) for nm in rng.sample(names, n)]


# ----------------------------------------------------------------------------
# pages

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _ad_html(ad: Ad, css: str, where: str) -> str:
    return (
        f'<aside class="{css}-ad {css}-ad-{where}" data-ad-slot="{where}">'
        f'<span class="{css}-ad-label">{_e(ad.label)}</span> '
        f'<a href="https://ads.example/{ad.brand.lower()}" rel="sponsored"><strong>{_e(ad.headline)}</strong></a>'
        f"<p>{_e(ad.copy)}</p><button>{_e(ad.cta)}</button></aside>"
    )


def _list_html(title: str, items: tuple[str, ...], css: str, kind: str) -> str:
    lis = "".join(f'<li><a href="/{kind}/{_slug(h)}">{_e(h)}</a></li>' for h in items)
    return f'<section class="{css}-{kind}"><h3>{_e(title)}</h3><ul>{lis}</ul></section>'


def make_page(article: Article, template: Template, ads: AdSet, seed: int) -> str:
    """One news page as HTML: ``article`` in ``template``'s chrome with ``ads``.

    ``seed`` only varies per-page details (date, time, comment count, share
    counts); the chrome and the ads are those of ``template`` and ``ads``.
    Ads go between paragraphs (after the 2nd, 4th, …), in the sidebar and
    below the article; the rest after the footer links.
    """
    rng = Random(f"page:{seed}")
    t, c = template, template.css
    a = list(ads.ads)
    inline, a = a[: max(0, (len(article.paragraphs) - 1) // 2)], a[max(0, (len(article.paragraphs) - 1) // 2) :]
    side, a = a[:2], a[2:]
    below, rest = a[:2], a[2:]

    date = f"{rng.randint(1, 28)} {rng.choice(_MONTHS)} {rng.choice([2023, 2024, 2025])}"
    clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    body: list[str] = []
    for i, para in enumerate(article.paragraphs):
        body.append(f"<p>{_e(para)}</p>")
        if i % 2 == 1 and i // 2 < len(inline):
            body.append(_ad_html(inline[i // 2], c, f"inline-{i // 2}"))
    art = (
        f'<article class="{c}-story"><h1>{_e(article.title)}</h1>'
        f'<p class="{c}-byline">{_e(article.byline)} · Published {date} {clock}</p>'
        f'<div class="{c}-share">Share <a href="#">Facebook</a> <a href="#">X</a> <a href="#">Email</a> '
        f"<span>{rng.randint(3, 900)} comments</span></div>" + "".join(body) + "</article>"
    )
    lists = _list_html(t.related_title, t.related, c, "related") + _list_html(t.most_title, t.most_read, c, "popular")
    sidebar = f'<div class="{c}-sidebar">{"".join(_ad_html(x, c, "side") for x in side)}{lists}</div>'
    below_html = "".join(_ad_html(x, c, "below") for x in below)
    newsletter = (
        f'<form class="{c}-newsletter"><h3>Newsletter</h3><p>{_e(t.newsletter)}</p>'
        '<input type="email" placeholder="Your email address"><button>Sign up</button></form>'
    )
    if t.layout == 0:
        main = f'<main class="{c}-main">{art}{below_html}{newsletter}{sidebar}</main>'
    elif t.layout == 1:
        main = f'<main class="{c}-main">{sidebar}{art}{newsletter}{below_html}</main>'
    else:
        side_ads = "".join(_ad_html(x, c, "top") for x in side)
        main = f'<main class="{c}-main">{side_ads}{art}{below_html}{lists}{newsletter}</main>'
    nav = "".join(f'<li><a href="/{_slug(s)}">{_e(s)}</a></li>' for s in t.nav)
    extras = " ".join(f'<a href="/{_slug(s)}">{_e(s)}</a>' for s in t.header_extras)
    cookie = (
        f'<div class="{c}-cookie" role="dialog"><p>{_e(t.cookie)}</p>'
        + "".join(f"<button>{_e(b)}</button>" for b in t.cookie_buttons)
        + "</div>"
    )
    footer_links = "".join(f'<li><a href="/{_slug(s)}">{_e(s)}</a></li>' for s in t.footer_links)
    footer = (
        f'<footer class="{c}-footer"><div class="{c}-footer-ads">{"".join(_ad_html(x, c, "footer") for x in rest)}</div>'
        f'<nav class="{c}-footer-sections"><h4>Sections</h4><ul>{nav}</ul></nav>'
        f"<ul>{footer_links}</ul><p>{_e(t.legal)}</p></footer>"
    )
    ticker = "".join(
        f"<li><b>{_e(sym)}</b> {_TICKER_BASE[sym] * (1 + ch / 100):,.2f} <i>{ch:+.2f}%</i></li>"
        for sym, ch in ((sym, rng.uniform(-3, 3)) for sym in t.tickers)
    )
    topics = " ".join(f'<a class="{c}-tag" href="/topic/{_slug(x)}">{_e(x)}</a>' for x in t.topics)
    weather = f"{t.city} {rng.randint(-5, 35)}°C {rng.choice(_WEATHER)}"
    header = (
        f'<header class="{c}-header"><a class="{c}-logo" href="/"><img src="/logo.svg" alt="{_e(t.name)} logo">'
        f'<span>{_e(t.name)}</span></a><p class="{c}-tagline">{_e(t.tagline)}</p>'
        f'<div class="{c}-tools">{extras} <span class="{c}-weather">{_e(weather)}</span></div>'
        f'<nav><ul>{nav}</ul></nav><ul class="{c}-ticker">{ticker}</ul>'
        f'<div class="{c}-topics"><span>Trending topics:</span> {topics}</div></header>'
    )
    top_cookie, bottom_cookie = (cookie, "") if t.layout != 1 else ("", cookie)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(article.title)} | {_e(t.name)}</title>'
        f'<meta name="description" content="{_e(article.paragraphs[0][:150])}">'
        f"<style>.{c}-ad{{border:1px solid #ccc}} .{c}-cookie{{position:fixed;bottom:0}}</style>"
        f'<script>window.dataLayer=window.dataLayer||[];dataLayer.push({{"site":"{t.site}","section":"news"}});</script>'
        f"</head>\n<body>\n{top_cookie}\n{header}\n{main}\n{footer}\n{bottom_cookie}\n"
        '<noscript><img src="/pixel.gif" alt=""></noscript>\n</body></html>\n'
    )


# ----------------------------------------------------------------------------
# the comparison of the seed


@dataclass(frozen=True)
class Quadruple:
    """Article A, article B, ad sets X and Y, templates T1 and T2, and three pages.

    ``a_x_t1`` = page(A, X, T1), ``a_y_t2`` = page(A', Y, T2) where A' is A or
    a cut of A, ``b_x_t1`` = page(B, X, T1). The seed's claim:
    J(a_x_t1, a_y_t2) > J(a_x_t1, b_x_t1).
    """

    a: Article
    b: Article
    a_cut: int  # paragraphs of A on page a_y_t2 (== len(a.paragraphs) when not cut)
    x: AdSet
    y: AdSet
    t1: Template
    t2: Template
    a_x_t1: str
    a_y_t2: str
    b_x_t1: str


def quadruple(a: Article, b: Article, x: AdSet, y: AdSet, t1: Template, t2: Template, seed: int, a_cut: int | None = None) -> Quadruple:
    """The three pages of one comparison; ``a_cut`` paragraphs of A on the T2 page (default: all)."""
    keep = len(a.paragraphs) if a_cut is None else a_cut
    return Quadruple(
        a=a,
        b=b,
        a_cut=keep,
        x=x,
        y=y,
        t1=t1,
        t2=t2,
        a_x_t1=make_page(a, t1, x, seed * 3),
        a_y_t2=make_page(a.cut(keep), t2, y, seed * 3 + 1),
        b_x_t1=make_page(b, t1, x, seed * 3 + 2),
    )


def make_quadruples(
    n: int,
    seed: int = 0,
    n_articles: int = 70,
    n_templates: int = 12,
    n_ad_sets: int = 60,
    cut_rate: float = 0.3,
) -> list[Quadruple]:
    """``n`` comparisons drawn from generated articles, templates and ad sets.

    A != B, X != Y, T1 != T2. With probability ``cut_rate`` the T2 site
    publishes A cut: the last 1 .. max(1, len(A) // 3) paragraphs dropped
    (at least two thirds of the story remain).
    """
    rng = Random(f"quadruples:{seed}")
    articles = make_articles(n_articles, seed)
    templates = make_templates(n_templates, seed)
    ad_sets = [make_ads(rng.randrange(2**32)) for _ in range(n_ad_sets)]
    out = []
    for i in range(n):
        a, b = rng.sample(articles, 2)
        x, y = rng.sample(ad_sets, 2)
        t1, t2 = rng.sample(templates, 2)
        keep = len(a.paragraphs)
        if rng.random() < cut_rate:
            keep -= rng.randint(1, max(1, len(a.paragraphs) // 3))
        out.append(quadruple(a, b, x, y, t1, t2, seed=rng.randrange(2**31) + i, a_cut=keep))
    return out


# ----------------------------------------------------------------------------
# a small shipped sample: stories published on several sites

#: the sites of :func:`sample_pages`
SAMPLE_SITES: tuple[str, ...] = ("Valley Herald", "Morning Courier", "Harbor Gazette", "Capital Dispatch", "Lakeside Observer")


@dataclass(frozen=True)
class SamplePage:
    page_id: str  # "<site>/<story>": the file's path without .html
    story: str  # the truth
    site: str
    paragraphs: int  # paragraphs of the story on this page
    cut: bool
    html: str


def sample_pages(
    n_stories: int = 8,
    sites: tuple[str, ...] = SAMPLE_SITES,
    per_story: tuple[int, int] = (3, 4),
    cut_rate: float = 0.35,
    seed: int = 7,
) -> list[SamplePage]:
    """Every story on ``per_story`` (min, max) of the sites.

    Each site has one template and one ad set, so all pages of a site share
    their chrome and ads and differ only by the story (the hard negatives).
    On every site but the story's first, the story is cut with probability
    ``cut_rate`` (the last 1 .. max(1, len // 3) paragraphs dropped).
    """
    rng = Random(f"sample:{seed}")
    articles = make_articles(n_stories, seed)
    templates = [make_template(rng.randrange(2**32), name) for name in sites]
    ad_sets = [make_ads(rng.randrange(2**32)) for _ in sites]
    out: list[SamplePage] = []
    for art in articles:
        chosen = sorted(rng.sample(range(len(sites)), rng.randint(*per_story)))
        rng.shuffle(chosen)
        for rank, s in enumerate(chosen):
            keep = len(art.paragraphs)
            if rank > 0 and rng.random() < cut_rate:
                keep -= rng.randint(1, max(1, keep // 3))
            t = templates[s]
            out.append(
                SamplePage(
                    page_id=f"{t.site}/{art.story}",
                    story=art.story,
                    site=t.site,
                    paragraphs=keep,
                    cut=keep < len(art.paragraphs),
                    html=make_page(art.cut(keep), t, ad_sets[s], rng.randrange(2**31)),
                )
            )
    return sorted(out, key=lambda p: p.page_id)
