"""Tests for er_framework.io.html: folders of web pages and their visible text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from er_framework.data import Records
from er_framework.errors import InputError
from er_framework.io.html import decode_html_bytes, extract_text, read_html_dir
from er_framework.io.source_files import read_source, read_source_with_stats

# ---------------------------------------------------------------- helpers

ARTICLE = [
    (
        "The city council met on Tuesday evening to discuss the future of the old harbour bridge, "
        "which has been closed to traffic since the storm in March. Most of the people who came to "
        "the meeting had to stand at the back of the hall, because there were not enough chairs for "
        "all of them."
    ),
    (
        "Engineers told the members that the repairs would take at least two more years and that the "
        "cost was likely to be much higher than the figure given in the spring. They said that the "
        "water had done more damage to the old stone than anyone had thought when the first report "
        "was written."
    ),
    (
        "Several residents who live near the river said that they had waited long enough and asked "
        "the council to find the money before the end of the year. One of them said that her children "
        "now have to walk for an hour to get to their school on the other side of the water."
    ),
    (
        "The mayor said that she understood their anger, but that the bridge was not safe and that no "
        "one would be allowed to cross it until the work was done. She added that she would rather "
        "be blamed for a delay than for an accident that could have been avoided."
    ),
    (
        "A final decision is expected at the next meeting, when the council will also look at a plan "
        "to run a small ferry between the two banks while the bridge is being rebuilt. If the plan is "
        "accepted, the first boat could be in the water by the middle of the summer."
    ),
]

NAV = ["Home", "World News", "Local Politics", "Business Today", "Sport Results", "Weather Forecast"]
FOOTER = ["About Us", "Contact Page", "Privacy Policy", "Terms Of Use", "Cookie Settings"]


def news_page(story: int = 1) -> str:
    """A realistic page: header, nav menu, ad block, a 5-paragraph article, footer."""
    nav = "".join(f'<li><a href="/{n.lower().replace(" ", "-")}">{n}</a></li>' for n in NAV)
    foot = "".join(f'<li><a href="/{n.lower().replace(" ", "-")}">{n}</a></li>' for n in FOOTER)
    paras = "".join(f"<p>{p}</p>\n" for p in ARTICLE)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Bridge repairs delayed - Daily Example</title>
<style>.ad {{ border: 1px solid red }}</style>
<script>window.dataLayer = [{{"story": {story}}}];</script></head>
<body>
<header><div class="logo"><a href="/">Daily Example</a></div>
<nav><ul class="menu">{nav}</ul></nav></header>
<div class="ad"><a href="https://ads.example.com/click">Sponsored Offer Click Here</a></div>
<main><article><h1>Bridge repairs will take two more years</h1>
<p class="byline">By <a href="/staff/jo">Jo Smith</a></p>
{paras}</article></main>
<footer><ul>{foot}</ul><p>&copy; 2024 Daily Example</p></footer>
<script>track("pageview");</script>
</body></html>"""


def make_site(root: Path) -> Path:
    """A folder with nested dirs, .htm/.html, non-UTF-8, empty, broken and odd pages."""
    site = root / "site"
    (site / "site-a" / "deep").mkdir(parents=True)
    (site / "site-b").mkdir()
    (site / "site-a" / "story-1.html").write_text(news_page(1), encoding="utf-8")
    (site / "site-a" / "deep" / "story-2.htm").write_text(
        "<html><body><h1>Caf\u00e9 \u00fcber alles</h1><p>na\u00efve r\u00e9sum\u00e9</p></body></html>",
        encoding="utf-8",
    )
    # cp1252 without any declaration: curly quotes and euro sign
    (site / "site-b" / "cp1252.html").write_bytes(b"<html><body><p>\x93Quoted\x94 price: \x80 5</p></body></html>")
    # latin-1 page with a meta charset (read as windows-1252, like browsers do)
    (site / "site-b" / "latin.HTML").write_bytes(
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
        b"</head><body><p>Se\xf1or Mu\xf1oz, S\xe3o Paulo</p></body></html>"
    )
    (site / "empty.html").write_bytes(b"")
    (site / "broken.html").write_text("<html><body><div><p>Unclosed <b>bold text</div></div></div><p>second <i>part", encoding="utf-8")
    (site / "script-only.html").write_text("<script>alert('hi')</script>", encoding="utf-8")
    (site / "entities.html").write_text(
        "<p>Fish &amp; Chips &lt;3 &copy; &eacute;t&eacute; &#8364;10 &#x263A; a&nbsp;b</p>",
        encoding="utf-8",
    )
    (site / "README.txt").write_text("not a page", encoding="utf-8")
    return site


