"""The arrays that flow between pipeline stages.

Every stage works on whole batches; these containers fix the dtypes so that a
plugin written by someone else plugs in without guessing:

* :class:`Records`   – ids, source index and field columns of every input record
* :class:`TokenSets` – one set of 64-bit tokens per record, as CSR arrays
* :class:`Signatures` – an ``(n_records, K)`` matrix, or packed bits
* :class:`Pairs`     – candidate or verified pairs of record indices, ``left < right``
* :class:`LabelledPairs` – pairs a person labelled match / non-match (training data of a verifier)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.kernels.csr import TokenSets
from er_framework.kernels.groups import sort_unique, unpack_pairs

__all__ = ["Records", "TokenSets", "Signatures", "Pairs", "Batch", "LabelledPairs", "pair_population"]

Int64Array = npt.NDArray[np.int64]


@dataclass
class Records:
    """Input records of one job, all sources concatenated.

    ``ids[i]`` is the record's id (a string) within source ``source[i]``;
    ``source_names[source[i]]`` names that source. ``fields[name][i]`` is the
    value of column ``name`` (a ``str`` or ``None`` when missing).

    A column is a list, or a sequence that reads its values on demand (a large
    JSON Lines source is read *file-backed*:
    :class:`~er_framework.io.filetext.FileTexts`, whose texts stay in the
    file). Such a column has ``take(rows)`` (the column of those rows, nothing
    read) and ``text_sizes()`` (characters of each value); ``col[i]``,
    ``col[a:b]`` and iteration read from the file. Records work on both
    alike; read a slice at a time (``text(rows=…)``) rather than every value.
    """

    ids: list[str]
    source: npt.NDArray[np.int32]
    source_names: list[str]
    fields: dict[str, Sequence[str | None]]

    def __repr__(self) -> str:
        """One line: how many records per source and the fields' names (never the values)."""
        counts = np.bincount(self.source, minlength=len(self.source_names)) if len(self.source) else np.zeros(len(self.source_names), int)
        per = ", ".join(f"{name} {int(c):,}" for name, c in zip(self.source_names[:10], counts[:10]))
        names = list(self.fields)
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        return f"<Records: {len(self.ids):,} ({per}); fields {shown or '(none)'}>"

    def __post_init__(self) -> None:
        self.source = np.asarray(self.source, dtype=np.int32)
        n = len(self.ids)
        if self.source.shape != (n,):
            raise ValueError(f"source has shape {self.source.shape}, expected ({n},)")
        for name, col in self.fields.items():
            if len(col) != n:
                raise ValueError(f"field {name!r} has {len(col)} values, expected {n}")

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_columns(
        cls,
        ids: Sequence[str],
        fields: dict[str, Sequence[str | None]],
        source_name: str = "records",
    ) -> Records:
        """Records of a single source, from plain Python columns."""
        return cls(
            ids=[str(i) for i in ids],
            source=np.zeros(len(ids), dtype=np.int32),
            source_names=[source_name],
            fields={k: list(v) for k, v in fields.items()},
        )

    @classmethod
    def concat(cls, parts: Sequence[Records]) -> Records:
        """Concatenate records of several sources (source names must differ)."""
        names: list[str] = []
        ids: list[str] = []
        src: list[npt.NDArray[np.int32]] = []
        keys: list[str] = []
        for p in parts:
            for k in p.fields:
                if k not in keys:
                    keys.append(k)
        if len(parts) == 1 and any(not isinstance(c, list) for c in parts[0].fields.values()):
            p = parts[0]  # a file-backed column stays as it is (extending a list would read every value)
            return cls(
                ids=list(p.ids),
                source=p.source.copy(),
                source_names=list(p.source_names),
                fields={k: (v if not isinstance(v, list) else list(v)) for k, v in p.fields.items()},
            )
        fields: dict[str, list[str | None]] = {k: [] for k in keys}
        for p in parts:
            offset = len(names)
            names.extend(p.source_names)
            ids.extend(p.ids)
            src.append(p.source + offset)
            for k in keys:
                fields[k].extend(p.fields.get(k, [None] * len(p)))
        source = np.concatenate(src) if src else np.zeros(0, dtype=np.int32)
        return cls(ids=ids, source=source, source_names=names, fields={k: v for k, v in fields.items()})

    @classmethod
    def stack(cls, parts: Sequence[Records]) -> Records:
        """Records of the *same* sources and fields, one part after the other (source numbers kept)."""
        return cls(
            ids=[i for p in parts for i in p.ids],
            source=np.concatenate([p.source for p in parts]),
            source_names=list(parts[0].source_names),
            fields={f: [v for p in parts for v in p.fields[f]] for f in parts[0].fields},
        )

    def with_fields(self, names: Sequence[str]) -> Records:
        """These records with exactly the fields ``names``, in that order: a field they lack is missing
        (``None``) in every record, as :meth:`concat` gives it to a source without it."""
        n = len(self.ids)
        fields = {k: (self.fields[k] if k in self.fields else [None] * n) for k in names}
        return Records(ids=self.ids, source=self.source, source_names=self.source_names, fields=fields)

    def take(self, index: npt.ArrayLike) -> Records:
        """The records at ``index`` (in that order)."""
        idx = np.asarray(index, dtype=np.int64)
        return Records(
            ids=[self.ids[i] for i in idx],
            source=self.source[idx],
            source_names=list(self.source_names),
            fields={k: _take_column(v, idx) for k, v in self.fields.items()},
        )

    def text(self, columns: Sequence[str] | None = None, sep: str = " ", rows: slice | None = None) -> list[str]:
        """One string per record: the given columns (default: all) joined by ``sep``.

        Missing values contribute nothing. ``rows``: only the records of that
        slice (a chunk of the corpus; nothing else is joined).
        """
        cols = list(columns) if columns is not None else list(self.fields)
        sl = rows if rows is not None else slice(None)
        if len(cols) == 1:
            return [v if v is not None else "" for v in self.fields[cols[0]][sl]]
        if not cols:
            return [""] * len(range(*sl.indices(len(self))))
        values = [self.fields[c][sl] for c in cols]
        return [sep.join(x for x in row if x) for row in zip(*values)]  # not None, not ""

    def prefetch(self, rows: npt.ArrayLike, columns: Sequence[str] | None = None) -> None:
        """Ask the file-backed columns (default: all) to bring the values of ``rows`` into the operating
        system's page cache without waiting (``FileTexts.prefetch``); nothing for columns in memory."""
        for c in list(columns) if columns is not None else list(self.fields):
            col = self.fields[c]
            hint = getattr(col, "prefetch", None) if not isinstance(col, list) else None
            if callable(hint):
                hint(rows)

    def text_sizes(self, columns: Sequence[str] | None = None) -> Int64Array:
        """Characters of each record's fields (default: all) summed, without joining them: an estimate of
        :meth:`text`'s lengths (separators not counted) for cutting a corpus into chunks."""
        cols = list(columns) if columns is not None else list(self.fields)
        sizes = np.zeros(len(self), dtype=np.int64)
        for c in cols:
            col = self.fields[c]
            known = getattr(col, "text_sizes", None) if not isinstance(col, list) else None
            if callable(known):  # a file-backed column knows its sizes without reading
                sizes += np.asarray(known(), dtype=np.int64)
            else:
                sizes += np.fromiter((len(v) if v else 0 for v in col), dtype=np.int64, count=len(self))
        return sizes


