"""Built-in plugin: the field normalizers (``normalize:`` in a job).

Registered through ``er_register_normalizers`` under the entry-point group
``er_framework``, exactly as a third-party normalizer; the chains, the
missing values and the distinct-value cache are the framework's
(:mod:`er_framework.normalize`). Each normalizer is a function of one value
(:meth:`~er_framework.components.Normalizer.per_value`), so a chain of them
runs as one function per distinct value.

The normalizers are in :mod:`er_plugins.normalize_text` (``text``, ``digits``,
``lower``, ``strip`` and the batch machinery), :mod:`er_plugins.normalize_names`,
:mod:`er_plugins.normalize_phones`, :mod:`er_plugins.normalize_addresses`,
:mod:`er_plugins.normalize_emails` and :mod:`er_plugins.normalize_dates`; this
module registers them.

``text``
    NFKC, casefold, accents stripped (NFKD, combining marks dropped, and
    ``ø ł đ ð þ æ œ ı ħ ŧ ŀ`` folded to ASCII), apostrophes removed
    (``O'Brien`` -> ``obrien``), other punctuation and symbols (Unicode
    categories P*, S*) -> space, format characters (zero-width joiners, soft
    hyphens) removed, whitespace collapsed.
``name``
    ``text`` and then the titles and suffixes of
    :data:`~er_plugins.normalize_names.NAME_TITLES` dropped (``mr mrs ms miss
    mx dr prof rev sir jr sr ii iii iv esq phd``; option ``drop_titles``);
    option ``sort_tokens`` sorts the tokens ("smith john" == "john smith").
``nickname``
    Each token of ``text`` mapped to a canonical first name with the list of
    the ``nicknames`` package, ambiguities settled by US given-name
    frequencies (see :func:`~er_plugins.normalize_names.canonical_first_name`
    for the rule): Bob -> robert, Bill -> william, Peggy -> margaret; names
    not in the list are unchanged. Use after ``name``. Option ``tokens``: ``all`` (default) or
    ``first``. (Put ``sort_tokens`` in a ``name`` step *after* it.)
``phone``
    Digits only (extension, formatting and Unicode digits handled), the
    country code and trunk prefix of ``default_region`` removed; see
    :mod:`er_plugins.normalize_phones`.
``address``
    ``text`` and the USPS Publication 28 abbreviations: street suffixes
    (Appendix C1: street/st/str -> st, avenue/ave/av -> ave, ...), secondary
    unit designators (C2: apartment -> apt, suite -> ste, ``#`` -> apt, ...)
    and directionals (north -> n, southwest -> sw); ``p o box`` and
    ``post office box`` -> ``po box``, ``saint`` -> ``st``. Numbers kept.
``email``
    Stripped and casefolded, ``mailto:`` removed; exactly one ``@`` with
    non-empty parts and no whitespace, else missing. Option ``gmail_dots``.
``date``
    ISO ``YYYY-MM-DD`` from ``YYYY-MM-DD`` / ``YYYY/MM/DD`` / ``YYYY.MM.DD``
    (a time part is ignored), ``YYYYMMDD``, ``DD/MM/YYYY`` or
    ``MM/DD/YYYY`` (option ``dayfirst``; when the preferred order gives no
    valid date the other one is tried, so 25/12/1980 is read either way),
    and dates with English month names (``March 5, 1980``, ``5 Mar 1980``,
    ``1980-Mar-05``, ``Wednesday, 5th of March 1980``). Two-digit years only
    with option ``yy_pivot``.
``digits`` / ``lower`` / ``strip``
    Digits only / casefold only / strip only.

Speed
-----

``text``, ``address``, ``email``, ``phone`` and ``digits`` normalize a whole
batch of distinct values at once (``batch_first``): the ASCII values are
joined by NUL and each step is one C-level pass over the joined text
(``str.translate``, ``lower``, a token map, a regex search for the values
that need the per-value rules); values that are not ASCII, and those a
pattern marks (an address with ``#`` or ``p o``/``north east``, a phone
with an extension or ``(0)``, an email with whitespace or ``:``), go through
the per-value function, which stays the reference (tests compare both). On
the 2 x 1M generated customers: address 1.47M distinct values 2.3 s -> 1.7 s,
phone 1.62M 2.9 s -> 1.2 s, email 1.34M 0.6 s -> 0.4 s (noisy 2-core machine).

Text that is pure ASCII takes a ``str.translate`` fast path; the Unicode
path (NFKC, casefold, NFKD, accent stripping) runs only for non-ASCII
values. Phones use the metadata of `phonenumbers` (country codes, trunk and
international prefixes, national number patterns) in a fast path; its
parser (~10 µs per value, ~100k values/s) runs only for numbers with a
foreign country code. Measured on 1M generated customer values
(:mod:`er_framework.synth.customers`, n=500,000; 2-core machine, best of 3),
in values/s (distinct values in brackets): text 2.0M and name 1.6M (342k
distinct full names; 0.9M when every value is non-ASCII), name+nickname
1.0M, email 1.3M (692k), address 0.58M (770k), phone 0.5M (810k; the
phonenumbers parser alone does ~0.1M distinct/s), date 8M (28k ISO dates)
and 1.9M (140k, five mixed formats).
"""

from __future__ import annotations

from er_framework import hookimpl
from er_framework.components import Normalizer
from er_plugins.normalize_addresses import Address
from er_plugins.normalize_dates import Date
from er_plugins.normalize_emails import Email
from er_plugins.normalize_names import Name, Nickname
from er_plugins.normalize_phones import Phone
from er_plugins.normalize_text import Digits, Lower, Strip, Text

__all__ = ["BUILTIN_NORMALIZERS"]


BUILTIN_NORMALIZERS: tuple[type[Normalizer], ...] = (
    Text,
    Name,
    Nickname,
    Phone,
    Address,
    Email,
    Date,
    Digits,
    Lower,
    Strip,
)


@hookimpl
def er_register_normalizers() -> list[type[Normalizer]]:
    return list(BUILTIN_NORMALIZERS)
