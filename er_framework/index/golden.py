"""Golden records kept in an index (the job's ``output.golden``), updated as records are added and removed.

The index stores its records normalized (what blocking and scoring read); a golden record is made of the
values *as read*. So an index whose job asks for golden records keeps, beside each record, its values as
read (``golden_input``), and one golden record per cluster (``golden``: the row of
:func:`~er_framework.engine.stages.golden.golden_table`, as JSON). After a write only the clusters the
write touched are made again (:func:`touched_clusters`); ``refit`` and ``build`` make them all.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from er_framework.config.resolve import Job
from er_framework.data import Records
from er_framework.engine.stages.golden import golden_plan, golden_table
from er_framework.index.sqlite import chunks, marks

__all__ = [
    "GOLDEN_SCHEMA",
    "ensure_tables",
    "forget_inputs",
    "golden_columns",
    "has_golden",
    "read_golden",
    "refresh_golden",
    "store_inputs",
    "touched_clusters",
]

GOLDEN_SCHEMA = """
CREATE TABLE IF NOT EXISTS golden_input(
    rid INTEGER PRIMARY KEY,      -- records.rid
    fields TEXT NOT NULL          -- JSON list of the field values as read (meta.fields order)
);
CREATE TABLE IF NOT EXISTS golden(
    cluster INTEGER PRIMARY KEY,  -- records.cluster
    size INTEGER NOT NULL,
    row TEXT NOT NULL             -- JSON list: per field of meta.fields, [value, source, id] (null, "", "" when none)
);
"""


def ensure_tables(conn: sqlite3.Connection) -> None:
    """Create the golden tables when missing (statement by statement: ``executescript`` would commit the
    write's transaction)."""
    for statement in GOLDEN_SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def has_golden(job: Job) -> bool:
    """The index's job asks for golden records."""
    return job.spec.output.golden is not None


def store_inputs(conn: sqlite3.Connection, rids: Sequence[int], as_read: Records, fields: Sequence[str]) -> None:
    """Keep the values as read of the records ``rids`` (row ``i`` of ``as_read`` is record ``rids[i]``)."""
    ensure_tables(conn)
    n = len(as_read)
    cols = [list(as_read.fields[f]) if f in as_read.fields else [None] * n for f in fields]
    conn.executemany(
        "INSERT OR REPLACE INTO golden_input(rid, fields) VALUES (?, ?)",
        ((rid, json.dumps([c[i] for c in cols], ensure_ascii=False)) for i, rid in enumerate(rids)),
    )


def forget_inputs(conn: sqlite3.Connection, rids: Sequence[int]) -> None:
    """Drop the values as read of removed records."""
    ensure_tables(conn)
    for part in chunks(list(rids)):
        conn.execute(f"DELETE FROM golden_input WHERE rid IN ({marks(len(part))})", part)


def touched_clusters(conn: sqlite3.Connection, seq: int, rids: Iterable[int] = (), old: Iterable[int] = ()) -> set[int]:
    """The clusters a write (event ``seq``) may have changed: those of the records ``rids`` now (the records
    it added), the clusters ``old`` (those of the records it removed), and every id of its cluster changes
    (created, merged, split, retired: both the id and the survivor)."""
    out = {int(c) for c in old}
    rid_list = list(rids)
    for part in chunks(rid_list):
        out.update(int(c) for (c,) in conn.execute(f"SELECT cluster FROM records WHERE rid IN ({marks(len(part))})", part))
    for c, survivor in conn.execute("SELECT cluster, survivor FROM cluster_changes WHERE seq = ?", (seq,)):
        out.add(int(c))
        if survivor is not None:
            out.add(int(survivor))
    return out


def refresh_golden(
    conn: sqlite3.Connection, job: Job, sources: Sequence[str], fields: Sequence[str], clusters: set[int] | None = None
) -> int:
    """Make the golden records of ``clusters`` again (``None``: of every cluster) from the records they hold
    now; a cluster left without records loses its golden record. Returns how many golden records were written."""
    spec = job.spec.output.golden
    assert spec is not None
    ensure_tables(conn)
    query = "SELECT r.rid, r.source, r.id, r.cluster, g.fields FROM records r LEFT JOIN golden_input g ON g.rid = r.rid"
    rows: list[tuple[int, int, str, int, str | None]] = []
    if clusters is None:
        conn.execute("DELETE FROM golden")
        rows = list(conn.execute(query + " ORDER BY r.rid"))
    else:
        wanted = sorted(clusters)
        for part in chunks(wanted):
            conn.execute(f"DELETE FROM golden WHERE cluster IN ({marks(len(part))})", part)
            rows += list(conn.execute(query + f" WHERE r.cluster IN ({marks(len(part))})", part))
        rows.sort()
    if not rows:
        return 0
    values = [json.loads(r[4]) if r[4] is not None else [None] * len(fields) for r in rows]
    records = Records(
        ids=[r[2] for r in rows],
        source=np.asarray([r[1] for r in rows], dtype=np.int32),
        source_names=list(sources),
        fields={f: [v[j] for v in values] for j, f in enumerate(fields)},
    )
    labels = np.asarray([r[3] for r in rows], dtype=np.int64)
    plans = golden_plan(job)
    table = golden_table(records, labels, plans, singletons=spec.singletons)
    names = [p.field for p in plans]
    cells = [(table[f].tolist(), table[f"{f}_source"].tolist(), table[f"{f}_id"].tolist()) for f in names]
    conn.executemany(
        "INSERT INTO golden(cluster, size, row) VALUES (?, ?, ?)",
        (
            (int(c), int(s), json.dumps([[v[i], src[i], rid[i]] for v, src, rid in cells], ensure_ascii=False))
            for i, (c, s) in enumerate(zip(table["cluster_id"].tolist(), table["size"].tolist()))
        ),
    )
    return len(table["cluster_id"])


def golden_columns(fields: Sequence[str]) -> list[str]:
    """The columns of the golden table: ``cluster_id``, ``size``, then per field its value, source and id."""
    return ["cluster_id", "size", *[c for f in fields for c in (f, f"{f}_source", f"{f}_id")]]


def read_golden(conn: sqlite3.Connection, fields: Sequence[str]) -> dict[str, list[Any]]:
    """The index's golden records as columns (:func:`golden_columns`; ``fields``: the job's fields,
    :func:`~er_framework.engine.stages.golden.job_fields`), by cluster id."""
    table: dict[str, list[Any]] = {c: [] for c in golden_columns(fields)}
    for cluster, size, row in conn.execute("SELECT cluster, size, row FROM golden ORDER BY cluster"):
        table["cluster_id"].append(cluster)
        table["size"].append(size)
        for f, (value, src, rid) in zip(fields, json.loads(row)):
            table[f].append(value)
            table[f"{f}_source"].append(src)
            table[f"{f}_id"].append(rid)
    return table
