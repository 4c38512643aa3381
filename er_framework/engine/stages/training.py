"""The training labels of ``training: {labels: FILE}``: read, checked and turned into rows of the verifier's batch."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.config.resolve import Job
from er_framework.data import LabelledPairs, Pairs, Records
from er_framework.engine.stages.exact import Exact, exact_groups
from er_framework.errors import InputError, Problem
from er_framework.io.table_file import FileRole, open_table

__all__ = ["LABEL_COLUMNS", "MATCH_WORDS", "NON_MATCH_WORDS", "read_labels", "record_rows", "training_labels"]

Int64Array = npt.NDArray[np.int64]

#: what a labels file may write for a match and for a non-match (case-insensitive)
MATCH_WORDS = frozenset({"1", "yes", "y", "true", "t", "match", "same"})
NON_MATCH_WORDS = frozenset({"0", "no", "n", "false", "f", "non-match", "nonmatch", "no-match", "different"})
#: the labels file of ``training: {labels: FILE}``, as messages name it
LABELS_FILE = FileRole(
    what="labels file",
    path_fix="check training.labels of the job (relative to the job file)",
    dir_fix="point training.labels to the labels CSV (er review writes one)",
    header_fix="write the header left_source,left_id,right_source,right_id,match",
)
LABEL_COLUMNS = ("left_source", "left_id", "right_source", "right_id", "match")


def record_rows(records: Records, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The index of each wanted record, by ``(source name, id)`` (records not found are absent)."""
    ids = np.asarray(records.ids, dtype=object)
    names = np.asarray(records.source_names, dtype=object)
    keys = set(map(str, (i for _, i in wanted)))
    hit = np.flatnonzero(np.isin(ids, list(keys))) if keys else np.zeros(0, dtype=np.int64)
    found = {(str(names[records.source[k]]), str(ids[k])): int(k) for k in hit}
    return {key: found[key] for key in wanted if key in found}


def read_labels(job: Job, records: Records) -> tuple[Int64Array, Int64Array, npt.NDArray[np.bool_], dict[str, Any]]:
    """The labelled pairs of ``training: {labels: FILE}`` as global record indices: ``(left, right, match, stats)``.

    Rows with an empty ``match`` are skipped (a file ``er review`` wrote and
    nobody finished); ids no source holds, unreadable labels and a pair of a
    record with itself are problems naming their line, all reported at once.
    """
    path = job.training_path()
    assert path is not None
    # the one reader of a user's table (er review writes CSV whatever the name; a Parquet file is read as one)
    table = open_table(path, LABELS_FILE, fmt=None if path.name.lower().endswith(".parquet") else "csv")
    cols, loc = table.read(LABEL_COLUMNS)
    texts = [[t or "" for t in table.texts(cols[c])] for c in LABEL_COLUMNS]
    rows = [(loc.where(i), [col[i] for col in texts]) for i in range(len(texts[0]))]
    index = record_rows(records, {(str(r[0]), str(r[1])) for _, r in rows} | {(str(r[2]), str(r[3])) for _, r in rows})
    left: list[int] = []
    right: list[int] = []
    match: list[bool] = []
    problems: list[Problem] = []
    used: list[tuple[str, str, str, str, bool]] = []
    skipped = 0
    for where, (ls, lid, rs, rid, label) in rows:
        word = str(label or "").strip().lower()
        if not word:
            skipped += 1
            continue
        if word not in MATCH_WORDS and word not in NON_MATCH_WORDS:
            problems.append(
                Problem(
                    where=where,
                    path="match",
                    message=f"match {label!r} is neither a match nor a non-match",
                    fix="write 1 (yes, true, match) or 0 (no, false, non-match), or leave it empty to skip the row",
                )
            )
            continue
        a, b = index.get((str(ls), str(lid))), index.get((str(rs), str(rid)))
        for side, key, found in (("left", (ls, lid), a), ("right", (rs, rid), b)):
            if found is None:
                problems.append(
                    Problem(
                        where=where,
                        path=f"{side}_id",
                        message=f"no record {key[1]!r} in source {key[0]!r}",
                        fix=f"sources: {', '.join(records.source_names)}; ids as in the job's data",
                    )
                )
        if a is None or b is None:
            continue
        if a == b:
            problems.append(Problem(where=where, message=f"a record paired with itself ({ls} {lid})", fix="remove the row"))
            continue
        left.append(a)
        right.append(b)
        match.append(word in MATCH_WORDS)
        used.append((str(ls), str(lid), str(rs), str(rid), word in MATCH_WORDS))
        if len(problems) > 20:
            break
    if problems:
        raise InputError(problems[:20])
    m = np.asarray(match, dtype=bool)
    if not m.any() or m.all():
        raise InputError(
            Problem(
                where=str(path),
                path="match",
                message=f"the labels hold {int(m.sum())} matches and {int((~m).sum())} non-matches "
                f"({skipped} rows without a label): training needs both",
                fix="label pairs of both kinds (er review OUT lists pairs on both sides of the threshold)",
            )
        )
    # what the labels say, whatever the file's layout: the model records it (its training digest)
    digest = hashlib.sha256(json.dumps(sorted(used), separators=(",", ":")).encode()).hexdigest()
    stats = {
        "file": str(path),
        "matches": int(m.sum()),
        "non_matches": int((~m).sum()),
        "unlabelled_rows": skipped,
        "prior": job.spec.training.prior if job.spec.training is not None else None,
        "sha256": digest,
    }
    return np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64), m, stats


def training_labels(job: Job, records: Records, exact: Exact) -> tuple[LabelledPairs | None, dict[str, Any]]:
    """``training:``'s labelled pairs as rows of the verifier's batch (the active records; a collapsed copy
    stands for its representative), or None without ``training:``; and the report's ``training`` stats."""
    if job.spec.training is None:
        return None, {}
    left, right, match, stats = read_labels(job, records)
    n = len(records)
    group_of, starts, _sizes, members = exact_groups(exact, n)
    rep = members[starts][group_of]  # each record's representative (itself when it has no copies)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[exact.active] = np.arange(len(exact.active), dtype=np.int64)
    a, b = row_of[rep[left]], row_of[rep[right]]
    same = a == b
    stats["pairs_of_exact_copies"] = int(same.sum())  # both sides one text: not evidence of anything
    keep = ~same
    return LabelledPairs(Pairs(a[keep], b[keep]), match[keep], job.spec.training.prior), stats
