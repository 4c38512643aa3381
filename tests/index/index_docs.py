"""Documents for the tests of :mod:`er_framework.index`: planted near-duplicate texts (:func:`doc_texts`), written as
JSON lines (:func:`write_docs`), a job over them (:func:`docs_job`) and a small index of them (:func:`small_index`)."""

from __future__ import annotations

import json
from pathlib import Path

from er_framework.config.resolve import parse_job
from er_framework.index.build import build_index
from er_framework.synth.documents import planted_documents

DOCS_JOB = """
name: idx
seed: 7
threshold: {threshold}
sources: [{{name: docs, path: {data}, id: id, fields: [text]}}]
exact_duplicates: {exact}
shingler: {{type: char, k: 4}}
signature: {{type: {signature}, num_perm: 64}}
blockers: [{{type: lsh_bands, max_bucket_size: null}}]
verifier: {{type: jaccard}}
cluster: {{type: {cluster}}}
"""


def doc_texts(n_families: int, singletons: int, seed: int) -> list[str]:
    d = planted_documents(n_families, copies_per_family=(1, 3), words=(30, 80), edit_rates=(0.0, 0.15), n_singletons=singletons, seed=seed)
    return list(d.texts)


def write_docs(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), encoding="utf-8")
    return path


def docs_job(
    tmp: Path,
    data: Path,
    name: str = "job.yaml",
    *,
    threshold: float = 0.6,
    exact: str = "true",
    signature: str = "minhash",
    cluster: str = "connected_components",
) -> Path:
    cfg = tmp / name
    cfg.write_text(DOCS_JOB.format(data=data, threshold=threshold, exact=exact, signature=signature, cluster=cluster))
    return cfg


def small_index(tmp: Path, texts: list[str], n: int = 200) -> tuple[Path, list[tuple[str, str]]]:
    rows = [(f"d{i}", t) for i, t in enumerate(texts[:n])]
    data = write_docs(tmp / "d.jsonl", rows)
    path = tmp / "i.erx"
    build_index(parse_job(docs_job(tmp, data)), path)[0].close()
    return path, rows
