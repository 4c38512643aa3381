"""A PostgreSQL server of its own, for the tests (``postgres_url`` in tests/conftest.py) and the benchmarks.

:func:`running_postgres` runs Debian's (or PATH's) ``initdb`` into a folder, starts the server on a unix
socket in that folder (no TCP), creates the database ``er_test`` and the password role ``er_pw``, yields the
URL and stops the server at the end. PostgreSQL refuses to run as root: as root, its programs run as the
``postgres`` user (``runuser``).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["POSTGRES_TEST_PASSWORD", "PostgresUnavailable", "postgres_bin_dir", "running_postgres"]

#: the password of the role ``er_pw`` of the test server (which must give one: scram-sha-256)
POSTGRES_TEST_PASSWORD = "er-secret-pw"


class PostgresUnavailable(RuntimeError):
    """No server can be started here (not installed, or root without a postgres user); says why."""


def postgres_bin_dir() -> Path | None:
    """The folder of PostgreSQL's server programs (initdb, pg_ctl): on PATH, else Debian's
    /usr/lib/postgresql/VERSION/bin (the newest); None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    candidates = sorted(Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    candidates = [c for c in candidates if (c / "pg_ctl").exists()]
    return max(candidates, key=lambda c: [int(x) if x.isdigit() else 0 for x in c.parent.name.split(".")]) if candidates else None


def as_server_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, ``cmd`` runs as the ``postgres`` user."""
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        raise PostgresUnavailable("running as root without runuser to start the server as the postgres user")
    return [runuser, "-u", "postgres", "--", *cmd]


def _give_to_postgres(folder: Path) -> None:
    if os.geteuid() != 0:
        return
    import pwd

    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable("running as root needs the postgres user to start the server") from None
    os.chown(folder, entry.pw_uid, entry.pw_gid)


@contextmanager
def running_postgres(folder: Path | None = None) -> Iterator[str]:
    """A server whose data and socket live in ``folder`` (default: a new temporary folder; every folder above it
    must be searchable by the server's user; removed at the end): yields
    ``postgresql://er@/er_test?host=FOLDER`` (the superuser ``er`` needs no password on the socket, the role
    ``er_pw`` needs :data:`POSTGRES_TEST_PASSWORD`). Raises :class:`PostgresUnavailable` when PostgreSQL is not
    installed, and ``subprocess.CalledProcessError`` when it does not start."""
    bindir = postgres_bin_dir()
    if bindir is None:
        raise PostgresUnavailable(
            "PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): apt-get install postgresql"
        )
    import psycopg

    folder = Path(tempfile.mkdtemp(prefix="er-pg-")) if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data"
    started = False
    try:
        _give_to_postgres(folder)
        run = functools.partial(subprocess.run, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=folder)
        run(as_server_user([str(bindir / "initdb"), "-D", str(data), "-U", "er", "-A", "trust", "-E", "UTF8", "--no-sync"]))
        (data / "pg_hba.conf").write_text("local all er_pw scram-sha-256\nlocal all all trust\n")
        options = f"-k {folder} -c listen_addresses='' -c fsync=off"
        run(as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start"]))
        started = True
        with psycopg.connect(f"postgresql://er@/postgres?host={folder}", autocommit=True) as conn:
            conn.execute("CREATE DATABASE er_test")
            conn.execute(f"CREATE ROLE er_pw LOGIN PASSWORD '{POSTGRES_TEST_PASSWORD}'")
        yield f"postgresql://er@/er_test?host={folder}"
    finally:
        if started:
            subprocess.run(
                as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]), capture_output=True, cwd=folder
            )
        shutil.rmtree(folder, ignore_errors=True)
