"""Base classes of the pluggable components.

A plugin hands the engine *classes* (see :mod:`er_framework.hookspecs`); the
engine picks one by its ``name`` from the YAML ``type:`` key, validates the
remaining keys against the class's ``Params`` model (pydantic, unknown keys
rejected) and instantiates it once per job. Components work on whole batches:
one call per stage, never one call per record.

:data:`FAMILIES` is the one table of the families: base class, registration
hook and the job key that names a member. The hook specifications, the
registry, the job validation, the JSON Schema and ``er plugins`` derive
theirs from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets

__all__ = [
    "Params",
    "Context",
    "Component",
    "Shingler",
    "SignatureBuilder",
    "Blocker",
    "Verifier",
    "Clusterer",
    "Normalizer",
    "FIELD_REF",
    "FieldRef",
    "FieldRefMarker",
    "Family",
    "FAMILIES",
]


class Params(BaseModel):
    """Base of every component's parameter model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


#: :class:`Params` under a name that the ``Params`` attribute of :class:`Component` does not shadow
_ParamsModel = Params


@dataclass(frozen=True)
class FieldRefMarker:
    """Marks a parameter (or an item of one) as the name of a source column: see :data:`FieldRef`."""

    def __repr__(self) -> str:
        return "FieldRef"


FIELD_REF = FieldRefMarker()

#: A parameter that names a column of the sources: ``field: FieldRef``,
#: ``fields: list[FieldRef]``, ``key: FieldRef | list[FieldRef]``,
#: ``prefix: dict[FieldRef, int]``, at any depth of nested models. Job
#: validation finds every value so typed (whatever the parameter's name) and
#: reports one the sources do not read, with its line and a suggestion.
FieldRef = Annotated[str, FIELD_REF]


@dataclass
class Context:
    """Job-level settings a component may read.

    ``seed`` is the job seed (a component may take its own ``seed``
    parameter instead); ``threshold`` is the job's similarity threshold when
    the YAML sets one; ``peers`` maps a family (``"signature"``,
    ``"shingler"``, ``"verifier"`` …) to that component's validated params, so
    that cross-component rules (``bands * rows <= num_perm``) can be checked
    before any data is read. ``workers`` is how many threads a component may
    use (:mod:`er_framework.kernels.parallel`); its output must not depend on it.
    """

    seed: int = 0
    threshold: float | None = None
    mode: str = "dedup"
    peers: dict[str, Params] = field(default_factory=dict)
    #: threads a component may use for its array work (results never depend on it)
    workers: int = 1


class Component:
    """Common shape of all components."""

    #: name used in YAML ``type:``
    name: ClassVar[str] = ""
    #: family the component belongs to (set by the family base class)
    family: ClassVar[str] = ""
    #: parameter model; the YAML keys besides ``type`` are validated against it
    Params: ClassVar[type[Params]] = Params
    #: one line shown by ``er plugins``
    summary: ClassVar[str] = ""

    def __init__(self, params: _ParamsModel | None = None, context: Context | None = None) -> None:
        self.params = params if params is not None else self.Params()
        self.context = context if context is not None else Context()

    @classmethod
    def check(cls, params: _ParamsModel, context: Context) -> list[str]:
        """Cross-field and cross-component rules; return one message per problem."""
        return []

    def describe(self) -> dict[str, Any]:
        """What the report should say about this component after the run."""
        return {"type": self.name, **self.params.model_dump(mode="json")}

    def job_default(self, name: str) -> Any:
        """The component's own parameter ``name`` when it sets one, else the job's setting of that name
        (:class:`Context`: ``seed``, ``threshold``); the one place of the "own, else the job's" rule."""
        own = getattr(self.params, name, None)
        return own if own is not None else getattr(self.context, name, None)

    @property
    def seed(self) -> int:
        return int(self.job_default("seed"))


