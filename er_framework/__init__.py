"""er-framework: plugin-based entity resolution at scale.

shingling -> MinHash signatures -> LSH banding -> verification -> clustering
(Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3).

``er_framework.run(job, sources=...)`` runs a job from Python (:mod:`er_framework.api`);
the component base classes and batch types here are what a plugin is written against.
"""

import importlib
import logging
from typing import TYPE_CHECKING, Any

from er_framework.errors import ConfigError, ErError, InputError, PluginError, Problem

if TYPE_CHECKING:
    from er_framework.api import Model, Result, fit, run, validate
    from er_framework.components import (
        Blocker,
        Clusterer,
        Context,
        FieldRef,
        Normalizer,
        Params,
        Shingler,
        SignatureBuilder,
        Verifier,
    )
    from er_framework.data import Batch, LabelledPairs, Pairs, Records, Signatures, TokenSets
    from er_framework.hookspecs import hookimpl, hookspec

#: the package's loggers are silent unless the application configures logging (the library convention);
#: ``er -v`` and ``ER_LOG_LEVEL`` print them (:mod:`er_framework.engine.log`)
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "__version__",
    "installed_version",
    "Batch",
    "LabelledPairs",
    "Model",
    "Result",
    "fit",
    "run",
    "validate",
    "Blocker",
    "Clusterer",
    "ConfigError",
    "Context",
    "ErError",
    "FieldRef",
    "InputError",
    "Normalizer",
    "Pairs",
    "Params",
    "PluginError",
    "Problem",
    "Records",
    "Shingler",
    "SignatureBuilder",
    "Signatures",
    "TokenSets",
    "Verifier",
    "hookimpl",
    "hookspec",
]


#: the public API's names, loaded on first use: ``import er_framework`` stays light for plugin
#: authors and the ``er`` command's start-up, and the contract layer does not load the executors
_API = frozenset({"Model", "Result", "fit", "run", "validate"})

#: the contract's names (numpy, pydantic, pluggy behind them), imported on first use by the same
#: rule: ``er --help`` and ``import er_framework.cli.main`` load none of them
_CONTRACT: dict[str, str] = {
    **dict.fromkeys(
        ("Blocker", "Clusterer", "Context", "FieldRef", "Normalizer", "Params", "Shingler", "SignatureBuilder", "Verifier"), "components"
    ),
    **dict.fromkeys(("Batch", "LabelledPairs", "Pairs", "Records", "Signatures", "TokenSets"), "data"),
    **dict.fromkeys(("hookimpl", "hookspec"), "hookspecs"),
}


def installed_version() -> str:
    """er-framework's version from the installed package's metadata (``importlib.metadata``); ``0+unknown``
    when the package is not installed (a source tree on ``PYTHONPATH`` only)."""
    from importlib import metadata

    try:
        return metadata.version("er-framework")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the metadata on first use, then kept
        value = globals()["__version__"] = installed_version()
        return value
    if name in _API:
        from er_framework import api

        return getattr(api, name)
    module = _CONTRACT.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"er_framework.{module}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'er_framework' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
