"""The Dask executor's answer tasks: a verified pair expanded over the groups of copies of its two ends is
what cross_group_pairs lists (the whole answer is checked in test_dask_finish.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from er_framework.data import Pairs, Records
from er_framework.engine.stages.exact import exact_groups_from_keys
from er_framework.executors.dask_answer import task_expand, task_group_split
from er_framework.executors.dask_scan import ScanPart, task_active, task_exact_part, task_exact_split
from er_framework.kernels.groups import cross_group_pairs


class _Inline:
    """A client that runs every task at once in this process (the futures are the values)."""

    def submit(self, fn: Any, *args: Any, **_: Any) -> Any:
        return fn(*args)

    def gather(self, futures: Any) -> Any:
        return futures


def _setup(n: int, n_parts: int, distinct: int, seed: int, mode: str) -> tuple[Any, Any, Any, Any]:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, distinct, n).astype(np.uint64)
    nonempty = rng.random(n) > 0.05
    cuts = sorted(rng.integers(0, n + 1, n_parts - 1).tolist())
    offsets = np.array([0, *cuts, n], dtype=np.int64)
    part_src = [0 if i < n_parts // 2 else 1 for i in range(n_parts)]
    src = np.repeat(np.array(part_src, dtype=np.int32), np.diff(offsets))
    ids = np.array([f"id,{i}" if i % 7 == 0 else f"id{i}" for i in range(n)], dtype=object)
    scans = [ScanPart(ids[a:b], keys[a:b], nonempty[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    split = [task_exact_split(s, int(offsets[i]), part_src[i], n_parts) for i, s in enumerate(scans)]
    exact_parts = [task_exact_part(True, offsets, *[sp[j] for sp in split]) for j in range(n_parts)]
    exact = exact_groups_from_keys(keys, nonempty, src, collapse=True)
    act = exact.active
    left = rng.choice(act, 3 * n // 4) if len(act) else np.zeros(0, np.int64)
    right = rng.choice(act, 3 * n // 4) if len(act) else np.zeros(0, np.int64)
    verified = Pairs(left, right, rng.random(len(left)).round(3)).normalized()
    # verified pairs split into parts at random, as the pair parts hold them
    where = rng.integers(0, n_parts, len(verified))
    ver_parts = [(verified.left[where == j], verified.right[where == j], verified.score[where == j]) for j in range(n_parts)]
    job = SimpleNamespace(
        spec=SimpleNamespace(output=SimpleNamespace(exact_pairs=mode), sources=[SimpleNamespace(name="a"), SimpleNamespace(name="b")]),
        config_path="job.yaml",
    )
    run = SimpleNamespace(
        client=_Inline(), submit=_Inline().submit, n_parts=n_parts, job=job, parts=[SimpleNamespace(source=s) for s in part_src]
    )
    active = [task_active(len(s.ids), int(offsets[i]), *[p.collapsed[i] for p in exact_parts]) for i, s in enumerate(scans)]
    scanned = SimpleNamespace(
        offsets=offsets,
        exact_parts=exact_parts,
        ids=[s.ids for s in scans],
        exact_stats={"records_collapsed": len(exact.pairs)},
        active=active,
    )
    records = Records(ids=list(ids), source=src, source_names=["a", "b"], fields={})
    return run, scanned, (exact, verified, records), ver_parts


def test_the_expansion_of_a_pair_is_cross_group_pairs() -> None:
    """Each pair of representatives repeated over both groups, as cross_group_pairs lists them."""
    rep = np.array([2, 2, 5, 9, 9, 9], dtype=np.int64)
    member = np.array([4, 3, 6, 10, 12, 11], dtype=np.int64)
    pairs = (np.array([2, 1, 5], dtype=np.int64), np.array([9, 5, 7], dtype=np.int64), np.array([0.5, 0.7, 0.9]))
    from er_framework.executors.dask_scan import ExactPart

    part = ExactPart(rep, member, [], np.zeros(4, np.int64))
    groups = task_group_split(part, 1)
    step = task_expand(0, [groups[0]], pairs)
    got = task_expand(1, [groups[0]], step)
    members = np.array([1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12], dtype=np.int64)
    starts = np.array([0, 1, 4, 6, 7], dtype=np.int64)
    sizes = np.array([1, 3, 2, 1, 4], dtype=np.int64)
    x, y, p = cross_group_pairs(np.array([1, 0, 2]), np.array([4, 2, 3]), starts, sizes, members)
    assert sorted(zip(got[0].tolist(), got[1].tolist(), got[2].tolist())) == sorted(zip(x.tolist(), y.tolist(), pairs[2][p].tolist()))
