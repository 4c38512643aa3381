"""Ground truth for ``er evaluate``: reading a truth file (:func:`load_truth`) into a :class:`Truth`.

Truth comes in one of two shapes (CSV/TSV/JSON Lines/Parquet, ``.gz`` too; read by
:func:`er_framework.io.table_file.open_table`):

* **pairs** – two id columns (``left_id,right_id``, ``id1,id2``, ``id_l,id_r``
  … or named with ``left=``/``right=``), optionally ``left_source`` /
  ``right_source``. The true pairs are exactly the pairs listed (unordered,
  deduplicated). Cluster metrics need a partition, so for them only the pairs
  are closed transitively (connected components); the output says so.
* **clusters** – an id column and a cluster/entity column (auto-detected:
  ``cluster``, ``cluster_id``, ``entity``, ``entity_id``, ``finger``,
  ``story``, ``rec_id`` …, or named with ``id_column=``/``cluster_column=``),
  optionally ``source``. The true pairs are all within-cluster pairs; they are
  counted (sum of m(m-1)/2), never listed.

The ids are not matched to an output here: :func:`er_framework.evaluate.metrics.evaluate` does that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from er_framework.errors import InputError, Problem, closest_column, columns_text
from er_framework.io.source_files import check_ids
from er_framework.io.table_file import FileRole, TableFile, open_table

__all__ = [
    "CLUSTER_COLUMNS",
    "ID_COLUMNS",
    "PAIR_COLUMNS",
    "SOURCE_COLUMNS",
    "TRUTH_FILE",
    "Truth",
    "load_truth",
]


#: Auto-detected pair-truth columns ``(left id, right id, left source, right source)``, first match wins.
PAIR_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("left_id", "right_id", "left_source", "right_source"),
    ("id1", "id2", "source1", "source2"),
    ("id_1", "id_2", "source_1", "source_2"),
    ("id_l", "id_r", "source_l", "source_r"),
    ("id_left", "id_right", "source_left", "source_right"),
    ("l_id", "r_id", "l_source", "r_source"),
    ("ltable_id", "rtable_id", "ltable_source", "rtable_source"),
    ("idA", "idB", "sourceA", "sourceB"),
    ("a_id", "b_id", "a_source", "b_source"),  # er synth customers
    ("left", "right", "left_source", "right_source"),
)

#: Auto-detected cluster/entity columns of a cluster truth, in order of preference.
CLUSTER_COLUMNS: tuple[str, ...] = (
    "cluster_id",
    "cluster",
    "clusterid",
    "entity_id",
    "entity",
    "entityid",
    "true_cluster",
    "true_id",
    "truth",
    "cid",
    "group_id",
    "group",
    "label",
    "finger",
    "story",
    "rec_id",
)

#: Auto-detected record id columns of a cluster truth, in order of preference.
ID_COLUMNS: tuple[str, ...] = ("id", "record_id", "recordid", "doc_id", "tid", "rid", "key", "rec_id")

#: Auto-detected source columns of a cluster truth.
SOURCE_COLUMNS: tuple[str, ...] = ("source", "source_name", "src")


#: How the messages about a truth file name it and what they advise.
TRUTH_FILE = FileRole(
    what="truth file",
    path_fix="check the path given with --truth",
    dir_fix="pass the truth file inside it with --truth",
    type_fix="convert the truth to CSV, TSV, JSON Lines or Parquet",
    header_fix="write a header such as left_id,right_id (pairs) or id,cluster (clusters)",
)


@dataclass
class Truth:
    """Ground truth as read from a file (ids are not yet matched to an output).

    ``kind == "clusters"``: ``ids``, ``labels`` (``None`` = no cluster given:
    a singleton) and ``sources`` (``None`` entries = unknown source) per
    record. ``kind == "pairs"``: ``left_ids``/``right_ids`` and
    ``left_sources``/``right_sources`` per pair. ``source`` fills unknown
    sources; ``columns`` names the columns used (role -> column).
    """

    path: str
    kind: Literal["pairs", "clusters"]
    columns: dict[str, str]
    ids: list[str] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)
    sources: list[str | None] = field(default_factory=list)
    left_ids: list[str] = field(default_factory=list)
    right_ids: list[str] = field(default_factory=list)
    left_sources: list[str | None] = field(default_factory=list)
    right_sources: list[str | None] = field(default_factory=list)
    source: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return len(self.ids) if self.kind == "clusters" else len(self.left_ids)

    def describe(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "columns": dict(self.columns), "rows": self.rows}


def _find(header: Sequence[str], name: str) -> str | None:
    """The header column equal to ``name``, else the one equal ignoring case."""
    if name in header:
        return name
    lower = name.lower()
    for col in header:
        if col.lower() == lower:
            return col
    return None


def _column_problem(table: TableFile, col: str, option: str) -> Problem:
    return Problem(
        where=table.file,
        path=f"column {col!r}",
        message=f"column {col!r} not found in the truth file; columns present: {columns_text(table.header)}",
        fix=f"{closest_column(col, table.header)}pass {option} with one of the columns present",
    )


def load_truth(
    path: str | Path,
    *,
    id_column: str | None = None,
    cluster_column: str | None = None,
    left: str | None = None,
    right: str | None = None,
    source: str | None = None,
) -> Truth:
    """Read a truth file: pairs (two id columns) or clusters (id + cluster column).

    ``left``/``right`` name the id columns of a pairs truth, ``id_column`` /
    ``cluster_column`` those of a cluster truth; unnamed columns are
    auto-detected (:data:`PAIR_COLUMNS`, :data:`ID_COLUMNS`,
    :data:`CLUSTER_COLUMNS`; case-insensitive). Pairs are chosen when pair
    columns are named or found and no cluster column is named. ``source``
    is the source name of truth records without a source column/value.

    Raises :class:`InputError` for a missing or unreadable file, unknown
    columns (with "did you mean"), undetectable columns, empty or bad ids,
    and ids listed twice in a cluster truth.
    """
    table = open_table(path, TRUTH_FILE)
    header = table.header
    explicit_pairs = left is not None or right is not None
    explicit_clusters = id_column is not None or cluster_column is not None
    if explicit_pairs and explicit_clusters:
        raise InputError(
            Problem(
                where=table.file,
                message="both pair columns (left/right) and cluster columns (id_column/cluster_column) were given",
                fix="name either the two id columns of a pairs truth or the id and cluster columns",
            )
        )

    pair_cols: tuple[str, str, str | None, str | None] | None = None
    if explicit_pairs:
        if left is None or right is None:
            raise InputError(
                Problem(
                    where=table.file,
                    message="only one of the two pair id columns was given",
                    fix="name both the left and the right id column",
                )
            )
        problems = [_column_problem(table, c, opt) for c, opt in ((left, "left="), (right, "right=")) if _find(header, c) is None]
        if problems:
            raise InputError(problems)
        fl, fr = _find(header, left), _find(header, right)
        assert fl is not None and fr is not None
        pair_cols = (fl, fr, None, None)
        for _, _, ls, rs in PAIR_COLUMNS:
            sl, sr = _find(header, ls), _find(header, rs)
            if sl and sr:
                pair_cols = (fl, fr, sl, sr)
                break
    elif not explicit_clusters:
        for li, ri, ls, rs in PAIR_COLUMNS:
            fl, fr = _find(header, li), _find(header, ri)
            if fl and fr:
                sl, sr = _find(header, ls), _find(header, rs)
                pair_cols = (fl, fr, sl if sl and sr else None, sr if sl and sr else None)
                break

    if pair_cols is not None:
        return _load_pairs(table, pair_cols, source)
    return _load_clusters(table, id_column, cluster_column, source)


def _load_pairs(table: TableFile, cols: tuple[str, str, str | None, str | None], source: str | None) -> Truth:
    li, ri, ls, rs = cols
    wanted = [c for c in (li, ri, ls, rs) if c is not None]
    columns, loc = table.read(wanted, li)
    problems: list[Problem] = []
    left_ids, _, p1 = check_ids(columns[li], loc, table.file, li, unique=False)
    right_ids, _, p2 = check_ids(columns[ri], loc, table.file, ri, unique=False)
    problems += p1 + p2
    if problems:
        raise InputError(problems)
    n = len(left_ids)
    none: list[str | None] = [None] * n
    left_sources = table.texts(columns[ls]) if ls else none
    right_sources = table.texts(columns[rs]) if rs else list(none)
    used = {"left_id": li, "right_id": ri}
    if ls and rs:
        used.update(left_source=ls, right_source=rs)
    return Truth(
        path=table.file,
        kind="pairs",
        columns=used,
        left_ids=left_ids,
        right_ids=right_ids,
        left_sources=left_sources,
        right_sources=right_sources,
        source=source,
    )


def _load_clusters(table: TableFile, id_column: str | None, cluster_column: str | None, source: str | None) -> Truth:
    header = table.header
    problems: list[Problem] = []
    for col, opt in ((id_column, "--id-column"), (cluster_column, "--cluster-column")):
        if col is not None and _find(header, col) is None:
            problems.append(_column_problem(table, col, opt))
    if problems:
        raise InputError(problems)
    idc = _find(header, id_column) if id_column else None
    clc = _find(header, cluster_column) if cluster_column else None
    if clc is None:
        for name in CLUSTER_COLUMNS:
            found = _find(header, name)
            if found and found != idc and (idc is not None or any(_find(header, i) not in (None, found) for i in ID_COLUMNS)):
                clc = found
                break
    if idc is None:
        for name in ID_COLUMNS:
            found = _find(header, name)
            if found and found != clc:
                idc = found
                break
    if idc is None or clc is None:
        pair_names = ", ".join(f"{a}/{b}" for a, b, _, _ in PAIR_COLUMNS[:4])
        missing = (
            "a cluster column"
            if idc is not None
            else ("an id column" if clc is not None else "pair id columns or an id and a cluster column")
        )
        raise InputError(
            Problem(
                where=table.file,
                message=f"cannot tell the truth's columns: found no {missing}; columns present: {columns_text(header)}",
                fix=f"name them with --id-column and --cluster-column (a cluster truth), or use "
                f"two id columns named {pair_names} (a pairs truth); auto-detected cluster "
                f"columns: {', '.join(CLUSTER_COLUMNS)}",
            )
        )
    src = None
    for name in SOURCE_COLUMNS:
        found = _find(header, name)
        if found and found not in (idc, clc):
            src = found
            break
    wanted = [c for c in (idc, clc, src) if c is not None]
    columns, loc = table.read(wanted, idc)
    ids, _, p = check_ids(columns[idc], loc, table.file, idc, unique=src is None)
    if p:
        raise InputError(p)
    labels = table.texts(columns[clc])
    sources: list[str | None] = table.texts(columns[src]) if src else [None] * len(ids)
    used = {"id": idc, "cluster": clc}
    if src:
        used["source"] = src
    notes = []
    unlabeled = sum(1 for v in labels if v is None)
    if unlabeled:
        notes.append(f"{unlabeled:,} truth record(s) have no value in column {clc!r}: each is its own cluster")
    return Truth(path=table.file, kind="clusters", columns=used, ids=ids, labels=labels, sources=sources, source=source, notes=notes)
