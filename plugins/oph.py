"""Plugin: one-permutation hashing with optimal densification (``oph``).

A drop-in replacement for the classic ``minhash`` signature builder: same
``Signatures(kind="minhash")`` layout (uint32, ``(n, K)``, empty sets flagged
and all ``0xFFFFFFFF``), same estimator ``P[SIG_A[i] == SIG_B[i]] = J(A, B)``
(Shrivastava, ICML 2017, Thm. 1), so ``lsh_bands`` and the Jaccard estimate
work unchanged — at ``O(tokens + K)`` work per set instead of
``O(tokens x K)``. Definition: :mod:`er_framework.kernels.oph`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from er_framework import hookimpl
from er_framework.components import Params, SignatureBuilder
from er_framework.data import Signatures, TokenSets
from er_framework.kernels.minhash import EMPTY
from er_framework.kernels.oph import oph_signatures


class OphParams(Params):
    num_perm: int = Field(default=128, ge=1, le=8192, description="K, the number of bins (signature length)")
    seed: int | None = Field(default=None, ge=0, description="seed of the hash (default: the job seed)")


class OnePermutationHash(SignatureBuilder):
    """One-permutation hashing with optimal densification (Shrivastava 2017).

    Each token is hashed once, h = mix64(token XOR salt); bin = top 32 bits of
    h times K, >> 32; the bin keeps the minimum of a second 32-bit hash. Empty
    bins copy the value of the first non-empty bin along a seeded probe
    sequence h(bin, attempt). P[SIG_A[i] = SIG_B[i]] = J(A, B) for every i.
    uint32 signatures, 4 bytes per entry.
    """

    name = "oph"
    summary = "one-permutation MinHash with optimal densification, O(tokens + K) per set"
    Params = OphParams

    def build(self, tokens: TokenSets) -> Signatures:
        p = self.params
        assert isinstance(p, OphParams)
        values = oph_signatures(tokens, p.num_perm, self.seed)
        return Signatures(
            values=values,
            kind="minhash",
            empty=tokens.sizes == 0,
            meta={"num_perm": p.num_perm, "seed": self.seed, "scheme": "oph-optimal-densification", "empty_value": int(EMPTY)},
        )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "seed": self.seed, "scheme": "oph-optimal-densification"}


@hookimpl
def er_register_signature_builders() -> list[type[SignatureBuilder]]:
    return [OnePermutationHash]
