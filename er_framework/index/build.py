"""Building an index from a job (``build_index``) and opening one (``open_index``).

``build_index`` runs the job with the local executor and writes every table
(:mod:`er_framework.index.sqlite`) into a new file next to the target, renamed
into place when complete. ``open_index`` decides by reading the file that it
is an index of this format whose stored job still resolves to the same
components, before anything can write to it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from er_framework.config.resolve import Job, resolve_job
from er_framework.config.yaml_load import load_yaml
from er_framework.data import Records
from er_framework.engine import stages
from er_framework.engine.engine import Engine
from er_framework.engine.log import ProgressCallback
from er_framework.engine.model import Model, check_model, model_text
from er_framework.engine.report import er_version, versions
from er_framework.errors import ErError, Problem
from er_framework.executors.local import run_local
from er_framework.index.golden import has_golden, refresh_golden, store_inputs
from er_framework.index.lock import BUILDING, file_identity, index_lock
from er_framework.index.sqlite import (
    FORMAT_VERSION,
    SCHEMA,
    check_target,
    connect_db,
    connect_ro,
    damaged,
    files,
    pause,
    problem,
    read_meta,
    rebuild_fix,
    sniff,
    sqlite_error,
)
from er_framework.index.store import Index, exact_hashes


class _StoredJobUnreadable(ErError):
    """The job YAML kept in the index's meta table is not valid YAML (or is refused by the loader)."""


def _job_from_meta(meta: dict[str, Any], path: Path) -> Job:
    text = meta["config_yaml"]
    filename = f"{meta['config_path']} (stored in {path})"
    data, lines, problems = load_yaml(text, filename)
    if data is None or problems:
        raise _StoredJobUnreadable(problems or [Problem(where=str(path), message="the stored job is empty")])
    job = resolve_job(data, lines, filename, Path(meta["base_dir"]), problems, check_files=False, config_path=Path(meta["config_path"]))
    return job


def open_index(path: str | Path, *, readonly: bool = False) -> Index:
    """Open an index for queries (``readonly=True``: the file is never written) or for queries and writes.

    Clear errors for a missing, foreign, damaged or incompatible file. Whether
    the file is an index is decided by reading it (its first bytes, then its
    ``meta`` table through a read-only connection) before anything can write to it.
    """
    path = Path(path)
    identity = file_identity(path)  # before connecting: a writer checks under its lock that the path still names this file
    sniff(path)
    try:
        conn = connect_ro(path)
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "open") from None
    try:
        index = _open(path, conn, readonly)
    except BaseException:
        conn.close()
        raise
    index.identity = identity
    if readonly:
        return index
    conn.close()  # known to be an index: now the read-write connection (WAL mode, as built)
    try:
        index.conn = connect_db(path)
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc, "open") from None
    return index


def _open(path: Path, conn: sqlite3.Connection, readonly: bool) -> Index:
    rows = read_meta(conn, path)
    try:
        version = int(rows.get("format_version", "0"))
    except ValueError:
        raise damaged(path, f"format_version {rows.get('format_version')!r} in its meta table") from None
    if version != FORMAT_VERSION:
        raise problem(
            path,
            f"the index has format version {version}, this er-framework ({er_version()}) reads version {FORMAT_VERSION}",
            f"rebuild it with: er index build CONFIG --index PATH (or use the er-framework {rows.get('er_version', '?')} that built it)",
        )
    meta: dict[str, Any] = dict(rows)
    lacking = [k for k in ("sources", "fields", "config_yaml", "config_path", "base_dir", "config_hash") if k not in meta]
    if lacking:
        raise damaged(path, f"its meta table lacks {', '.join(lacking)}")
    try:
        meta["sources"] = json.loads(meta["sources"])
        meta["fields"] = json.loads(meta["fields"])
    except ValueError as exc:
        raise damaged(path, f"its meta table holds unreadable sources or fields: {exc}") from None
    try:
        job = _job_from_meta(meta, path)
    except _StoredJobUnreadable as exc:
        raise ErError(
            exc.problems
            + [
                Problem(
                    where=str(path),
                    message="the index's stored job (its YAML, kept in the index) cannot be read; nothing was run",
                    fix=rebuild_fix(path, meta.get("config_path")) + "; an index from an unknown source may be hostile: do not use it",
                )
            ]
        ) from None
    except ErError as exc:
        raise ErError(
            exc.problems
            + [
                Problem(
                    where=str(path),
                    message="the job stored in the index does not resolve with the installed plugins",
                    fix="install the plugins it was built with, or rebuild the index",
                )
            ]
        ) from None
    if job.config_hash() != meta["config_hash"]:
        raise problem(
            path,
            "the stored job resolves to other component parameters than when the index was built "
            f"(hash {meta['config_hash'][:12]} then, {job.config_hash()[:12]} now): a plugin's defaults changed",
            f"rebuild the index with the installed versions, or install the versions it was built with: {meta.get('components')}",
        )
    return Index(path, conn, job, meta, readonly=readonly)


