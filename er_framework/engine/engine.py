"""The job's components, built once, and what every executor and the index compute with them."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import (
    CodeFitted,
    Explainable,
    Keyed,
    LabelledCodes,
    Learner,
    Multiset,
    MultisetSigning,
    Partitionable,
    Tokenized,
    WholeCorpus,
    Windowed,
    ability,
    has,
    multisets,
    shingle_with_report,
)
from er_framework.components import Blocker, Clusterer, Component, Shingler, SignatureBuilder, Verifier
from er_framework.config.resolve import ComponentSpec, Job
from er_framework.config.spec import AutoThresholdSpec
from er_framework.data import Batch, LabelledPairs, Pairs, Records, TokenSets
from er_framework.engine.model import Model, ThresholdChoice
from er_framework.errors import ErError, PluginError, Problem
from er_framework.kernels.df import drop_tokens
from er_framework.kernels.hashing import mix64
from er_framework.kernels.threshold import choose_threshold

__all__ = [
    "BLOCKER_SALT",
    "BLOCKING_KEYS",
    "Engine",
    "PrunedPartitionable",
    "PrunedShingler",
    "PrunedWholeCorpus",
    "SignedBatch",
    "kept_scores",
    "pruned_shingler",
    "signed_keys",
]

Int64Array = npt.NDArray[np.int64]

#: what the model records of each blocker's report: its settings, never counts of a run
BLOCKING_KEYS = (
    "type",
    "bands",
    "rows",
    "num_perm",
    "threshold",
    "p_candidate_at_threshold",
    "s_curve_midpoint",
    "key",
    "keys",
    "window",
    "bits",
    "max_bucket_size",
)

#: mixed into the bucket ids of the second, third … blocker of a job
BLOCKER_SALT = 0xD6E8FEB86659FD93

_C = TypeVar("_C", bound=Component)


def signed_keys(keys: npt.NDArray[np.uint64]) -> Int64Array:
    """uint64 bucket ids as signed 64-bit integers (same bits; SQLite's and Dask's key type)."""
    return np.ascontiguousarray(keys, dtype=np.uint64).view(np.int64)


def _make(spec: ComponentSpec, family: type[_C], job: Job) -> _C:
    comp = spec.instantiate(job.context)
    if not isinstance(comp, family):
        raise PluginError(Problem(where=spec.yaml_path, message=f"{spec.cls.name!r} did not build a {family.__name__}"))
    return comp


class PrunedShingler(Multiset, Shingler):
    """The job's shingler with the corpus-frequency pruning of ``prune_shingles:`` applied.

    Every token set it gives (and every multiset) lacks the ``dropped``
    tokens, so signatures, blockers reading tokens, verification (also of
    re-shingled records) and the diagnostics see the same pruned sets,
    wherever they run. It keeps the wrapped shingler's name, parameters and
    report, and its abilities (:func:`pruned_shingler` picks the class that
    has them); it prunes the wrapped shingler's multisets, or its sets.
    """

    def __init__(self, inner: Shingler, dropped: npt.NDArray[np.uint64]) -> None:
        super().__init__(inner.params, inner.context)
        self.inner = inner
        self.dropped = dropped
        self.name = inner.name  # type: ignore[misc]  # the instance answers with the wrapped class's name

    def shingle(self, records: Records) -> TokenSets:
        return self.shingle_counted(records, multiset=False)[0].tokens

    def shingle_multiset(self, records: Records) -> TokenSets:
        return self.shingle_counted(records, multiset=True)[0].tokens

    def shingle_counted(self, records: Records, multiset: bool) -> tuple[Tokenized, Int64Array]:
        """The pruned token sets (or multisets) with the wrapped shingler's report of the call, and how many
        tokens each record lost."""
        raw = shingle_with_report(self.inner, records, multiset=multiset)
        tokens, lost = drop_tokens(raw.tokens, self.dropped, sets=not multiset, workers=self.context.workers)
        return Tokenized(tokens, raw.report), lost

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


class PrunedWholeCorpus(WholeCorpus, PrunedShingler):
    """A :class:`PrunedShingler` of a shingler that needs every record at once."""


class PrunedPartitionable(Partitionable, PrunedShingler):
    """A :class:`PrunedShingler` of a partitionable shingler: its report is the wrapped shingler's."""

    def shingle_reported(self, records: Records) -> Tokenized:
        return self.shingle_counted(records, multiset=False)[0]

    def merge_reports(self, reports: list[dict[str, Any]]) -> dict[str, Any]:
        assert isinstance(self.inner, Partitionable)
        return self.inner.merge_reports(reports)


