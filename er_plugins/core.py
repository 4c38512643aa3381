"""Built-in plugin: the domain-independent clusterers of :mod:`er_framework.cluster` and the golden rules."""

from __future__ import annotations

from er_framework import hookimpl
from er_framework.components import Clusterer, GoldenRule
from er_plugins.clusterers import BUILTIN_CLUSTERERS
from er_plugins.golden import BUILTIN_GOLDEN_RULES


@hookimpl
def er_register_clusterers() -> list[type[Clusterer]]:
    return list(BUILTIN_CLUSTERERS)


@hookimpl
def er_register_golden_rules() -> list[type[GoldenRule]]:
    return list(BUILTIN_GOLDEN_RULES)
