"""Built-in plugin: near-duplicate documents (MMDS ch. 3).

Components: ``char`` and ``word`` shinglers, the classic ``minhash``
signature, the ``lsh_bands`` blocker and the exact ``jaccard`` verifier. It is
registered through the ``er_framework`` entry-point group exactly like a
third-party plugin.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from er_framework import hookimpl
from er_framework.capabilities import (
    Blocked,
    Diagnostic,
    Explainable,
    Keyed,
    Multiset,
    MultisetSigning,
    Reporting,
    SignatureScreen,
)
from er_framework.components import (
    Blocker,
    Context,
    FieldRef,
    Params,
    Shingler,
    SignatureBuilder,
    Verifier,
)
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets
from er_framework.kernels import (
    EMPTY,
    PRIME,
    band_keys,
    bucket_candidates,
    bucket_ids,
    candidate_probability,
    char_shingles,
    choose_bands,
    hash_params,
    jaccard_pairs,
    minhash_signatures,
    threshold_estimate,
    word_ngrams,
)
from er_framework.kernels.digests import folded_texts
from er_framework.kernels.groups import sorted_unique
from er_framework.kernels.jaccard import intersection_sizes
from er_framework.kernels.parallel import map_ordered, map_row_blocks, split_sizes

_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


class TextParams(Params):
    fields: list[FieldRef] | None = Field(
        default=None, description="columns joined (by a space) into the text; default: all the source's fields"
    )
    lowercase: bool = Field(default=True, description="case-fold the text")
    nfkc: bool = Field(default=True, description="Unicode NFKC normalization")
    fold_whitespace: bool = Field(default=True, description="collapse whitespace runs to one space, strip ends")
    remove_punctuation: bool = Field(default=False, description="replace punctuation by a space")
    preset: Literal["raw"] | None = Field(
        default=None,
        description="raw: the text exactly as written (lowercase, nfkc, fold_whitespace and remove_punctuation off), "
        "so that Jaccard scores the raw text",
    )

    @model_validator(mode="after")
    def _preset(self) -> TextParams:
        if self.preset == "raw":
            on = [k for k in RAW_OFF if k in self.model_fields_set and getattr(self, k)]
            if on:
                given = ", ".join(f"{k}: true" for k in on)
                raise ValueError(f"preset: raw scores the text as written; it cannot be combined with {given}")
            for k in RAW_OFF:
                object.__setattr__(self, k, False)
        return self


#: the text options ``preset: raw`` turns off
RAW_OFF = ("lowercase", "nfkc", "fold_whitespace", "remove_punctuation")


def prepare(texts: list[str], p: TextParams) -> list[str]:
    """The configured preprocessing of raw texts: NFKC, case folding, punctuation, whitespace.

    Equal to :func:`prepare_reference`; the whitespace is folded on arrays of
    code points (:func:`~er_framework.kernels.digests.folded_texts`), and the
    usual settings (NFKC, case folding, whitespace, no punctuation removal) are
    exactly the exact-duplicate key's normalization, done by the same kernel.
    """
    if p.nfkc and p.lowercase and p.fold_whitespace and not p.remove_punctuation:
        return folded_texts(texts, normalize=True)
    out = [_case_and_marks(t, p) for t in texts]
    return folded_texts(out) if p.fold_whitespace else out


def _case_and_marks(t: str, p: TextParams) -> str:
    """NFKC, case folding and punctuation of one text, as configured (not the whitespace)."""
    if p.nfkc:
        t = unicodedata.normalize("NFKC", t)
    if p.lowercase:
        t = t.casefold()
    if p.remove_punctuation:
        t = _PUNCT.sub(" ", t)
    return t


def prepare_reference(texts: list[str], p: TextParams) -> list[str]:
    """Per-text :func:`prepare` (test oracle): the whitespace folded by ``str.split``."""
    return [" ".join(t.split()) if p.fold_whitespace else t for t in (_case_and_marks(t, p) for t in texts)]


def shingle_texts(records: Records, p: TextParams, kernel: Callable[[list[str]], TokenSets], workers: int) -> TokenSets:
    """``kernel`` on the preprocessed texts of ``records``, slice by slice on ``workers`` threads.

    Each slice is preprocessed (Python, holds the GIL) and shingled (numpy,
    releases it) by one task, so one thread's preprocessing overlaps the
    other's array work.
    """
    return shingle_in_chunks(records.text(p.fields), lambda t: kernel(prepare(t, p)), workers=workers)


#: characters shingled per kernel call: bounds the kernels' temporaries (~80 bytes/char); 2^19
#: measured faster than 2^21 on two threads (the slices of both threads stay in cache)
CHUNK_CHARS = 1 << 19


def shingle_in_chunks(texts: list[str], fn: Callable[[list[str]], TokenSets], max_chars: int = CHUNK_CHARS, workers: int = 1) -> TokenSets:
    """Apply a batch shingling kernel to consecutive slices of about ``max_chars`` characters.

    Token sets are per text, so the result equals ``fn(texts)`` (the contract's
    batch-split invariance) for any slice size and any number of ``workers``
    (threads, :mod:`er_framework.kernels.parallel`), while peak memory stays bounded by
    the slices in flight.
    """
    ranges = split_sizes([len(t) + 1 for t in texts], max_chars)
    if len(ranges) <= 1:
        return fn(texts)
    return TokenSets.concat(map_ordered(lambda ab: fn(texts[ab[0] : ab[1]]), ranges, workers))


class CharParams(TextParams):
    k: int = Field(default=5, ge=1, le=256, description="shingle length in characters (4-5 short texts, 9-10 long documents)")


class CharShingler(Multiset, Shingler[CharParams]):
    """Character k-shingles (MMDS §3.2): the set of all length-k substrings.

    A text shorter than k yields one token (the whole text); an empty text
    yields an empty set. Tokens are stable 64-bit hashes (see
    :mod:`er_framework.kernels.hashing`).
    """

    name = "char"
    summary = "character k-shingles, stable 64-bit tokens"
    Params = CharParams

    def shingle(self, records: Records) -> TokenSets:
        p = self.params
        return shingle_texts(records, p, lambda t: char_shingles(t, p.k), self.context.workers)

    def shingle_multiset(self, records: Records) -> TokenSets:
        p = self.params
        return shingle_texts(records, p, lambda t: char_shingles(t, p.k, unique=False), self.context.workers)


class WordPatternParams(TextParams):
    pattern: str = Field(default=r"\w+", description="regular expression of a word (Unicode-aware)")

    @model_validator(mode="after")
    def _pattern_compiles(self) -> WordPatternParams:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"pattern {self.pattern!r} is not a valid regular expression: {exc}") from None
        return self


class WordParams(WordPatternParams):
    n: int = Field(default=2, ge=1, le=32, description="words per n-gram (1 = bag of words)")


class WordShingler(Multiset, Shingler[WordParams]):
    """Word n-grams (MMDS §3.2): sets of n consecutive words, stable 64-bit tokens."""

    name = "word"
    summary = "word n-grams, stable 64-bit tokens"
    Params = WordParams

    def shingle(self, records: Records) -> TokenSets:
        p = self.params
        return shingle_texts(records, p, lambda t: word_ngrams(t, p.n, pattern=p.pattern), self.context.workers)

    def shingle_multiset(self, records: Records) -> TokenSets:
        p = self.params
        return shingle_texts(records, p, lambda t: word_ngrams(t, p.n, pattern=p.pattern, unique=False), self.context.workers)


class MinHashParams(Params):
    num_perm: int = Field(default=128, ge=1, le=8192, description="K, the number of hash functions (signature length)")
    seed: int | None = Field(default=None, ge=0, description="seed of the hash functions (default: the job seed)")


class MinHash(MultisetSigning, SignatureBuilder[MinHashParams]):
    """Classic MinHash (MMDS §3.3): K hash functions h_i(x) = (a_i x + b_i) mod p.

    p = 4294967291 = 2**32 - 5 (prime); tokens are reduced mod p, a_i in
    [1, p-1], b_i in [0, p-1], so a_i x + b_i < 2**64 and uint64 arithmetic is
    exact. P[h(A) = h(B)] = J(A, B). Signatures are uint32, 4 bytes per entry.
    """

    name = "minhash"
    summary = "classic MinHash, K hash functions (a x + b) mod p, exact 64-bit arithmetic"
    Params = MinHashParams  # multisets: a minimum per hash function

    def build(self, tokens: TokenSets) -> Signatures:
        p = self.params
        a, b = hash_params(p.num_perm, self.seed)
        values = map_row_blocks(lambda ts: minhash_signatures(ts, a, b), tokens, self.context.workers)
        return Signatures(
            values=values,
            kind="minhash",
            empty=tokens.sizes == 0,
            meta={"num_perm": p.num_perm, "prime": PRIME, "seed": self.seed, "empty_value": int(EMPTY)},
        )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "seed": self.seed, "prime": PRIME}


#: bands of 2 rows of the diagnostics' probe banding (fewer when the signature has fewer spare values)
PROBE_BANDS = 8
#: the probe uses the signature's spare columns when they give at least this many bands of 2 rows
PROBE_MIN_BANDS = 4
#: records whose probe signature is computed per step when there are no spare columns (fewer when their
#: text is long: :data:`PROBE_CHUNK_CHARS`)
PROBE_CHUNK = 10000
#: characters of text whose records' probe signatures are computed per step
PROBE_CHUNK_CHARS = 1 << 24
#: without spare columns, the probe shingles a random pool of records of at most this many characters
PROBE_POOL_CHARS = 1 << 24
#: the diagnostics probe no record with more tokens than this (its pairs' exact Jaccard is costly)
PROBE_MAX_RECORD_TOKENS = 100_000
#: ... and shingles no record whose text has more characters than this (the built-in shinglers make
#: at most one token per character; the token count above is checked after shingling anyway)
PROBE_MAX_RECORD_CHARS = 8 * PROBE_MAX_RECORD_TOKENS
#: the tokens the diagnostics compare (|A| + |B| summed over the measured pairs; ~8 bytes each) are at most
#: this share of the corpus's characters (the job shingles every character once), within the two bounds below
PROBE_TOKEN_SHARE = 0.05
PROBE_MIN_TOKENS = 4_000_000
PROBE_MAX_TOKENS = 20_000_000
#: ... but a corpus smaller than PROBE_MIN_TOKENS / PROBE_SMALL_FACTOR characters compares at most this many
#: times its characters (the 270 shipped documents: 1.65 M tokens, ~6% of their 0.4 s job, were compared
#: under the floor alone, mostly random partners of Jaccard ~0: the largest stratum, which loses most pairs)
PROBE_SMALL_FACTOR = 2
#: tokens per batch of the diagnostics' exact Jaccard (each batch's sort takes ~24 bytes per token, per worker)
PROBE_JACCARD_BATCH = 1 << 20
#: partners of a probed record per probe band, at most
PROBE_PARTNERS = 50
#: uniformly random partners of every probed record
PROBE_RANDOM_PARTNERS = 10


def probe_partners(
    probe: npt.NDArray[np.uint64], chosen: npt.NDArray[np.int64], rng: np.random.Generator
) -> tuple[Pairs, npt.NDArray[np.int64]]:
    """The diagnostics' sampled pairs (positions in ``probe``'s rows) and how many probe bands each shares.

    Every ``chosen`` row is paired with up to :data:`PROBE_PARTNERS` rows of
    its bucket in each probe band (``probe[:, j]``) and with
    :data:`PROBE_RANDOM_PARTNERS` uniformly random rows; the pairs are
    normalized (``left < right``, no duplicates, no self-pairs).
    """
    lefts, rights = [], []
    for j in range(probe.shape[1]):  # one step per probe band
        order = np.argsort(probe[:, j], kind="stable")
        keys = probe[order, j]
        lo = np.searchsorted(keys, probe[chosen, j], side="left")
        hi = np.minimum(np.searchsorted(keys, probe[chosen, j], side="right"), lo + PROBE_PARTNERS)
        counts = hi - lo
        starts = np.repeat(lo, counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
        lefts.append(np.repeat(chosen, counts))
        rights.append(order[starts])
    lefts.append(np.repeat(chosen, PROBE_RANDOM_PARTNERS))
    rights.append(rng.integers(0, len(probe), PROBE_RANDOM_PARTNERS * len(chosen)))
    local = Pairs(np.concatenate(lefts), np.concatenate(rights)).normalized()
    # one probe band at a time: small temporaries (a gather of every pair's two rows, 2 x 8 x 8 bytes a
    # pair, was memory new to the process: 0.13 s for the 423k pairs of 20,000 documents, now ~0.02 s)
    shared = np.zeros(len(local), dtype=np.int64)
    for column in np.ascontiguousarray(probe.T):  # one step per probe band
        shared += column[local.left] == column[local.right]
    return local, shared


def round_robin_within(
    strata: npt.NDArray[np.int64], cost: npt.NDArray[np.int64], budget: int, rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """Indices (ascending) of a subset of the items whose summed ``cost`` is at most ``budget``.

    The items are visited round-robin over the strata (a random order within
    each stratum: first the first item of every stratum, then the second, ...)
    and kept while the running total fits.
    """
    n = len(strata)
    shuffled = rng.permutation(n)
    order = shuffled[np.argsort(strata[shuffled], kind="stable")]  # by stratum, random within
    st = strata[order]
    first = np.searchsorted(st, st, side="left")
    rank = np.arange(n) - first  # rank within its stratum
    # by rank, then stratum (np.lexsort((st, rank))): one stable argsort of a combined key, ~2x faster
    span = int(st.max()) - int(st.min()) + 1 if n else 1
    visit = order[np.argsort(rank * span + (st - (st.min() if n else 0)), kind="stable")]
    fits = np.cumsum(cost[visit]) <= budget
    return np.sort(visit[fits])


def text_lengths(records: Records) -> npt.NDArray[np.int64]:
    """Characters of every record's values, all fields together (missing values count 0)."""
    return records.text_sizes()


