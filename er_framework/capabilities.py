"""Optional abilities of components, as types: a component declares one by inheriting its class.

A family (:mod:`er_framework.components`) has one required method; every
further ability is one of the classes here, mixed into the component's
class. The engine, the executors, the index, ``er plugins`` and the contract
checks of :mod:`er_framework.testing` ask this module, and only this module,
whether a component has an ability (:func:`has`, :func:`capabilities_of`),
so an ability is detected in one place and by its type, never by comparing
methods with the base class's or by reading flags.

What a component learns from a run's data is a value: :class:`Learner`
returns it as :class:`Fitted` with its scores, the engine keeps it in the
job's :class:`~er_framework.engine.model.Model`, and every later call that
needs it receives it as an argument. A component keeps no state between
calls.

What one call finds is a value as well: a :class:`Reporting` blocker's
:meth:`~Reporting.block` returns its pairs with its report (:class:`Blocked`),
a :class:`Partitionable` shingler's :meth:`~Partitionable.shingle_reported`
its token sets with its report (:class:`Tokenized`), and the reports of
partitions merge into a new value (``merge_reports``), so ``describe()``
says what the parameters say and never "the last call".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from er_framework.data import Batch, LabelledPairs, Pairs, Records, TokenSets

__all__ = [
    "Tokenized",
    "WholeCorpus",
    "Partitionable",
    "Multiset",
    "MultisetSigning",
    "Blocked",
    "Reporting",
    "Keyed",
    "GroupedKeys",
    "LimitedKeys",
    "Windowed",
    "Diagnostic",
    "SignatureScreen",
    "Fitted",
    "LabelledCodes",
    "Learner",
    "CodeFitted",
    "Explainable",
    "Trainable",
    "Scored",
    "ScoreReporting",
    "SourceAware",
    "CAPABILITIES",
    "capabilities_of",
    "has",
    "ability",
    "block",
    "multisets",
    "shingle_with_report",
]

Float64Array = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]
UInt64Array = npt.NDArray[np.uint64]


# ---------------------------------------------------------------- shinglers


@dataclass(frozen=True)
class Tokenized:
    """What one call of a :class:`Partitionable` shingler gives: the token sets of its records and what the
    call contributes to the run's report (:meth:`Partitionable.merge_reports` combines such reports)."""

    tokens: TokenSets
    report: dict[str, Any] = field(default_factory=dict)


class WholeCorpus:
    """Shingler ability: it needs every record in one call (corpus statistics, every bad record reported at once).

    The engine then calls ``shingle`` once with every record and keeps the
    token sets in memory. Without this ability a shingler is streamed: the
    engine calls ``shingle`` on consecutive chunks of the records and again
    on subsets (the records of candidate pairs, for verification), so a
    record's token set must depend on that record alone. A whole-corpus
    shingler cannot shingle one item (``er index``) or one partition (the
    Dask executor) unless it is :class:`Partitionable`.
    """


class Partitionable(WholeCorpus):
    """Shingler ability: one call sees every record, yet a record's token set depends on that record alone.

    The one call serves the error messages (every bad record at once) and the
    report; an executor may shingle partition by partition (and ``er index``
    one item) and combine the partitions' reports with :meth:`merge_reports`.
    :meth:`shingle_reported` is the shingler's work; the family's ``shingle``
    is its token sets (list this ability before ``Shingler`` among the bases).
    """

    def shingle_reported(self, records: Records) -> Tokenized:
        """The token sets of ``records`` and what this call contributes to the report, in a form
        :meth:`merge_reports` combines (e.g. counts to sum)."""
        raise NotImplementedError

    def merge_reports(self, reports: list[dict[str, Any]]) -> dict[str, Any]:
        """The shingler's report of a run (added to ``describe()`` in report.json) from the reports of the
        calls that shingled its records: what one call over every record would report."""
        raise NotImplementedError

    def shingle(self, records: Records) -> TokenSets:
        """The token sets of :meth:`shingle_reported` (the ``Shingler`` family's method)."""
        return self.shingle_reported(records).tokens