class Shingler(Component):
    """Records -> one token set per record (CSR, sorted unique uint64 tokens).

    ``streamable`` (default true) lets the engine call :meth:`shingle` on
    consecutive chunks of the records and again on subsets (the records of
    candidate pairs, for verification): a record's token set must depend on
    that record alone. Set it to false for a shingler that needs all records
    at once (corpus statistics, a report over every record); it then gets
    one call with every record and its token sets are kept in memory.
    """

    family = "shingler"
    streamable: ClassVar[bool] = True
    #: with ``streamable = False``: true when a record's token set still depends
    #: on that record alone (the one call only serves the error messages and the
    #: report), so an executor may shingle partition by partition and combine
    #: the partitions' :meth:`partition_report` with :meth:`merge_reports`
    partitionable: ClassVar[bool] = False

    def shingle(self, records: Records) -> TokenSets:
        raise NotImplementedError

    def partition_report(self) -> dict[str, Any]:
        """What the last :meth:`shingle` call contributes to the run's report, in a form
        :meth:`merge_reports` combines (e.g. counts to sum). Default: nothing."""
        return {}

    def merge_reports(self, reports: list[dict[str, Any]]) -> None:
        """Make :meth:`describe` report the whole run from its partitions' :meth:`partition_report`
        (as if one call had seen every record). Default: nothing to combine."""

    def shingle_multiset(self, records: Records) -> TokenSets:
        """Every record's tokens in any order, repeats allowed (rows need not be sets).

        Its distinct tokens per row must equal :meth:`shingle`'s set. The
        engine signs these when the signature builder declares
        ``multiset_ok`` (a minimum over tokens ignores order and repeats) and
        no later stage needs every set: it skips the per-row sort. Default:
        :meth:`shingle` itself.
        """
        return self.shingle(records)


class SignatureBuilder(Component):
    """Token sets -> signatures (``(n, K)`` matrix or packed bits).

    A record's signature must depend on its token set alone: the engine
    builds signatures chunk by chunk and concatenates them.
    """

    family = "signature"
    #: true when the signature of a row depends only on its *distinct* tokens
    #: (order and repeats ignored, e.g. a minimum per hash function): the
    #: engine may then pass :meth:`Shingler.shingle_multiset` rows
    multiset_ok: ClassVar[bool] = False

    def build(self, tokens: TokenSets) -> Signatures:
        raise NotImplementedError


