"""HTML input: a folder of web pages as a source, and their visible text.

Two steps, kept apart so that each can be used (and tested) on its own:

* :func:`read_html_dir` reads a folder of ``.html`` / ``.htm`` files into
  :class:`~er_framework.data.Records` with the columns ``id`` (the file's
  relative path without its extension) and ``html`` (the decoded page).
  :func:`er_framework.io.source_files.read_source` calls it when a source's ``path`` is a
  folder.
* :func:`extract_text` turns pages into their visible text (scripts, styles,
  the head and other invisible parts removed; entities decoded; whitespace
  folded), optionally without navigation and other page chrome
  (``boilerplate="drop"``, jusText's stop-word classifier).

Both follow the input rules of :mod:`er_framework.io.source_files`: bad input raises
:class:`~er_framework.errors.InputError` listing every problem at once, and
nothing is dropped silently: every file becomes a record (or a problem), and
the oddities that are not errors (pages not in UTF-8, empty files, pages whose
boilerplate removal fell back to the full text, …) are counted in the stats
that both functions return for the job's ``report.json``.

``selectolax`` and ``justext`` are imported when first needed, so importing
this module (or :mod:`er_framework.io.source_files`) costs nothing.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from er_framework.data import Records
from er_framework.errors import InputError, Problem, did_you_mean
from er_framework.io.formats import (
    DEFAULT_MAX_RECORD_MB,
    MAX_ROW_PROBLEMS,
    RECORD_FIX,
    SUPPORTED_EXTENSIONS,
    file_kind,
    mb_text,
    open_regular,
    record_limit,
)
from er_framework.io.page_folder import HTML_EXTENSIONS, check_pages_fit, list_pages

__all__ = [
    "BOILERPLATE_MODES",
    "HTML_EXTENSIONS",
    "MAX_DEPTH",
    "boilerplate_languages",
    "cap_depth",
    "check_boilerplate_options",
    "decode_html_bytes",
    "extract_text",
    "justext_paragraphs",
    "read_html_dir",
    "revise_paragraph_classification",
    "visible_text",
]

#: Values of ``boilerplate`` accepted by :func:`extract_text`.
BOILERPLATE_MODES: tuple[str, ...] = ("keep", "drop")

#: How many examples (paths, ids, positions) the stats list per kind.
_EXAMPLES = 10

#: How many bytes at the start of a page are searched for a charset declaration.
_CHARSET_WINDOW = 2048

_CHARSET_RE = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)

#: Charset labels that browsers (WHATWG Encoding Standard) read as windows-1252.
_AS_CP1252 = frozenset({"ascii", "iso8859-1", "latin-1"})

#: Codecs Python knows but that must never decode a web page: UTF-16/32 labels
#: in an ASCII-compatible page are wrong by construction (the Standard ignores
#: them), and the others are escapes/transforms rather than text encodings.
_REFUSED_CODECS = frozenset(
    {
        "utf-16",
        "utf-16-le",
        "utf-16-be",
        "utf-32",
        "utf-32-le",
        "utf-32-be",
        "utf-7",
        "idna",
        "punycode",
        "unicode-escape",
        "raw-unicode-escape",
        "undefined",
        "mbcs",
        "oem",
    }
)

#: Elements whose content is never visible text.
_INVISIBLE = ["script", "style", "noscript", "template", "svg", "head", "iframe", "object"]

#: Elements that separate words: a space goes before and after each of them.
_BLOCKS = (
    "address,article,aside,blockquote,br,caption,dd,details,dialog,div,dl,dt,fieldset,"
    "figcaption,figure,footer,form,h1,h2,h3,h4,h5,h6,header,hgroup,hr,legend,li,main,"
    "nav,ol,option,p,pre,section,summary,table,tbody,td,tfoot,th,thead,tr,ul,center,img,"
    "input,select,textarea,button"
)

#: Something that starts a tag, a comment or a doctype: the string is HTML.
_TAG_RE = re.compile(r"<[A-Za-z!/?]")

#: The deepest element nesting a page is parsed with (browsers stop nesting at 512 as well).
#: The HTML parser's work per tag grows with the depth (it scans the stack of open elements),
#: so a page of 100k nested ``<div>`` took 38 s; deeper tags are dropped before parsing (see
#: :func:`cap_depth`), which keeps parsing linear in the page's size.
MAX_DEPTH = 512

#: A start or end tag, a comment's start, a doctype or processing instruction.
_TAG_SCAN = re.compile(r"<(/?)([A-Za-z][^\s/>]*)[^>]*>|<!--|<[!?][^>]*>")

#: Elements whose content is raw text (no tags inside).
_RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"})

#: Elements that never have content or an end tag.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr"})

#: An open element that the start tag of the key closes (the parser's implied end tags).
_IMPLIED_END = {
    "p": {"p"},
    "li": {"li"},
    "dt": {"dt", "dd"},
    "dd": {"dt", "dd"},
    "option": {"option"},
    "tr": {"tr", "td", "th"},
    "td": {"td", "th"},
    "th": {"td", "th"},
}

_BLOCK_SET = frozenset(_BLOCKS.split(","))
_INVISIBLE_SET = frozenset(_INVISIBLE)

#: How far down the stack of open elements an end tag looks for its element.
_END_TAG_WINDOW = 64

#: Pages with fewer tags are parsed as they are: the parser's extra work on deep nesting is
#: small when a page has few tags, and the scan of :func:`cap_depth` costs about a third of
#: the parse, so it is spent only where it can pay (the time stays linear in the page's size).
_CAP_FROM_TAGS = 2048


# --------------------------------------------------------------------------
# reading a folder of pages
# --------------------------------------------------------------------------


def decode_html_bytes(raw: bytes) -> tuple[str, str | None]:
    """Decode a page's bytes; never fails.

    Order: a UTF-16 byte order mark wins; then UTF-8 (a UTF-8 BOM is dropped);
    if the bytes are not valid UTF-8, the charset declared in the page
    (``<meta charset=...>`` or ``<meta http-equiv="content-type"
    content="...; charset=...">`` within the first 2 KB) if Python knows it,
    else cp1252 (what browsers use). Labels the HTML Standard reads as
    windows-1252 (``iso-8859-1``, ``latin1``, ``us-ascii``) are decoded as
    cp1252; a declared ``utf-8`` is decoded as UTF-8. Undecodable bytes
    become U+FFFD.

    Returns
    -------
    (text, encoding)
        ``encoding`` is ``None`` for valid UTF-8, else the codec used
        (e.g. ``"cp1252"``, ``"cp1251"``, ``"utf-16"``).
    """
    if raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return raw.decode("utf-16", errors="replace"), "utf-16"
    body = raw[3:] if raw.startswith(codecs.BOM_UTF8) else raw
    try:
        return body.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    encoding = "cp1252"
    match = _CHARSET_RE.search(raw, 0, _CHARSET_WINDOW)
    if match:
        label = match.group(1).decode("ascii").strip(".:-_")
        try:
            info = codecs.lookup(label)
        except LookupError:
            info = None
        if info is not None and getattr(info, "_is_text_encoding", True):
            name = info.name
            if name in _AS_CP1252:
                encoding = "cp1252"
            elif name not in _REFUSED_CODECS:
                encoding = name
    try:
        return body.decode(encoding, errors="replace"), encoding
    except (UnicodeError, LookupError, ValueError, TypeError):  # pragma: no cover - odd codecs
        return body.decode("cp1252", errors="replace"), "cp1252"


def _listing_text(items: Sequence[str], total: int, limit: int = 8) -> str:
    shown = ", ".join(repr(x) for x in items[:limit])
    if total > limit:
        shown += f" … and {total - limit} more"
    return shown


def read_html_dir(
    path: Path,
    *,
    id_column: str,
    fields: Sequence[str],
    name: str,
    where: str | None = None,
    max_record_mb: float | None = DEFAULT_MAX_RECORD_MB,
    follow_symlinks: bool = False,
) -> tuple[Records, dict[str, Any]]:
    """Read a folder of web pages: one record per ``.html`` / ``.htm`` file.

    Every HTML file below ``path`` (recursively; extensions matched
    case-insensitively; symlinked folders not followed) becomes one record, in
    the order of the files' relative POSIX paths. Only regular files are read:
    a page that is a symbolic link is skipped unless ``follow_symlinks`` (and
    even then read only if it leads to a regular file), and FIFOs, devices and
    sockets are skipped (a pipe would block, ``/dev/zero`` never ends); the
    skipped files are counted in the stats. A page larger than
    ``max_record_mb`` (MB of 2**20 bytes; ``None``: no limit) is a problem,
    found without reading it. A record's id is that path
    without the extension (``site-a/story-1.html`` -> ``"site-a/story-1"``);
    its ``html`` is the decoded page (see :func:`decode_html_bytes`), or
    ``None`` for an empty file (0 bytes, or only a byte order mark) - the
    same rule as an empty CSV cell.

    Parameters
    ----------
    path:
        The folder.
    id_column:
        Name of the id column (the column holding the id in ``fields``).
    fields:
        The columns to keep, in this order: ``"html"`` and/or ``id_column``.
    name:
        The source's name (``source_names == [name]``).
    where:
        Optional location of the source in the job file, for messages.
    max_record_mb:
        The largest page accepted (a source's ``max_record_mb``).
    follow_symlinks:
        Read pages that are symbolic links to regular files (``html.follow_symlinks``).

    Returns
    -------
    (Records, stats)
        ``stats`` = ``{"files": n, "decoded_non_utf8": count, "non_utf8_files":
        first 10 relative paths, "encodings": {codec: count} of those,
        "empty_files": count, "empty_file_ids": first 10 ids, "other_files":
        count of files that are not HTML (not read), "other_file_examples":
        first 10 of them}``, plus ``"skipped_symlinks"`` / ``"skipped_symlink_examples"``
        and ``"skipped_special_files"`` / ``"skipped_special_examples"`` (HTML-named
        entries that are symbolic links not followed, or not regular files: not read)
        when there are any.

    Raises
    ------
    InputError
        With every problem found: a field other than ``html``/``id_column``,
        no HTML file in the folder (with what it does contain), unreadable
        files or sub-folders, two files with the same id (``a.html`` and
        ``a.htm``).
    """
    folder = Path(path)
    file = str(path)
    hint = f" (source {name!r}, {where})" if where else f" (source {name!r})"
    where_fix = f" at {where}" if where else ""
    problems = _field_problems(fields, id_column, file, hint)
    if not folder.is_dir():
        problems.append(
            Problem(
                where=file,
                message=f"{str(folder.absolute())!r} is not a folder{hint}",
                fix=f"check the path{where_fix}",
            )
        )
        raise InputError(problems)

    listing = list_pages(folder, hint)  # er output folders and pseudo file systems left out; bounded
    pages, others, walk_errors = listing.pages, listing.others, listing.errors
    check_pages_fit(folder, pages, hint)  # before any page is read
    unreadable = [
        Problem(
            where=str(e.filename or file),
            message=f"cannot list the folder: {e.strerror or e}{hint}",
            fix="check the folder's permissions",
        )
        for e in walk_errors
    ]
    if not pages and not walk_errors:
        problems.append(
            _no_pages_problem(folder, file, others + [f"{d} (an er output folder, not read)" for d in listing.er_outputs], hint, where_fix)
        )
    problems += _duplicate_id_problems(pages, file, hint)
    read = _read_pages(folder, pages, file, hint, unreadable, record_limit(max_record_mb), follow_symlinks)
    problems += unreadable
    if pages and not read.ids and not problems:
        skipped = read.symlinks + read.special
        problems.append(
            Problem(
                where=file,
                message=f"no page of the folder {str(folder.absolute())!r} could be read{hint}: "
                f"{_listing_text(skipped, len(skipped))} {'is' if len(skipped) == 1 else 'are'} not "
                "regular files (symbolic links are not followed; pipes and devices are never read)",
                fix="copy the pages into the folder as regular files"
                + (", or set html.follow_symlinks: true to read links to regular files" if read.symlinks else ""),
            )
        )
    if problems:
        raise InputError(problems)

    columns: dict[str, list[str | None]] = {}
    for f in fields:
        columns[f] = list(read.ids) if f == id_column else list(read.htmls)
    n = len(read.ids)
    records = Records(
        ids=read.ids,
        source=np.zeros(n, dtype=np.int32),
        source_names=[name],
        fields={k: v for k, v in columns.items()},
    )
    return records, read.stats(others) | listing.stats()


def _field_problems(fields: Sequence[str], id_column: str, file: str, hint: str) -> list[Problem]:
    """A folder source has only the columns ``id_column`` and ``html``: a problem per other field."""
    problems: list[Problem] = []
    allowed = [id_column, "html"]
    for f in dict.fromkeys(fields):
        if f not in allowed:
            problems.append(
                Problem(
                    where=file,
                    path=f"column {f!r}",
                    message=f"column {f!r} not found{hint}; a folder source has the columns "
                    f"{id_column}, html (one record per .html/.htm file: its relative path "
                    "without the extension, and the page)",
                    fix=f"{did_you_mean(f, allowed)}use 'html' in the fields (the text is "
                    "extracted from it), or point the path to a data file "
                    f"({', '.join(SUPPORTED_EXTENSIONS)}) that has the column {f!r}",
                )
            )
    return problems


def _no_pages_problem(folder: Path, file: str, others: list[str], hint: str, where_fix: str) -> Problem:
    if others:
        content = f"it contains {len(others)} other file(s): {_listing_text(others, len(others))}"
    else:
        content = "it is empty"
    return Problem(
        where=file,
        message=f"no .html or .htm file in the folder {str(folder.absolute())!r}{hint}; {content}",
        fix="put the pages in files named *.html or *.htm (sub-folders are read too), "
        f"or point the path{where_fix} to a data file "
        f"({', '.join(SUPPORTED_EXTENSIONS)})",
    )


def _duplicate_id_problems(pages: list[tuple[str, str]], file: str, hint: str) -> list[Problem]:
    """Files with the same id (``a.html`` next to ``a.htm``), capped at :data:`MAX_ROW_PROBLEMS`."""
    by_id: dict[str, list[str]] = {}
    for rel, rid in pages:
        by_id.setdefault(rid, []).append(rel)
    dup_problems: list[Problem] = []
    hidden_dups = 0
    for rid, rels in by_id.items():
        if len(rels) > 1:
            if len(dup_problems) < MAX_ROW_PROBLEMS:
                dup_problems.append(
                    Problem(
                        where=file,
                        message=f"the files {_listing_text(rels, len(rels))} have the same id "
                        f"{rid!r}{hint}: ids are the relative paths without the extension "
                        "and must be unique",
                        fix="rename or remove all but one of them",
                    )
                )
            else:
                hidden_dups += 1
    if hidden_dups:
        dup_problems.append(
            Problem(
                where=file, message=f"… and {hidden_dups} more duplicate ids not listed", fix="rename or remove all but one file of each id"
            )
        )
    return dup_problems


@dataclass
class _Pages:
    """The pages read from a folder: ids, decoded pages (``None`` = empty) and the oddities."""

    ids: list[str] = field(default_factory=list)
    htmls: list[str | None] = field(default_factory=list)
    non_utf8: list[str] = field(default_factory=list)
    encodings: Counter[str] = field(default_factory=Counter)
    empty_ids: list[str] = field(default_factory=list)
    symlinks: list[str] = field(default_factory=list)  # pages that are symbolic links, not followed
    special: list[str] = field(default_factory=list)  # pages that are not regular files (FIFOs, devices)

    def stats(self, others: list[str]) -> dict[str, Any]:
        skipped: dict[str, Any] = {}
        if self.symlinks:
            skipped["skipped_symlinks"] = len(self.symlinks)
            skipped["skipped_symlink_examples"] = self.symlinks[:_EXAMPLES]
        if self.special:
            skipped["skipped_special_files"] = len(self.special)
            skipped["skipped_special_examples"] = self.special[:_EXAMPLES]
        return {
            "files": len(self.ids),
            "decoded_non_utf8": len(self.non_utf8),
            "non_utf8_files": self.non_utf8[:_EXAMPLES],
            "encodings": dict(sorted(self.encodings.items())),
            "empty_files": len(self.empty_ids),
            "empty_file_ids": self.empty_ids[:_EXAMPLES],
            "other_files": len(others),
            "other_file_examples": others[:_EXAMPLES],
        } | skipped


def _read_pages(
    folder: Path,
    pages: list[tuple[str, str]],
    file: str,
    hint: str,
    unreadable: list[Problem],
    limit: int | None = None,
    follow_symlinks: bool = False,
) -> _Pages:
    """Read and decode every page; a file that cannot be read (or is larger than ``limit``)
    adds a problem to ``unreadable`` (which may already hold listing problems; capped at
    :data:`MAX_ROW_PROBLEMS`). Symbolic links (unless ``follow_symlinks``) and files that are
    not regular are skipped and counted: the check is made on the open descriptor (opened
    without blocking, without following a link), so a file swapped for a FIFO cannot hang."""
    read = _Pages()
    hidden_unreadable = 0

    def problem(p: Problem) -> None:
        nonlocal hidden_unreadable
        if len(unreadable) < MAX_ROW_PROBLEMS:
            unreadable.append(p)
        else:
            hidden_unreadable += 1

    for rel, rid in pages:
        target = folder / rel
        try:
            f, mode = open_regular(target, follow_symlinks=follow_symlinks)
            if f is None:
                if stat.S_ISLNK(mode):
                    read.symlinks.append(rel)
                else:
                    read.special.append(f"{rel} ({file_kind(mode)})")
                continue
            with f:
                size = os.fstat(f.fileno()).st_size
                if limit is not None and size > limit:
                    problem(_page_too_big(target, size, limit, hint))
                    continue
                raw = f.read() if limit is None else f.read(limit + 1)
        except OSError as e:
            problem(
                Problem(
                    where=str(target),
                    message=f"cannot read the file: {e.strerror or e}{hint}",
                    fix="check the file's permissions, or remove the file",
                )
            )
            continue
        if limit is not None and len(raw) > limit:  # the file grew while it was read
            problem(_page_too_big(target, len(raw), limit, hint))
            continue
        text, encoding = decode_html_bytes(raw)
        if encoding is not None:
            read.non_utf8.append(rel)
            read.encodings[encoding] += 1
        read.ids.append(rid)
        if text:
            read.htmls.append(text)
        else:
            read.htmls.append(None)
            read.empty_ids.append(rid)
    if hidden_unreadable:
        unreadable.append(
            Problem(
                where=file,
                message=f"… and {hidden_unreadable} more unreadable files not listed",
                fix="check the permissions of the files in the folder",
            )
        )
    return read


def _page_too_big(target: Path, size: int, limit: int, hint: str) -> Problem:
    return Problem(
        where=str(target),
        message=f"the page is {mb_text(size)}, larger than the limit of {mb_text(limit)} (max_record_mb){hint}",
        fix=RECORD_FIX,
    )


# --------------------------------------------------------------------------
# visible text
# --------------------------------------------------------------------------


def boilerplate_languages() -> list[str]:
    """The stop-list names :func:`extract_text` accepts as ``language`` (sorted): the ``.txt`` files of
    justext's ``stoplists`` folder, as ``justext.get_stoplists()`` lists them, found without importing
    justext (with lxml it costs ~40 ms of ``er validate``'s start-up); justext's own list when the
    folder cannot be listed (e.g. installed in a zip)."""
    import importlib.util

    spec = importlib.util.find_spec("justext")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            names = os.listdir(os.path.join(folder, "stoplists"))
        except OSError:
            continue
        return sorted({os.path.splitext(n)[0] for n in names if os.path.splitext(n)[1] == ".txt"})
    import justext

    return sorted(justext.get_stoplists())


def check_boilerplate_options(boilerplate: str, language: str) -> None:
    """Raise ``ValueError`` (with a did-you-mean) for an unknown mode or language.

    ``language`` is only checked when ``boilerplate == "drop"``.
    """
    if boilerplate not in BOILERPLATE_MODES:
        raise ValueError(
            f"unknown boilerplate mode {boilerplate!r}; "
            f"{did_you_mean(boilerplate, BOILERPLATE_MODES)}expected one of: "
            f"{', '.join(BOILERPLATE_MODES)}"
        )
    if boilerplate == "drop":
        languages = boilerplate_languages()
        if language not in languages:
            raise ValueError(
                f"unknown boilerplate language {language!r}; "
                f"{did_you_mean(language, languages)}available stop lists: {', '.join(languages)}"
            )


def _fold(text: str) -> str:
    """Whitespace (any Unicode space, incl. no-break space) folded to single spaces."""
    return " ".join(text.split())


def cap_depth(page: str, limit: int = MAX_DEPTH) -> str:
    """``page`` with the elements nested deeper than ``limit`` flattened; ``page`` itself when
    it is not that deep (and always when it has at most ``limit`` tags).

    One linear scan of the tags keeps a stack of the open elements (with the end tags the HTML
    parser implies: a ``<p>`` closes an open ``<p>``, a ``<li>`` an open ``<li>``, …; an end tag
    looks only :data:`_END_TAG_WINDOW` elements down the stack for its element). Below
    ``limit``: start and end tags are dropped, a block element's (``div``, ``p``, …) replaced by
    a space so that words stay apart, an inline one's by nothing; an invisible element
    (``script``, ``svg``, …) is removed with its content. The text is kept, so the visible text
    is that of the page, with the deep elements' text in document order.
    """
    if page.count("<") <= limit:
        return page
    search = _TAG_SCAN.search
    stack: list[str] = []
    out: list[str] = []
    last = 0  # page[last:] not yet copied to out
    pos = 0
    lower: str | None = None
    flattened = False
    while True:
        m = search(page, pos)
        if m is None:
            break
        pos = m.end()
        name = m.group(2)
        if name is None:
            if m.group() == "<!--":  # a comment: skip it whole (tags inside do not count)
                end = page.find("-->", pos)
                if end < 0:
                    break
                pos = end + 3
            continue
        name = name.lower()
        deep = len(stack) >= limit
        if m.group(1):  # an end tag
            for k in range(len(stack) - 1, max(len(stack) - 1 - _END_TAG_WINDOW, -1), -1):
                if stack[k] == name:
                    if len(stack) > limit:  # the element was dropped: drop its end tag too
                        out.append(page[last : m.start()])
                        out.append(" " if name in _BLOCK_SET else "")
                        last = pos
                    del stack[k:]
                    break
            continue
        if name in _RAW_TEXT or (deep and name in _INVISIBLE_SET):
            # raw text runs to its end tag; a deep invisible element goes with its content
            if lower is None:
                lower = page.lower()
            end = _element_end(lower, name, pos, name in _RAW_TEXT)
            if deep:
                out.append(page[last : m.start()])
                out.append(" ")
                last = end
                flattened = True
            pos = end
            if end >= len(page):
                break
            continue
        closes = _IMPLIED_END.get(name)
        if closes and stack and stack[-1] in closes:
            stack.pop()
            deep = len(stack) >= limit
        if name in _VOID or m.group().endswith("/>"):
            if deep:
                out.append(page[last : m.start()])
                out.append(" " if name in _BLOCK_SET else "")
                last = pos
            continue
        stack.append(name)
        if deep:
            out.append(page[last : m.start()])
            out.append(" " if name in _BLOCK_SET else "")
            last = pos
            flattened = True
    if not flattened:
        return page
    out.append(page[last:])
    return "".join(out)


def _element_end(lower: str, name: str, start: int, raw: bool) -> int:
    """Where the element ``name`` whose start tag ends at ``start`` ends (after its end tag;
    the end of the page if it has none). ``lower``: the page in lower case."""
    if raw:
        end = lower.find("</" + name, start)
        if end < 0:
            return len(lower)
        gt = lower.find(">", end)
        return len(lower) if gt < 0 else gt + 1
    # nested elements of the same name (<svg><svg>…</svg></svg>) count
    tags = re.compile(r"<(/?)" + re.escape(name) + r"(?=[\s/>])[^>]*>")
    depth = 1
    for t in tags.finditer(lower, start):
        if t.group(1):
            depth -= 1
            if depth == 0:
                return t.end()
        elif not t.group().endswith("/>"):
            depth += 1
    return len(lower)


def visible_text(page: str) -> tuple[str, Any]:
    """The folded visible text of ``page`` and its cleaned parse tree.

    Elements nested deeper than :data:`MAX_DEPTH` are flattened first (:func:`cap_depth`),
    so the time is linear in the page's size.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(cap_depth(page) if page.count("<") > _CAP_FROM_TAGS else page)
    tree.strip_tags(_INVISIBLE, recursive=True)
    top = tree.body if tree.body is not None else tree.root
    if top is None:  # pragma: no cover - the parser always builds a document
        return "", tree
    for node in top.css(_BLOCKS):
        node.insert_before(" ")
        node.insert_after(" ")
    return _fold(top.text()), tree


def extract_text(
    pages: Sequence[str | None],
    *,
    boilerplate: str = "keep",
    language: str = "English",
) -> tuple[list[str | None], dict[str, Any]]:
    """The visible text of every page.

    Each page is parsed as HTML5 (selectolax/Lexbor; broken markup is repaired
    the way browsers do); ``script``, ``style``, ``noscript``, ``template``,
    ``svg``, ``head``, ``iframe`` and ``object`` elements are removed
    (comments never count as text); the text of the body is taken with a
    space around every block element (``p``, ``div``, ``li``, ``td``, ``br``,
    …) but not around inline ones (``<b>E</b>ntity`` stays ``Entity``);
    entities are decoded and whitespace (including no-break spaces) is folded
    to single spaces.

    * ``None`` stays ``None`` (missing stays missing).
    * A string without any tag (no ``<`` followed by a letter, ``!``, ``/``
      or ``?``) is plain text: it is returned with its whitespace folded,
      otherwise unchanged (entities are not decoded), in both modes.
    * ``boilerplate="drop"`` removes navigation and page chrome with
      jusText's classifier (paragraph length, stop-word density and link
      density; ``language`` names its stop list, see
      :func:`boilerplate_languages`): the paragraphs that are not boilerplate,
      joined by a space. If jusText fails on a page or finds no good
      paragraph in it, the page gets its ``"keep"`` text and is counted as a
      fallback (pages whose ``"keep"`` text is already empty are not
      counted).

    Returns
    -------
    (texts, stats)
        ``texts[i]`` is the text of ``pages[i]``; ``stats`` = ``{"pages": n,
        "missing": count of None, "plain_text": count of strings without tags,
        "empty_after_extraction": count of pages whose text is "",
        "empty_positions": first 10 indices, "boilerplate": mode,
        "boilerplate_fallbacks": count, "boilerplate_fallback_positions":
        first 10 indices}`` plus ``"language"`` when ``boilerplate="drop"``.

    Raises
    ------
    ValueError
        Unknown ``boilerplate`` mode or ``language`` (the message lists the
        available ones and the closest match).
    """
    check_boilerplate_options(boilerplate, language)
    drop = boilerplate == "drop"
    stoplist: frozenset[str] | None = None
    if drop:
        import justext

        stoplist = justext.get_stoplist(language)

    out: list[str | None] = []
    missing = plain = 0
    empty: list[int] = []
    fallbacks: list[int] = []
    for i, page in enumerate(pages):
        if page is None:
            out.append(None)
            missing += 1
            continue
        if not _TAG_RE.search(page):
            text = _fold(page)
            plain += 1
        else:
            text, tree = visible_text(page)
            if drop and text:
                kept = _justext_text(tree.html or "", stoplist)
                if kept:
                    text = kept
                else:
                    fallbacks.append(i)
        if not text:
            empty.append(i)
        out.append(text)

    stats: dict[str, Any] = {
        "pages": len(out),
        "missing": missing,
        "plain_text": plain,
        "empty_after_extraction": len(empty),
        "empty_positions": empty[:_EXAMPLES],
        "boilerplate": boilerplate,
        "boilerplate_fallbacks": len(fallbacks),
        "boilerplate_fallback_positions": fallbacks[:_EXAMPLES],
    }
    if drop:
        stats["language"] = language
    return out, stats


def _justext_text(cleaned_html: str, stoplist: frozenset[str] | None) -> str:
    """The good paragraphs of a page (already cleaned by :func:`visible_text`), or ``""``.

    ``""`` when jusText finds no good paragraph or fails on the page: it is
    a third-party classifier run on arbitrary markup (lxml raises on empty or
    odd documents), and a failure must only make this page fall back.
    """
    assert stoplist is not None
    try:
        paragraphs = justext_paragraphs(cleaned_html, stoplist)
    except Exception:  # noqa: BLE001 - any failure means "fall back" for this page
        return ""
    return _fold(" ".join(p.text for p in paragraphs if not p.is_boilerplate))


_FAST_JUSTEXT: Any = None  # (ParagraphMaker subclass, core module), False, or None (not tried)


def _fast_justext() -> Any:
    """jusText's own pipeline with a faster paragraph text; ``False`` if unavailable.

    ``justext.justext`` spends about 60 % of its time re-normalizing each
    paragraph's whitespace (a regex with a Python callback per space) every
    time the classifier reads ``paragraph.text``. The subclass below computes
    the same text once, with the same rule (a whitespace run holding a line
    break becomes ``"\n"``, any other run one space), so the classification
    is identical (tested against ``justext.justext``) and about 2.5x faster.
    If jusText's internals ever change, the plain ``justext.justext`` is used.
    """
    global _FAST_JUSTEXT
    if _FAST_JUSTEXT is not None:
        return _FAST_JUSTEXT
    try:
        from justext import core
        from justext.paragraph import Paragraph

        newline_run = re.compile(r"\s*[\r\n]\s*")
        space_run = re.compile(r"[^\S\r\n]+")

        def normalize(text: str) -> str:
            return space_run.sub(" ", newline_run.sub("\n", text))

        class FastParagraph(Paragraph):
            _cached: str | None = None

            @property
            def text(self) -> str:
                text = self._cached
                if text is None:
                    text = self._cached = normalize("".join(self.text_nodes).strip())
                return text

            def append_text(self, text: str) -> str:
                text = normalize(text)
                self.text_nodes.append(text)
                self._cached = None
                return text

        class FastParagraphMaker(core.ParagraphMaker):
            def _start_new_pragraph(self) -> None:
                super()._start_new_pragraph()
                if type(self.paragraph) is Paragraph:
                    self.paragraph.__class__ = FastParagraph

        for attr in (
            "html_to_dom",
            "preprocessor",
            "classify_paragraphs",
            "revise_paragraph_classification",
            "DEFAULT_ENCODING",
            "DEFAULT_ENC_ERRORS",
        ):
            getattr(core, attr)
        _FAST_JUSTEXT = (FastParagraphMaker, core)
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - other jusText versions
        _FAST_JUSTEXT = False
    return _FAST_JUSTEXT


def justext_paragraphs(html: str, stoplist: frozenset[str]) -> list[Any]:
    """``justext.justext(html, stoplist)`` with its default settings (faster, same result)."""
    fast = _fast_justext()
    if not fast:  # pragma: no cover - other jusText versions
        import justext

        return list(justext.justext(html, stoplist))
    maker, core = fast
    dom = core.html_to_dom(html, core.DEFAULT_ENCODING, None, core.DEFAULT_ENC_ERRORS)
    dom = core.preprocessor(dom)
    paragraphs = maker.make_paragraphs(dom)
    core.classify_paragraphs(paragraphs, stoplist)
    revise_paragraph_classification(paragraphs, core.MAX_HEADING_DISTANCE_DEFAULT)
    return list(paragraphs)


def _nearest(classes: Sequence[str], wanted: frozenset[str], reverse: bool) -> list[str]:
    """For every position, the nearest class in ``wanted`` strictly before it (after it when
    ``reverse``), or ``"bad"`` (jusText's answer at the edges)."""
    out = ["bad"] * len(classes)
    seen = "bad"
    order = range(len(classes) - 1, -1, -1) if reverse else range(len(classes))
    for i in order:
        out[i] = seen
        if classes[i] in wanted:
            seen = classes[i]
    return out


_GOOD_BAD = frozenset({"good", "bad"})
_GOOD_BAD_NEAR = frozenset({"good", "bad", "neargood"})


def _good_after(paragraphs: Sequence[Any], i: int, max_distance: int) -> bool:
    """Whether a "good" paragraph follows paragraph ``i`` within ``max_distance`` characters (jusText's walk)."""
    distance = 0
    for j in range(i + 1, len(paragraphs)):  # no slice: a walk stops after max_distance characters
        if distance > max_distance:
            return False
        if paragraphs[j].class_type == "good":
            return True
        distance += len(paragraphs[j].text)
    return False


def revise_paragraph_classification(paragraphs: Sequence[Any], max_heading_distance: int = 200) -> None:
    """``justext.core.revise_paragraph_classification`` in linear time (same result; tested).

    jusText looks for each short paragraph's nearest good or bad neighbours by walking the
    list, so a page of many short paragraphs took time quadratic in their number (minutes
    for a few MB of ``<p>x</p>``); here the neighbours come from one pass each way.
    """
    # good headings (a walk bounded by max_heading_distance characters: as jusText does)
    for i, paragraph in enumerate(paragraphs):
        paragraph.class_type = paragraph.cf_class
        if paragraph.heading and paragraph.class_type == "short" and _good_after(paragraphs, i, max_heading_distance):
            paragraph.class_type = "neargood"

    # classify short: the neighbours are those of the classes before this step
    classes = [p.class_type for p in paragraphs]
    if "short" in classes:
        prev_gb, next_gb = _nearest(classes, _GOOD_BAD, False), _nearest(classes, _GOOD_BAD, True)
        prev_gbn, next_gbn = _nearest(classes, _GOOD_BAD_NEAR, False), _nearest(classes, _GOOD_BAD_NEAR, True)
        for i, c in enumerate(classes):
            if c != "short":
                continue
            prev_n, next_n = prev_gb[i], next_gb[i]
            if prev_n == "good" and next_n == "good":
                new = "good"
            elif prev_n == "bad" and next_n == "bad":
                new = "bad"
            elif (prev_n == "bad" and prev_gbn[i] == "neargood") or (next_n == "bad" and next_gbn[i] == "neargood"):
                new = "good"
            else:
                new = "bad"
            paragraphs[i].class_type = new

    # revise neargood: in order, so an earlier one's new class is a later one's neighbour
    classes = [p.class_type for p in paragraphs]
    if "neargood" in classes:
        next_gb = _nearest(classes, _GOOD_BAD, True)  # later neargood ones are not changed yet
        prev = "bad"
        for i, paragraph in enumerate(paragraphs):
            if paragraph.class_type == "neargood":
                paragraph.class_type = "bad" if (prev, next_gb[i]) == ("bad", "bad") else "good"
            if paragraph.class_type in _GOOD_BAD:
                prev = paragraph.class_type

    # more good headings
    for i, paragraph in enumerate(paragraphs):
        if (
            paragraph.heading
            and paragraph.class_type == "bad"
            and paragraph.cf_class != "bad"
            and _good_after(paragraphs, i, max_heading_distance)
        ):
            paragraph.class_type = "good"