class Multiset:
    """Shingler ability: every record's tokens in any order, repeats allowed (rows need not be sets).

    Its distinct tokens per row must equal ``shingle``'s set. The engine signs
    these when the signature builder has :class:`MultisetSigning` (a minimum
    over tokens ignores order and repeats) and no later stage needs every
    set: it skips the per-row sort. Without it the engine signs the sets.
    """

    def shingle_multiset(self, records: Records) -> TokenSets:
        """Every record's tokens, unsorted, with repeats."""
        raise NotImplementedError


# ---------------------------------------------------------------- signature builders


class MultisetSigning:
    """Signature builder ability: a row's signature depends only on its *distinct* tokens (order and repeats
    ignored, e.g. a minimum per hash function), so the engine may pass :meth:`Multiset.shingle_multiset` rows."""


# ---------------------------------------------------------------- blockers


@dataclass(frozen=True)
class Blocked:
    """What one call of a :class:`Reporting` blocker gives: its candidate pairs and its report."""

    pairs: Pairs
    report: dict[str, Any] = field(default_factory=dict)


class Reporting:
    """Blocker ability: the candidates of a call come with its report (buckets, keys, what was skipped).

    :meth:`block` is the blocker's work; the family's ``candidates`` is its
    pairs (list this ability before ``Blocker`` among the bases). The
    blocker's section of report.json is ``describe()`` updated with the
    report, and ``candidate_pairs``. A blocker keeps nothing between calls:
    the report is the value :meth:`block` returns.
    """

    def block(self, batch: Batch) -> Blocked:
        """The candidate pairs of ``batch`` (as ``candidates``) and this call's report."""
        raise NotImplementedError

    def candidates(self, batch: Batch) -> Pairs:
        """The pairs of :meth:`block` (the ``Blocker`` family's method)."""
        return self.block(batch).pairs


class Keyed:
    """Blocker ability: bucket keys, so one new item is looked up without the others (``er index``, Dask).

    Two records are candidates of ``candidates`` exactly when they share a key
    of :meth:`lookup_keys` (before the size cap of :meth:`lookup_cap`, and up
    to 64-bit hash collisions). A :class:`Reporting` blocker also gives the
    report of a run blocked through its keys: :meth:`partition_report` of each
    partition, combined by :meth:`merge_reports` with the buckets' statistics.
    """

    def lookup_keys(self, batch: Batch) -> tuple[Int64Array, UInt64Array]:
        """Bucket keys for a persistent index (``er index``): ``(rows, keys)``.

        Record ``rows[i]`` belongs to the bucket ``keys[i]`` (64-bit); two
        records are candidates exactly when they share a key (before the size
        cap of :meth:`lookup_cap`), so one new item can be looked up without
        the others. Keys of different bands or key fields must differ (mix the
        band into the key).
        """
        raise NotImplementedError

    def lookup_cap(self) -> int | None:
        """Buckets with more members than this are skipped, as ``candidates`` skips them. Default: no cap."""
        return None

    def partition_report(self, batch: Batch) -> dict[str, Any]:
        """What ``batch`` (one partition of a run blocked through :meth:`lookup_keys`) contributes to the
        report, in a form :meth:`merge_reports` combines (e.g. counts). Default: nothing."""
        return {}

    def merge_reports(self, reports: list[dict[str, Any]], buckets: dict[str, Any]) -> dict[str, Any]:
        """The report of a run blocked through :meth:`lookup_keys`, as :meth:`Reporting.block` gives it, from
        the partitions' :meth:`partition_report` and the statistics of every bucket: ``buckets`` (with 2 or
        more members), ``largest_bucket``, ``oversized_buckets`` (over :meth:`lookup_cap`) and the
        ``pairs_skipped`` there, ``raw_pairs`` of the kept ones (with repeats), ``distinct_pairs`` (the
        blocker's candidate pairs). With :class:`GroupedKeys`, also ``groups``: per group number a dict of
        ``distinct`` (buckets), ``buckets`` (2 or more members), ``largest_bucket``, ``pairs`` (of the kept
        buckets, cross-source only in link mode), ``oversized_buckets``, ``oversized_records``,
        ``oversized_pairs``; and ``oversized``: every oversized bucket of these groups as a dict of
        ``group``, ``size`` and ``record`` (a one-row :class:`Records`: the member first in the records'
        order). Default: nothing to report."""
        return {}


