"""A persistent index: query new items, add and remove records, stable cluster ids.

The two tasks of the seeds are *discovery* (all similar pairs: ``er run``)
and *search* (the near-duplicates of one new item). An index keeps what a
job computed so that search and growth do not recompute everything::

    er index build job.yaml --index docs.erx     # run the job, persist it
    er query docs.erx --text "..." --top-k 5     # candidates -> verified, best first
    er index add docs.erx new.jsonl              # block, verify, cluster the new items
    er index remove docs.erx ID ...              # take records out
    er index info docs.erx

The SQLite file (storage, tables, transactions, error messages) is
:mod:`er_framework.index.sqlite`; the pairs of new records, found as the
pipeline would find them (equality with a rebuild), are
:mod:`er_framework.index.pairs`; stable cluster ids after a write are
:mod:`er_framework.index.recluster`; building and opening an index are
:mod:`er_framework.index.build`.

One writer at a time: ``build`` (also ``--force``), ``add``, ``remove`` and
``refit`` take the index's lock, an ``flock`` on ``.NAME.lock`` beside it
(:mod:`er_framework.index.lock`: why not the index file itself, what a writer
does when a build holds it, the debris of killed writers). Readers take none.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from er_framework.config.resolve import Job
from er_framework.data import Pairs, Records
from er_framework.engine import stages
from er_framework.engine.engine import Engine, signed_keys
from er_framework.engine.log import StageLog
from er_framework.engine.model import Model, model_text
from er_framework.engine.stages.golden import job_fields
from er_framework.index.golden import forget_inputs, has_golden, read_golden, refresh_golden, store_inputs, touched_clusters
from er_framework.index.lock import file_identity, index_lock
from er_framework.index.pairs import Int64Array, find_pairs, members_of_buckets, stored_records
from er_framework.index.recluster import cluster_changes, recluster
from er_framework.index.sqlite import (
    CHUNK,
    QUICK_CHECK_MAX_BYTES,
    Txn,
    chunks,
    damaged,
    files,
    marks,
    meta_get,
    meta_set,
    pause,
    problem,
    sqlite_error,
)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """An :class:`Index` method whose SQLite errors become a message naming the index (the store's boundary)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            index = args[0]
            assert isinstance(index, Index)
            raise sqlite_error(
                index.path, exc, "write" if method.__name__ in ("add", "remove") else "read", index.meta.get("config_path")
            ) from None

    return wrapper


# ------------------------------------------------------------------ the index


def exact_hashes(job: Job, records: Records) -> list[int | None]:
    """The exact-duplicate hash of each record as stored (``None``: empty text or the stage disabled)."""
    if not job.exact.enabled:
        return [None] * len(records)
    keys, nonempty = stages.exact_keys(records, job.exact.normalize)
    return [int(k) if ok else None for k, ok in zip(signed_keys(keys).tolist(), nonempty.tolist())]


@dataclass
class Match:
    """One answer of :meth:`Index.query`."""

    query: str
    rank: int
    source: str
    id: str
    score: float
    cluster_id: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "rank": self.rank,
            "source": self.source,
            "id": self.id,
            "score": round(self.score, 6),
            "cluster_id": self.cluster_id,
        }


