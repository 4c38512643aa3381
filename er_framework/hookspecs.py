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

Each hook is called once when the plugin manager is built, never per record.
Every returned class must subclass the family's base class and carry a unique
``name``; two plugins offering one name is an error that names both.
"""

from __future__ import annotations

import pluggy

from er_framework.components import Blocker, Clusterer, Shingler, SignatureBuilder, Verifier

PROJECT = "er_framework"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class ErSpecs:
    """Hook specifications of er-framework."""

    @hookspec
    def er_register_shinglers(self) -> list[type[Shingler]]:  # type: ignore[empty-body]
        """Return Shingler classes: records -> token sets (CSR, uint64 tokens)."""

    @hookspec
    def er_register_signature_builders(self) -> list[type[SignatureBuilder]]:  # type: ignore[empty-body]
        """Return SignatureBuilder classes: token sets -> signatures."""

    @hookspec
    def er_register_blockers(self) -> list[type[Blocker]]:  # type: ignore[empty-body]
        """Return Blocker classes: a batch -> candidate pairs."""

    @hookspec
    def er_register_verifiers(self) -> list[type[Verifier]]:  # type: ignore[empty-body]
        """Return Verifier classes: candidate pairs -> scores."""

    @hookspec
    def er_register_clusterers(self) -> list[type[Clusterer]]:  # type: ignore[empty-body]
        """Return Clusterer classes: verified pairs -> a cluster label per record."""


#: hook name for each family
FAMILY_HOOKS: dict[str, str] = {
    "shingler": "er_register_shinglers",
    "signature": "er_register_signature_builders",
    "blocker": "er_register_blockers",
    "verifier": "er_register_verifiers",
    "clusterer": "er_register_clusterers",
}
