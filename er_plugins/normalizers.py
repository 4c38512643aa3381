"""Built-in plugin: the field normalizers (``normalize:`` in a job).

Registered through ``er_register_normalizers`` under the entry-point group
``er_framework``, exactly as a third-party normalizer; the chains, the
missing values and the distinct-value cache are the framework's
(:mod:`er_framework.normalize`). Each normalizer is a function of one value
(:meth:`~er_framework.components.Normalizer.per_value`), so a chain of them
runs as one function per distinct value.

The normalizers are in :mod:`er_plugins.normalize_text` (``text``, ``digits``,
``lower``, ``strip``, ``split`` and the batch machinery), :mod:`er_plugins.normalize_names`,
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
    Digits only (extension, formatting, Unicode digits and numbers written
    as floats, ``5551234567.0``, handled), the
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
    (a time part is ignored), ``YYYYMMDD`` (also written as a float:
    ``19151111.0``), ``DD/MM/YYYY`` or
    ``MM/DD/YYYY`` (option ``dayfirst``; when the preferred order gives no
    valid date the other one is tried, so 25/12/1980 is read either way),
    and dates with English month names (``March 5, 1980``, ``5 Mar 1980``,
    ``1980-Mar-05``, ``Wednesday, 5th of March 1980``). Two-digit years only
    with option ``yy_pivot``.
``split``
    Text -> a list: ``"H04L; G06F"`` -> ``["H04L", "G06F"]`` (a JSON list
    text; option ``delimiter``, default ``;``; elements stripped, empty ones
    dropped, each once). A list already (a Parquet list column) keeps its
    elements. Every step after it, like every step on a list column, takes
    the elements one by one (``coinventors: [split, name]``).
``digits`` / ``lower`` / ``strip``
    Digits only / casefold only / strip only. ``digits`` reads a number
    written as a float (see below): ``1999.0`` -> ``1999``, and ``12.5`` ->
    missing.

Numbers written as floats
-------------------------

Numbers often arrive as floats: pandas reads a column of years with an
empty cell as ``1999.0``, a ``YYYYMMDD`` column as ``19151111.0``, a
spreadsheet writes phone numbers as ``5551234567.0`` or ``5.551234567E+09``.
A *float literal* is a whole value made of an optional sign, digits with a
decimal point (``1999.0``, ``1999.00``, ``.5``) and an optional exponent
(``1.9151111e7``), or digits with a signed exponent (``1e+16``; ``3E5`` is
text, not a number); surrounding whitespace is allowed
(:func:`~er_plugins.normalize_text.float_integer`, read exactly as a decimal).

* ``digits``, ``date``, ``phone`` and ``text`` read a float literal whose
  value is a whole number as that integer: ``digits`` of ``1999.0`` is
  ``1999`` (not ``19990``), ``date`` of ``19151111.0`` or ``1.9151111e7`` is
  ``1915-11-11``, ``phone`` of ``5.551234567e9`` is ``5551234567``, ``text``
  of ``1999.0`` is ``1999`` (not ``1999 0``). Python floats given as values
  arrive as their text (``str(1999.0)``), so the same.
* A float literal with a fraction is a measurement, not an identifier:
  ``digits`` of ``12.5`` is missing (counted as *unparsed*, below), so is
  ``date`` of ``19151111.5``. ``phone`` keeps its digits as before
  (``555.1234`` -> ``5551234``: a local number written with a dot). Text
  that is not one float literal keeps the plain rules: ``digits`` of
  ``555.123.4567`` is ``5551234567``, of ``$12.50`` is ``1250``; so a bare
  ``555.1234`` under ``digits`` is missing: use ``phone`` for phones.
* Tables given as DataFrames or Arrow tables, and Parquet files, go further:
  a float column whose present values are all whole numbers is read as
  integers (``"1999"``), see :mod:`er_framework.io.frames`.

Unparsed values
---------------

A value is *unparsed* when it was present (not ``None``/NaN, not blank, not
a placeholder such as ``N/A`` or ``unknown``: those are missing, and counted
as such) and the field's chain turned it into missing: a ``date`` that does
not parse (``31/02/1999``, ``hello``), an ``email`` without exactly one
``@`` (``foo``), ``digits`` of a value without digits (``no digits``)
or of a number with a fraction (``12.5``), a ``phone`` with
too few digits or one repeated digit, a ``name`` made only of titles. The
normalize stage counts them per field (report.json ``normalize``:
``unparseable``, ``unparseable_share`` of the present values, up to five
``unparseable_examples``); ``er run`` prints a warning line and report.html
shows it for a field above 1%
(:data:`~er_framework.normalize.UNPARSED_WARN_SHARE`), and the job setting
``normalize_strict: true`` makes any of them an error (exit 2, before any
output is written).

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
from er_plugins.normalize_text import Digits, Lower, Split, Strip, Text

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
    Split,
)


@hookimpl
def er_register_normalizers() -> list[type[Normalizer]]:
    return list(BUILTIN_NORMALIZERS)
