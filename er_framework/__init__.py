"""er-framework: plugin-based entity resolution at scale.

shingling -> MinHash signatures -> LSH banding -> verification -> clustering
(Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3).

``er_framework.run(job, sources=...)`` runs a job from Python (:mod:`er_framework.api`);
the component base classes and batch types here are what a plugin is written against.
"""

import importlib
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

__version__ = "0.1.0"

__all__ = [
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


def __getattr__(name: str) -> Any:
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
