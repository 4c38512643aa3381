"""Components run partition by partition give the whole-corpus answer (what the Dask executor relies on).

Differential tests against each component's own whole-batch method: bucket
keys against ``candidates``, per-partition shingles against one call.
"""

from __future__ import annotations

import numpy as np
import pytest

from er_framework.capabilities import Partitionable, has
from er_framework.components import Context
from er_framework.data import Batch, Records, Signatures
from er_framework.errors import ErError
from er_framework.kernels.bits import bits_from_bool, bool_from_bits, unpack_bits
from er_framework.kernels.bits_candidates import cell_sets
from er_framework.synth.fingerprints import simulate_cells, simulate_minutiae
from er_framework.testing import check_partitionable
from er_plugins.fingerprints import (
    GridBits,
    GridBitsParams,
    GridCells,
    GridParams,
    set_members,
)


def _bits_batch(bits: np.ndarray, n_bits: int, source: np.ndarray | None = None, link: bool = False) -> Batch:
    n = bits.shape[0]
    src = np.zeros(n, dtype=np.int32) if source is None else source.astype(np.int32)
    recs = Records(ids=[str(i) for i in range(n)], source=src, source_names=["a", "b"], fields={})
    empty = ~bool_from_bits(bits).any(axis=1)
    batch = Batch(records=recs, cross_source_only=link, seed=0)
    batch.signatures = Signatures(values=bits, kind="bits", empty=empty, meta={"n_bits": n_bits})
    return batch


def _pairs_from_keys(rows: np.ndarray, keys: np.ndarray, cap: int | None, source: np.ndarray, link: bool) -> set[tuple[int, int]]:
    """The naive reading of the keys contract: pairs of every bucket within the cap."""
    buckets: dict[int, list[int]] = {}
    for r, k in zip(rows.tolist(), keys.tolist()):
        buckets.setdefault(k, []).append(r)
    return {
        (min(x, y), max(x, y))
        for m in buckets.values()
        if cap is None or len(m) <= cap
        for x in m
        for y in m
        if x != y and (not link or source[x] != source[y])
    }