class LshParams(Params):
    threshold: float | None = Field(default=None, gt=0.0, le=1.0, description="similarity to catch (default: the job threshold)")
    target_recall: float = Field(
        default=0.95, gt=0.0, lt=1.0, description="required P(candidate | s = threshold) when choosing bands and rows"
    )
    bands: int | None = Field(default=None, ge=1, description="b, number of bands (with rows: overrides the choice)")
    rows: int | None = Field(default=None, ge=1, description="r, rows per band")
    max_bucket_size: int | None = Field(default=2000, ge=2, description="buckets larger than this are skipped and reported (null: no cap)")


class LshBands(Reporting, Keyed, Diagnostic, Blocker[LshParams]):
    """LSH banding (MMDS §3.4): b bands of r rows; same bucket in any band -> candidate.

    P(candidate | s) = 1 - (1 - s**r)**b; threshold ~ (1/b)**(1/r). The band
    index is part of the bucket key. Given a threshold, (b, r) is chosen so that
    P(candidate | threshold) >= target_recall with b*r <= K, minimizing the
    false-positive area; explicit bands/rows override.
    """

    name = "lsh_bands"
    summary = "LSH banding over MinHash signatures; (b, r) chosen for a target recall"
    Params = LshParams
    needs = frozenset({"signatures"})

    @staticmethod
    def _num_perm(context: Context) -> int | None:
        sig = context.peers.get("signature")
        k = getattr(sig, "num_perm", None)
        return int(k) if k is not None else None

    @classmethod
    def check(cls, params: LshParams, context: Context) -> list[str]:
        problems = []
        k = cls._num_perm(context)
        if (params.bands is None) != (params.rows is None):
            problems.append("set both 'bands' and 'rows', or neither (then 'threshold' chooses them)")
        elif params.bands is not None and params.rows is not None:
            if k is not None and params.bands * params.rows > k:
                problems.append(
                    f"bands * rows = {params.bands} * {params.rows} = {params.bands * params.rows} "
                    f"exceeds num_perm = {k}; fix: lower bands or rows, or raise signature.num_perm"
                )
        else:
            t = params.threshold if params.threshold is not None else context.threshold
            if t is None:
                problems.append("no threshold to choose bands and rows: set 'threshold' here or at the top level, or set bands and rows")
            elif k is not None:
                try:
                    choose_bands(t, k, params.target_recall)
                except ValueError as exc:
                    problems.append(str(exc))
        return problems

    def _band_rows(self, num_perm: int) -> tuple[int, int]:
        p = self.params
        if p.bands is not None and p.rows is not None:
            if p.bands * p.rows > num_perm:
                raise ValueError(f"bands * rows = {p.bands * p.rows} exceeds the signature length {num_perm}")
            return p.bands, p.rows
        return choose_bands(self._threshold(), num_perm, p.target_recall)

    def _given_threshold(self) -> float | None:
        """The similarity to catch: this blocker's threshold, else the job's (``None``: neither is set)."""
        t = self.job_default("threshold")
        return None if t is None else float(t)

    def _threshold(self) -> float:
        t = self._given_threshold()
        if t is None:
            raise ValueError("lsh_bands needs a threshold or bands and rows")
        return float(t)

    def block(self, batch: Batch) -> Blocked:
        sig = batch.signatures
        if sig is None:
            raise ValueError("lsh_bands needs signatures")
        b, r = self._band_rows(sig.num_perm)
        # empty token sets carry no evidence: they would all share every bucket
        assert sig.empty is not None
        ids = np.flatnonzero(~sig.empty).astype(np.int64)
        # no gathered copy of the signatures when every one is bucketed (1M x 128 values: 0.5 GB)
        keys = band_keys(sig.values if len(ids) == len(sig.values) else sig.values[ids], b, r)
        left, right, stats = bucket_candidates(keys, ids, self.params.max_bucket_size)
        report: dict[str, Any] = {
            **self._banding(sig.num_perm),
            "records_bucketed": int(len(ids)),
            "records_skipped_empty": int(sig.empty.sum()),
            **stats,
        }
        return Blocked(batch.allowed(Pairs(left, right).normalized()), report)

    def _banding(self, num_perm: int) -> dict[str, Any]:
        """The banding chosen for signatures of ``num_perm`` values, and its S-curve figures."""
        b, r = self._band_rows(num_perm)
        t = self._given_threshold()
        return {
            "bands": b,
            "rows": r,
            "num_perm": num_perm,
            "threshold": t,
            "p_candidate_at_threshold": None if t is None else round(float(candidate_probability(t, b, r)), 6),
            "s_curve_midpoint": round(float(threshold_estimate(b, r)), 4),
        }

    def partition_report(self, batch: Batch) -> dict[str, Any]:
        """The partition's signatures: how many, how many empty (in no bucket), and their length."""
        sig = batch.signatures
        if sig is None or sig.empty is None:
            raise ValueError("lsh_bands needs signatures")
        return {"records": len(sig), "empty": int(sig.empty.sum()), "num_perm": sig.num_perm}

    def merge_reports(self, reports: list[dict[str, Any]], buckets: dict[str, Any]) -> dict[str, Any]:
        """The report of :meth:`block` from the partitions' counts and the statistics of every
        bucket of :meth:`lookup_keys` (one bucket id per band and key, as :func:`bucket_candidates` groups)."""
        n = sum(int(r["records"]) for r in reports)
        empty = sum(int(r["empty"]) for r in reports)
        k = next((int(r["num_perm"]) for r in reports), None)
        if k is None:
            k = self._num_perm(self.context)
        return {
            **(self._banding(k) if k is not None else {}),
            "records_bucketed": n - empty,
            "records_skipped_empty": empty,
            **{key: int(buckets.get(key, 0)) for key in ("buckets", "largest_bucket", "oversized_buckets", "pairs_skipped", "raw_pairs")},
        }

    def describe(self) -> dict[str, Any]:
        """The parameters and the banding, as far as the job alone determines them (:meth:`block`'s report
        adds the banding of the signatures it saw and its bucket counts)."""
        k = self._num_perm(self.context)
        return {**super().describe(), **(self._banding(k) if k is not None else {})}

    def lookup_keys(self, batch: Batch) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """One bucket id per band of every non-empty signature (:func:`bucket_ids`)."""
        sig = batch.signatures
        if sig is None or sig.empty is None:
            raise ValueError("lsh_bands needs signatures")
        b, r = self._band_rows(sig.num_perm)
        ids = np.flatnonzero(~sig.empty).astype(np.int64)
        keys = bucket_ids(band_keys(sig.values if len(ids) == len(sig.values) else sig.values[ids], b, r))
        return np.repeat(ids, b), keys.ravel()

    def lookup_cap(self) -> int | None:
        return self.params.max_bucket_size

    def diagnostics(self, batch: Batch, sample: int) -> dict[str, Any] | None:
        """Measured candidate rate by exact-Jaccard bin, against 1 - (1 - s^r)^b.

        Pairs are chosen independently of the bands' hash values: for
        ``sample`` random records, their partners in a *probe* banding (at most
        8 bands of 2 rows, at most 50 partners per band) plus 10 uniformly
        random partners. Given its Jaccard s, such a pair is a candidate of the
        real banding with probability P(s); per bin the measured rate is
        compared with the mean P(s) of its pairs.

        The probe costs nothing when the signature has values the bands do not
        use (``b * r < K``, e.g. 13 x 7 = 91 of 128): its bands are those
        spare columns, whose hash functions are not the bands' (``probe:
        "spare columns"``). Otherwise 16 extra MinHash values with another seed
        are computed from the token sets of a pool of records (all of them up
        to :data:`PROBE_POOL_CHARS` characters of text, else a random subset
        within it; ``probe: "extra minhash"``).

        Only the exact Jaccard of the chosen pairs needs token sets, and its
        work is a small share of the job's: the pairs' tokens (|A| + |B|) fit
        a budget of :data:`PROBE_TOKEN_SHARE` of the corpus's characters
        (within :data:`PROBE_MIN_TOKENS` .. :data:`PROBE_MAX_TOKENS`; a small
        corpus's floor is :data:`PROBE_SMALL_FACTOR` times its characters). Beyond
        it a subset is measured, drawn round-robin over the strata of "probe
        bands shared" (0 for the random partners, up to 8), so that every
        similarity range keeps pairs; the stratum depends only on the probe's
        values, not on the bands', so the measured rate per bin stays
        unbiased, and the per-bin counts are those of the pairs measured
        (their intervals are honest). Records whose text exceeds
        :data:`PROBE_MAX_RECORD_CHARS` characters are never shingled here,
        records with more than :data:`PROBE_MAX_RECORD_TOKENS` tokens are not
        probed; ``s_curve.capped`` reports every such limit that applied.
        """
        sig = batch.signatures
        has_tokens = batch.tokens is not None or batch.token_source is not None
        if sig is None or not has_tokens or sig.kind != "minhash" or sig.empty is None:
            return None
        ids = np.flatnonzero(~sig.empty).astype(np.int64)
        chars = text_lengths(batch.records) if len(batch.records) == len(sig) else np.zeros(len(sig), np.int64)
        long_text = chars[ids] > PROBE_MAX_RECORD_CHARS
        skipped_chars = int(long_text.sum())
        ids = ids[~long_text]
        if len(ids) < 2:
            return None
        b, r = self._band_rows(sig.num_perm)
        rng = np.random.default_rng(self.seed + 104729)
        corpus = float(chars[ids].sum())
        floor = min(PROBE_MIN_TOKENS, PROBE_SMALL_FACTOR * corpus)
        budget = int(min(PROBE_MAX_TOKENS, max(floor, PROBE_TOKEN_SHARE * corpus)))
        spare = sig.num_perm - b * r
        skipped_tokens = 0
        sizes: npt.NDArray[np.int64] | None = None  # token counts, when the probe had to shingle
        pool_skipped = 0
        if spare >= 2 * PROBE_MIN_BANDS:
            nb = min(PROBE_BANDS, spare // 2)
            probe = band_keys(sig.values[:, b * r : b * r + 2 * nb][ids], nb, 2)
            probe_kind = f"spare columns {b * r}..{b * r + 2 * nb - 1}"
        else:
            if int(chars[ids].sum()) > PROBE_POOL_CHARS:  # a random pool within the characters' budget
                shuffled = rng.permutation(len(ids))
                keep = np.sort(shuffled[np.cumsum(np.maximum(chars[ids][shuffled], 1)) <= PROBE_POOL_CHARS])
                pool_skipped = len(ids) - len(keep)
                ids = ids[keep]
                if len(ids) < 2:
                    return None
            probe, sizes = self._probe_signatures(batch, ids, chars)
            small = sizes <= PROBE_MAX_RECORD_TOKENS
            skipped_tokens = int((~small).sum())
            ids, probe, sizes = ids[small], probe[small], sizes[small]
            if len(ids) < 2:
                return None
            probe_kind = "extra minhash"
        chosen = rng.choice(len(ids), size=min(sample, len(ids)), replace=False)
        local, shared = probe_partners(probe, chosen, rng)
        if len(local) == 0:
            return None
        # the budget: every pair when they fit, else a subset drawn round-robin over the strata
        cost = sizes if sizes is not None else np.maximum(chars[ids], 1)
        pair_cost = cost[local.left] + cost[local.right]
        sampled = len(local)
        capped = int(pair_cost.sum()) > budget
        if capped:
            keep = round_robin_within(shared, pair_cost, budget, rng)
            local = Pairs(local.left[keep], local.right[keep])
            if len(local) == 0:
                return None
        pairs = Pairs(ids[local.left], ids[local.right])  # ids ascending: still normalized
        involved = sorted_unique(np.concatenate([pairs.left, pairs.right]))
        kept = batch.tokens  # kept sets are read where they are (no gathered copy of the pairs' records)
        ts = kept if kept is not None else batch.tokens_for(involved)
        if sizes is None:  # the token limit, checked now that the records of the pairs are shingled
            big = (kept.sizes[involved] if kept is not None else ts.sizes) > PROBE_MAX_RECORD_TOKENS
            if big.any():
                skipped_tokens = int(big.sum())
                bad = involved[big]
                ok = ~(np.isin(pairs.left, bad) | np.isin(pairs.right, bad))
                pairs = Pairs(pairs.left[ok], pairs.right[ok])
                if len(pairs) == 0:
                    return None
        a, b_ = np.searchsorted(involved, pairs.left), np.searchsorted(involved, pairs.right)
        ta, tb = (pairs.left, pairs.right) if kept is not None else (a, b_)  # rows of ts
        ts_sizes = ts.sizes
        tokens_compared = int(ts_sizes[ta].sum() + ts_sizes[tb].sum())
        s = jaccard_pairs(ts, ta, tb, max_tokens_per_batch=PROBE_JACCARD_BATCH, workers=self.context.workers)
        real = band_keys(sig.values[involved], b, r)
        is_cand = np.any(real[a] == real[b_], axis=1)
        edges = np.linspace(0.0, 1.0, 11)
        which = np.minimum(np.searchsorted(edges, s, side="right") - 1, 9)
        n_bin = np.bincount(which, minlength=10)
        c_bin = np.bincount(which, weights=is_cand, minlength=10)
        p_bin = np.bincount(which, weights=candidate_probability(s, b, r), minlength=10)
        with np.errstate(invalid="ignore", divide="ignore"):
            measured = np.where(n_bin > 0, c_bin / np.maximum(n_bin, 1), np.nan)
            predicted = np.where(n_bin > 0, p_bin / np.maximum(n_bin, 1), np.nan)
        curve: dict[str, Any] = {
            "bands": b,
            "rows": r,
            "threshold": self._given_threshold(),
            "probe": probe_kind,
            "records_probed": int(len(chosen)),
            "pairs_sampled": int(len(pairs)),
            "tokens_compared": tokens_compared,
            "bins": [[round(float(edges[i]), 2), round(float(edges[i + 1]), 2)] for i in range(10)],
            "pairs": n_bin.astype(int).tolist(),
            "candidates": c_bin.astype(int).tolist(),
            "measured_rate": [None if np.isnan(x) else round(float(x), 4) for x in measured],
            "predicted_rate": [None if np.isnan(x) else round(float(x), 4) for x in predicted],
        }
        if skipped_chars or skipped_tokens or capped or pool_skipped:
            # the counts above are those of the pairs actually measured: their intervals stay honest
            curve["capped"] = {
                "records_skipped_long_text": skipped_chars,
                "max_record_chars": PROBE_MAX_RECORD_CHARS,
                "records_skipped_many_tokens": skipped_tokens,
                "max_record_tokens": PROBE_MAX_RECORD_TOKENS,
                "records_outside_probe_pool": pool_skipped,
                "probe_pool_chars": PROBE_POOL_CHARS,
                "pairs_before_token_budget": int(sampled),
                "tokens_compared": tokens_compared,
                "token_budget": budget,
                "note": "records over the per-record limits are not probed, beyond the token budget a subset of "
                "the sampled pairs is measured (round-robin over the number of probe bands they share), and "
                "without spare signature columns the probe searches a random pool of records; "
                "P(candidate | s) does not depend on set sizes or on the probe's values",
            }
        return {"s_curve": curve}

    def _probe_signatures(
        self, batch: Batch, ids: npt.NDArray[np.int64], chars: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
        """Probe band keys (8 bands of 2 rows of MinHash with another seed) and token counts of ``ids``."""
        probe_a, probe_b = hash_params(2 * PROBE_BANDS, self.seed + 7919)
        parts: list[npt.NDArray[np.uint32]] = []
        size_parts: list[npt.NDArray[np.int64]] = []
        for lo_, hi_ in split_sizes(np.maximum(chars[ids], 1), PROBE_CHUNK_CHARS):
            for a, b_ in split_sizes(np.ones(hi_ - lo_), PROBE_CHUNK):
                ts = batch.tokens_for(ids[lo_ + a : lo_ + b_])
                parts.append(minhash_signatures(ts, probe_a, probe_b))
                size_parts.append(ts.sizes.astype(np.int64))
        return band_keys(np.concatenate(parts), PROBE_BANDS, 2), np.concatenate(size_parts)


class JaccardParams(Params):
    threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="keep pairs with Jaccard >= threshold (default: the job threshold)"
    )
    skip_unlikely: float | None = Field(
        default=None,
        gt=0.0,
        le=1e-6,
        description="reject without token sets the candidates whose MinHash-like signatures agree on so few "
        "positions that a pair at the threshold would agree that little with probability below this "
        "(Chernoff bound; e.g. 1e-12); they are scored by the signatures' estimate. null: every candidate "
        "is compared exactly",
    )


def agreement_cutoff(num_perm: int, threshold: float, p: float) -> int:
    """The largest number of agreeing signature positions ``m`` (``m < num_perm * threshold``) with
    ``exp(-K D(m / K || t)) <= p``, ``D`` the Kullback-Leibler divergence of Bernoulli laws: the Chernoff
    bound of P[X <= m] for X, the agreements of a pair of Jaccard ``t`` (or more) over K positions, when the
    positions agree independently with probability ``J`` (classic MinHash) or are negatively associated
    (one-permutation bins); -1 when no ``m`` qualifies (then nothing is skipped)."""
    k, t = int(num_perm), float(threshold)
    if not 0.0 < t <= 1.0 or k < 1:
        return -1
    best = -1
    for m in range(k + 1):  # one step per agreement count
        a = m / k
        if a >= t:
            break
        if t == 1.0:  # equal sets agree everywhere: any disagreement rules J = 1 out
            div = math.inf
        else:
            div = (a * math.log(a / t) if a > 0 else 0.0) + (1 - a) * math.log((1 - a) / (1 - t))
        if math.exp(-k * div) <= p:
            best = m
    return best


class JaccardVerifier(SignatureScreen, Explainable, Verifier[JaccardParams]):
    """Exact Jaccard similarity |A ∩ B| / |A ∪ B| of the token sets (MMDS §3.1)."""

    name = "jaccard"
    summary = "exact Jaccard similarity of the token sets"
    Params = JaccardParams
    needs = frozenset({"tokens"})

    def score(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
        if batch.tokens is None:
            raise ValueError("jaccard needs token sets")
        return jaccard_pairs(batch.tokens, pairs.left, pairs.right, workers=self.context.workers)

    def decided_by_signatures(self, batch: Batch, pairs: Pairs) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]] | None:
        """With ``skip_unlikely``: the pairs rejected from their signatures alone and every pair's estimate
        (the share of agreeing positions), or None (option off, no MinHash-like signatures).

        A pair is rejected when its signatures agree on at most :func:`agreement_cutoff` positions: a
        pair of Jaccard at or above the threshold does so with probability at most ``skip_unlikely``
        (divided by P(candidate | threshold) >= the blocker's target recall, as only candidates are
        asked). The verify stage then never computes their token sets (with a streamed corpus, the
        records of those pairs only are not shingled again) and scores them by the estimate, which is
        below the threshold.
        """
        p = self.params
        sig = batch.signatures
        if p.skip_unlikely is None or sig is None or sig.kind != "minhash" or len(pairs) == 0:
            return None
        values = sig.values
        k = values.shape[1]
        cutoff = agreement_cutoff(k, self.threshold, p.skip_unlikely)
        if cutoff < 0:
            return None
        agree = np.zeros(len(pairs), dtype=np.int64)
        for a, b in split_sizes(np.ones(len(pairs)), 1 << 16):  # a slice of pairs at a time: small gathers
            agree[a:b] = (values[pairs.left[a:b]] == values[pairs.right[a:b]]).sum(axis=1)
        empty = sig.empty if sig.empty is not None else np.zeros(len(values), dtype=bool)
        skip = (agree <= cutoff) & ~empty[pairs.left] & ~empty[pairs.right]
        return skip, agree / k

    def comparisons(self, batch: Batch, pairs: Pairs, state: Mapping[str, Any] | None = None) -> dict[str, npt.NDArray[Any]]:
        """Shared and differing tokens of every pair: Jaccard = shared / (shared + left_only + right_only)."""
        rows = np.unique(np.concatenate([pairs.left, pairs.right]))
        ts = batch.tokens_for(rows)  # the streamed corpus recomputes the sets of these rows only
        a, b = np.searchsorted(rows, pairs.left), np.searchsorted(rows, pairs.right)
        shared = intersection_sizes(ts, a, b, workers=self.context.workers)
        left_only = ts.sizes[a] - shared
        right_only = ts.sizes[b] - shared
        union = (shared + left_only + right_only).astype(np.float64)
        score = np.divide(shared, union, out=np.zeros(len(shared)), where=union > 0)
        return {"shared": shared, "left_only": left_only.astype(np.int64), "right_only": right_only.astype(np.int64), "score": score}


@hookimpl
def er_register_shinglers() -> list[type[Shingler]]:
    return [CharShingler, WordShingler]


@hookimpl
def er_register_signature_builders() -> list[type[SignatureBuilder]]:
    return [MinHash]


@hookimpl
def er_register_blockers() -> list[type[Blocker]]:
    return [LshBands]


@hookimpl
def er_register_verifiers() -> list[type[Verifier]]:
    return [JaccardVerifier]
