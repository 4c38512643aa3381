"""The Dask executor's read-phase shuffles, run in this process: the exact-duplicate groups of the parts are the
groups of all records, and duplicate ids across partitions are found."""

from __future__ import annotations

import numpy as np
import pytest

from er_framework.engine.stages.exact import exact_groups_from_keys
from er_framework.executors.dask_scan import (
    EXACT_STATS,
    ScanPart,
    task_active,
    task_exact_pairs_split,
    task_exact_part,
    task_exact_split,
    task_id_check,
    task_id_split,
)
from er_framework.kernels.groups import pack_pairs


def _scans(keys: np.ndarray, nonempty: np.ndarray, cuts: list[int]) -> tuple[list[ScanPart], np.ndarray]:
    bounds = list(zip([0, *cuts], [*cuts, len(keys)]))
    scans = [ScanPart(np.array([f"r{i}" for i in range(a, b)], dtype=object), keys[a:b], nonempty[a:b]) for a, b in bounds]
    offsets = np.array([0, *cuts, len(keys)], dtype=np.int64)
    return scans, offsets


@pytest.mark.parametrize("collapse", [True, False])
@pytest.mark.parametrize("n, n_out, distinct", [(0, 3, 1), (1, 1, 1), (200, 4, 20), (500, 7, 400), (300, 1, 3)])
def test_the_exact_parts_give_the_groups_of_every_record(collapse: bool, n: int, n_out: int, distinct: int) -> None:
    rng = np.random.default_rng(n + n_out + collapse)
    keys = rng.integers(0, distinct, n).astype(np.uint64)
    nonempty = rng.random(n) > 0.1
    source = rng.integers(0, 2, n).astype(np.int64)
    cuts = sorted(rng.integers(0, n + 1, 3).tolist())
    scans, offsets = _scans(keys, nonempty, cuts)
    # a partition holds one source: give each partition the source of its first record
    part_src = [int(source[a]) if a < n else 0 for a in offsets[:-1]]
    src_of_rec = np.repeat(np.array(part_src, dtype=np.int64), np.diff(offsets))
    split = [task_exact_split(s, int(offsets[i]), part_src[i], n_out) for i, s in enumerate(scans)]
    parts = [task_exact_part(collapse, offsets, *[sp[j] for sp in split]) for j in range(n_out)]
    want = exact_groups_from_keys(keys, nonempty, src_of_rec, collapse)
    got = {(int(a), int(b)) for p in parts for a, b in zip(p.left, p.right)}
    assert got == set(zip(want.pairs.left.tolist(), want.pairs.right.tolist()))
    stats = np.sum([p.stats for p in parts], axis=0) if parts else np.zeros(len(EXACT_STATS))
    assert dict(zip(EXACT_STATS, stats.tolist())) == {k: want.stats[k] for k in EXACT_STATS}
    active = np.concatenate(
        [task_active(len(s.ids), int(offsets[i]), *[p.collapsed[i] for p in parts]) + offsets[i] for i, s in enumerate(scans)]
    )
    assert np.array_equal(active, want.active)
    # the exact pairs sent by pair hash: every pair exactly once
    sent = [task_exact_pairs_split(p, 5) for p in parts]
    packed = np.sort(np.concatenate([x for s in sent for x in s])) if sent else np.zeros(0, np.uint64)
    assert np.array_equal(packed, np.sort(pack_pairs(want.pairs.left, want.pairs.right)))


def test_ids_seen_twice_in_a_source_are_found_whatever_partitions_hold_them() -> None:
    def scan(ids: list[str]) -> ScanPart:
        return ScanPart(np.array(ids, dtype=object), np.zeros(len(ids), np.uint64), np.ones(len(ids), bool))

    parts = [(scan(["a", "b", "c"]), 0), (scan(["d", "a"]), 0), (scan(["a", "e"]), 1), (scan(["é", "é"]), 1)]
    split = [task_id_split(s, src, 3) for s, src in parts]
    found = [task_id_check(*[sp[j] for sp in split]) for j in range(3)]
    assert sum(c for c, _ in found) == 2
    assert sorted(x for _, ex in found for x in ex) == [(0, "a"), (1, "é")]
    clean = [task_id_split(scan(["x", "y"]), 0, 2), task_id_split(scan(["x"]), 1, 2)]
    assert all(task_id_check(*[sp[j] for sp in clean]) == (0, []) for j in range(2))