class GroupedKeys(Keyed):
    """Keyed ability: every lookup key belongs to a group (e.g. which of several key fields made it), and
    :meth:`Keyed.merge_reports` receives the buckets' statistics per group."""

    def lookup_groups(self, batch: Batch) -> Int64Array:
        """The group of every entry of :meth:`Keyed.lookup_keys`, in its order."""
        raise NotImplementedError


class LimitedKeys(Keyed):
    """Keyed ability: a limit on the pairs of the buckets (``candidates`` raises beyond it, before any pair
    is made); an executor blocking through the keys checks it on the sizes of every bucket first."""

    def check_lookup_pairs(self, pairs: int, largest_bucket: int) -> None:
        """Raise the error ``candidates`` raises on buckets holding ``pairs`` pairs (counted with repeats,
        buckets over :meth:`Keyed.lookup_cap` left out) whose largest has ``largest_bucket`` members."""
        raise NotImplementedError


class Windowed:
    """Blocker ability: it pairs records within a window of a sort order, and gives the sort keys.

    An executor sorts the records of many partitions together by these keys
    (sampled boundaries, sorted ranges, ``window_size() - 1`` records carried
    into the next range) and pairs them within windows.
    """

    def window_keys(self, batch: Batch) -> list[tuple[Int64Array, npt.NDArray[Any]]]:
        """Sort keys: one ``(rows, keys)`` per pass.

        Record ``rows[i]`` sorts by ``keys[i]`` (a numpy ``StringDType``
        array, compared in code-point order; a record missing from a pass is
        left out of its ``rows``). ``candidates`` must equal: per pass, the
        rows sorted by ``(key, row)``, each paired with the next
        ``window_size() - 1`` rows of that order (in link mode only the pairs
        of different sources), the passes unioned. A key depends on its
        record alone.
        """
        raise NotImplementedError

    def window_size(self) -> int:
        """The window of :meth:`window_keys`: a record is paired with the next ``window_size() - 1`` records."""
        raise NotImplementedError

    def check_window_pairs(self, rows_per_pass: list[int]) -> None:
        """Raise the error ``candidates`` raises when its window passes sort ``rows_per_pass`` records
        (one count per pass of :meth:`window_keys`; e.g. a limit on the pairs). An executor sorting
        through :meth:`window_keys` calls it on the counts of all partitions before it makes any pair.
        Default: no limit."""


class Diagnostic:
    """Blocker ability: evidence of how the blocker behaves, for the report (``diagnostics:`` of a job)."""

    def diagnostics(self, batch: Batch, sample: int) -> dict[str, Any] | None:
        """E.g. the measured candidate rate by exact-similarity bin against its theory. ``sample`` bounds the
        work (records probed). ``None``: nothing to show."""
        raise NotImplementedError


# ---------------------------------------------------------------- verifiers