@pytest.mark.parametrize(
    "occupancy, cells, sets, cap, link",
    [
        (0.2, 3, 256, None, False),
        (0.3, 2, 64, 18, False),
        (0.25, 3, 512, None, True),
        (0.5, 1, 40, 116, True),
    ],
)
def test_grid_bits_lookup_keys_give_the_candidates(occupancy: float, cells: int, sets: int, cap: int | None, link: bool) -> None:
    bits, _ = simulate_cells(120, 2, 100, occupancy, 0.8, seed=cells * 7 + sets)
    bits = np.concatenate([bits, np.zeros((3, bits.shape[1]), dtype=np.uint64), bits[:4]])  # empty prints, copies
    rng = np.random.default_rng(sets)
    source = rng.integers(0, 2, len(bits)).astype(np.int32)
    batch = _bits_batch(bits, 100, source, link)
    blocker = GridBits(GridBitsParams(sets=sets, cells=cells, max_bucket_size=cap), Context(seed=5))
    blocked = blocker.block(batch)
    report = blocked.report
    cand = blocked.pairs
    expected = set(zip(cand.left.tolist(), cand.right.tolist()))
    rows, keys = blocker.lookup_keys(batch)
    assert blocker.lookup_cap() == cap
    assert _pairs_from_keys(rows, keys, cap, source, link) == expected
    assert len(expected) > 20
    if cap is not None:  # the cap was reached by some bucket, so it mattered
        assert report["oversized_buckets"] > 0
    # max_pairs: the keys' bucket sizes give the pairs candidates() counts before making any
    sizes = np.unique(keys, return_counts=True)[1]
    kept = sizes[(sizes >= 2) & (sizes <= (cap or len(bits)))]
    raw, largest = int((kept * (kept - 1) // 2).sum()), int(sizes.max())
    assert raw == report["raw_pairs"]
    # the report of block(), from two partitions' partition_report and the keys' bucket statistics
    over = sizes[sizes > (cap or len(bits))]
    buckets = {
        "buckets": int((sizes >= 2).sum()),
        "largest_bucket": largest,
        "oversized_buckets": len(over),
        "pairs_skipped": int((over * (over - 1) // 2).sum()),
        "raw_pairs": raw,
    }
    half = len(bits) // 2
    parts = [blocker.partition_report(batch.subset(np.arange(a, b, dtype=np.int64))) for a, b in ((0, half), (half, len(bits)))]
    fresh = GridBits(GridBitsParams(sets=sets, cells=cells, max_bucket_size=cap), Context(seed=5))
    assert fresh.merge_reports(parts, buckets) == report
    for limit in (raw, raw - 1):
        limited = GridBits(GridBitsParams(sets=sets, cells=cells, max_bucket_size=cap, max_pairs=limit), Context(seed=5))
        if limit == raw:
            limited.candidates(batch)
            limited.check_lookup_pairs(raw, largest)
            continue
        with pytest.raises(ErError) as local:
            limited.candidates(batch)
        with pytest.raises(ErError) as keyed:
            limited.check_lookup_pairs(raw, largest)
        assert keyed.value.render() == local.value.render() and "max_pairs" in local.value.render()


def test_set_members_is_the_naive_membership() -> None:
    bits, _ = simulate_cells(30, 2, 130, 0.3, 0.8, seed=1)
    sets = cell_sets(200, 2, 130, seed=3)
    rows, which = set_members(bits, sets)
    cells = [
        set(r)
        for r in (
            unpack_bits(bits, 130).tokens[a:b].tolist()
            for a, b in zip(unpack_bits(bits, 130).indptr[:-1], unpack_bits(bits, 130).indptr[1:])
        )
    ]
    naive = [(i, j) for i in range(len(bits)) for j in range(len(sets)) if set(sets[j].tolist()) <= cells[i]]
    assert list(zip(rows.tolist(), which.tolist())) == naive and len(naive) > 100
    # a set repeated twice is two buckets (as candidates() counts them)
    twice = np.concatenate([sets[:1], sets[:1]])
    _, w2 = set_members(bits, twice)
    assert (np.bincount(w2, minlength=2) == np.bincount(w2, minlength=2)[0]).all()
    assert len(set_members(bits[:0], sets)[0]) == 0
    assert bits_from_bool(np.zeros((0, 130), dtype=bool)).shape == (0, 3)


def _prints_records(prints: list[np.ndarray]) -> Records:
    import json

    values = [json.dumps(p.round(3).tolist()) for p in prints]
    return Records(
        ids=[f"p{i}" for i in range(len(values))],
        source=np.zeros(len(values), dtype=np.int32),
        source_names=["prints"],
        fields={"minutiae": values},
    )


def test_grid_cells_per_partition_equal_one_call() -> None:
    """A print's cells depend on that print alone: partitions shingled apart give the same token sets."""
    prints, _ = simulate_minutiae(40, 2, 500.0, 500.0, seed=4)
    recs = _prints_records(prints + [np.zeros((0, 2))])
    sh = GridCells(GridParams(width=500, height=500, grid_x=20, grid_y=20, margin=3.0))
    whole = sh.shingle(recs)
    report_whole = sh.merge_reports([sh.shingle_reported(recs).report])
    cuts = [0, 7, 8, 30, 61, len(recs)]
    got = [sh.shingle_reported(recs.take(np.arange(a, b, dtype=np.int64))) for a, b in zip(cuts[:-1], cuts[1:])]
    parts = [g.tokens for g in got]
    assert np.array_equal(np.concatenate([p.sizes for p in parts]), whole.sizes)
    assert np.array_equal(np.concatenate([p.tokens for p in parts]), whole.tokens)
    assert has(GridCells, Partitionable)
    # the report's counts, summed over the partitions, give the whole corpus's report
    assert sh.merge_reports([g.report for g in got]) == report_whole
    check_partitionable(sh, recs)


# ------------------------------------------------------------------ sorted neighbourhood


def _tricky_records(n: int, seed: int) -> Records:
    rng = np.random.default_rng(seed)
    pool = [
        "a",
        "ab",
        "abc",
        "b",
        "",
        None,
        "a\x00",
        "a\x00b",
        "a\x01",
        "\u00e9t\u00e9",
        "\U0001f600",
        "zz",
        "Ab",
        "a b",
        "\x00a",
        "\x00\x00",
        "\x00b",
        "\x01",
        "a\x00\x01",
        "x" * 20 + "\x00",
    ]

    def pick() -> list[str | None]:
        return [pool[i] for i in rng.integers(0, len(pool), n)]

    return Records(
        ids=[str(i) for i in range(n)],
        source=rng.integers(0, 2, n).astype(np.int32),
        source_names=["a", "b"],
        fields={"last": pick(), "first": pick(), "zip": pick()},
    )


def _windows_naive(blocker, batch: Batch) -> set[tuple[int, int]]:
    """The window_keys contract read literally: sort by (key, row), pair the next window - 1, union the passes."""
    w = blocker.window_size()
    src = batch.records.source
    out: set[tuple[int, int]] = set()
    for rows, keys in blocker.window_keys(batch):
        order = [r for _, r in sorted(zip(keys.tolist(), rows.tolist()))]
        for i, a in enumerate(order):
            for b in order[i + 1 : i + w]:
                if not batch.cross_source_only or src[a] != src[b]:
                    out.add((min(a, b), max(a, b)))
    return out


@pytest.mark.parametrize(
    "params, link",
    [
        ({"key": ["last", "first"], "window": 3}, False),
        ({"key": ["last", "first"], "window": 5}, True),
        ({"keys": [["last"], ["zip", "first"]], "prefix": {"first": 1, "zip": 2}, "window": 4}, False),
        ({"keys": [["first", "last", "zip"]], "window": 2}, True),
        ({"keys": [{"any_order": ["first", "last"]}, ["zip"]], "prefix": {"first": 2}, "window": 3}, False),
        ({"key": {"any_order": ["zip", "first", "last"]}, "window": 4}, True),
    ],
)
def test_sorted_neighbourhood_window_keys_give_the_candidates(params: dict, link: bool) -> None:
    from er_plugins.records_blocking import (
        SortedNeighbourhood,
        SortedNeighbourhoodParams,
    )

    recs = _tricky_records(300, seed=len(str(params)))
    batch = Batch(records=recs, cross_source_only=link)
    blocker = SortedNeighbourhood(SortedNeighbourhoodParams(**params))
    cand = blocker.candidates(batch)
    expected = set(zip(cand.left.tolist(), cand.right.tolist()))
    assert _windows_naive(blocker, batch) == expected and len(expected) > 50


def test_sort_strings_order_the_value_tuples() -> None:
    from er_plugins.records_blocking import sort_strings

    recs = _tricky_records(400, seed=9)
    cols = [recs.fields["last"], recs.fields["first"]]
    rows, keys = sort_strings(cols, [None, 2])
    tuples = {r: (cols[0][r], cols[1][r][:2]) for r in range(len(recs)) if cols[0][r] and cols[1][r]}
    assert sorted(tuples) == rows.tolist()
    by_key = [r for _, r in sorted(zip(keys.tolist(), rows.tolist()))]
    assert by_key == sorted(tuples, key=lambda r: (tuples[r], r))
    # equal keys exactly for equal tuples ("a" + "bc" is not "ab" + "c")
    k = dict(zip(rows.tolist(), keys.tolist()))
    for a in list(tuples)[:60]:
        for b in list(tuples)[:60]:
            assert (k[a] == k[b]) == (tuples[a] == tuples[b])
    r2, k2 = sort_strings([["a", "ab", None], ["bc", "c", "x"]], [None, None])
    assert r2.tolist() == [0, 1] and k2[0] != k2[1] and k2[0] < k2[1]


# ------------------------------------------------------------------ the contract kit's checks of these capabilities


def test_the_contract_kit_accepts_the_built_ins_and_catches_broken_capabilities() -> None:
    from er_framework.data import Pairs
    from er_framework.testing import check_pair_codes, check_shingler, check_window_keys
    from er_plugins.fellegi_sunter import FellegiSunter, FellegiSunterParams, FSField
    from er_plugins.records_blocking import (
        SortedNeighbourhood,
        SortedNeighbourhoodParams,
    )

    prints, _ = simulate_minutiae(12, 2, 500.0, 500.0, seed=8)
    check_shingler(GridCells(GridParams(width=500, height=500, grid_x=10, grid_y=10, margin=2.0)), _prints_records(prints))

    recs = _tricky_records(120, seed=2)
    sn = SortedNeighbourhood(SortedNeighbourhoodParams(keys=[["last", "first"], ["zip"]], prefix={"first": 1}, window=4))
    for link in (False, True):
        assert len(check_window_keys(sn, Batch(records=recs, cross_source_only=link))) == 2

    class PositionKeys(SortedNeighbourhood):  # a key that depends on the batch, not the record alone
        def window_keys(self, batch: Batch) -> list:
            rows = np.arange(len(batch), dtype=np.int64)
            return [(rows, np.array([f"{len(batch) - i:05d}" for i in range(len(batch))]))]

    with pytest.raises(AssertionError):
        check_window_keys(PositionKeys(SortedNeighbourhoodParams(key=["last"], window=3)), Batch(records=recs))

    fields = [
        FSField(field="last", comparison="jaro_winkler", levels=[100, 80]),
        FSField(field="first", comparison="ratio", levels=[100, 60]),
        FSField(field="zip", comparison="exact"),
    ]
    rng = np.random.default_rng(4)
    left = rng.integers(0, 60, 300)
    pairs = Pairs(left, left + rng.integers(1, 60, 300)).normalized()
    for link, k in ((False, 200), (True, 0)):
        est = "sessions" if k else "em"  # the training sessions hold u of random pairs: none, the former EM
        fs = FellegiSunter(FellegiSunterParams(fields=fields, u_from_random_pairs=k, threshold=0.5, estimation=est), Context(seed=1))
        check_pair_codes(fs, Batch(records=recs, cross_source_only=link), pairs)

    class CountedCodes(FellegiSunter):  # a code that depends on the other pairs
        def pair_codes(self, batch: Batch, pairs: Pairs) -> np.ndarray:
            return super().pair_codes(batch, pairs) * 0 + len(pairs)

    with pytest.raises(AssertionError, match="two records alone"):
        check_pair_codes(CountedCodes(FellegiSunterParams(fields=fields, threshold=0.5)), Batch(records=recs), pairs)


@pytest.mark.parametrize("alphabet", ["ab\x00", "\x00\x01ab", "ab\u00e9\U0001f600", "ab"])
@pytest.mark.parametrize("prefix", [None, 2])
def test_field_codes_rank_every_value_as_python_sorts_it(alphabet: str, prefix: int | None) -> None:
    """Values holding NUL characters too (numpy's StringDType sort merged distinct ones): codes are the
    ranks of the distinct values (cut to the prefix) in Python's code-point order."""
    from er_plugins.records_blocking import field_codes

    rng = np.random.default_rng(len(alphabet))
    values = ["".join(alphabet[i] for i in rng.integers(0, len(alphabet), rng.integers(1, 25))) for _ in range(1500)]
    values += [None, "", values[0]]
    codes, n_distinct = field_codes(values, prefix)
    cut = [v[:prefix] if v else None for v in values]
    distinct = sorted({c for c in cut if c})
    rank = {v: i for i, v in enumerate(distinct)}
    assert codes.tolist() == [rank[c] if c else -1 for c in cut] and n_distinct == len(distinct) > 5
