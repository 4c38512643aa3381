"""er-framework: plugin-based entity resolution at scale.

shingling -> MinHash signatures -> LSH banding -> verification -> clustering
(Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3).
"""

from .components import Blocker, Clusterer, Context, Params, Shingler, SignatureBuilder, Verifier
from .data import Batch, Pairs, Records, Signatures, TokenSets
from .errors import ConfigError, ErError, InputError, PluginError, Problem
from .hookspecs import hookimpl, hookspec

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "Blocker",
    "Clusterer",
    "ConfigError",
    "Context",
    "ErError",
    "InputError",
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
