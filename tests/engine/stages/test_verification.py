"""The verify stage (engine/stages/verification.py): verification in blocks or windows of re-shingled
records, in bounded memory, gives the scores of one block."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from stage_runs import run_docs

from er_framework.config.resolve import parse_job


def test_verification_blocks_do_not_change_the_scores(tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamed verification in blocks of pairs (bounded token sets) equals one block."""
    import er_framework.engine.stages.verification as pipeline

    pairs, labels, rep = run_docs(tmp_path, corpus, "fss", "workers: 1\ntoken_memory_mb: 0\n")
    assert {s["stage"]: s for s in rep["stages"]}["verify"]["verify_blocks"] == 1
    kept, kept_labels, kept_rep = run_docs(tmp_path, corpus, "fss", "workers: 1\n")  # the sets kept: not streamed
    assert "verify_blocks" not in {s["stage"]: s for s in kept_rep["stages"]}["verify"]
    assert kept == pairs and kept_labels == labels
    monkeypatch.setattr(pipeline, "VERIFY_MIN_MB", 0.01)  # ~1,300 tokens per block: many blocks
    small, small_labels, small_rep = run_docs(tmp_path, corpus, "fss", "workers: 2\ntoken_memory_mb: 0\n")
    verify = {s["stage"]: s for s in small_rep["stages"]}["verify"]
    assert verify["verify_blocks"] > 20
    assert small == pairs and small_labels == labels
    assert small_rep["candidate_pairs"] == rep["candidate_pairs"]


def test_verification_blocks_are_capped_whatever_the_budget(tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-shingled verification reads blocks of at most VERIFY_BLOCK_MB (windows of at most VERIFY_WINDOW_MB)
    even under a large token_memory_mb."""
    import er_framework.engine.stages.shingling as shingling
    import er_framework.engine.stages.verification as pipeline

    pairs, labels, rep = run_docs(tmp_path, corpus, "fss", "workers: 2\ntoken_memory_mb: 0\n")
    one = {s["stage"]: s for s in rep["stages"]}["verify"]
    assert one["verify_blocks"] == 1
    monkeypatch.setattr(shingling, "token_budget", lambda mb: 0)  # nothing kept, whatever token_memory_mb says
    monkeypatch.setattr(pipeline, "VERIFY_MIN_MB", 0.001)
    monkeypatch.setattr(pipeline, "VERIFY_BLOCK_MB", 0.01)
    monkeypatch.setattr(pipeline, "VERIFY_WINDOW_MB", 0.01)
    small, small_labels, small_rep = run_docs(tmp_path, corpus, "fss", "workers: 2\ntoken_memory_mb: 100000\n")
    verify = {s["stage"]: s for s in small_rep["stages"]}["verify"]
    assert verify["verify_blocks"] > 20 and verify["records_reshingled"] > one["records_reshingled"]
    assert small == pairs and small_labels == labels


def test_streamed_subset_equals_the_subset_whatever_the_buffer(tmp_path: Path, corpus: Path) -> None:
    """The streamed verification's block (token sets recomputed slice by slice into a reused buffer)
    equals Batch.subset; a buffer too short for them falls back to joining the slices."""
    import er_framework.engine.stages.verification as pipeline
    from er_framework.data import Batch
    from er_framework.engine.engine import Engine
    from er_framework.engine.log import StageLog
    from er_framework.engine.stages.reading import read
    from er_framework.engine.stages.shingling import shingle_and_sign

    cfg = tmp_path / "s.yaml"
    cfg.write_text(
        f"sources: [{{name: d, path: {corpus}, id: id, fields: [text]}}]\nshingler: {{type: char, k: 4}}\n"
        "signature: {type: fss, num_perm: 32}\nblockers: [{type: lsh_bands}]\n"
        "verifier: {type: jaccard}\nthreshold: 0.5\ntoken_memory_mb: 0\n"
    )
    job = parse_job(cfg)
    engine = Engine(job)
    records, _ = read(job)
    batch = Batch(records=records)
    shingle_and_sign(engine, records, batch, StageLog())
    assert batch.tokens is None and batch.token_source is not None
    rows = np.array([0, 3, 4, 50, 51, 52, 200, 399], dtype=np.int64)
    want = batch.subset(rows)
    chars = records.text_sizes()
    for buffer_len, slice_chars in ((10**6, 1 << 19), (10**6, 100), (5, 100)):
        pipeline.FUSED_SLICE_CHARS, old = slice_chars, pipeline.FUSED_SLICE_CHARS
        try:
            got = pipeline.streamed_subset(batch, rows, chars, np.zeros(buffer_len, dtype=np.uint64), 2)
        finally:
            pipeline.FUSED_SLICE_CHARS = old
        assert got.tokens is not None and want.tokens is not None and got.tokens.equals(want.tokens)
        assert got.records.ids == want.records.ids and got.signatures is not None and want.signatures is not None
        assert np.array_equal(got.signatures.values, want.signatures.values)
