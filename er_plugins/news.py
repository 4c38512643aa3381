"""Built-in plugin: near-duplicate news articles (MMDS §3.2.4, SEEDS §7).

The same wire story appears on many sites wrapped in different logos,
navigation and ads. Article prose is full of stop words and ad copy is not,
so shingles that start at a stop word ("a stop word followed by the next two
words") see the article through the page chrome.

Stop-word lists come from jusText (``justext.get_stoplist``: 100 languages,
maintained with the boilerplate-removal tool of the same name), or from the
YAML (``stop_words: [...]``).
"""

from __future__ import annotations

import re
from functools import cache

from pydantic import Field, model_validator

from er_framework import hookimpl
from er_framework.components import Context, Shingler
from er_framework.data import Records, TokenSets
from er_framework.errors import choices_text, did_you_mean
from er_framework.io.html import boilerplate_languages
from er_framework.kernels import stopword_shingles
from er_plugins.documents import WordPatternParams, shingle_texts


@cache
def available_languages() -> tuple[str, ...]:
    """Languages with a jusText stop list (lower-case names: 'english', 'spanish', …), listed without
    importing justext (``er validate`` of a news job stays light)."""
    return tuple(sorted(lang.lower() for lang in boilerplate_languages()))


@cache
def stop_list(language: str, pattern: str = r"\w+") -> tuple[str, ...]:
    """The jusText stop list of ``language``, case-folded, reduced to entries that are one word of ``pattern``."""
    import justext

    names = {lang.lower(): lang for lang in justext.get_stoplists()}
    words = justext.get_stoplist(names[language.lower()])
    rx = re.compile(pattern)
    return tuple(sorted({w.casefold() for w in words if rx.fullmatch(w.casefold())}))


class StopwordParams(WordPatternParams):
    n: int = Field(default=2, ge=0, le=16, description="words after the stop word (the seed uses 2)")
    language: str = Field(default="english", description="jusText stop list to use ('english', 'spanish', …)")
    stop_words: list[str] | None = Field(default=None, description="your own stop words (overrides language)")

    @model_validator(mode="after")
    def _stop_words_given(self) -> StopwordParams:
        if self.stop_words is not None and not [w for w in self.stop_words if w.strip()]:
            raise ValueError("stop_words is empty: give some words, or remove it to use 'language'")
        return self


class StopwordShingler(Shingler[StopwordParams]):
    """A stop word followed by the next ``n`` words, as stable 64-bit tokens.

    Text preprocessing is that of ``char``/``word`` (NFKC, case folding,
    whitespace); stop words are case-folded too unless ``lowercase: false``.
    A shingle's token equals the word (n+1)-gram token of the same words.
    """

    name = "stopword"
    summary = "stop word + next n words (news articles through ads and page chrome)"
    Params = StopwordParams

    @classmethod
    def check(cls, params: StopwordParams, context: Context) -> list[str]:
        if params.stop_words is None and params.language.lower() not in available_languages():
            langs = available_languages()
            return [
                f"no stop list for language {params.language!r}; fix: {did_you_mean(params.language.lower(), langs)}"
                f"available: {choices_text(langs)}, or give stop_words: [...]"
            ]
        return []

    def stop_words(self) -> list[str]:
        p = self.params
        if p.stop_words is not None:
            words = [w.strip() for w in p.stop_words if w.strip()]
        else:
            words = list(stop_list(p.language, p.pattern))
        return sorted({w.casefold() for w in words}) if p.lowercase else sorted(set(words))

    def shingle(self, records: Records) -> TokenSets:
        p = self.params
        stops = self.stop_words()
        return shingle_texts(records, p, lambda t: stopword_shingles(t, stops, p.n, pattern=p.pattern), self.context.workers)

    def describe(self) -> dict[str, object]:
        out = super().describe()
        out["stop_words_count"] = len(self.stop_words())
        return out


@hookimpl
def er_register_shinglers() -> list[type[Shingler]]:
    return [StopwordShingler]
