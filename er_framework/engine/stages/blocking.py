"""The block stage (every blocker's candidate pairs, the exact pairs removed) and the blockers' diagnostics."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Diagnostic, ability
from er_framework.capabilities import block as block_reported
from er_framework.data import Batch, Pairs
from er_framework.engine.engine import Engine
from er_framework.engine.stages.exact import Exact

__all__ = ["block", "diagnostics", "subtract_pairs"]


def subtract_pairs(pairs: Pairs, known: Pairs) -> Pairs:
    """Pairs not in ``known`` (both normalized)."""
    if len(known) == 0 or len(pairs) == 0:
        return pairs
    n = int(max(pairs.right.max(), known.right.max())) + 1
    a = pairs.left * n + pairs.right
    b = known.left * n + known.right
    return pairs.select(~np.isin(a, b))


def block(engine: Engine, batch: Batch, exact: Exact) -> tuple[Pairs, list[dict[str, Any]]]:
    """Candidate pairs of every blocker (global indices, normalized, exact pairs removed) and each blocker's report.

    Each blocker's answer is checked against the contract
    (:meth:`Engine.checked_candidates`): a broken answer is a plugin error.
    """
    found: list[Pairs] = []
    # with several blockers, each one's candidates wait for the union packed (8 bytes a pair, not 16)
    keys: list[npt.NDArray[np.uint64]] = []
    reports: list[dict[str, Any]] = []
    for blocker in engine.blockers:
        blocked = block_reported(blocker, batch)  # the pairs with the call's report
        cand = engine.checked_candidates(blocker, blocked.pairs, batch)
        rep = {**blocker.describe(), **blocked.report}
        del blocked
        rep["candidate_pairs"] = int(len(cand))
        reports.append(rep)
        key = cand.packed() if len(engine.blockers) > 1 else None
        if key is None:
            found.append(cand)
        else:
            keys.append(key)
        del cand
    if keys:
        found.append(Pairs.from_packed(np.concatenate(keys) if len(keys) > 1 else keys[0]))
        keys.clear()
    local = found[0] if len(found) == 1 else Pairs.union(found)
    del found
    active = exact.active
    if len(active) and int(active[-1]) == len(active) - 1:  # increasing and unique: the identity, no copy
        candidates = local
    else:
        candidates = Pairs(active[local.left], active[local.right])  # increasing map: still normalized
    return subtract_pairs(candidates, exact.pairs), reports


def diagnostics(engine: Engine, batch: Batch, sample: int) -> dict[str, Any]:
    """The blockers' evidence for the report (the measured S-curve …), ``sample`` records probed."""
    out: dict[str, Any] = {}
    for blocker in engine.blockers:
        diagnostic = ability(blocker, Diagnostic)
        d = diagnostic.diagnostics(batch, sample) if diagnostic is not None else None
        if d is not None:
            out.update(d)
    return out
