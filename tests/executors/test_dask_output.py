"""The Dask executor's output helpers: the written scores' quartiles found by bisection over parts are
``np.quantile``'s, and the float keys order as the floats."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from er_framework.executors.dask_output import clusters_part, float_key, quantiles_of_parts
from er_framework.report.sections import QUARTILES


class _Inline:
    def submit(self, fn: Any, *args: Any, **_: Any) -> Any:
        return fn(*args)

    def gather(self, futures: Any) -> Any:
        return futures


RUN = SimpleNamespace(client=_Inline(), submit=_Inline().submit)


@pytest.mark.parametrize("seed", range(12))
def test_the_quartiles_over_parts_are_np_quantile(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    values = np.round(rng.normal(size=n) * 10 ** int(rng.integers(-3, 4)), int(rng.integers(0, 5)))
    if seed % 3 == 0:  # signed zeros, extremes, ties
        values = np.concatenate([values, [-0.0, 0.0, 1e300, -1e-300, 5.0, 5.0]])
    cuts = np.sort(rng.integers(0, len(values) + 1, 4))
    parts = [{"score": v} for v in np.split(values, cuts)]  # empty parts among them
    got = quantiles_of_parts(RUN, parts)
    assert got is not None and got.count == len(values)
    assert np.array_equal(np.array(got.quantiles), np.quantile(values, QUARTILES))


def test_no_written_pair_has_no_quartiles() -> None:
    assert quantiles_of_parts(RUN, [{"score": np.zeros(0)}, {"score": np.zeros(0)}]) is None


def test_float_keys_order_as_the_floats() -> None:
    values = np.array([np.inf, -np.inf, 0.0, -0.0, 1e-300, -1e-300, 3.5, -3.5, 1e300, -1e300])
    order = np.argsort(float_key(values), kind="stable")
    assert np.array_equal(values[order], np.sort(values))
    assert float_key(np.array([-0.0]))[0] < float_key(np.array([0.0]))[0]


def test_a_clusters_part_is_every_record_of_its_partition_in_order() -> None:
    ids = np.array(["b", "a", "c"], dtype=object)
    part = clusters_part(ids, np.array([4, 2, 4]), "docs")
    assert list(part) == ["source", "id", "cluster_id"]
    assert part["source"].tolist() == ["docs"] * 3 and part["id"].tolist() == ["b", "a", "c"] and part["cluster_id"].tolist() == [4, 2, 4]
