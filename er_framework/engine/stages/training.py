"""The training labels of ``training: {labels: FILE}``: read, checked and turned into rows of the verifier's batch."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.capabilities import Trainable, ability
from er_framework.config.resolve import Job
from er_framework.data import LabelledPairs, Pairs, Records
from er_framework.engine.stages.exact import Exact, exact_groups
from er_framework.errors import InputError, Problem
from er_framework.io.labels_file import LABEL_COLUMNS, read_labels_file
from er_framework.io.table_file import FileRole, open_table

__all__ = [
    "LABEL_COLUMNS",
    "MATCH_WORDS",
    "NON_MATCH_WORDS",
    "ReadLabels",
    "labelled_representatives",
    "learns_from_one_kind",
    "RecordFinder",
    "read_labels",
    "read_labels_found",
    "record_rows",
    "training_labels",
]

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


def record_rows(records: Records, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The index of each wanted record, by ``(source name, id)`` (records not found are absent)."""
    ids = np.asarray(records.ids, dtype=object)
    names = np.asarray(records.source_names, dtype=object)
    keys = set(map(str, (i for _, i in wanted)))
    hit = np.flatnonzero(np.isin(ids, list(keys))) if keys else np.zeros(0, dtype=np.int64)
    found = {(str(names[records.source[k]]), str(ids[k])): int(k) for k in hit}
    return {key: found[key] for key in wanted if key in found}


@dataclass(frozen=True)
class ReadLabels:
    """The labelled pairs of ``training: {labels: FILE}`` as global record indices, and the report's stats."""

    left: Int64Array
    right: Int64Array
    match: npt.NDArray[np.bool_]
    stats: dict[str, Any]


def _label_rows(path: Path) -> list[tuple[str, list[str]]]:
    """``(where, [left_source, left_id, right_source, right_id, match])`` per row of the labels file: a CSV
    (whatever its name) through the one labels reader, a Parquet file through the table reader."""
    if path.name.lower().endswith(".parquet"):
        table = open_table(path, LABELS_FILE, fmt=None)
        cols, loc = table.read(LABEL_COLUMNS)
        texts = [[t or "" for t in table.texts(cols[c])] for c in LABEL_COLUMNS]
        return [(loc.where(i), [col[i] for col in texts]) for i in range(len(texts[0]))]
    labels = read_labels_file(path, fix=LABELS_FILE.dir_fix)
    at = [labels.column(c) for c in LABEL_COLUMNS]
    return [(f"{path}:{line}", [row[i] for i in at]) for line, row in zip(labels.lines, labels.rows)]


def _missing_records(where: str, left: tuple[Any, int | None], right: tuple[Any, int | None], sources: list[str]) -> list[Problem]:
    """The problems of a labels row naming a record no source holds (``(key, index or None)`` per side)."""
    return [
        Problem(
            where=where,
            path=f"{side}_id",
            message=f"no record {key[1]!r} in source {key[0]!r}",
            fix=f"sources: {', '.join(sources)}; ids as in the job's data",
        )
        for side, (key, found) in (("left", left), ("right", right))
        if found is None
    ]


def learns_from_one_kind(verifier: object) -> bool:
    """Whether ``verifier`` learns from labels of one kind only (a :class:`Trainable` whose
    :meth:`~Trainable.learns_from_one_kind` says so under its parameters)."""
    trainable = ability(verifier, Trainable)
    return trainable is not None and bool(trainable.learns_from_one_kind())


def _check_kinds(path: Path, match: npt.NDArray[np.bool_], skipped: int, one_kind: bool) -> None:
    """Refuse labels that cannot be learned from: none at all, or (unless ``one_kind``) one kind only."""
    matches, non_matches = int(match.sum()), int((~match).sum())
    if len(match) and (one_kind or (matches and non_matches)):
        return
    if one_kind:
        message = f"the labels hold no labelled pair ({skipped} rows without a label): training needs at least one"
        fix = "fill the match column of some rows with 1 or 0 (er review OUT proposes pairs to label)"
    else:
        message = f"the labels hold {matches} matches and {non_matches} non-matches ({skipped} rows without a label): training needs both"
        fix = "label pairs of both kinds (er review OUT lists pairs on both sides of the threshold)"
    raise InputError(Problem(where=str(path), path="match", message=message, fix=fix))


#: ``(source name, id)`` -> global record index, of the wanted records a run holds (absent: not found)
RecordFinder = Callable[[set[tuple[str, str]]], dict[tuple[str, str], int]]


