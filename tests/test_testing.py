"""The contract checks (er_framework.testing): every built-in passes them, deliberately broken components fail them.

Every built-in component of the ``er-framework`` distribution (read from the
default registry) must be listed below with the parameters and the sample
input its check uses, so a new built-in cannot escape the contract kit. The
broken components each break one rule; their check must raise an
``AssertionError`` whose message names that rule. The plugin guide
is run from docs/plugins.md itself.
"""

from __future__ import annotations

import itertools
import random
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from er_framework import (
    Blocker,
    Clusterer,
    Normalizer,
    Shingler,
    SignatureBuilder,
    Verifier,
)
from er_framework.capabilities import Fitted, Keyed, Learner, Multiset, MultisetSigning, WholeCorpus, has
from er_framework.components import Context
from er_framework.config.resolve import parse_job
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets
from er_framework.executors import run_job
from er_framework.kernels.graph import canonical_labels
from er_framework.normalize import is_missing, normalize_column
from er_framework.registry import DISTRIBUTION, build_registry, default_registry
from er_framework.testing import (
    check_blocker,
    check_clusterer,
    check_learner,
    check_lookup_keys,
    check_normalizer,
    check_shingler,
    check_signature_builder,
    check_verifier,
    pairs_sharing_keys,
    sample_graph,
    sample_records,
    sample_values,
)

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
FRAME = {"width": 100.0, "height": 100.0, "grid_x": 10, "grid_y": 10}


def component(family: str, name: str, params: dict[str, Any] | None = None, **context: Any) -> Any:
    """The registered built-in ``name`` of ``family``, built with ``params`` and a context."""
    cls = default_registry().get(family, name).cls
    return cls(cls.Params(**(params or {})), Context(**context))


# ---------------------------------------------------------------- sample inputs


def text_records() -> Records:
    return sample_records(n_sources=2)


def print_records() -> Records:
    values = [
        "[[10, 10], [55.5, 20], [99.9, 99.9]]",
        "[[10.2, 10.1], [55, 21], [99, 99]]",
        "[]",
        None,
        '[[5, 5, 1.57, "ending"], [50, 50, 0.3, "bifurcation"]]',
        "[[5.1, 5.2, 1.5, 1], [50, 49, 0.2, 2]]",
        "[[0, 0]]",
        "[[10, 10], [55.5, 20], [99.9, 99.9]]",
        "[[30, 70], [31, 71], [32, 72], [80, 15]]",
        "[[30, 70], [31, 71], [33, 72]]",
    ]
    n = len(values)
    return Records(
        ids=[f"p{i}" for i in range(n)],
        source=np.arange(n, dtype=np.int32) % 2,
        source_names=["left", "right"],
        fields={"minutiae": values},
    )


def people_records() -> Records:
    a = Records.from_columns(
        ["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"],
        {
            "first_name": ["anna", "bob", "carl", "anna", None, "dora", "eve", "bob"],
            "last_name": ["smith", "jones", "miller", "smith", "brown", "", "smith", "jones"],
            "city": ["york", "york", "leeds", "york", "bath", "bath", "york", None],
            "phone": ["5550100", "5550101", None, "5550100", "5550199", "5550142", "5550100", "5550101"],
        },
        "A",
    )
    b = Records.from_columns(
        ["b1", "b2", "b3", "b4", "b5", "b6", "b7"],
        {
            "first_name": ["ana", "bob", "carl", "dora", "frank", "eve", "bob"],
            "last_name": ["smith", "jones", "miler", "white", "brown", "smith", "jones"],
            "city": ["york", "york", "leeds", "bath", "york", "york", "york"],
            "phone": ["5550100", None, "5550177", "5550142", "5550199", "5550100", "5550101"],
        },
        "B",
    )
    return Records.concat([a, b])


def all_pairs(n: int) -> Pairs:
    left, right = np.triu_indices(n, k=1)
    return Pairs(left, right)


def text_batch(link: bool = True) -> Batch:
    recs = text_records()
    ts = component("shingler", "char", {"k": 3}).shingle(recs)
    sig = component("signature", "minhash", {"num_perm": 64}).build(ts)
    return Batch(records=recs, tokens=ts, signatures=sig, cross_source_only=link)


def print_batch(link: bool = True) -> Batch:
    recs = print_records()
    ts = component("shingler", "grid_cells", FRAME).shingle(recs)
    sig = component("signature", "bitvector", {"n_bits": 100}).build(ts)
    return Batch(records=recs, tokens=ts, signatures=sig, cross_source_only=link)


def people_batch(link: bool = True) -> Batch:
    return Batch(records=people_records(), cross_source_only=link)


# ---------------------------------------------------------------- the built-ins and how each is checked

SHINGLERS: dict[str, tuple[dict[str, Any], Callable[[], Records]]] = {
    "char": ({"k": 3}, text_records),
    "word": ({}, text_records),
    "stopword": ({"n": 1}, text_records),
    "grid_cells": ({**FRAME, "margin": 1.0}, print_records),
}
SIGNATURES: dict[str, tuple[dict[str, Any], Callable[[], TokenSets]]] = {
    "minhash": ({"num_perm": 32}, lambda: text_batch().tokens),
    "oph": ({"num_perm": 32}, lambda: text_batch().tokens),
    "fss": ({"num_perm": 32}, lambda: text_batch().tokens),
    "bitvector": ({"n_bits": 100}, lambda: print_batch().tokens),
}
BLOCKERS: dict[str, list[tuple[dict[str, Any], Callable[[bool], Batch]]]] = {
    "lsh_bands": [({"bands": 16, "rows": 2}, text_batch), ({"bands": 32, "rows": 1, "max_bucket_size": 2}, text_batch)],
    "grid_bits": [({"sets": 500, "cells": 1, "seed": 3}, print_batch), ({"sets": 500, "cells": 2, "max_bucket_size": 3}, print_batch)],
    "field_hash": [
        ({"fields": ["city", ["last_name", "first_name"], "phone"]}, people_batch),
        ({"fields": ["city", "phone"], "max_block_size": 3}, people_batch),
    ],
    "sorted_neighbourhood": [
        ({"key": ["last_name"], "window": 3}, people_batch),
        ({"keys": [["city", "first_name"], ["phone"]], "prefix": {"city": 1}}, people_batch),
    ],
}
VERIFIERS: dict[str, tuple[dict[str, Any], Callable[[bool], Batch]]] = {
    "jaccard": ({"threshold": 0.5}, text_batch),
    "cell_overlap": ({"threshold": 0.5, "kind": "jaccard"}, print_batch),
    "field_score": (
        {
            "threshold": 100,
            "fields": [{"field": ["first_name", "last_name"], "scorer": "token_sort_ratio"}, {"field": "phone", "scorer": "digits"}],
        },
        people_batch,
    ),
    "fellegi_sunter": (
        {"threshold": 0.5, "fields": [{"field": ["first_name", "last_name"]}, {"field": "city", "comparison": "exact"}], "seed": 1},
        people_batch,
    ),
}
CLUSTERERS: dict[str, list[dict[str, Any]]] = {
    "connected_components": [{}, {"split": {"bridge_max_score": 0.6}}],
    "label_propagation": [{}],
    "louvain": [{}, {"resolution": 1.5}],
    "greedy_modularity": [{}],
    "one_to_one": [{}],
}
TABLES: dict[str, dict[str, Any]] = {
    "shingler": SHINGLERS,
    "signature": SIGNATURES,
    "blocker": BLOCKERS,
    "verifier": VERIFIERS,
    "clusterer": CLUSTERERS,
}


