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
from typing import Annotated, Any, ClassVar, Generic, cast

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets

__all__ = [
    "Params",
    "ParamsModel",
    "P",
    "Context",
    "Component",
    "Shingler",
    "SignatureBuilder",
    "Blocker",
    "Verifier",
    "Clusterer",
    "Normalizer",
    "GoldenRule",
    "GoldenValues",
    "FIELD_REF",
    "FieldRef",
    "FieldRefMarker",
    "Family",
    "FAMILIES",
]


class Params(BaseModel):
    """Base of every component's parameter model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)  # NaN, infinity: no setting's value


#: :class:`Params` under a name that the ``Params`` attribute of a component class does not shadow: the
#: type of the ``params`` argument of :meth:`Component.check` (a class method: it cannot name ``P``)
ParamsModel = Params

#: The type of a component's ``params``: ``class Prefix(Keyed, Blocker[PrefixParams])`` reads
#: ``self.params.length`` with no narrowing; a bare ``Blocker`` is ``Blocker[Params]``. Covariant, so that a
#: ``Blocker[PrefixParams]`` is a ``Blocker`` (the registration hooks return ``list[type[Blocker]]``):
#: nothing assigns ``params`` after ``__init__`` (and the models are frozen).
P = TypeVar("P", bound=Params, default=Params, covariant=True)


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
    #: the job's blocking keys as column lists (:meth:`Blocker.agreement_keys` of every blocker): a
    #: Fellegi-Sunter verifier trains m in sessions on the pairs agreeing on each
    blocking_keys: list[list[str]] = field(default_factory=list)


class Component(Generic[P]):
    """Common shape of all components.

    ``P`` is the type of :attr:`params`: declare it with the family base,
    ``class Prefix(Keyed, Blocker[PrefixParams])``, next to ``Params =
    PrefixParams`` (the model the engine validates the YAML keys against).
    """

    #: name used in YAML ``type:``
    name: ClassVar[str] = ""
    #: family the component belongs to (set by the family base class)
    family: ClassVar[str] = ""
    #: parameter model; the YAML keys besides ``type`` are validated against it
    Params: ClassVar[type[Params]] = Params
    #: one line shown by ``er plugins``
    summary: ClassVar[str] = ""

    def __init__(self, params: P | None = None, context: Context | None = None) -> None:
        #: the validated parameters, an instance of the class's ``Params`` model
        self.params: P = params if params is not None else cast(P, self.Params())
        self.context = context if context is not None else Context()

    @classmethod
    def check(cls, params: Any, context: Context) -> list[str]:
        """Cross-field and cross-component rules; return one message per problem.

        ``params`` is an instance of the class's own ``Params`` model (the job validated it against that model
        first), so an override declares that type: ``def check(cls, params: LshParams, context)``."""
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


class Shingler(Component[P]):
    """Records -> one token set per record (CSR, sorted unique uint64 tokens).

    The engine calls :meth:`shingle` on consecutive chunks of the records and
    again on subsets (the records of candidate pairs, for verification): a
    record's token set must depend on that record alone. A shingler that
    needs every record at once (corpus statistics, a report over every
    record) declares :class:`~er_framework.capabilities.WholeCorpus` (or
    :class:`~er_framework.capabilities.Partitionable`); its multisets are
    :class:`~er_framework.capabilities.Multiset` (see
    :mod:`er_framework.capabilities`).
    """

    family = "shingler"

    def shingle(self, records: Records) -> TokenSets:
        raise NotImplementedError


class SignatureBuilder(Component[P]):
    """Token sets -> signatures (``(n, K)`` matrix or packed bits).

    A record's signature must depend on its token set alone: the engine
    builds signatures chunk by chunk and concatenates them. A builder whose
    signature of a row depends only on its distinct tokens declares
    :class:`~er_framework.capabilities.MultisetSigning`.
    """

    family = "signature"

    def build(self, tokens: TokenSets) -> Signatures:
        raise NotImplementedError


class Blocker(Component[P]):
    """A batch -> candidate pairs (normalized; cross-source only in link mode).

    ``needs`` names what the blocker reads from the batch: ``"signatures"``,
    ``"tokens"`` or ``"fields"``; the engine runs the stages that provide it.
    Further abilities are types of :mod:`er_framework.capabilities`: a report
    with the pairs (:class:`~er_framework.capabilities.Reporting`), bucket keys
    for one item (:class:`~er_framework.capabilities.Keyed`), sort keys and a
    window (:class:`~er_framework.capabilities.Windowed`), evidence for the
    report (:class:`~er_framework.capabilities.Diagnostic`).
    """

    family = "blocker"
    needs: ClassVar[frozenset[str]] = frozenset()

    def candidates(self, batch: Batch) -> Pairs:
        raise NotImplementedError

    @classmethod
    def agreement_keys(cls, params: Any) -> list[list[str]]:
        """Column lists such that every pair of records equal on all the columns of one of them (after
        normalization) is a candidate, oversized buckets aside: exact blocking keys. Default: none (a
        blocker on similar, not equal, values). A learner uses them to pick pairs whose selection is
        known (:class:`er_plugins.fellegi_sunter.FellegiSunter`'s training sessions)."""
        return []


class Verifier(Component[P]):
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
    def check(cls, params: Any, context: Context) -> list[str]:
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


class Clusterer(Component[P]):
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


class Normalizer(Component[P]):
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
    column gives the same key). A value that is a JSON list (``'["a", "b"]'``:
    a Parquet or DataFrame list column) reaches the steps element by element,
    and its key is the JSON list of its elements' keys.
    """

    family = "normalizer"
    #: Python modules the normalizer imports: a job naming it when one is not
    #: installed is a config error with the ``pip install`` to run
    requires: ClassVar[tuple[str, ...]] = ()
    #: the normalizer turns a value into a list (a JSON list text, ``'["a", "b"]'``, such as ``split``):
    #: the chain's later steps then take its elements one by one, as they do a list column's values
    makes_lists: ClassVar[bool] = False

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
class GoldenValues:
    """One field's values over every cluster at once: what a :class:`GoldenRule` chooses from.

    Clusters are CSR: cluster ``c``'s records are the rows ``members[starts[c]:starts[c + 1]]``, in input
    order. The other arrays are indexed by row (``n`` records): ``values[r]`` is the value as read (a ``str``;
    ``None`` when missing: null, blank or a placeholder such as "N/A"), ``codes[r]`` the same value as an
    integer (equal values, equal codes; ``-1`` when missing), ``lengths[r]`` its characters (0 when missing),
    ``priority[r]`` the rank of the record's source (0: the most trusted; the field's ``order:``, else the
    sources' order in the job), ``dates[r]`` the record's ``by:`` field as a number (POSIX seconds for an ISO
    8601 date; NaN when missing or unparsable), or ``None`` when the field has no ``by:``.
    """

    starts: npt.NDArray[np.int64]
    members: npt.NDArray[np.int64]
    values: npt.NDArray[np.object_]
    codes: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    priority: npt.NDArray[np.int64]
    dates: npt.NDArray[np.float64] | None = None

    @property
    def clusters(self) -> int:
        return len(self.starts) - 1

    def cluster_of_members(self) -> npt.NDArray[np.int64]:
        """The cluster of each entry of :attr:`members`."""
        return np.repeat(np.arange(self.clusters, dtype=np.int64), np.diff(self.starts))

    def with_value(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The members that hold a value (code >= 0): each one's cluster and its row, in :attr:`members` order."""
        grp, rows = self.cluster_of_members(), self.members
        keep = self.codes[rows] >= 0
        return grp[keep], rows[keep]

    def best(self, score: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """Per cluster, the row with the highest ``score`` (one per row) among the rows with a value, or ``-1``
        when none has one: the tie rule of every built-in rule. Ties go to the more trusted source
        (:attr:`priority`), then to the first record in input order; a NaN score loses to any number."""
        out = np.full(self.clusters, -1, dtype=np.int64)
        grp, rows = self.with_value()
        if len(rows) == 0:
            return out
        s = np.asarray(score, dtype=np.float64)[rows]
        neg = np.where(np.isnan(s), np.inf, -s)
        order = np.lexsort((rows, self.priority[rows], neg, grp))
        grp, rows = grp[order], rows[order]
        first = np.ones(len(grp), dtype=bool)
        first[1:] = grp[1:] != grp[:-1]
        out[grp[first]] = rows[first]
        return out


class GoldenRule(Component[P]):
    """A field's values in each cluster -> the row whose value the golden record takes (``output.golden``).

    One call per field covers every cluster (:class:`GoldenValues`, CSR arrays): implement :meth:`choose`
    with array operations, never a Python loop over clusters (a job has up to millions).
    :meth:`GoldenValues.best` picks the best-scored row with the tie rule of the built-ins. The answer is
    one row per cluster, a member of that cluster whose value is present, or ``-1`` when no member has a
    value; it must depend on the cluster's members alone (not on the other clusters, not on the call).
    ``needs_by``: the rule reads :attr:`GoldenValues.dates` (the job then needs ``by:``).
    """

    family = "golden_rule"
    needs_by: ClassVar[bool] = False

    def choose(self, values: GoldenValues) -> npt.NDArray[np.int64]:
        raise NotImplementedError


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
    #: the YAML naming a member when the family is named inside another section (``section`` is then its
    #: dotted path): the generic component sections, their checks and their schema leave it to its own
    shape: str | None = None

    def __post_init__(self) -> None:
        if self.base.family != self.name:
            raise TypeError(f"{self.base.__name__}.family is {self.base.family!r}, not {self.name!r}")

    @property
    def sections(self) -> tuple[str, ...]:
        """The top-level job keys of this family (none when it is named inside another section)."""
        if self.shape is not None:
            return ()
        return (self.section,) if self.many is None else (self.section, self.many)


#: The families, in pipeline order: the one table the others derive from.
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "normalizer",
            Normalizer,
            "er_register_normalizers",
            "normalize",
            "field values -> comparable keys (per field, a chain)",
            per_field=True,
        ),
        Family("shingler", Shingler, "er_register_shinglers", "shingler", "records -> token sets (CSR, uint64 tokens)"),
        Family("signature", SignatureBuilder, "er_register_signature_builders", "signature", "token sets -> signatures"),
        Family("blocker", Blocker, "er_register_blockers", "blocker", "a batch -> candidate pairs", many="blockers"),
        Family("verifier", Verifier, "er_register_verifiers", "verifier", "candidate pairs -> scores"),
        Family("clusterer", Clusterer, "er_register_clusterers", "cluster", "verified pairs -> a cluster label per record"),
        Family(
            "golden_rule",
            GoldenRule,
            "er_register_golden_rules",
            "output.golden",
            "a cluster's values of a field -> the golden record's value",
            shape="output: {golden: {rule: NAME, fields: {FIELD: NAME or {rule: NAME, by: FIELD, order: [SOURCE, …]}}}}",
        ),
    )
}