def read_labels(job: Job, records: Records, *, one_kind: bool = False) -> ReadLabels:
    """The labelled pairs of ``training: {labels: FILE}`` as indices of ``records`` (:func:`read_labels_found`)."""
    return read_labels_found(job, lambda wanted: record_rows(records, wanted), records.source_names, one_kind=one_kind)


def read_labels_found(job: Job, find: RecordFinder, source_names: list[str], *, one_kind: bool = False) -> ReadLabels:
    """The labelled pairs of ``training: {labels: FILE}`` as global record indices, the records found by
    ``find`` (an executor that does not hold the records looks them up where they are).

    Rows with an empty ``match`` are skipped (a file ``er review`` wrote and
    nobody finished); ids no source holds, unreadable labels, a pair of a
    record with itself and a pair labelled both a match and a non-match (in
    either orientation) are problems naming their line, all reported at once.
    Ids are quoted in messages only as ``repr`` (control characters escaped),
    and only from a file recognized as a labels file. No labelled pair at all
    is refused; so are labels of one kind only (all matches, or all
    non-matches) unless ``one_kind`` (the verifier learns from them:
    :func:`learns_from_one_kind`).
    """
    path = job.training_path()
    assert path is not None
    rows = _label_rows(path)
    index = find({(str(r[0]), str(r[1])) for _, r in rows} | {(str(r[2]), str(r[3])) for _, r in rows})
    left: list[int] = []
    right: list[int] = []
    match: list[bool] = []
    problems: list[Problem] = []
    used: list[tuple[str, str, str, str, bool]] = []
    first: dict[tuple[int, int], tuple[str, bool]] = {}  # each pair's first label and its line
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
        if a is None or b is None:
            problems += _missing_records(where, ((ls, lid), a), ((rs, rid), b), source_names)
            continue
        if a == b:
            problems.append(Problem(where=where, message=f"a record paired with itself ({ls!r} {lid!r})", fix="remove the row"))
            continue
        is_match = word in MATCH_WORDS
        pair = (min(a, b), max(a, b))
        before = first.setdefault(pair, (where, is_match))
        if before[1] != is_match:
            problems.append(
                Problem(
                    where=where,
                    path="match",
                    message=f"the pair {ls!r} {lid!r} | {rs!r} {rid!r} is labelled "
                    f"{'a match' if is_match else 'a non-match'} here and {'a match' if before[1] else 'a non-match'} "
                    f"at {before[0]}",
                    fix="keep one label for the pair (delete or correct one of the two rows)",
                )
            )
            continue
        left.append(a)
        right.append(b)
        match.append(is_match)
        used.append((str(ls), str(lid), str(rs), str(rid), is_match))
        if len(problems) > 20:
            break
    if problems:
        raise InputError(problems[:20])
    m = np.asarray(match, dtype=bool)
    _check_kinds(path, m, skipped, one_kind)
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
    return ReadLabels(np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64), m, stats)


def training_labels(
    job: Job, records: Records, exact: Exact, labels: ReadLabels | None = None
) -> tuple[LabelledPairs | None, dict[str, Any]]:
    """``training:``'s labelled pairs as rows of the verifier's batch (the active records; a collapsed copy
    stands for its representative), or None without ``training:``; and the report's ``training`` stats.
    ``labels``: what :func:`read_labels` read already (a run reads them right after the records, before
    any expensive stage, so that a bad labels file fails first); read here when not given."""
    if job.spec.training is None:
        return None, {}
    if labels is None:
        labels = read_labels(job, records)
    n = len(records)
    group_of, starts, _sizes, members = exact_groups(exact, n)
    rep = members[starts][group_of]  # each record's representative (itself when it has no copies)
    labelled, stats = labelled_representatives(job, labels, rep[labels.left], rep[labels.right])
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[exact.active] = np.arange(len(exact.active), dtype=np.int64)
    pairs = Pairs(row_of[labelled.pairs.left], row_of[labelled.pairs.right])
    return LabelledPairs(pairs, labelled.match, labelled.lam), stats


def labelled_representatives(
    job: Job, labels: ReadLabels, left_rep: Int64Array, right_rep: Int64Array
) -> tuple[LabelledPairs, dict[str, Any]]:
    """The labelled pairs between the representatives of their records (``left_rep``, ``right_rep``: global
    indices; a record without exact copies is its own), a pair of two copies of one text dropped (not
    evidence of anything), and the report's ``training`` stats."""
    assert job.spec.training is not None
    same = left_rep == right_rep
    stats = dict(labels.stats)
    stats["pairs_of_exact_copies"] = int(same.sum())
    keep = ~same
    return LabelledPairs(Pairs(left_rep[keep], right_rep[keep]), labels.match[keep], job.spec.training.prior), stats
