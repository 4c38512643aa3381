"""The Dask executor's shuffle tasks: the distributed sort of the window passes."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "n, n_parts, window, link, distinct",
    [
        (0, 3, 4, False, 5),
        (7, 4, 10, False, 3),
        (300, 6, 5, True, 40),
        (300, 9, 40, False, 2),
        (500, 1, 3, True, 500),
    ],
)
def test_the_distributed_sort_gives_the_windows_of_one_sort(n: int, n_parts: int, window: int, link: bool, distinct: int) -> None:
    """The window tasks, run in this process on partitions of random keys (many ties, long keys, ranges
    shorter than the window, empty passes), give the pairs of one global sort by (key, index)."""
    import numpy as np
    from numpy.dtypes import StringDType

    from er_framework.executors.dask_shuffle import (
        task_bounds,
        task_carry,
        task_range,
        task_split,
        task_windows,
    )
    from er_framework.kernels.groups import unpack_pairs
    from er_framework.testing import pairs_in_windows

    rng = np.random.default_rng(n + n_parts)
    words = [("x" * int(rng.integers(0, 30))) + str(i) for i in range(distinct)]
    keys = np.array([words[i] for i in rng.integers(0, distinct, n)], dtype=StringDType(na_object=None))
    src = rng.integers(0, 2, n).astype(np.int32)
    cuts = np.sort(rng.integers(0, n + 1, n_parts - 1)) if n_parts > 1 else np.zeros(0, np.int64)
    bounds_of_parts = list(zip([0, *cuts.tolist()], [*cuts.tolist(), n]))
    runs, samples = [], []
    for a, b in bounds_of_parts:  # as task_block: each partition's run sorted by (key, global index)
        g = np.arange(a, b, dtype=np.int64)
        order = np.lexsort((g, keys[a:b]))
        runs.append((keys[a:b][order], g[order], src[a:b][order]))
        pick = np.unique(np.linspace(0, b - a - 1, min(3, b - a)).astype(np.int64))
        samples.append((runs[-1][0][pick], runs[-1][1][pick]))
    bounds = task_bounds(samples, n_parts)
    split = [task_split(r, bounds, n_parts) for r in runs]
    ranges = [task_range(*[sp[r] for sp in split]) for r in range(n_parts)]
    carry = (np.zeros(0, np.int64), np.zeros(0, np.int32))
    got: set[tuple[int, int]] = set()
    for r in range(n_parts):
        for packed, blocker in task_windows(ranges[r], carry, window, link, 3, 4):
            assert (blocker == 3).all()
            got |= set(zip(*(x.tolist() for x in unpack_pairs(packed))))
        carry = task_carry(carry, ranges[r], window - 1)
    assert np.array_equal(np.concatenate([r[0] for r in ranges]), np.lexsort((np.arange(n), keys)))
    want = pairs_in_windows([(np.arange(n, dtype=np.int64), keys)], window, src if link else None)
    assert got == want and (n == 0 or len(want) > 0)
