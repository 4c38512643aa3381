"""Abilities as types (er_framework.capabilities): detection by type, the calls that depend on an ability."""

from __future__ import annotations

import numpy as np
import pytest

from er_framework.capabilities import (
    CAPABILITIES,
    Blocked,
    Diagnostic,
    GroupedKeys,
    Keyed,
    LimitedKeys,
    Multiset,
    MultisetSigning,
    Partitionable,
    Reporting,
    SignatureScreen,
    Tokenized,
    WholeCorpus,
    Windowed,
    ability,
    block,
    capabilities_of,
    has,
    multisets,
    shingle_with_report,
)
from er_framework.components import Blocker, Shingler
from er_framework.data import Batch, Pairs, Records, TokenSets
from er_framework.testing import sample_records
from er_plugins.documents import CharShingler, JaccardVerifier, LshBands, MinHash
from er_plugins.fingerprints import GridBits, GridCells
from er_plugins.news import StopwordShingler
from er_plugins.oph import OnePermutationHash
from er_plugins.records_blocking import FieldHash, SortedNeighbourhood


def test_the_abilities_in_pipeline_order() -> None:
    names = list(CAPABILITIES)
    assert names[:11] == [
        "whole_corpus",
        "partitionable",
        "multiset",
        "multiset_signing",
        "reporting",
        "keyed",
        "grouped_keys",
        "limited_keys",
        "windowed",
        "diagnostic",
        "signature_screen",
    ]
    assert issubclass(Partitionable, WholeCorpus) and issubclass(GroupedKeys, Keyed) and issubclass(LimitedKeys, Keyed)


@pytest.mark.parametrize(
    "cls, abilities",
    [
        (CharShingler, ["multiset"]),
        (StopwordShingler, []),
        (GridCells, ["whole_corpus", "partitionable"]),
        (MinHash, ["multiset_signing"]),
        (OnePermutationHash, ["multiset_signing"]),
        (LshBands, ["reporting", "keyed", "diagnostic"]),
        (FieldHash, ["reporting", "keyed", "grouped_keys", "limited_keys"]),
        (SortedNeighbourhood, ["reporting", "windowed"]),
        (GridBits, ["reporting", "keyed", "limited_keys"]),
    ],
)
def test_the_built_ins_declare_their_abilities(cls: type, abilities: list[str]) -> None:
    assert capabilities_of(cls) == abilities
    assert has(JaccardVerifier, SignatureScreen) and not has(JaccardVerifier(), Diagnostic)


def test_has_and_ability_take_instances_and_classes() -> None:
    sh = CharShingler()
    assert has(sh, Multiset) and has(CharShingler, Multiset) and not has(sh, WholeCorpus)
    assert ability(sh, Multiset) is sh and ability(sh, Partitionable) is None
    assert capabilities_of(sh) == capabilities_of(CharShingler)
    assert has(MinHash(), MultisetSigning) and ability(MinHash(), MultisetSigning) is not None


class Plain(Shingler):
    name = "plain"

    def shingle(self, records: Records) -> TokenSets:
        return TokenSets.from_sets([{len(t)} for t in records.text()])


class AllPairs(Blocker):
    name = "all_pairs"

    def candidates(self, batch: Batch) -> Pairs:
        left, right = np.triu_indices(len(batch), k=1)
        return Pairs(left, right)


def test_calls_that_depend_on_an_ability() -> None:
    recs = sample_records()
    # multisets: the shingler's own, or its sets
    char = CharShingler()
    assert multisets(char, recs).sizes.sum() >= char.shingle(recs).sizes.sum()
    assert multisets(Plain(), recs).equals(Plain().shingle(recs))
    # shingle_with_report: a partitionable shingler's report, an empty one otherwise
    got = shingle_with_report(Plain(), recs)
    assert got.report == {} and got.tokens.equals(Plain().shingle(recs))
    prints = Records.from_columns(["a", "b"], {"minutiae": ["[[1, 2], [50, 50]]", "[]"]})
    grid = GridCells(GridCells.Params(field="minutiae", width=100, height=100, grid_x=10, grid_y=10))
    reported = shingle_with_report(grid, prints)
    assert isinstance(reported, Tokenized) and reported.report["records"] == 2
    assert reported.tokens.equals(grid.shingle(prints))
    # block: a reporting blocker's report, an empty one otherwise
    batch = Batch(records=recs)
    plain = block(AllPairs(), batch)
    assert isinstance(plain, Blocked) and plain.report == {} and len(plain.pairs) == len(recs) * (len(recs) - 1) // 2
    sn = SortedNeighbourhood(SortedNeighbourhood.Params(key=["text"], window=2))
    blocked = block(sn, batch)
    assert blocked.report["window"] == 2 and np.array_equal(blocked.pairs.left, sn.candidates(batch).left)


def test_components_keep_no_state_between_calls() -> None:
    """Results are values: a call sets no attribute on the component (describe() says what the params say)."""
    recs = Records.from_columns([f"r{i}" for i in range(6)], {"x": ["a", "a", "b", "b", "b", None]})
    batch = Batch(records=recs)
    for blocker in (FieldHash(FieldHash.Params(fields=["x"])), SortedNeighbourhood(SortedNeighbourhood.Params(key=["x"]))):
        before, described = dict(vars(blocker)), blocker.describe()
        assert isinstance(blocker, Reporting)
        blocker.block(batch)
        if isinstance(blocker, Keyed):
            blocker.lookup_keys(batch)
            blocker.partition_report(batch)
        if isinstance(blocker, Windowed):
            blocker.window_keys(batch)
        assert vars(blocker) == before and blocker.describe() == described
    grid = GridCells(GridCells.Params(field="x", width=10, height=10, grid_x=2, grid_y=2))
    before = dict(vars(grid))
    grid.shingle_reported(Records.from_columns(["a"], {"x": ["[[1, 1]]"]}))
    assert vars(grid) == before
