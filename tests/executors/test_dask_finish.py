"""The Dask executor's answer built on the workers (run here in this process through a stand-in client): the pair
tables, in partition order, are the local executor's ``answer`` and pairs table row for row."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from er_framework.data import Pairs, Records
from er_framework.engine.stages.clustering import answer
from er_framework.engine.stages.exact import exact_groups_from_keys
from er_framework.engine.stages.writing import pairs_table
from er_framework.executors.dask_finish import answer_parts
from er_framework.executors.dask_scan import ScanPart, task_active, task_exact_part, task_exact_split
from er_framework.kernels.graph import canonical_labels, connected_component_labels


class _Inline:
    """A client that runs every task at once in this process (the futures are the values)."""

    def submit(self, fn: Any, *args: Any, **_: Any) -> Any:
        return fn(*args)

    def gather(self, futures: Any) -> Any:
        return futures


def _setup(n: int, n_parts: int, distinct: int, seed: int, mode: str) -> tuple[Any, Any, Any, Any]:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, distinct, n).astype(np.uint64)
    nonempty = rng.random(n) > 0.05
    cuts = sorted(rng.integers(0, n + 1, n_parts - 1).tolist())
    offsets = np.array([0, *cuts, n], dtype=np.int64)
    part_src = [0 if i < n_parts // 2 else 1 for i in range(n_parts)]
    src = np.repeat(np.array(part_src, dtype=np.int32), np.diff(offsets))
    ids = np.array([f"id,{i}" if i % 7 == 0 else f"id{i}" for i in range(n)], dtype=object)
    scans = [ScanPart(ids[a:b], keys[a:b], nonempty[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    split = [task_exact_split(s, int(offsets[i]), part_src[i], n_parts) for i, s in enumerate(scans)]
    exact_parts = [task_exact_part(True, offsets, *[sp[j] for sp in split]) for j in range(n_parts)]
    exact = exact_groups_from_keys(keys, nonempty, src, collapse=True)
    act = exact.active
    left = rng.choice(act, 3 * n // 4) if len(act) else np.zeros(0, np.int64)
    right = rng.choice(act, 3 * n // 4) if len(act) else np.zeros(0, np.int64)
    verified = Pairs(left, right, rng.random(len(left)).round(3)).normalized()
    # verified pairs split into parts at random, as the pair parts hold them
    where = rng.integers(0, n_parts, len(verified))
    ver_parts = [(verified.left[where == j], verified.right[where == j], verified.score[where == j]) for j in range(n_parts)]
    job = SimpleNamespace(
        spec=SimpleNamespace(output=SimpleNamespace(exact_pairs=mode), sources=[SimpleNamespace(name="a"), SimpleNamespace(name="b")]),
        config_path="job.yaml",
    )
    run = SimpleNamespace(
        client=_Inline(), submit=_Inline().submit, n_parts=n_parts, job=job, parts=[SimpleNamespace(source=s) for s in part_src]
    )
    active = [task_active(len(s.ids), int(offsets[i]), *[p.collapsed[i] for p in exact_parts]) for i, s in enumerate(scans)]
    scanned = SimpleNamespace(
        offsets=offsets,
        exact_parts=exact_parts,
        ids=[s.ids for s in scans],
        exact_stats={"records_collapsed": len(exact.pairs)},
        active=active,
    )
    records = Records(ids=list(ids), source=src, source_names=["a", "b"], fields={})
    return run, scanned, (exact, verified, records), ver_parts


@pytest.mark.parametrize("mode", ["all", "star"])
@pytest.mark.parametrize("selects", [False, True])
@pytest.mark.parametrize("n, n_parts, distinct", [(60, 3, 20), (300, 5, 120), (1, 1, 1), (40, 6, 40)])
def test_the_answer_tables_are_the_local_answer_row_for_row(mode: str, selects: bool, n: int, n_parts: int, distinct: int) -> None:
    run, scanned, (exact, verified, records), ver_parts = _setup(n, n_parts, distinct, n * n_parts + (mode == "all"), mode)
    pairs = Pairs(
        np.concatenate([exact.pairs.left, verified.left]),
        np.concatenate([exact.pairs.right, verified.right]),
        np.concatenate([np.ones(len(exact.pairs)), verified.score]),
    ).normalized()
    labels = canonical_labels(connected_component_labels(n, pairs.left, pairs.right))
    if selects:  # a pair-selecting clusterer: clusters that cut some pairs (every third record alone)
        labels = canonical_labels(np.where(np.arange(n) % 3 == 0, np.arange(n) + n, labels))
    offsets = scanned.offsets
    label_parts = [labels[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    got = answer_parts(run, scanned, ver_parts, label_parts, selects)
    want = answer(run.job, exact, verified, labels, selects)
    table = pairs_table(records, want.pairs)
    for col in table:
        joined = np.concatenate([np.asarray(t[col]) for t in got.pairs]) if got.pairs else np.zeros(0)
        assert joined.tolist() == np.asarray(table[col]).tolist(), col
    assert got.stats == want.stats
    if selects:
        assert want.verified is not None and got.verified is not None
        assert sum(len(t["score"]) for t in got.verified) == len(want.verified)
