"""Fixtures shared across the test areas."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from distributed import LocalCluster

from tests.postgres_server import PostgresUnavailable, running_postgres

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


# ------------------------------------------------------------------ PostgreSQL (issue 33)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of its own for the session's tests (:func:`tests.postgres_server.running_postgres`):
    on a unix socket in a temporary folder, with a database ``er_test``; stopped at the end. Skipped when
    PostgreSQL cannot run here, unless ``ER_REQUIRE_POSTGRES=1`` (set by ``.ci/run``, which installs Debian's
    package): then its absence fails the tests instead of hiding them."""
    try:
        with running_postgres() as url:
            yield url
    except PostgresUnavailable as exc:
        if os.environ.get("ER_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL tests: {exc} (ER_REQUIRE_POSTGRES=1)")
        pytest.skip(f"PostgreSQL tests: {exc}")
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"could not start the test PostgreSQL server: {' '.join(exc.cmd)}:\n{exc.stdout}")
