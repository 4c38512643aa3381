"""The options of the built-in executors: the keys of ``executor: {type: NAME, ...}`` besides ``type``.

Each executor validates its own options with a pydantic model, a subclass of
:class:`~er_framework.components.Params` (unknown keys are errors), registered
next to its run function (:data:`er_framework.registry.BUILTIN_EXECUTORS`;
an installed executor's is the ``Params`` attribute of its run function, see
:func:`er_framework.registry.executor_params_model`). The job's ``executor:``
section is checked against the chosen executor's model when the job is
resolved (:mod:`er_framework.config.resolve`), and the model describes the
section in ``er schema``.

This module is light on purpose: validating a job on the dask executor
imports it, never Dask nor the executor itself (:mod:`er_framework.executors.dask`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from er_framework.components import Params

__all__ = ["ADDRESS_RE", "DaskParams", "LocalClusterSpec", "LocalParams", "address_problem"]


class LocalParams(Params):
    """The local executor (every stage in this process) takes no options."""


class LocalClusterSpec(Params):
    n_workers: int = Field(default=2, ge=1, le=1024, description="worker processes")
    threads_per_worker: int = Field(default=1, ge=1, le=256, description="threads per worker process")
    memory_limit: str | None = Field(default=None, description="per worker, e.g. '4GB' (default: Dask's share of RAM)")


#: what a scheduler's address looks like: [SCHEME://]HOST:PORT (HOST a name, an IPv4 or a [bracketed IPv6])
ADDRESS_RE = re.compile(r"(?:(tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})")


def address_problem(address: str) -> str | None:
    """Why ``address`` cannot be a Dask scheduler's address (``None``: it has the shape of one)."""
    m = ADDRESS_RE.fullmatch(address)
    if m is None:
        return "not an address of the form [tcp://]HOST:PORT"
    if not 0 < int(m.group(3)) < 65536:
        return f"the port {m.group(3)} is not a port number (1-65535)"
    return None


class DaskParams(Params):
    """The dask executor: a running scheduler (``address``) or a LocalCluster it starts (``local_cluster``)."""

    address: str | None = Field(default=None, description="the scheduler, e.g. tcp://host:8786")
    local_cluster: LocalClusterSpec | None = Field(
        default=None, description="start a LocalCluster of worker processes on this machine instead"
    )
    partition_mb: float = Field(default=64.0, gt=0, description="input bytes per partition (uncompressed JSONL/CSV files are split)")

    cluster_on: Literal["client", "workers"] = Field(
        default="client",
        description="obsolete, ignored: the clusters are always computed on the workers (kept so that older jobs still validate)",
    )

    @field_validator("address")
    @classmethod
    def _address_shape(cls, v: str | None) -> str | None:
        why = None if v is None else address_problem(v)
        if why is not None:
            raise ValueError(f"{v!r} is {why}, e.g. tcp://10.0.0.5:8786")
        return v

    @model_validator(mode="after")
    def _where(self) -> DaskParams:
        if (self.address is None) == (self.local_cluster is None):
            raise ValueError("a dask executor needs exactly one of 'address' (a running scheduler) or 'local_cluster'")
        return self