def pruned_shingler(inner: Shingler, dropped: npt.NDArray[np.uint64]) -> PrunedShingler:
    """``inner`` pruned of the tokens ``dropped``, as a :class:`PrunedShingler` with ``inner``'s abilities."""
    if has(inner, Partitionable):
        return PrunedPartitionable(inner, dropped)
    if has(inner, WholeCorpus):
        return PrunedWholeCorpus(inner, dropped)
    return PrunedShingler(inner, dropped)


@dataclass(frozen=True)
class SignedBatch:
    """What :meth:`Engine.signed_batch` gives: the batch the blockers read and what shingling it found."""

    batch: Batch
    #: each record's token count, as the shingle stage counts it (with repeats when multisets are signed)
    sizes: Int64Array
    #: with ``prune_shingles:``, the distinct tokens each record lost (else None)
    lost: Int64Array | None = None
    #: the shingler's report of this call (:meth:`~er_framework.capabilities.Partitionable.shingle_reported`)
    report: dict[str, Any] | None = None


def kept_scores(scores: npt.NDArray[np.float64], threshold: float) -> npt.NDArray[np.bool_]:
    """Which scores make a pair under ``threshold``: ``score >= threshold`` (:meth:`Engine.keep`; an executor
    applying a threshold chosen after its workers scored)."""
    return np.asarray(scores >= threshold, dtype=bool)


