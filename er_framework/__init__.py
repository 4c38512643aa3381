"""er-framework: plugin-based entity resolution at scale.

shingling -> MinHash signatures -> LSH banding -> verification -> clustering
(Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3).
"""

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
from er_framework.data import Batch, Pairs, Records, Signatures, TokenSets
from er_framework.errors import ConfigError, ErError, InputError, PluginError, Problem
from er_framework.hookspecs import hookimpl, hookspec

__version__ = "0.1.0"

__all__ = [
    "Batch",
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