EXPECTED_IDS = [
    "broken",
    "empty",
    "entities",
    "script-only",
    "site-a/deep/story-2",
    "site-a/story-1",
    "site-b/cp1252",
    "site-b/latin",
]


def problems_text(exc: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc.value)


# ---------------------------------------------------------------- reading a folder


def test_read_html_dir_ids_columns_and_stats(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    records, stats = read_html_dir(site, id_column="doc", fields=["doc", "html"], name="web")
    assert isinstance(records, Records)
    assert records.ids == EXPECTED_IDS
    assert records.source_names == ["web"]
    assert records.source.dtype == np.int32 and not records.source.any()
    assert list(records.fields) == ["doc", "html"]
    assert records.fields["doc"] == EXPECTED_IDS
    html = dict(zip(records.ids, records.fields["html"]))
    assert html["empty"] is None
    assert html["site-b/cp1252"] is not None and "\u201cQuoted\u201d price: \u20ac 5" in html["site-b/cp1252"]
    assert "Se\u00f1or Mu\u00f1oz, S\u00e3o Paulo" in (html["site-b/latin"] or "")
    assert "Caf\u00e9 \u00fcber alles" in (html["site-a/deep/story-2"] or "")
    assert stats == {
        "files": 8,
        "decoded_non_utf8": 2,
        "non_utf8_files": ["site-b/cp1252.html", "site-b/latin.HTML"],
        "encodings": {"cp1252": 2},
        "empty_files": 1,
        "empty_file_ids": ["empty"],
        "other_files": 1,
        "other_file_examples": ["README.txt"],
    }


def test_read_html_dir_only_html_field(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    records, _ = read_html_dir(site, id_column="id", fields=["html"], name="web")
    assert list(records.fields) == ["html"]
    assert len(records) == 8


def test_read_source_dispatches_folders(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    records = read_source(site, id_column="id", fields=["html"], name="web")
    assert records.ids == EXPECTED_IDS
    with_stats, stats = read_source_with_stats(site, id_column="id", fields=["html"], name="web")
    assert with_stats.ids == EXPECTED_IDS and with_stats.fields == records.fields
    assert stats["files"] == 8 and stats["decoded_non_utf8"] == 2


def test_read_source_with_stats_for_a_data_file(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,name\n1,a\n", encoding="utf-8")
    records, stats = read_source_with_stats(path, id_column="id", fields=["name"], name="s")
    assert records.ids == ["1"] and records.fields == {"name": ["a"]}
    assert stats == {}


def test_folder_named_like_a_data_file_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "out.parquet").mkdir()
    (tmp_path / "out.parquet" / "x.html").write_text("<p>x</p>", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_source_with_stats(tmp_path / "out.parquet", id_column="id", fields=[], name="s")
    # a Parquet dataset folder, as Spark names them (issue 30), not a page folder: it holds no Parquet file
    assert "holds no .parquet file" in problems_text(exc)


def test_decode_html_bytes() -> None:
    assert decode_html_bytes("h\u00e9".encode("utf-8")) == ("h\u00e9", None)
    assert decode_html_bytes(b"\xef\xbb\xbf<p>x</p>") == ("<p>x</p>", None)
    assert decode_html_bytes(b"\x93x\x94") == ("\u201cx\u201d", "cp1252")
    raw = '<meta charset="windows-1251"><p>\u041f\u0440\u0438\u0432\u0435\u0442</p>'.encode("cp1251")
    assert decode_html_bytes(raw) == ('<meta charset="windows-1251"><p>\u041f\u0440\u0438\u0432\u0435\u0442</p>', "cp1251")
    # unknown and refused labels fall back to cp1252; bad bytes under utf-8 are replaced
    assert decode_html_bytes(b'<meta charset="no-such-thing">\xe9')[1] == "cp1252"
    assert decode_html_bytes(b'<meta charset="utf-7">\xe9')[1] == "cp1252"
    assert decode_html_bytes(b'<meta charset="base64">\xe9')[1] == "cp1252"
    assert decode_html_bytes(b'<meta charset="utf-8">a\xffb') == ('<meta charset="utf-8">a\ufffdb', "utf-8")
    # a declaration after the first 2 KB is not looked at
    late = b"<p>" + b"x" * 3000 + b'</p><meta charset="cp1251">\xcf'
    assert decode_html_bytes(late)[1] == "cp1252"
    assert decode_html_bytes("hi".encode("utf-16")) == ("hi", "utf-16")
    assert decode_html_bytes(b"") == ("", None)


def test_empty_folder_names_what_it_contains(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("x", encoding="utf-8")
    (folder / "sub" / "b.pdf").write_bytes(b"%PDF")
    with pytest.raises(InputError) as exc:
        read_html_dir(folder, id_column="id", fields=["html"], name="web", where="job.yaml: sources[0].path")
    text = problems_text(exc)
    assert "no .html or .htm file in the folder" in text
    assert str(folder.absolute()) in text
    assert "'a.txt'" in text and "'sub/b.pdf'" in text
    assert "fix:" in text and "*.html" in text and "job.yaml: sources[0].path" in text

    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(InputError) as exc:
        read_source(empty, id_column="id", fields=["html"], name="web")
    assert "it is empty" in problems_text(exc)


def test_bad_fields_and_empty_folder_reported_together(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    with pytest.raises(InputError) as exc:
        read_html_dir(folder, id_column="id", fields=["htm", "title"], name="web")
    problems = exc.value.problems
    assert len(problems) == 3
    text = problems_text(exc)
    assert "column 'htm' not found" in text and "column 'title' not found" in text
    assert "a folder source has the columns id, html" in text
    assert "did you mean 'html'?" in text
    assert all(p.where == str(folder) and p.fix for p in problems)


def test_duplicate_ids(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.html").write_text("<p>1</p>", encoding="utf-8")
    (folder / "a.htm").write_text("<p>2</p>", encoding="utf-8")
    (folder / "b.html").write_text("<p>3</p>", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_html_dir(folder, id_column="id", fields=["html"], name="web")
    text = problems_text(exc)
    assert "'a.htm', 'a.html'" in text and "same id 'a'" in text and "fix: rename" in text


def test_unreadable_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "ok.html").write_text("<p>1</p>", encoding="utf-8")
    for k in range(12):
        (folder / f"secret-{k:02d}.html").write_text("<p>2</p>", encoding="utf-8")
    import er_framework.io.html as html_module

    real = html_module.open_regular

    def open_regular(path: Path, **kw: Any) -> Any:
        if Path(path).name.startswith("secret"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, **kw)

    monkeypatch.setattr(html_module, "open_regular", open_regular)
    with pytest.raises(InputError) as exc:
        read_html_dir(folder, id_column="id", fields=["html", "titel"], name="web")
    problems = exc.value.problems
    # the bad field, 10 unreadable files one by one, then a count of the rest
    assert len(problems) == 12
    assert "column 'titel' not found" in problems[0].message
    assert problems[1].where == str(folder / "secret-00.html")
    assert "cannot read the file: Permission denied" in problems[1].message
    assert problems[1].fix
    assert "2 more unreadable files" in problems[-1].message


def test_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_html_dir(tmp_path / "missing", id_column="id", fields=["html"], name="web")
    assert "is not a folder" in problems_text(exc)


# ---------------------------------------------------------------- visible text


def test_extract_text_of_the_site(tmp_path: Path) -> None:
    records, _ = read_html_dir(make_site(tmp_path), id_column="id", fields=["html"], name="web")
    texts, stats = extract_text(records.fields["html"])
    text = dict(zip(records.ids, texts))
    assert text["empty"] is None
    assert text["script-only"] == ""
    assert text["broken"] == "Unclosed bold text second part"
    assert text["entities"] == "Fish & Chips <3 \u00a9 \u00e9t\u00e9 \u20ac10 \u263a a b"
    assert text["site-a/deep/story-2"] == "Caf\u00e9 \u00fcber alles na\u00efve r\u00e9sum\u00e9"
    assert text["site-b/cp1252"] == "\u201cQuoted\u201d price: \u20ac 5"
    assert text["site-b/latin"] == "Se\u00f1or Mu\u00f1oz, S\u00e3o Paulo"
    story = text["site-a/story-1"] or ""
    assert "window.dataLayer" not in story and "track(" not in story and "border" not in story
    assert "Daily Example" in story and "- Daily Example" not in story  # <title> (head) removed
    assert stats == {
        "pages": 8,
        "missing": 1,
        "plain_text": 0,
        "empty_after_extraction": 1,
        "empty_positions": [EXPECTED_IDS.index("script-only")],
        "boilerplate": "keep",
        "boilerplate_fallbacks": 0,
        "boilerplate_fallback_positions": [],
    }


def test_invisible_parts_and_word_boundaries() -> None:
    page = (
        "<html><head><title>T</title></head><body><!-- a comment -->"
        "<p>E<b>ntit</b>y</p><div>one</div><div>two<br>three</div>"
        "<noscript>enable js</noscript><template>tpl</template><svg><text>chart</text></svg>"
        "<iframe src='x'>frame</iframe><object>obj</object><style>p{}</style>"
        "<table><tr><td>a</td><td>b</td></tr></table><ul><li>x</li><li>y</li></ul>"
        "\n\t last&nbsp;&nbsp; words </body></html>"
    )
    texts, _ = extract_text([page])
    assert texts == ["Entity one two three a b x y last words"]


def test_plain_text_passes_through() -> None:
    texts, stats = extract_text(["  just   some\ntext & more  ", "a < b and 3 > 2", ""])
    assert texts == ["just some text & more", "a < b and 3 > 2", ""]
    assert stats["plain_text"] == 3
    assert stats["empty_after_extraction"] == 1 and stats["empty_positions"] == [2]


def test_none_stays_none() -> None:
    texts, stats = extract_text([None, "<p>x</p>", None], boilerplate="drop")
    assert texts[0] is None and texts[2] is None
    assert stats["missing"] == 2 and stats["pages"] == 3


def test_keep_versus_drop_on_a_news_page() -> None:
    page = news_page()
    (keep,), keep_stats = extract_text([page], boilerplate="keep")
    (drop,), drop_stats = extract_text([page], boilerplate="drop", language="English")
    assert keep is not None and drop is not None
    for sentence in ARTICLE:
        assert sentence in keep
        assert sentence in drop
    for link in NAV + FOOTER + ["Sponsored Offer Click Here"]:
        assert link in keep
        assert link not in drop
    assert "By Jo Smith" in keep  # short paragraphs between links count as chrome
    assert drop_stats["boilerplate_fallbacks"] == 0
    assert drop_stats["boilerplate"] == "drop" and drop_stats["language"] == "English"
    assert keep_stats["boilerplate"] == "keep" and "language" not in keep_stats
    assert len(drop) < len(keep)


def test_drop_falls_back_to_keep_text() -> None:
    nav_only = "<ul>" + "".join(f"<li><a href='/{n}'>{n}</a></li>" for n in NAV) + "</ul>"
    pages: list[str | None] = [nav_only, "<p></p>", news_page(), "<p>Short.</p>", "   "]
    texts, stats = extract_text(pages, boilerplate="drop")
    keep, _ = extract_text(pages)
    assert texts[0] == keep[0] == " ".join(NAV)
    assert texts[1] == "" and texts[3] == "Short." and texts[4] == ""
    # only pages with some text count as fallbacks; empty ones are counted as empty
    assert stats["boilerplate_fallbacks"] == 2
    assert stats["boilerplate_fallback_positions"] == [0, 3]
    assert stats["empty_after_extraction"] == 2 and stats["empty_positions"] == [1, 4]


def test_drop_with_only_short_paragraphs_falls_back() -> None:
    """jusText needs at least one paragraph of 200+ characters with enough stop words.

    An article of one-sentence paragraphs has none: the page keeps its full
    text, and the fallback is counted.
    """
    short = [s.split(". ")[0] + "." for s in ARTICLE]
    page = news_page().replace("".join(f"<p>{p}</p>\n" for p in ARTICLE), "".join(f"<p>{p}</p>" for p in short))
    (text,), stats = extract_text([page], boilerplate="drop")
    assert text == extract_text([page])[0][0]
    assert stats["boilerplate_fallbacks"] == 1 and stats["boilerplate_fallback_positions"] == [0]


def test_drop_in_another_language() -> None:
    para = (
        "<p>El ayuntamiento de la ciudad se reuni\u00f3 el martes por la noche para hablar del "
        "futuro del viejo puente del puerto, que est\u00e1 cerrado desde la tormenta de marzo y que "
        "los vecinos quieren ver abierto antes de que termine el a\u00f1o.</p>"
    )
    page = "<nav><a href='/'>Inicio</a> <a href='/m'>Mundo</a></nav>" + para * 3
    (text,), stats = extract_text([page], boilerplate="drop", language="Spanish")
    assert text is not None and "ayuntamiento" in text and "Inicio" not in text
    assert stats["boilerplate_fallbacks"] == 0


def test_deterministic(tmp_path: Path) -> None:
    records, _ = read_html_dir(make_site(tmp_path), id_column="id", fields=["html"], name="web")
    pages = records.fields["html"] + [news_page(k) for k in range(5)]
    for mode in ("keep", "drop"):
        first = extract_text(pages, boilerplate=mode)
        second = extract_text(pages, boilerplate=mode)
        assert first == second


def test_unknown_language_and_mode() -> None:
    with pytest.raises(ValueError) as exc:
        extract_text(["<p>x</p>"], boilerplate="drop", language="english")
    message = str(exc.value)
    assert "did you mean 'English'?" in message and "Spanish" in message
    with pytest.raises(ValueError) as exc:
        extract_text(["<p>x</p>"], boilerplate="remove")
    assert "keep, drop" in str(exc.value)
    # the language only matters when dropping boilerplate
    assert extract_text(["<p>x</p>"], language="Klingon")[0] == ["x"]


def test_fast_justext_matches_justext(tmp_path: Path) -> None:
    """The faster jusText pipeline classifies exactly like ``justext.justext``."""
    import justext

    from er_framework.io.html import justext_paragraphs, visible_text

    records, _ = read_html_dir(make_site(tmp_path), id_column="id", fields=["html"], name="web")
    pages = [p for p in records.fields["html"] if p] + [news_page(k) for k in range(3)]
    pages.append("<div>one\n\n two\r\n<br><br>three\xa0 four</div><pre>a\n  b</pre>")
    stoplist = justext.get_stoplist("English")
    for page in pages:
        for html in (page, visible_text(page)[1].html):
            expected = [(p.class_type, p.text, p.xpath) for p in justext.justext(html, stoplist)]
            got = [(p.class_type, p.text, p.xpath) for p in justext_paragraphs(html, stoplist)]
            assert got == expected


def test_justext_failure_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.io import html as ehtml

    def boom(html: str, stoplist: frozenset[str]) -> list[object]:
        raise ValueError("Document is empty")

    monkeypatch.setattr(ehtml, "justext_paragraphs", boom)
    page = news_page()
    texts, stats = extract_text([page, None], boilerplate="drop")
    assert texts == [extract_text([page])[0][0], None]
    assert stats["boilerplate_fallbacks"] == 1 and stats["boilerplate_fallback_positions"] == [0]


# ---------------------------------------------------------------- hostile pages (issue 18, case 11)


def test_cap_depth_keeps_shallow_pages_and_flattens_deep_ones() -> None:
    from er_framework.io.html import cap_depth, visible_text

    shallow = "<html><body>" + "<div><p>a <b>b</b>c</p></div>" * 50 + "</body></html>"
    assert cap_depth(shallow, 8) is shallow
    deep = "<div>" * 30 + "<b>E</b>ntity <script>var x = '<div>hidden'</script><svg><text>SVG</text></svg> end" + "</div>" * 30
    flat = cap_depth(deep, 10)
    assert flat.count("<div>") == 10 and flat.count("</div>") == 10
    text = visible_text(flat)[0]
    assert text == visible_text(deep)[0] == "Entity end"


def test_cap_depth_follows_implied_end_tags() -> None:
    from er_framework.io.html import cap_depth

    # 3000 unclosed <li> and <p> are siblings, not 3000 levels: nothing is flattened
    page = "<ul>" + "<li>item" * 3000 + "</ul>" + "<p>para" * 3000
    assert cap_depth(page, 16) is page


def test_revise_paragraph_classification_matches_justext() -> None:
    import random

    from justext import core

    from er_framework.io.html import revise_paragraph_classification

    class P:
        def __init__(self, cf: str, heading: bool, text: str) -> None:
            self.cf_class, self.heading, self.text, self.class_type = cf, heading, text, ""

    rng = random.Random(5)
    for _ in range(2000):
        spec = [
            (rng.choice(["good", "bad", "short", "neargood"]), rng.random() < 0.3, "x" * rng.choice([0, 5, 150, 250]))
            for _ in range(rng.randint(0, 25))
        ]
        ours, theirs = [P(*s) for s in spec], [P(*s) for s in spec]
        core.revise_paragraph_classification(theirs)
        revise_paragraph_classification(ours, core.MAX_HEADING_DISTANCE_DEFAULT)
        assert [p.class_type for p in ours] == [p.class_type for p in theirs], spec


def test_page_size_limit_and_skipped_links(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.html").write_text("<p>" + "x" * 3000 + "</p>", encoding="utf-8")
    (folder / "b.html").write_text("<p>b</p>", encoding="utf-8")
    (folder / "c.html").symlink_to(folder / "b.html")
    with pytest.raises(InputError, match=r"a.html: the page is 0.00\d+ MB, larger than the limit of 0.00195 MB"):
        read_html_dir(folder, id_column="id", fields=["html"], name="web", max_record_mb=2 / 1024)
    records, stats = read_html_dir(folder, id_column="id", fields=["html"], name="web")
    assert records.ids == ["a", "b"]
    assert stats["skipped_symlinks"] == 1 and stats["skipped_symlink_examples"] == ["c.html"]
    records, stats = read_html_dir(folder, id_column="id", fields=["html"], name="web", follow_symlinks=True)
    assert records.ids == ["a", "b", "c"] and "skipped_symlinks" not in stats
