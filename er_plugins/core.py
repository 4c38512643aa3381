"""Built-in plugin: the domain-independent clusterers of :mod:`er_framework.cluster`."""

from __future__ import annotations

from er_framework import hookimpl
from er_framework.components import Clusterer
from er_plugins.clusterers import BUILTIN_CLUSTERERS


@hookimpl
def er_register_clusterers() -> list[type[Clusterer]]:
    return list(BUILTIN_CLUSTERERS)
