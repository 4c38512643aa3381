"""Scoring of whole-process jobs for bench_whole.py: read each job's pairs, compare them with the truth.

Record linkage (``link_scores``, ``dedupe_scores``): pairwise precision,
recall and F1 against a truth file. Documents (``DocumentTruth``): exact
Jaccard of character 5-shingles of the normalized text
(:func:`bench_documents.exact_jaccard`, er's kernels) for the union of every
within-family pair and every pair any job reported, computed a batch of
connected groups at a time so that memory stays bounded at a million documents.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

Pair = tuple[str, str]


# ----------------------------------------------------------------------------
# reading pairs


def er_pairs(pairs_csv: Path, first_source: str | None) -> set[Pair]:
    """The pairs of er's pairs.csv: ``(first source's id, other id)`` for a link (``first_source``
    given), ``(smaller id, larger id)`` for a dedupe."""
    out: set[Pair] = set()
    with open(pairs_csv, newline="", encoding="utf-8") as f:
        r = csv.DictReader(f)
        for row in r:
            a, b = row["left_id"], row["right_id"]
            if first_source is None:
                out.add((a, b) if a <= b else (b, a))
            elif row["left_source"] == first_source:
                out.add((a, b))
            else:
                out.add((b, a))
    return out


def er_cluster_pairs(clusters_csv: Path) -> set[Pair]:
    """Every pair of records in one cluster of er's clusters.csv (dedupe), ``(smaller id, larger id)``."""
    groups: dict[str, list[str]] = {}
    with open(clusters_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            groups.setdefault(row["cluster_id"], []).append(row["id"])
    return pairs_of_groups(groups.values())


def csv_pairs(pairs_csv: Path, ordered: bool) -> set[Pair]:
    """Two-column pairs CSV with a header; ``ordered=False`` sorts each pair (dedupe)."""
    out: set[Pair] = set()
    with open(pairs_csv, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        next(r, None)
        for row in r:
            a, b = row[0], row[1]
            out.add((a, b) if ordered or a <= b else (b, a))
    return out


def pairs_of_groups(groups: Iterable[list[str]]) -> set[Pair]:
    out: set[Pair] = set()
    for g in groups:
        g = sorted(g)
        for i in range(len(g)):
            for j in range(i + 1, len(g)):
                out.add((g[i], g[j]))
    return out


def link_truth(truth_csv: Path) -> set[Pair]:
    """``a_id,b_id`` rows."""
    return csv_pairs(truth_csv, ordered=True)


def dedupe_truth(truth_csv: Path) -> set[Pair]:
    """``id,entity`` rows: every pair of records of one entity."""
    groups: dict[str, list[str]] = {}
    with open(truth_csv, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        next(r, None)
        for rid, entity in r:
            groups.setdefault(entity, []).append(rid)
    return pairs_of_groups(groups.values())


def prf(got: set[Pair], truth: set[Pair]) -> dict[str, Any]:
    tp = len(got & truth)
    p = tp / len(got) if got else 0.0
    r = tp / len(truth) if truth else 1.0
    return {
        "predicted": len(got),
        "true_positives": tp,
        "truth_pairs": len(truth),
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r) if p + r else 0.0,
    }


# ----------------------------------------------------------------------------
# documents


def doc_index(doc_id: str) -> int:
    """``d<k>`` -> k (the ids bench_whole writes: the line number)."""
    if not doc_id.startswith("d") or not doc_id[1:].isdigit():
        raise ValueError(f"unexpected document id {doc_id!r} (expected d<line number>)")
    return int(doc_id[1:])


def er_doc_pairs(pairs_csv: Path) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    with open(pairs_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            a, b = doc_index(row["left_id"]), doc_index(row["right_id"])
            out.add((a, b) if a < b else (b, a))
    return out


def npy_doc_pairs(pairs_npy: Path) -> set[tuple[int, int]]:
    """bench_documents' workers: a 2 x n int64 array of line numbers."""
    import numpy as np

    lr = np.load(pairs_npy)
    return {(a, b) if a < b else (b, a) for a, b in zip(lr[0].tolist(), lr[1].tolist())}


def read_families(families_csv: Path) -> list[int]:
    """``id,family`` rows -> family of each line number."""
    fam: dict[int, int] = {}
    with open(families_csv, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        next(r, None)
        for rid, family in r:
            fam[doc_index(rid)] = int(family)
    return [fam[i] for i in range(len(fam))]


def within_family_pairs(family: list[int]) -> set[tuple[int, int]]:
    groups: dict[int, list[int]] = {}
    for i, f in enumerate(family):
        groups.setdefault(f, []).append(i)
    out: set[tuple[int, int]] = set()
    for g in groups.values():
        for x in range(len(g)):
            for y in range(x + 1, len(g)):
                out.add((g[x], g[y]))
    return out


def load_texts(jsonl: Path, wanted: set[int]) -> dict[int, str]:
    """The ``text`` of the wanted line numbers, streaming the file."""
    out: dict[int, str] = {}
    with open(jsonl, encoding="utf-8") as f:
        for k, line in enumerate(f):
            if k in wanted:
                out[k] = json.loads(line)["text"]
    return out


def exact_jaccard_of(jsonl: Path, pairs: set[tuple[int, int]], max_docs: int = 20000) -> dict[tuple[int, int], float]:
    """Exact Jaccard of every pair: documents grouped by connected component of the pairs, components
    packed into batches of at most ``max_docs`` documents (a larger component is one batch), each batch
    shingled once by :func:`bench_documents.exact_jaccard`."""
    import numpy as np
    from bench_documents import exact_jaccard
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if not pairs:
        return {}
    plist = sorted(pairs)
    lo = np.array([p[0] for p in plist], dtype=np.int64)
    hi = np.array([p[1] for p in plist], dtype=np.int64)
    docs = np.unique(np.concatenate([lo, hi]))
    li, ri = np.searchsorted(docs, lo), np.searchsorted(docs, hi)
    n = len(docs)
    graph = coo_matrix((np.ones(len(li), dtype=np.int8), (li, ri)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    texts = load_texts(jsonl, set(docs.tolist()))
    # batches of whole components
    comp_size = np.bincount(comp)
    batch_of_comp = np.zeros(len(comp_size), dtype=np.int64)
    b = filled = 0
    for c in range(len(comp_size)):
        if filled and filled + comp_size[c] > max_docs:
            b += 1
            filled = 0
        batch_of_comp[c] = b
        filled += int(comp_size[c])
    pair_batch = batch_of_comp[comp[li]]
    out: dict[tuple[int, int], float] = {}
    for batch in range(b + 1):
        sel = np.flatnonzero(pair_batch == batch)
        if not len(sel):
            continue
        jac = exact_jaccard(texts, lo[sel], hi[sel], workers=os.cpu_count() or 1)
        for x, y, j in zip(lo[sel].tolist(), hi[sel].tolist(), jac.tolist()):
            out[(x, y)] = j
    return out


def document_scores(
    reported: set[tuple[int, int]], jaccard: dict[tuple[int, int], float], truth_at: dict[float, set[tuple[int, int]]], threshold: float
) -> dict[str, Any]:
    """Recall at each level of ``truth_at`` and precision = share of reported pairs with exact J >= threshold."""
    good = sum(1 for p in reported if jaccard[p] >= threshold)
    out: dict[str, Any] = {
        "reported": len(reported),
        "reported_below_threshold": len(reported) - good,
        "precision": good / len(reported) if reported else 1.0,
    }
    for level, truth in truth_at.items():
        out[f"recall_at_{level:g}"] = len(reported & truth) / len(truth) if truth else 1.0
        out[f"truth_pairs_at_{level:g}"] = len(truth)
    return out
