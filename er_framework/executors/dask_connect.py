"""Connecting the Dask executor's client to a scheduler: within a timeout, and every failure one message
naming the address and the ``executor.address`` setting.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from er_framework.config.executor_params import ADDRESS_RE, address_problem
from er_framework.errors import ErError, Problem

#: seconds to connect to a scheduler and register with it (a silent or black-holed address fails after this);
#: the environment variable ER_DASK_CONNECT_TIMEOUT overrides it
CONNECT_TIMEOUT_S = 30.0


def connect_timeout() -> float:
    """:data:`CONNECT_TIMEOUT_S`, or the seconds in ``ER_DASK_CONNECT_TIMEOUT`` (a positive number)."""
    text = os.environ.get("ER_DASK_CONNECT_TIMEOUT", "")
    try:
        value = float(text)
    except ValueError:
        return CONNECT_TIMEOUT_S
    return value if 0 < value < 86400 else CONNECT_TIMEOUT_S


def _probe(address: str, seconds: float) -> str | None:
    """A plain TCP connection to a tcp:// (or tls, ws, wss) address: why it fails (refused, unknown host, silent).

    Dask's own connect retries a refused port until its timeout; this says at
    once what the operating system says.
    """
    m = ADDRESS_RE.fullmatch(address)
    if m is None or m.group(1) == "ucx":
        return None
    host = m.group(2).strip("[]")
    try:
        socket.create_connection((host, int(m.group(3))), timeout=seconds).close()
    except socket.gaierror as exc:
        return f"unknown host {host!r} ({exc.strerror or exc})"
    except TimeoutError:
        return f"no answer within {seconds:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


class _Silent(Exception):
    """The call given to :func:`_within` did not return in time."""


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()`` in a daemon thread: its result or its exception, or :class:`_Silent` after ``seconds``.

    distributed's ``Client(address, timeout=…)`` bounds the TCP connect but
    not the handshake read that follows (distributed 2026.8: ``comm.core.connect``
    awaits ``comm.read()`` with no timeout), so a server that accepts and
    stays silent would hang the run forever. The thread left waiting is a
    daemon: it does not keep the process alive.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, name="er-dask-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise _Silent()
    if "error" in box:
        raise box["error"]
    return box["value"]


def connect(client_class: Any, address: str, config_path: str) -> Any:
    """A ``Client`` connected to the scheduler at ``address`` within :data:`CONNECT_TIMEOUT_S`, or a message.

    Whatever goes wrong while connecting is the address's fault as far as
    the user can tell: a malformed address, a refused or silent port, or a
    service that does not speak Dask's protocol (an HTTP server's reply read
    as a frame length asks for exabytes: a ``MemoryError``). So every
    exception of this step becomes one message naming the address and the
    ``executor.address`` setting; nothing is run before it.
    """
    fix = (
        "check executor.address (tcp://HOST:8786, the address the scheduler prints when it starts); "
        "start the scheduler (dask scheduler) and its workers (dask worker ADDRESS), "
        "or run on this machine with executor: {type: dask, local_cluster: {n_workers: 2}}"
    )

    def refuse(reason: str) -> ErError:
        return ErError(
            Problem(
                where=config_path,
                path="executor.address",
                message=f"could not connect to the Dask scheduler at {address}: {reason}",
                fix=fix,
            )
        )

    seconds = connect_timeout()
    why = address_problem(address) or _probe(address, seconds)
    if why is not None:
        raise refuse(why)
    try:
        return _within(seconds + 5, lambda: client_class(address, timeout=f"{seconds}s"))
    except _Silent:
        raise refuse(
            f"a connection was accepted but no Dask handshake came within {seconds:g} s (is a Dask scheduler listening there?)"
        ) from None
    except MemoryError:
        raise refuse(
            "the service there does not speak the Dask protocol (its answer was read as a message of an impossible size)"
        ) from None
    except (TimeoutError, OSError) as exc:  # refused, unreachable, silent, closed (CommClosedError is an OSError)
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, TimeoutError) or "Timed out" in reason:
            reason = f"no answer within {seconds:g} s ({reason})"
        raise refuse(reason) from None
    except Exception as exc:  # noqa: BLE001 - any other failure of the handshake: a service that is not Dask
        raise refuse(f"the service there does not speak the Dask protocol ({type(exc).__name__}: {exc})") from None


__all__ = [
    "CONNECT_TIMEOUT_S",
    "connect",
    "connect_timeout",
]
