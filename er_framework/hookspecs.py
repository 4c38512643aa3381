"""The plugin contract: hooks that register named component classes.

A plugin is a module (usually a package registered under the entry-point
group ``er_framework``) that implements any of these hooks with
:data:`hookimpl`::

    from er_framework import hookimpl, Shingler

    class MyShingler(Shingler):
        name = "my_shingles"
        ...

    @hookimpl
    def er_register_shinglers():
        return [MyShingler]

There is one hook per family of :data:`er_framework.components.FAMILIES`
(the hooks are made from that table):

* ``er_register_normalizers`` -- :class:`~er_framework.components.Normalizer` classes (``normalize:``)
* ``er_register_shinglers`` -- :class:`~er_framework.components.Shingler` classes
* ``er_register_signature_builders`` -- :class:`~er_framework.components.SignatureBuilder` classes
* ``er_register_blockers`` -- :class:`~er_framework.components.Blocker` classes
* ``er_register_verifiers`` -- :class:`~er_framework.components.Verifier` classes
* ``er_register_clusterers`` -- :class:`~er_framework.components.Clusterer` classes

Each hook takes no argument, returns a list of classes and is called once
when the plugin manager is built, never per record. Every returned class
must subclass the family's base class and carry a unique ``name``; two
plugins offering one name is an error that names both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from er_framework.components import FAMILIES, Component, Family

__all__ = ["PROJECT", "ErSpecs", "hookimpl", "hookspec"]

PROJECT = "er_framework"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


def _register_spec(family: Family) -> Callable[..., Any]:
    def spec(self: Any) -> list[type[Component]]:  # pragma: no cover - a specification, never called
        raise NotImplementedError

    spec.__name__ = family.hook
    spec.__qualname__ = f"ErSpecs.{family.hook}"
    spec.__doc__ = f"Return {family.base.__name__} classes: {family.summary}."
    return hookspec(spec)


#: Hook specifications of er-framework: one ``er_register_*`` per family of the table.
ErSpecs: type = type(
    "ErSpecs",
    (),
    {
        "__doc__": "Hook specifications of er-framework (one per component family).",
        "__module__": __name__,
        **{f.hook: _register_spec(f) for f in FAMILIES.values()},
    },
)
