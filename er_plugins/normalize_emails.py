"""The ``email`` normalizer (see :mod:`er_plugins.normalizers` for the family)."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from er_framework.components import Normalizer, Params
from er_plugins.normalize_text import SEP, PerValue, Value, by_parts

__all__ = ["Email", "EmailParams"]


# ---------------------------------------------------------------------------
# emails

_GMAIL = frozenset({"gmail.com", "googlemail.com"})


def _make_email(gmail_dots: bool = False) -> PerValue:
    def email(s: str) -> Value:
        s = s.strip().casefold()
        if s.startswith("mailto:"):
            s = s[7:].strip()
        if s.count("@") != 1 or len(s.split()) != 1:
            return None
        local, domain = s.split("@")
        domain = domain.rstrip(".")
        if not local or not domain:
            return None
        if gmail_dots and domain in _GMAIL:
            local = local.split("+", 1)[0].replace(".", "")
            domain = "gmail.com"
            if not local:
                return None
        return f"{local}@{domain}"

    return email


# ---------------------------------------------------------------------------
# batches (see er_plugins.normalize_text)

#: emails holding whitespace or a colon ("mailto:") take the per-value path
_EMAIL_SLOW = re.compile(r"[\s:]")


def _emails(values: list[str], one: PerValue, gmail_dots: bool) -> list[Value]:
    """``[one(v) for v in values]`` for the ``email`` function ``one``: ASCII values without whitespace or
    ``:`` lowercased in one pass; one that is ``local@domain`` (one ``@``, both parts non-empty, no final
    dot) is its own key, any other goes through ``one``."""
    if gmail_dots:
        return list(map(one, values))

    def fast(_: list[str], big: str) -> list[Value]:
        low = big.lower().split(SEP)  # casefold() of ASCII text
        return [e if e.count("@") == 1 and e[0] != "@" and e[-1] != "@" and e[-1] != "." else one(e) for e in low]

    return by_parts(values, fast, one, _EMAIL_SLOW)


# ---------------------------------------------------------------------------
# the component


class EmailParams(Params):
    gmail_dots: bool = Field(default=False, strict=True, description="gmail.com/googlemail.com: drop dots and +tags of the local part")


class Email(Normalizer[EmailParams]):
    name = "email"
    summary = "stripped, casefolded; exactly one @ with non-empty parts, else missing"
    Params = EmailParams

    batch_first: ClassVar[bool] = True

    def per_value(self) -> PerValue:
        return _make_email(gmail_dots=self.params.gmail_dots)

    def normalize(self, values: list[str]) -> list[str | None]:
        return _emails(values, self.per_value(), self.params.gmail_dots)
