"""The document job the shingle and verify stage tests run (imported as ``from stage_runs import run_docs``)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from er_framework.config.resolve import parse_job
from er_framework.executors import run_job


def run_docs(tmp: Path, data: Path, signature: str, extra: str) -> tuple[list[tuple[int, int, float]], list[int], dict[str, Any]]:
    """``(pairs, labels, report)`` of a char-shingle / LSH / Jaccard job over ``data`` with ``signature`` and ``extra`` YAML."""
    cfg = tmp / f"job_{abs(hash((signature, extra)))}.yaml"
    cfg.write_text(
        textwrap.dedent(f"""
        seed: 3
        threshold: 0.6
        sources: [{{name: d, path: {data}, id: id, fields: [text]}}]
        shingler: {{type: char, k: 4}}
        signature: {{type: {signature}, num_perm: 64}}
        blockers: [{{type: lsh_bands}}]
        verifier: {{type: jaccard}}
        diagnostics: 300
    """)
        + extra
    )
    res = run_job(parse_job(cfg), write=False)
    pairs = list(zip(res.pairs.left.tolist(), res.pairs.right.tolist(), res.pairs.score.tolist()))
    return pairs, res.labels.tolist(), res.report
