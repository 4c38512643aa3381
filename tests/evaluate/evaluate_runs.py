"""Runs and truth files the evaluate tests share (imported as ``from evaluate_runs import ...``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from er_framework.io.output_write import write_outputs

ROOT = Path(__file__).resolve().parents[2]

# truth {a,b,c},{d,e},{f}; predicted {a,b},{c,d,e},{f}
TRUTH = {"a": "T1", "b": "T1", "c": "T1", "d": "T2", "e": "T2", "f": "T3"}
PRED = {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1, "f": 2}
VERIFIED = [("a", "b"), ("c", "d"), ("d", "e")]


def write_run(
    out: Path,
    clusters: dict[str, int] | list[tuple[str, str, int]],
    pairs: list[tuple[str, str]] | list[tuple[str, str, str, str]],
    *,
    source: str = "s",
    mode: str = "dedup",
    per_source: dict[str, int] | None = None,
    candidate_pairs: int = 5,
    candidates: list[tuple[str, str, str, str]] | None = None,
    fmt: str = "csv",
) -> Path:
    """An output folder as er run writes it (clusters, pairs, report.json, optional candidates)."""
    rows = [(source, i, c) for i, c in clusters.items()] if isinstance(clusters, dict) else clusters
    full = [p if len(p) == 4 else (source, p[0], source, p[1]) for p in pairs]
    tables = {
        "clusters": {
            "source": [r[0] for r in rows],
            "id": [r[1] for r in rows],
            "cluster_id": np.array([r[2] for r in rows], dtype=np.int64),
        },
        "pairs": {
            "left_source": [p[0] for p in full],
            "left_id": [p[1] for p in full],
            "right_source": [p[2] for p in full],
            "right_id": [p[3] for p in full],
            "score": np.ones(len(full)),
        },
    }
    if candidates is not None:
        tables["candidates"] = {
            "left_source": [p[0] for p in candidates],
            "left_id": [p[1] for p in candidates],
            "right_source": [p[2] for p in candidates],
            "right_id": [p[3] for p in candidates],
        }
    if per_source is None:
        per_source = {}
        for r in rows:
            per_source[r[0]] = per_source.get(r[0], 0) + 1
    report = {"mode": mode, "records": {"total": len(rows), "per_source": per_source}, "candidate_pairs": candidate_pairs}
    write_outputs(out, tables, {"report": report}, fmt=fmt)
    return out


def write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def cluster_truth(tmp: Path, labels: dict[str, str] = TRUTH) -> Path:
    return write_text(tmp / "truth.csv", "id,cluster\n" + "".join(f"{i},{c}\n" for i, c in labels.items()))