class Index:
    """An index on disk (see the module docstring). Open with :func:`open_index`."""

    def __init__(self, path: str | Path, conn: sqlite3.Connection, job: Job, meta: dict[str, Any], *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.conn = conn
        #: opened with ``open_index(path, readonly=True)``: queries only, the file is never written
        self.readonly = readonly
        #: ``(device, inode)`` of the file when it was opened (:func:`~er_framework.index.lock.file_identity`): a
        #: writer checks under the index's lock that the path still names it (a build may have replaced it)
        self.identity: tuple[int, int] | None = None
        self.job = job
        self.meta = meta
        #: the model the index applies (the one it was built or last refitted with: meta ``model_json``)
        model = Model.from_json(json.loads(meta["model_json"]), f"{self.path} (its model)") if meta.get("model_json") else None
        self.engine = Engine(job, model)
        self.engine.require_lookup(str(self.path), "an index")
        self.sources: list[str] = meta["sources"]
        self.fields: list[str] = meta["fields"]

    # ---------------------------------------------------------------- helpers

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _read(self) -> Txn:
        return Txn(self.conn, "BEGIN")

    @contextlib.contextmanager
    def _write(self, command: str) -> Iterator[None]:
        """A write transaction under the index's writer lock (:mod:`er_framework.index.lock`), into the file
        this index opened: a build that replaced it meanwhile stops the write before anything is written."""
        if self.readonly:
            raise problem(self.path, "the index was opened read-only", "open it with open_index(path) to add or remove records")
        with index_lock(self.path, command):
            if self.identity is not None and file_identity(self.path) != self.identity:
                raise problem(
                    self.path,
                    f"the index was rebuilt (er index build --force) after this er index {command} opened it; nothing was written",
                    "run the command again: it then writes into the rebuilt index",
                )
            with Txn(self.conn, "BEGIN IMMEDIATE"):
                yield

    def check(self) -> str:
        """SQLite's ``PRAGMA quick_check`` of the whole file: ``"ok"`` or the first problems found.

        It reads every page (~1 s per GB when cached): ``add`` and ``remove`` run
        it before writing when the file is small (:data:`QUICK_CHECK_MAX_BYTES`)
        and on their error paths (a damaged file would otherwise pass for
        missing ids); ``er index info`` runs it on a small file or with ``--check``.
        """
        try:
            rows = self.conn.execute("PRAGMA quick_check(3)").fetchall()
        except sqlite3.DatabaseError as exc:
            return str(exc)
        lines = [line.strip() for r in rows for line in str(r[0]).splitlines()]
        found = [line for line in lines if line and not line.startswith("***")]  # "*** in database main ***"
        return "; ".join(found) or "ok"

    def _require_intact(self) -> None:
        """Raise the "damaged" error when the integrity check finds a problem."""
        result = self.check()
        if result != "ok":
            raise damaged(self.path, f"quick_check: {result}", self.meta.get("config_path"))

    def check_is_cheap(self) -> bool:
        """Whether the file (with its WAL) is small enough to check before every write."""
        return sum(p.stat().st_size for p in files(self.path) if p.exists()) <= QUICK_CHECK_MAX_BYTES

    def _as_records(self, records: Records, source: str | None) -> Records:
        """Records of the caller mapped onto the index's sources and fields."""
        if source is None:
            if len(self.sources) > 1:
                raise problem(
                    self.path,
                    f"this index has several sources ({', '.join(self.sources)})",
                    "name the source of the new items (--source NAME)",
                )
            source = self.sources[0]
        if source not in self.sources:
            raise problem(self.path, f"no source {source!r} in this index", f"sources: {', '.join(self.sources)}")
        s = self.sources.index(source)
        unknown = sorted(set(records.fields) - set(self.fields))
        if unknown:
            raise problem(self.path, f"unknown field(s) {', '.join(unknown)}", f"the index's fields: {', '.join(self.fields)}")
        n = len(records)
        fields: dict[str, Sequence[str | None]] = {f: list(records.fields.get(f, [None] * n)) for f in self.fields}
        return Records(list(records.ids), np.full(n, s, dtype=np.int32), list(self.sources), fields)

    # ---------------------------------------------------------------- query

    @_guarded
    def query(self, records: Records, *, source: str | None = None, top_k: int | None = None) -> list[list[Match]]:
        """The indexed records similar to each of ``records``, best first.

        Each item is normalized, shingled, signed and bucketed like the job's
        records; the indexed records sharing a bucket (buckets over the
        blocker's cap skipped, counting the item) and, when the job finds exact
        duplicates, those with the same exact text (score 1.0) are scored with
        the job's verifier; those at or above its threshold are returned,
        highest score first (then index order), at most ``top_k`` per item.
        In link mode only records of other sources are candidates. Items are
        not added.
        """
        recs = stages.normalize(self.job, self._as_records(records, source))[0]
        n = len(recs)
        rows, keys, which = self.engine.keys(recs)
        exact = exact_hashes(self.job, recs)
        caps = self.engine.caps()
        out: list[list[Match]] = [[] for _ in range(n)]
        with self._read():
            members = members_of_buckets(self.conn, keys.tolist())
            cand: dict[int, set[int]] = {}
            for row, key, b in zip(rows.tolist(), keys.tolist(), which.tolist()):
                got = members.get(key)
                if not got:
                    continue
                cap = caps[b]
                if cap is not None and len(got) + 1 > cap:
                    continue
                cand.setdefault(row, set()).update(got)
            exact_hits: dict[int, set[int]] = {}
            hashes = sorted({h for h in exact if h is not None})
            by_hash: dict[int, list[int]] = {}
            for part in chunks(hashes):
                for rid, h in self.conn.execute(f"SELECT rid, exact FROM records WHERE exact IN ({marks(len(part))})", part):
                    by_hash.setdefault(h, []).append(rid)
            for i, h in enumerate(exact):
                if h is not None and h in by_hash:
                    exact_hits[i] = set(by_hash[h])
                    cand.setdefault(i, set()).update(by_hash[h])
            olds = sorted({r for c in cand.values() for r in c})
            if not olds:
                return out
            stored, clusters = stored_records(self.conn, olds, self.sources, self.fields)
        pos = {r: j for j, r in enumerate(olds)}
        qi: list[int] = []
        oj: list[int] = []
        for i, rs in cand.items():
            for r in rs:
                if self.engine.link and stored.source[pos[r]] == recs.source[i]:
                    continue
                qi.append(i)
                oj.append(pos[r])
        both = Records.stack([recs, stored])
        pairs = Pairs(np.asarray(qi, dtype=np.int64), np.asarray(oj, dtype=np.int64) + n)
        scores = self.engine.score(both, pairs)
        for k, (i, j) in enumerate(zip(qi, oj)):
            if i in exact_hits and olds[j] in exact_hits[i]:
                scores[k] = 1.0
        kept = self.engine.keep(scores)
        for i, j, s, ok in zip(qi, oj, scores.tolist(), kept.tolist()):
            r = olds[j]
            if ok:
                out[i].append(Match(recs.ids[i], 0, self.sources[int(stored.source[j])], stored.ids[j], float(s), clusters[r]))
        for i in range(n):
            ranked = sorted(out[i], key=lambda m: (-m.score, m.source, m.id))
            if top_k is not None:
                ranked = ranked[:top_k]
            for k, m in enumerate(ranked, 1):
                m.rank = k
            out[i] = ranked
        return out

    # ---------------------------------------------------------------- growing

    def _event(self, command: str) -> int:
        cur = self.conn.execute(
            "INSERT INTO events(at, command, summary) VALUES (?, ?, '')",
            (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command),
        )
        return int(cur.lastrowid or 0)

    def _insert(self, recs: Records, first_rid: int) -> tuple[list[int], list[int | None], Int64Array, Int64Array, Int64Array]:
        rids = list(range(first_rid, first_rid + len(recs)))
        exact = exact_hashes(self.job, recs)
        cols = [recs.fields[f] for f in self.fields]
        self.conn.executemany(
            "INSERT INTO records(rid, source, id, fields, cluster, exact, rep) VALUES (?, ?, ?, ?, -1, ?, NULL)",
            (
                (rid, int(recs.source[i]), recs.ids[i], json.dumps([c[i] for c in cols], ensure_ascii=False), exact[i])
                for i, rid in enumerate(rids)
            ),
        )
        rows, keys, which = self.engine.keys(recs)
        self.conn.executemany(
            "INSERT OR IGNORE INTO buckets(key, rid) VALUES (?, ?)",
            zip(keys.tolist(), (rids[r] for r in rows.tolist())),
        )
        return rids, exact, rows, keys, which

    def _existing(self, recs: Records) -> list[str]:
        found: list[str] = []
        for s in sorted(set(recs.source.tolist())):
            ids = [recs.ids[i] for i in range(len(recs)) if recs.source[i] == s]
            for part in chunks(ids):
                found += [
                    r[0] for r in self.conn.execute(f"SELECT id FROM records WHERE source = ? AND id IN ({marks(len(part))})", [s, *part])
                ]
        return found

    @_guarded
    def add(self, records: Records, *, source: str | None = None, command: str = "add") -> dict[str, Any]:
        """Add ``records`` (ids new to their source): block, verify and cluster them in one transaction."""
        t0 = time.perf_counter()
        given = self._as_records(records, source)
        as_read = Records(given.ids, given.source, given.source_names, {f: list(c) for f, c in given.fields.items()})
        recs = stages.normalize(self.job, given)[0]
        dup = sorted(i for i, c in Counter(recs.ids).items() if c > 1)
        if dup:
            raise problem(
                self.path,
                f"{len(dup)} id(s) appear more than once in the new items: {', '.join(dup[:5])}",
                "give every new item its own id",
            )
        stats: dict[str, Any] = {"added": len(recs)}
        with self._write("add"):
            if self.check_is_cheap():  # not into a damaged file (checked under the write lock)
                self._require_intact()
            clash = self._existing(recs)
            if clash:
                self._require_intact()  # (already done when cheap) ids read from a damaged table may be wrong
                raise problem(
                    self.path,
                    f"{len(clash)} id(s) are already in the index: {', '.join(clash[:5])}" + (" …" if len(clash) > 5 else ""),
                    "remove them first (er index remove) or give the new items other ids",
                )
            seq = self._event(command)
            first = int(self.conn.execute("SELECT COALESCE(MAX(rid), -1) + 1 FROM records").fetchone()[0])
            first = max(first, int(meta_get(self.conn, "next_rid") or 0))
            rids, exact, rows, keys, which = self._insert(recs, first)
            meta_set(self.conn, "next_rid", str(first + len(recs)))
            pairs = find_pairs(self.conn, self.engine, self.sources, self.fields, rids, recs, exact, rows, keys, which, stats)
            self.conn.executemany(
                "INSERT OR REPLACE INTO pairs(a, b, score) VALUES (?, ?, ?)",
                zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()),  # type: ignore[union-attr]
            )
            stats.update(recluster(self.conn, self.engine.clusterer, set(rids), seq))
            stats["joined_existing"] = self._joined(rids)
            if has_golden(self.job):
                store_inputs(self.conn, rids, as_read, self.fields)
                touched = touched_clusters(self.conn, seq, rids)
                stats["golden_updated"] = refresh_golden(self.conn, self.job, self.sources, self.fields, touched)
            stats["seconds"] = round(time.perf_counter() - t0, 4)
            self.conn.execute("UPDATE events SET summary = ? WHERE seq = ?", (json.dumps(stats), seq))
            pause()
        return stats

    @_guarded
    def refit(self, *, command: str = "refit") -> dict[str, Any]:
        """Fit what the job learns again on every record of the index (the verifier's weights, pruned shingles,
        the auto threshold), then score, block and cluster every record with the new model in one transaction.

        The stages are the local run's (:func:`er_framework.engine.stages.match_records`) on the stored,
        normalized records; the pairs and bucket ids are replaced, and the clusters get ids as after an
        ``add`` (a cluster keeps the id most of its records held). Returns how many clusters and records
        changed; the model is stored in the index.
        """
        t0 = time.perf_counter()
        with self._write("refit"):
            if self.check_is_cheap():
                self._require_intact()
            rids = [r for (r,) in self.conn.execute("SELECT rid FROM records ORDER BY rid")]
            recs, before = stored_records(self.conn, rids, self.sources, self.fields)
            seq = self._event(command)
            matched = stages.match_records(Engine(self.job), recs, StageLog())
            engine = matched.engine
            rid_of = np.asarray(rids, dtype=np.int64)
            p = matched.verified.pairs
            self.conn.execute("DELETE FROM pairs")
            self.conn.executemany(
                "INSERT OR REPLACE INTO pairs(a, b, score) VALUES (?, ?, ?)",
                zip(rid_of[p.left].tolist(), rid_of[p.right].tolist(), (p.score if p.score is not None else np.ones(len(p))).tolist()),
            )
            self.conn.execute("DELETE FROM buckets")  # bucket ids change with the pruned shingles
            chunk = max(self.job.spec.chunk_records, 1)
            for a in range(0, len(rids), chunk):
                part = recs.take(np.arange(a, min(len(rids), a + chunk), dtype=np.int64))
                rows, keys, _ = engine.keys(part)
                self.conn.executemany(
                    "INSERT OR IGNORE INTO buckets(key, rid) VALUES (?, ?)", zip(keys.tolist(), rid_of[rows + a].tolist())
                )
            old_model = self.engine.model
            self.engine = engine
            meta_set(self.conn, "model_json", model_text(engine.model))
            stats: dict[str, Any] = {"records": len(rids), "pairs": int(len(p)), "candidate_pairs": int(len(matched.candidates))}
            stats.update(recluster(self.conn, self.engine.clusterer, set(rids), seq))
            after = {rid: c for rid, c in self.conn.execute("SELECT rid, cluster FROM records")}
            stats.update(cluster_changes(before, after))
            if has_golden(self.job):
                stats["golden_updated"] = refresh_golden(self.conn, self.job, self.sources, self.fields)
            stats["model"] = {
                "lambda_before": (old_model.verifier_state or {}).get("lambda"),
                "lambda_after": (engine.model.verifier_state or {}).get("lambda"),
                "threshold": engine.threshold,
            }
            stats["seconds"] = round(time.perf_counter() - t0, 4)
            self.conn.execute("UPDATE events SET summary = ? WHERE seq = ?", (json.dumps(stats), seq))
            pause()
        return stats

    def _joined(self, rids: list[int]) -> int:
        """New records whose cluster holds an older record."""
        lo = rids[0] if rids else 0
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM records r WHERE r.rid >= ? AND EXISTS "
                "(SELECT 1 FROM records o WHERE o.cluster = r.cluster AND o.rid < ?)",
                (lo, lo),
            ).fetchone()[0]
        )

    @_guarded
    def remove(self, ids: Sequence[str], *, source: str | None = None) -> dict[str, Any]:
        """Remove records by id; their pairs go, exact copies get a new representative, clusters are redone."""
        t0 = time.perf_counter()
        if source is None and len(self.sources) > 1:
            raise problem(
                self.path, f"this index has several sources ({', '.join(self.sources)})", "name the source of the ids (--source NAME)"
            )
        if source is not None and source not in self.sources:
            raise problem(self.path, f"no source {source!r} in this index", f"sources: {', '.join(self.sources)}")
        src = self.sources.index(source) if source is not None else 0
        stats: dict[str, Any] = {"removed": 0}
        with self._write("remove"):
            if self.check_is_cheap():
                self._require_intact()
            found: dict[str, tuple[int, int, int | None]] = {}
            for part in chunks(list(dict.fromkeys(ids))):
                for rid, rec_id, cluster, exact in self.conn.execute(
                    f"SELECT rid, id, cluster, exact FROM records WHERE source = ? AND id IN ({marks(len(part))})", [src, *part]
                ):
                    found[rec_id] = (rid, cluster, exact)
            missing = [i for i in dict.fromkeys(ids) if i not in found]
            if missing:
                self._require_intact()  # a damaged records table reads as ids that are not there
                raise problem(
                    self.path,
                    f"{len(missing)} id(s) are not in the index: {', '.join(missing[:5])}",
                    "check the ids (er index info lists the sources); nothing was removed",
                )
            seq = self._event("remove")
            rids = sorted(v[0] for v in found.values())
            removed_clusters = {v[0]: v[1] for v in found.values()}
            recs, _ = stored_records(self.conn, rids, self.sources, self.fields)
            rows, keys, _which = self.engine.keys(recs)
            self.conn.executemany("DELETE FROM buckets WHERE key = ? AND rid = ?", zip(keys.tolist(), (rids[r] for r in rows.tolist())))
            neighbours: set[int] = set()
            for part in chunks(rids, CHUNK // 2):
                q = marks(len(part))
                for a, b in self.conn.execute(f"SELECT a, b FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2):
                    neighbours.update((a, b))
                self.conn.execute(f"DELETE FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2)
            # exact copies that were collapsed onto a removed record: the group's next record takes over
            orphans: list[int] = []
            for part in chunks(rids):
                orphans += [r[0] for r in self.conn.execute(f"SELECT rid FROM records WHERE rep IN ({marks(len(part))})", part)]
            gone = set(rids)
            for part in chunks(rids):
                self.conn.execute(f"DELETE FROM records WHERE rid IN ({marks(len(part))})", part)
            orphans = sorted(set(orphans) - gone)
            if orphans:
                for part in chunks(orphans, CHUNK // 2):
                    q = marks(len(part))
                    for a, b in self.conn.execute(f"SELECT a, b FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2):
                        neighbours.update((a, b))
                    self.conn.execute(f"DELETE FROM pairs WHERE a IN ({q}) OR b IN ({q})", list(part) * 2)
                orecs, _ = stored_records(self.conn, orphans, self.sources, self.fields)
                orows, okeys, owhich = self.engine.keys(orecs)
                pairs = find_pairs(
                    self.conn,
                    self.engine,
                    self.sources,
                    self.fields,
                    orphans,
                    orecs,
                    exact_hashes(self.job, orecs),
                    orows,
                    okeys,
                    owhich,
                    stats,
                )
                self.conn.executemany(
                    "INSERT OR REPLACE INTO pairs(a, b, score) VALUES (?, ?, ?)",
                    zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()),  # type: ignore[union-attr]
                )
                neighbours.update(orphans)
                neighbours.update(pairs.left.tolist())
                neighbours.update(pairs.right.tolist())
            stats["removed"] = len(rids)
            stats["copies_relinked"] = len(orphans)
            stats.update(recluster(self.conn, self.engine.clusterer, neighbours - gone, seq, removed_clusters))
            self._golden_after_remove(stats, seq, rids, sorted(neighbours - gone), removed_clusters.values())
            stats["seconds"] = round(time.perf_counter() - t0, 4)
            self.conn.execute("UPDATE events SET summary = ? WHERE seq = ?", (json.dumps(stats), seq))
            pause()
        return stats

    def _golden_after_remove(self, stats: dict[str, Any], seq: int, rids: list[int], kept: list[int], clusters: Iterable[int]) -> None:
        """With golden records: forget the removed records' values and redo the clusters the removal touched."""
        if not has_golden(self.job):
            return
        forget_inputs(self.conn, rids)
        touched = touched_clusters(self.conn, seq, kept, clusters)
        stats["golden_updated"] = refresh_golden(self.conn, self.job, self.sources, self.fields, touched)

    # ---------------------------------------------------------------- reading

    @_guarded
    def golden(self) -> dict[str, list[Any]]:
        """The golden records (the job's ``output.golden``) as columns: ``cluster_id``, ``size``, then per field its
        value, ``<field>_source`` and ``<field>_id``; kept up to date by every add, remove and refit."""
        if not has_golden(self.job):
            raise problem(
                self.path,
                "the index's job has no output.golden: it keeps no golden records",
                "add output: {golden: {rule: most_frequent}} to the job and build the index again (er index build --force)",
            )
        with self._read():
            present = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'golden'").fetchone()
            if present is None:
                raise damaged(self.path, "its job asks for golden records but it has no golden table", self.meta.get("config_path"))
            return read_golden(self.conn, job_fields(self.job))

    @_guarded
    def clusters(self) -> dict[tuple[str, str], int]:
        """``(source, id) -> cluster id`` of every record."""
        with self._read():
            return {(self.sources[s], i): c for s, i, c in self.conn.execute("SELECT source, id, cluster FROM records")}

    @_guarded
    def pairs(self) -> dict[tuple[tuple[str, str], tuple[str, str]], float]:
        """Every stored verified pair, by ``(source, id)`` (ordered), with its score."""
        with self._read():
            name = {rid: (self.sources[s], i) for rid, s, i in self.conn.execute("SELECT rid, source, id FROM records")}
            out = {}
            for a, b, s in self.conn.execute("SELECT a, b, score FROM pairs"):
                x, y = sorted((name[a], name[b]))
                out[(x, y)] = s
            return out

    @_guarded
    def latest_changes(self, limit: int = 20) -> list[tuple[Any, ...]]:
        """The latest ``limit`` cluster id changes, newest first: ``(seq, kind, cluster, survivor, records)``."""
        with self._read():
            return [
                tuple(r)
                for r in self.conn.execute(
                    "SELECT seq, kind, cluster, survivor, records FROM cluster_changes ORDER BY rowid DESC LIMIT ?", (limit,)
                )
            ]

    @_guarded
    def info(self) -> dict[str, Any]:
        with self._read():
            count = lambda sql: int(self.conn.execute(sql).fetchone()[0])  # noqa: E731
            per_source = {self.sources[s]: n for s, n in self.conn.execute("SELECT source, COUNT(*) FROM records GROUP BY source")}
            sizes = [n for (n,) in self.conn.execute("SELECT COUNT(*) FROM records GROUP BY cluster")]
            events = [
                {"seq": s, "at": at, "command": c, **(json.loads(summary) if summary else {})}
                for s, at, c, summary in self.conn.execute("SELECT seq, at, command, summary FROM events ORDER BY seq")
            ]
            out = {
                "path": str(self.path),
                "format_version": int(self.meta["format_version"]),
                "built_with": self.meta["er_version"],
                "job": self.job.spec.name,
                "config": self.meta["config_path"],
                "config_hash": self.meta["config_hash"],
                "mode": self.job.spec.mode,
                "records": sum(per_source.values()),
                "per_source": per_source,
                "clusters": len(sizes),
                "largest_cluster": max(sizes) if sizes else 0,
                "singletons": sum(1 for n in sizes if n == 1),
                "pairs": count("SELECT COUNT(*) FROM pairs"),
                "bucket_entries": count("SELECT COUNT(*) FROM buckets"),
                "exact_copies": count("SELECT COUNT(*) FROM records WHERE rep IS NOT NULL"),
                "blockers": [b.name for b in self.engine.blockers],
                "verifier": self.engine.verifier.name,
                "clusterer": self.engine.clusterer.name,
                "threshold": self.engine.threshold,
                "model": {
                    "job_hash": self.engine.model.job_hash,
                    "fitted_on": self.engine.model.fitted_on,
                    "verifier_fitted": self.engine.model.verifier is not None,
                    "threshold": None if self.engine.model.threshold is None else self.engine.model.threshold.value,
                },
                "blockers_not_used_for_new_items": self.engine.unserved_blockers(),
                "bytes_on_disk": sum(p.stat().st_size for p in files(self.path) if p.exists()),
                "events": events,
            }
        return out


__all__ = ["Index", "Match", "exact_hashes"]
