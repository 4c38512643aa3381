"""The contract checks of the abilities (er_framework.testing_abilities): the built-ins pass them, components
that break an ability's promise fail them with a message naming the rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from er_framework.capabilities import Blocked, Keyed, Partitionable, Reporting, SignatureScreen, Tokenized, has
from er_framework.components import Blocker, Context, Shingler
from er_framework.data import Batch, Pairs, Records, TokenSets
from er_framework.testing import check_component
from er_framework.testing_abilities import (
    bucket_statistics,
    check_abilities,
    check_diagnostic,
    check_keyed_reports,
    check_partitionable,
    check_reporting,
    check_signature_screen,
)
from er_framework.testing_support import sample_records
from er_plugins.documents import CharShingler, JaccardVerifier, LshBands, MinHash
from er_plugins.fingerprints import GridCells
from er_plugins.records_blocking import FieldHash


def text_batch(link: bool = False) -> Batch:
    texts = [
        "the quick brown fox",
        "the quick brown fox!",
        "a slow green turtle",
        "a slow green turtles",
        "nothing alike here",
        "",
        "the quick brown fax",
        "lorem ipsum dolor",
    ]
    recs = Records.concat(
        [
            Records.from_columns([f"a{i}" for i in range(4)], {"text": texts[:4]}, "A"),
            Records.from_columns([f"b{i}" for i in range(4)], {"text": texts[4:]}, "B"),
        ]
    )
    ts = CharShingler(CharShingler.Params(k=3)).shingle(recs)
    sig = MinHash(MinHash.Params(num_perm=64), Context(seed=3)).build(ts)
    return Batch(records=recs, tokens=ts, signatures=sig, cross_source_only=link)


def people_batch(link: bool = False) -> Batch:
    names = ["anna", "anna", "bob", "bob", "bob", None, "carl", "anna", "bob", "dora"]
    recs = Records.from_columns([f"r{i}" for i in range(len(names))], {"name": names})
    recs.source[:] = np.arange(len(names)) % 2
    recs.source_names = ["a", "b"]
    return Batch(records=recs, cross_source_only=link)


def test_the_built_ins_pass_the_checks_of_their_abilities() -> None:
    batch = text_batch()
    lsh = LshBands(LshBands.Params(bands=16, rows=4, max_bucket_size=3))
    assert check_abilities(lsh, batch) == ["reporting", "keyed", "diagnostic"]
    fh = FieldHash(FieldHash.Params(fields=["name"], max_block_size=2))
    assert check_abilities(fh, people_batch(True)) == ["reporting", "keyed", "grouped_keys", "limited_keys"]
    assert check_abilities(CharShingler, batch) == ["multiset"]
    assert check_abilities(MinHash, batch) == ["multiset_signing"]
    prints = Records.from_columns(["a", "b", "c"], {"minutiae": ["[[1, 2], [50, 50]]", "[]", "[[9, 9]]"]})
    grid = GridCells(GridCells.Params(field="minutiae", width=100, height=100, grid_x=10, grid_y=10))
    assert check_abilities(grid, Batch(records=prints)) == ["partitionable"]
    assert check_keyed_reports(fh, people_batch(False))["records"] == 10
    stats = bucket_statistics(fh, people_batch(False))
    assert stats["oversized_buckets"] == 2 and stats["groups"][0]["oversized_records"] == 7


def test_check_component_dispatches_by_family() -> None:
    batch = text_batch()
    assert check_component(CharShingler()).sizes.sum() > 0  # sample records
    assert check_component(MinHash(MinHash.Params(num_perm=16)), batch).values.shape == (len(batch), 16)
    assert len(check_component(LshBands(LshBands.Params(bands=16, rows=4)), batch)) > 0
    pairs = Pairs(np.array([0, 0, 2]), np.array([1, 6, 3]))
    assert check_component(JaccardVerifier(JaccardVerifier.Params(threshold=0.5)), batch, pairs).shape == (3,)
    with pytest.raises(AssertionError, match="needs a batch with token sets"):
        check_component(MinHash(), Batch(records=sample_records()))
    with pytest.raises(AssertionError, match="needs pairs"):
        check_component(JaccardVerifier(JaccardVerifier.Params(threshold=0.5)), batch)


class LastReport(Reporting, Blocker):
    """Keeps its last call's report and shows it in describe(): state, not a value."""

    name = "last_report"

    def block(self, batch: Batch) -> Blocked:
        left, right = np.triu_indices(len(batch), k=1)
        self.last = {"records": len(batch)}
        return Blocked(batch.allowed(Pairs(left, right)), dict(self.last))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **getattr(self, "last", {})}