def _take_column(col: Sequence[str | None], idx: Int64Array) -> Sequence[str | None]:
    """The values of ``idx`` of a column: a list, or a file-backed column's ``take`` (nothing read)."""
    take = getattr(col, "take", None) if not isinstance(col, list) else None
    if callable(take):
        out: Sequence[str | None] = take(idx)
        return out
    return [col[i] for i in idx]


@dataclass
class Signatures:
    """Per-record signatures.

    ``values`` is ``(n_records, K)`` (uint32 or uint64) for MinHash-like
    builders; ``kind`` tells blockers what they hold (``"minhash"``,
    ``"bits"`` for packed bit vectors in uint64 words, …). ``empty`` marks
    records whose token set was empty: their signature carries no information
    and blockers must not bucket them together.
    """

    values: np.ndarray
    kind: str = "minhash"
    empty: npt.NDArray[np.bool_] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.values.ndim != 2:
            raise ValueError(f"signature values must be 2-D, got shape {self.values.shape}")
        if self.empty is None:
            self.empty = np.zeros(self.values.shape[0], dtype=bool)

    def __len__(self) -> int:
        return int(self.values.shape[0])

    @classmethod
    def concat(cls, parts: Sequence[Signatures]) -> Signatures:
        """Rows of several batches built by one builder (kind and meta of the first)."""
        if not parts:
            raise ValueError("no signatures to concatenate")
        return cls(
            values=np.concatenate([p.values for p in parts], axis=0),
            kind=parts[0].kind,
            empty=np.concatenate([p.empty for p in parts if p.empty is not None]),
            meta=parts[0].meta,
        )

    @property
    def num_perm(self) -> int:
        return int(self.values.shape[1])