class Engine:
    """The components of a job, instantiated once.

    Every executor (local, Dask workers) and the persistent index use one
    ``Engine`` per job and process; the per-batch computations they share
    (normalizing, signing, bucket keys, scoring) are its methods, so a
    record is treated the same wherever it is processed.
    """

    def __init__(self, job: Job, model: Model | None = None) -> None:
        self.job = job
        self.mode = job.spec.mode
        self.link = self.mode == "link"
        self.collapse = job.exact.enabled and self.mode != "link"
        self.blockers = [_make(spec, Blocker, job) for spec in job.blockers]
        self.verifier = _make(job.verifier, Verifier, job)
        self.clusterer = _make(job.clusterer, Clusterer, job)
        needs: set[str] = set(self.verifier.needs)
        for b in self.blockers:
            needs |= set(b.needs)
        if job.signature is not None:
            needs.add("signatures")
        self.needs = needs
        self.shingler: Shingler | None = None
        if job.shingler is not None and needs & {"tokens", "signatures"}:
            self.shingler = _make(job.shingler, Shingler, job)
        self.builder: SignatureBuilder | None = None
        if job.signature is not None and self.shingler is not None:
            self.builder = _make(job.signature, SignatureBuilder, job)
        #: the shingler as the plugin built it (:attr:`shingler` leaves out the shingles the model's
        #: ``prune_shingles:`` dropped)
        self.base_shingler = self.shingler
        #: ``threshold: auto`` (and no verifier.threshold of its own, which wins): chosen by :meth:`choose_threshold`
        self.auto = job.spec.threshold == "auto" and getattr(self.verifier.params, "threshold", None) is None
        #: what the job has learned so far (a saved model, or the parts this run fitted): see :meth:`with_model`
        self.model = model if model is not None else Model.for_job(job)
        self.shingler = self.shingler_without(self.model.pruned)

    def shingler_without(self, dropped: npt.NDArray[np.uint64] | None) -> Shingler | None:
        """The job's shingler without the tokens ``dropped`` (sorted, distinct): every stage then sees pruned sets."""
        if self.base_shingler is None or dropped is None or not len(dropped):
            return self.base_shingler
        return pruned_shingler(self.base_shingler, np.asarray(dropped, dtype=np.uint64))

    def with_model(self, model: Model) -> Engine:
        """An engine of the same components applying ``model`` (the engine itself never changes)."""
        other = copy.copy(self)
        other.model = model
        other.shingler = self.shingler_without(model.pruned)
        return other

    @property
    def threshold(self) -> float:
        """The threshold pairs are kept at: the job's, or with ``threshold: auto`` the model's choice (before
        the choice: the lowest it may choose)."""
        chosen = self.model.threshold
        if self.auto and chosen is not None:
            return chosen.value
        return self.verifier.threshold

    def keep(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        """Which scores make a pair: ``score >= threshold`` (the one rule, wherever pairs are kept)."""
        return kept_scores(scores, self.threshold)

    def choose_threshold(self, scores: npt.NDArray[np.float64]) -> ThresholdChoice:
        """``threshold: auto``: the threshold chosen from every candidate's score (a value; later stages keep
        pairs at or above it once it is in the model)."""
        spec = self.job.spec.auto_threshold or AutoThresholdSpec()
        finite = scores[np.isfinite(scores)]
        fit = choose_threshold(np.clip(finite, 0.0, 1.0), low=spec.low, high=spec.high, method=spec.method, fallback=spec.fallback)
        return ThresholdChoice(value=float(fit.threshold), chosen="auto", auto=fit.to_json())

    def threshold_choice(self) -> ThresholdChoice:
        """The threshold of this run as the model records it."""
        chosen = self.model.threshold
        if self.auto and chosen is not None:
            return chosen
        return ThresholdChoice(value=self.verifier.threshold, chosen="auto" if self.auto else "fixed")

    def threshold_report(self) -> dict[str, Any]:
        """The report's ``threshold`` section: the value pairs were kept at, and how it was chosen."""
        choice = self.threshold_choice()
        out: dict[str, Any] = {"value": choice.value, "chosen": choice.chosen}
        if choice.auto is not None:
            out["auto"] = choice.auto
        if self.model.origin != "fitted" and self.auto:
            out["from_model"] = self.model.origin
        return out

    def run_model(self, records: Records, candidates: int, training: dict[str, Any] | None) -> Model:
        """The model of this run: what it fitted (or the saved model it applied, unchanged), with the threshold
        used, the blockers' settings (the LSH bands and rows), what it was fitted on and the labels' digest."""
        names = records.source_names
        counts = np.bincount(np.asarray(records.source, dtype=np.int64), minlength=len(names))
        return self.model_of_counts(dict(zip(names, (int(c) for c in counts.tolist()))), candidates, training)

    def model_of_counts(self, per_source: dict[str, int], candidates: int, training: dict[str, Any] | None) -> Model:
        """:meth:`run_model` from the records per source (an executor that does not hold the records)."""
        if self.model.origin != "fitted":
            return self.model
        blocking = [{k: v for k, v in b.describe().items() if k in BLOCKING_KEYS} for b in self.blockers]
        fitted_on = {
            "records": int(sum(per_source.values())),
            "per_source": {nm: int(c) for nm, c in per_source.items()},
            "candidate_pairs": int(candidates),
        }
        trained = None
        if training and "sha256" in training:
            trained = {k: training[k] for k in ("file", "sha256", "matches", "non_matches", "prior") if k in training}
        return self.model.learned(threshold=self.threshold_choice(), blocking=blocking, fitted_on=fitted_on, training=trained)

    # ------------------------------------------------------------- capabilities

    def distribution(self, component: Component) -> str:
        """``"name (distribution version)"`` of the plugin that provided ``component``."""
        info = self.job.registry.components[component.family].get(component.name)
        if info is None:
            return repr(component.name)
        return f"{component.name!r} (plugin {info.plugin.name}, {info.plugin.distribution} {info.plugin.version})"

    def has_keys(self, blocker: Blocker) -> bool:
        """The blocker gives bucket ids (:class:`~er_framework.capabilities.Keyed`)."""
        return has(blocker, Keyed)

    def has_windows(self, blocker: Blocker) -> bool:
        """The blocker gives sort keys and a window (:class:`~er_framework.capabilities.Windowed`)."""
        return has(blocker, Windowed)

    def fits_codes(self) -> bool:
        """The verifier is fitted on counts of pair codes (:class:`~er_framework.capabilities.CodeFitted`)."""
        return has(self.verifier, CodeFitted)

    def learns(self) -> bool:
        """The verifier fits state from the run (:class:`~er_framework.capabilities.Learner`)."""
        return has(self.verifier, Learner)

    def verifier_state(self) -> dict[str, Any] | None:
        """The verifier's fitted state in the model, or None (not fitted yet, or nothing to fit)."""
        return self.model.verifier_state if self.learns() else None

    def lookup_refusals(self, scope: str = "item") -> list[str]:
        """Why the job cannot run one new item alone (``scope="item"``: an index) or partition by
        partition (``scope="partition"``: the Dask executor); empty: it can. Each line names the
        component, the reason and an alternative."""
        problems: list[str] = []
        partition = scope == "partition"
        keyed = [b for b in self.blockers if self.has_keys(b)]
        for b in self.blockers:
            if partition and not self.has_keys(b) and not self.has_windows(b):
                problems.append(
                    f"blocker {b.name!r} cannot block partition by partition (it has neither lookup_keys, "
                    "bucket ids, nor window_keys, a sort key: its candidates depend on the whole corpus in "
                    "another way); use lsh_bands, field_hash, grid_bits or sorted_neighbourhood, or executor: local"
                )
            elif not partition and not keyed:
                problems.append(
                    f"blocker {b.name!r} cannot look up a single item (it has no lookup_keys: "
                    "its candidates depend on the whole corpus, e.g. a sort order), and the job has no blocker "
                    "that can; add one of lsh_bands, field_hash or grid_bits"
                )
        if self.learns() and self.verifier_state() is None and partition and not self.fits_codes():
            problems.append(
                f"verifier {self.verifier.name!r} fits its weights on all pairs of a run and has no pair codes "
                "to fit on counts summed over the partitions; fit a model first (er train JOB --model FILE, "
                "then --model FILE), use a pairwise verifier (jaccard, field_score), or executor: local"
            )
        if not partition and self.auto and self.model.threshold is None:
            problems.append(
                "threshold: auto is chosen from the scores of a whole run's candidates; an index scores new pairs "
                "one at a time against a fixed number: build the index with the model of a run (--model FILE, "
                "which holds the chosen threshold) or set threshold to a number"
            )
        if not partition and self.job.spec.prune_shingles is not None and self.model.pruned is None:
            problems.append(
                "prune_shingles drops shingles by how many records of the whole corpus hold them; an index takes "
                "items one at a time: build it with the model of a run (--model FILE, which holds the dropped "
                "shingles), or remove prune_shingles from the job of the index"
            )
        if self.shingler is not None and has(self.shingler, WholeCorpus) and not has(self.shingler, Partitionable):
            # partitionable: a record's token set depends on that record alone, so one item or one
            # partition can be shingled by itself
            problems.append(
                f"shingler {self.shingler.name!r} needs every record at once (WholeCorpus, not "
                "Partitionable); it cannot shingle "
                + ("one partition at a time; use executor: local" if partition else "one item at a time")
            )
        return problems

    def unserved_blockers(self) -> list[str]:
        """The job's blockers an index cannot serve one item at a time (no lookup_keys: their candidates
        depend on the whole corpus), each with its reason; the other blockers serve the index's lookups."""
        return [
            f"blocker {b.name!r} is not used for new items: its candidates depend on the whole corpus "
            "(a sort order); the records it paired when the index was built stay paired"
            for b in self.blockers
            if not self.has_keys(b)
        ]

    def require_lookup(self, where: str, purpose: str, scope: str = "item") -> None:
        """Raise an error naming each component that cannot serve ``purpose`` item by item (or partition by partition)."""
        problems = self.lookup_refusals(scope)
        if problems:
            raise ErError([Problem(where=where, message=f"{purpose}: {m}") for m in problems])

    # ------------------------------------------------------------- per batch

    def batch(self, records: Records, tokens: bool, signatures: bool) -> Batch:
        """A batch of ``records`` with their token sets and/or signatures."""
        batch = Batch(records=records, cross_source_only=self.link, seed=self.job.context.seed)
        if self.shingler is None or not (tokens or signatures):
            return batch
        if not tokens and self.builder is not None and has(self.builder, MultisetSigning):
            # signatures only, from a builder taking minima: the unsorted multisets suffice
            batch.signatures = self.builder.build(multisets(self.shingler, records))
            return batch
        ts = self.shingler.shingle(records)
        batch.tokens = ts
        if signatures and self.builder is not None:
            batch.signatures = self.builder.build(ts)
        return batch

    def token_keep(self) -> str:
        """What the shingle stage keeps of the token sets, the one rule every executor follows.

        ``"all"``: the sets are built and kept (no signature builder, a blocker
        reads them, or the shingler needs every record at once); ``"none"``:
        the shingler's multisets are signed (the builder takes minima:
        :class:`~er_framework.capabilities.MultisetSigning`) and tokens are counted with repeats; ``"budget"``:
        the sets are built, signed, and kept while they fit in
        ``token_memory_mb`` (always with ``prune_shingles:``).
        """
        sh, builder = self.shingler, self.builder
        if sh is None or builder is None or has(sh, WholeCorpus) or any("tokens" in b.needs for b in self.blockers):
            return "all"
        # prune_shingles: the counting pass built the sets (kept while they fit), so sets are counted
        # everywhere (distinct shingles, the same report on every executor)
        return "none" if has(builder, MultisetSigning) and self.job.spec.prune_shingles is None else "budget"

    def signed_batch(self, records: Records) -> SignedBatch:
        """A batch of ``records`` with what the blockers read, each record's token count as the shingle
        stage counts it (:meth:`token_keep`: with repeats when multisets are signed, else distinct), and
        what shingling found: the tokens each record lost to pruning, the shingler's report of the call."""
        sh = self.shingler
        if sh is None:
            return SignedBatch(self.block_batch(records), np.zeros(0, dtype=np.int64))
        multiset = self.token_keep() == "none"
        lost: Int64Array | None = None
        if isinstance(sh, PrunedShingler):
            got, lost = sh.shingle_counted(records, multiset=multiset)
        else:
            got = shingle_with_report(sh, records, multiset=multiset)
        batch = Batch(records=records, cross_source_only=self.link, seed=self.job.context.seed)
        if not multiset:
            batch.tokens = got.tokens
        if self.builder is not None:
            batch.signatures = self.builder.build(got.tokens)
        return SignedBatch(batch, np.asarray(got.tokens.sizes, dtype=np.int64), lost, got.report)

    def block_batch(self, records: Records) -> Batch:
        """A batch of ``records`` with what the blockers read (token sets, signatures)."""
        return self.batch(records, tokens=any("tokens" in b.needs for b in self.blockers), signatures=True)

    def keys(self, records: Records, batch: Batch | None = None) -> tuple[Int64Array, Int64Array, Int64Array]:
        """``(rows, bucket ids, blocker number)`` of every record (one row per key).

        Two records are candidates exactly when they share a bucket id (and
        the bucket is within its blocker's cap): the index and the Dask
        executor block through these keys. Blockers that block by windows of
        a sort order instead (:meth:`window_keys`) are left out.
        """
        if batch is None:
            batch = self.block_batch(records)
        rows, keys, which = [], [], []
        for i, b in enumerate(self.blockers):
            keyed = ability(b, Keyed)
            if keyed is None and self.has_windows(b):
                continue
            got: Any = keyed.lookup_keys(batch) if keyed is not None else None
            if got is None:
                raise PluginError(Problem(where="blocker", message=f"blocker {self.distribution(b)} returned no lookup keys"))
            r, k = got
            k = np.asarray(k, dtype=np.uint64)
            if i:  # separate the key spaces of several blockers
                k = mix64(k ^ np.uint64(BLOCKER_SALT * i % (1 << 64)))
            rows.append(np.asarray(r, dtype=np.int64))
            keys.append(signed_keys(k))
            which.append(np.full(len(r), i, dtype=np.int64))
        if not rows:
            z = np.zeros(0, dtype=np.int64)
            return z, z, z
        return np.concatenate(rows), np.concatenate(keys), np.concatenate(which)

    def window_keys(self, batch: Batch) -> list[tuple[int, Int64Array, npt.NDArray[Any]]]:
        """``(blocker number, rows, sort keys)`` of every pass of the blockers that block by windows."""
        out: list[tuple[int, Int64Array, npt.NDArray[Any]]] = []
        for i, b in enumerate(self.blockers):
            windowed = ability(b, Windowed)
            if self.has_keys(b) or windowed is None:
                continue
            got: Any = windowed.window_keys(batch)
            if got is None:
                raise PluginError(Problem(where="blocker", message=f"blocker {self.distribution(b)} returned no window keys"))
            for rows, keys in got:
                if len(rows) != len(keys):
                    raise PluginError(
                        Problem(
                            where="blocker", message=f"blocker {self.distribution(b)} returned {len(keys)} window keys for {len(rows)} rows"
                        )
                    )
                out.append((i, np.asarray(rows, dtype=np.int64), keys))
        return out

    def caps(self) -> list[int | None]:
        """Each blocker's bucket-size cap (buckets over it produce no pairs)."""
        return [keyed.lookup_cap() if (keyed := ability(b, Keyed)) is not None else None for b in self.blockers]

    def score(self, records: Records, pairs: Pairs) -> npt.NDArray[np.float64]:
        """The verifier's scores of ``pairs`` (indices into ``records``) with the model's state, checked."""
        if len(pairs) == 0:
            return np.zeros(0, dtype=np.float64)
        batch = self.batch(records, tokens="tokens" in self.verifier.needs, signatures="signatures" in self.verifier.needs)
        return self.score_batch(batch, pairs)

    def score_batch(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
        """The verifier's scores of ``pairs`` of ``batch``, checked: a learner scores with the model's state
        (:meth:`~er_framework.capabilities.Learner.score_with`), which must be fitted already."""
        v = self.verifier
        if isinstance(v, Learner):
            state = self.model.verifier_state
            if state is None:
                raise ValueError(f"verifier {v.name!r} has no fitted state in the model: fit it first (the verify stage)")
            return self.checked_scores(v.score_with(batch, pairs, state), len(pairs))
        return self.checked_scores(v.score(batch, pairs), len(pairs))

    def codes(self, records: Records, pairs: Pairs) -> Int64Array:
        """A fitted verifier's codes of ``pairs`` (indices into ``records``), checked (:meth:`Verifier.pair_codes`)."""
        batch = self.batch(records, tokens="tokens" in self.verifier.needs, signatures="signatures" in self.verifier.needs)
        v = self.verifier
        got = v.pair_codes(batch, pairs) if isinstance(v, CodeFitted) else None
        out = np.asarray(got if got is not None else np.zeros(0), dtype=np.int64)
        if got is None or out.shape != (len(pairs),):
            raise PluginError(
                Problem(
                    where="verifier",
                    message=f"verifier {self.distribution(self.verifier)} returned "
                    f"{'no codes' if got is None else f'codes of shape {out.shape}'} for {len(pairs)} pairs",
                    fix="pair_codes returns one int64 code per pair, in the pairs' order",
                )
            )
        return out

    def labelled_codes(self, records: Records, labelled: LabelledPairs) -> LabelledCodes:
        """A fitted verifier's labelled pairs (indices into ``records``) as its fit takes them
        (:meth:`~er_framework.capabilities.CodeFitted.labelled_codes`), checked."""
        v = self.verifier
        assert isinstance(v, CodeFitted)
        batch = self.batch(records, tokens="tokens" in v.needs, signatures="signatures" in v.needs)
        got = v.labelled_codes(batch, labelled)
        if not isinstance(got, LabelledCodes) or np.shape(got.codes) != (len(labelled.pairs),):
            raise PluginError(
                Problem(
                    where="verifier",
                    message=f"verifier {self.distribution(v)}: labelled_codes gave {type(got).__name__}, not one code per labelled pair",
                    fix="labelled_codes returns LabelledCodes with one int64 code per labelled pair, in their order",
                )
            )
        return got

    def comparisons(self, batch: Batch, pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
        """The verifier's terms of every pair's score (:meth:`Verifier.comparisons`), checked: one value per
        pair in every column, ``score`` last. Empty when the verifier cannot explain its scores."""
        v = self.verifier
        if not isinstance(v, Explainable):
            return {}
        cols = v.comparisons(batch, pairs, self.verifier_state())
        bad = [name for name, col in cols.items() if np.shape(col) != (len(pairs),)]
        if bad or list(cols)[-1:] != ["score"]:
            raise PluginError(
                Problem(
                    where="verifier",
                    message=f"verifier {self.distribution(self.verifier)} returned comparisons "
                    f"{'with columns ' + str(bad) + ' not of one value per pair' if bad else 'without score as the last column'}",
                    fix="Verifier.comparisons returns named columns of one value per pair, score last",
                )
            )
        return {name: np.asarray(col) for name, col in cols.items()}

    def score_definition(self) -> dict[str, Any]:
        """What a pair's score is, in words, and the text or fields it is computed on (report.json ``score``)."""
        v = self.verifier
        out: dict[str, Any] = {"verifier": v.name, "meaning": v.summary}
        sh = self.base_shingler
        if sh is not None and "tokens" in v.needs:
            p = sh.params
            steps = [
                label
                for flag, label in (
                    ("nfkc", "NFKC"),
                    ("lowercase", "case-folded"),
                    ("remove_punctuation", "punctuation removed"),
                    ("fold_whitespace", "whitespace runs folded to one space"),
                )
                if getattr(p, flag, False)
            ]
            opts = {
                k: val
                for k, val in p.model_dump().items()
                if k not in ("fields", "lowercase", "nfkc", "fold_whitespace", "remove_punctuation", "preset")
            }
            text = (
                "the text as written"
                if not steps and hasattr(p, "lowercase")
                else ("the text " + ", ".join(steps) if steps else "the records")
            )
            out["tokens"] = f"{sh.name} shingles {opts} of {text}"
            if self.job.spec.prune_shingles is not None:
                out["tokens"] += "; shingles dropped by prune_shingles are in neither set"
        elif self.job.normalizers:
            out["fields"] = "the fields after normalize: " + ", ".join(sorted(self.job.normalizers))
        if self.collapse:
            how = "NFKC, case-folded, whitespace-folded text" if self.job.exact.normalize else "text as written"
            out["exact_copies"] = f"records with the same {how} are exact copies: score 1.0"
        return out

    def checked_scores(self, scores: Any, n_pairs: int) -> npt.NDArray[np.float64]:
        """A verifier's answer as float64, or a plugin error when it is not one score per pair."""
        out = np.asarray(scores, dtype=np.float64)
        if out.shape != (n_pairs,):
            raise PluginError(
                Problem(
                    where="verifier",
                    message=f"verifier {self.distribution(self.verifier)} returned scores of shape {out.shape} for {n_pairs} pairs",
                    fix="a verifier returns one float per pair, in the pairs' order",
                )
            )
        return out

    def checked_candidates(self, blocker: Blocker, pairs: Pairs, batch: Batch) -> Pairs:
        """A blocker's candidates, or a plugin error naming what breaks the contract.

        The contract (:class:`~er_framework.components.Blocker`): indices into
        the batch, ``left < right``, unique, sorted by ``(left, right)``, and
        in link mode only pairs of records from different sources. The engine
        does not repair a broken answer: a repaired bug stays hidden.
        """
        n = len(batch)
        wrong: list[str] = []
        if len(pairs):
            lo = int(min(pairs.left.min(), pairs.right.min()))
            hi = int(max(pairs.left.max(), pairs.right.max()))
            if lo < 0 or hi >= n:
                wrong.append(f"indices outside 0..{n - 1} (from {lo} to {hi})")
            elif not pairs.is_normalized():
                bad = int((pairs.left >= pairs.right).sum())
                wrong.append(
                    f"pairs not normalized ({bad} with left >= right; or duplicates or not sorted by (left, right))"
                    if bad
                    else "pairs duplicated or not sorted by (left, right)"
                )
            if not wrong and batch.cross_source_only:
                src = batch.records.source
                same = int((src[pairs.left] == src[pairs.right]).sum())
                if same:
                    wrong.append(f"{same} pairs of records from the same source in link mode")
        if wrong:
            raise PluginError(
                Problem(
                    where="blocker",
                    message=f"blocker {self.distribution(blocker)} broke the candidates contract: " + "; ".join(wrong),
                    fix="return Pairs(...).normalized() of batch indices (and in link mode drop same-source pairs, "
                    "e.g. batch.allowed(pairs)); er_framework.testing.check_blocker finds this",
                )
            )
        return pairs

    def describe(self, verifier_report: dict[str, Any] | None = None) -> dict[str, Any]:
        """The components' own reports (what ``report.json`` shows of each); ``verifier_report``: what the verifier's
        fit in this run said (a learner applying a saved model reports the model's weights instead)."""
        v = self.verifier
        fitted: dict[str, Any] = dict(verifier_report or {})
        state = self.verifier_state()
        if verifier_report is None and state is not None and isinstance(v, Learner):
            fitted = {**v.state_report(state), "model": self.model.origin}
        return {
            "shingler": self.shingler.describe() if self.shingler is not None else None,
            "signature": self.builder.describe() if self.builder is not None else None,
            "verifier": {**v.describe(), **fitted, "threshold": self.threshold},
            "clusterer": self.clusterer.describe(),
        }