@pytest.mark.parametrize("family", sorted(TABLES))
def test_every_builtin_component_is_checked(family: str) -> None:
    reg = default_registry()
    builtins = {c.name for c in reg.components[family].values() if c.plugin.distribution == DISTRIBUTION}
    assert builtins == set(TABLES[family]), f"add the new {family} to the tables of {__file__}"


@pytest.mark.parametrize("name", sorted(SHINGLERS))
def test_builtin_shinglers_pass(name: str) -> None:
    params, records = SHINGLERS[name]
    ts = check_shingler(component("shingler", name, params), records())
    assert ts.sizes.sum() > 0


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_builtin_signature_builders_pass(name: str) -> None:
    params, tokens = SIGNATURES[name]
    check_signature_builder(component("signature", name, params, seed=5), tokens())


@pytest.mark.parametrize("name,case", [(n, i) for n, cases in sorted(BLOCKERS.items()) for i in range(len(cases))])
@pytest.mark.parametrize("link", [False, True])
def test_builtin_blockers_pass(name: str, case: int, link: bool) -> None:
    params, batch = BLOCKERS[name][case]
    blocker = component("blocker", name, params, seed=2)
    pairs = check_blocker(blocker, batch(link))
    assert len(pairs) > 0  # the samples hold candidates for each blocker: the check saw real pairs
    if has(blocker, Keyed):
        rows, keys = check_lookup_keys(blocker, batch(link))
        assert len(rows) > 0 and keys.dtype == np.uint64


@pytest.mark.parametrize("name", sorted(VERIFIERS))
@pytest.mark.parametrize("link", [False, True])
def test_builtin_verifiers_pass(name: str, link: bool) -> None:
    params, make = VERIFIERS[name]
    batch = make(link)
    pairs = batch.allowed(all_pairs(len(batch)))
    scores = check_verifier(component("verifier", name, params, seed=4), batch, pairs)
    assert scores.shape == (len(pairs),) and len(np.unique(scores)) > 1


@pytest.mark.parametrize("name,params", [(n, p) for n, ps in sorted(CLUSTERERS.items()) for p in ps])
def test_builtin_clusterers_pass(name: str, params: dict[str, Any]) -> None:
    clusterer = component("clusterer", name, params, seed=3)
    labels = check_clusterer(clusterer)
    assert len(np.unique(labels)) < sample_graph()[0]  # some records were joined
    check_clusterer(clusterer, 0, Pairs.empty(scored=True))
    # a random graph as well, given explicitly
    rng = np.random.default_rng(7)
    random_pairs = Pairs(rng.integers(0, 60, 150), rng.integers(0, 60, 150), rng.uniform(0.5, 1.0, 150)).normalized()
    check_clusterer(clusterer, 70, random_pairs)


def test_a_class_is_checked_with_its_default_params() -> None:
    check_clusterer(default_registry().get("clusterer", "connected_components").cls)
    check_shingler(default_registry().get("shingler", "word").cls)
    with pytest.raises(AssertionError, match="is not a Blocker"):
        check_blocker(default_registry().get("shingler", "word").cls, people_batch())


# ---------------------------------------------------------------- lookup keys: the naive reference


def test_pairs_sharing_keys_by_hand() -> None:
    rows = np.array([0, 1, 2, 3, 0, 4, 4, 5, 6, 7], dtype=np.int64)
    keys = np.array([9, 9, 9, 9, 7, 7, 7, 5, 5, 5], dtype=np.uint64)  # row 4 twice in bucket 7
    got = pairs_sharing_keys(rows, keys)
    want = {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0, 4), (5, 6), (5, 7), (6, 7)}
    assert set(zip(got.left.tolist(), got.right.tolist())) == want and got.is_normalized()
    capped = pairs_sharing_keys(rows, keys, cap=3)  # the bucket of 4 is skipped; {0, 4} counts 2 records
    assert set(zip(capped.left.tolist(), capped.right.tolist())) == {(0, 4), (5, 6), (5, 7), (6, 7)}
    src = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    link = pairs_sharing_keys(rows, keys, source=src)
    assert set(zip(link.left.tolist(), link.right.tolist())) == {p for p in want if src[p[0]] != src[p[1]]}
    assert len(pairs_sharing_keys(np.zeros(0, np.int64), np.zeros(0, np.uint64))) == 0


# ---------------------------------------------------------------- broken blockers


class AllPairs(Blocker):
    """Every pair of the batch (cross-source in link mode): correct; broken by subclasses."""

    name = "all_pairs"

    def pairs(self, batch: Batch) -> Pairs:
        return batch.allowed(all_pairs(len(batch)))

    def candidates(self, batch: Batch) -> Pairs:
        return self.pairs(batch)


