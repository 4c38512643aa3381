"""The tags an HTML text holds, for tests that a hostile value shown in a notebook view made none."""

from __future__ import annotations

from html.parser import HTMLParser

#: a value that would make tags (and an entity) if it were not escaped
HOSTILE = '<script>alert("x")</script>"><img src=x onerror=alert(1)>&amp;'


class Tags(HTMLParser):
    """Collects the names of the start tags fed to it."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)


def tags_of(text: str) -> set[str]:
    """The names of the tags ``text`` opens."""
    parser = Tags()
    parser.feed(text)
    return parser.tags
