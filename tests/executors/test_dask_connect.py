"""Connecting the Dask executor's client to a scheduler (issue 18, case 17)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from er_framework.errors import ErError


def test_connect_turns_every_failure_into_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.executors import dask_connect as ex

    monkeypatch.setattr(ex, "_probe", lambda address, seconds: None)

    def raising(exc: BaseException) -> Any:
        def make(address: str, timeout: str) -> Any:
            raise exc

        return make

    cases = [
        (MemoryError("Unable to allocate 3.07 EiB"), "does not speak the Dask protocol"),
        (OSError("Timed out trying to connect to tcp://h:1 after 30 s"), "no answer within 30 s"),
        (ValueError("unpack"), "does not speak the Dask protocol (ValueError: unpack)"),
    ]
    for exc, needle in cases:
        with pytest.raises(ErError, match="could not connect to the Dask scheduler at tcp://h:1") as err:
            ex.connect(raising(exc), "tcp://h:1", "job.yaml")
        assert needle in str(err.value) and "executor.address" in str(err.value)
    assert ex.connect(lambda address, timeout: ("client", address, timeout), "tcp://h:1", "job.yaml") == ("client", "tcp://h:1", "30.0s")


def test_connect_does_not_wait_past_its_timeout_for_a_handshake(monkeypatch: pytest.MonkeyPatch) -> None:
    from er_framework.executors import dask_connect as ex

    monkeypatch.setattr(ex, "_probe", lambda address, seconds: None)
    monkeypatch.setenv("ER_DASK_CONNECT_TIMEOUT", "0.2")
    release = threading.Event()

    def hangs(address: str, timeout: str) -> Any:
        release.wait(30)  # what distributed's Client does on a server that accepts and stays silent

    try:
        with pytest.raises(ErError, match="no Dask handshake came within 0.2 s"):
            ex.connect(hangs, "tcp://h:1", "job.yaml")
    finally:
        release.set()
