"""Fixtures shared across the test areas."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
from distributed import LocalCluster

# A test run started in the background (bash `cmd &`, nohup, some CI runners) has SIGINT (and SIGHUP)
# ignored, and an ignored signal stays ignored in every process it starts: the tests that press Ctrl-C
# or hang up, in this process or in an `er` they start, need the defaults back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture(scope="session")
def dask_cluster() -> Iterator[LocalCluster]:
    """One 2-worker LocalCluster (worker processes, one thread each) for every Dask test of the session.

    Starting one costs seconds; the tests that kill a worker start their own.
    """
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        yield lc
