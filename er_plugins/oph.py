"""Plugin: one-permutation hashing (``oph``) and Fast Similarity Sketching (``fss``).

Two drop-in replacements for the classic ``minhash`` signature builder: same
``Signatures(kind="minhash")`` layout (uint32, ``(n, K)``, empty sets flagged
and all ``0xFFFFFFFF``), same estimator ``P[SIG_A[i] == SIG_B[i]] = J(A, B)``,
so ``lsh_bands`` and the Jaccard estimate work unchanged.

* ``oph``: one-permutation hashing with optimal densification (Shrivastava,
  ICML 2017, Thm. 1), ``O(tokens + K)`` work per set instead of
  ``O(tokens x K)``. Definition: :mod:`er_framework.kernels.oph`.
* ``fss``: Fast Similarity Sketching (Dahlgaard, Knudsen, Thorup, FOCS 2017):
  OPH's first round, then fresh hash rounds only for the bins still empty,
  ``O(tokens + K log K)`` expected work per set; for sets with
  ``tokens >> K ln K`` it is OPH's hashing and OPH's signature, for short
  sets its error stays at (measured: below) classic MinHash's, where
  ``oph``'s grows. Definition: :mod:`er_framework.kernels.fss`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from er_framework import hookimpl
from er_framework.capabilities import MultisetSigning
from er_framework.components import Params, SignatureBuilder
from er_framework.data import Signatures, TokenSets
from er_framework.kernels.fss import fss_signatures
from er_framework.kernels.minhash import EMPTY
from er_framework.kernels.oph import oph_signatures
from er_framework.kernels.parallel import map_row_blocks


class OphParams(Params):
    num_perm: int = Field(default=128, ge=1, le=8192, description="K, the number of bins (signature length)")
    seed: int | None = Field(default=None, ge=0, description="seed of the hash (default: the job seed)")


class _BinnedMinHash(MultisetSigning, SignatureBuilder[OphParams]):
    """Shared build of the binned MinHash schemes: ``kernel(tokens, K, seed)`` per block of records."""

    scheme: ClassVar[str] = ""
    # MultisetSigning: a minimum per bin (per round and bin for fss)
    kernel: ClassVar[staticmethod[[TokenSets, int, int], npt.NDArray[np.uint32]]]

    def build(self, tokens: TokenSets) -> Signatures:
        k = int(self.params.num_perm)
        kernel = type(self).kernel
        values = map_row_blocks(lambda ts: kernel(ts, k, self.seed), tokens, self.context.workers)
        return Signatures(
            values=values,
            kind="minhash",
            empty=tokens.sizes == 0,
            meta={"num_perm": k, "seed": self.seed, "scheme": self.scheme, "empty_value": int(EMPTY)},
        )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "seed": self.seed, "scheme": self.scheme}


class OnePermutationHash(_BinnedMinHash):
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
    scheme = "oph-optimal-densification"
    kernel = staticmethod(oph_signatures)


class FssParams(OphParams):
    pass


class FastSimilaritySketch(_BinnedMinHash):
    """Fast Similarity Sketching (Dahlgaard, Knudsen, Thorup, FOCS 2017).

    Round r hashes every token once more with fresh salts, h = mix64(token
    XOR a_r); in rounds r < K the bin is the top 32 bits of h times K, >> 32,
    in round K + j it is bin j. A bin keeps the minimum 32-bit value of the
    first round that reaches it; a set stops as soon as no bin is empty
    (round 0 alone for long sets: OPH's hashing). P[SIG_A[i] = SIG_B[i]] =
    J(A, B) for every i, with MinHash-like concentration for every set size.
    uint32 signatures, 4 bytes per entry.
    """

    name = "fss"
    summary = "fast similarity sketching: OPH plus fresh rounds for empty bins, O(tokens + K log K) per set"
    Params = FssParams
    scheme = "fast-similarity-sketching"
    kernel = staticmethod(fss_signatures)


@hookimpl
def er_register_signature_builders() -> list[type[SignatureBuilder]]:
    return [OnePermutationHash, FastSimilaritySketch]