class OtherPairs(LastReport):
    name = "other_pairs"

    def block(self, batch: Batch) -> Blocked:
        got = super().block(batch)
        return Blocked(got.pairs.select(np.arange(len(got.pairs)) > 0), {})

    def describe(self) -> dict[str, Any]:
        return Blocker.describe(self)

    def candidates(self, batch: Batch) -> Pairs:
        left, right = np.triu_indices(len(batch), k=1)
        return batch.allowed(Pairs(left, right))


def test_check_reporting_catches_state_and_other_pairs() -> None:
    with pytest.raises(AssertionError, match=r"describe\(\) changed after blocking; return the report"):
        check_reporting(LastReport(), people_batch())
    with pytest.raises(AssertionError, match="block's pairs differ from candidates"):
        check_reporting(OtherPairs(), people_batch())


class WrongMerge(FieldHash):
    """Merges the partitions' reports into a report that is not block()'s."""

    name = "wrong_merge"

    def merge_reports(self, reports: list[dict[str, Any]], buckets: dict[str, Any]) -> dict[str, Any]:
        return {**super().merge_reports(reports, buckets), "records": 0}


def test_check_keyed_reports_compares_the_merged_report_with_blocks() -> None:
    assert isinstance(WrongMerge(WrongMerge.Params(fields=["name"])), Keyed)
    with pytest.raises(AssertionError, match=r"merge_reports .* differs from block\(\)'s report; differing keys: \['records'\]"):
        check_keyed_reports(WrongMerge(WrongMerge.Params(fields=["name"])), people_batch())


class MaxLength(Partitionable, Shingler):
    """Its report is the longest text of a call, but merge_reports sums: not combinable."""

    name = "max_length"

    def shingle_reported(self, records: Records) -> Tokenized:
        texts = records.text()
        return Tokenized(TokenSets.from_sets([{len(t)} for t in texts]), {"longest": max(map(len, texts), default=0)})

    def merge_reports(self, reports: list[dict[str, Any]]) -> dict[str, Any]:
        return {"longest": sum(r["longest"] for r in reports)}


def test_check_partitionable_catches_reports_that_do_not_merge() -> None:
    with pytest.raises(AssertionError, match="merge_reports of the two halves' reports differs"):
        check_partitionable(MaxLength())


class BoldScreen(JaccardVerifier):
    """Rejects every pair, with an estimate of 1."""

    name = "bold_screen"

    def decided_by_signatures(self, batch: Batch, pairs: Pairs) -> tuple[np.ndarray, np.ndarray]:
        return np.ones(len(pairs), dtype=bool), np.ones(len(pairs))


def test_check_signature_screen() -> None:
    batch = text_batch()
    pairs = Pairs(np.array([0, 0, 2, 4]), np.array([1, 6, 3, 7]))
    off = JaccardVerifier(JaccardVerifier.Params(threshold=0.5))
    assert check_signature_screen(off, batch, pairs) is None  # skip_unlikely off: nothing decided
    on = JaccardVerifier(JaccardVerifier.Params(threshold=0.9, skip_unlikely=1e-9))
    got = check_signature_screen(on, batch, pairs)
    assert got is not None and got[0].dtype == np.bool_
    assert has(BoldScreen, SignatureScreen)
    with pytest.raises(AssertionError, match="estimate at or above the threshold"):
        check_signature_screen(BoldScreen(BoldScreen.Params(threshold=0.5)), batch, pairs)


def test_check_diagnostic() -> None:
    lsh = LshBands(LshBands.Params(bands=8, rows=4), Context(threshold=0.5, seed=1))
    got = check_diagnostic(lsh, text_batch(), sample=8)
    assert got is not None and got["s_curve"]["threshold"] == 0.5