class SignatureScreen:
    """Verifier ability: some candidates are decided from their signatures alone, before any token set.

    The verify stage asks :meth:`decided_by_signatures` first; the pairs it
    rejects are scored by the estimate (below the threshold) and their
    records are not shingled again for them.
    """

    def decided_by_signatures(self, batch: Batch, pairs: Pairs) -> tuple[npt.NDArray[np.bool_], Float64Array] | None:
        """The pairs rejected from the signatures alone and every pair's estimate, or ``None`` (nothing
        decided here: the option is off, or the signatures do not fit)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Fitted:
    """What a :class:`Learner` fitted on a run.

    ``state`` is everything its scores depend on besides the pair's two
    records, as JSON-serializable values (numbers, strings, lists, dicts):
    it is saved in the model file and given back to :meth:`Learner.score_with`
    (and :meth:`Explainable.comparisons`) unchanged. ``report`` is what the
    run's report says of the fit (iterations, convergence, counts).
    """

    state: dict[str, Any]
    report: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LabelledCodes:
    """Labelled pairs as a :class:`CodeFitted` verifier's codes (an executor computes them where the records are)."""

    codes: Int64Array
    match: npt.NDArray[np.bool_]
    lam: str = "em"


class Learner:
    """Verifier ability: its scores depend on state fitted from the run's candidate pairs (and labels).

    :meth:`fit_score` fits on the pairs and scores them; the state goes into
    the job's model. :meth:`score_with` scores any pairs with a given state
    (a saved model, another process, the index): a pair's score then depends
    on its two records and the state alone. The family's required
    ``score(batch, pairs)`` of a learner is its fit on those pairs, unlabelled.
    """

    def fit_score(self, batch: Batch, pairs: Pairs, labelled: LabelledPairs | None) -> tuple[Float64Array, Fitted]:
        """Fit on ``pairs`` (the run's candidates; ``labelled``: pairs a person labelled) and score them."""
        raise NotImplementedError

    def score_with(self, batch: Batch, pairs: Pairs, state: Mapping[str, Any]) -> Float64Array:
        """The scores of ``pairs`` under a fitted ``state`` (:attr:`Fitted.state`), without fitting."""
        raise NotImplementedError

    def state_report(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """What the report says of a state given to the run (a loaded model) instead of fitted by it."""
        return {}


class CodeFitted(Learner):
    """Learner ability: fitted from counts of discrete pair codes, so an executor can fit partition by partition.

    The codes of each partition's pairs are computed where its records are
    (:meth:`pair_codes`), their counts summed, one fit made on the sums
    (:meth:`fit_counts`) and each pair scored by its code
    (:meth:`score_codes`): the scores equal :meth:`fit_score`'s.
    """

    def pair_codes(self, batch: Batch, pairs: Pairs) -> Int64Array:
        """A discrete code of every pair (e.g. its comparison pattern), depending on its two records alone."""
        raise NotImplementedError

    def sample_pairs(self, source: npt.NDArray[np.int32], cross_source_only: bool) -> Pairs:
        """Pairs besides the candidates whose codes the fit also counts (e.g. random pairs), chosen from the
        records' sources alone (same seed, same pairs). Default: none."""
        return Pairs.empty()

    def labelled_codes(self, batch: Batch, labelled: LabelledPairs) -> LabelledCodes:
        """The labelled pairs (rows of ``batch``) as :meth:`fit_counts` takes them: their :meth:`pair_codes`,
        labels and prior. An executor computes them where the records are; a verifier whose training needs
        more of the records than the codes (e.g. term-frequency agreements) returns a subclass holding it."""
        codes = self.pair_codes(batch, labelled.pairs) if len(labelled.pairs) else np.zeros(0, np.int64)
        return LabelledCodes(np.asarray(codes, dtype=np.int64), labelled.match, labelled.lam)

    def fit_counts(
        self,
        codes: Int64Array,
        counts: Float64Array,
        sample_codes: Int64Array,
        sample_counts: Float64Array,
        labelled: LabelledCodes | None,
        population: int = 0,
        record_counts: list[dict[str, Any]] | None = None,
    ) -> tuple[Float64Array, Fitted]:
        """Fit on the distinct codes of all candidate pairs (sorted) with their counts, those of the
        :meth:`sample_pairs` and the labelled pairs' codes; the score of each of ``codes`` and the fit.
        ``population``: how many record pairs the job could compare (:func:`~er_framework.data.pair_population`
        of the records' sources; 0 when unknown), for a fit whose prior is over every pair;
        ``record_counts``: the :meth:`record_counts` of every part of the records (None: none)."""
        raise NotImplementedError

    def score_codes(self, codes: Int64Array, state: Mapping[str, Any]) -> Float64Array:
        """The score of each code under a fitted ``state``."""
        raise NotImplementedError

    def scores_by_records(self, state: Mapping[str, Any]) -> bool:
        """Whether a pair's score under ``state`` depends on more than its code (e.g. term frequencies of its
        values): an executor then scores with :meth:`Learner.score_with`, not :meth:`score_codes`. Default False."""
        return False

    def needs_record_counts(self) -> bool:
        """Whether the fit also counts over the records (:meth:`record_counts`); default False."""
        return False

    def record_counts(self, batch: Batch) -> dict[str, Any] | None:
        """Counts over the batch's records the fit needs besides the pair codes (e.g. value frequencies),
        one part of the records at a time: :meth:`fit_counts` sums the parts (``record_counts=``). None
        (default): none. A fit whose state scores a pair by more than its code (its records' values) is
        applied by an executor with :meth:`Learner.score_with` on the pairs' records."""
        return None


class Explainable:
    """Verifier ability: a pair's score broken into its terms (``er explain``, ``output: {comparisons: true}``).

    :meth:`comparisons` returns named columns of one value per pair, in
    display order, ``score`` last (the column conventions are listed there).
    A :class:`Learner` receives its fitted ``state``; others get ``None``.
    """

    def comparisons(self, batch: Batch, pairs: Pairs, state: Mapping[str, Any] | None = None) -> dict[str, npt.NDArray[Any]]:
        """The terms of every pair's score, as named columns (one value per pair), in display order.

        * ``level_<field>`` – int64 comparison level of a field (0 = closest; -1 = missing);
          its name is ``describe()["per_field"][field]["levels"][level]``
        * ``similarity_<field>`` – float64 similarity 0..100 of a field (NaN = missing)
        * ``weight_<field>`` – float64 additive term of a field in bits (log2 Bayes factor)
        * ``points_<field>`` – float64 additive term of a field in the score's own unit
        * ``prior_weight`` – float64 intercept in bits (log2 of the prior odds)
        * ``match_weight`` – float64 ``prior_weight`` + every ``weight_*``;
          ``score = 2**match_weight / (1 + 2**match_weight)``
        * ``shared``, ``left_only``, ``right_only`` – int64 token counts (set verifiers:
          ``score = shared / (shared + left_only + right_only)``)
        * ``score`` – float64, equal to the verifier's score of the pair (last column)

        The additive terms (``weight_*`` with ``prior_weight``, or ``points_*``) sum to the
        score (``match_weight`` for weights) up to rounding.
        """
        raise NotImplementedError


class Trainable(Learner):
    """Learner ability: learns from pairs a person labelled (the job's ``training: {labels: FILE}``).

    The engine passes the labelled pairs to :meth:`Learner.fit_score` (and
    :class:`CodeFitted` verifiers receive them as :class:`LabelledCodes`).
    Labels of one kind only (all matches, or all non-matches) are refused
    before the verifier sees them unless :meth:`learns_from_one_kind` says
    it can learn from them.
    """

    def learns_from_one_kind(self) -> bool:
        """Whether labels of one kind only (matches and no non-match, or the reverse) are enough to learn from
        under this component's parameters: the engine (a run, ``er review``'s rounds) then passes them on
        instead of refusing them. Default False: the labels must hold both kinds."""
        return False


@dataclass(frozen=True)
class Scored:
    """What one call of a :class:`ScoreReporting` verifier gives: the scores and what the report says of them."""

    scores: Float64Array
    report: dict[str, Any] = field(default_factory=dict)


class ScoreReporting:
    """Verifier ability: a call returns what the report says of its scores with them (e.g. each field's mean
    similarity): :meth:`score_reported`. Such a verifier is scored in one call over all candidates (its report
    is of that call). The family's required ``score`` is :meth:`score_reported`'s scores."""

    def score_reported(self, batch: Batch, pairs: Pairs) -> Scored:
        """The scores of ``pairs`` with the call's report."""
        raise NotImplementedError

    def score(self, batch: Batch, pairs: Pairs) -> Float64Array:
        return self.score_reported(batch, pairs).scores


# ---------------------------------------------------------------- clusterers


class SourceAware:
    """Clusterer ability: in link mode the clusters depend on the records' sources as well.

    In link mode (pairs across sources only) the engine calls
    :meth:`cluster_sources` with the source index of every record instead of
    the family's ``cluster`` (e.g. ``one_to_one`` with three or more sources:
    at most one record of each source per cluster). Everywhere else (dedup,
    link_and_dedup, the index) it calls ``cluster``. Clusterers without the
    ability are called as always.
    """

    def cluster_sources(self, n: int, pairs: Pairs, source: npt.NDArray[np.int32]) -> Int64Array:
        """A cluster label per record, given the source (``0 .. k-1``) of each of the ``n`` records."""
        raise NotImplementedError


#: every ability, by the name ``er plugins`` shows
CAPABILITIES: dict[str, type] = {
    "whole_corpus": WholeCorpus,
    "partitionable": Partitionable,
    "multiset": Multiset,
    "multiset_signing": MultisetSigning,
    "reporting": Reporting,
    "keyed": Keyed,
    "grouped_keys": GroupedKeys,
    "limited_keys": LimitedKeys,
    "windowed": Windowed,
    "diagnostic": Diagnostic,
    "signature_screen": SignatureScreen,
    "score_reporting": ScoreReporting,
    "learner": Learner,
    "code_fitted": CodeFitted,
    "explainable": Explainable,
    "trainable": Trainable,
    "source_aware": SourceAware,
}


def has(component: object, capability: type) -> bool:
    """Whether ``component`` (an instance or a class) declares ``capability``."""
    cls = component if isinstance(component, type) else type(component)
    return issubclass(cls, capability)


_A = TypeVar("_A")


def ability(component: object, capability: type[_A]) -> _A | None:
    """The instance ``component`` as its ability ``capability`` (to call the ability's methods), or ``None``
    when it does not declare it: :func:`has` for the type checker."""
    return component if has(component, capability) and isinstance(component, capability) else None


def capabilities_of(component: object) -> list[str]:
    """The names of the abilities ``component`` (an instance or a class) declares, in :data:`CAPABILITIES` order."""
    return [name for name, cap in CAPABILITIES.items() if has(component, cap)]


# ---------------------------------------------------------------- calls that depend on an ability


def multisets(shingler: Any, records: Records) -> TokenSets:
    """A shingler's :meth:`Multiset.shingle_multiset` rows, or its sets (a set is a multiset) without the ability."""
    if has(shingler, Multiset):
        tokens: TokenSets = shingler.shingle_multiset(records)
        return tokens
    sets: TokenSets = shingler.shingle(records)
    return sets


def shingle_with_report(shingler: Any, records: Records, multiset: bool = False) -> Tokenized:
    """A shingler's token sets (``multiset``: its :func:`multisets`) with the call's report: that of
    :meth:`Partitionable.shingle_reported`, empty for other shinglers."""
    if has(shingler, Partitionable) and not (multiset and has(shingler, Multiset)):  # a set is a multiset
        got: Tokenized = shingler.shingle_reported(records)
        return got
    return Tokenized(multisets(shingler, records) if multiset else shingler.shingle(records))


def block(blocker: Any, batch: Batch) -> Blocked:
    """A blocker's candidates of ``batch`` with the call's report: :meth:`Reporting.block`, or
    ``candidates`` and an empty report."""
    if has(blocker, Reporting):
        got: Blocked = blocker.block(batch)
        return got
    return Blocked(blocker.candidates(batch))
