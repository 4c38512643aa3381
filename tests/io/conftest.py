"""Fixtures of the io tests: a fresh PostgreSQL database per test (the ``postgres_url`` server of tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest


@pytest.fixture
def pg_db(postgres_url: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database on the test server, for one test: its URL."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_url.replace("/er_test?", f"/{name}?")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
