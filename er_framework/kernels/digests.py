"""Stable 64-bit digests of whole texts: the keys of the exact-duplicate stage.

Definition (the project's contract; identical in every process, on every
machine, in every Python version — Python's salted ``hash()`` is never used):

* ``text_digest(s)`` is the 8-byte BLAKE2b digest (``hashlib.blake2b(...,
  digest_size=8)``, no key, no salt, no person) of the UTF-8 bytes of ``s``,
  read as a little-endian unsigned 64-bit integer. Lone surrogates (which a
  JSON ``"\\ud800"`` escape can produce) are encoded as their three UTF-8-style
  bytes (``errors="surrogatepass"``), so every Python string has a digest.
* ``normalize_text(s)`` is NFKC, then case folding, then every run of
  whitespace (``str.isspace``) replaced by one space, leading and trailing
  whitespace removed: ``" ".join(unicodedata.normalize("NFKC", s).casefold().split())``.
  Two records are exact duplicates when the digests of their (normalized)
  texts are equal; an empty (normalized) text is nobody's duplicate.

BLAKE2b hashes ~1 GB/s per core and releases the GIL on large buffers;
:func:`normalized_digests` does the whitespace folding on arrays of code
points instead of one ``str.split`` per text (which makes a Python string
per word), so normalizing and digesting a corpus costs about one pass over
its bytes. Both have a per-text reference (:func:`text_digest_reference`,
:func:`normalize_text`) that the tests compare against.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "SPACE_MAX",
    "folded_texts",
    "normalize_text",
    "normalized_digests",
    "normalized_digests_reference",
    "space_table",
    "text_digest_reference",
    "text_digests",
]

UInt64Array = npt.NDArray[np.uint64]
Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
IntpArray = npt.NDArray[np.intp]

#: the largest code point that ``str.isspace`` accepts (U+3000 IDEOGRAPHIC SPACE; a test checks every code point)
SPACE_MAX = 0x3000
#: the digest's size in bytes
DIGEST_BYTES = 8

_SPACE_TABLE: BoolArray | None = None


def space_table() -> BoolArray:
    """``table[c]``: whether ``chr(c).isspace()``, for ``c`` in ``0 .. SPACE_MAX + 1`` (the last entry False:
    code points above :data:`SPACE_MAX` are clipped onto it). Built on first use (~12k ``isspace`` calls)."""
    global _SPACE_TABLE
    if _SPACE_TABLE is None:
        _SPACE_TABLE = np.array([chr(c).isspace() for c in range(SPACE_MAX + 2)], dtype=bool)
    return _SPACE_TABLE


def normalize_text(text: str) -> str:
    """NFKC, case-folded, whitespace runs folded to one space, stripped (the per-text reference)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def text_digest_reference(text: str) -> int:
    """``text_digest`` of one string (see the module docstring): the test oracle."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()
    return int.from_bytes(digest, "little")


def _digest_spans(buf: bytes, lengths: Int64Array) -> UInt64Array:
    """The digest of every consecutive span of ``buf`` (``lengths`` bytes each), as uint64."""
    n = len(lengths)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    ends = np.cumsum(lengths)
    view = memoryview(buf)
    blake = hashlib.blake2b
    joined = b"".join([blake(view[a:b], digest_size=DIGEST_BYTES).digest() for a, b in zip((ends - lengths).tolist(), ends.tolist())])
    return np.frombuffer(joined, dtype="<u8").astype(np.uint64)


def text_digests(texts: Sequence[str]) -> UInt64Array:
    """``text_digest(s)`` of every text: BLAKE2b-64 of its UTF-8 bytes, little-endian (module docstring)."""
    blake = hashlib.blake2b
    joined = b"".join([blake(t.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest() for t in texts])
    return np.frombuffer(joined, dtype="<u8").astype(np.uint64)


def _is_space(cps: npt.NDArray[np.unsignedinteger]) -> BoolArray:
    """``chr(c).isspace()`` of every code point (uint8: ASCII; uint32: any)."""
    ws: BoolArray
    if cps.dtype == np.uint8:  # ASCII whitespace: 9-13, 28-31, 32 (str.isspace, not bytes.isspace)
        ws = (cps == 32) | ((cps - np.uint8(9)) < 5) | ((cps - np.uint8(28)) < 4)
    else:
        ws = space_table()[np.minimum(cps, SPACE_MAX + 1)]
    return ws


def _fold_whitespace(
    cps: npt.NDArray[np.unsignedinteger], lengths: Int64Array, texts: Sequence[str]
) -> tuple[npt.NDArray[np.unsignedinteger], Int64Array]:
    """``" ".join(s.split())`` of every text, on code points: ``(folded code points, folded lengths)``.

    ``cps`` holds the code points of ``texts`` one after the other
    (``lengths`` each; uint8 for ASCII, uint32 otherwise). A whitespace
    character is kept only when it starts a run that is neither at the start
    nor at the end of its text, and becomes one space (U+0020). Boolean masks
    of the length of the batch and index arrays of the characters that change
    (usually few): no per-word Python object. A text that ends with
    whitespace is measured by ``str.rstrip`` (one C call for that text).
    """
    n = len(lengths)
    if len(cps) == 0:
        return cps, np.zeros(n, dtype=np.int64)
    ws = _is_space(cps)
    ends = np.cumsum(lengths)
    nonempty = lengths > 0
    drop = np.empty(len(cps), dtype=bool)  # a space after a space, or at the start of its text
    drop[0] = True
    drop[1:] = ws[:-1]
    drop[(ends - lengths)[nonempty]] = True
    drop &= ws
    # a run that reaches the end of its text: its first character goes too
    tail = np.flatnonzero(nonempty)
    tail = tail[ws[ends[tail] - 1]]
    if len(tail):
        run = np.fromiter((len(t) - len(t.rstrip()) for t in (texts[i] for i in tail.tolist())), dtype=np.int64, count=len(tail))
        drop[ends[tail] - run] = True
    dropped = np.flatnonzero(drop)
    out_len = lengths - np.bincount(np.searchsorted(ends, dropped, side="right"), minlength=n)
    other = np.flatnonzero(ws & ~drop & (cps != 32))  # kept whitespace that is not U+0020: becomes one
    del ws
    if len(dropped):
        out = np.compress(~drop, cps)  # cps[~drop], ~4x faster
        other -= np.searchsorted(dropped, other)
    else:
        out = cps.copy() if len(other) else cps  # unchanged: the (read-only) input itself
    if len(other):
        out[other] = 32
    return out, out_len


def _folded(texts: Sequence[str], normalize: bool, ascii_only: bool) -> tuple[npt.NDArray[np.unsignedinteger], Int64Array]:
    """The texts' code points after the normalization (``normalize``: NFKC and case folding, else none)
    and whitespace folding, one after the other, and each text's folded length.

    ``ascii_only`` (every text ASCII): NFKC is the identity on ASCII and
    case folding is ``str.lower``, done once on the joined texts (it keeps
    every length); the code points are bytes. Otherwise NFKC and case
    folding run per text (they may change its length: C calls) and the code
    points are UTF-32.
    """
    if ascii_only:
        joined = "".join(texts)
        cps = np.frombuffer((joined.lower() if normalize else joined).encode("ascii"), dtype=np.uint8)
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        return _fold_whitespace(cps, lengths, texts)
    parts = [unicodedata.normalize("NFKC", t).casefold() for t in texts] if normalize else list(texts)
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    raw = "".join(parts).encode("utf-32-le", "surrogatepass")
    return _fold_whitespace(np.frombuffer(raw, dtype=np.uint32), lengths, parts)


def _folded_digests(texts: Sequence[str], ascii_only: bool) -> tuple[UInt64Array, Int64Array]:
    """:func:`normalized_digests` of a group of texts, and their normalized lengths."""
    folded, out_len = _folded(texts, True, ascii_only)
    if folded.dtype == np.uint8:
        return _digest_spans(folded.tobytes(), out_len), out_len
    # UTF-8 bytes of each text: one per code point, and 1-3 more for those above U+007F (a surrogate
    # passes as 3 bytes, as str.encode(..., "surrogatepass") writes it)
    wide = np.flatnonzero(folded >= 0x80)
    more = 1 + (folded[wide] >= 0x800).astype(np.int64) + (folded[wide] >= 0x10000)
    text_of = np.searchsorted(np.cumsum(out_len), wide, side="right")
    byte_len = out_len + np.bincount(text_of, weights=more, minlength=len(out_len)).astype(np.int64)
    utf8 = folded.tobytes().decode("utf-32-le", "surrogatepass").encode("utf-8", "surrogatepass")
    return _digest_spans(utf8, byte_len), out_len


R = TypeVar("R")


def _by_ascii(texts: Sequence[str], kernel: Callable[[Sequence[str], bool], R]) -> list[tuple[IntpArray | None, R]]:
    """``kernel(group, ascii_only)`` on the ASCII texts and on the others: ``[(rows, result)]``, rows None
    when the group is every text."""
    n = len(texts)
    ascii_ = np.fromiter((t.isascii() for t in texts), dtype=bool, count=n)
    out: list[tuple[IntpArray | None, R]] = []
    for flag, rows in ((True, np.flatnonzero(ascii_)), (False, np.flatnonzero(~ascii_))):
        if len(rows) == n:
            out.append((None, kernel(texts, flag)))
        elif len(rows):
            out.append((rows, kernel([texts[i] for i in rows.tolist()], flag)))
    return out


def normalized_digests(texts: Sequence[str]) -> tuple[UInt64Array, BoolArray]:
    """``(digests, nonempty)``: ``text_digest(normalize_text(s))`` of every text, and whether
    ``normalize_text(s)`` is non-empty — equal to :func:`normalized_digests_reference`.

    The ASCII texts of the batch are lower-cased in one call and folded as
    bytes; the others are normalized per text (NFKC, case folding: C
    calls) and folded as UTF-32 code points. Memory: a few bytes per
    character of the batch (callers pass a chunk of a corpus at a time).
    """
    n = len(texts)
    digests = np.zeros(n, dtype=np.uint64)
    out_len = np.zeros(n, dtype=np.int64)
    for rows, (d, length) in _by_ascii(texts, _folded_digests):
        if rows is None:
            digests, out_len = d, length
        else:
            digests[rows], out_len[rows] = d, length
    return digests, out_len > 0


def _folded_strings(texts: Sequence[str], normalize: bool, ascii_only: bool) -> list[str]:
    folded, out_len = _folded(texts, normalize, ascii_only)
    whole = folded.tobytes().decode("ascii" if folded.dtype == np.uint8 else "utf-32-le", "surrogatepass")
    ends = np.cumsum(out_len)
    return [whole[a:b] for a, b in zip((ends - out_len).tolist(), ends.tolist())]


def folded_texts(texts: Sequence[str], normalize: bool = False) -> list[str]:
    """``[" ".join(s.split()) for s in texts]`` (``normalize``: ``[normalize_text(s) for s in texts]``),
    with the whitespace folded on arrays of code points instead of a Python string per word: the
    preprocessing of shingles and exact keys at a fraction of the cost (the tests compare both)."""
    out: list[str] = [""] * len(texts)
    for rows, strings in _by_ascii(texts, lambda group, flag: _folded_strings(group, normalize, flag)):
        if rows is None:
            return strings
        for i, t in zip(rows.tolist(), strings):
            out[i] = t
    return out


def normalized_digests_reference(texts: Sequence[str]) -> tuple[list[int], list[bool]]:
    """Per-text :func:`normalized_digests` (test oracle)."""
    normalized = [normalize_text(t) for t in texts]
    return [text_digest_reference(t) for t in normalized], [len(t) > 0 for t in normalized]
