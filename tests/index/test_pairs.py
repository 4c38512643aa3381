"""Lookups equal blocking: the bucket ids an index stores and looks up give the blockers' candidate pairs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_docs import docs_job, write_docs

from er_framework.config.resolve import parse_job
from er_framework.data import Batch, Records
from er_framework.executors import run_job


@pytest.mark.parametrize("signature", ["minhash", "fss"])
def test_lsh_lookup_keys_give_the_blockers_candidates(tmp_path: Path, texts: list[str], signature: str) -> None:
    data = write_docs(tmp_path / "d.jsonl", [(f"d{i}", t) for i, t in enumerate(texts)])
    job = parse_job(docs_job(tmp_path, data, exact="false", signature=signature))
    from er_framework.engine import Engine

    engine = Engine(job)
    recs = run_job(job, write=False).records
    batch = engine.batch(recs, tokens=False, signatures=True)
    blocker = engine.blockers[0]
    expected = set(zip(*(x.tolist() for x in (lambda p: (p.left, p.right))(blocker.candidates(batch)))))
    rows, keys = blocker.lookup_keys(batch)
    buckets: dict[int, list[int]] = {}
    for r, k in zip(rows.tolist(), keys.tolist()):
        buckets.setdefault(k, []).append(r)
    got = {(a, b) for m in buckets.values() for a in m for b in m if a < b}
    assert len(expected) > 50
    assert got == expected


def test_field_hash_lookup_keys_give_the_blockers_candidates() -> None:
    from er_plugins.records_blocking import FieldHash, FieldHashParams

    rng = np.random.default_rng(3)
    n = 400
    names = ["ann", "bob", "cy", "", None]
    recs = Records(
        ids=[str(i) for i in range(n)],
        source=rng.integers(0, 2, n).astype(np.int32),
        source_names=["a", "b"],
        fields={
            "last": [names[i] for i in rng.integers(0, 5, n)],
            "zip": [str(z) if z < 8 else None for z in rng.integers(0, 9, n)],
        },
    )
    for link in (False, True):
        b = FieldHash(FieldHashParams(fields=["last", ["last", "zip"], "zip"], max_block_size=None))
        batch = Batch(records=recs, cross_source_only=link)
        cand = b.candidates(batch)
        expected = set(zip(cand.left.tolist(), cand.right.tolist()))
        rows, keys = b.lookup_keys(batch)
        buckets: dict[int, list[int]] = {}
        for r, k in zip(rows.tolist(), keys.tolist()):
            buckets.setdefault(k, []).append(r)
        got = {
            (min(x, y), max(x, y))
            for m in buckets.values()
            for x in m
            for y in m
            if x != y and (not link or recs.source[x] != recs.source[y])
        }
        assert got == expected and len(got) > 1000
