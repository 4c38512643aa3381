"""The plugin contract: hooks that register named component classes.

A plugin is a module (usually a package registered under the entry-point
group ``er_framework``) that implements any of these hooks with
:data:`hookimpl`::

    from er_framework import hookimpl, Params, Shingler

    class MyParams(Params):
        ...

    class MyShingler(Shingler[MyParams]):
        name = "my_shingles"
        Params = MyParams
        ...

    @hookimpl
    def er_register_shinglers():
        return [MyShingler]

There is one hook per family of :data:`er_framework.components.FAMILIES`,
written out below as a method of :class:`ErSpecs` (the family table names
each family's hook; a test checks that the two agree):

* ``er_register_normalizers`` -- :class:`~er_framework.components.Normalizer` classes (``normalize:``)
* ``er_register_shinglers`` -- :class:`~er_framework.components.Shingler` classes
* ``er_register_signature_builders`` -- :class:`~er_framework.components.SignatureBuilder` classes
* ``er_register_blockers`` -- :class:`~er_framework.components.Blocker` classes
* ``er_register_verifiers`` -- :class:`~er_framework.components.Verifier` classes
* ``er_register_clusterers`` -- :class:`~er_framework.components.Clusterer` classes
* ``er_register_golden_rules`` -- :class:`~er_framework.components.GoldenRule` classes (``output.golden``)

Each hook takes no argument, returns a list of classes and is called once
when the plugin manager is built, never per record. Every returned class
must subclass the family's base class and carry a unique ``name``; two
plugins offering one name is an error that names both.
"""

from __future__ import annotations

import pluggy

from er_framework.components import Blocker, Clusterer, GoldenRule, Normalizer, Shingler, SignatureBuilder, Verifier

__all__ = ["PROJECT", "ErSpecs", "hookimpl", "hookspec"]

PROJECT = "er_framework"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class ErSpecs:
    """Hook specifications of er-framework (one per component family of :data:`~er_framework.components.FAMILIES`).

    Each is a specification, never called: a plugin implements the hook of
    a family with :data:`hookimpl` and returns its classes.
    """

    @hookspec
    def er_register_normalizers(self) -> list[type[Normalizer]]:  # pragma: no cover - a specification
        """Return Normalizer classes: field values -> comparable keys (per field, a chain)."""
        raise NotImplementedError

    @hookspec
    def er_register_shinglers(self) -> list[type[Shingler]]:  # pragma: no cover - a specification
        """Return Shingler classes: records -> token sets (CSR, uint64 tokens)."""
        raise NotImplementedError

    @hookspec
    def er_register_signature_builders(self) -> list[type[SignatureBuilder]]:  # pragma: no cover - a specification
        """Return SignatureBuilder classes: token sets -> signatures."""
        raise NotImplementedError

    @hookspec
    def er_register_blockers(self) -> list[type[Blocker]]:  # pragma: no cover - a specification
        """Return Blocker classes: a batch -> candidate pairs."""
        raise NotImplementedError

    @hookspec
    def er_register_verifiers(self) -> list[type[Verifier]]:  # pragma: no cover - a specification
        """Return Verifier classes: candidate pairs -> scores."""
        raise NotImplementedError

    @hookspec
    def er_register_clusterers(self) -> list[type[Clusterer]]:  # pragma: no cover - a specification
        """Return Clusterer classes: verified pairs -> a cluster label per record."""
        raise NotImplementedError

    @hookspec
    def er_register_golden_rules(self) -> list[type[GoldenRule]]:  # pragma: no cover - a specification
        """Return GoldenRule classes: a cluster's values of a field -> the golden record's value."""
        raise NotImplementedError