class Blocker(Component):
    """A batch -> candidate pairs (normalized; cross-source only in link mode).

    ``needs`` names what the blocker reads from the batch: ``"signatures"``,
    ``"tokens"`` or ``"fields"``; the engine runs the stages that provide it.
    """

    family = "blocker"
    needs: ClassVar[frozenset[str]] = frozenset()

    def candidates(self, batch: Batch) -> Pairs:
        raise NotImplementedError

    def lookup_keys(self, batch: Batch) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]] | None:
        """Bucket keys for a persistent index (``er index``): ``(rows, keys)``.

        Record ``rows[i]`` belongs to the bucket ``keys[i]`` (64-bit); two
        records are candidates of :meth:`candidates` exactly when they share a
        key (before the size cap of :meth:`lookup_cap`, and up to 64-bit hash
        collisions), so one new item can be looked up without the others.
        Keys of different bands or key fields must differ (mix the band into
        the key). ``None`` (default): this blocker cannot look up one item.
        """
        return None

    def lookup_cap(self) -> int | None:
        """Buckets with more members than this are skipped, as :meth:`candidates` skips them."""
        return None

    def partition_report(self, batch: Batch) -> dict[str, Any]:
        """What ``batch`` (one partition of a run blocked through :meth:`lookup_keys`) contributes to
        the report, in a form :meth:`merge_reports` combines (e.g. counts). Default: nothing."""
        return {}

    def merge_reports(self, reports: list[dict[str, Any]], buckets: dict[str, Any]) -> None:
        """Make :meth:`describe` report a run blocked through :meth:`lookup_keys`, as :meth:`candidates`
        would, from the partitions' :meth:`partition_report` and the statistics of every bucket:
        ``buckets`` (with 2 or more members), ``largest_bucket``, ``oversized_buckets`` (over
        :meth:`lookup_cap`) and the ``pairs_skipped`` there, ``raw_pairs`` of the kept ones (with
        repeats), ``distinct_pairs`` (the blocker's candidate pairs). With :meth:`lookup_groups`, also
        ``groups``: per group number a dict of ``distinct`` (buckets), ``buckets`` (2 or more members),
        ``largest_bucket``, ``pairs`` (of the kept buckets, cross-source only in link mode),
        ``oversized_buckets``, ``oversized_records``, ``oversized_pairs``; and ``oversized``: every
        oversized bucket of these groups as a dict of ``group``, ``size`` and ``record`` (a one-row
        :class:`Records`: the member first in the records' order). Default: nothing to combine."""

    def lookup_groups(self, batch: Batch) -> npt.NDArray[np.int64] | None:
        """The group (e.g. which of several keys) of every entry of :meth:`lookup_keys`, in its order,
        for the statistics per group that :meth:`merge_reports` receives. ``None`` (default): none."""
        return None

    def check_lookup_pairs(self, pairs: int, largest_bucket: int) -> None:
        """Raise the error :meth:`candidates` raises on buckets holding ``pairs`` pairs (counted with
        repeats, buckets over :meth:`lookup_cap` left out) whose largest has ``largest_bucket`` members
        (e.g. a limit on the pairs). An executor blocking through :meth:`lookup_keys` calls it on the
        sizes of every bucket before it makes any pair. Default: no limit."""

    def window_keys(self, batch: Batch) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[Any]]] | None:
        """Sort keys of a blocker that pairs records within a window of a sort order: one ``(rows, keys)`` per pass.

        Record ``rows[i]`` sorts by ``keys[i]`` (a numpy ``StringDType``
        array, compared in code-point order; a record missing from a pass is
        left out of its ``rows``). :meth:`candidates` must equal: per pass,
        the rows sorted by ``(key, row)``, each paired with the next
        ``window_size() - 1`` rows of that order (in link mode only the
        pairs of different sources), the passes unioned. A key depends on its
        record alone, so an executor can sort the records of many partitions
        together (sampled boundaries, sorted ranges, ``window_size() - 1``
        records carried into the next range). ``None`` (default): no windows.
        """
        return None

    def window_size(self) -> int:
        """The window of :meth:`window_keys`: a record is paired with the next ``window_size() - 1`` records."""
        raise NotImplementedError

    def check_window_pairs(self, rows_per_pass: list[int]) -> None:
        """Raise the error :meth:`candidates` raises when its window passes sort ``rows_per_pass`` records
        (one count per pass of :meth:`window_keys`; e.g. a limit on the pairs). An executor sorting
        through :meth:`window_keys` calls it on the counts of all partitions before it makes any pair.
        Default: no limit."""

    def diagnostics(self, batch: Batch, sample: int) -> dict[str, Any] | None:
        """Optional: evidence of how the blocker behaves (for the report), e.g. the
        measured candidate rate by exact-similarity bin against its theory.
        ``sample`` bounds the work (records probed). ``None``: nothing to show."""
        return None