def build_index(
    job: Job,
    path: str | Path,
    *,
    force: bool = False,
    progress: ProgressCallback | None = None,
    model: Model | None = None,
) -> tuple[Index, dict[str, Any]]:
    """Run ``job`` and persist it as an index at ``path`` (written aside, then renamed), with the model the run
    fitted (or ``model``, a saved one, applied without fitting): queries and additions score with it.

    The index's writer lock (:mod:`er_framework.index.lock`) is held from before the job runs until the new
    file is in place: an ``add``/``remove``/``refit`` meanwhile is refused, and debris of killed builds goes."""
    path = Path(path)
    check_target(path, force=force)  # before the job runs
    if model is not None:
        check_model(model, job)
    engine = Engine(job, model)
    engine.require_lookup(str(job.config_path), "an index")  # refuse an unindexable job before any work
    with index_lock(path, "build"):  # held until the new file is in place (see er_framework.index.lock)
        if not force:
            check_target(path)  # an index built by another process while this one waited
        summary = _build(job, path, engine, progress, model)
    index = open_index(path)
    return index, summary


def _build(job: Job, path: Path, engine: Engine, progress: ProgressCallback | None, model: Model | None) -> dict[str, Any]:
    """Run the job and write the index (the lock is held): into ``.NAME.building-PID``, renamed over ``path``."""
    t0 = time.perf_counter()
    result = run_local(job, write=False, progress=progress, model=model)
    assert result.model is not None  # every run returns the model it used
    engine = engine.with_model(result.model)
    records = result.records  # normalized in place by the run
    n = len(records)
    fields = list(records.fields)
    tmp = path.with_name(f".{path.name}{BUILDING}{os.getpid()}")
    for f in files(tmp):
        f.unlink(missing_ok=True)
    conn = connect_db(tmp)
    try:
        conn.execute("PRAGMA synchronous=OFF")  # a half-built file is never renamed into place
        conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        exact = exact_hashes(job, records)
        rep: list[int | None] = [None] * n
        if engine.collapse:
            ep = stages.exact_duplicates(job, records).pairs
            for a, b in zip(ep.left.tolist(), ep.right.tolist()):
                rep[b] = a
        cols = [records.fields[f] for f in fields]
        labels = result.labels.tolist()
        conn.executemany(
            "INSERT INTO records(rid, source, id, fields, cluster, exact, rep) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    i,
                    int(records.source[i]),
                    records.ids[i],
                    json.dumps([c[i] for c in cols], ensure_ascii=False),
                    labels[i],
                    exact[i],
                    rep[i],
                )
                for i in range(n)
            ),
        )
        chunk = max(job.spec.chunk_records, 1)
        key_parts: list[npt.NDArray[np.int64]] = []
        for a in range(0, n, chunk):
            part = records.take(np.arange(a, min(n, a + chunk), dtype=np.int64))
            rows, keys, _ = engine.keys(part)
            key_parts.append(np.stack([keys, rows + a], axis=1))
        if key_parts:
            kr = np.concatenate(key_parts)
            kr = kr[np.lexsort((kr[:, 1], kr[:, 0]))]  # B-tree order: appends only
            conn.executemany("INSERT OR IGNORE INTO buckets(key, rid) VALUES (?, ?)", kr.tolist())
        p = result.pairs
        conn.executemany(
            "INSERT INTO pairs(a, b, score) VALUES (?, ?, ?)",
            zip(p.left.tolist(), p.right.tolist(), (p.score if p.score is not None else np.ones(len(p))).tolist()),
        )
        config_path = job.config_path
        meta = {
            "kind": "er-framework-index",
            "format_version": str(FORMAT_VERSION),
            "er_version": er_version(),
            "config_path": str(Path(config_path).resolve()),
            "base_dir": str(job.base_dir),
            "config_yaml": Path(config_path).read_text(encoding="utf-8"),
            "config_hash": job.config_hash(),
            "components": json.dumps(versions(job)["components"]),
            "sources": json.dumps(records.source_names),
            "fields": json.dumps(fields),
            "next_cluster_id": str(int(result.labels.max()) + 1 if n else 0),
            "next_rid": str(n),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "model_json": model_text(result.model),
        }
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", meta.items())
        if has_golden(job):
            assert result.as_read is not None  # the local run holds the records as read
            store_inputs(conn, range(n), result.as_read, fields)
            refresh_golden(conn, job, records.source_names, fields)
        summary = {
            "records": n,
            "pairs": len(p),
            "clusters": result.report["clusters"]["count"],
            "run_seconds": result.report["seconds_total"],
            "model": "fitted by the build" if model is None else model.origin,
            "notes": engine.unserved_blockers(),
        }
        conn.execute("INSERT INTO events(at, command, summary) VALUES (?, 'build', ?)", (meta["built_at"], json.dumps(summary)))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        pause()  # test hook: the new file is complete, not yet in place (the lock is held)
        for f in files(path)[1:]:
            f.unlink(missing_ok=True)
        os.replace(tmp, path)
    except BaseException:
        conn.close()
        for f in files(tmp):
            f.unlink(missing_ok=True)
        raise
    summary["seconds"] = round(time.perf_counter() - t0, 4)
    return {"run": result.report, **summary}


def records_from_texts(texts: Sequence[str], field: str, ids: Sequence[str] | None = None) -> Records:
    """Query items from plain texts (one field)."""
    ids = list(ids) if ids is not None else [f"q{i}" for i in range(len(texts))]
    return Records.from_columns(ids, {field: list(texts)})


__all__ = ["build_index", "open_index", "records_from_texts"]