def _packable(left: npt.NDArray[Any], right: npt.NDArray[Any]) -> bool:
    """Whether a pair set's indices are integers in [0, 2**32): one uint64 key per pair holds them."""
    if len(left) == 0:
        return left.dtype.kind in "iu" and right.dtype.kind in "iu"
    return (
        left.dtype.kind in "iu"
        and right.dtype.kind in "iu"
        and int(min(left.min(), right.min())) >= 0
        and int(max(left.max(), right.max())) < 2**32
    )


def pair_population(source: npt.ArrayLike, cross_source_only: bool) -> int:
    """How many record pairs a job could compare: ``n (n - 1) / 2`` of ``n`` records, or with
    ``cross_source_only`` (link mode) the pairs of records of different sources (``sum_{i<j} n_i n_j``)."""
    src = np.asarray(source, dtype=np.int64)
    n = len(src)
    total = n * (n - 1) // 2
    if not cross_source_only or n == 0:
        return total
    sizes = np.bincount(src).tolist()
    return int(total - sum(k * (k - 1) // 2 for k in sizes))


@dataclass
class Pairs:
    """Pairs of record indices (into the job's :class:`Records`).

    Invariants after :meth:`normalized`: ``left < right``, unique, sorted by
    ``(left, right)``. ``score`` is float64 when the pairs have been verified.
    """

    left: Int64Array
    right: Int64Array
    score: npt.NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        self.left = np.asarray(self.left, dtype=np.int64)
        self.right = np.asarray(self.right, dtype=np.int64)
        if self.left.shape != self.right.shape or self.left.ndim != 1:
            raise ValueError("left and right must be 1-D arrays of one length")
        if self.score is not None:
            self.score = np.asarray(self.score, dtype=np.float64)
            if self.score.shape != self.left.shape:
                raise ValueError("score must have one value per pair")

    def __len__(self) -> int:
        return int(self.left.shape[0])

    @classmethod
    def empty(cls, scored: bool = False) -> Pairs:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z.copy(), np.zeros(0, dtype=np.float64) if scored else None)

    def normalized(self) -> Pairs:
        """Swap so ``left < right``, drop self-pairs and duplicates, sort.

        When scores are present, the first score of each duplicate is kept.
        """
        lo = np.minimum(self.left, self.right)
        hi = np.maximum(self.left, self.right)
        keep = lo != hi
        lo, hi = lo[keep], hi[keep]
        score = self.score[keep] if self.score is not None else None
        if len(lo) == 0:
            return Pairs(lo, hi, score)
        if score is None and _packable(lo, hi):
            # each pair packed into one uint64 key (lo in the high half): one sort of 8-byte keys, much
            # faster and smaller than lexsort's two keys and permutation (the block stage's union of tens of
            # millions of pairs); same order, same result (tests compare with normalized_reference)
            key = (lo.astype(np.uint64) << np.uint64(32)) | hi.astype(np.uint64)
            del lo, hi
            return Pairs(*unpack_pairs(sort_unique(key)))
        return Pairs.normalized_reference(Pairs(lo, hi, score))

    def normalized_reference(self) -> Pairs:
        """:meth:`normalized` by ``np.lexsort`` (test oracle of the packed-key path; the path with scores)."""
        lo = np.minimum(self.left, self.right)
        hi = np.maximum(self.left, self.right)
        keep = lo != hi
        lo, hi = lo[keep], hi[keep]
        score = self.score[keep] if self.score is not None else None
        if len(lo) == 0:
            return Pairs(lo, hi, score)
        order = np.lexsort((hi, lo))
        lo, hi = lo[order], hi[order]
        first = np.ones(len(lo), dtype=bool)
        first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        if score is not None:
            score = score[order][first]
        return Pairs(lo[first], hi[first], score)

    @classmethod
    def union(cls, parts: Sequence[Pairs]) -> Pairs:
        """Union of several pair sets, normalized (scores are dropped).

        Each part is packed into uint64 keys straight into one buffer (8 bytes a pair, not the
        two concatenated int64 columns and their swapped copies: the 1M-customer block stage's
        peak), then sorted once; parts with an index outside [0, 2**32) take the lexsort path."""
        if not parts:
            return cls.empty()
        if not all(_packable(p.left, p.right) for p in parts):
            left = np.concatenate([p.left for p in parts])
            right = np.concatenate([p.right for p in parts])
            return cls(left, right).normalized()
        key = np.empty(sum(len(p) for p in parts), dtype=np.uint64)
        at = 0
        for p in parts:
            p.packed(out=key[at : at + len(p)])
            at += len(p)
        return cls.from_packed(key)

    def packed(self, out: npt.NDArray[np.uint64] | None = None) -> npt.NDArray[np.uint64] | None:
        """Each pair as one uint64 key ``min << 32 | max`` (8 bytes a pair; :meth:`from_packed` turns keys
        back into normalized pairs), written into ``out`` when given; ``None`` when an index lies outside
        [0, 2**32). Self-pairs are kept (:meth:`from_packed` drops them)."""
        if not _packable(self.left, self.right):
            return None
        key = np.empty(len(self), dtype=np.uint64) if out is None else out
        np.minimum(self.left, self.right, out=key, casting="unsafe")
        key <<= np.uint64(32)
        key |= np.maximum(self.left, self.right).astype(np.uint64)
        return key

    @classmethod
    def from_packed(cls, key: npt.NDArray[np.uint64]) -> Pairs:
        """Normalized pairs of packed keys (:meth:`packed`): self-pairs dropped, sorted, unique.
        ``key`` is given up (sorted in place)."""
        key = sort_unique(key)
        self_pair = (key >> np.uint64(32)) == (key & np.uint64(0xFFFFFFFF))
        if self_pair.any():
            key = key[~self_pair]
        return cls(*unpack_pairs(key))

    def select(self, mask: npt.NDArray[np.bool_]) -> Pairs:
        return Pairs(self.left[mask], self.right[mask], None if self.score is None else self.score[mask])

    def is_normalized(self) -> bool:
        if len(self) == 0:
            return True
        if not np.all(self.left < self.right):
            return False
        d_left = np.diff(self.left)
        d_right = np.diff(self.right)
        return bool(np.all((d_left > 0) | ((d_left == 0) & (d_right > 0))))


@dataclass
class LabelledPairs:
    """Pairs of a batch's rows that a person labelled (``training: {labels: FILE}`` of a job).

    ``pairs`` index the batch's rows (as a verifier's pairs do), ``match`` is
    true for a match and false for a non-match, one per pair. ``lam`` says
    where a trainable verifier takes the share of matches among the
    candidates from: ``"em"`` (fitted by EM on the candidates; right when the
    labelled pairs were chosen near the threshold, as ``er review`` chooses
    them) or ``"labels"`` (the labelled pairs' own share; right when they are
    a random sample of the candidates). How m and u use the labels is the
    verifier's own choice (``fellegi_sunter``: ``labels_fit``).
    """

    pairs: Pairs
    match: npt.NDArray[np.bool_]
    lam: str = "em"

    def __post_init__(self) -> None:
        self.match = np.asarray(self.match, dtype=bool)
        if self.match.shape != (len(self.pairs),):
            raise ValueError("match must have one value per pair")
        if self.lam not in ("em", "labels"):
            raise ValueError(f"lam must be 'em' or 'labels', got {self.lam!r}")


@dataclass
class Batch:
    """What a blocker or verifier sees: the records and what earlier stages made.

    The batch's rows are ``records`` (with ``tokens`` and ``signatures`` row
    for row). ``active``, when set, is the job's record index of each row:
    ``active[i]`` is the global index of row ``i``, increasing, with gaps
    where records take no part in blocking and verification (exact
    duplicates collapsed onto their representative are left out of the
    batch). A plugin works on rows only: a blocker returns pairs of indices
    into the batch (``0 .. len(batch) - 1``), never values of ``active``, and
    a verifier gets such pairs; the engine maps them to record indices. Its
    answer must not depend on ``active`` — the persistent index and the Dask
    executor build batches without it (``None``).
    ``cross_source_only`` is true in link mode: only pairs whose records come
    from different sources may be returned (``allowed`` drops the others).
    """

    records: Records
    tokens: TokenSets | None = None
    signatures: Signatures | None = None
    active: Int64Array | None = None
    cross_source_only: bool = False
    seed: int = 0
    #: recomputes the token sets of some rows when ``tokens`` was not kept
    #: (the pipeline streams the corpus: shingles -> signatures per chunk)
    token_source: Callable[[Int64Array], TokenSets] | None = None

    def __len__(self) -> int:
        return len(self.records)

    def tokens_for(self, rows: npt.ArrayLike) -> TokenSets:
        """Token sets of ``rows`` (in that order): a slice of ``tokens`` or recomputed."""
        idx = np.asarray(rows, dtype=np.int64)
        if self.tokens is not None:
            return self.tokens.take(idx)
        if self.token_source is not None:
            return self.token_source(idx)
        raise ValueError("this batch has no token sets: the job has no shingler")

    def subset(self, rows: npt.ArrayLike) -> Batch:
        """The batch restricted to ``rows`` (records, token sets and signatures), in that order."""
        idx = np.asarray(rows, dtype=np.int64)
        sig = self.signatures
        if sig is not None:
            sig = Signatures(
                values=sig.values[idx],
                kind=sig.kind,
                empty=None if sig.empty is None else sig.empty[idx],
                meta=sig.meta,
            )
        has_tokens = self.tokens is not None or self.token_source is not None
        return Batch(
            records=self.records.take(idx),
            tokens=self.tokens_for(idx) if has_tokens else None,
            signatures=sig,
            active=None if self.active is None else self.active[idx],
            cross_source_only=self.cross_source_only,
            seed=self.seed,
        )

    def allowed(self, pairs: Pairs) -> Pairs:
        """Drop pairs that the job's mode does not allow (same-source in link mode)."""
        if not self.cross_source_only or len(pairs) == 0:
            return pairs
        src = self.records.source
        return pairs.select(src[pairs.left] != src[pairs.right])
