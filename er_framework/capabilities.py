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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.data import Batch, LabelledPairs, Pairs

__all__ = [
    "Fitted",
    "LabelledCodes",
    "Learner",
    "CodeFitted",
    "Explainable",
    "Trainable",
    "CAPABILITIES",
    "capabilities_of",
    "has",
]

Float64Array = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]


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

    def fit_score(
        self, batch: Batch, pairs: Pairs, labelled: LabelledPairs | None
    ) -> tuple[Float64Array, Fitted]:
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

    def fit_counts(
        self, codes: Int64Array, counts: Float64Array, sample_codes: Int64Array, sample_counts: Float64Array,
        labelled: LabelledCodes | None,
    ) -> tuple[Float64Array, Fitted]:
        """Fit on the distinct codes of all candidate pairs (sorted) with their counts, those of the
        :meth:`sample_pairs` and the labelled pairs' codes; the score of each of ``codes`` and the fit."""
        raise NotImplementedError

    def score_codes(self, codes: Int64Array, state: Mapping[str, Any]) -> Float64Array:
        """The score of each code under a fitted ``state``."""
        raise NotImplementedError


class Explainable:
    """Verifier ability: a pair's score broken into its terms (``er explain``, ``output: {comparisons: true}``).

    :meth:`comparisons` returns named columns of one value per pair, in
    display order, ``score`` last (the column conventions are listed there).
    A :class:`Learner` receives its fitted ``state``; others get ``None``.
    """

    def comparisons(
        self, batch: Batch, pairs: Pairs, state: Mapping[str, Any] | None = None
    ) -> dict[str, npt.NDArray[Any]]:
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
    """


#: every ability, by the name ``er plugins`` shows
CAPABILITIES: dict[str, type] = {
    "learner": Learner,
    "code_fitted": CodeFitted,
    "explainable": Explainable,
    "trainable": Trainable,
}


def has(component: object, capability: type) -> bool:
    """Whether ``component`` (an instance or a class) declares ``capability``."""
    cls = component if isinstance(component, type) else type(component)
    return issubclass(cls, capability)


def capabilities_of(component: object) -> list[str]:
    """The names of the abilities ``component`` (an instance or a class) declares, in :data:`CAPABILITIES` order."""
    return [name for name, cap in CAPABILITIES.items() if has(component, cap)]
