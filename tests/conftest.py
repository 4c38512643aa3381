"""Fixtures shared across the test areas."""

from __future__ import annotations

import functools
import glob
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


# ------------------------------------------------------------------ PostgreSQL (issue 33)


def postgres_bin_dir() -> Path | None:
    """The folder of PostgreSQL's server programs (initdb, pg_ctl): on PATH, else Debian's
    /usr/lib/postgresql/VERSION/bin (the newest); None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    candidates = sorted(Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    candidates = [c for c in candidates if (c / "pg_ctl").exists()]
    return max(candidates, key=lambda c: [int(x) if x.isdigit() else 0 for x in c.parent.name.split(".")]) if candidates else None


def _as_server_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, ``cmd`` runs as the ``postgres`` user."""
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("PostgreSQL tests: running as root without runuser to start the server as the postgres user")
    return [runuser, "-u", "postgres", "--", *cmd]


#: the password of the role ``er_pw`` of the test server (which must give one: scram-sha-256)
POSTGRES_TEST_PASSWORD = "er-secret-pw"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of its own for the session's tests: initdb into a temporary folder, started on a
    unix socket in that folder (no TCP), with a database ``er_test``; yields its URL
    (``postgresql://er@/er_test?host=SOCKETDIR``; the superuser ``er`` needs no password on the socket, the
    role ``er_pw`` needs :data:`POSTGRES_TEST_PASSWORD`) and stops the server at the end. Skipped when the
    PostgreSQL binaries are not installed (``.ci/run`` installs Debian's package)."""
    bindir = postgres_bin_dir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): apt-get install postgresql")
    import psycopg

    tmp = Path(tempfile.mkdtemp(prefix="er-pg-"))
    data = tmp / "data"
    if os.geteuid() == 0:
        import pwd

        try:
            entry = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(tmp)
            pytest.skip("PostgreSQL tests run as root need the postgres user to start the server")
        os.chown(tmp, entry.pw_uid, entry.pw_gid)
    started = False
    try:
        run = functools.partial(subprocess.run, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp)
        run(_as_server_user([str(bindir / "initdb"), "-D", str(data), "-U", "er", "-A", "trust", "-E", "UTF8", "--no-sync"]))
        (data / "pg_hba.conf").write_text("local all er_pw scram-sha-256\nlocal all all trust\n")
        options = f"-k {tmp} -c listen_addresses='' -c fsync=off"
        run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(tmp / "server.log"), "-w", "start"]))
        started = True
        with psycopg.connect(f"postgresql://er@/postgres?host={tmp}", autocommit=True) as conn:
            conn.execute("CREATE DATABASE er_test")
            conn.execute(f"CREATE ROLE er_pw LOGIN PASSWORD '{POSTGRES_TEST_PASSWORD}'")
        yield f"postgresql://er@/er_test?host={tmp}"
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"could not start the test PostgreSQL server: {' '.join(exc.cmd)}:\n{exc.stdout}")
    finally:
        if started:
            subprocess.run(
                _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]), capture_output=True, cwd=tmp
            )
        shutil.rmtree(tmp, ignore_errors=True)
