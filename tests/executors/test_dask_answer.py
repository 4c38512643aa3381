"""The Dask executor's answer tasks: a verified pair expanded over the groups of copies of its two ends is
what cross_group_pairs lists (the whole answer is checked in test_dask_finish.py)."""

from __future__ import annotations

import numpy as np

from er_framework.executors.dask_answer import task_expand, task_group_split
from er_framework.kernels.groups import cross_group_pairs


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
