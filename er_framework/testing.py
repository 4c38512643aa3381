"""Contract checks a plugin author runs on a new component.

    from er_framework.testing import check_component, sample_records

    def test_my_shingler():
        check_component(MyShingler(), Batch(records=sample_records()))

    def test_my_blocker():
        check_component(MyBlocker(MyBlocker.Params(field="name")), Batch(records=my_records))

:func:`check_component` runs the check of the component's family
(:func:`check_shingler`, :func:`check_signature_builder`,
:func:`check_blocker`, :func:`check_verifier`, :func:`check_clusterer`,
:func:`check_normalizer`, :func:`check_golden_rule`) and, through it, the check of every ability it
declares (:mod:`er_framework.capabilities`; :func:`check_abilities` of
:mod:`er_framework.testing_abilities`: :func:`check_lookup_keys`,
:func:`check_window_keys`, :func:`check_reporting`, :func:`check_partitionable`,
…); a fitted verifier is checked by :func:`check_pair_codes`, an explainable
one by :func:`check_comparisons`. Each check takes a component instance (or
a class, built with its default parameters). They assert what the engine
relies on — the contract of :mod:`er_framework.components` and of the
abilities — and raise ``AssertionError`` with a message naming the rule that
broke and an example:

* shapes and dtypes, and determinism (same input -> identical output);
* the empty batch (no records, no pairs);
* a batch with inactive records (:attr:`Batch.active`): rows left out of the
  batch as the engine leaves out collapsed exact duplicates, so that the
  batch's row ``i`` is the job's record ``active[i]``. A component answers in
  batch rows; its answer must not change with ``active`` (the persistent
  index and the Dask executor build batches without it);
* batch-split invariance where the contract promises it (a streamed
  shingler's and every signature builder's rows depend on their own record
  alone; a ``pairwise`` verifier's score on the pair alone; a blocker's
  ``lookup_keys`` on the record alone);
* for blockers, the candidates contract the engine enforces (indices into the
  batch, ``left < right``, unique, sorted; in link mode only pairs across
  sources), in both modes, and, for a keyed blocker, that the records sharing
  a key are exactly its candidates;
* results are values: a reporting component's report is what its call
  returns, and a call leaves ``describe()`` as it was;
* for normalizers, what :mod:`er_framework.normalize` relies on: one ``str``
  or ``None`` per value, a key that depends on its value alone (not on the
  rest of the batch, its order or the instance), and the same answer from
  ``normalize`` and ``per_value``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import CodeFitted, Explainable, Fitted, Learner, WholeCorpus, has
from er_framework.components import (
    Blocker,
    Clusterer,
    Component,
    GoldenRule,
    GoldenValues,
    Normalizer,
    Shingler,
    SignatureBuilder,
    Verifier,
)
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets, pair_population
from er_framework.kernels.graph import canonical_labels
from er_framework.normalize import is_missing, normalize_column
from er_framework.testing_abilities import (
    check_abilities,
    check_diagnostic,
    check_grouped_keys,
    check_keyed_reports,
    check_lookup_keys,
    check_multiset,
    check_multiset_signing,
    check_partitionable,
    check_reporting,
    check_signature_screen,
    check_window_keys,
    pairs_in_windows,
    pairs_sharing_keys,
)
from er_framework.testing_support import (
    SHOWN,
    call_without_active,
    check_cross_source,
    check_pairs_contract,
    check_token_sets,
    empty_batch,
    inactive_batch,
    instance_of,
    same_pairs,
    sample_graph,
    sample_records,
)

__all__ = [
    "check_abilities",
    "check_learner",
    "check_comparisons",
    "check_blocker",
    "check_clusterer",
    "check_comparisons",
    "check_component",
    "check_diagnostic",
    "check_golden_rule",
    "check_grouped_keys",
    "check_keyed_reports",
    "check_lookup_keys",
    "check_multiset",
    "check_multiset_signing",
    "check_normalizer",
    "check_pair_codes",
    "check_partitionable",
    "check_reporting",
    "check_shingler",
    "check_signature_builder",
    "check_signature_screen",
    "check_verifier",
    "check_window_keys",
    "pairs_in_windows",
    "pairs_sharing_keys",
    "sample_golden_values",
    "sample_graph",
    "sample_records",
    "sample_values",
]

Int64Array = npt.NDArray[np.int64]


# ---------------------------------------------------------------- shinglers


def check_shingler(shingler: Shingler | type[Shingler], records: Records | None = None) -> TokenSets:
    """Shapes/dtypes, sorted unique rows, empty batch, determinism; split and subset invariance unless it is
    :class:`~er_framework.capabilities.WholeCorpus` (a record's tokens depend on that record alone); the
    checks of its abilities (multisets, partitions)."""
    shingler = instance_of(shingler, Shingler)
    records = records if records is not None else sample_records()
    who = f"shingler {shingler.name!r}"
    n = len(records)
    ts = shingler.shingle(records)
    check_token_sets(ts, n, who)
    empty = shingler.shingle(records.take(np.zeros(0, dtype=np.int64)))
    check_token_sets(empty, 0, who + " (empty batch)")
    assert shingler.shingle(records).equals(ts), f"{who} is not deterministic: two calls on one batch differ"
    kept = np.flatnonzero(np.arange(n) % 3 != 0)
    sub = shingler.shingle(records.take(kept))
    check_token_sets(sub, len(kept), who + " (records 0, 3, 6 … left out)")
    if not has(shingler, WholeCorpus):  # streamed: a record's tokens depend on that record alone
        half = n // 2
        parts = TokenSets.concat([shingler.shingle(records.take(np.arange(half))), shingler.shingle(records.take(np.arange(half, n)))])
        assert parts.equals(ts), (
            f"{who}: shingling two halves differs from shingling the whole batch; a streamed shingler's "
            "tokens must depend on the record alone (or declare WholeCorpus)"
        )
        assert sub.equals(ts.take(kept)), (
            f"{who}: the token sets of records 1, 2, 4, 5 … shingled without records 0, 3, 6 … differ; a "
            "streamed shingler's tokens must depend on the record alone (or declare WholeCorpus)"
        )
    check_abilities(shingler, Batch(records=records))
    return ts


# ---------------------------------------------------------------- signature builders


# ---------------------------------------------------------------- signature builders


def _check_signatures(sig: Signatures, tokens: TokenSets, who: str) -> None:
    assert isinstance(sig, Signatures), f"{who} must return Signatures, got {type(sig).__name__}"
    assert sig.values.shape[0] == len(tokens), f"{who}: {sig.values.shape[0]} rows for {len(tokens)} sets"
    assert sig.values.dtype in (np.uint32, np.uint64), f"{who}: values must be uint32/uint64, got {sig.values.dtype}"
    assert sig.empty is not None and np.array_equal(sig.empty, tokens.sizes == 0), f"{who}: 'empty' must flag empty sets"


def check_signature_builder(builder: SignatureBuilder | type[SignatureBuilder], tokens: TokenSets) -> Signatures:
    """2-D signatures, one row per set, empty sets flagged, deterministic; a row depends on its set
    alone (two halves, rows left out); the empty batch; the checks of its abilities (multisets)."""
    builder = instance_of(builder, SignatureBuilder)
    who = f"signature builder {builder.name!r}"
    sig = builder.build(tokens)
    _check_signatures(sig, tokens, who)
    again = builder.build(tokens)
    assert np.array_equal(again.values, sig.values), f"{who} is not deterministic: two calls on one batch differ"
    n = len(tokens)
    half = n // 2
    a = builder.build(tokens.take(np.arange(half)))
    b = builder.build(tokens.take(np.arange(half, n)))
    assert np.array_equal(np.concatenate([a.values, b.values]), sig.values), (
        f"{who}: not batch-split invariant (signing two halves differs from signing the whole batch); "
        "a record's signature must depend on its token set alone"
    )
    kept = np.flatnonzero(np.arange(n) % 3 != 0)
    sub = builder.build(tokens.take(kept))
    _check_signatures(sub, tokens.take(kept), who + " (sets 0, 3, 6 … left out)")
    assert np.array_equal(sub.values, sig.values[kept]), (
        f"{who}: the signatures of sets 1, 2, 4, 5 … signed without sets 0, 3, 6 … differ; "
        "a record's signature must depend on its token set alone"
    )
    e = builder.build(tokens.take(np.zeros(0, dtype=np.int64)))
    assert isinstance(e, Signatures) and e.values.shape[0] == 0, f"{who}: empty batch must give 0 rows"
    check_abilities(builder, Batch(records=Records.from_columns([f"r{i}" for i in range(n)], {}), tokens=tokens))
    return sig


# ---------------------------------------------------------------- blockers


def _blocker_contract(blocker: Blocker, batch: Batch, who: str) -> Pairs:
    pairs = blocker.candidates(batch)
    check_pairs_contract(pairs, len(batch), who)
    check_cross_source(pairs, batch, who)
    assert same_pairs(blocker.candidates(batch), pairs), f"{who} is not deterministic: two calls on one batch differ"
    empty = blocker.candidates(empty_batch(batch))
    check_pairs_contract(empty, 0, who + " (empty batch)")
    assert len(empty) == 0, f"{who}: the empty batch must give no pairs"
    if len(batch) >= 2:
        _, sub = inactive_batch(batch)
        where = f"{who} (batch of records 1, 2, 4, 5 …; active = {np.asarray(sub.active).tolist()[:6]} …)"
        got = blocker.candidates(sub)
        check_pairs_contract(got, len(sub), where)
        check_cross_source(got, sub, where)
        plain = call_without_active(who, blocker.candidates, sub)
        assert same_pairs(got, plain), (
            f"{where}: the candidates change with batch.active ({len(got)} pairs with it, {len(plain)} without); "
            "a blocker returns rows of the batch (0..len(batch)-1), never batch.active's record indices"
        )
    return pairs


def check_blocker(blocker: Blocker | type[Blocker], batch: Batch) -> Pairs:
    """The candidates contract the engine enforces, in both modes; empty batch; inactive records; lookup keys.

    ``batch`` is checked as given and with ``cross_source_only`` flipped (a
    job's mode picks either): int64 indices into the batch, ``left < right``,
    unique, sorted by ``(left, right)``, no same-source pair in link mode,
    deterministic, an empty batch gives no pairs, and a batch with inactive
    records (every third row left out, ``active`` set to the remaining rows'
    record indices) gives rows of that batch, the same with or without ``active``.
    Then the checks of its abilities (:func:`check_abilities`: a keyed
    blocker's :func:`check_lookup_keys`, a windowed one's
    :func:`check_window_keys`, :func:`check_reporting` …). Returns the
    candidates of ``batch``.
    """
    blocker = instance_of(blocker, Blocker)
    who = f"blocker {blocker.name!r}"
    flipped = dataclasses.replace(batch, cross_source_only=not batch.cross_source_only)
    mode = " (link mode)" if flipped.cross_source_only else " (dedup mode)"
    _blocker_contract(blocker, flipped, who + mode)
    check_abilities(blocker, batch)
    pairs = _blocker_contract(blocker, batch, who)
    final = blocker.candidates(batch)
    assert same_pairs(final, pairs), f"{who} is not deterministic: calls on one batch differ"
    return final


# ---------------------------------------------------------------- verifiers


def _scores(verifier: Verifier, batch: Batch, pairs: Pairs, who: str) -> npt.NDArray[np.float64]:
    raw = np.asarray(verifier.score(batch, pairs))
    assert raw.shape == (len(pairs),), f"{who}: {raw.shape} scores for {len(pairs)} pairs (one score per pair)"
    assert raw.dtype.kind in "fiu", f"{who}: scores must be float64, got {raw.dtype}"
    scores = raw.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(scores))
    assert len(bad) == 0, f"{who}: scores must be finite, got {scores[bad[0]]} for pair ({pairs.left[bad[0]]}, {pairs.right[bad[0]]})"
    return scores


def _close(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-12))


def check_verifier(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
    """One finite float score per pair, deterministic, symmetric in (left, right); the empty batch and
    empty pairs; a batch with inactive records; a pair's score does not depend on the other pairs or
    records (for a :class:`~er_framework.capabilities.Learner`: given its fitted state, through
    ``score_with``; the learner checks of :func:`check_learner` run too); the checks of its abilities. The
    last call scores no pairs of ``batch``."""
    verifier = instance_of(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    scores = _scores(verifier, batch, pairs, who)
    assert np.array_equal(_scores(verifier, batch, pairs, who), scores), f"{who} is not deterministic"
    swapped = _scores(verifier, batch, Pairs(pairs.right, pairs.left), who)
    assert np.allclose(swapped, scores), f"{who}: score(a, b) != score(b, a)"
    score: Callable[[Batch, Pairs, str], npt.NDArray[np.float64]] = partial(_scores, verifier)
    if isinstance(verifier, Learner):
        state = check_learner(verifier, batch, pairs)
        learner = verifier
        score = lambda b, p, w: _checked(learner.score_with(b, p, state), p, w)  # noqa: E731
    m = len(pairs)
    if m >= 2:
        half = m // 2
        first = score(batch, pairs.select(np.arange(m) < half), who)
        second = score(batch, pairs.select(np.arange(m) >= half), who)
        assert _close(np.concatenate([first, second]), scores), (
            f"{who}: scoring the pairs in two halves gives other scores; a pair's score depends on the pair "
            "alone (a verifier that learns from all pairs is a Learner: its state is fitted once, then applied)"
        )
        involved = np.unique(np.concatenate([pairs.left, pairs.right]))
        local = Pairs(np.searchsorted(involved, pairs.left), np.searchsorted(involved, pairs.right))
        assert _close(score(batch.subset(involved), local, who), scores), (
            f"{who}: scores change when the batch holds only the pairs' records; a pair's score depends on "
            "its two records alone (and a Learner's fitted state)"
        )
    if len(batch) >= 2:
        kept, sub = inactive_batch(batch)
        inside = np.isin(pairs.left, kept) & np.isin(pairs.right, kept)
        local = Pairs(np.searchsorted(kept, pairs.left[inside]), np.searchsorted(kept, pairs.right[inside]))
        where = f"{who} (batch of records 1, 2, 4, 5 …, with active)"
        got = score(sub, local, where)
        plain = call_without_active(who, verifier.score, sub, local)
        if not isinstance(verifier, Learner):
            assert _close(np.asarray(plain, dtype=np.float64), got), f"{where}: the scores change with batch.active"
        assert _close(got, scores[inside]), (
            f"{where}: scores differ from the same pairs scored in the whole batch; a pair's score depends "
            "on its two records alone (pairs hold rows of the batch, not batch.active's indices)"
        )
    no_records = _scores(verifier, empty_batch(batch), Pairs.empty(), who + " (empty batch)")
    assert no_records.shape == (0,)
    empty = _scores(verifier, batch, Pairs.empty(), who + " (no pairs)")
    assert empty.shape == (0,), f"{who}: empty pairs must give 0 scores"
    check_abilities(verifier, batch, pairs)
    if isinstance(verifier, CodeFitted):  # the verifier's own abilities (checked here, beside score)
        check_pair_codes(verifier, batch, pairs)
    if isinstance(verifier, Explainable):
        check_comparisons(verifier, batch, pairs)
    return scores


def _checked(raw: Any, pairs: Pairs, who: str) -> npt.NDArray[np.float64]:
    out = np.asarray(raw, dtype=np.float64)
    assert out.shape == (len(pairs),), f"{who}: {out.shape} scores for {len(pairs)} pairs (one score per pair)"
    assert bool(np.all(np.isfinite(out))), f"{who}: scores must be finite"
    return out


def check_learner(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> dict[str, Any]:
    """A :class:`~er_framework.capabilities.Learner`'s fit is a value: ``fit_score`` gives ``score``'s scores
    and a JSON-serializable state; ``score_with`` that state (also after a JSON round trip, and on a new
    instance: nothing is kept on the component) gives the same scores; the instance is unchanged by the
    calls. Returns the state."""
    verifier = instance_of(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    assert isinstance(verifier, Learner), f"{who} is not a Learner"
    before = dict(vars(verifier))
    scores, fitted = verifier.fit_score(batch, pairs, None)
    scores = _checked(scores, pairs, who + " (fit_score)")
    assert isinstance(fitted, Fitted), f"{who}: fit_score must return (scores, Fitted)"
    assert _close(scores, _scores(verifier, batch, pairs, who)), f"{who}: fit_score's scores differ from score()"
    state: dict[str, Any] = json.loads(json.dumps(fitted.state))
    assert state == fitted.state, f"{who}: the fitted state does not survive a JSON round trip (a model file)"
    assert dict(vars(verifier)) == before, (
        f"{who}: fitting changed the instance's attributes {sorted(set(vars(verifier)) ^ set(before))}; what a "
        "component learns is returned (Fitted), never kept on it"
    )
    if len(pairs):
        fresh = type(verifier)(verifier.params, verifier.context)
        assert isinstance(fresh, Learner)
        again = _checked(fresh.score_with(batch, pairs, state), pairs, who + " (score_with)")
        assert _close(again, scores), f"{who}: score_with(the fitted state) on a new instance gives other scores than the fit"
    return state


def check_pair_codes(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> npt.NDArray[np.float64]:
    """A :class:`~er_framework.capabilities.CodeFitted` verifier's ``pair_codes`` / ``sample_pairs`` /
    ``fit_counts`` / ``score_codes`` give its ``score``.

    One int64 code per pair, the same when the pairs are coded in two halves or
    in a batch of their records only (a code depends on the pair's two
    records alone); ``sample_pairs`` the same for the same sources, with rows
    in range; and ``score(batch, pairs)`` equal to the partitioned path: the
    distinct codes and their counts, the sample pairs' likewise,
    ``fit_counts`` on them, each pair's score looked up by its code (what
    the Dask executor does); ``score_codes`` with the fitted state gives the
    same table. Returns the scores.
    """
    verifier = instance_of(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    assert isinstance(verifier, CodeFitted), f"{who} is not CodeFitted"
    fitter = verifier
    m = len(pairs)

    def codes_of(b: Batch, p: Pairs) -> Int64Array:
        out = np.asarray(fitter.pair_codes(b, p))
        assert out.shape == (len(p),) and out.dtype.kind in "iu", (
            f"{who}: pair_codes must give one integer code per pair, got {out.dtype} {out.shape} for {len(p)} pairs"
        )
        return out.astype(np.int64)

    codes = codes_of(batch, pairs)
    if m >= 2:
        half = np.arange(m) < m // 2
        parts = np.concatenate([codes_of(batch, pairs.select(half)), codes_of(batch, pairs.select(~half))])
        involved = np.unique(np.concatenate([pairs.left, pairs.right]))
        local = Pairs(np.searchsorted(involved, pairs.left), np.searchsorted(involved, pairs.right))
        assert np.array_equal(parts, codes) and np.array_equal(codes_of(batch.subset(involved), local), codes), (
            f"{who}: the codes of the pairs change with the other pairs or records; a code depends on the pair's two records alone"
        )
    source = batch.records.source
    sample = fitter.sample_pairs(source, batch.cross_source_only)
    again = fitter.sample_pairs(source, batch.cross_source_only)
    assert same_pairs(sample, again), f"{who}: sample_pairs differ between two calls on the same sources"
    n = len(batch)
    assert len(sample) == 0 or (
        int(min(sample.left.min(), sample.right.min())) >= 0 and int(max(sample.left.max(), sample.right.max())) < n
    ), f"{who}: sample_pairs holds rows outside 0..{n - 1}"
    scores = _scores(verifier, batch, pairs, who)
    uniq, counts = np.unique(codes, return_counts=True)
    s_uniq, s_counts = np.unique(codes_of(batch, sample) if len(sample) else np.zeros(0, np.int64), return_counts=True)
    # counts over the records (when the fit takes them) in two parts, as an executor's partitions give them
    half = np.arange(n) < n // 2
    halves = [fitter.record_counts(batch.subset(np.flatnonzero(h))) for h in (half, ~half)] if fitter.needs_record_counts() else []
    raw, fitted = fitter.fit_counts(
        uniq.astype(np.int64),
        counts.astype(np.float64),
        s_uniq.astype(np.int64),
        s_counts.astype(np.float64),
        None,
        population=pair_population(source, bool(batch.cross_source_only)),
        record_counts=[c for c in halves if c is not None] or None,
    )
    table = np.asarray(raw, dtype=np.float64)
    assert table.shape == uniq.shape, f"{who}: fit_counts must give one score per distinct code ({len(uniq)})"
    via_codes = table[np.searchsorted(uniq, codes)] if m else np.zeros(0)
    if fitter.scores_by_records(fitted.state) and m:
        via_codes = np.asarray(cast(Learner, verifier).score_with(batch, pairs, fitted.state), dtype=np.float64)
    assert np.array_equal(via_codes, scores), (
        f"{who}: score() differs from fit_counts on the codes' counts and the records' counts in two parts, looked "
        "up by code (or scored by score_with when the state scores by the records); an executor working partition "
        "by partition scores so"
    )
    if m:
        applied = np.asarray(fitter.score_codes(uniq.astype(np.int64), fitted.state), dtype=np.float64)
        assert np.array_equal(applied, table), f"{who}: score_codes(the fitted state) differs from fit_counts' table"
    return scores


def check_comparisons(verifier: Verifier | type[Verifier], batch: Batch, pairs: Pairs) -> dict[str, npt.NDArray[Any]]:
    """An :class:`~er_framework.capabilities.Explainable` verifier's ``comparisons`` (the terms behind ``er
    explain``, comparisons.csv and the report's waterfalls): one value per pair in every column, ``score``
    last and equal to ``score()``; the terms add up (``prior_weight`` + every ``weight_*`` = ``match_weight``,
    whose 2**w / (1 + 2**w) is the score; or the ``points_*`` sum to the score; or ``shared / (shared +
    left_only + right_only)`` is the score); a new instance given the same state (a Learner's fitted
    state, else None) gives the same terms. Returns the columns."""
    verifier = instance_of(verifier, Verifier)
    who = f"verifier {verifier.name!r}"
    assert isinstance(verifier, Explainable), f"{who} is not Explainable (er_framework.capabilities)"
    scores = _scores(verifier, batch, pairs, who)
    state = verifier.fit_score(batch, pairs, None)[1].state if isinstance(verifier, Learner) else None
    cols = verifier.comparisons(batch, pairs, state)
    names = list(cols)
    assert names and names[-1] == "score", f"{who}: comparisons must end with the column 'score', got {names}"
    for name, col in cols.items():
        assert np.shape(col) == (len(pairs),), f"{who}: comparisons column {name!r} has shape {np.shape(col)}"
    assert _close(np.asarray(cols["score"], dtype=np.float64), scores), f"{who}: comparisons' score differs from score()"
    weights = [n for n in names if n.startswith("weight_")]
    points = [n for n in names if n.startswith("points_")]
    if "prior_weight" in cols:
        total = np.asarray(cols["prior_weight"], dtype=np.float64) + sum(
            (np.asarray(cols[n], dtype=np.float64) for n in weights), np.zeros(len(pairs))
        )
        assert np.allclose(total, np.asarray(cols["match_weight"], dtype=np.float64), atol=1e-9), (
            f"{who}: prior_weight + the weight_* columns differ from match_weight"
        )
        assert np.allclose(1.0 / (1.0 + np.exp2(-total)), scores, atol=1e-9), (
            f"{who}: 2**match_weight / (1 + 2**match_weight) differs from the score"
        )
    elif points:
        total = sum((np.nan_to_num(np.asarray(cols[n], dtype=np.float64)) for n in points), np.zeros(len(pairs)))
        assert np.allclose(total, scores, atol=1e-9), f"{who}: the points_* columns do not sum to the score"
    elif "shared" in cols:
        union = (np.asarray(cols["shared"]) + np.asarray(cols["left_only"]) + np.asarray(cols["right_only"])).astype(float)
        jac = np.divide(np.asarray(cols["shared"], dtype=float), union, out=np.zeros(len(pairs)), where=union > 0)
        assert np.allclose(jac, scores, atol=1e-12), f"{who}: shared / (shared + left_only + right_only) is not the score"
    fresh = type(verifier)(verifier.params, verifier.context)
    assert isinstance(fresh, Explainable)
    again = fresh.comparisons(batch, pairs, state)
    assert list(again) == names and all(
        np.allclose(np.asarray(again[n], dtype=float), np.asarray(cols[n], dtype=float), equal_nan=True) for n in names
    ), f"{who}: a new instance given the same state gives other comparisons (nothing may be kept on the component)"
    return cols


# ---------------------------------------------------------------- clusterers


def _labels(clusterer: Clusterer, n: int, pairs: Pairs, who: str) -> Int64Array:
    raw = clusterer.cluster(n, pairs)
    labels = np.asarray(raw)
    assert labels.shape == (n,), f"{who} returned labels of shape {labels.shape} for {n} records (one label per record)"
    assert labels.dtype.kind in "iu", f"{who}: labels must be integers (int64), got {labels.dtype}"
    return labels


def check_clusterer(clusterer: Clusterer | type[Clusterer], n: int | None = None, pairs: Pairs | None = None) -> Int64Array:
    """The :class:`Clusterer` contract on scored pairs over ``n`` records (default :func:`sample_graph`).

    One integer label per record; records without pairs are singletons (a
    label of their own); deterministic (again, and with a fresh instance of
    the same parameters); the partition does not depend on the order of the
    input pairs; no records and no pairs give empty labels resp. all
    singletons. Labels are compared as partitions (the engine renumbers
    them). Pairs of one component may be split (community detection does).
    """
    clusterer = instance_of(clusterer, Clusterer)
    who = f"clusterer {clusterer.name!r}"
    if pairs is None:
        n, pairs = sample_graph() if n is None else (n, Pairs.empty(scored=True))
    assert n is not None, "give n with pairs"
    labels = _labels(clusterer, n, pairs, who)
    partition = canonical_labels(labels)
    lonely = np.setdiff1d(np.arange(n), np.concatenate([pairs.left, pairs.right]))
    counts = np.bincount(partition, minlength=1)
    shared = lonely[counts[partition[lonely]] > 1]
    if len(shared):
        r = int(shared[0])
        others = [int(x) for x in np.flatnonzero(partition == partition[r]) if x != r]
        raise AssertionError(
            f"{who}: records without pairs must be singletons: record {r} shares label {labels[r]} with "
            f"record(s) {others[:8]} ({len(shared)} such records)"
        )
    assert np.array_equal(canonical_labels(_labels(clusterer, n, pairs, who)), partition), (
        f"{who} is not deterministic: two calls on the same pairs give other clusters"
    )
    fresh = type(clusterer)(clusterer.params, clusterer.context)
    assert np.array_equal(canonical_labels(_labels(fresh, n, pairs, who)), partition), (
        f"{who} is not deterministic: a new instance with the same parameters gives other clusters"
    )
    rng = np.random.default_rng(0)
    for attempt in range(3):
        order = rng.permutation(len(pairs))
        shuffled = Pairs(pairs.left[order], pairs.right[order], None if pairs.score is None else pairs.score[order])
        got = canonical_labels(_labels(clusterer, n, shuffled, who))
        assert np.array_equal(got, partition), (
            f"{who}: the clusters depend on the order of the input pairs (shuffle {attempt + 1} differs at records "
            f"{np.flatnonzero(got != partition)[:8].tolist()})"
        )
    none = _labels(clusterer, 0, Pairs.empty(scored=True), who + " (no records)")
    assert none.shape == (0,)
    alone = _labels(clusterer, n, Pairs.empty(scored=True), who + " (no pairs)")
    assert len(np.unique(alone)) == n, (
        f"{who}: without pairs every record must be a singleton, got {len(np.unique(alone))} labels for {n} records"
    )
    return labels


# ---------------------------------------------------------------- normalizers

_VALUES: list[Any] = [
    # names (titles, accents, apostrophes, nicknames, order, case)
    "Anna Smith", "anna  SMITH", "Smith, Anna", "Dr. José Álvarez-Núñez Jr.", "O'Brien, Seán", "Bob", "Mr.",
    "Robert 'Bob' Jones", "Zoë Saldaña", "Ærøskøbing", "Łódź", "İstanbul", "straße", "ﬁne ligature", "ǅemal",
    "北京市", "Москва", "Zo\u200be", "\U0001f40d python",
    # whitespace
    "  padded  ", "tab\tand\nnewline", "\u00a0no-break\u2003em space\u3000",
    # digits and phones
    "12345", "٣٤٥٦٧", "+1 (555) 010-9999 ext. 12", "555.010.9999", "+44 20 7946 0958", "000-000-0000", "#42",
    # e-mail-like
    "Anna.Smith+tag@GMail.com", "mailto:bob@example.org", "two@at@signs", "no at sign", "a@b",
    # date-like
    "1980-03-05", "05/03/1980", "March 5, 1980", "19800305", "31/02/1999", "2024-13-45", "5th of Mar 1980 10:30",
    # addresses
    "123 North Main Street, Apt #4", "P.O. Box 17", "1 Saint Paul Ave. Suite 5",
    # repeated values, and missing ones (never given to a normalizer)
    "Anna Smith", "12345", None, "", "   ", "N/A", "null", "-",
]  # fmt: skip

#: missing column values :func:`check_normalizer` adds to the column it runs through :func:`normalize_column`
_MISSING: list[Any] = [None, float("nan"), "", " \t\n", "N/A", "NULL", "--"]


def sample_values() -> list[Any]:
    """Varied field values for :func:`check_normalizer`: names (titles, accents, apostrophes, non-Latin
    scripts, a zero-width space, an emoji), whitespace, digits and phones, e-mail-like, date-like and
    address-like strings, repeated values, and missing ones (``None``, ``""``, blanks, ``"N/A"``)."""
    return list(_VALUES)


def _as_input(value: Any) -> str | None:
    """What :mod:`er_framework.normalize` gives a normalizer for the column value ``value``.

    ``None`` when the value is missing (``None``, NaN, blank or a placeholder:
    never given to a normalizer); otherwise the value, ``str(value)`` if not a string.
    """
    if is_missing(value):
        return None
    s = value if isinstance(value, str) else str(value)
    return None if is_missing(s) else s


def _as_key(result: str | None) -> str | None:
    """A normalizer's result as the machinery reads it: ``None``, ``""``, blanks and placeholders are missing."""
    return None if result is None or is_missing(result) else str(result)


def _few(values: list[str]) -> str:
    more = f" (and {len(values) - SHOWN} more)" if len(values) > SHOWN else ""
    return ", ".join(map(repr, values[:SHOWN])) + more


def _normalized(n: Normalizer, values: list[str], who: str) -> list[str | None]:
    """``n.normalize(values)``, its shape and types checked; an exception is a contract failure."""
    try:
        out = n.normalize(list(values))
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(
            f"{who}: normalize() raised {type(exc).__name__} ({exc}) on the values {_few(values)}; a normalizer "
            "returns None for a value it cannot normalize, and implements normalize() or per_value()"
        ) from exc
    assert isinstance(out, list), f"{who}: normalize() must return a list (one str or None per value), got {type(out).__name__}"
    assert len(out) == len(values), (
        f"{who}: normalize() returned {len(out)} values for {len(values)} values; it returns one str or None per value, in order"
    )
    for v, r in zip(values, out):
        assert r is None or isinstance(r, str), (
            f"{who}: normalize() returned {type(r).__name__} {r!r} for {v!r}; a normalizer returns a str or None"
        )
    return out


def _per_value(f: Callable[[str], str | None], values: Iterable[str], who: str) -> list[str | None]:
    out: list[str | None] = []
    for v in values:
        try:
            r = f(v)
        except Exception as exc:  # reported as a contract failure
            raise AssertionError(
                f"{who}: the function of per_value() raised {type(exc).__name__} ({exc}) on {v!r}; a normalizer "
                "returns None for a value it cannot normalize"
            ) from exc
        assert r is None or isinstance(r, str), (
            f"{who}: the function of per_value() returned {type(r).__name__} {r!r} for {v!r}; a normalizer returns a str or None"
        )
        out.append(r)
    return out


def _assert_same_keys(first: list[str | None], second: list[str | None], values: list[str], message: str) -> None:
    """``first`` and ``second`` give every value the same key; else ``message`` with the first value that differs."""
    for v, a, b in zip(values, first, second):
        if _as_key(a) != _as_key(b):
            raise AssertionError(f"{message} (at {v!r}: {a!r}, then {b!r})")


def _check_requires(n: Normalizer, who: str) -> None:
    req = type(n).requires
    assert isinstance(req, tuple) and all(isinstance(m, str) and m for m in req), (
        f"{who}: requires must be a tuple of Python module names, got {req!r}"
    )
    absent = []
    for module in req:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a dotted name whose parent is missing
            found = False
        if not found:
            absent.append(module)
    assert not absent, (
        f"{who} requires the Python module(s) {', '.join(map(repr, absent))}, not installed here: "
        f"pip install {' '.join(absent)} (a job naming it would be refused the same way)"
    )


def check_normalizer(normalizer: Normalizer | type[Normalizer], values: Iterable[Any] | None = None) -> list[str | None]:
    """The :class:`~er_framework.components.Normalizer` contract on ``values`` (default :func:`sample_values`).

    A normalizer is given the distinct non-missing strings of a column (missing,
    blank and placeholder values, such as ``None``, ``""``, ``"  "``, ``"N/A"``,
    never reach it; other values arrive as ``str(value)``); the check does the
    same. Its results are read as :mod:`er_framework.normalize` reads them: a
    result that is ``None``, ``""``, blank or a placeholder is *missing*, so
    the chain never returns ``""`` and results are compared as such keys
    (``""`` and ``None`` are the same answer; returning ``None`` says it
    plainly). Checked:

    * the ``requires`` modules are importable;
    * ``normalize()`` returns a list with one ``str`` or ``None`` per value
      (no exception: a value it cannot read gives ``None``), and ``[]`` for
      ``[]``; the function of ``per_value()``, if any, one ``str`` or ``None``;
    * some value of the sample gets a key (else the checks compare nothing);
    * deterministic: again on the same instance, and on a new instance of the
      same parameters;
    * a key depends on its value alone: ``normalize(reversed(values))``
      reversed, and ``normalize([v])`` value by value, give the same keys as
      ``normalize(values)``; the function of ``per_value()`` called again (the
      same function, values in reverse order) as well;
    * ``normalize()`` and ``per_value()`` agree value by value (the chains run
      ``per_value()`` when it is offered, ``normalize()`` otherwise);
    * through :func:`~er_framework.normalize.normalize_column` (the column with
      repeats and missing values added), missing values stay ``None`` and
      every other value gets the key ``normalize()`` gave it; an empty
      column gives ``[]``.

    Returns ``normalize_column(values, [normalizer])``: one key or ``None`` per value of ``values``.
    """
    n = instance_of(normalizer, Normalizer)
    who = f"normalizer {n.name!r}"
    _check_requires(n, who)
    column = sample_values() if values is None else list(values)
    todo = list(dict.fromkeys(s for s in map(_as_input, column) if s is not None))
    out = _check_normalize_keys(n, todo, who)
    _check_per_value(n, todo, out, who)
    return _check_normalize_column(n, column, dict(zip(todo, map(_as_key, out))), who)


def _check_normalize_keys(n: Normalizer, todo: list[str], who: str) -> list[str | None]:
    """``normalize(todo)``, checked: ``[]`` for ``[]``, some key, deterministic, each key depending on its value alone."""
    assert _normalized(n, [], who + " (no values)") == [], f"{who}: normalize([]) must return []"
    out = _normalized(n, todo, who)
    assert any(_as_key(r) is not None for r in out), (
        f'{who}: every value of the sample normalized to missing (None, "" or a placeholder) '
        f"({len(todo)} values: {_few(todo)}); a normalizer gives a key to the values it can read, and the checks "
        "need some: give values it normalizes"
    )
    _assert_same_keys(out, _normalized(n, todo, who), todo, f"{who} is not deterministic: two normalize() calls on the same values differ")
    fresh = type(n)(n.params, n.context)
    _assert_same_keys(
        out,
        _normalized(fresh, todo, who),
        todo,
        f"{who} is not deterministic: a new instance with the same parameters gives other results",
    )
    _assert_same_keys(
        out,
        _normalized(n, todo[::-1], who)[::-1],
        todo,
        f"{who}: the result depends on the order of the values (normalize(values) and normalize(reversed(values)) "
        "reversed differ); a key depends on its value alone",
    )
    ones = [_normalized(n, [v], who)[0] for v in todo]
    _assert_same_keys(
        out,
        ones,
        todo,
        f"{who}: the result depends on the other values of the batch (normalize(values) and normalize([value]) one "
        "value at a time differ); a key depends on its value alone",
    )
    return out


def _check_per_value(n: Normalizer, todo: list[str], out: list[str | None], who: str) -> None:
    """The function of ``per_value()``, if any: one key per value, the same when called again, agreeing with ``out``."""
    try:
        f = n.per_value()
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(f"{who}: per_value() raised {type(exc).__name__} ({exc})") from exc
    assert f is None or callable(f), f"{who}: per_value() must return a function of one value or None, got {f!r}"
    if f is not None:
        direct = _per_value(f, todo, who)
        _assert_same_keys(
            direct,
            _per_value(f, todo[::-1], who)[::-1],
            todo,
            f"{who}: the function of per_value() gives other results when called again (values in reverse order); "
            "a key depends on its value alone, not on earlier calls",
        )
        _assert_same_keys(
            out,
            direct,
            todo,
            f"{who}: normalize() and per_value() disagree; the chains run per_value() when it is offered and "
            "normalize() otherwise, so both must give every value the same key",
        )


def _check_normalize_column(n: Normalizer, column: list[Any], keys: dict[str, str | None], who: str) -> list[str | None]:
    """``normalize_column(column, [n])``, checked against ``keys`` (each distinct input's key from ``normalize()``).

    The column is run with missing values and its reverse appended: missing
    values stay ``None``, every other value gets its key. Returns the results
    of ``column``'s own values.
    """
    whole = column + _MISSING + column[::-1]
    try:
        got = normalize_column(whole, [n])
        nothing = normalize_column([], [n])
    except Exception as exc:  # reported as a contract failure
        raise AssertionError(f"{who}: normalize_column(values, [normalizer]) raised {type(exc).__name__} ({exc})") from exc
    assert nothing == [], f"{who}: normalize_column([], [normalizer]) must return [], got {nothing!r}"
    assert isinstance(got, list) and len(got) == len(whole), f"{who}: normalize_column must give one result per value"
    for v, r in zip(whole, got):
        s = _as_input(v)
        if s is None:
            assert r is None, f"{who}: the missing value {v!r} must stay missing (None) through normalize_column, got {r!r}"
            continue
        assert r is None or (isinstance(r, str) and not is_missing(r)), (
            f'{who}: normalize_column gave {r!r} for {v!r}; a chain\'s result is a key or None, never "" or a placeholder'
        )
        assert r == keys[s], (
            f"{who}: normalize_column gives {v!r} the key {r!r}, normalize() gave {keys[s]!r}; a key depends on its "
            "value alone (not on the column's other values, repeats or missing values)"
        )
    return got[: len(column)]


# ---------------------------------------------------------------- golden rules


def sample_golden_values(clusters: int = 60, seed: int = 0, dates: bool = True) -> GoldenValues:
    """Clusters of 1 to 6 records from 3 sources, with repeated, missing and equally long values, and dates
    (some missing) when ``dates``: what :func:`check_golden_rule` runs a rule on."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, clusters)
    n = int(sizes.sum())
    labels = rng.permutation(np.repeat(np.arange(clusters), sizes))
    members = np.argsort(labels, kind="stable").astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pool = np.array(["ann", "anna", "bob", "rob", "robert", "x", "anne"], dtype=object)
    codes = rng.integers(-1, len(pool), n).astype(np.int64)
    values = np.empty(n, dtype=object)
    values[:] = [None if c < 0 else pool[c] for c in codes.tolist()]
    lengths = np.array([0 if v is None else len(v) for v in values], dtype=np.int64)
    priority = rng.integers(0, 3, n).astype(np.int64)
    when = np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 5, n).astype(np.float64)) if dates else None
    return GoldenValues(starts, members, values, codes, lengths, priority, when)


def _golden_subset(values: GoldenValues, keep: npt.NDArray[np.int64]) -> GoldenValues:
    """The clusters ``keep`` of ``values`` alone (rows keep their numbers)."""
    sizes = np.diff(values.starts)[keep]
    members = np.concatenate([values.members[values.starts[c] : values.starts[c + 1]] for c in keep]) if len(keep) else values.members[:0]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return dataclasses.replace(values, starts=starts, members=members.astype(np.int64))


def _chosen(rule: GoldenRule, values: GoldenValues, who: str) -> Int64Array:
    rows = np.asarray(rule.choose(values))
    k = values.clusters
    assert rows.shape == (k,), f"{who} returned shape {rows.shape} for {k} clusters (one row per cluster)"
    assert k == 0 or rows.dtype.kind in "iu", f"{who}: rows must be integers (int64), got {rows.dtype}"
    rows = rows.astype(np.int64)
    for c in range(k):
        group = values.members[values.starts[c] : values.starts[c + 1]]
        present = group[values.codes[group] >= 0]
        r = int(rows[c])
        if len(present) == 0:
            assert r == -1, f"{who}: cluster {c} has no value but the rule chose row {r} (expected -1)"
        else:
            assert r in present, (
                f"{who}: cluster {c} (rows {group.tolist()}, present {present.tolist()}) got row {r}: "
                "the answer must be a member holding a value"
            )
    return rows


def check_golden_rule(rule: GoldenRule | type[GoldenRule], values: GoldenValues | None = None) -> Int64Array:
    """The :class:`GoldenRule` contract on ``values`` (default :func:`sample_golden_values`).

    One integer row per cluster: a member of the cluster whose value is present, or ``-1`` exactly when no
    member has one; deterministic (again, and with a fresh instance); the row of a cluster depends on that
    cluster alone (the same on any subset of the clusters); no clusters give no rows.
    """
    rule = instance_of(rule, GoldenRule)
    who = f"golden rule {rule.name!r}"
    if values is None:
        values = sample_golden_values()
    rows = _chosen(rule, values, who)
    assert np.array_equal(_chosen(rule, values, who), rows), f"{who} is not deterministic: two calls choose other rows"
    fresh = type(rule)(rule.params, rule.context)
    assert np.array_equal(_chosen(fresh, values, who), rows), f"{who} is not deterministic: a new instance chooses other rows"
    rng = np.random.default_rng(1)
    keep = np.sort(rng.choice(values.clusters, size=values.clusters // 2, replace=False)).astype(np.int64)
    part = _chosen(rule, _golden_subset(values, keep), who + " (a subset of the clusters)")
    assert np.array_equal(part, rows[keep]), (
        f"{who}: a cluster's row depends on the other clusters (clusters {keep[part != rows[keep]][:8].tolist()} differ "
        "when chosen among half of the clusters)"
    )
    none = _chosen(rule, _golden_subset(values, keep[:0]), who + " (no clusters)")
    assert none.shape == (0,)
    return rows


# ---------------------------------------------------------------- any component


def check_component(component: Component | type[Component], batch: Batch | None = None, pairs: Pairs | None = None) -> Any:
    """The check of ``component``'s family, with the checks of every ability it declares; returns that check's answer.

    ``batch`` holds what the component reads: records (a shingler; default
    :func:`sample_records`), token sets (a signature builder: ``batch.tokens``),
    signatures, tokens or fields (a blocker), with ``pairs`` (a verifier).
    A clusterer is checked on :func:`sample_graph` (or ``pairs`` over
    ``len(batch)`` records), a normalizer on :func:`sample_values`.
    """
    family = component.family
    who = f"{family} {component.name!r}"
    if family == "shingler":
        return check_shingler(component, batch.records if batch is not None else None)  # type: ignore[arg-type]
    if family == "normalizer":
        return check_normalizer(component)  # type: ignore[arg-type]
    if family == "golden_rule":
        return check_golden_rule(component)  # type: ignore[arg-type]
    if family == "clusterer":
        n = len(batch) if batch is not None and pairs is not None else None
        return check_clusterer(component, n, pairs)  # type: ignore[arg-type]
    assert batch is not None, f"checking {who} needs a batch"
    if family == "signature":
        assert batch.tokens is not None, f"checking {who} needs a batch with token sets"
        return check_signature_builder(component, batch.tokens)  # type: ignore[arg-type]
    if family == "blocker":
        return check_blocker(component, batch)  # type: ignore[arg-type]
    if family == "verifier":
        assert pairs is not None, f"checking {who} needs pairs"
        return check_verifier(component, batch, pairs)  # type: ignore[arg-type]
    raise AssertionError(f"{who}: no check for the family {family!r}")