class Verifier(Component):
    """Candidate pairs -> one float score per pair; the engine keeps ``score >= threshold``.

    Optional abilities are types of :mod:`er_framework.capabilities`: a
    :class:`~er_framework.capabilities.Learner` fits state from the run's
    candidates (kept in the job's model), a
    :class:`~er_framework.capabilities.CodeFitted` learner fits from counts
    of pair codes (partition by partition), a
    :class:`~er_framework.capabilities.Trainable` one learns from labelled
    pairs, an :class:`~er_framework.capabilities.Explainable` one breaks a
    score into its terms. A verifier without them scores a pair from its two
    records alone.
    """

    family = "verifier"
    needs: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def check(cls, params: Params, context: Context) -> list[str]:
        """A verifier with a ``threshold`` parameter needs it set, here or at the job's top level."""
        if "threshold" in type(params).model_fields and getattr(params, "threshold", None) is None and context.threshold is None:
            return [f"{cls.name} needs a threshold: set verifier.threshold or the top-level threshold"]
        return []

    @property
    def threshold(self) -> float:
        t = self.job_default("threshold")
        if t is None:
            raise ValueError(f"verifier {self.name!r} has no threshold")
        return float(t)

    def score(self, batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
        raise NotImplementedError


class Clusterer(Component):
    """Verified, scored pairs over ``n`` records -> a cluster label per record.

    Labels are int64, one per record; records without pairs get their own
    label (singletons). The engine renumbers labels canonically afterwards.
    """

    family = "clusterer"
    #: true when the clusterer's answer is a selection of the pairs (``one_to_one``: each record
    #: in at most one pair): the job's pairs table then lists the pairs inside a cluster (the
    #: final links) and the verified pairs before clustering go to ``verified_pairs``
    selects_pairs: ClassVar[bool] = False

    def cluster(self, n: int, pairs: Pairs) -> npt.NDArray[np.int64]:
        raise NotImplementedError


class Normalizer(Component):
    """Field values -> comparable keys, a column at a time (the job's ``normalize:`` section).

    Per field, a job names a chain of normalizers (``first_name: [name,
    nickname]``, ``phone: {type: phone, default_region: GB}``); the options
    besides ``type`` are the normalizer's ``Params``. The framework
    (:mod:`er_framework.normalize`) keeps missing values missing: ``None``,
    NaN, blanks and placeholders ("N/A", "null", "-") are never passed to a
    normalizer, and a result that is ``None``, empty or a placeholder is
    missing. It passes each *distinct* value once and maps the results back
    to every row.

    Implement one of:

    * :meth:`normalize` -- a batch: distinct non-missing strings in, one
      ``str`` (or ``None``: missing, e.g. a date that does not parse) out per
      value, in order;
    * :meth:`per_value` -- the function of one value: a chain of such
      normalizers then runs as one function per distinct value (no list per
      step), and :meth:`normalize` maps it over the batch.

    A result must depend on its value alone (the same value anywhere in any
    column gives the same key).
    """

    family = "normalizer"
    #: Python modules the normalizer imports: a job naming it when one is not
    #: installed is a config error with the ``pip install`` to run
    requires: ClassVar[tuple[str, ...]] = ()

    def normalize(self, values: list[str]) -> list[str | None]:
        """Distinct non-missing strings -> one key (or ``None``) per value, in order."""
        f = self.per_value()
        if f is None:
            raise NotImplementedError(f"{type(self).__qualname__} implements neither normalize() nor per_value()")
        return list(map(f, values))

    def per_value(self) -> Callable[[str], str | None] | None:
        """The function of one non-missing string, or ``None`` (default) when only :meth:`normalize` exists."""
        return None


@dataclass(frozen=True)
class Family:
    """One component family: its base class, its registration hook and where a job names its members.

    ``section`` is the job key naming one member (``shingler: {type: char}``);
    ``many`` the key of a list of them (``blockers: [...]``), if the family
    allows several; ``per_field`` families are named per source field
    (``normalize: {phone: [phone]}``, a chain of members per field).
    """

    name: str
    base: type[Component]
    hook: str
    section: str
    summary: str
    many: str | None = None
    per_field: bool = False

    def __post_init__(self) -> None:
        if self.base.family != self.name:
            raise TypeError(f"{self.base.__name__}.family is {self.base.family!r}, not {self.name!r}")

    @property
    def sections(self) -> tuple[str, ...]:
        """The job keys of this family."""
        return (self.section,) if self.many is None else (self.section, self.many)


#: The families, in pipeline order: the one table the others derive from.
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("normalizer", Normalizer, "er_register_normalizers", "normalize",
               "field values -> comparable keys (per field, a chain)", per_field=True),
        Family("shingler", Shingler, "er_register_shinglers", "shingler",
               "records -> token sets (CSR, uint64 tokens)"),
        Family("signature", SignatureBuilder, "er_register_signature_builders", "signature",
               "token sets -> signatures"),
        Family("blocker", Blocker, "er_register_blockers", "blocker",
               "a batch -> candidate pairs", many="blockers"),
        Family("verifier", Verifier, "er_register_verifiers", "verifier",
               "candidate pairs -> scores"),
        Family("clusterer", Clusterer, "er_register_clusterers", "cluster",
               "verified pairs -> a cluster label per record"),
    )
}
