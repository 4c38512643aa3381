"""Windowed verification (kernels/windows.py, engine/stages/verification.py: score_windowed): the same scores as the record-order
blocks of score_streamed and as the exact Jaccard of the reference, whatever the budget."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import er_framework.engine.stages.verification as pipeline
from er_framework.config.resolve import parse_job
from er_framework.data import Batch, Pairs
from er_framework.engine.engine import Engine
from er_framework.engine.log import StageLog
from er_framework.engine.stages.reading import read
from er_framework.engine.stages.shingling import shingle_and_sign
from er_framework.kernels.jaccard import jaccard_reference
from er_framework.kernels.windows import verify_windows, window_order
from er_framework.synth.documents import planted_documents


def test_window_order_and_plan() -> None:
    # two components (0-5-9 path and 2-7), 3 and 4 in no pair
    left = np.array([0, 5, 2], dtype=np.int64)
    right = np.array([5, 9, 7], dtype=np.int64)
    order = window_order(10, left, right)
    assert sorted(order.tolist()) == [0, 2, 5, 7, 9]
    pos = {v: i for i, v in enumerate(order.tolist())}
    assert abs(pos[2] - pos[7]) == 1  # a component's records together
    assert sorted(pos[v] for v in (0, 5, 9)) in ([0, 1, 2], [2, 3, 4])
    cost = np.ones(10, dtype=np.int64)
    big = verify_windows(10, left, right, cost, 100)
    assert big.chunks == 1 and not big.far.any() and (big.pair_chunk == 0).all()
    one = verify_windows(10, left, right, cost, 1)  # one record per chunk: only adjacent records are near
    assert one.chunks == 5
    for p in range(3):
        a, b = one.position[left[p]], one.position[right[p]]
        assert (one.pair_chunk[p] == max(a, b)) == (abs(a - b) <= 1)
        assert one.far[p] == (abs(a - b) > 1)
    assert window_order(3, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).tolist() == []


@pytest.fixture(scope="module")
def streamed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Engine, Batch]:
    d = planted_documents(60, copies_per_family=(1, 4), words=(30, 90), edit_rates=(0.0, 0.2), n_singletons=120, seed=11)
    tmp = tmp_path_factory.mktemp("windows")
    path = tmp / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(d.texts)))
    job_file = tmp / "windows.yaml"
    job_file.write_text(
        textwrap.dedent(f"""
        threshold: 0.5
        token_memory_mb: 0            # nothing kept after signing: verification shingles again
        sources: [{{name: d, path: {path}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 4}}
        signature: {{type: fss, num_perm: 32}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
    """)
    )
    engine = Engine(parse_job(job_file))
    recs, _ = read(engine.job)
    batch = Batch(records=recs)
    shingle_and_sign(engine, recs, batch, StageLog())
    assert batch.token_source is not None and batch.tokens is None
    return engine, batch


@pytest.mark.parametrize("block_mb", [256.0, 0.02, 0.004, 2e-5])
def test_windowed_scores_equal_the_reference(streamed: tuple[Engine, Batch], block_mb: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the budget (one block; a few chunks; far pairs verified in later rounds; one record
    per chunk), every pair gets its exact Jaccard."""
    engine, batch = streamed
    n = len(batch)
    rng = np.random.default_rng(4)
    # a dense random graph (far pairs at small budgets) plus neighbours in record order
    a = rng.integers(0, n, 600)
    b = rng.integers(0, n, 600)
    a = np.concatenate([a, np.arange(n - 1)])
    b = np.concatenate([b, np.arange(1, n)])
    pairs = Pairs(a, b).normalized()
    monkeypatch.setattr(pipeline, "VERIFY_MIN_MB", block_mb)
    monkeypatch.setattr(pipeline, "VERIFY_BLOCK_MB", block_mb)
    monkeypatch.setattr(pipeline, "VERIFY_WINDOW_MB", block_mb)
    sizes = np.asarray(batch.tokens_for(np.arange(n)).sizes, dtype=np.int64)
    got, shingled, blocks, far = pipeline.score_windowed(engine, batch, pairs, sizes, 0.0)
    want = jaccard_reference(batch.tokens_for(np.arange(n)), pairs.left, pairs.right)
    assert got.tolist() == pytest.approx(want, abs=0, rel=0)
    old, _, _ = pipeline.score_streamed(engine, batch, pairs, sizes, 0.0)
    assert np.array_equal(got, old)
    assert shingled >= len(np.unique(np.concatenate([pairs.left, pairs.right])))
    if block_mb == 256.0:
        assert far == 0 and blocks == 1
    if block_mb == 2e-5:
        assert far > 0 and blocks > 100
    # token counts below the set sizes (a shingler outside the contract): the buffer grows, same scores
    small, _, _, _ = pipeline.score_windowed(engine, batch, pairs, sizes // 3, 0.0)
    assert np.array_equal(small, got)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_placed_parts_are_the_concatenation(workers: int) -> None:
    """place_parts (the chunk's sets copied into the buffer on threads) equals np.concatenate at the offset,
    and nothing outside its range is written (empty parts and no part at all included)."""
    from er_framework.kernels.csr import TokenSets

    rng = np.random.default_rng(9)
    for sizes in ([], [0], [3, 0, 5, 1], [int(x) for x in rng.integers(0, 50, 40)]):
        parts = [TokenSets(np.array([0, s], dtype=np.int64), rng.integers(0, 2**63, s, dtype=np.int64).astype(np.uint64)) for s in sizes]
        total = sum(sizes)
        for at in (0, 7):
            buffer = np.full(total + 20, 12345, dtype=np.uint64)
            pipeline.place_parts(buffer, at, parts, workers)
            want = np.concatenate([p.tokens for p in parts]) if parts else np.zeros(0, dtype=np.uint64)
            assert np.array_equal(buffer[at : at + total], want)
            assert (buffer[:at] == 12345).all() and (buffer[at + total :] == 12345).all()


def test_windowed_scores_on_two_workers(streamed: tuple[Engine, Batch], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads (the chunks' sets made and placed on both) give the scores of one."""
    engine, batch = streamed
    n = len(batch)
    pairs = Pairs(np.arange(n - 1), np.arange(1, n)).normalized()
    sizes = np.asarray(batch.tokens_for(np.arange(n)).sizes, dtype=np.int64)
    monkeypatch.setattr(pipeline, "VERIFY_MIN_MB", 0.004)
    monkeypatch.setattr(pipeline, "VERIFY_WINDOW_MB", 0.004)
    one, _, blocks, _ = pipeline.score_windowed(engine, batch, pairs, sizes, 0.0)
    assert blocks > 1
    monkeypatch.setattr(engine.job.context, "workers", 2)
    two, _, _, _ = pipeline.score_windowed(engine, batch, pairs, sizes, 0.0)
    assert np.array_equal(one, two)
    assert one.tolist() == pytest.approx(jaccard_reference(batch.tokens_for(np.arange(n)), pairs.left, pairs.right), abs=0, rel=0)
