"""The built-in executors' options models: the dask executor's address, cluster and partitions; none for local."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from er_framework.components import Params
from er_framework.config.executor_params import DaskParams, LocalClusterSpec, LocalParams, address_problem


@pytest.mark.parametrize(
    "address, ok",
    [
        ("tcp://10.0.0.5:8786", True),
        ("scheduler:8786", True),
        ("tls://sched.example.org:8786", True),
        ("tcp://[::1]:8786", True),
        ("not a url", False),
        ("tcp://host", False),
        ("tcp://host:0", False),
        ("tcp://host:65536", False),
        ("http://host:8786", False),
        ("tcp://ho st:8786", False),
        ("", False),
    ],
)
def test_address_problem_knows_the_shape_of_a_scheduler_address(address: str, ok: bool) -> None:
    assert (address_problem(address) is None) == ok


def test_the_dask_executor_needs_a_scheduler_or_a_local_cluster() -> None:
    assert DaskParams(address="tcp://h:8786").partition_mb == 64.0
    assert DaskParams(local_cluster={"n_workers": 3}).local_cluster == LocalClusterSpec(n_workers=3)
    for options in ({}, {"address": "tcp://h:8786", "local_cluster": {}}):
        with pytest.raises(ValidationError, match="needs exactly one of 'address'"):
            DaskParams.model_validate(options)
    with pytest.raises(ValidationError, match="'tcp://host' is not an address of the form"):
        DaskParams(address="tcp://host")


def test_the_options_models_forbid_unknown_keys() -> None:
    for model in (LocalParams, DaskParams, LocalClusterSpec):
        assert issubclass(model, Params) and model.model_config.get("extra") == "forbid"
    assert LocalParams.model_fields == {}
    with pytest.raises(ValidationError, match="partition_mb"):
        LocalParams.model_validate({"partition_mb": 4})
    with pytest.raises(ValidationError, match="n_worker"):
        DaskParams.model_validate({"local_cluster": {"n_worker": 2}})
