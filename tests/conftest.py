"""Fixtures shared across the test areas."""

from __future__ import annotations

from typing import Iterator

import pytest
from distributed import LocalCluster

@pytest.fixture(scope="session")
def dask_cluster() -> Iterator[LocalCluster]:
    """One 2-worker LocalCluster (worker processes, one thread each) for every Dask test of the session.

    Starting one costs seconds; the tests that kill a worker start their own.
    """
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        yield lc