class FirstLetter(Keyed, Blocker):
    """Records sharing the first letter of 'first_name' (buckets over 3 skipped), with lookup keys: correct."""

    name = "first_letter"
    cap = 3

    def keys(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        letters = [(v or "")[:1] for v in batch.records.fields["first_name"]]
        rows = np.array([i for i, c in enumerate(letters) if c], dtype=np.int64)
        return rows, np.array([ord(letters[i]) for i in rows], dtype=np.uint64)

    def lookup_keys(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        return self.keys(batch)

    def lookup_cap(self) -> int | None:
        return self.cap

    def candidates(self, batch: Batch) -> Pairs:
        rows, keys = self.keys(batch)
        left, right = [], []
        for k in np.unique(keys):
            members = rows[keys == k]
            if len(members) > self.cap:
                continue
            a, b = np.triu_indices(len(members), k=1)
            left.append(members[a])
            right.append(members[b])
        if not left:
            return Pairs.empty()
        return batch.allowed(Pairs(np.concatenate(left), np.concatenate(right)).normalized())


def broken_blocker(name: str, defect: Callable[[Pairs, Batch], Any]) -> AllPairs:
    """A blocker answering ``defect(correct pairs, batch)``."""

    def candidates(self: AllPairs, batch: Batch) -> Any:
        return defect(self.pairs(batch), batch)

    return type(name, (AllPairs,), {"name": name, "candidates": candidates})()


def random_half(p: Pairs, b: Batch) -> Pairs:
    return p.select(np.random.default_rng().random(len(p)) < 0.5)


def global_indices(p: Pairs, b: Batch) -> Pairs:
    return Pairs(b.active[p.left], b.active[p.right]) if b.active is not None else p


BROKEN_BLOCKERS: dict[str, tuple[Callable[[Pairs, Batch], Any], str]] = {
    "unsorted": (lambda p, b: Pairs(p.left[::-1], p.right[::-1]), r"pairs not sorted by \(left, right\): \(\d+, \d+\) comes before"),
    "duplicated": (lambda p, b: Pairs(np.repeat(p.left, 2), np.repeat(p.right, 2)), r"\d+ duplicate pairs: \(0, \d+\) twice"),
    "duplicated_apart": (lambda p, b: Pairs(np.tile(p.left, 2), np.tile(p.right, 2)), r"not sorted .*\(and some pairs repeat\)"),
    "reversed": (lambda p, b: Pairs(p.right, p.left), r"pairs with left >= right"),
    "self_pairs": (lambda p, b: Pairs(np.arange(len(b)), np.arange(len(b))), r"pairs with left >= right: \(0, 0\)"),
    "out_of_range": (
        lambda p, b: Pairs(np.append(p.left, 0), np.append(p.right, len(b))),
        r"pair indices must be rows of the batch, 0\.\.\d+ .* return indices into the batch",
    ),
    "negative": (lambda p, b: Pairs(np.array([-1]), np.array([0])) if len(b) else p, r"got indices from -1 to 0"),
    "same_source": (lambda p, b: all_pairs(len(b)), r"pairs of records from the same source in link mode"),
    "nondeterministic": (random_half, r"is not deterministic"),
    "global_indices": (global_indices, r"indices from \d+ to \d+.*not into batch.active"),
    "not_pairs": (lambda p, b: (p.left, p.right), r"must return Pairs, got tuple"),
    "empty_batch_pairs": (
        lambda p, b: p if len(b) else Pairs(np.array([0]), np.array([1])),
        r"\(empty batch\): pair indices must be rows of the batch",
    ),
}


def test_the_correct_test_blockers_pass() -> None:
    for link in (False, True):
        assert len(check_blocker(AllPairs(), people_batch(link))) > 0
        assert len(check_blocker(FirstLetter(), people_batch(link))) > 0
        check_lookup_keys(FirstLetter(), people_batch(link))


@pytest.mark.parametrize("defect", sorted(BROKEN_BLOCKERS))
@pytest.mark.parametrize("link", [False, True])
def test_check_blocker_fails_on_a_broken_blocker(defect: str, link: bool) -> None:
    fn, message = BROKEN_BLOCKERS[defect]
    with pytest.raises(AssertionError, match=message) as err:
        check_blocker(broken_blocker(defect, fn), people_batch(link))
    assert f"blocker {defect!r}" in str(err.value)


def test_a_blocker_needing_active_fails_helpfully() -> None:
    def needs_active(p: Pairs, b: Batch) -> Pairs:
        if len(b) != len(people_records()):
            b.active.copy()  # AttributeError on a part of the batch without active
        return p

    with pytest.raises(AssertionError, match="fails on a batch without `active`"):
        check_blocker(broken_blocker("needs_active", needs_active), people_batch())

    def shifts_with_active(p: Pairs, b: Batch) -> Pairs:  # in range, but moves with active
        return p.select(p.left >= 1) if b.active is not None else p

    with pytest.raises(AssertionError, match="the candidates change with batch.active"):
        check_blocker(broken_blocker("shifts_with_active", shifts_with_active), people_batch())


class NoCap(FirstLetter):
    """Candidates ignore the cap its lookup_cap announces."""

    name = "no_cap"

    def candidates(self, batch: Batch) -> Pairs:
        self.cap = 10**6
        try:
            return super().candidates(batch)
        finally:
            self.cap = 3


class OtherKeys(FirstLetter):
    """Keys by the last letter, candidates by the first."""

    name = "other_keys"

    def lookup_keys(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        last = [(v or "")[-1:] for v in batch.records.fields["first_name"]]
        rows = np.array([i for i, c in enumerate(last) if c], dtype=np.int64)
        return rows, np.array([ord(last[i]) for i in rows], dtype=np.uint64)


class KeysByPosition(FirstLetter):
    """Keys from the row's position in the batch: candidates agree, but a record's keys depend on the others."""

    name = "keys_by_position"

    def keys(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        rows = np.arange(len(batch), dtype=np.int64)
        return rows, (rows // 2).astype(np.uint64)


class KeysWithoutLinkMode(FirstLetter):
    """Candidates of the dedup mode in link mode (within-source pairs kept): breaks both contracts."""

    name = "keys_without_link_mode"

    def candidates(self, batch: Batch) -> Pairs:
        import dataclasses

        return super().candidates(dataclasses.replace(batch, cross_source_only=False))


class SignedKeys(FirstLetter):
    name = "signed_keys"

    def lookup_keys(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        rows, keys = self.keys(batch)
        return rows, keys.astype(np.int64)


class NoKeys(FirstLetter):
    name = "no_keys"

    def lookup_keys(self, batch: Batch) -> None:  # type: ignore[override]
        return None


@pytest.mark.parametrize(
    "blocker,message",
    [
        (NoCap(), r"candidates share no key: .* share only buckets over the cap"),
        (OtherKeys(), r"lookup_keys disagree with candidates .*candidates share no key: \(0, \d+\)"),
        (KeysByPosition(), r"looked up without the others differ from their keys in the whole batch"),
        (SignedKeys(), r"keys must be uint64 \(64-bit bucket ids\), got int64"),
        (NoKeys(), r"has no lookup_keys"),
    ],
)
def test_check_lookup_keys_fails_on_inconsistent_keys(blocker: FirstLetter, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_lookup_keys(blocker, people_batch(False))
    # check_blocker runs check_lookup_keys for a keyed blocker
    if has(blocker, Keyed):
        with pytest.raises(AssertionError, match=message):
            check_blocker(blocker, people_batch(False))


class KeysFromActive(FirstLetter):
    """Keys (and candidates, consistently) mixed with the rows' record indices from batch.active."""

    name = "keys_from_active"

    def keys(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        rows, keys = super().keys(batch)
        if batch.active is not None:
            keys = keys + (batch.active[rows] % 2).astype(np.uint64)
        return rows, keys


def test_lookup_keys_must_not_depend_on_active() -> None:
    with pytest.raises(AssertionError, match=r"keys_from_active': lookup_keys change with batch.active"):
        check_lookup_keys(KeysFromActive(), people_batch(False))
    with pytest.raises(AssertionError, match="the candidates change with batch.active"):
        check_blocker(KeysFromActive(), people_batch(False))


def test_link_mode_errors_of_keys_and_candidates() -> None:
    with pytest.raises(AssertionError, match="same source in link mode"):
        check_blocker(KeysWithoutLinkMode(), people_batch(False))  # the flipped (link) batch is checked too
    with pytest.raises(AssertionError, match=r"\(link mode\): lookup_keys disagree with candidates .*cross-source only"):
        check_lookup_keys(KeysWithoutLinkMode(), people_batch(True))


# ---------------------------------------------------------------- broken verifiers


class Closeness(Verifier):
    """1 / (1 + |len(a) - len(b)|) of the text: correct and pairwise; broken by subclasses."""

    name = "closeness"

    def lengths(self, batch: Batch) -> np.ndarray:
        return np.array([len(t) for t in batch.records.text()], dtype=np.float64)

    def score(self, batch: Batch, pairs: Pairs) -> np.ndarray:
        x = self.lengths(batch)
        return 1.0 / (1.0 + np.abs(x[pairs.left] - x[pairs.right]))


def broken_verifier(name: str, fn: Callable[[Closeness, Batch, Pairs], Any]) -> Closeness:
    return type(name, (Closeness,), {"name": name, "score": fn})()


BROKEN_VERIFIERS: dict[str, tuple[Callable[[Any, Batch, Pairs], Any], str]] = {
    "one_short": (lambda self, b, p: Closeness.score(self, b, p)[:-1], r"\(\d+,\) scores for \d+ pairs"),
    "nan": (lambda self, b, p: np.where(p.left == 0, np.nan, Closeness.score(self, b, p)), r"scores must be finite"),
    "strings": (lambda self, b, p: np.array(["1"] * len(p)), r"scores must be float64"),
    "asymmetric": (lambda self, b, p: Closeness.score(self, b, p) + p.left * 1e-3, r"score\(a, b\) != score\(b, a\)"),
    "depends_on_the_other_pairs": (
        lambda self, b, p: Closeness.score(self, b, p) / max(len(p), 1) if len(p) else np.zeros(0),
        r"scoring the pairs in two halves gives other scores",
    ),
    "depends_on_the_other_records": (
        lambda self, b, p: Closeness.score(self, b, p) * len(b) / 100,
        r"when the batch holds only the pairs' records",
    ),
    "global_indices": (
        lambda self, b, p: (
            Closeness.score(self, b, p)
            if b.active is None
            else Closeness.score(self, b, Pairs(np.minimum(b.active[p.left], len(b) - 1), np.minimum(b.active[p.right], len(b) - 1)))
        ),
        r"the scores change with batch.active",
    ),
    "nondeterministic": (lambda self, b, p: Closeness.score(self, b, p) + np.random.default_rng().random(len(p)), r"is not deterministic"),
}


def test_the_correct_test_verifier_passes() -> None:
    batch = people_batch()
    check_verifier(Closeness(), batch, batch.allowed(all_pairs(len(batch))))


@pytest.mark.parametrize("defect", sorted(BROKEN_VERIFIERS))
def test_check_verifier_fails_on_a_broken_verifier(defect: str) -> None:
    fn, message = BROKEN_VERIFIERS[defect]
    batch = people_batch()
    with pytest.raises(AssertionError, match=message) as err:
        check_verifier(broken_verifier(defect, fn), batch, all_pairs(8))  # records 8.. in no pair
    assert f"verifier {defect!r}" in str(err.value)


class LearnsPairCount(Closeness, Learner):
    """``depends_on_the_other_pairs`` declared: a Learner whose fitted state is the number of pairs it saw."""

    name = "learns"

    def fit_score(self, batch: Batch, pairs: Pairs, labelled: Any) -> tuple[np.ndarray, Fitted]:
        state = {"pairs": len(pairs)}
        return self.score_with(batch, pairs, state), Fitted(state=state, report={"pairs": len(pairs)})

    def score_with(self, batch: Batch, pairs: Pairs, state: Any) -> np.ndarray:
        return Closeness.score(self, batch, pairs) / max(int(state["pairs"]), 1)

    def score(self, batch: Batch, pairs: Pairs) -> np.ndarray:
        return self.fit_score(batch, pairs, None)[0]


def test_a_batch_dependent_verifier_passes_when_it_says_so() -> None:
    """A Learner: scores may depend on the other pairs through its fitted state (the check compares the
    scores given that state, score_with, and checks the state's round trip)."""
    fn = BROKEN_VERIFIERS["depends_on_the_other_pairs"][0]
    batch = people_batch()
    pairs = all_pairs(len(batch))
    scores = check_verifier(LearnsPairCount(), batch, pairs)
    np.testing.assert_array_equal(scores, fn(Closeness(), batch, pairs))  # the undeclared one's scores
    assert check_learner(LearnsPairCount(), batch, pairs) == {"pairs": len(pairs)}


class KeepsItsFit(LearnsPairCount):
    """A learner that also keeps what it fitted on the instance (the contract: returned, never kept)."""

    name = "keeps_its_fit"

    def fit_score(self, batch: Batch, pairs: Pairs, labelled: Any) -> tuple[np.ndarray, Fitted]:
        scores, fitted = super().fit_score(batch, pairs, labelled)
        self.last_fit = fitted
        return scores, fitted


class ForgetsItsFit(LearnsPairCount):
    """A learner whose score_with does not apply the state it was given."""

    name = "forgets_its_fit"

    def fit_score(self, batch: Batch, pairs: Pairs, labelled: Any) -> tuple[np.ndarray, Fitted]:
        state = {"pairs": len(pairs)}
        return Closeness.score(self, batch, pairs) / max(len(pairs), 1), Fitted(state=state)

    def score_with(self, batch: Batch, pairs: Pairs, state: Any) -> np.ndarray:
        return Closeness.score(self, batch, pairs)


@pytest.mark.parametrize(
    "learner, message",
    [
        (KeepsItsFit, "fitting changed the instance's attributes"),
        (ForgetsItsFit, r"score_with\(the fitted state\) on a new instance gives other scores"),
    ],
)
def test_check_learner_fails_on_a_broken_learner(learner: type[LearnsPairCount], message: str) -> None:
    batch = people_batch()
    with pytest.raises(AssertionError, match=message):
        check_learner(learner(), batch, all_pairs(len(batch)))


# ---------------------------------------------------------------- broken shinglers and signature builders


class Letters(Shingler):
    """The set of code points of the text: correct; broken by subclasses."""

    name = "letters"

    def shingle(self, records: Records) -> TokenSets:
        return TokenSets.from_sets([{ord(c) for c in t} for t in records.text()])


class UnsortedLetters(Letters):
    name = "unsorted_letters"

    def shingle(self, records: Records) -> TokenSets:
        ts = super().shingle(records)
        return TokenSets(ts.indptr, np.concatenate([ts.row(i)[::-1] for i in range(len(ts))] or [np.zeros(0, np.uint64)]))


class PositionalLetters(Letters):
    """Tokens depend on the record's position in the batch: a whole-corpus shingler, not declared so."""

    name = "positional_letters"

    def shingle(self, records: Records) -> TokenSets:
        return TokenSets.from_sets([{ord(c) + 1000 * i for c in t} for i, t in enumerate(records.text())])


class HonestPositionalLetters(WholeCorpus, PositionalLetters):
    """Declared honestly: the check no longer asks for split invariance."""

    name = "honest_positional_letters"


class WrongMultiset(Multiset, Letters):
    name = "wrong_multiset"

    def shingle_multiset(self, records: Records) -> TokenSets:
        return TokenSets.from_sets([{ord(c) for c in t[1:]} for t in records.text()])


def test_shingler_checks() -> None:
    check_shingler(Letters())
    with pytest.raises(AssertionError, match="row 0 is not sorted and unique"):
        check_shingler(UnsortedLetters())
    with pytest.raises(AssertionError, match="shingling two halves differs"):
        check_shingler(PositionalLetters())
    check_shingler(HonestPositionalLetters())
    with pytest.raises(AssertionError, match="shingle_multiset row 0 holds other distinct tokens"):
        check_shingler(WrongMultiset())


class Smallest(SignatureBuilder):
    """The 4 smallest tokens of each set (padded with 2**32 - 1): correct, multisets fine."""

    name = "smallest"

    def build(self, tokens: TokenSets) -> Signatures:
        rows = [np.sort(np.unique(tokens.row(i)))[:4] for i in range(len(tokens))]
        values = np.full((len(tokens), 4), 2**32 - 1, dtype=np.uint32)
        for i, r in enumerate(rows):
            values[i, : len(r)] = r.astype(np.uint32)
        return Signatures(values, empty=tokens.sizes == 0)


class FirstTokens(Smallest):
    """The first 4 tokens in row order: a set's signature, but not a multiset's."""

    name = "first_tokens"

    def build(self, tokens: TokenSets) -> Signatures:
        values = np.full((len(tokens), 4), 2**32 - 1, dtype=np.uint32)
        for i in range(len(tokens)):
            r = tokens.row(i)[:4]
            values[i, : len(r)] = r.astype(np.uint32)
        return Signatures(values, empty=tokens.sizes == 0)


class MultisetSmallest(MultisetSigning, Smallest):
    """Declares what is true: its signature of a row depends on the distinct tokens alone."""

    name = "multiset_smallest"


class FirstTokensOfMultisets(MultisetSigning, FirstTokens):
    """Declares MultisetSigning, but the first tokens of an unsorted row with repeats are not a set's."""

    name = "first_tokens_of_multisets"


class BatchScaled(Smallest):
    """Adds the batch size: a row depends on the others."""

    name = "batch_scaled"

    def build(self, tokens: TokenSets) -> Signatures:
        sig = super().build(tokens)
        return Signatures(sig.values + np.uint32(len(tokens)), empty=sig.empty)


class NoEmptyFlags(Smallest):
    name = "no_empty_flags"

    def build(self, tokens: TokenSets) -> Signatures:
        return Signatures(super().build(tokens).values)


def test_signature_builder_checks() -> None:
    ts = Letters().shingle(sample_records())
    check_signature_builder(Smallest(), ts)
    check_signature_builder(MultisetSmallest(), ts)
    with pytest.raises(AssertionError, match="declares MultisetSigning but signs unsorted rows"):
        check_signature_builder(FirstTokensOfMultisets(), ts)
    check_signature_builder(FirstTokens(), ts)  # declared honestly
    with pytest.raises(AssertionError, match="not batch-split invariant"):
        check_signature_builder(BatchScaled(), ts)
    with pytest.raises(AssertionError, match="'empty' must flag empty sets"):
        check_signature_builder(NoEmptyFlags(), ts)


# ---------------------------------------------------------------- broken clusterers


class Components(Clusterer):
    """Connected components by repeated relaxation: correct; broken by subclasses."""

    name = "components"

    def cluster(self, n: int, pairs: Pairs) -> np.ndarray:
        labels = np.arange(n, dtype=np.int64)
        while len(pairs):
            low = np.minimum(labels[pairs.left], labels[pairs.right])
            new = labels.copy()
            np.minimum.at(new, pairs.left, low)
            np.minimum.at(new, pairs.right, low)
            if np.array_equal(new, labels):
                break
            labels = new
        return labels


def broken_clusterer(name: str, fn: Callable[[Components, int, Pairs], Any]) -> Components:
    return type(name, (Components,), {"name": name, "cluster": fn})()


def first_partner(self: Components, n: int, pairs: Pairs) -> np.ndarray:
    """Each record joins the first pair it appears in, in input order: depends on the order."""
    labels = np.arange(n, dtype=np.int64)
    taken = np.zeros(n, dtype=bool)
    for a, b in zip(pairs.left.tolist(), pairs.right.tolist()):
        if not taken[a] and not taken[b]:
            labels[b] = a
            taken[a] = taken[b] = True
    return labels


BROKEN_CLUSTERERS: dict[str, tuple[Callable[[Any, int, Pairs], Any], str]] = {
    "one_short": (
        lambda self, n, p: Components.cluster(self, n, p)[:-1] if n else np.zeros(0, np.int64),
        r"returned labels of shape \(14,\) for 15 records",
    ),
    "two_d": (lambda self, n, p: Components.cluster(self, n, p)[:, None], r"labels of shape \(15, 1\)"),
    "floats": (lambda self, n, p: Components.cluster(self, n, p).astype(float), r"labels must be integers \(int64\), got float64"),
    "unpaired_together": (
        lambda self, n, p: np.where(np.isin(np.arange(n), np.concatenate([p.left, p.right])), Components.cluster(self, n, p), -1),
        r"records without pairs must be singletons: record 4 shares label -1 with record\(s\) \[13\]",
    ),
    "order_dependent": (first_partner, r"depend on the order of the input pairs"),
    "random": (
        lambda self, n, p: np.random.default_rng().integers(0, 3, n) if len(p) else np.arange(n),
        r"not deterministic|records without pairs must be singletons",
    ),
    "all_one_without_pairs": (
        lambda self, n, p: Components.cluster(self, n, p) if len(p) else np.zeros(n, np.int64),
        r"without pairs every record must be a singleton",
    ),
}


def test_the_correct_test_clusterer_passes() -> None:
    labels = check_clusterer(Components())
    assert canonical_labels(labels).tolist() == [0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 2, 2, 3, 4, 3]
    check_clusterer(broken_clusterer("first_partner_sorted", lambda self, n, p: first_partner(self, n, p.normalized())))


@pytest.mark.parametrize("defect", sorted(BROKEN_CLUSTERERS))
def test_check_clusterer_fails_on_a_broken_clusterer(defect: str) -> None:
    fn, message = BROKEN_CLUSTERERS[defect]
    with pytest.raises(AssertionError, match=message) as err:
        check_clusterer(broken_clusterer(defect, fn))
    assert f"clusterer {defect!r}" in str(err.value)


# ---------------------------------------------------------------- normalizers

#: every built-in normalizer with the parameter sets its check runs
NORMALIZERS: dict[str, list[dict[str, Any]]] = {
    "text": [{}],
    "name": [{}, {"sort_tokens": True}, {"drop_titles": False}],
    "nickname": [{}, {"tokens": "first"}],
    "phone": [
        {},
        {"default_region": "GB"},
        {"default_region": None},
        {"foreign_country_code": "strip"},
        {"min_digits": 3, "drop_placeholders": False},
    ],
    "address": [{}],
    "email": [{}, {"gmail_dots": True}],
    "date": [{}, {"dayfirst": True}, {"yy_pivot": 30}],
    "digits": [{}],
    "lower": [{}],
    "strip": [{}],
    "split": [{}, {"delimiter": ","}],
}


def test_every_builtin_normalizer_is_checked() -> None:
    reg = default_registry()
    builtins = {c.name for c in reg.components["normalizer"].values() if c.plugin.distribution == DISTRIBUTION}
    assert builtins == set(NORMALIZERS), f"add the new normalizer to NORMALIZERS in {__file__}"


@pytest.mark.parametrize("name,params", [(n, p) for n, ps in sorted(NORMALIZERS.items()) for p in ps])
def test_builtin_normalizers_pass(name: str, params: dict[str, Any]) -> None:
    normalizer = component("normalizer", name, params)
    values = sample_values()
    keys = check_normalizer(normalizer, values)
    assert keys == normalize_column(values, [normalizer])
    assert len(keys) == len(values) and any(k is not None for k in keys)  # the check saw real keys
    assert all(k is None for v, k in zip(values, keys) if is_missing(v))


def test_the_sample_values_are_varied() -> None:
    values = sample_values()
    texts = [v for v in values if isinstance(v, str)]
    assert None in values and "" in values and any(v.isspace() for v in texts)  # missing ones
    assert any(not v.isascii() for v in texts) and any(v != v.strip() for v in texts if v.strip())
    assert any(v.isdigit() for v in texts) and any("@" in v for v in texts)
    assert normalize_column(values, ["date"]).count(None) < len(values) - 3  # date-like values parse
    assert len(set(texts)) < len(texts)  # repeats


def test_a_class_and_other_values_are_checked() -> None:
    digits: Any = default_registry().get("normalizer", "digits").cls
    assert check_normalizer(digits, [12, "a1b2", None, "N/A", "x", float("nan"), "٣4"]) == ["12", "12", None, None, None, None, "34"]
    with pytest.raises(AssertionError, match="is not a Normalizer"):
        check_normalizer(default_registry().get("shingler", "word").cls)  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="every value of the sample normalized to missing"):
        check_normalizer(digits, ["no digits", None, ""])
    with pytest.raises(AssertionError, match="every value of the sample normalized to missing"):
        check_normalizer(digits, [])


def squash(v: str) -> str | None:
    """Letters and digits only, casefolded; ``None`` when nothing is left."""
    return "".join(c for c in v.casefold() if c.isalnum()) or None


class Squash(Normalizer):
    """A correct batch normalizer (normalize() only)."""

    name = "squash"

    def normalize(self, values: list[str]) -> list[str | None]:
        return [squash(v) for v in values]


class SquashPerValue(Normalizer):
    """A correct per-value normalizer; it returns "" where nothing is left (read as missing)."""

    name = "squash_per_value"

    def per_value(self) -> Callable[[str], str | None]:
        return lambda v: squash(v) or ""


class SquashBoth(Squash):
    """Both methods, agreeing (one says None where the other says "")."""

    name = "squash_both"

    def per_value(self) -> Callable[[str], str | None]:
        return lambda v: squash(v) or ""


def test_the_correct_test_normalizers_pass() -> None:
    values = sample_values()
    want = [None if is_missing(v) else squash(v) for v in values]
    for normalizer in (Squash, Squash(), SquashPerValue(), SquashBoth()):
        assert check_normalizer(normalizer) == want


def test_an_empty_result_is_missing() -> None:
    """The machinery reads a result "" as missing: the chain gives None, and "" and None are the same answer."""
    assert SquashPerValue().normalize(["--x--", "!!"]) == ["x", ""]
    assert check_normalizer(SquashPerValue(), ["--x--", "¡¿!", None]) == ["x", None, None]
    assert normalize_column(["¡¿!", "¡¿!"], [SquashPerValue()]) == [None, None]


_serial = itertools.count()


class Stamped(Squash):
    """Each instance stamps its results with its own serial number."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.serial = next(_serial)


def previous_value_function(self: Normalizer) -> Callable[[str], str | None]:
    """A per-value function with memory: each result carries the first letter of the previous value."""
    previous = [""]

    def f(v: str) -> str | None:
        out = f"{squash(v)}{previous[0][:1]}"
        previous[0] = v
        return out

    return f


BROKEN_NORMALIZERS: dict[str, tuple[type[Normalizer], dict[str, Any], str]] = {
    "one_short": (
        Squash,
        {"normalize": lambda self, vs: [squash(v) for v in vs][:-1]},
        r"normalize\(\) returned \d+ values for \d+ values; it returns one str or None per value",
    ),
    "a_tuple": (Squash, {"normalize": lambda self, vs: tuple(squash(v) for v in vs)}, r"normalize\(\) must return a list .*got tuple"),
    "one_for_no_values": (
        Squash,
        {"normalize": lambda self, vs: [squash(v) for v in vs] if vs else [None]},
        r"\(no values\): normalize\(\) returned 1 values for 0 values",
    ),
    "not_a_string": (
        Squash,
        {"normalize": lambda self, vs: [len(v) for v in vs]},
        r"normalize\(\) returned int 10 for 'Anna Smith'; a normalizer returns a str or None",
    ),
    "bytes_per_value": (
        Normalizer,
        {"per_value": lambda self: lambda v: v.encode()},
        r"normalize\(\) returned bytes b'Anna Smith' for 'Anna Smith'",
    ),
    "empty_strings": (
        Squash,
        {"normalize": lambda self, vs: ["" for _ in vs]},
        r"every value of the sample normalized to missing \(None, \"\" or a placeholder\)",
    ),
    "placeholders": (Normalizer, {"per_value": lambda self: lambda v: "N/A"}, r"every value of the sample normalized to missing"),
    "raises": (
        Squash,
        {"normalize": lambda self, vs: [str(int(v)) for v in vs]},
        r"normalize\(\) raised ValueError .* a normalizer returns None for a value it cannot normalize",
    ),
    "raises_per_value": (
        Normalizer,
        {"normalize": lambda self, vs: [squash(v) for v in vs], "per_value": lambda self: lambda v: v.encode("ascii").decode()},
        r"the function of per_value\(\) raised UnicodeEncodeError",
    ),
    "neither": (Normalizer, {}, r"implements neither normalize\(\) nor per_value\(\)"),
    "random": (
        Squash,
        {"normalize": lambda self, vs: [f"{squash(v)}{random.random()}" for v in vs]},
        r"is not deterministic: two normalize\(\) calls on the same values differ \(at 'Anna Smith': ",
    ),
    "per_instance": (
        Stamped,
        {"normalize": lambda self, vs: [f"{squash(v)}{self.serial}" for v in vs]},
        r"is not deterministic: a new instance with the same parameters gives other results",
    ),
    "order_dependent": (
        Squash,
        {"normalize": lambda self, vs: [f"{squash(v)}{i}" for i, v in enumerate(vs)]},
        r"the result depends on the order of the values .*reversed.* \(at 'Anna Smith': 'annasmith0', then",
    ),
    "batch_dependent": (
        Squash,
        {"normalize": lambda self, vs: [f"{squash(v)}{len(vs)}" for v in vs]},
        r"the result depends on the other values of the batch",
    ),
    "per_value_with_memory": (
        Squash,
        {"per_value": previous_value_function},
        r"the function of per_value\(\) gives other results when called again",
    ),
    "disagree": (
        Squash,
        {"per_value": lambda self: str.casefold},
        r"normalize\(\) and per_value\(\) disagree; .* \(at 'Anna Smith': 'annasmith', then 'anna smith'\)",
    ),
    "per_value_not_callable": (
        Squash,
        {"per_value": lambda self: "casefold"},
        r"per_value\(\) must return a function of one value or None, got 'casefold'",
    ),
    "missing_requirement": (
        Squash,
        {"requires": ("no_such_module_for_er",)},
        r"requires the Python module\(s\) 'no_such_module_for_er', not installed here: pip install",
    ),
    "requires_a_string": (Squash, {"requires": "nicknames"}, r"requires must be a tuple of Python module names, got 'nicknames'"),
}


@pytest.mark.parametrize("defect", sorted(BROKEN_NORMALIZERS))
def test_check_normalizer_fails_on_a_broken_normalizer(defect: str) -> None:
    base, methods, message = BROKEN_NORMALIZERS[defect]
    broken = type(defect, (base,), {"name": defect, **methods})
    with pytest.raises(AssertionError, match=message) as err:
        check_normalizer(broken())
    assert f"normalizer {defect!r}" in str(err.value)
    with pytest.raises(AssertionError, match=message):  # the class, built with its default parameters
        check_normalizer(broken)


# ---------------------------------------------------------------- the plugin guide (docs/plugins.md) runs

# the guide's blocks are marked not run for the page harness (tests/docs), which cannot import them as a package
MARKER = "<!-- not run: the plugin module my_er_plugin: tests/test_testing.py runs it -->"  # a block of the module
TEST_MARKER = "<!-- not run: the plugin's test file: tests/test_testing.py runs it -->"  # a test file of that plugin


def guide_blocks(marker: str) -> list[str]:
    """The Python blocks right after ``marker`` in the plugin guide (docs/plugins.md), in order."""
    section = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(re.escape(marker) + r"\n```python\n(.*?)```", section, flags=re.DOTALL)
    assert section.count(marker) == len(blocks), f"a {marker} is not followed by a ```python block"
    return blocks


def test_plugin_guide_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module_blocks, test_blocks = guide_blocks(MARKER), guide_blocks(TEST_MARKER)
    assert len(module_blocks) >= 3 and len(test_blocks) >= 1, "the marked plugin examples are missing from docs/plugins.md"
    module = types.ModuleType("my_er_plugin")
    exec(compile("\n".join(module_blocks), str(GUIDE), "exec"), module.__dict__)  # noqa: S102 - the guide's code
    monkeypatch.setitem(sys.modules, "my_er_plugin", module)
    for code in test_blocks:  # the guide's test file, its test functions called
        namespace: dict[str, Any] = {"__name__": "test_my_plugin"}
        exec(compile(code, str(GUIDE), "exec"), namespace)  # noqa: S102
        tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
        assert tests
        for test in tests:
            test()
    reg = build_registry(extra_modules=[module])
    for family, name in (("shingler", "word_set"), ("blocker", "prefix"), ("verifier", "number_closeness")):
        assert reg.components[family][name].plugin.distribution == "(registered explicitly)"
    # the job the guide names, with its blocker and verifier
    (tmp_path / "a.csv").write_text("id,name,year\n1,Anna Smith,1990\n2,anna smyth,1991\n3,Bob Jones,1970\n4,Bobby Jones,1990\n")
    (tmp_path / "b.csv").write_text("id,name,year\n7,Anne Smith,1990\n8,Bob Jones,1971\n9,Carl,1990\n")
    job = tmp_path / "job.yaml"
    job.write_text(
        "mode: link\nthreshold: 0.3\n"
        "sources:\n  - {name: a, path: a.csv, id: id, fields: [name, year]}\n  - {name: b, path: b.csv, id: id, fields: [name, year]}\n"
        "blockers: [{type: prefix, field: name, length: 3}]\n"
        "verifier: {type: number_closeness, field: year, scale: 2}\n"
    )
    res = run_job(parse_job(job, reg), write=False)
    ids = res.records.ids
    found = {(ids[a], ids[b]) for a, b in zip(res.pairs.left.tolist(), res.pairs.right.tolist())}
    # candidates (1, 7) (2, 7) (3, 8) (4, 8); the years of 4 and 8 are 19 apart: rejected
    assert found == {("1", "7"), ("2", "7"), ("3", "8")}


def test_a_broken_plugin_guide_example_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guide's test block does fail when its plugin breaks the contract (here: no batch.allowed in link mode)."""
    blocks = guide_blocks(MARKER)
    broken = [b.replace("return batch.allowed(Pairs(left, right))", "return Pairs(left, right)") for b in blocks]
    assert broken != blocks
    module = types.ModuleType("my_er_plugin")
    exec(compile("\n".join(broken), str(GUIDE), "exec"), module.__dict__)  # noqa: S102
    monkeypatch.setitem(sys.modules, "my_er_plugin", module)
    namespace: dict[str, Any] = {"__name__": "test_my_plugin"}
    exec(compile(guide_blocks(TEST_MARKER)[0], str(GUIDE), "exec"), namespace)  # noqa: S102
    with pytest.raises(AssertionError, match="same source in link mode"):
        namespace["test_prefix"]()


# ---------------------------------------------------------------- explanations


def test_check_comparisons_on_every_explainable_builtin() -> None:
    """jaccard, field_score and fellegi_sunter pass; a verifier whose terms do not add up is caught."""
    from er_framework.testing import check_comparisons
    from er_plugins.documents import CharParams, CharShingler, JaccardParams, JaccardVerifier
    from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams
    from er_plugins.field_score import FieldScore, FieldScoreParams

    ctx = Context(seed=1, threshold=0.5)
    recs = sample_records()
    ts = CharShingler(CharParams(k=3), ctx).shingle(recs)
    n = len(recs)
    pairs = Pairs(np.array([i for i in range(n) for j in range(i + 1, n)]), np.array([j for i in range(n) for j in range(i + 1, n)]))
    cols = check_comparisons(JaccardVerifier(JaccardParams(), ctx), Batch(records=recs, tokens=ts), pairs)
    assert list(cols) == ["shared", "left_only", "right_only", "score"]
    people = Records.from_columns(
        [str(i) for i in range(8)],
        {
            "name": ["ann smith", "anne smith", "bob jones", "rob jones", "carl li", "karl li", "dee wu", None],
            "city": ["york", "york", "leeds", "leeds", None, "hull", "bath", "bath"],
        },
    )
    pp = Pairs(np.array([0, 0, 2, 4, 6, 1, 3]), np.array([1, 2, 3, 5, 7, 7, 6]))
    fields = [{"field": "name", "comparison": "jaro_winkler"}, {"field": "city", "comparison": "exact"}]
    rules = [{"field": "name", "scorer": "jaro_winkler"}, {"field": "city", "scorer": "exact", "missing": "penalize"}]
    check_comparisons(FieldScore(FieldScoreParams(fields=rules, threshold=50), ctx), Batch(records=people), pp)
    # the default training (random pairs, term frequencies on the name, the dependence of exact agreements)
    # and the former EM without random pairs
    fs_default = FellegiSunter(FellegiSunterParams(fields=fields, u_from_random_pairs=50), ctx)
    check_comparisons(fs_default, Batch(records=people), pp)
    fs = FellegiSunter(FellegiSunterParams(fields=fields, u_from_random_pairs=0, estimation="em"), ctx)
    cols = check_comparisons(fs, Batch(records=people), pp)
    assert [c for c in cols if c.startswith("level_")] == ["level_name", "level_city"]

    class Broken(JaccardVerifier):
        name = "broken"

        def comparisons(self, batch: Batch, pairs: Pairs, state: Any = None) -> dict[str, Any]:
            cols = super().comparisons(batch, pairs, state)
            cols["shared"] = cols["shared"] + 1
            return cols

    with pytest.raises(AssertionError, match="is not the score"):
        check_comparisons(Broken(JaccardParams(), ctx), Batch(records=recs, tokens=ts), pairs)
